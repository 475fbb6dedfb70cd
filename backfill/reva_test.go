package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestReleasedTestedThenClaimDroppedYields: f (never) runs on node 0, v1
// (requeue) on nodes 4-5 and v2 (requeue) on nodes 6-7, all 4h; u (class
// 1, 6 nodes) preempts both and claims 6 of nodes 1-7. v1 is released
// and a cycle runs while the claim stands (u waits for v2; v1 waits, its
// nodes claimed). Then v2 is released and a claimed node other than v1's
// is drained before the next cycle: the claim is dropped. The doc
// (Preemption, no thrashing): "A requeued victim cannot take back the
// GPUs it left (they are claimed, or, when a drain or a failure dropped
// the claim, its preemptor goes first on them)". u fits the 6 nodes free
// then; v1, older, must not start again on nodes 4-5 ahead of it.
func TestReleasedTestedThenClaimDroppedYields(t *testing.T) {
	for _, restore := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "restored after the first release"}[restore], func(t *testing.T) {
			c := opsCluster(t)
			cfg := DefaultConfig()
			cfg.ReservationDepth = 1
			cfg.Hold.Enabled = false
			cfg.Preemption = PreemptionConfig{Enabled: true, Grace: 5 * time.Minute, MinGain: 30 * time.Minute}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			pinned := func(id string, lo, hi int) Job {
				r := placement.NodesOf(hi-lo, 8)
				r.Allowed = c.NewNodeSet()
				for n := lo; n < hi; n++ {
					r.Allowed.Set(uint(n))
				}
				return Job{ID: id, Account: "a", Gang: member(r), TimeLimit: 4 * time.Hour}
			}
			f, v1, v2 := pinned("f", 0, 1), pinned("v1", 4, 6), pinned("v2", 6, 8)
			v1.Preemption, v2.Preemption = preempt.Requeue, preempt.Requeue
			for _, j := range []Job{f, v1, v2} {
				require.NoError(t, e.Submit(j, epoch))
			}
			require.Len(t, startAll(t, e, epoch).Starts, 3)
			u := Job{ID: "u", Account: "a", Gang: member(placement.NodesOf(6, 8)), TimeLimit: time.Hour, Class: 1}
			require.NoError(t, e.Submit(u, epoch.Add(20*time.Minute)))
			p := startAll(t, e, epoch.Add(20*time.Minute))
			require.Len(t, p.Preemptions, 2, p.Describe(c, epoch))
			require.Len(t, e.book.claims, 1)
			var down topology.NodeID = -1 // a claimed node that is not v1's
			for pod := range e.book.claims[0].alloc.Pods() {
				if pod.Node != 4 && pod.Node != 5 && down < 0 {
					down = pod.Node
				}
			}
			require.GreaterOrEqual(t, int(down), 1)

			require.NoError(t, e.Preempted("v1", epoch.Add(22*time.Minute)))
			p = startAll(t, e, epoch.Add(23*time.Minute))
			require.Empty(t, p.Starts, p.Describe(c, epoch))
			if restore {
				e = roundTrip(t, e)
			}
			require.NoError(t, e.Preempted("v2", epoch.Add(24*time.Minute)))
			require.NoError(t, e.Drain(down, epoch.Add(24*time.Minute)))
			p = startAll(t, e, epoch.Add(25*time.Minute))
			var started []string
			for _, s := range p.Starts {
				started = append(started, s.Job)
			}
			require.Equal(t, []string{"u"}, started, p.Describe(c, epoch))
		})
	}
}
