package backfill

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
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
	c, e := twoQueueMixedEngine(t)
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

// TestWholeNodeReclaimPlacedAboveLeast: a reclaim for whole nodes of
// unequal sizes at their leastGPUs, whose victim search placed them on
// more GPUs than that, made no claim (the claim guard), though a set
// placing them within it was there. x, three whole nodes that may not be
// preempted, in queue small (guarantee and maximum 16) on the two 8-GPU
// (n0, n1) and two 4-GPU (n2, n3) nodes: its leastGPUs is 16 (n2, n3
// and one 8-GPU node), which the guarantee covers. b4 runs on n3 since
// t0; b1 (n0), b2 (n1) and b3 (n2) since 50m, all in queue borrow. The
// victims of least work lost, b1 to b3, free n0-n2: 20 GPUs, above the
// 16, and x waited for the borrowers' end (reserved at 2h50m). The
// search now runs again without the last 8-GPU node taken (n1) and
// finds b1, b3 and b4: x claims n0, n2 and n3 and starts there. With b4
// in a queue within its guarantee (not reclaimable), only n0-n2 can be
// freed: the guard holds, and no claim is made.
func TestWholeNodeReclaimPlacedAboveLeast(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b4Queue string
		victims []string // none: no claim
	}{
		{name: "a set within leastGPUs", b4Queue: "borrow", victims: []string{"b1", "b3", "b4"}},
		{name: "only sets above leastGPUs", b4Queue: "keep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mixedCluster(t)
			cfg := DefaultConfig()
			cfg.Preemption.Grace = time.Minute
			cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
				{Name: "small", Guarantee: 16, Maximum: 16, LendingLimit: Unlimited},
				{Name: "borrow", BorrowingLimit: Unlimited, Maximum: Unlimited},
				{Name: "keep", Guarantee: 4, Maximum: 4, LendingLimit: Unlimited},
			}}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			b := func(id, queue string, gpus, node int) Job {
				return Job{ID: id, Account: "a", Queue: queue, TimeLimit: 2 * time.Hour, Preemption: preempt.Requeue,
					Gang: member(onNodes(c, placement.NodesOf(1, gpus), node))}
			}
			require.NoError(t, e.Submit(b("b4", tc.b4Queue, 4, 3), epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 1)
			at := epoch.Add(50 * time.Minute)
			for _, j := range []Job{b("b1", "borrow", 8, 0), b("b2", "borrow", 8, 1), b("b3", "borrow", 4, 2)} {
				require.NoError(t, e.Submit(j, at))
			}
			require.Len(t, startAll(t, e, at).Starts, 3)

			at = epoch.Add(51 * time.Minute)
			require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Queue: "small", TimeLimit: time.Hour, Preemption: preempt.Never,
				Gang: member(placement.WholeNodes(3))}, at))
			p := startAll(t, e, at)
			desc := p.Describe(c, epoch)
			var victims []string
			for _, pr := range p.Preemptions {
				require.Equal(t, "x", pr.Preemptor, desc)
				victims = append(victims, pr.Victim)
			}
			slices.Sort(victims)
			require.Equal(t, tc.victims, victims, desc)
			if tc.victims == nil {
				require.Equal(t, 0, e.Queues()[0].Used, "no claim is charged to queue small: %s", desc)
				require.NotEqual(t, WaitPreempting, waitingOf(p, "x").Code, desc)
				return
			}
			require.Equal(t, WaitPreempting, waitingOf(p, "x").Code, desc)
			require.Equal(t, 16, e.Queues()[0].Used, "queue small is charged the claim's 16 GPUs: %s", desc)
			for _, v := range victims {
				require.NoError(t, e.Preempted(v, epoch.Add(51*time.Minute+30*time.Second)))
			}
			p = startAll(t, e, epoch.Add(52*time.Minute))
			require.Len(t, p.Starts, 1, p.Describe(c, epoch))
			require.Equal(t, "x", p.Starts[0].Job)
			st, _ := e.Job("x")
			require.Equal(t, "n[0,2-3]", st.Nodes)
			require.Equal(t, 16, e.Queues()[0].Used, "queue small is charged the GPUs x holds")
		})
	}
}
