package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestLentClaimRoundTrip: a snapshot taken while a preemptor's claim
// holds pods its search took from a growing lender (the lender shrunk
// already, its victims not yet released) restores to the same snapshot,
// and the restored engine starts the preemptor on the claim once the
// victims are released. g (class 0, elastic: 6 nodes, minimum 2) lends
// its 4 pods above its minimum; u (class 1) needs 6 nodes (v's 2 and the
// lent 4: g shrinks, v is the victim) or all 8 (g is the victim too).
func TestLentClaimRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		uNodes   int
		victims  []string
		gPodsEnd int // g's pods once u started (0: g stopped)
	}{
		{"lender shrunk, v stopped", 6, []string{"v"}, 2},
		{"lender stopped with v", 8, []string{"g", "v"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := lendingScene(t, 4, 0)

			at := epoch.Add(20 * time.Minute)
			u := Job{ID: "u", Account: "a", TimeLimit: 30 * time.Minute, Class: 1, Gang: member(placement.NodesOf(tc.uNodes, 8))}
			require.NoError(t, e.Submit(u, at))
			p := startAll(t, e, at)
			require.Empty(t, p.Starts, p.Describe(c, epoch))
			var victims []string
			for _, pr := range p.Preemptions {
				victims = append(victims, pr.Victim)
			}
			require.ElementsMatch(t, tc.victims, victims, p.Describe(c, epoch))
			require.NotNil(t, e.jobs.byID["u"].claim)

			r := roundTrip(t, e)
			require.NotNil(t, r.jobs.byID["u"].claim, "the claim survives the round trip")
			at = at.Add(3 * time.Minute)
			for _, id := range tc.victims {
				require.NoError(t, r.Preempted(id, at))
			}
			p = startAll(t, r, at)
			require.NotEmpty(t, p.Starts, p.Describe(c, epoch))
			require.Equal(t, "u", p.Starts[0].Job, p.Describe(c, epoch))
			require.Equal(t, tc.uNodes*8, p.Starts[0].Allocation.GPUs())
			gr := r.jobs.byID["g"]
			if tc.gPodsEnd == 0 {
				require.False(t, gr.phase.Active(), "g was stopped: %s", gr.phase)
				return
			}
			require.Equal(t, StateRunning, gr.phase)
			require.Equal(t, tc.gPodsEnd, gr.alloc.Members[0].Pods)
		})
	}
}
