package plugin

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// answerScoutsWith answers every scout in flight with nodes, as the
// profile's other Filter plugins would measure them.
func (h *hookEnv) answerScoutsWith(nodes []string) {
	h.answerScoutsAs(nodes, h.knownNodes())
}

// TestWaitingGangKeepsAllowedOnPodDeletion: a gang of three 8-GPU pods
// (minMember 2) waits on four nodes, two of them full, the profile's other
// filters rejecting n003. One of its pods is deleted before the gang is
// admitted: nothing was bound or promised to it, so the gang is submitted
// again with its two pods and the allowed node sets measured for its
// shape, with no teardown and no new scout (which would cost a
// scheduling cycle of every Filter plugin on every node, and leave the
// group waiting meanwhile); once n000 is free it is admitted on n000 and
// n002, never on the rejected n003.
func TestWaitingGangKeepsAllowedOnPodDeletion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deleted int // the pod deleted: the scout (w-0) or another
	}{
		{name: "another pod deleted", deleted: 2},
		{name: "the scout deleted", deleted: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(4)...)
			fill := foreignPod("fill0", "n000", 8)
			h.c.onPod(fill)
			h.c.onPod(foreignPod("fill1", "n001", 8))
			h.cycle()
			pods := make([]*v1.Pod, 3)
			for i := range pods {
				pods[i] = groupPod("g", fmt.Sprintf("w-%d", i), 8, 2)
				h.c.onPod(pods[i])
			}
			allowed := []string{"n000", "n001", "n002"}
			h.cycle()
			h.answerScoutsWith(allowed)
			h.cycle()
			h.c.mu.Lock()
			g := h.c.groups["ns/g"]
			submitted := g != nil && g.inc != nil && !g.inc.admitted && len(g.inc.pods) == 3
			h.c.mu.Unlock()
			if !submitted {
				t.Fatal("the gang of three is not waiting in the engine")
			}
			before := h.c.Stats()
			h.c.podHandlers().DeleteFunc(pods[tc.deleted])
			h.cycle()
			after := h.c.Stats()
			if after.Scouts != before.Scouts || after.Teardowns != before.Teardowns || after.Submits != before.Submits+1 {
				t.Fatalf("a waiting gang lost a pod: scouts %d -> %d, teardowns %d -> %d, submits %d -> %d; want no new scout, no teardown, one resubmission",
					before.Scouts, after.Scouts, before.Teardowns, after.Teardowns, before.Submits, after.Submits)
			}
			h.c.podHandlers().DeleteFunc(fill)
			h.cycle()
			var nodes []string
			for i, p := range pods {
				if i != tc.deleted {
					nodes = append(nodes, admittedOn(h, p))
				}
			}
			slices.Sort(nodes)
			if !slices.Equal(nodes, []string{"n000", "n002"}) {
				t.Fatalf("the gang of two admitted on %q, want n000 and n002 (n003 rejected by the other filters)", nodes)
			}
			checkBooks(t, h)
		})
	}
}
