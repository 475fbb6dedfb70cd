package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestRestoredHoldOnDownNodeChargedAsTwin pins (no defect found) that
// restorer.freeOf counting the free GPUs of a node the snapshot lists
// down, where cycle.countFree skips down nodes, changes no charge: a hold
// on a down node is never kept (Restore drops it, as NodeDown does), and
// NodeDown ends a hold at the count its last cycle made, the node still
// up, charging it (endHoldBetween) for those GPUs. heldPair: g1 holds the
// 8 free GPUs of node00000 from t+3m; at t+1h3m a job is submitted and
// node00000 goes down (or is drained). The twin is given NodeDown (Drain);
// the other engine is snapshotted with the node listed down (drained) and
// restored. Both must charge 8 GPU-hours
// for g1 and report its end with 8 GPUs held; counting only the GPUs on
// nodes up (as countFree does) would charge and report 0 for node00000.
func TestRestoredHoldOnDownNodeChargedAsTwin(t *testing.T) {
	at := epoch.Add(3*time.Minute + time.Hour)
	for _, tc := range []struct {
		name string
		down bool
	}{
		{"node down", true},
		{"node drained", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drive := func() *Engine {
				e := heldPair(t, 1)
				require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Gang: member(placement.NodesOf(1, 8))}, at))
				return e
			}
			twin := drive()
			n, ok := twin.c.LookupNode("node00000")
			require.True(t, ok)
			require.Nil(t, twin.jobs.owner(int(n), 0))
			var err error
			if tc.down {
				_, err = twin.NodeDown(n, at)
			} else {
				err = twin.Drain(n, at)
			}
			require.NoError(t, err)

			e := drive()
			snap := snapshotCopy(t, e.Snapshot())
			require.Len(t, snap.Holds, 1)
			require.Equal(t, "g1", snap.Holds[0].Job)
			if tc.down {
				snap.Down = append(snap.Down, "node00000")
			} else {
				snap.Drained = append(snap.Drained, "node00000")
			}
			r, err := Restore(e.c, e.cfg, snap)
			require.NoError(t, err)
			r.checkEach = true
			require.NoError(t, r.check())
			require.InDelta(t, twin.HeldGPUSeconds(), r.HeldGPUSeconds(), 1e-6)

			pt := startAll(t, twin, at.Add(time.Minute))
			pr := startAll(t, r, at.Add(time.Minute))
			require.InDelta(t, 8*3600.0, pt.HeldGPUSeconds, 1e-6, pt.Describe(twin.c, epoch))
			require.InDelta(t, pt.HeldGPUSeconds, pr.HeldGPUSeconds, 1e-6, pr.Describe(r.c, epoch))
			require.Len(t, pt.HoldEnds, 1, pt.Describe(twin.c, epoch))
			require.Len(t, pr.HoldEnds, 1, pr.Describe(r.c, epoch))
			require.Equal(t, 8, pt.HoldEnds[0].Held)
			require.Equal(t, pt.HoldEnds[0].Held, pr.HoldEnds[0].Held)
			require.Equal(t, pt.Starts, pr.Starts)
		})
	}
}
