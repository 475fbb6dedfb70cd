package backfill

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRestoredHoldCountCutToFree: a hold holds only the free GPUs of its
// target, but Restore took the snapshot's held count on trust (checking
// it only against the target's size). heldPair: g1 and g2 each hold the 8
// free GPUs of a 24-GPU target, the last cycle at t+3m. A snapshot whose
// hold of g1 counts more GPUs than its target has free (an edited count,
// or a host that booked pods on GPUs the hold had counted, as the
// Kubernetes plugin's adoption does; Restore must not refuse it) was
// charged and reported at that count: the next cycle, an hour on, charged
// 24 GPU-hours and ended the hold (budget spent, "24 GPUs released")
// though 8 were held; a hold the restore dropped was reported and charged
// at 24. The count is now cut to the free GPUs of the target.
func TestRestoredHoldCountCutToFree(t *testing.T) {
	now := epoch.Add(3*time.Minute + time.Hour)
	for _, tc := range []struct {
		name    string
		held    int  // g1's count in the snapshot
		adopt   bool // a gang booked on node00000, the GPUs g1 held
		holdOff bool // restored with hold mode off: the holds are dropped
		want    int  // g1's count once restored
	}{
		{"count above free", 24, false, false, 8},
		{"count above free, dropped", 24, false, true, 8},
		{"count at free", 8, false, false, 8},
		{"count below free", 5, false, false, 5},
		{"gang adopted on held GPUs", 8, true, false, 0},
		{"gang adopted on held GPUs, dropped", 8, true, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := heldPair(t, 2)
			snap := snapshotCopy(t, e.Snapshot())
			require.Len(t, snap.Holds, 2)
			require.Equal(t, "g1", snap.Holds[0].Job)
			snap.Holds[0].Held = tc.held
			if tc.adopt {
				// A one-node job like r1, running on node00000 (r0's,
				// which ended: the 8 GPUs g1 holds).
				jr := snap.Jobs[jobIndex(snap, "r1")]
				snap.Seq++
				jr.ID, jr.Seq = "adopted", snap.Seq
				g := snap.Gangs[gangIndex(snap, "r1")]
				g.ID = "adopted"
				g.Members = slices.Clone(g.Members)
				g.Members[0].Pods = slices.Clone(g.Members[0].Pods)
				g.Members[0].Pods[0].Node = "node00000"
				snap.Jobs = append(snap.Jobs, jr)
				snap.Gangs = append(snap.Gangs, g)
			}
			cfg := e.cfg
			cfg.Hold.Enabled = !tc.holdOff
			r, err := Restore(e.c, cfg, snap)
			require.NoError(t, err)
			r.checkEach = true
			require.NoError(t, r.check())
			// From the last cycle (t+3m) to the snapshot (t+3m): nothing
			// charged yet.
			p, err := r.Schedule(now)
			require.NoError(t, err)
			var g1End *HoldEnd
			for i := range p.HoldEnds {
				if p.HoldEnds[i].Job == "g1" {
					g1End = &p.HoldEnds[i]
				}
			}
			if tc.holdOff {
				require.NotNil(t, g1End, p.Describe(r.c, epoch))
				require.Equal(t, HoldRestored, g1End.Cause)
				require.Equal(t, tc.want, g1End.Held, p.Describe(r.c, epoch))
				return
			}
			require.Nil(t, g1End, p.Describe(r.c, epoch))
			// An hour at g1's count and g2's 8.
			require.InDelta(t, float64(tc.want+8)*3600, p.HeldGPUSeconds, 1e-6, p.Describe(r.c, epoch))
			for _, h := range p.Holds {
				if h.Job == "g1" {
					require.InDelta(t, float64(tc.want), h.SpentGPUHours, 1e-9, p.Describe(r.c, epoch))
				}
			}
		})
	}
}
