package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestReclaimCountsUseAtReservationStart: whether a reclaim takes the
// room a reservation of its queue needs (reclaimTakesPromise) is read on
// the counts the reservation's own promise check reads at its planned
// start: the queue's jobs whose time limit ends by then taken out, and
// so are claims whose run (from their due start, to their limit's end)
// ends by then. Five nodes; q (guarantee 16, borrowing limit 8: 24 at
// most) and o (guarantee 24) share them. A (q, node 0) runs; B (o,
// nodes 1-2, 10h) and L (o, nodes 3-4, elastic down to 1 pod, 10h) take
// the rest, o borrowing 8 of q's guarantee. R (q, class 0, 2 of nodes
// 1-2, 1h) is reserved at B's end (10h). C (q, class 0, node 4 only)
// comes, within q's guarantee now (8 of 16).
//
//   - A ends at 9h, C runs 12h: at 10h q counts R and C alone (24, its
//     limit). C reclaims (preempting L) and R keeps its reservation;
//     counted at A's use of now, C waited for quota until A's end.
//   - A runs 20h, C 12h: at 10h A, C and R take 32 of 24. C waits for
//     quota, naming R (TestReclaimKeepsSameClassPromise's case).
//   - A runs 20h, C 9h: C's run ends before R's start, so it reclaims;
//     R's check at 10h no longer counts C's claim (it used to, and R was
//     given up for quota in the cycle of the claim).
func TestReclaimCountsUseAtReservationStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		aLimit time.Duration
		cLimit time.Duration
		claim  bool // C reclaims
	}{
		{"queue's job ends before the reservation", 9 * time.Hour, 12 * time.Hour, true},
		{"queue's job runs through the reservation", 20 * time.Hour, 12 * time.Hour, false},
		{"claim ends before the reservation", 20 * time.Hour, 9 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, job := quotaRig(t, 5, []QueueSpec{
				{Name: "q", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: 8, LendingLimit: Unlimited},
				{Name: "o", Guarantee: 24, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
			}, func(c *Config) { c.Preemption.Enabled, c.Preemption.ExemptTime = true, 0 })
			for _, j := range []Job{job("A", "q", 0, 1, 1, 0, preempt.Requeue, tc.aLimit),
				job("L", "o", 3, 5, 2, 1, preempt.Requeue, 10*time.Hour),
				job("B", "o", 1, 3, 2, 0, preempt.Requeue, 10*time.Hour)} {
				require.NoError(t, e.Submit(j, epoch))
			}
			require.Len(t, startAll(t, e, epoch).Starts, 3)

			at := epoch.Add(time.Minute)
			require.NoError(t, e.Submit(job("R", "q", 1, 3, 2, 0, preempt.Requeue, time.Hour), at))
			p := startAll(t, e, at)
			require.Equal(t, map[string]time.Time{"R": epoch.Add(10 * time.Hour)}, reservedStarts(p), p.Describe(e.c, epoch))

			at = epoch.Add(2 * time.Minute)
			require.NoError(t, e.Submit(job("C", "q", 4, 5, 1, 0, preempt.Requeue, tc.cLimit), at))
			p = startAll(t, e, at)
			desc := p.Describe(e.c, epoch)
			require.Empty(t, p.Starts, desc)
			w := waitingOf(p, "C")
			if tc.claim {
				require.NotNil(t, e.jobs.byID["C"].claim, desc)
				require.Equal(t, WaitPreempting, w.Code, desc)
				var victims []string
				for _, x := range p.Preemptions {
					victims = append(victims, x.Victim)
				}
				require.Equal(t, []string{"L"}, victims, desc)
			} else {
				require.Nil(t, e.jobs.byID["C"].claim, desc)
				require.Equal(t, WaitQuota, w.Code, desc)
				require.Contains(t, w.Detail, "reserved for job R", desc)
				require.Empty(t, p.Preemptions, desc)
			}
			for _, m := range p.Moves {
				require.NotEqual(t, CauseQuota, m.Cause, "R keeps its reservation: %s", desc)
			}
			require.Equal(t, map[string]time.Time{"R": epoch.Add(10 * time.Hour)}, reservedStarts(p), desc)
		})
	}
}
