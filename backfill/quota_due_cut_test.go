package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestDueElasticCutFromItsReservation: five nodes; queue q guaranteed 8
// GPUs and free to borrow, o guaranteed 16 and lending none. B (q, nodes
// 0-1) and W (o, nodes 2-3) run until 1h (W's limit 1h30m), Y (o, node
// 4) for 10h. R2 (q, nodes 2-3, 2h) is reserved at W's limit; E (q,
// elastic: 3 nodes on 0-3, minimum 1, 1h, ranked above R2) is reserved
// at B's end on nodes 0-1 only (R2 takes 2-3 within its run). At 1h B
// and W end: E is due, its planned GPUs free. Its quota takes its full
// size (24 GPUs: with R2 counted, more than the cluster is counted in
// use, and the pool does not bind) but not its reservation's 16 (the
// pool binds, and R2's room is counted). Before, the full size passing
// left E uncut: it was tried on its 16 planned GPUs only, refused, and
// told it "waits for its planned start", which had passed (a due
// reservation with its GPUs free neither started nor moved; workload 428
// of TestQuotaPropertiesLateHostElastic, once NextEvent asked for the
// cycle after a reservation that opens lent pods). Now it is cut from its
// reservation's size and starts at its minimum on a planned node.
func TestDueElasticCutFromItsReservation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		eNodes int // E's full size (its reservation holds 2 nodes)
		starts int // E's pods at 1h
	}{
		{"full size above its reservation's", 3, 1},
		{"full size its reservation's", 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, job := quotaRig(t, 5, []QueueSpec{
				{Name: "q", Guarantee: 8, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
				{Name: "o", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: 0},
			}, nil)
			at := func(d time.Duration) time.Time { return epoch.Add(d) }
			for _, j := range []Job{
				job("B", "q", 0, 2, 2, 0, preempt.Requeue, time.Hour),
				job("W", "o", 2, 4, 2, 0, preempt.Requeue, 90*time.Minute),
				job("Y", "o", 4, 5, 1, 0, preempt.Requeue, 10*time.Hour),
			} {
				require.NoError(t, e.Submit(j, epoch))
			}
			p := startAll(t, e, epoch)
			require.Len(t, p.Starts, 3, p.Describe(e.c, epoch))
			require.NoError(t, e.Submit(job("R2", "q", 2, 4, 2, 0, preempt.Requeue, 2*time.Hour), at(time.Minute)))
			p = startAll(t, e, at(time.Minute))
			require.Equal(t, map[string]time.Time{"R2": at(90 * time.Minute)}, reservedStarts(p), p.Describe(e.c, epoch))
			ej := job("E", "q", 0, 4, tc.eNodes, 1, preempt.Requeue, time.Hour)
			ej.QOS = 1
			require.NoError(t, e.Submit(ej, at(2*time.Minute)))
			p = startAll(t, e, at(2*time.Minute))
			var er *Reservation
			for i := range p.Reservations {
				if p.Reservations[i].Job == "E" {
					er = &p.Reservations[i]
				}
			}
			require.NotNil(t, er, p.Describe(e.c, epoch))
			require.Equal(t, at(time.Hour), er.Start, p.Describe(e.c, epoch))
			require.Equal(t, 16, er.Allocation.GPUs(), p.Describe(e.c, epoch))
			require.NoError(t, e.Finished("B", at(time.Hour)))
			require.NoError(t, e.Finished("W", at(time.Hour)))
			p = startAll(t, e, at(time.Hour))
			var got *Start
			for i := range p.Starts {
				if p.Starts[i].Job == "E" {
					got = &p.Starts[i]
				}
			}
			require.NotNil(t, got, "due E, its planned GPUs free, starts:\n%s", p.Describe(e.c, epoch))
			require.Equal(t, tc.starts*8, got.Allocation.GPUs(), p.Describe(e.c, epoch))
			for _, x := range got.Allocation.Members[0].Assignment {
				require.Less(t, int(x.Node), 2, "E starts on a node of its reservation:\n%s", p.Describe(e.c, epoch))
			}
		})
	}
}
