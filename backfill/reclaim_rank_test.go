package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestReclaimKeepsSameClassPromise: a reclaim does not take the room
// under its queue's limits that a reservation of its queue, for a job of
// its class or a higher one, needs (reclaimTakesPromise). Five nodes; q
// (guarantee 16, borrowing limit 8: 24 at most, unless unlimited) and o
// (guarantee 24) share them. A (q, node 0, 20h) runs; B (o, nodes 1-2,
// 10h) and L (o, nodes 3-4, elastic down to 1 pod, 10h) take the rest,
// o borrowing 8 of q's guarantee. R (q, class 0, 2 of nodes 1-2, 1h) is
// reserved at B's end (10h), beside A: 24 GPUs, q's limit. C (q, node 4
// only) comes, within q's guarantee now (8 of 16). Of class 0, ranked
// below R by priority (entitledFirst walks it first: R would borrow),
// its reclaim used to preempt L (or take L's lent pod), and R, beside A
// and C at 10h, was dropped for quota in the same cycle: C jumped R. It
// now waits for quota, R keeps its reservation, and nobody is
// preempted. Of class 1 it still reclaims and R is dropped (documented
// in quotapromise.go); so it does, keeping R, when q may borrow without
// limit (R then has room at 10h).
func TestReclaimKeepsSameClassPromise(t *testing.T) {
	for _, tc := range []struct {
		name      string
		grow      bool // L lends its pod on node 4
		class     int  // C's class
		limit     time.Duration
		unlimited bool // q's borrowing limit
		claim     bool // C reclaims
		dropsR    bool
	}{
		{"same class, nothing lent", false, 0, 12 * time.Hour, false, false, false},
		{"same class, lent pod", true, 0, 12 * time.Hour, false, false, false},
		{"same class, borrowing unlimited", false, 0, 12 * time.Hour, true, true, false},
		{"higher class, nothing lent", false, 1, 12 * time.Hour, false, true, true},
		{"higher class, lent pod", true, 1, 12 * time.Hour, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			borrow := 8
			if tc.unlimited {
				borrow = Unlimited
			}
			e, job, _ := reclaimPromiseScene(t, borrow, tc.grow)
			r := job("R", "q", 1, 3, 2, 0, preempt.Requeue, time.Hour)
			c := job("C", "q", 4, 5, 1, 0, preempt.Requeue, tc.limit)
			c.Class = tc.class
			at := epoch.Add(time.Minute)
			require.NoError(t, e.Submit(r, at))
			p := startAll(t, e, at)
			require.Equal(t, map[string]time.Time{"R": epoch.Add(10 * time.Hour)}, reservedStarts(p), p.Describe(e.c, epoch))

			at = epoch.Add(2 * time.Minute)
			require.NoError(t, e.Submit(c, at))
			p = startAll(t, e, at)
			desc := p.Describe(e.c, epoch)
			require.Empty(t, p.Starts, desc)
			require.Equal(t, tc.claim, e.jobs.byID["C"].claim != nil, desc)
			w := waitingOf(p, "C")
			if tc.claim {
				require.Equal(t, WaitPreempting, w.Code, desc)
			} else {
				require.Equal(t, WaitQuota, w.Code, desc)
				require.Contains(t, w.Detail, "reserved for job R", desc)
				require.Empty(t, p.Preemptions, desc)
				for _, pc := range p.PodChanges {
					require.NotEqual(t, "C", pc.For, desc)
				}
			}
			var drops []Move
			for _, m := range p.Moves {
				if m.Cause == CauseQuota {
					drops = append(drops, m)
				}
			}
			if tc.dropsR {
				require.Equal(t, []Move{{Job: "R", From: epoch.Add(10 * time.Hour), Cause: CauseQuota, By: "q"}}, drops, desc)
				return
			}
			require.Empty(t, drops, desc)
			require.Equal(t, map[string]time.Time{"R": epoch.Add(10 * time.Hour)}, reservedStarts(p), desc)
		})
	}
}

// reclaimPromiseScene starts, on five nodes with preemption on, A (q,
// node 0, 20h), L (o, nodes 3-4, elastic down to 1 pod, 10h, growing
// when grow is set) and B (o, nodes 1-2, 10h), q having guarantee 16 and
// borrowing limit borrow, o guarantee 24; it returns the engine, its job
// maker and the three jobs.
func reclaimPromiseScene(t *testing.T, borrow int, grow bool) (*Engine, quotaJobFn, []Job) {
	t.Helper()
	e, job := quotaRig(t, 5, []QueueSpec{
		{Name: "q", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: borrow, LendingLimit: Unlimited},
		{Name: "o", Guarantee: 24, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
	}, func(c *Config) { c.Preemption.Enabled, c.Preemption.ExemptTime = true, 0 })
	l := job("L", "o", 3, 5, 2, 1, preempt.Requeue, 10*time.Hour)
	l.Grow = grow
	jobs := []Job{job("A", "q", 0, 1, 1, 0, preempt.Requeue, 20*time.Hour), l,
		job("B", "o", 1, 3, 2, 0, preempt.Requeue, 10*time.Hour)}
	for _, j := range jobs {
		require.NoError(t, e.Submit(j, epoch))
	}
	require.Len(t, startAll(t, e, epoch).Starts, 3)
	return e, job, jobs
}
