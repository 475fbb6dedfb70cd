package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWaitingGangLeavesChangedNode: a gang waiting in the engine kept the
// allowed node set it was submitted with until its shape was measured
// again after a node change. Between the change (here n001 tainted, or
// relabelled) and the measurement, GPUs freed elsewhere let the engine
// admit the gang onto n001, which the Filter plugins may now reject (the
// pod fails its Filter there and the gang is torn down, measured again
// and placed again). A node whose filter fields change leaves the allowed
// sets of the waiting gangs whose shapes it serves at once (the gang's
// sets are changed in the engine, Engine.Update: it keeps its job); the
// measurement puts it back if it still passes. Here the gang is one the
// engine has no plan for (its pods are young: hold mode's MinWait has not
// passed); a held one: TestHeldGangLeavesChangedNode.
func TestWaitingGangLeavesChangedNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(n *v1.Node)
		// passes: the Filter plugins still accept n001 after the change.
		passes bool
		// lagging: a first measurement is taken on a snapshot that still
		// holds n001 as it was (accepted): it is stale, and must not put
		// n001 back.
		lagging bool
	}{
		{name: "tainted", change: func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
		}},
		{name: "cordoned", change: func(n *v1.Node) { n.Spec.Unschedulable = true }},
		{name: "relabelled, still accepted", change: func(n *v1.Node) { n.Labels["example.com/pool"] = "blue" }, passes: true},
		{name: "tainted, measured first on a lagging snapshot", change: func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
		}, lagging: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(4)
			h.addNodes(nodes...)
			pods := waitingGang(h, true) // n002 and n003 full
			byName := podsByName(pods)
			h.c.mu.Lock()
			g := h.c.groups["ns/g"]
			shape := g.pods[string(pods[0].UID)].shape
			before := slices.Clone(g.inc.allowed[shape])
			job := g.inc.job
			h.c.mu.Unlock()
			if st, _ := h.c.eng.eng.Job(job); hasPlan(h, job) {
				t.Fatalf("the engine has a plan for the young gang: %s %s", st.State, st.Reason)
			}
			if want := []string{"n000", "n001", "n002", "n003"}; !slices.Equal(before, want) {
				t.Fatalf("the waiting gang's allowed nodes %v, want %v", before, want)
			}
			// n001 changes, and n002 frees up, before the scout sent for
			// the change has measured.
			changed := nodes[1].DeepCopy()
			tc.change(changed)
			h.c.onNode(changed, false)
			h.c.podHandlers().DeleteFunc(foreignPod("fill-n002", "n002", 8))
			h.cycle()
			scout := scoutOf(h, "ns/g")
			if scout == "" {
				t.Fatal("no scout sent to measure the shape again after n001 changed")
			}
			h.c.mu.Lock()
			var submitted []string
			var jobAfter string
			admitted := g.inc != nil && g.inc.admitted
			if g.inc != nil {
				submitted = slices.Clone(g.inc.allowed[shape])
				jobAfter = g.inc.job
			}
			reason := g.reason
			h.c.mu.Unlock()
			if jobAfter != job {
				t.Fatalf("the waiting gang %s is job %q after n001 changed: its sets were not changed in place (%s)", job, jobAfter, reason)
			}
			for _, p := range pods {
				if s := admittedOn(h, p); s == "n001" {
					t.Fatalf("pod %s admitted on n001 before the shape was measured again after n001 changed (%s)", p.Name, tc.name)
				}
			}
			if admitted {
				t.Fatalf("the gang was admitted on three of n000, n002, n003 with n003 full (%s)", reason)
			}
			if want := []string{"n000", "n002", "n003"}; !slices.Equal(submitted, want) {
				t.Fatalf("the waiting gang's allowed nodes %v after n001 changed, want %v (%s)", submitted, want, reason)
			}
			if reason == "" {
				t.Fatal("the waiting gang's pods show no reason")
			}
			if tc.lagging {
				h.p.h = &probeHandle{nodes: nodes} // n001 as it was: it passes
				h.measureAs(t, byName[scout])
				h.cycle()
				h.c.mu.Lock()
				submitted, reason = nil, g.reason
				if g.inc != nil {
					submitted = slices.Clone(g.inc.allowed[shape])
				}
				h.c.mu.Unlock()
				for _, p := range pods {
					if s := admittedOn(h, p); s == "n001" {
						t.Fatalf("pod %s admitted on n001 after a measurement on a snapshot that held it untainted (%s)", p.Name, reason)
					}
				}
				if want := []string{"n000", "n002", "n003"}; !slices.Equal(submitted, want) {
					t.Fatalf("the waiting gang's allowed nodes %v after a measurement on a lagging snapshot, want %v (%s)", submitted, want, reason)
				}
				if scout = scoutOf(h, "ns/g"); scout == "" {
					t.Fatal("no scout sent again after a measurement on a lagging snapshot")
				}
			}
			// The measurement lands on a snapshot with the change.
			after := slices.Clone(nodes)
			after[1] = changed
			fits := map[string]bool{"n000": true, "n002": true, "n003": true}
			if tc.passes {
				fits["n001"] = true
			}
			h.p.h = &probeHandle{nodes: after, fits: fits}
			h.measureAs(t, byName[scout])
			h.cycle()
			var slots []string
			for _, p := range pods {
				slots = append(slots, admittedOn(h, p))
			}
			slices.Sort(slots)
			h.c.mu.Lock()
			reason = g.reason
			h.c.mu.Unlock()
			switch {
			case tc.passes && !slices.Equal(slots, []string{"n000", "n001", "n002"}):
				t.Fatalf("pods placed on %v once n001 was measured as still accepted, want n000 n001 n002 (%s)", slots, reason)
			case !tc.passes && slices.ContainsFunc(slots, func(s string) bool { return s != "" }):
				t.Fatalf("pods placed on %v with n001 rejected and n003 full, want none (%s)", slots, reason)
			}
			checkBooks(t, h)
		})
	}
}

// TestAdmittedGangKeepsChangedNode: a node change under a gang the engine
// admitted (not yet bound) changes nothing of it: it keeps its slots, its
// job and its allowed nodes (a pod that its node's Filter plugins now
// reject tears it down at PostFilter, as before).
func TestAdmittedGangKeepsChangedNode(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(4)
	h.addNodes(nodes...)
	h.c.onPod(foreignPod("fill-n003", "n003", 8))
	pods := h.groupPods(3, 8)
	slots := h.admit(pods)
	h.c.mu.Lock()
	g := h.c.groups["ns/g"]
	job := g.inc.job
	shape := g.pods[string(pods[0].UID)].shape
	allowed := slices.Clone(g.inc.allowed[shape])
	submits := h.c.stats.Submits
	h.c.mu.Unlock()
	changed := nodes[1].DeepCopy()
	changed.Spec.Taints = append(changed.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
	h.c.onNode(changed, false)
	h.cycle()
	h.c.mu.Lock()
	same := g.inc != nil && g.inc.job == job && g.inc.admitted && g.inc.broken == "" &&
		slices.Equal(g.inc.allowed[shape], allowed) && h.c.stats.Submits == submits
	h.c.mu.Unlock()
	if !same {
		t.Fatalf("the admitted gang changed after a node change: %s", h.describeGroup("ns/g"))
	}
	for _, p := range pods {
		if s := h.slot(p); s != slots[p.Name] {
			t.Fatalf("pod %s moved from %s to %q after a node change", p.Name, slots[p.Name], s)
		}
	}
	checkBooks(t, h)
}

// describeGroup renders group key's gang for a failing test.
func (h *hookEnv) describeGroup(key string) string {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	g := h.c.groups[key]
	if g == nil || g.inc == nil {
		return "no gang"
	}
	return g.inc.job + " admitted=" + map[bool]string{true: "yes", false: "no"}[g.inc.admitted] + " broken=" + g.inc.broken + " reason=" + g.reason
}

// TestWaitingGangShrunkBelowItsSize: a gang of four pods, young (the
// engine has no plan for it), waits on four nodes (one full) and one of
// them changes: without it the gang can never fit. It leaves the engine until its shape is measured again, as waiting
// for that measurement (not as a gang that never fits, which would be
// tried again only after Args.AllowedTTLSeconds); the measurement decides.
func TestWaitingGangShrunkBelowItsSize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		passes bool // the Filter plugins still accept n001
	}{
		{name: "still accepted", passes: true},
		{name: "rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(4)
			h.addNodes(nodes...)
			h.c.onPod(foreignPod("fill-n003", "n003", 8))
			pods := h.youngGroupPods(4, 8) // no hold for it yet
			byName := podsByName(pods)
			h.cycle()
			h.answerScouts()
			h.cycle()
			h.c.mu.Lock()
			g := h.c.groups["ns/g"]
			waiting := g.inc != nil && !g.inc.admitted
			var job string
			if waiting {
				job = g.inc.job
			}
			h.c.mu.Unlock()
			if !waiting {
				t.Fatalf("the gang of four does not wait in the engine: %s", g.reason)
			}
			if st, _ := h.c.eng.eng.Job(job); hasPlan(h, job) {
				t.Fatalf("the engine has a plan for the young gang of four: %s %s", st.State, st.Reason)
			}
			changed := nodes[1].DeepCopy()
			changed.Labels["example.com/pool"] = "blue"
			h.c.onNode(changed, false)
			h.cycle()
			scout := scoutOf(h, "ns/g")
			h.c.mu.Lock()
			inEngine, reason := g.inc != nil, g.reason
			var allowed []string
			if inEngine {
				allowed = g.inc.allowed[g.pods[string(pods[0].UID)].shape]
			}
			h.c.mu.Unlock()
			switch {
			case scout == "":
				t.Fatal("no scout sent after n001 changed")
			case inEngine:
				t.Fatalf("the gang of four still waits in the engine after n001 changed, allowed nodes %v (%s)", allowed, reason)
			case h.neverFits():
				t.Fatalf("the gang waits as never fitting before n001 is measured again (%s)", reason)
			case !strings.HasPrefix(reason, "measuring"):
				t.Fatalf("the gang's pods show %q while n001 is measured again", reason)
			}
			after := slices.Clone(nodes)
			after[1] = changed
			fits := map[string]bool{"n000": true, "n002": true, "n003": true, "n001": tc.passes}
			h.p.h = &probeHandle{nodes: after, fits: fits}
			h.measureAs(t, byName[scout])
			h.cycle()
			h.c.mu.Lock()
			inEngine, reason = g.inc != nil, g.reason
			h.c.mu.Unlock()
			switch {
			case tc.passes && (!inEngine || h.neverFits()):
				t.Fatalf("the gang is not back in the engine once n001 was measured as accepted (%s)", reason)
			case !tc.passes && (inEngine || !h.neverFits()):
				t.Fatalf("the gang does not wait as never fitting once n001 was measured as rejected (in the engine: %v; %s)", inEngine, reason)
			}
			checkBooks(t, h)
		})
	}
}

// youngGroupPods is groupPods with the pods created now on the fake clock
// rather than a day before: the gang has waited less than hold mode's
// MinWait (55 minutes in the engine's default config, which the plugin
// keeps), so the engine holds no GPUs for it.
func (h *hookEnv) youngGroupPods(n int, gpus int64) []*v1.Pod {
	ps := make([]*v1.Pod, n)
	for i := range ps {
		ps[i] = groupPod("g", fmt.Sprintf("w-%d", i), gpus, n)
		ps[i].CreationTimestamp = metav1.NewTime(h.now)
		h.c.onPod(ps[i])
	}
	return ps
}
