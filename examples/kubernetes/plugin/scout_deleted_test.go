package plugin

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// TestDeletedScoutForgotten: a scout pod deleted before its measurement
// came back stayed in its group's scout map: the loop woke at the scout
// timeout (10 s) for it for as long as the group lived, even with the
// group below its minimum and nothing to measure. Its entry goes with the
// pod; a group still at its minimum sends another scout in the next cycle.
func TestDeletedScoutForgotten(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pods     int // pods of group g, minMember 2
		newScout bool
	}{
		{name: "group below its minimum", pods: 2},
		{name: "group still at its minimum", pods: 3, newScout: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(4)...)
			for i := 0; i < tc.pods; i++ {
				h.c.onPod(groupPod("g", fmt.Sprintf("w-%d", i), 8, 2))
			}
			h.cycle()
			h.c.mu.Lock()
			g := h.c.groups["ns/g"]
			var uid string
			for _, u := range g.scout {
				uid = u
			}
			scout := g.pods[uid].pod
			h.c.mu.Unlock()
			if scout == nil {
				t.Fatal("no scout sent")
			}
			h.c.podHandlers().DeleteFunc(scout)
			h.c.mu.Lock()
			left := len(g.scout)
			h.c.mu.Unlock()
			if left != 0 {
				t.Errorf("deleted scout %s still in the group's scout map", scout.Name)
			}
			h.now = h.now.Add(time.Second)
			acts, next := h.c.cycle(klog.Background())
			acts.apply(h.a, nil)
			h.c.mu.Lock()
			var again string
			for _, u := range g.scout {
				again = u
			}
			h.c.mu.Unlock()
			switch {
			case tc.newScout && (again == "" || again == uid):
				t.Fatalf("no new scout after %s was deleted (scout %q)", scout.Name, again)
			case !tc.newScout && next <= h.c.args.scoutTimeout():
				t.Fatalf("the loop wakes in %v for a deleted scout, want no wake-up for it", next)
			case !tc.newScout && again != "":
				t.Fatalf("scout %q recorded for a group below its minimum", again)
			}
		})
	}
}
