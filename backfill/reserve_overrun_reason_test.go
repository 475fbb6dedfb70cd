package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestNewDueReservationNamesOverrun: a reservation made due at once, on
// GPUs a job past its time limit still holds, is told that it waits for
// that job from the cycle that makes it, as every later cycle tells it
// (waitFor). Before, the cycle that made it said only "planned to start
// at" the cycle's own time, and a second cycle at the same time, no event
// between, named the overrunning job (found by a random driver repeating
// each cycle). O (node 0, 30 minutes) runs past its limit and N (node 1,
// no limit) runs on; at 40 minutes A (one node) is submitted, with depth
// 1 and with conservative reservations.
func TestNewDueReservationNamesOverrun(t *testing.T) {
	for _, depth := range []int{1, Conservative} {
		t.Run(map[int]string{1: "depth=1", Conservative: "conservative"}[depth], func(t *testing.T) {
			c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 2, GPUsPerNode: 8})
			require.NoError(t, err)
			cfg := DefaultConfig()
			cfg.ReservationDepth = depth
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			mk := func(id string, limit time.Duration) Job {
				return Job{ID: id, Account: "a", TimeLimit: limit,
					Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(1, 8)}}}}
			}
			require.NoError(t, e.Submit(mk("O", 30*time.Minute), epoch))
			require.NoError(t, e.Submit(mk("N", 0), epoch))
			p := startAll(t, e, epoch)
			require.Len(t, p.Starts, 2, p.Describe(c, epoch))
			now := epoch.Add(40 * time.Minute)
			require.NoError(t, e.Submit(mk("A", time.Hour), now))
			var told []Waiting
			for range 2 {
				p = startAll(t, e, now)
				w := waitingOf(p, "A")
				require.NotNil(t, w, p.Describe(c, epoch))
				require.Equal(t, WaitReserved, w.Code, p.Describe(c, epoch))
				told = append(told, *w)
			}
			require.Equal(t, "O", told[0].Blocker, "the cycle that made the reservation: %s", told[0].Message(epoch))
			require.Equal(t, told[1], told[0], "a second cycle at the same time")
		})
	}
}
