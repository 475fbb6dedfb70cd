package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRestoreRefusesUntrueHoldAndClaimFields: Restore "trusts nothing it
// reads", yet took on trust a hold end counting more GPUs than the
// cluster has (Held 1000 on a 64-GPU cluster, reported in the next plan's
// HoldEnds as released), a hold or a claim that began before its job was
// submitted (a cycle never holds or preempts for a job it does not have
// yet), and a claim due thousands of years after it began (a claim is due
// when its victims' grace ends, Preemption.Grace at most MaxTimeLimit
// after it: the preemptor was told WaitPreempting until then). Each is
// now refused with ErrRestore naming the job and the field, as Restore's
// other checks refuse; the snapshots as taken still restore.
func TestRestoreRefusesUntrueHoldAndClaimFields(t *testing.T) {
	t.Run("holds", func(t *testing.T) {
		e := heldPair(t, 2) // g1, g2: 24-GPU jobs submitted at epoch, held since epoch+3m
		good := e.Snapshot()
		require.Len(t, good.Holds, 2)
		require.Equal(t, "g1", good.Holds[0].Job)
		_, err := Restore(e.c, e.cfg, snapshotCopy(t, good))
		require.NoError(t, err)
		refuseEach(t, e, good, []corruption{
			{"hold end above the cluster's GPUs", func(s *Snapshot) {
				s.HoldEnds = append(s.HoldEnds, HoldEnd{Job: "g1", Cause: HoldNodeLost, By: "node00000", Held: 1000})
			}, `hold end 0 (job "g1"): 1000 GPUs held, more than the cluster's 64`},
			{"hold end of a forgotten job above the cluster's GPUs", func(s *Snapshot) {
				s.HoldEnds = append(s.HoldEnds, HoldEnd{Job: "gone", Cause: HoldCancelled, Held: 65})
			}, `hold end 0 (job "gone"): 65 GPUs held, more than the cluster's 64`},
			{"hold record above its job's GPUs", func(s *Snapshot) { s.Holds[0].Held = 25 }, "the hold for g1 holds 25 of 24 GPUs"},
			{"hold since before its job's submit", func(s *Snapshot) { s.Holds[0].Since = epoch.Add(-time.Minute) }, "the hold for g1 began at 2025-12-31T23:59:00Z, before its submit"},
		})
		// Within the bounds: restored (a hold end may name a job whose ID
		// a later job reuses, with fewer GPUs than the hold held).
		s := snapshotCopy(t, good)
		s.HoldEnds = append(s.HoldEnds, HoldEnd{Job: "g1", Cause: HoldCancelled, Held: 64})
		s.Holds[0].Since = epoch
		_, err = Restore(e.c, e.cfg, s)
		require.NoError(t, err)
	})
	t.Run("claims", func(t *testing.T) {
		e := preemptingEngine(t) // urgent submitted at epoch+1h, claiming since then, due 5m later
		good := e.Snapshot()
		require.Len(t, good.Claims, 1)
		require.Equal(t, "urgent", good.Claims[0].Job)
		refuseEach(t, e, good, []corruption{
			{"claim since before its job's submit", func(s *Snapshot) { s.Claims[0].Since = epoch.Add(59 * time.Minute) }, "the claim for urgent began at 2026-01-01T00:59:00Z, before its submit"},
			{"claim due past any grace", func(s *Snapshot) { s.Claims[0].Due = time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC) }, "the claim for urgent is due at 9000-01-01"},
			{"claim due a day past the longest grace", func(s *Snapshot) { s.Claims[0].Due = s.Claims[0].Since.Add(MaxTimeLimit + 24*time.Hour) }, "the claim for urgent is due at"},
		})
		s := snapshotCopy(t, good)
		s.Claims[0].Due = s.Claims[0].Since.Add(MaxTimeLimit)
		_, err := Restore(e.c, e.cfg, s)
		require.NoError(t, err)
	})
}
