package plugin

import (
	"slices"
	"testing"
)

// answerScoutsSeen answers every scout in flight as a scheduler whose
// snapshot held only the nodes seen would: each of them accepts the shape.
func (h *hookEnv) answerScoutsSeen(seen []string) int {
	return h.answerScoutsAs(seen, seen)
}

// TestScoutSnapshotLagsInformer: a scout measures its shape on the
// scheduler's snapshot, which may not yet hold a node the plugin already
// heard of from the informer. A gang of three 8-GPU pods waits on two
// nodes (it can never fit them); n002 joins, which has the shape measured
// again, but the scout's snapshot lacks n002: the measured set left it
// out, and the gang waited as one that never fits until
// Args.AllowedTTLSeconds. The set is now measured again at once, and the
// gang is admitted with n002 in its allowed set. A node that stays
// missing from the snapshot is measured again once only: the gang is then
// submitted without it rather than measured for ever.
func TestScoutSnapshotLagsInformer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lagging  int // scouts answered from the snapshot without n002
		admitted bool
	}{
		{name: "snapshot catches up", lagging: 1, admitted: true},
		{name: "snapshot never lists the node", lagging: 2, admitted: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(3)
			h.addNodes(nodes[:2]...)
			pods := h.groupPods(3, 8)
			h.cycle()
			h.answerScouts()
			h.cycle()
			if !h.neverFits() {
				t.Fatal("a gang of three 8-GPU pods on two nodes does not wait as never fitting")
			}
			h.addNodes(nodes[2])
			h.cycle() // n002 joins; the shape is measured again
			old := []string{"n000", "n001"}
			for i := 0; i < tc.lagging; i++ {
				if n := h.answerScoutsSeen(old); n != 1 {
					t.Fatalf("measurement %d: %d scouts out, want 1 (the set lacking n002 measured again)", i+1, n)
				}
				h.cycle()
			}
			h.answerScouts() // the snapshot has caught up: n002 in it
			h.cycle()
			var slots []string
			for _, p := range pods {
				if s := h.slot(p); s != "" {
					slots = append(slots, s)
				}
			}
			slices.Sort(slots)
			switch {
			case tc.admitted && !slices.Equal(slots, []string{"n000", "n001", "n002"}):
				t.Fatalf("gang placed on %v once the snapshot lists n002, want n000 n001 n002", slots)
			case !tc.admitted && (len(slots) > 0 || !h.neverFits()):
				t.Fatalf("gang placed on %v (never fits %v) from sets without n002, want waiting as never fitting", slots, h.neverFits())
			}
			checkBooks(t, h)
		})
	}
}

// neverFits reports whether group g waits as a gang that never fits.
func (h *hookEnv) neverFits() bool {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	g := h.c.groups["ns/g"]
	return g != nil && g.neverFits
}
