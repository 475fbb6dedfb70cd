package backfill

import (
	"testing"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestHoldWholeNodesOnSmallNodes: a hold is sized by what the gang can
// hold. A gang of two whole nodes bound to the two 4-GPU nodes of
// mixedCluster needs 8 GPUs; hold mode counted it at the cluster's 8-GPU
// nodes (16): it was eligible under Hold.MinGPUs 12, and its budget was
// 16 GPU-hours for an hour's Budget, twice the 8 GPUs it ever holds.
func TestHoldWholeNodesOnSmallNodes(t *testing.T) {
	tests := []struct {
		name    string
		minGPUs int
		held    bool    // a hold is made
		budget  float64 // its GPU-hours
	}{
		{name: "budget of the GPUs it can hold", minGPUs: 8, held: true, budget: 8},
		{name: "below MinGPUs on its nodes", minGPUs: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mixedCluster(t)
			cfg := DefaultConfig()
			cfg.Hold = HoldConfig{Enabled: true, MinGPUs: tt.minGPUs, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			on := func(r placement.Request, nodes ...uint) placement.Request {
				r.Allowed = c.NewNodeSet()
				for _, n := range nodes {
					r.Allowed.Set(n)
				}
				return r
			}
			// Jobs without a time limit on n2 and n3: no planned start.
			require.NoError(t, e.Submit(Job{ID: "r2", Account: "a", Gang: member(on(placement.NodesOf(1, 4), 2))}, epoch))
			require.NoError(t, e.Submit(Job{ID: "r3", Account: "a", Gang: member(on(placement.NodesOf(1, 4), 3))}, epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 2)
			require.NoError(t, e.Submit(Job{ID: "g", Account: "a", Gang: member(on(placement.WholeNodes(2), 2, 3))}, epoch))
			st, _ := e.Job("g")
			require.Equal(t, 8, st.GPUs, "GPUs counted for g")
			startAll(t, e, epoch.Add(time.Minute))
			require.NoError(t, e.Finished("r2", epoch.Add(2*time.Minute)))
			p := startAll(t, e, epoch.Add(3*time.Minute))
			if !tt.held {
				require.Empty(t, p.Holds, p.Describe(c, epoch))
				return
			}
			require.Len(t, p.Holds, 1, p.Describe(c, epoch))
			h := p.Holds[0]
			require.Equal(t, 4, h.GPUs, "n2's GPUs held")
			require.Equal(t, 8, h.Target, "of the two small nodes'")
			require.InDelta(t, tt.budget, h.BudgetGPUHours, 1e-9)
		})
	}
}

// TestHoldWholeNodesWithinQuota: a hold is placed where the gang's
// queue's quota takes it. x, two whole nodes in queue small (maximum 8),
// on the two 8-GPU (n0, n1) and two 4-GPU (n2, n3) nodes, all running
// jobs of queue borrow without a time limit (no planned start): x held
// n0-n1 (16 GPUs, which its maximum refuses), and when u0 ended held its
// 8 GPUs, keeping o (queue borrow, ranked below) off n0 though x could
// never start there. Its hold now targets n2-n3; o starts on n0, and x
// starts on n2-n3 once they free.
func TestHoldWholeNodesWithinQuota(t *testing.T) {
	e, p := smallQueueHeld(t, 2)
	c := e.c
	require.Equal(t, 8, p.Holds[0].Target, "x's hold targets the two 4-GPU nodes: %s", p.Describe(c, epoch))

	require.NoError(t, e.Finished("u0", epoch.Add(2*time.Minute)))
	require.NoError(t, e.Submit(Job{ID: "o", Account: "a", Queue: "borrow", TimeLimit: time.Hour,
		Gang: member(placement.NodesOf(1, 8))}, epoch.Add(2*time.Minute)))
	now := epoch.Add(3 * time.Minute)
	p = startAll(t, e, now)
	desc := p.Describe(c, epoch)
	require.Len(t, p.Starts, 1, desc)
	require.Equal(t, "o", p.Starts[0].Job, desc)
	st, _ := e.Job("o")
	require.Equal(t, "n0", st.Nodes, desc)
	st, _ = e.Job("x")
	require.Equal(t, StateHeld, st.State, desc)
	require.Equal(t, "n[2-3]", st.Nodes, "x holds the small nodes: %s", desc)

	now = epoch.Add(4 * time.Minute)
	require.NoError(t, e.Finished("u2", now))
	require.NoError(t, e.Finished("u3", now))
	p = startAll(t, e, now)
	require.Len(t, p.Starts, 1, p.Describe(c, epoch))
	require.Equal(t, "x", p.Starts[0].Job)
	st, _ = e.Job("x")
	require.Equal(t, "n[2-3]", st.Nodes)
	require.Equal(t, 8, e.Queues()[0].Used, "queue small is charged the GPUs x holds")
}

// TestHoldSpecOwnSets: the spec a hold is searched with on the smallest
// nodes (cycle.holdSpec) has node sets of its own, which the users of
// the engine's other scratch sets (e.planNodes: smallerBy,
// startCutOnPlan, a reclaim's onSmallest) cannot change while it is in
// use. They were e.planNodes: a reclaim's onSmallest for a gang of the
// 8-GPU nodes turned x's hold spec, on the 4-GPU nodes, onto the 8-GPU
// nodes its quota refuses.
func TestHoldSpecOwnSets(t *testing.T) {
	e, _ := smallQueueHeld(t, 1)
	x := e.jobs.byID["x"]
	hs := e.cyc.holdSpec(x, &x.job.Gang)
	require.NotSame(t, &x.job.Gang, hs, "x's hold is searched on the smallest nodes")
	on := hs.Members[0].Request.Allowed
	nodes := func(s *bitset.BitSet) []uint {
		var out []uint
		for n, ok := s.NextSet(0); ok; n, ok = s.NextSet(n + 1) {
			out = append(out, n)
		}
		return out
	}
	require.Equal(t, []uint{2, 3}, nodes(on))
	large := member(onNodes(e.c, placement.WholeNodes(1), 0, 1))
	e.onSmallest(copySpec(&e.minSpec, &large), &e.planNodes) // a reclaim's, for a gang of n0-n1
	require.Same(t, on, hs.Members[0].Request.Allowed)
	require.Equal(t, []uint{2, 3}, nodes(hs.Members[0].Request.Allowed), "x's hold spec after another gang's onSmallest")
	for i, s := range e.planNodes {
		require.NotSame(t, s, on, "e.planNodes[%d] is x's hold spec's set", i)
	}
}

// quotaHoldScene is TestHoldWholeNodesWithinQuota's cluster under hold
// config h: x, two whole nodes in queue small (maximum 8: counted at 16
// on the 8-GPU nodes, it can only ever start on the two 4-GPU ones),
// submitted at epoch while jobs of queue borrow without a time limit take
// every node; it returns the plan of the cycle at one minute.
func quotaHoldScene(t *testing.T, h HoldConfig) (*topology.Cluster, *Engine, *Plan) {
	t.Helper()
	c := mixedCluster(t)
	cfg := DefaultConfig()
	cfg.Hold = h
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "small", Maximum: 8, BorrowingLimit: Unlimited},
		{Name: "borrow", Guarantee: 24, LendingLimit: Unlimited, BorrowingLimit: Unlimited, Maximum: Unlimited},
	}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	for i, g := range []int{8, 8, 4, 4} {
		require.NoError(t, e.Submit(Job{ID: "u" + string(rune('0'+i)), Account: "a", Queue: "borrow",
			Gang: member(onNodes(c, placement.NodesOf(1, g), i))}, epoch))
	}
	require.Len(t, startAll(t, e, epoch).Starts, 4)
	require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Queue: "small", TimeLimit: time.Hour, Preemption: preempt.Requeue,
		Gang: member(placement.WholeNodes(2))}, epoch))
	st, _ := e.Job("x")
	require.Equal(t, 16, st.GPUs, "x counted at the 8-GPU nodes")
	return c, e, startAll(t, e, epoch.Add(time.Minute))
}

// TestHoldWholeNodesJudgedWithinQuota: hold mode judges a gang by the
// GPUs it can hold. x counts 16 GPUs (two whole 8-GPU nodes) but its
// queue's maximum of 8 lets it start only on the two 4-GPU nodes, where
// its hold is targeted: under Hold.MinGPUs 12 it was held all the same,
// and under a cap of 12 GPUs (MaxShare 0.5 of 24) it waited CapWait
// "above the hold cap of 12 GPUs" for a hold of 8. It is now judged at 8:
// not eligible under MinGPUs 12, held at once under the cap of 12, and
// still capped under a cap of 6.
func TestHoldWholeNodesJudgedWithinQuota(t *testing.T) {
	base := HoldConfig{Enabled: true, MinGPUs: 8, MaxShare: 1, CapWait: time.Hour, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
	tests := []struct {
		name   string
		set    func(*HoldConfig)
		code   WaitCode
		detail string // the reason's Detail, for WaitForHold
	}{
		{name: "eligible at MinGPUs 8", set: func(*HoldConfig) {}, code: WaitHeld},
		{name: "below MinGPUs 12 within its quota", set: func(h *HoldConfig) { h.MinGPUs = 12 }, code: WaitResources},
		{name: "within a cap of 12", set: func(h *HoldConfig) { h.MaxShare = 0.5 }, code: WaitHeld},
		{name: "above a cap of 6", set: func(h *HoldConfig) { h.MaxShare = 0.25 }, code: WaitForHold, detail: "above the hold cap of 6 GPUs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := base
			tt.set(&h)
			c, _, p := quotaHoldScene(t, h)
			desc := p.Describe(c, epoch)
			w := waitingOf(p, "x")
			require.NotNil(t, w, desc)
			require.Equal(t, tt.code, w.Code, desc)
			if tt.code == WaitHeld {
				require.Len(t, p.Holds, 1, desc)
				require.Equal(t, 8, p.Holds[0].Target, desc)
				return
			}
			require.Empty(t, p.Holds, desc)
			if tt.code == WaitForHold {
				require.Equal(t, tt.detail, w.Detail, desc)
				require.Equal(t, epoch.Add(time.Hour), w.Until, desc)
			}
		})
	}
}

// TestRestoredHoldJudgedWithinQuota: a snapshot of x held (MinGPUs 8),
// restored under MinGPUs 12, drops the hold (HoldRestored) as a cycle
// under that config would not give it: x can hold 8 GPUs at most. It was
// kept, x counted at 16. Restored under the same config, the next cycle
// decides as the engine kept on does.
func TestRestoredHoldJudgedWithinQuota(t *testing.T) {
	h := HoldConfig{Enabled: true, MinGPUs: 8, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
	for _, tt := range []struct {
		name    string
		minGPUs int
		held    bool
	}{
		{name: "same config", minGPUs: 8, held: true},
		{name: "MinGPUs 12", minGPUs: 12},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, e, p := quotaHoldScene(t, h)
			require.Len(t, p.Holds, 1, p.Describe(c, epoch))
			cfg := e.cfg
			cfg.Hold.MinGPUs = tt.minGPUs
			r, err := Restore(c, cfg, snapshotCopy(t, e.Snapshot()))
			require.NoError(t, err)
			r.checkEach = true
			require.NoError(t, r.check())
			now := epoch.Add(2 * time.Minute)
			got := startAll(t, r, now)
			desc := got.Describe(c, epoch)
			w := waitingOf(got, "x")
			require.NotNil(t, w, desc)
			if !tt.held {
				require.Empty(t, got.Holds, desc)
				require.Equal(t, []HoldEnd{{Job: "x", Cause: HoldRestored}}, got.HoldEnds, desc)
				require.Equal(t, WaitResources, w.Code, desc)
				return
			}
			want := startAll(t, e, now)
			require.Equal(t, want.Holds, got.Holds, desc)
			require.Equal(t, want.HoldEnds, got.HoldEnds, desc)
			require.Equal(t, WaitHeld, w.Code, desc)
		})
	}
}

// smallQueueHeld is quotaHoldScene under the hold config of
// TestHoldWholeNodesWithinQuota and
// TestHoldSpecOwnSets (Hold.MaxHolds maxHolds) and the plan of the cycle
// that gave x its hold: x, two whole nodes in queue small (maximum 8),
// on mixedCluster's two 8-GPU (n0, n1) and two 4-GPU (n2, n3) nodes,
// all running jobs u0-u3 of queue borrow without a time limit.
func smallQueueHeld(t *testing.T, maxHolds int) (*Engine, *Plan) {
	t.Helper()
	c, e, p := quotaHoldScene(t, HoldConfig{Enabled: true, MinGPUs: 8, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: maxHolds})
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	return e, p
}
