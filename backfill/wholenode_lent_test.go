package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestWholeNodeLentOnSmaller: a whole-node job started on the pods
// growing jobs lend it (tryLent) is placed again on smaller nodes when
// its queue's quota refuses the nodes placed (startOnSmaller), as a start
// on free GPUs is. Two 8-GPU nodes (n0, n1) and three 4-GPU nodes
// (n2-n4); g (queue other, class 0, growing) runs on them all: a member
// of two 8-GPU pods on n0-n1 and one of three 4-GPU pods on n2-n4, each
// of minimum 1, lending the three pods above its minimums to jobs of a
// higher class. x (queue q, maximum 8, class 1, two whole nodes, no node
// set) comes: placed on the lent pods, it took the lent 8-GPU node (12
// GPUs, over q's 8) and did not start there (it waited for quota). It
// now starts at once on the two lent 4-GPU nodes, charged 8, g giving
// them up for it.
func TestWholeNodeLentOnSmaller(t *testing.T) {
	spec := topology.ClusterSpec{Levels: []string{"leaf"}}
	for i, g := range []int{8, 8, 4, 4, 4} {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: "n" + string(rune('0'+i)), GPUs: g, Path: []string{"l0"}})
	}
	c, err := topology.Build(spec)
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Preemption.Enabled, cfg.Preemption.ExemptTime = true, 0
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "q", Maximum: 8, BorrowingLimit: Unlimited},
		{Name: "other", Guarantee: 8, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
	}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	big, small := placement.NodesOf(2, 8), placement.NodesOf(3, 4)
	big.Allowed, small.Allowed = c.NewNodeSet(), c.NewNodeSet()
	big.Allowed.Set(0).Set(1)
	small.Allowed.Set(2).Set(3).Set(4)
	g := Job{ID: "g", Account: "a", Queue: "other", TimeLimit: 10 * time.Hour, Grow: true, Preemption: preempt.Requeue,
		Gang: gang.Spec{Members: []gang.Member{{Name: "big", Min: 1, Request: big}, {Name: "small", Min: 1, Request: small}}}}
	require.NoError(t, e.Submit(g, epoch))
	p := startAll(t, e, epoch)
	require.Len(t, p.Starts, 1, p.Describe(c, epoch))
	st, _ := e.Job("g")
	require.Equal(t, "n[0-4]", st.Nodes)
	startAll(t, e, epoch.Add(time.Minute)) // g lends from the cycle after its start

	at := epoch.Add(10 * time.Minute)
	x := Job{ID: "x", Account: "a", Queue: "q", TimeLimit: time.Hour, Class: 1, Preemption: preempt.Requeue,
		Gang: member(placement.WholeNodes(2))}
	require.NoError(t, e.Submit(x, at))
	p = startAll(t, e, at)
	desc := p.Describe(c, epoch)
	require.Len(t, p.Starts, 1, desc)
	require.Equal(t, "x", p.Starts[0].Job, desc)
	require.Empty(t, p.Preemptions, desc)
	st, _ = e.Job("x")
	require.Equal(t, 8, st.GPUs, desc)
	require.NotContains(t, st.Nodes, "n0", desc)
	require.NotContains(t, st.Nodes, "n1", desc)
	removed := 0
	for _, pc := range p.PodChanges {
		require.Equal(t, "g", pc.Job, desc)
		require.Equal(t, "x", pc.For, desc)
		removed += len(pc.Pods)
	}
	require.Equal(t, 2, removed, desc)
	require.Equal(t, 8, e.Queues()[0].Used, "queue q is charged the GPUs x holds")
}
