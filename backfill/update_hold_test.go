package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
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

// keptHoldScene: in hold mode, g (two nodes of 8 GPUs) waits while jobs
// without a limit run half of n3 and all of n4 (since 0), n0, n1 and n5
// (since 5 minutes) and n2 (since 6): jobs that started later are
// estimated to end later. Its hold targets n3 and n4, the first to free,
// and holds the 4 free GPUs of n3. It returns the engine after the cycle
// at 10 minutes and g's hold then.
func keptHoldScene(t *testing.T, c *topology.Cluster) (*Engine, HoldStatus) {
	return heldGangScene(t, c, []runningJob{{3, 4, 0}, {4, 8, 0}, {0, 8, 5}, {1, 8, 5}, {5, 8, 5}, {2, 8, 6}}, 2, 7, 4, []int{3, 4})
}

// runningJob is a job without a limit on one node: its GPUs and the
// minute it starts.
type runningJob struct{ node, gpus, at int }

// heldGangScene runs jobs in hold mode (MinGPUs 16), then submits g,
// nodes whole nodes of 8 GPUs, at minute gAt; after the cycle at 10
// minutes g's hold holds held GPUs on the nodes of target. It returns
// the engine and the hold.
func heldGangScene(t *testing.T, c *topology.Cluster, jobs []runningJob, nodes, gAt, held int, target []int) (*Engine, HoldStatus) {
	t.Helper()
	hc := &HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 1, Budget: 10 * time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
	e := updateEngine(t, c, hc)
	for _, r := range jobs {
		require.NoError(t, e.Submit(Job{ID: "r" + string(rune('0'+r.node)), Account: "a", Gang: member(onNodes(c, placement.NodesOf(1, r.gpus), r.node))}, mins(r.at)))
		require.Len(t, startAll(t, e, mins(r.at)).Starts, 1)
	}
	require.NoError(t, e.Submit(Job{ID: "g", Account: "a", Gang: member(placement.NodesOf(nodes, 8))}, mins(gAt)))
	startAll(t, e, mins(gAt))
	p := startAll(t, e, mins(10))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	h := p.Holds[0]
	require.Equal(t, held, h.GPUs, p.Describe(c, epoch))
	require.Equal(t, target, nodesOfPlacement(&e.book.holdOf(e.jobs.byID["g"]).target, c), p.Describe(c, epoch))
	return e, h
}

// TestUpdateHoldKeepsHeldGPUs: g's hold (keptHoldScene) collected the
// free GPUs of n3; Update at 20 minutes takes n4 from its sets. The
// soonest new target is estimated to fit when the jobs started at 5
// minutes end; then both n0, n1 and n3, n5 fit, each in one leaf: the
// hold moves to the one that keeps n3 (before, it could move to the
// other, letting the 4 GPUs it held go), and the next cycle keeps it
// there, holding them. A target keeping n3 with n0 or n1 (two leaves)
// is never taken. The engine restores from its snapshot and plans as the
// original.
func TestUpdateHoldKeepsHeldGPUs(t *testing.T) {
	c := keptHoldCluster(t)
	e, _ := keptHoldScene(t, c)
	require.NoError(t, e.Update(withSets(t, e, "g", nil, nodeSet(c, 4)), mins(20)))
	target := nodesOfPlacement(&e.book.holdOf(e.jobs.byID["g"]).target, c)
	require.Equal(t, []int{3, 5}, target, "the node whose GPUs it held, in one leaf")
	restored := roundTrip(t, e)
	p := startAll(t, e, mins(21))
	desc := p.Describe(c, epoch)
	require.Empty(t, p.HoldEnds, desc)
	require.Len(t, p.Holds, 1, desc)
	require.Equal(t, 4, p.Holds[0].GPUs, desc)
	require.Equal(t, target, nodesOfPlacement(&e.book.holdOf(e.jobs.byID["g"]).target, c), desc)
	require.Equal(t, p, startAll(t, restored, mins(21)), "the restored engine plans as the original")
}

// TestUpdateHoldCountsKeptAtOnce: the hold moved by Update keeping n3's
// 4 free GPUs (TestUpdateHoldKeepsHeldGPUs) holds them at once: the
// snapshot right after the update counts them, and the cycle after
// charges the hold, and HeldGPUSeconds, for 4 GPUs from 7 minutes to 21
// without a gap (before, the update counted 0 held until that cycle,
// which charged nothing from 10 minutes on).
func TestUpdateHoldCountsKeptAtOnce(t *testing.T) {
	c := keptHoldCluster(t)
	e, before := keptHoldScene(t, c)
	require.NoError(t, e.Update(withSets(t, e, "g", nil, nodeSet(c, 4)), mins(20)))
	require.Equal(t, 4, heldInSnapshot(t, e, "g"), "the GPUs it keeps, held at once")
	p := startAll(t, e, mins(21))
	desc := p.Describe(c, epoch)
	require.Len(t, p.Holds, 1, desc)
	h := p.Holds[0]
	require.Equal(t, 4, h.GPUs, desc)
	require.InDelta(t, 4*14.0/60, h.SpentGPUHours, 1e-9, "4 GPUs held from 7 to 21 minutes: "+desc)
	require.InDelta(t, 4*14.0*60, e.HeldGPUSeconds(), 1e-6, desc)
	require.InDelta(t, before.BudgetGPUHours, h.BudgetGPUHours, 1e-9, desc)
}

// TestUpdateHoldKeepsItsSpread: g, three nodes of 8 GPUs, holds n0-n2
// (the 8 free GPUs of n0 and n1: jobs there started 5 minutes before
// those of n3-n5, so they are estimated to end first); Update takes n2
// from its sets. A target keeping n0 and n1 with one of n3-n5 fits as
// soon as n3-n5, but spans both leaves: the hold moves to n3-n5, one
// leaf, and lets n0's and n1's GPUs go (placement ranks topology before
// any GPU kept).
func TestUpdateHoldKeepsItsSpread(t *testing.T) {
	c := keptHoldCluster(t)
	e, _ := heldGangScene(t, c, []runningJob{{0, 4, 0}, {1, 4, 0}, {2, 8, 0}, {3, 8, 5}, {4, 8, 5}, {5, 8, 5}}, 3, 6, 8, []int{0, 1, 2})
	require.NoError(t, e.Update(withSets(t, e, "g", nil, nodeSet(c, 2)), mins(20)))
	require.Equal(t, []int{3, 4, 5}, nodesOfPlacement(&e.book.holdOf(e.jobs.byID["g"]).target, c), "one leaf")
	require.Equal(t, 0, heldInSnapshot(t, e, "g"))
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

// TestUpdateHoldWholeNodesOnSmallest: x, two whole nodes in queue small
// (maximum 8: counted at 16 on the 8-GPU nodes, it can only ever start
// on the 4-GPU ones), is held on n2 and n3 of n0, n1 (8 GPUs) and n2-n4
// (4 GPUs), where jobs of queue borrow without a limit run (n4's started
// 5 minutes later: estimated to end later), and holds n2's 4 GPUs once
// its job ends. Update takes n3 from x's sets: the hold moves to n2 and
// n4, the smallest nodes as a cycle targets them (holdSpec), keeping
// n2's GPUs held (before, such a gang's hold ended, HoldUpdated: no
// target was searched). The next cycle keeps it there; the engine
// restores from its snapshot and plans as the original.
func TestUpdateHoldWholeNodesOnSmallest(t *testing.T) {
	spec := topology.ClusterSpec{Levels: []string{"leaf"}}
	for i, g := range []int{8, 8, 4, 4, 4} {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: "n" + string(rune('0'+i)), GPUs: g, Path: []string{"l" + string(rune('0'+min(i/2, 1)))}})
	}
	c, err := topology.Build(spec)
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 8, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "small", Maximum: 8, BorrowingLimit: Unlimited},
		{Name: "borrow", Guarantee: 28, LendingLimit: Unlimited, BorrowingLimit: Unlimited, Maximum: Unlimited},
	}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	for i, g := range []int{8, 8, 4, 4, 4} {
		at := mins(0)
		if i == 4 {
			at = mins(5)
		}
		require.NoError(t, e.Submit(Job{ID: "u" + string(rune('0'+i)), Account: "a", Queue: "borrow",
			Gang: member(onNodes(c, placement.NodesOf(1, g), i))}, at))
		require.Len(t, startAll(t, e, at).Starts, 1)
	}
	require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Queue: "small", TimeLimit: time.Hour, Preemption: preempt.Requeue,
		Gang: member(placement.WholeNodes(2))}, mins(6)))
	st, _ := e.Job("x")
	require.Equal(t, 16, st.GPUs, "x counted at the 8-GPU nodes")
	p := startAll(t, e, mins(7))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	x := e.jobs.byID["x"]
	require.Equal(t, []int{2, 3}, nodesOfPlacement(&e.book.holdOf(x).target, c), p.Describe(c, epoch))
	require.NoError(t, e.Finished("u2", mins(8)))
	p = startAll(t, e, mins(9))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	require.Equal(t, 4, p.Holds[0].GPUs, p.Describe(c, epoch))

	require.NoError(t, e.Update(withSets(t, e, "x", nil, nodeSet(c, 3)), mins(10)))
	st, _ = e.Job("x")
	require.Equal(t, StateHeld, st.State, "the hold moved, not ended")
	require.Equal(t, []int{2, 4}, nodesOfPlacement(&e.book.holdOf(x).target, c), "the smallest nodes x may use")
	require.Equal(t, 4, heldInSnapshot(t, e, "x"), "n2's GPUs, kept")
	restored := roundTrip(t, e)
	p = startAll(t, e, mins(11))
	desc := p.Describe(c, epoch)
	require.Empty(t, p.HoldEnds, desc)
	require.Len(t, p.Holds, 1, desc)
	require.Equal(t, 4, p.Holds[0].GPUs, desc)
	require.Equal(t, 8, p.Holds[0].Target, desc)
	require.Equal(t, []int{2, 4}, nodesOfPlacement(&e.book.holdOf(x).target, c), desc)
	require.Equal(t, p, startAll(t, restored, mins(11)), "the restored engine plans as the original")
}
