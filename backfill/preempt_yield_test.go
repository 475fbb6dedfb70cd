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
			c, e := preemptOps(t, 1, 0)
			f, v1, v2 := pinnedJob(c, "f", 0, 1, 4*time.Hour), pinnedJob(c, "v1", 4, 6, 4*time.Hour), pinnedJob(c, "v2", 6, 8, 4*time.Hour)
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

// TestYieldNotToRequeuedPreemptor: v (requeue, nodes 4-7) is preempted by
// u (class 1, nodes 4-7); then a1-a3 (older, pinned to node 0 under f,
// which has no limit) come and wait for good. MaxJobsTested is 1. v is released
// and the cycle starts u on its claim; its window tests a1, not v. u then
// fails and is requeued before the next cycles. The doc: a released
// victim yields "while the preemptor still waits without a claim"; u ran
// since, so v (older) is tested as any job when its window comes, and
// starts on nodes 4-7.
func TestYieldNotToRequeuedPreemptor(t *testing.T) {
	c, e := preemptOps(t, 1, 1)
	f, v := pinnedJob(c, "f", 0, 1, 0), pinnedJob(c, "v", 4, 8, 4*time.Hour)
	v.Preemption = preempt.Requeue
	require.NoError(t, e.Submit(f, epoch))
	require.NoError(t, e.Submit(v, epoch))
	startAll(t, e, epoch)
	startAll(t, e, epoch)
	require.Len(t, e.jobs.running, 2)
	u := pinnedJob(c, "u", 4, 8, time.Hour)
	u.Class = 1
	require.NoError(t, e.Submit(u, epoch.Add(20*time.Minute)))
	var p *Plan
	for i := 0; i < 4 && len(e.book.claims) == 0; i++ {
		p = startAll(t, e, epoch.Add(20*time.Minute))
	}
	require.Len(t, e.book.claims, 1, p.Describe(c, epoch))
	for _, id := range []string{"a1", "a2", "a3"} {
		a := pinnedJob(c, id, 0, 1, time.Hour)
		a.Submit = epoch.Add(-time.Hour)
		require.NoError(t, e.Submit(a, epoch.Add(21*time.Minute)))
	}

	require.NoError(t, e.Preempted("v", epoch.Add(22*time.Minute)))
	p = startAll(t, e, epoch.Add(22*time.Minute))
	require.Len(t, p.Starts, 1, p.Describe(c, epoch))
	require.Equal(t, "u", p.Starts[0].Job)
	vr, _ := e.jobs.byID["v"]
	if vr.yieldTo == nil {
		t.Skip("v was tested in the cycle u started: nothing stale to show", p.Describe(c, epoch))
	}
	require.NoError(t, e.Failed("u", epoch.Add(30*time.Minute), true))
	r := roundTrip(t, e) // must decide as e does
	for i := 0; i < 4; i++ {
		p = startAll(t, e, epoch.Add(30*time.Minute))
		pr := startAll(t, r, epoch.Add(30*time.Minute))
		require.Equal(t, p.Describe(c, epoch), pr.Describe(c, epoch), "restored engine decides otherwise")
		if w := waitingOf(p, "v"); w != nil && w.Blocker == "u" {
			t.Fatalf("v yields to u, which started at t+22m and was requeued since\n%s", p.Describe(c, epoch))
		}
		for _, s := range p.Starts {
			if s.Job == "v" {
				return
			}
		}
	}
	t.Fatalf("v never started\n%s", p.Describe(c, epoch))
}

// TestLateReleaseDueReservationWaitsForOverrun: as
// TestLateReleaseDueReservationFirst, but f overruns its 2h limit, so
// when v is released at t+11h, r (due at t+10h) cannot start: what
// happens to u's claim and to the leaf v left? The claim is dropped, r
// stays due on its GPUs (none starts there while f overruns), and u is
// planned after r: the doc said r starts.
func TestLateReleaseDueReservationWaitsForOverrun(t *testing.T) {
	c, e := preemptOps(t, 4, 0)
	require.NoError(t, e.Submit(leafJob("v", 10*time.Hour, 0, preempt.Requeue), epoch))
	require.NoError(t, e.Submit(leafJob("f", 2*time.Hour, 0, preempt.Never), epoch))
	require.Len(t, startAll(t, e, epoch).Starts, 2)
	require.NoError(t, e.Submit(Job{ID: "r", Account: "a", Gang: member(placement.NodesOf(8, 8)), TimeLimit: time.Hour}, epoch.Add(time.Minute)))
	startAll(t, e, epoch.Add(time.Minute))
	require.NoError(t, e.Submit(leafJob("u", 30*time.Minute, 1, preempt.Never), epoch.Add(2*time.Minute)))
	p := startAll(t, e, epoch.Add(2*time.Minute))
	require.Len(t, p.Preemptions, 1)
	at := epoch.Add(11 * time.Hour)
	require.NoError(t, e.Preempted("v", at))
	p = startAll(t, e, at)
	require.Empty(t, p.Starts, p.Describe(c, epoch))
	require.Empty(t, e.book.claims, "u's claim is dropped")
	st, _ := e.Job("r")
	require.Equal(t, StateReserved, st.State)
	require.Equal(t, epoch.Add(10*time.Hour), st.PlannedStart, "r stays due, waiting for f")
	st, _ = e.Job("u")
	require.Equal(t, StateReserved, st.State)
	require.Equal(t, epoch.Add(12*time.Hour), st.PlannedStart, "u is planned after r")
}
