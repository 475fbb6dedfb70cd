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

// TestRestoredHoldOnLostNodeDropped: a snapshot whose hold targets a node
// that the snapshot lists down or drained (NodeDown and Drain drop such a
// hold; a host that edits its snapshot, marking a node lost, may leave
// one): the restore drops the hold and the next plan lists it in HoldEnds
// (HoldRestored). It kept the hold, and the next cycle moved it to
// another target with no end told.
func TestRestoredHoldOnLostNodeDropped(t *testing.T) {
	for _, down := range []bool{true, false} {
		t.Run(map[bool]string{true: "down", false: "drained"}[down], func(t *testing.T) {
			e := heldPair(t, 2)
			snap := snapshotCopy(t, e.Snapshot())
			require.Len(t, snap.Holds, 2)
			alloc, err := e.allocationOf(&snap.Holds[0].Target)
			require.NoError(t, err)
			node := e.c.NodeName(alloc.Members[0].Assignment[0].Node)
			if down {
				snap.Down = append(snap.Down, node)
			} else {
				snap.Drained = append(snap.Drained, node)
			}
			r, err := Restore(e.c, e.cfg, snap)
			require.NoError(t, err)
			r.checkEach = true
			require.NoError(t, r.check())
			st, _ := r.Job(snap.Holds[0].Job)
			require.Equal(t, StatePending, st.State)
			p := startAll(t, r, epoch.Add(4*time.Minute))
			var ends []HoldEnd
			for _, he := range p.HoldEnds {
				if he.Job == snap.Holds[0].Job {
					ends = append(ends, he)
				}
			}
			require.Len(t, ends, 1, p.Describe(r.c, epoch))
			require.Equal(t, HoldRestored, ends[0].Cause, p.Describe(r.c, epoch))
		})
	}
}

// TestRestoredReservationOnLostNodeMoves: a snapshot whose reservation is
// on a node that the snapshot lists down or drained (NodeDown and Drain
// drop such a reservation, and the next plan reports the move, when it
// starts later, with the node's cause): the restore drops it the same
// way. Eight 8-GPU nodes: a runs on 6 until t+2h, b on 1 until t+5h, one
// node free; big (7 nodes) is reserved at t+2h on the free node and a's.
// With the free node lost, big can start only at t+5h, and the next plan
// reports its move from t+2h to t+5h by that node (as the engine's own
// NodeDown or Drain reports it).
func TestRestoredReservationOnLostNodeMoves(t *testing.T) {
	for _, tc := range []struct {
		name  string
		down  bool
		cause Cause
	}{{"down", true, CauseNodeDown}, {"drained", false, CauseNodeDrained}} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := bigBehindScene(t)
			p := startAll(t, e, epoch.Add(time.Minute))
			require.Len(t, p.Reservations, 1, p.Describe(c, epoch))
			require.Equal(t, epoch.Add(2*time.Hour), p.Reservations[0].Start, p.Describe(c, epoch))
			used := map[string]bool{}
			for _, id := range []string{"a", "b"} {
				al, ok := e.Allocation(id)
				require.True(t, ok, id)
				for pod := range al.Pods() {
					used[c.NodeName(pod.Node)] = true
				}
			}
			free := ""
			for _, x := range p.Reservations[0].Allocation.Members[0].Assignment {
				if n := c.NodeName(x.Node); !used[n] {
					free = n
				}
			}
			require.NotEmpty(t, free, p.Describe(c, epoch))
			s := snapshotCopy(t, e.Snapshot())
			if tc.down {
				s.Down = append(s.Down, free)
			} else {
				s.Drained = append(s.Drained, free)
			}
			r, err := Restore(c, DefaultConfig(), s)
			require.NoError(t, err)
			r.checkEach = true
			require.NoError(t, r.check())
			st, _ := r.Job("big")
			require.Equal(t, StatePending, st.State)
			p = startAll(t, r, epoch.Add(2*time.Minute))
			want := Move{Job: "big", From: epoch.Add(2 * time.Hour), To: epoch.Add(5 * time.Hour), Cause: tc.cause, By: free}
			require.Equal(t, []Move{want}, p.Moves, p.Describe(c, epoch))
		})
	}
}
