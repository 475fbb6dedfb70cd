package plugin

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestScoutSnapshotLagsNodeChange: the scheduler's cache and this plugin
// hear of a node change each on its own, in no set order, so a scout's
// scheduling cycle can begin after the plugin saw a node tainted,
// cordoned, relabelled or resized, on a snapshot that still holds the
// node as it was. Dated from the cycle's beginning (after the change),
// such a measurement counted as fresh, and the gang went to the engine
// with the node its Filter plugins now reject. A snapshot node that
// differs from the plugin's copy makes the measurement stale: the shape is
// measured again, and the gang's allowed set leaves the node out once the
// snapshot caught up.
func TestScoutSnapshotLagsNodeChange(t *testing.T) {
	for _, ch := range []struct {
		name   string
		change func(n *v1.Node)
	}{
		{name: "tainted", change: func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
		}},
		{name: "cordoned", change: func(n *v1.Node) { n.Spec.Unschedulable = true }},
		{name: "relabelled", change: func(n *v1.Node) { n.Labels["example.com/pool"] = "retired" }},
		{name: "memory shrunk", change: func(n *v1.Node) {
			n.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("1Gi")
		}},
	} {
		t.Run(ch.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(4)
			h.addNodes(nodes...)
			h.p.h = &probeHandle{nodes: nodes} // every node passes
			pods := h.groupPods(3, 8)
			byName := podsByName(pods)
			h.cycle()
			name := scoutOf(h, "ns/g")
			if name == "" {
				t.Fatal("no scout out")
			}
			// n001 changes; the plugin hears of it, and its engine cycle
			// runs, before the scout's cycle begins.
			h.now = h.now.Add(100 * time.Millisecond)
			changed := nodes[1].DeepCopy()
			if changed.Status.Allocatable == nil {
				changed.Status.Allocatable = v1.ResourceList{}
			}
			ch.change(changed)
			h.c.onNode(changed, false)
			h.cycle()
			if again := scoutOf(h, "ns/g"); again != "" {
				name = again
			}
			// The scout's cycle begins on a snapshot from before the
			// change, which it then measures: n001 passes.
			h.measureAs(t, byName[name])
			h.cycle()
			h.c.mu.Lock()
			g := h.c.groups["ns/g"]
			shape := g.pods[string(byName[name].UID)].shape
			measured := g.allowed[shape]
			var submitted []string
			if g.inc != nil {
				submitted = g.inc.allowed[shape]
			}
			h.c.mu.Unlock()
			if submitted != nil {
				t.Fatalf("the gang was submitted with allowed nodes %v, measured on a snapshot that held n001 as it was before it was %s", submitted, ch.name)
			}
			if !measured.at.IsZero() {
				t.Fatalf("a measurement on a snapshot that held n001 as it was before it was %s counts: allowed nodes %v", ch.name, measured.nodes)
			}
			again := scoutOf(h, "ns/g")
			if again == "" {
				t.Fatalf("no scout sent again after a measurement on a lagging snapshot: %s", g.reason)
			}
			// The snapshot caught up: n001 is rejected, and the
			// measurement counts.
			h.measureCaughtUp(t, nodes, changed, byName[again], shape, pods)
		})
	}
}

// TestScoutSnapshotLagsForGood: a snapshot that keeps holding a node
// otherwise than the plugin's copy (here, a taint the scheduler's cache
// never shows) makes one measurement stale, not every one: the second,
// with the same node differing, counts, so the gang does not measure for
// ever.
func TestScoutSnapshotLagsForGood(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(4)
	h.addNodes(nodes...)
	h.p.h = &probeHandle{nodes: nodes}
	pods := h.groupPods(3, 8)
	byName := podsByName(pods)
	changed := nodes[1].DeepCopy()
	changed.Spec.Taints = append(changed.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
	h.c.onNode(changed, false)
	h.cycle()
	var measurements []allowedSet
	for i := 0; i < 2; i++ {
		name := scoutOf(h, "ns/g")
		if name == "" {
			t.Fatalf("measurement %d: no scout out", i+1)
		}
		h.measureAs(t, byName[name])
		h.c.mu.Lock()
		g := h.c.groups["ns/g"]
		measurements = append(measurements, g.allowed[g.pods[string(byName[name].UID)].shape])
		h.c.mu.Unlock()
		h.cycle()
	}
	if !measurements[0].at.IsZero() {
		t.Fatalf("the first measurement on a snapshot holding n001 untainted counts (dated %v)", measurements[0].at)
	}
	if measurements[1].at.IsZero() {
		t.Fatalf("the second measurement, n001 still differing the same way, does not count: missed %v", measurements[1].missed)
	}
	h.c.mu.Lock()
	g := h.c.groups["ns/g"]
	admitted := g.inc != nil && g.inc.admitted
	reason := g.reason
	h.c.mu.Unlock()
	if !admitted {
		t.Fatalf("the gang is not admitted after the second measurement: %s", reason)
	}
	checkBooks(t, h)
}

// measureAs runs a scout's scheduling cycle for pod on the fake clock, on
// the handle's snapshot as it stands: PreFilter (which must let it
// through) 100 ms on, and PostFilter 100 ms after that.
func (h *hookEnv) measureAs(t *testing.T, pod *v1.Pod) {
	t.Helper()
	h.now = h.now.Add(100 * time.Millisecond)
	state := framework.NewCycleState()
	if _, st := h.p.PreFilter(context.Background(), state, pod, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter of the scout %s: %v", pod.Name, st)
	}
	h.now = h.now.Add(100 * time.Millisecond)
	h.p.PostFilter(context.Background(), state, pod, nil)
}

// podsByName indexes pods by name.
func podsByName(pods []*v1.Pod) map[string]*v1.Pod {
	m := make(map[string]*v1.Pod, len(pods))
	for _, p := range pods {
		m[p.Name] = p
	}
	return m
}

// measureCaughtUp has scout measure its shape on a snapshot that caught
// up with changed, n001 after its change (nodes: the snapshot before),
// which the test's Filter now rejects, and checks that the gang of group
// ns/g is then submitted with the other three nodes allowed for shape,
// that none of admitted is placed on n001 (each placed), and the books.
func (h *hookEnv) measureCaughtUp(t *testing.T, nodes []*v1.Node, changed *v1.Node, scout *v1.Pod, shape string, admitted []*v1.Pod) {
	t.Helper()
	after := slices.Clone(nodes)
	after[1] = changed
	h.p.h = &probeHandle{nodes: after, fits: map[string]bool{"n000": true, "n002": true, "n003": true}}
	h.measureAs(t, scout)
	h.cycle()
	h.c.mu.Lock()
	g := h.c.groups["ns/g"]
	var submitted []string
	if g.inc != nil {
		submitted = g.inc.allowed[shape]
	}
	reason := g.reason
	h.c.mu.Unlock()
	if want := []string{"n000", "n002", "n003"}; !slices.Equal(submitted, want) {
		t.Fatalf("the gang's allowed nodes %v, want %v (%s)", submitted, want, reason)
	}
	for _, p := range admitted {
		if s := h.slot(p); s == "" || s == "n001" {
			t.Fatalf("pod %s admitted on %q, want a node other than n001 (%s)", p.Name, s, reason)
		}
	}
	checkBooks(t, h)
}
