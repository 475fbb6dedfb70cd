package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestFailedVictimKeepsItsPolicy: v (class 0) runs on a leaf, f (never
// preempted) on the other; u (class 1, a leaf) preempts v. The host then
// reports v Failed instead of Preempted (it died of its signal). The
// engine told the host to end v as its preemption policy says, as
// Preempted and NodeDown end it: a victim of policy cancel that the host
// reports failed with requeue is cancelled, not requeued (before, it
// went back to the queue and competed with its preemptor again). Failed
// without requeue ends it failed, and a victim of policy requeue is
// requeued as the host asks.
func TestFailedVictimKeepsItsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  preempt.Policy
		requeue bool
		want    JobState
	}{
		{"cancel, failed with requeue: cancelled", preempt.Cancel, true, StateCancelled},
		{"cancel, failed: failed", preempt.Cancel, false, StateFailed},
		{"requeue, failed with requeue: requeued", preempt.Requeue, true, StateRequeued},
		{"requeue, failed: failed", preempt.Requeue, false, StateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := preemptOps(t, 4, 0)
			require.NoError(t, e.Submit(leafJob("v", 10*time.Hour, 0, tc.policy), epoch))
			require.NoError(t, e.Submit(leafJob("f", 10*time.Hour, 0, preempt.Never), epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 2)
			require.NoError(t, e.Submit(leafJob("u", 30*time.Minute, 1, preempt.Never), epoch.Add(time.Minute)))
			p := startAll(t, e, epoch.Add(time.Minute))
			require.Len(t, p.Preemptions, 1, p.Describe(c, epoch))
			require.Equal(t, "v", p.Preemptions[0].Victim)

			at := epoch.Add(3 * time.Minute)
			require.NoError(t, e.Failed("v", at, tc.requeue))
			st, ok := e.Job("v")
			require.True(t, ok)
			require.Equal(t, tc.want, st.State)
			p = startAll(t, e, at)
			require.Len(t, p.Starts, 1, p.Describe(c, epoch))
			require.Equal(t, "u", p.Starts[0].Job, "u starts on its claim")
		})
	}
}
