package plugin

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestScoutCycleBeganBeforeNodeChange: a scout whose scheduling cycle
// began before a node's taints, cordon or labels changed measured on the
// scheduler's snapshot from before the change, yet its measurement counted
// as fresh when its PostFilter landed after the engine cycle that marked
// the shape stale (remeasure): scouted dated it from the cycle's beginning
// and looked only for nodes missing from the snapshot. The gang was then
// submitted with an allowed node set that still held the node the other
// Filter plugins now reject (here the test's Filter stands for
// TaintToleration, NodeUnschedulable or a node affinity), and the engine
// could put a pod there. Such a measurement is not used: the shape is
// measured again, and the gang's allowed set leaves the node out. The
// measurement landing before that engine cycle was handled already (the
// cycle marks it stale); it is here as a guard.
func TestScoutCycleBeganBeforeNodeChange(t *testing.T) {
	changes := []struct {
		name   string
		change func(n *v1.Node)
	}{
		{name: "tainted", change: func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
		}},
		{name: "cordoned", change: func(n *v1.Node) { n.Spec.Unschedulable = true }},
		{name: "relabelled", change: func(n *v1.Node) { n.Labels["example.com/pool"] = "retired" }},
	}
	for _, ch := range changes {
		for _, tc := range []struct {
			name string
			// waiting: the gang already waits in the engine (two nodes
			// hold foreign pods) and its shape is measured again after
			// the TTL; else the scout takes the shape's first measurement.
			waiting bool
			// cycleFirst: the engine cycle after the change runs before
			// the scout's PostFilter lands.
			cycleFirst bool
		}{
			{name: "first measurement, lands after the cycle", cycleFirst: true},
			{name: "first measurement, lands before the cycle"},
			{name: "measured again, lands after the cycle", waiting: true, cycleFirst: true},
			{name: "measured again, lands before the cycle", waiting: true},
		} {
			t.Run(ch.name+"/"+tc.name, func(t *testing.T) {
				h := newHookEnv(t, Args{})
				nodes := testNodes(4)
				h.addNodes(nodes...)
				h.p.h = &probeHandle{nodes: nodes} // every node passes
				if tc.waiting {
					for _, n := range []string{"n002", "n003"} {
						h.c.onPod(foreignPod("fill-"+n, n, 8))
					}
				}
				pods := h.groupPods(3, 8)
				byName := podsByName(pods)
				h.cycle()
				if tc.waiting {
					h.answerScouts()
					h.cycle()
					if g := h.c.groups["ns/g"]; g.inc == nil || g.inc.admitted {
						t.Fatalf("the gang is not waiting in the engine: %s", g.reason)
					}
					h.now = h.now.Add(h.c.args.allowedTTL())
					h.cycle()
				}
				name := scoutOf(h, "ns/g")
				if name == "" {
					t.Fatal("no scout out")
				}
				// The scout's scheduling cycle begins: its snapshot holds
				// the nodes as they are.
				h.now = h.now.Add(100 * time.Millisecond)
				state := framework.NewCycleState()
				if _, st := h.p.PreFilter(context.Background(), state, byName[name], nil); !st.IsSuccess() {
					t.Fatalf("PreFilter of the scout %s: %v", name, st)
				}
				// n001 changes meanwhile.
				h.now = h.now.Add(100 * time.Millisecond)
				changed := nodes[1].DeepCopy()
				ch.change(changed)
				h.c.onNode(changed, false)
				changedAt := h.now
				activated := h.a.activated["ns/"+name]
				if tc.cycleFirst {
					h.cycle()
				}
				// The scout's PostFilter lands, measured on the snapshot
				// from before the change: n001 passes.
				h.now = h.now.Add(100 * time.Millisecond)
				h.p.PostFilter(context.Background(), state, byName[name], nil)
				h.cycle()
				h.c.mu.Lock()
				g := h.c.groups["ns/g"]
				shape := g.pods[string(byName[name].UID)].shape
				measured := g.allowed[shape]
				var submitted []string
				if g.inc != nil && !tc.waiting {
					submitted = g.inc.allowed[shape]
				}
				h.c.mu.Unlock()
				if !measured.at.IsZero() {
					t.Fatalf("a measurement from a cycle that began before n001 was %s counts: allowed nodes %v dated %v (the change at %v)",
						ch.name, measured.nodes, measured.at.Format(time.StampMilli), changedAt.Format(time.StampMilli))
				}
				if submitted != nil {
					t.Fatalf("the gang was submitted with allowed nodes %v, measured in a cycle that began before n001 was %s", submitted, ch.name)
				}
				again := scoutOf(h, "ns/g")
				if again == "" || (again == name && h.a.activated["ns/"+again] <= activated) {
					t.Fatalf("no scout sent again after a measurement from before n001 was %s (scout %q, %s activated %d times, %d before): %s",
						ch.name, again, name, h.a.activated["ns/"+name], activated, g.reason)
				}
				// The next scout measures on a snapshot with the change:
				// n001 is rejected.
				var admitted []*v1.Pod
				if !tc.waiting {
					admitted = pods
				}
				h.measureCaughtUp(t, nodes, changed, byName[again], shape, admitted)
			})
		}
	}
}
