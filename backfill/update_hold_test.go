package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// keptHoldCluster is 2 leaves of 3 nodes of 8 GPUs: n0 n1 n2 | n3 n4 n5
// (by index).
func keptHoldCluster(t testing.TB) *topology.Cluster {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 3, GPUsPerNode: 8})
	require.NoError(t, err)
	return c
}

// keptHoldScene: in hold mode, g (three nodes of 8 GPUs) waits while jobs
// without a limit run half of n0 and n1 and all of the other nodes (those
// of n3-n5 started 5 minutes after the others: estimated to end 5
// minutes later). Its hold targets n0-n2 and holds the 8 free GPUs of n0
// and n1. It returns the engine after the cycle at 10 minutes and g's
// hold then.
func keptHoldScene(t *testing.T, c *topology.Cluster) (*Engine, HoldStatus) {
	hc := &HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 1, Budget: 10 * time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
	e := updateEngine(t, c, hc)
	for i, g := range []int{4, 4, 8, 8, 8, 8} {
		at := mins(0)
		if i >= 3 {
			at = mins(5)
		}
		require.NoError(t, e.Submit(Job{ID: "r" + string(rune('0'+i)), Account: "a", Gang: member(onNodes(c, placement.NodesOf(1, g), i))}, at))
		require.Len(t, startAll(t, e, at).Starts, 1)
	}
	require.NoError(t, e.Submit(Job{ID: "g", Account: "a", Gang: member(placement.NodesOf(3, 8))}, mins(6)))
	startAll(t, e, mins(6))
	p := startAll(t, e, mins(10))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	h := p.Holds[0]
	require.Equal(t, 8, h.GPUs, p.Describe(c, epoch))
	require.Equal(t, []int{0, 1, 2}, nodesOfPlacement(&e.book.holdOf(e.jobs.byID["g"]).target, c), p.Describe(c, epoch))
	return e, h
}

// TestUpdateHoldKeepsHeldGPUs: g's hold (keptHoldScene) collected the
// free GPUs of n0 and n1; Update at 20 minutes takes n2, the rest of its
// target, from its sets. The soonest new target is estimated to fit when
// the jobs of n3-n5 end; there both n3-n5 and n0, n1 and one of n3-n5
// fit: the hold moves to the one that keeps n0 and n1 (before, it moved
// to n3-n5, letting the 8 GPUs it held go), and the next cycle keeps it
// there, holding them. The engine restores from its snapshot and plans
// as the original.
func TestUpdateHoldKeepsHeldGPUs(t *testing.T) {
	c := keptHoldCluster(t)
	e, _ := keptHoldScene(t, c)
	require.NoError(t, e.Update(withSets(t, e, "g", nil, nodeSet(c, 2)), mins(20)))
	target := nodesOfPlacement(&e.book.holdOf(e.jobs.byID["g"]).target, c)
	require.Len(t, target, 3)
	require.Subset(t, target, []int{0, 1}, "the nodes whose GPUs it held")
	restored := roundTrip(t, e)
	p := startAll(t, e, mins(21))
	desc := p.Describe(c, epoch)
	require.Empty(t, p.HoldEnds, desc)
	require.Len(t, p.Holds, 1, desc)
	require.Equal(t, 8, p.Holds[0].GPUs, desc)
	require.Equal(t, target, nodesOfPlacement(&e.book.holdOf(e.jobs.byID["g"]).target, c), desc)
	require.Equal(t, p, startAll(t, restored, mins(21)), "the restored engine plans as the original")
}

// TestUpdateHoldCountsKeptAtOnce: the hold moved by Update keeping n0's
// and n1's 8 free GPUs (TestUpdateHoldKeepsHeldGPUs) holds them at once:
// the snapshot right after the update counts them, and the cycle after
// charges the hold, and HeldGPUSeconds, for 8 GPUs from 6 minutes to 21
// without a gap (before, the update counted 0 held until that cycle,
// which charged nothing from 10 minutes on).
func TestUpdateHoldCountsKeptAtOnce(t *testing.T) {
	c := keptHoldCluster(t)
	e, before := keptHoldScene(t, c)
	require.NoError(t, e.Update(withSets(t, e, "g", nil, nodeSet(c, 2)), mins(20)))
	require.Equal(t, 8, heldInSnapshot(t, e, "g"), "the GPUs it keeps, held at once")
	p := startAll(t, e, mins(21))
	desc := p.Describe(c, epoch)
	require.Len(t, p.Holds, 1, desc)
	h := p.Holds[0]
	require.Equal(t, 8, h.GPUs, desc)
	require.InDelta(t, 8*15.0/60, h.SpentGPUHours, 1e-9, "8 GPUs held from 6 to 21 minutes: "+desc)
	require.InDelta(t, 8*15.0*60, e.HeldGPUSeconds(), 1e-6, desc)
	require.InDelta(t, before.BudgetGPUHours, h.BudgetGPUHours, 1e-9, desc)
}

// heldInSnapshot returns the GPUs job id's hold holds in e's snapshot.
func heldInSnapshot(t *testing.T, e *Engine, id string) int {
	t.Helper()
	for _, h := range e.Snapshot().Holds {
		if h.Job == id {
			return h.Held
		}
	}
	t.Fatalf("no hold for %s in the snapshot", id)
	return 0
}
