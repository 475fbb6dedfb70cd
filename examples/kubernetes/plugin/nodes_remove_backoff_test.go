package plugin

import (
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// TestFailedNodeRemovalBacksOff: a deleted node with no pod left is
// removed from the cluster model by a rebuild; when the engine refuses
// that rebuild, the removal was tried again in every cycle, a rebuild of
// the whole engine (and an error logged) each time. It is tried again
// after a back-off (5 s, doubling), the loop woken for it, and at once
// when another node is deleted (the set of nodes to remove changes); once
// the rebuild succeeds, the node is forgotten.
func TestFailedNodeRemovalBacksOff(t *testing.T) {
	for _, tc := range []struct {
		name      string
		another   bool // n002 is deleted too while n003's removal backs off
		wantTries []int
	}{
		// Cycles at t = 1 s ... 20 s; n003 is deleted before the
		// second, taken down there and first removed in the third.
		{name: "same node", wantTries: []int{3, 8, 18}},
		// n002, deleted before cycle 5, is down in cycle 5 and the
		// pair is tried in cycle 6, then backs off afresh.
		{name: "another node deleted", another: true, wantTries: []int{3, 6, 11}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(4)
			h.addNodes(nodes...)
			h.cycle()
			tries, stop := failRebuildsWith(h, "n000")
			h.c.nodeHandlers().DeleteFunc(nodes[3].DeepCopy())
			var at []int
			last := 0
			for cycle := 2; cycle <= 20; cycle++ {
				if tc.another && cycle == 5 {
					h.c.nodeHandlers().DeleteFunc(nodes[2].DeepCopy())
				}
				h.now = h.now.Add(time.Second)
				acts, next := h.c.cycle(klog.Background())
				acts.apply(h.a, nil)
				if *tries != last {
					at = append(at, cycle)
					last = *tries
				}
				h.c.mu.Lock()
				due, waiting := h.c.removeDue, len(h.c.removeFailed) > 0
				h.c.mu.Unlock()
				if waiting && next > due.Sub(h.now) {
					t.Fatalf("cycle %d: the loop sleeps %v, past the removal retry due in %v", cycle, next, due.Sub(h.now))
				}
			}
			if len(at) != len(tc.wantTries) {
				t.Fatalf("removal tried in cycles %v, want %v (backing off)", at, tc.wantTries)
			}
			for i := range at {
				if at[i] != tc.wantTries[i] {
					t.Fatalf("removal tried in cycles %v, want %v (backing off)", at, tc.wantTries)
				}
			}
			if _, down, known := h.engineNode("n003"); !known || !down {
				t.Fatalf("n003 while its removal fails: known %v down %v, want kept down", known, down)
			}
			stop()
			h.now = h.now.Add(removeRetryMax)
			h.cycle()
			if _, _, known := h.engineNode("n003"); known {
				t.Fatal("n003 still in the engine's cluster once its removal succeeds")
			}
			h.c.mu.Lock()
			failed := h.c.removeFailed
			h.c.mu.Unlock()
			if failed != nil {
				t.Fatalf("back-off kept after the removal succeeded: %v", failed)
			}
			checkBooks(t, h)
		})
	}
}
