package backfill

import (
	"strings"
	"testing"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// mixedCluster is two 8-GPU nodes (n0, n1) and two 4-GPU nodes (n2, n3)
// on one leaf each pair.
func mixedCluster(t *testing.T) *topology.Cluster {
	t.Helper()
	spec := topology.ClusterSpec{Levels: []string{"leaf"}}
	for i, g := range []int{8, 8, 4, 4} {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: "n" + string(rune('0'+i)), GPUs: g, Path: []string{"l" + string(rune('0'+i/2))}})
	}
	c, err := topology.Build(spec)
	require.NoError(t, err)
	return c
}

// TestWholeNodeQuotaCountsUsableNodes: a whole-node pod is counted at the
// largest node its job may use (its queue's pool, its own Allowed set),
// not at the cluster's largest node. Queue small, bound to the two 4-GPU
// nodes n[2-3] with a guarantee and maximum of 8 GPUs, takes a job of two
// whole nodes: Submit refused it ("16 GPUs; queue small has 8"), counting
// each pod at the 8-GPU nodes it can never use. It is accepted, starts on
// n2 and n3, is charged the 8 GPUs it holds, and a second such job waits
// for quota with a reason that says how much it needs (8).
func TestWholeNodeQuotaCountsUsableNodes(t *testing.T) {
	c := mixedCluster(t)
	tests := []struct {
		name  string
		pool  string // queue small's Nodes
		nodes []int  // the jobs' own Allowed set (nil: none)
		min   int    // the member's Min (0: none)
		gpus  int    // GPUs counted for the job (JobStatus.GPUs)
		// firstOnly: only the first job's start is checked (its bound,
		// gpus, is above what it holds: the second job's reason and
		// demand count that bound).
		firstOnly bool
	}{
		{name: "queue pool", pool: "n[2-3]", gpus: 8},
		{name: "own Allowed set", nodes: []int{2, 3}, gpus: 8},
		{name: "pool and elastic minimum", pool: "n[2-3]", min: 1, gpus: 8},
		// It may use a large node, but n2 and n3 take it within the
		// guarantee: Submit refused it ("16 GPUs"), counting it at the
		// large node; it is accepted and starts on the small ones
		// (TestWholeNodeMixedNoNodeSet).
		{name: "Allowed set with one large node", nodes: []int{0, 2, 3}, gpus: 16, firstOnly: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
				{Name: "small", Guarantee: 8, Maximum: 8, Nodes: tt.pool},
				{Name: "big", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
			}}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			job := func(id string) Job {
				req := placement.WholeNodes(2)
				if tt.nodes != nil {
					req.Allowed = c.NewNodeSet()
					for _, n := range tt.nodes {
						req.Allowed.Set(uint(n))
					}
				}
				// Not preemptible jobs run within the guarantee: the
				// bound must hold it.
				return Job{ID: id, Account: "a", Queue: "small", TimeLimit: time.Hour,
					Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: req, Min: tt.min}}}}
			}
			require.NoError(t, e.Submit(job("w1"), epoch), "the job fits its queue")
			st, _ := e.Job("w1")
			require.Equal(t, tt.gpus, st.GPUs, "GPUs counted for the waiting job")
			p := startAll(t, e, epoch)
			require.Len(t, p.Starts, 1, "w1 starts: %v", p.Waiting)
			st, _ = e.Job("w1")
			require.Equal(t, "n[2-3]", st.Nodes)
			require.Equal(t, 8, e.Queues()[0].Used, "queue small is charged the GPUs w1 holds")
			if tt.firstOnly {
				return
			}

			require.NoError(t, e.Submit(job("w2"), epoch.Add(time.Minute)))
			p, err = e.Schedule(epoch.Add(time.Minute))
			require.NoError(t, err)
			require.Empty(t, p.Starts)
			require.Len(t, p.Waiting, 1)
			w := p.Waiting[0]
			require.Equal(t, WaitQuota, w.Code, "w2 waits for quota: %s", w.Message(epoch))
			if msg := w.Message(epoch); !strings.Contains(msg, "8") || strings.Contains(msg, "16") {
				t.Errorf("w2's reason %q does not say it needs 8 GPUs", msg)
			}
			require.Equal(t, 8, e.Queues()[0].Waiting, "queue small's demand is w2's 8 GPUs")

			// w1 ends: w2 starts there.
			require.NoError(t, e.Finished("w1", epoch.Add(2*time.Minute)))
			p = startAll(t, e, epoch.Add(2*time.Minute))
			require.Len(t, p.Starts, 1)
			require.Equal(t, "w2", p.Starts[0].Job)
			require.Equal(t, 8, e.Queues()[0].Used)
		})
	}
}

// TestWholeNodeReclaimOnSmallNodes: a job of two whole nodes in queue
// small (the two 4-GPU nodes, guaranteed 8 GPUs), which may not be
// preempted and so runs within its guarantee, reclaims that guarantee
// from a borrower on those nodes: the reclaim counts it at 8 GPUs, the
// GPUs it can hold there, not at 16 (two of the cluster's 8-GPU nodes),
// which no guarantee of 8 covers.
func TestWholeNodeReclaimOnSmallNodes(t *testing.T) {
	tests := []struct {
		name  string
		pool  string // queue small's Nodes
		nodes []int  // the preemptor's own Allowed set (nil: none)
	}{
		{name: "queue pool", pool: "n[2-3]"},
		{name: "own Allowed set", nodes: []int{2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, e := smallBorrowEngine(t, QueueSpec{Name: "small", Guarantee: 8, Maximum: 8, Nodes: tt.pool})
			on := func(r placement.Request, nodes ...int) placement.Request { return onNodes(c, r, nodes...) }
			b := Job{ID: "b", Account: "a", Queue: "borrow", TimeLimit: time.Hour, Preemption: preempt.Requeue,
				Gang: member(on(placement.NodesOf(2, 4), 2, 3))}
			require.NoError(t, e.Submit(b, epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 1)

			x := Job{ID: "x", Account: "a", Queue: "small", TimeLimit: time.Hour, Preemption: preempt.Never,
				Gang: member(on(placement.WholeNodes(2), tt.nodes...))}
			require.NoError(t, e.Submit(x, epoch.Add(time.Minute)), "x fits its queue's guarantee")
			p := startAll(t, e, epoch.Add(time.Minute))
			require.Len(t, p.Preemptions, 1, p.Describe(c, epoch))
			require.Equal(t, Preemption{Victim: "b", Preemptor: "x", Policy: preempt.Requeue}, Preemption{Victim: p.Preemptions[0].Victim,
				Preemptor: p.Preemptions[0].Preemptor, Policy: p.Preemptions[0].Policy})
			requireStartsAfterRelease(t, c, e, "b")
		})
	}
}

// TestWholeNodeReclaimAtSmallestNodes: a job of two whole nodes with no
// node set, which may not be preempted (it runs within its queue's
// guarantee), in queue small (guarantee and maximum 8, no pool), on the
// two 8-GPU and two 4-GPU nodes: its bound at the largest nodes (16) is
// above the guarantee, its lower bound on the smallest nodes it may use
// (leastGPUs, 8) within it. Borrowers take every node: b1 (n0-n1) and
// b2 (n2-n3). It used to wait for quota without reclaiming (reclaim
// counted it at 16, which no guarantee of 8 covers). It now reclaims
// its guarantee at 8 on the small nodes, preempting b2 alone, and starts
// there once b2 is released.
func TestWholeNodeReclaimAtSmallestNodes(t *testing.T) {
	c, e := smallBorrowEngine(t, QueueSpec{Name: "small", Guarantee: 8, Maximum: 8, LendingLimit: Unlimited})
	on := func(r placement.Request, nodes ...int) placement.Request { return onNodes(c, r, nodes...) }
	for _, b := range []Job{
		{ID: "b1", Account: "a", Queue: "borrow", TimeLimit: time.Hour, Preemption: preempt.Requeue,
			Gang: member(on(placement.NodesOf(2, 8), 0, 1))},
		{ID: "b2", Account: "a", Queue: "borrow", TimeLimit: time.Hour, Preemption: preempt.Requeue,
			Gang: member(on(placement.NodesOf(2, 4), 2, 3))},
	} {
		require.NoError(t, e.Submit(b, epoch))
	}
	p0 := startAll(t, e, epoch)
	require.Len(t, p0.Starts, 2, p0.Describe(c, epoch))

	x := Job{ID: "x", Account: "a", Queue: "small", TimeLimit: time.Hour, Preemption: preempt.Never,
		Gang: member(placement.WholeNodes(2))}
	require.NoError(t, e.Submit(x, epoch.Add(time.Minute)))
	p := startAll(t, e, epoch.Add(time.Minute))
	desc := p.Describe(c, epoch)
	require.Empty(t, p.Starts, desc)
	require.Len(t, p.Preemptions, 1, desc)
	require.Equal(t, "b2", p.Preemptions[0].Victim, desc)
	require.Equal(t, "x", p.Preemptions[0].Preemptor, desc)
	require.Equal(t, WaitPreempting, waitingOf(p, "x").Code, desc)
	require.Equal(t, 8, e.Queues()[0].Used, "queue small is charged the claim's 8 GPUs")

	requireStartsAfterRelease(t, c, e, "b2")
}

// TestWholeNodeCoveredFirstAtSmallestNodes: the walk tests first the
// jobs their queues' guarantees cover (entitledFirst), a whole-node job
// of unequal node sizes at its leastGPUs as reclaim counts it. On the
// two 8-GPU and two 4-GPU nodes, b1 (queue borrow) runs on n0-n1; b3
// (borrow, two of n2-n3) and then x (queue small, guarantee and maximum
// 8, two whole nodes, not preemptible) are submitted. Counted at 16, x
// was not covered and b3, ranked above it, took n2-n3 first: x, whose
// guarantee a job started in the cycle could not give back, waited. It
// is now tested first and starts on n2-n3; b3 waits.
func TestWholeNodeCoveredFirstAtSmallestNodes(t *testing.T) {
	c, e := smallBorrowEngine(t, QueueSpec{Name: "small", Guarantee: 8, Maximum: 8, LendingLimit: Unlimited})
	on := func(r placement.Request, nodes ...int) placement.Request { return onNodes(c, r, nodes...) }
	require.NoError(t, e.Submit(Job{ID: "b1", Account: "a", Queue: "borrow", TimeLimit: time.Hour, Preemption: preempt.Requeue,
		Gang: member(on(placement.NodesOf(2, 8), 0, 1))}, epoch))
	require.Len(t, startAll(t, e, epoch).Starts, 1)

	at := epoch.Add(time.Minute)
	require.NoError(t, e.Submit(Job{ID: "b3", Account: "a", Queue: "borrow", TimeLimit: time.Hour, Preemption: preempt.Requeue,
		Gang: member(on(placement.NodesOf(2, 4), 2, 3))}, at))
	require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Queue: "small", TimeLimit: time.Hour, Preemption: preempt.Never,
		Gang: member(placement.WholeNodes(2))}, at))
	p := startAll(t, e, at)
	desc := p.Describe(c, epoch)
	require.Len(t, p.Starts, 1, desc)
	require.Equal(t, "x", p.Starts[0].Job, desc)
	st, _ := e.Job("x")
	require.Equal(t, "n[2-3]", st.Nodes, desc)
	require.NotNil(t, waitingOf(p, "b3"), desc)
}

// TestOnSmallest: the node sets a reclaim at leastGPUs places whole-node
// pods on (onSmallest), on the two 8-GPU (n0, n1) and two 4-GPU (n2, n3)
// nodes: the usable nodes up to the size of the smallest that holds all
// the pods, each on its own node.
func TestOnSmallest(t *testing.T) {
	c := mixedCluster(t)
	e, err := New(c, DefaultConfig(), flatTree(t, DefaultConfig().FairShare, "a"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		pods     int
		allowed  []int // nil: all nodes
		excluded []int
		want     []int
	}{
		{"two pods, any node", 2, nil, nil, []int{2, 3}},
		{"one pod, any node", 1, nil, nil, []int{2, 3}},
		{"three pods, any node", 3, nil, nil, []int{0, 1, 2, 3}},
		{"two pods, one small node allowed", 2, []int{0, 1, 2}, nil, []int{0, 1, 2}},
		{"two pods, a small node excluded", 2, nil, []int{3}, []int{0, 1, 2}},
		{"one pod, large nodes only", 1, []int{0, 1}, nil, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := func(nodes []int) *bitset.BitSet {
				if nodes == nil {
					return nil
				}
				s := c.NewNodeSet()
				for _, n := range nodes {
					s.Set(uint(n))
				}
				return s
			}
			r := placement.WholeNodes(tc.pods)
			r.Allowed, r.Excluded = set(tc.allowed), set(tc.excluded)
			spec := gang.Spec{Members: []gang.Member{{Name: "m", Request: r},
				{Name: "fixed", Request: placement.NodesOf(1, 4)}}}
			got := e.onSmallest(copySpec(&e.minSpec, &spec), &e.planNodes)
			require.True(t, set(tc.want).Equal(got.Members[0].Request.Allowed), "got %v", got.Members[0].Request.Allowed)
			require.Nil(t, got.Members[1].Request.Allowed, "a member not of whole nodes is left as it is")
			require.Equal(t, set(tc.allowed), spec.Members[0].Request.Allowed, "the job's own spec is left as it was")
		})
	}
}

// smallBorrowEngine is a default engine on mixedCluster (preemption grace
// a minute, every step checked) with queue small as given and queue
// borrow (borrowing and maximum unlimited) beside it.
func smallBorrowEngine(t *testing.T, small QueueSpec) (*topology.Cluster, *Engine) {
	t.Helper()
	c := mixedCluster(t)
	cfg := DefaultConfig()
	cfg.Preemption.Grace = time.Minute
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{small, {Name: "borrow", BorrowingLimit: Unlimited, Maximum: Unlimited}}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	return c, e
}

// twoQueueMixedEngine is a default engine on mixedCluster (every step
// checked) with queues a and b, neither guaranteed nor limited, of equal
// weight: their weighted shares split the 24 GPUs in two.
func twoQueueMixedEngine(t *testing.T) (*topology.Cluster, *Engine) {
	t.Helper()
	c := mixedCluster(t)
	cfg := DefaultConfig()
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "a", BorrowingLimit: Unlimited, Maximum: Unlimited},
		{Name: "b", BorrowingLimit: Unlimited, Maximum: Unlimited},
	}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	return c, e
}

// onNodes returns r allowed on the nodes given only (r as it is for
// none).
func onNodes(c *topology.Cluster, r placement.Request, nodes ...int) placement.Request {
	if nodes != nil {
		r.Allowed = c.NewNodeSet()
		for _, n := range nodes {
			r.Allowed.Set(uint(n))
		}
	}
	return r
}

// requireStartsAfterRelease reports victim released at 90 s and requires
// the cycle at 2 minutes to start x alone, on n[2-3], its queue (the
// first) charged its 8 GPUs.
func requireStartsAfterRelease(t *testing.T, c *topology.Cluster, e *Engine, victim string) {
	t.Helper()
	require.NoError(t, e.Preempted(victim, epoch.Add(90*time.Second)))
	p := startAll(t, e, epoch.Add(2*time.Minute))
	require.Len(t, p.Starts, 1, p.Describe(c, epoch))
	require.Equal(t, "x", p.Starts[0].Job)
	st, _ := e.Job("x")
	require.Equal(t, "n[2-3]", st.Nodes)
	require.Equal(t, 8, e.Queues()[0].Used, "queue small is charged the GPUs x holds")
}
