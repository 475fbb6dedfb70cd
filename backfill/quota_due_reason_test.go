package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestDueReservationQuotaReason: a job whose reservation is due, and
// whose queue's quota does not take it now because the room is kept for
// a reservation of its queue due before it (keptOwn), keeps its
// reservation (the decision is unchanged) and is told why it does not
// start: its queue, the guarantee in use and the job the room is kept
// for. Queue q is guaranteed 16 GPUs; R (16 GPUs, may not be preempted)
// is due at 1h, but B runs past its limit on R's nodes; X (8 GPUs, free
// to borrow) is due at 1h5m on node 2, freed by C, and waits for R.
// Before, X was told "reserved: planned to start at t+1h5m0s" at 1h10m,
// a start already past.
func TestDueReservationQuotaReason(t *testing.T) {
	e, job := quotaRig(t, 6, []QueueSpec{
		{Name: "q", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		{Name: "o", Guarantee: 32, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
	}, func(cfg *Config) { cfg.ReservationMinGPUs = 0 })
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	require.NoError(t, e.Submit(job("B", "o", 0, 2, 2, 0, preempt.Requeue, time.Hour), epoch))
	require.NoError(t, e.Submit(job("C", "o", 2, 3, 1, 0, preempt.Requeue, 65*time.Minute), epoch))
	startAll(t, e, epoch)
	require.NoError(t, e.Submit(job("R", "q", 0, 2, 2, 0, preempt.Never, time.Hour), at(time.Minute)))
	require.NoError(t, e.Submit(job("X", "q", 2, 3, 1, 0, preempt.Requeue, time.Hour), at(time.Minute)))
	startAll(t, e, at(time.Minute))
	require.NoError(t, e.Finished("C", at(65*time.Minute)))
	for _, tc := range []struct {
		name string
		now  time.Duration
	}{
		{"five minutes past its start", 70 * time.Minute},
		{"ten minutes past its start", 75 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startAll(t, e, at(tc.now))
			desc := p.Describe(e.c, epoch)
			require.Empty(t, p.Starts, desc)
			require.Empty(t, p.Moves, desc)
			require.Equal(t, at(65*time.Minute), reservedStarts(p)["X"], desc)
			w := waitingOf(p, "X")
			require.NotNil(t, w, desc)
			require.Equal(t, WaitReserved, w.Code, desc)
			require.Equal(t, at(65*time.Minute), w.Until, desc)
			msg := w.message(epoch)
			require.NotContains(t, msg, "planned to start", desc)
			for _, part := range []string{"reserved: due at t+1h5m0s", "quota does not take it now", "reserved for job R", "queue q: 16 of 16 guaranteed GPUs in use", "cannot be preempted"} {
				require.Contains(t, msg, part, desc)
			}
		})
	}
	// R starts once B is gone, and X beside it, on its reservation.
	require.NoError(t, e.Finished("B", at(80*time.Minute)))
	p := startAll(t, e, at(80*time.Minute))
	require.ElementsMatch(t, []string{"R", "X"}, startedIDs(p), p.Describe(e.c, epoch))
	require.Empty(t, p.Moves, p.Describe(e.c, epoch))
}
