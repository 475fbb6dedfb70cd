package plugin

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestTakeoverHeldGangActivated: a replica takes over while every pod of
// a waiting gang is held (refused at PreFilter, or gated by PreEnqueue:
// in the framework's unschedulable pool, which no cluster event of
// Phalanx's moves). Nothing but the plugin's own activation brings them
// back before the queue's five-minute flush. The new leader must not
// wait for a pod to re-enter PreFilter: once the engine admits the gang
// (here, when the gang in its way ends), the same cycle activates every
// pod of it, each with its slot, and the gang is bound whole.
func TestTakeoverHeldGangActivated(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(4)...)
	blocker := h.gangOfFour(4) // the old leader's gang, running: adopted
	var waiting []*v1.Pod
	for i := 0; i < 4; i++ {
		p := groupPod("h", fmt.Sprintf("v-%d", i), 8, 4)
		h.c.onPod(p)
		waiting = append(waiting, p)
	}
	for i := 0; i < 3; i++ { // the standby's cycles: adopt, measure, submit
		h.cycle()
		h.answerScouts()
	}
	h.c.mu.Lock()
	g := h.c.groups["ns/h"]
	queued := g.inc != nil && !g.inc.admitted
	h.c.mu.Unlock()
	if !queued {
		t.Fatalf("gang h not waiting in the engine on the standby: %s", g.reason)
	}
	// The takeover: the new leader's queue pops every pod it holds
	// ready, and PreFilter refuses each of them (no slot yet).
	for _, p := range waiting {
		if st := h.leads(p); st.IsSuccess() {
			t.Fatalf("pod %s let through PreFilter before its gang is admitted", p.Name)
		}
	}
	h.cycle()
	before := map[string]int{}
	for _, p := range waiting {
		before[p.Name] = h.a.activated["ns/"+p.Name]
	}
	// The gang in the way ends 30 s later: its pods are deleted.
	h.now = h.now.Add(30 * time.Second)
	for _, p := range blocker {
		b := p.DeepCopy()
		h.c.podHandlers().DeleteFunc(b)
	}
	h.cycle()
	for _, p := range waiting {
		if h.a.activated["ns/"+p.Name] == before[p.Name] {
			t.Errorf("pod %s of the admitted gang not activated by the new leader in the cycle that admitted it", p.Name)
		}
		if h.slot(p) == "" {
			t.Errorf("pod %s has no slot once the gang in its way ended", p.Name)
		}
	}
	checkBooks(t, h)
}
