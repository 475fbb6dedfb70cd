package backfill

import (
	"cmp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestWholeNodeBlockedNowReservedOnSmaller: a whole-node job with no
// reservation, x, in queue small (maximum 8, no guarantee), on the two
// 8-GPU (n0, n1) and two 4-GPU (n2, n3) nodes: n0-n1 are free, b2 (queue
// borrow) runs on n2-n3 until 2h. Placed now on n0-n1 (16 GPUs), x is
// refused by its queue's maximum, and the smaller nodes are taken: it
// waited for quota without a reservation ("queue small: 0 of 8 GPUs,
// maximum reached; its whole nodes take 16 GPUs..."), though n2-n3 at 2h
// take it within 8. It is now reserved there, keeps the reservation while
// n0-n1 stay free, and starts on n2-n3 when b2 ends.
func TestWholeNodeBlockedNowReservedOnSmaller(t *testing.T) {
	c, e := smallBorrowEngine(t, QueueSpec{Name: "small", Maximum: 8, BorrowingLimit: Unlimited})
	require.NoError(t, e.Submit(Job{ID: "b2", Account: "a", Queue: "borrow", TimeLimit: 2 * time.Hour,
		Gang: member(onNodes(c, placement.NodesOf(2, 4), 2, 3))}, epoch))
	require.Len(t, startAll(t, e, epoch).Starts, 1)

	at := epoch.Add(time.Minute)
	require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Queue: "small", TimeLimit: time.Hour,
		Gang: member(placement.WholeNodes(2))}, at))
	for _, step := range []time.Duration{time.Minute, time.Hour} {
		now := epoch.Add(step)
		p := startAll(t, e, now)
		desc := p.Describe(c, epoch)
		require.Empty(t, p.Starts, desc)
		w := waitingOf(p, "x")
		require.NotNil(t, w, desc)
		require.Equal(t, WaitReserved, w.Code, "at %v x is reserved on n2-n3: %s", step, w.Message(now))
		require.Equal(t, epoch.Add(2*time.Hour), w.Until, desc)
		st, _ := e.Job("x")
		require.Equal(t, "n[2-3]", st.Nodes, "x's planned nodes: %s", desc)
	}
	now := epoch.Add(2 * time.Hour)
	require.NoError(t, e.Finished("b2", now))
	p := startAll(t, e, now)
	require.Len(t, p.Starts, 1, p.Describe(c, epoch))
	require.Equal(t, "x", p.Starts[0].Job)
	st, _ := e.Job("x")
	require.Equal(t, "n[2-3]", st.Nodes)
	require.Equal(t, 8, e.Queues()[0].Used, "queue small is charged the 8 GPUs x holds")
}

// TestQuotaReasonNamesJobGPUs: a job its queue's maximum or borrowing
// limit refuses while room is left below it is told what it would take
// against what is left: "queue small: 0 of 8 GPUs, maximum reached" was
// said of a whole-node job taking 16 GPUs, the maximum not reached. A
// limit used up is still said to be reached. Queue q runs a (4 GPUs, or
// 8), and b (8 GPUs) and c (6) wait: the cached reason of b is not
// c's.
func TestQuotaReasonNamesJobGPUs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		q     QueueSpec
		aGPUs int
		want  string
		wantC string // "" when c's reason is b's
	}{
		{name: "maximum, room left", q: QueueSpec{Name: "q", Maximum: 8, BorrowingLimit: Unlimited}, aGPUs: 4,
			want:  "queue q: 4 of 8 GPUs in use, 4 left below its maximum; the job would take 8",
			wantC: "queue q: 4 of 8 GPUs in use, 4 left below its maximum; the job would take 6"},
		{name: "maximum reached", q: QueueSpec{Name: "q", Maximum: 8, BorrowingLimit: Unlimited}, aGPUs: 8,
			want: "queue q: 8 of 8 GPUs, maximum reached"},
		{name: "borrowing limit, room left", q: QueueSpec{Name: "q", Guarantee: 4, BorrowingLimit: 4, Maximum: Unlimited}, aGPUs: 4,
			want:  "queue q: 4 of 8 GPUs (4 guaranteed, borrowing limit 4), 4 left to borrow; the job would take 8",
			wantC: "queue q: 4 of 8 GPUs (4 guaranteed, borrowing limit 4), 4 left to borrow; the job would take 6"},
		{name: "borrowing limit reached", q: QueueSpec{Name: "q", Guarantee: 4, BorrowingLimit: 4, Maximum: Unlimited}, aGPUs: 8,
			want: "queue q: 8 of 8 GPUs (4 guaranteed, borrowing limit 4), borrowing limit reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := smallBorrowEngine(t, tc.q)
			require.NoError(t, e.Submit(Job{ID: "a", Account: "a", Queue: "q", TimeLimit: time.Hour, Preemption: preempt.Requeue,
				Gang: member(onNodes(c, placement.NodesOf(1, tc.aGPUs), 0))}, epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 1)
			require.NoError(t, e.Submit(Job{ID: "b", Account: "a", Queue: "q", TimeLimit: time.Hour, Preemption: preempt.Requeue,
				Gang: member(onNodes(c, placement.NodesOf(1, 8), 1))}, epoch))
			require.NoError(t, e.Submit(Job{ID: "c", Account: "a", Queue: "q", TimeLimit: time.Hour, Preemption: preempt.Requeue,
				Gang: member(placement.NodesOf(1, 6))}, epoch))
			p := startAll(t, e, epoch)
			for id, want := range map[string]string{"b": tc.want, "c": cmp.Or(tc.wantC, tc.want)} {
				w := waitingOf(p, id)
				require.NotNil(t, w, p.Describe(c, epoch))
				require.Equal(t, WaitQuota, w.Code, w.Message(epoch))
				require.Equal(t, want, w.Detail, id)
			}
		})
	}
}
