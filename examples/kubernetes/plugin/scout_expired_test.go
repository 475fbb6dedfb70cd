package plugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// asScout reports whether the framework would run pod p as its shape's
// scout: PreEnqueue lets it through and PreFilter marks its cycle as a
// measurement (every Filter plugin then runs on every GPU node in its
// PostFilter). It fails the test when the two disagree.
func asScout(t *testing.T, h *hookEnv, p *v1.Pod) bool {
	t.Helper()
	enq := h.p.PreEnqueue(context.Background(), p)
	state := framework.NewCycleState()
	_, st := h.p.PreFilter(context.Background(), state, p, nil)
	_, err := state.Read(scoutKey)
	scout := err == nil
	if scout != enq.IsSuccess() || scout != st.IsSuccess() {
		t.Fatalf("pod %s: PreEnqueue %v, PreFilter %v, cycle marked a scout %v: want all or none", p.Name, enq, st, scout)
	}
	return scout
}

// TestExpiredScoutIsMember: a scout past its timeout stayed in its group's
// scout map while the group no longer asked for its shape (below its
// minimum): the pod, requeued (the unschedulable queue's flush, a
// cluster event), was still let through PreEnqueue and measured as a
// scout, every Filter plugin on every GPU node, instead of being held as
// an ordinary member of its group. Past its timeout it is a member,
// whether or not an engine cycle ran since (the cycle drops the entry).
func TestExpiredScoutIsMember(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cycle bool // an engine cycle runs after the timeout
	}{
		{name: "no cycle since the timeout"},
		{name: "a cycle since the timeout", cycle: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(4)...)
			pods := h.groupPods(3, 8)
			h.cycle()
			if got := scoutOf(h, "ns/g"); got != "w-0" {
				t.Fatalf("scout %q sent, want w-0", got)
			}
			sent := h.now
			if !asScout(t, h, pods[0]) {
				t.Fatal("w-0 not let through as a scout within its timeout")
			}
			// The group falls below its minimum: it asks for no
			// measurement, and the scout's entry is not replaced.
			h.c.podHandlers().DeleteFunc(pods[2])
			h.now = sent.Add(5 * time.Second)
			h.cycle()
			h.now = sent.Add(h.c.args.scoutTimeout() + time.Second)
			if tc.cycle {
				h.cycle()
				if got := scoutOf(h, "ns/g"); got != "" {
					t.Errorf("scout %q still in the group's scout map past its timeout", got)
				}
			}
			if asScout(t, h, pods[0]) {
				t.Fatalf("w-0, %v after it was sent as a scout, let through again as a scout; want it held as a member", h.now.Sub(sent))
			}
			h.c.mu.Lock()
			reason := h.c.groups["ns/g"].reason
			h.c.mu.Unlock()
			if want := "waiting for pods: 2 of the group's minimum 3 are pending"; reason != want {
				t.Fatalf("group reason %q, want %q", reason, want)
			}
			// The group reaches its minimum again: a scout goes out
			// at once and is let through.
			h.c.onPod(groupPod("g", "w-3", 8, 3))
			h.cycle()
			got := scoutOf(h, "ns/g")
			if got == "" {
				t.Fatal("no scout sent once the group is back at its minimum")
			}
			var scout *v1.Pod
			for _, p := range append(pods[:2:2], groupPod("g", "w-3", 8, 3)) {
				if p.Name == got {
					scout = p
				}
			}
			if !asScout(t, h, scout) {
				t.Fatalf("new scout %s not let through", got)
			}
			h.answerScouts()
			h.cycle()
			if g := h.c.groups["ns/g"]; g.inc == nil || len(g.inc.pods) != 3 {
				t.Fatalf("the gang of three not submitted: %s", g.reason)
			}
			checkBooks(t, h)
		})
	}
}

// TestScoutTimeoutSendsNextPod: the framework tells a plugin nothing when
// another plugin's PreEnqueue holds a pod back (no hook of Phalanx runs,
// and the handle has no view of the queue), so a scout that never reaches
// PreFilter is given up only at the scout timeout. The same pod was then
// sent again, every timeout, for ever: a shape whose first pod another
// plugin refuses was never measured and its gang never submitted. The
// next pod of the shape is sent instead, in pod order, wrapping round.
func TestScoutTimeoutSendsNextPod(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(4)...)
	pods := make([]*v1.Pod, 3)
	for i := range pods {
		pods[i] = groupPod("g", fmt.Sprintf("w-%d", i), 8, 2)
		h.c.onPod(pods[i])
	}
	h.cycle()
	sent := h.now
	for i, want := range []string{"w-0", "w-1", "w-2", "w-0"} {
		if got := scoutOf(h, "ns/g"); got != want {
			t.Fatalf("scout #%d is %q, want %s", i, got, want)
		}
		if h.a.activated["ns/"+want] == 0 {
			t.Fatalf("scout #%d %s not activated", i, want)
		}
		// The scout is refused before Phalanx's PreFilter: nothing
		// measures. The loop wakes at its timeout and sends the next.
		h.now = sent.Add(time.Duration(i+1) * h.c.args.scoutTimeout())
		h.cycle()
	}
	if got := scoutOf(h, "ns/g"); got != "w-1" {
		t.Fatalf("scout %q after w-0 timed out again, want w-1", got)
	}
	h.answerScouts()
	h.cycle()
	h.c.mu.Lock()
	g := h.c.groups["ns/g"]
	submitted := g.inc != nil && len(g.inc.pods) == 3
	h.c.mu.Unlock()
	if !submitted {
		t.Fatalf("the gang not submitted once a scout measured its shape: %s", g.reason)
	}
	checkBooks(t, h)
}
