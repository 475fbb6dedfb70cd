package plugin

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestScoutSnapshotLagsAgain: the measurement that stands while the same
// nodes differ in the scheduler's snapshot (TestScoutSnapshotLagsForGood)
// must not outlive the next change of such a node. Here n001 is
// relabelled (no Filter plugin minds) and two scouts in a row measure on
// a snapshot from before that: the second stands, noting n001 as
// differing, and the gang waits in the engine (two nodes hold foreign
// pods) with every node allowed. Then n001 is tainted, and the scout sent
// for it measures on a snapshot that holds n001 relabelled but not yet
// tainted. That node differed the same way at the last measurement, so
// the stale measurement stood at once: the gang kept n001, which its
// Filter plugins reject since the taint, among its allowed nodes. A node
// that changed since is measured again once more, and the gang is
// submitted again without n001 once the snapshot caught up.
func TestScoutSnapshotLagsAgain(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(4)
	h.addNodes(nodes...)
	h.p.h = &probeHandle{nodes: nodes} // every node passes
	for _, n := range []string{"n002", "n003"} {
		h.c.onPod(foreignPod("fill-"+n, n, 8))
	}
	pods := h.groupPods(3, 8)
	byName := podsByName(pods)
	h.cycle()
	measure := func(step string) allowedSet {
		t.Helper()
		name := scoutOf(h, "ns/g")
		if name == "" {
			t.Fatalf("%s: no scout out", step)
		}
		h.measureAs(t, byName[name])
		h.c.mu.Lock()
		g := h.c.groups["ns/g"]
		a := g.allowed[g.pods[string(byName[name].UID)].shape]
		h.c.mu.Unlock()
		h.cycle()
		return a
	}
	submitted := func() []string {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		g := h.c.groups["ns/g"]
		if g.inc == nil || g.inc.admitted {
			t.Fatalf("the gang is not waiting in the engine: %s", g.reason)
		}
		for _, nodes := range g.inc.allowed {
			return nodes
		}
		return nil
	}
	relabelled := nodes[1].DeepCopy()
	relabelled.Labels["example.com/heartbeat"] = "1"
	h.now = h.now.Add(100 * time.Millisecond)
	h.c.onNode(relabelled, false)
	h.cycle()
	if a := measure("relabelled, first"); !a.at.IsZero() {
		t.Fatalf("the first measurement on a snapshot without n001's new label counts")
	}
	if a := measure("relabelled, second"); a.at.IsZero() || !slices.Equal(a.missed, []string{"n001"}) {
		t.Fatalf("the second measurement, n001 still differing, does not stand: dated %v, missed %v", a.at, a.missed)
	}
	if got := submitted(); !slices.Equal(got, []string{"n000", "n001", "n002", "n003"}) {
		t.Fatalf("the gang's allowed nodes %v, want every node", got)
	}
	// n001 is tainted: the plugin hears of it, the scheduler's cache not
	// yet (its snapshot holds n001 relabelled, untainted).
	tainted := relabelled.DeepCopy()
	tainted.Spec.Taints = append(tainted.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
	h.now = h.now.Add(100 * time.Millisecond)
	h.c.onNode(tainted, false)
	h.cycle()
	lagging := slices.Clone(nodes)
	lagging[1] = relabelled
	h.p.h = &probeHandle{nodes: lagging}
	if a := measure("tainted, lagging"); !a.at.IsZero() {
		t.Fatalf("a measurement on a snapshot that holds n001 untainted counts after n001 was tainted (it differed before, relabelled): allowed %v, missed %v", a.nodes, a.missed)
	}
	// The snapshot caught up: n001 is rejected.
	caughtUp := slices.Clone(nodes)
	caughtUp[1] = tainted
	h.p.h = &probeHandle{nodes: caughtUp, fits: map[string]bool{"n000": true, "n002": true, "n003": true}}
	if a := measure("tainted, caught up"); a.at.IsZero() {
		t.Fatalf("the measurement on a snapshot that caught up does not count: missed %v", a.missed)
	}
	if got, want := submitted(), []string{"n000", "n002", "n003"}; !slices.Equal(got, want) {
		t.Fatalf("the gang's allowed nodes %v, want %v", got, want)
	}
	checkBooks(t, h)
}
