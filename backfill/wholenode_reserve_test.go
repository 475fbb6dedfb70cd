package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestWholeNodeReservedOnSmallerNodes: a whole-node job with no node set,
// x, in queue small (maximum 8, no guarantee), on the two 8-GPU (n0, n1)
// and two 4-GPU (n2, n3) nodes, all taken by borrowers: b1 on n0-n1 ends
// at 1h, b2 on n2-n3 at 2h. x's earliest placement, n0-n1 at 1h, is 16
// GPUs, which its queue's maximum refuses there; it used to wait for
// quota without a reservation ("at its planned start, queue small: 0 of
// 8 GPUs, maximum reached"), and y, ranked below it, would reserve n2-n3
// in front of it. It is now reserved on n2-n3 at 2h (8 GPUs), keeps
// that reservation when n0-n1 free at 1h (its quota refuses them), and
// starts there at 2h; y waits behind it.
func TestWholeNodeReservedOnSmallerNodes(t *testing.T) {
	c, e := smallBorrowEngine(t, QueueSpec{Name: "small", Maximum: 8, BorrowingLimit: Unlimited})
	on := func(r placement.Request, nodes ...int) placement.Request { return onNodes(c, r, nodes...) }
	for _, b := range []Job{
		{ID: "b1", Account: "a", Queue: "borrow", TimeLimit: time.Hour, Gang: member(on(placement.NodesOf(2, 8), 0, 1))},
		{ID: "b2", Account: "a", Queue: "borrow", TimeLimit: 2 * time.Hour, Gang: member(on(placement.NodesOf(2, 4), 2, 3))},
	} {
		require.NoError(t, e.Submit(b, epoch))
	}
	require.Len(t, startAll(t, e, epoch).Starts, 2)

	at := epoch.Add(time.Minute)
	require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Queue: "small", TimeLimit: time.Hour,
		Gang: member(placement.WholeNodes(2))}, at))
	require.NoError(t, e.Submit(Job{ID: "y", Account: "a", Queue: "borrow", TimeLimit: time.Hour,
		Gang: member(on(placement.NodesOf(2, 4), 2, 3))}, at))
	for _, step := range []struct {
		at      time.Duration
		finish  string // ends at this step
		started bool   // x starts
	}{
		{at: time.Minute},
		{at: time.Hour, finish: "b1"},
		{at: 2 * time.Hour, finish: "b2", started: true},
	} {
		now := epoch.Add(step.at)
		if step.finish != "" {
			require.NoError(t, e.Finished(step.finish, now))
		}
		p := startAll(t, e, now)
		desc := p.Describe(c, epoch)
		if step.started {
			require.Len(t, p.Starts, 1, desc)
			require.Equal(t, "x", p.Starts[0].Job, desc)
			st, _ := e.Job("x")
			require.Equal(t, "n[2-3]", st.Nodes, desc)
			require.Equal(t, 8, e.Queues()[0].Used, "queue small is charged the 8 GPUs x holds")
			require.Equal(t, WaitReserved, waitingOf(p, "y").Code, desc)
			continue
		}
		require.Empty(t, p.Starts, desc)
		w := waitingOf(p, "x")
		require.NotNil(t, w, desc)
		require.Equal(t, WaitReserved, w.Code, "at %v x is reserved on n2-n3: %s", step.at, w.Message(now))
		require.Equal(t, epoch.Add(2*time.Hour), w.Until, desc)
		st, _ := e.Job("x")
		require.Equal(t, "n[2-3]", st.Nodes, "x's planned nodes: %s", desc)
	}
}

// TestWholeNodeHungryAtSmallestNodes: a queue waits below its weighted
// share (hungry) when its smallest waiting gang fits within that share,
// whole nodes of unequal sizes counted on the smallest nodes they may
// use (leastGPUs). Queues a and b (no guarantees, equal weights) share
// the two 8-GPU (n0, n1) and two 4-GPU (n2, n3) nodes, 12 GPUs each.
// a1 (queue a) runs on n0-n1 (16 GPUs, above a's share); a2 (a, two
// 4-GPU pods) and then x (b, two whole nodes) wait for n2-n3. Counted at
// the largest nodes (16), x did not fit b's share, b was not hungry, and
// a2, ranked above x, took n2-n3 beyond a's share. At 8 it does: a2
// waits for its share and x starts on n2-n3.
func TestWholeNodeHungryAtSmallestNodes(t *testing.T) {
	c := mixedCluster(t)
	cfg := DefaultConfig()
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "a", BorrowingLimit: Unlimited, Maximum: Unlimited},
		{Name: "b", BorrowingLimit: Unlimited, Maximum: Unlimited},
	}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	on := func(r placement.Request, nodes ...int) placement.Request { return onNodes(c, r, nodes...) }
	require.NoError(t, e.Submit(Job{ID: "a1", Account: "a", Queue: "a", TimeLimit: time.Hour,
		Gang: member(on(placement.NodesOf(2, 8), 0, 1))}, epoch))
	require.Len(t, startAll(t, e, epoch).Starts, 1)

	at := epoch.Add(time.Minute)
	require.NoError(t, e.Submit(Job{ID: "a2", Account: "a", Queue: "a", TimeLimit: time.Hour,
		Gang: member(on(placement.NodesOf(2, 4), 2, 3))}, at))
	require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Queue: "b", TimeLimit: time.Hour,
		Gang: member(placement.WholeNodes(2))}, at))
	p := startAll(t, e, at)
	desc := p.Describe(c, epoch)
	require.Len(t, p.Starts, 1, desc)
	require.Equal(t, "x", p.Starts[0].Job, desc)
	st, _ := e.Job("x")
	require.Equal(t, "n[2-3]", st.Nodes, desc)
	w := waitingOf(p, "a2")
	require.NotNil(t, w, desc)
	require.Equal(t, WaitQuota, w.Code, "a2 waits for its share: %s", w.Message(at))
	require.Equal(t, "a", w.Blocker, w.Message(at))
	require.Contains(t, w.Message(at), "past its weighted share of 12 (weight 1) while queue b waits below its own")
}

