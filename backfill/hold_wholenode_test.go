package backfill

import (
	"testing"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
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
	c := mixedCluster(t)
	cfg := DefaultConfig()
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 8, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 2}
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
	p := startAll(t, e, epoch.Add(time.Minute))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
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
	c := mixedCluster(t)
	cfg := DefaultConfig()
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 8, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
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
	p := startAll(t, e, epoch.Add(time.Minute))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))

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
	large := member(onNodes(c, placement.WholeNodes(1), 0, 1))
	e.onSmallest(copySpec(&e.minSpec, &large), &e.planNodes) // a reclaim's, for a gang of n0-n1
	require.Same(t, on, hs.Members[0].Request.Allowed)
	require.Equal(t, []uint{2, 3}, nodes(hs.Members[0].Request.Allowed), "x's hold spec after another gang's onSmallest")
	for i, s := range e.planNodes {
		require.NotSame(t, s, on, "e.planNodes[%d] is x's hold spec's set", i)
	}
}
