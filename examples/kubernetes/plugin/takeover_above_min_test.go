package plugin

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestTakeoverHalfBoundAboveMinMember: the old leader was binding a gang
// of four pods of a group whose minMember is 2, and died with one pod
// bound (on n007): half-bound, with three pods pending, which are at
// least minMember. The replica that takes over submitted those three as a
// new gang at once, so the group had a job and was half-bound no more:
// the old leader's pod ran on for good beside the new gang, never
// deleted (against the half-bound rule), and a bind of the old leader
// landing after the takeover put a pod of the new gang on a node the
// engine had not given it (its GPUs counted nowhere). While the group is
// watched as half-bound, its pending pods wait: the bound pod is deleted
// once it stayed the same for partialSettle and then the pending pods form
// the next gang; a late bind that makes the group whole has it adopted.
func TestTakeoverHalfBoundAboveMinMember(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lateBind bool // the old leader's bind of w-1 (on n006) lands 20 s after the takeover
	}{
		{name: "no late bind"},
		{name: "a late bind makes the group whole", lateBind: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(8)...)
			ps := make([]*v1.Pod, 4)
			for i := range ps {
				ps[i] = groupPod("g", "w-"+string(rune('0'+i)), 8, 2)
				h.c.onPod(ps[i])
			}
			h.cycle() // the standby's first cycle: nothing bound yet
			b := ps[0].DeepCopy()
			b.Spec.NodeName = "n007" // the old leader's bind, seen by the informer
			h.c.onPod(b)
			h.cycle()
			other := groupPod("", "solo", 8, 0)
			h.c.onPod(other)
			h.leads(other) // the old leader is gone: this replica leads
			start := h.now
			for step := 1; step <= 90; step++ { // a cycle a second
				if tc.lateBind && step == 20 {
					b1 := ps[1].DeepCopy()
					b1.Spec.NodeName = "n006"
					h.c.onPod(b1)
				}
				h.cycle()
				h.answerScouts()
				at := h.now.Sub(start)
				h.c.mu.Lock()
				g := h.c.groups["ns/g"]
				job, reason := g.inc != nil && !g.inc.adopted, g.reason
				h.c.mu.Unlock()
				if at < partialSettle && job {
					t.Fatalf("%v after the takeover, with the old leader's pod bound, the group's pending pods were submitted as a new gang", at)
				}
				if at < 15*time.Second && !strings.Contains(reason, "partial gang") {
					t.Fatalf("%v after the takeover the pending pods wait with reason %q, want it to name the partial gang", at, reason)
				}
			}
			checkBooks(t, h)
			h.c.mu.Lock()
			defer h.c.mu.Unlock()
			g := h.c.groups["ns/g"]
			if tc.lateBind {
				if len(h.a.evicted) != 0 || g.inc == nil || !g.inc.adopted || len(g.inc.pods) != 2 {
					t.Fatalf("evicted %v, job %+v: want nothing deleted and w-0, w-1 adopted as the running gang", h.a.evicted, g.inc)
				}
				return
			}
			if !slices.Equal(h.a.evicted, []string{"ns/w-0"}) {
				t.Fatalf("evicted %v, want the old leader's bound pod w-0 once", h.a.evicted)
			}
			if g.inc == nil || !g.inc.admitted || len(g.inc.pods) != 3 || g.inc.pods["uid-w-0"] != nil {
				t.Fatalf("the group's job %+v (reason %q): want w-1..w-3 admitted as the next gang", g.inc, g.reason)
			}
		})
	}
}
