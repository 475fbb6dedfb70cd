package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// heldPairRestored takes heldPair's engine (two holds of 8 GPUs each,
// the last cycle at t+3m), gives it an event an hour later (the
// snapshot's time) and restores its snapshot with hold mode off: both
// holds are dropped (TestRestoreUnderHoldConfig).
func heldPairRestored(t *testing.T) (*Engine, time.Time) {
	t.Helper()
	e := heldPair(t, 2)
	at := epoch.Add(3*time.Minute + time.Hour)
	require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Gang: member(placement.NodesOf(1, 8))}, at))
	cfg := e.cfg
	cfg.Hold.Enabled = false
	r, err := Restore(e.c, cfg, snapshotCopy(t, e.Snapshot()))
	require.NoError(t, err)
	r.checkEach = true
	require.NoError(t, r.check())
	return r, at
}

// TestRestoreDroppedHoldIsCharged: a hold Restore drops because the new
// config's hold mode does not allow it held its GPUs idle from the last
// cycle to the snapshot; HeldGPUSeconds ("the GPU-seconds held idle for
// held jobs so far") counts that time, as for a hold an event ends
// between cycles (endHoldBetween). It counted none of it: the hold was
// gone before the next cycle could charge it.
func TestRestoreDroppedHoldIsCharged(t *testing.T) {
	r, at := heldPairRestored(t)
	// Two holds of 8 GPUs for the hour from the last cycle to the snapshot.
	require.InDelta(t, 2*8*3600.0, r.HeldGPUSeconds(), 1e-6)
	p := startAll(t, r, at.Add(time.Minute))
	require.InDelta(t, 2*8*3600.0, p.HeldGPUSeconds, 1e-6, p.Describe(r.c, epoch))
}

// TestRestoreDroppedHoldIsReported: Plan.HoldEnds lists "the holds that
// ended since the last cycle without their gang starting"; the next plan
// lists the holds Restore dropped, with cause HoldRestored and the GPUs
// they held, and the plan after it does not list them again.
func TestRestoreDroppedHoldIsReported(t *testing.T) {
	r, at := heldPairRestored(t)
	p := startAll(t, r, at.Add(time.Minute))
	require.Len(t, p.HoldEnds, 2, p.Describe(r.c, epoch))
	for _, he := range p.HoldEnds {
		require.Equal(t, HoldRestored, he.Cause, p.Describe(r.c, epoch))
		require.Equal(t, 8, he.Held, p.Describe(r.c, epoch))
	}
	require.ElementsMatch(t, []string{"g1", "g2"}, []string{p.HoldEnds[0].Job, p.HoldEnds[1].Job})
	p2 := startAll(t, r, at.Add(2*time.Minute))
	require.Empty(t, p2.HoldEnds, p2.Describe(r.c, epoch))
}
