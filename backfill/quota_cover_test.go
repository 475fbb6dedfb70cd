package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestElasticMinimumCoveredGoesFirst: queue serving (guaranteed 24 GPUs
// on nodes 3-5, lending 16 to queue borrowed on the same nodes) runs
// S0 on 16 of them; borrowed's B (one node, submitted first, so ranked
// above) and serving's elastic E (three nodes, at least one) wait for
// the last node. Serving's guarantee covers E at its minimum (16 + 8 of
// 24): E is tested before the borrower and starts at its minimum. Before,
// the walk's entitled-first order counted E only at full size (16 + 24):
// B was tested first and took the node, and E, whose minimum reclaim
// covers, preempted B at the next cycle (a borrower took, within a
// cycle, GPUs another queue's guarantee covers).
//
// Counting such gangs at their minimum changed the walk's order in workload 836 of
// TestQuotaPropertiesLateHostElastic, where a reservation a late start
// moved to a fresh placement later landed in the window of another
// reservation of its queue (itself pushed by the late start) and was
// given up for quota without a documented cause: a fresh placement later
// is now checked at its start, and where the quota has no room the
// reservation keeps its planned GPUs to the time it can (upkeep).
func TestElasticMinimumCoveredGoesFirst(t *testing.T) {
	e, job, at := hybridRig(t)
	require.NoError(t, e.Submit(job("S0", "serving", 3, 5, 2, 0, preempt.Never, 0), at(0)))
	require.Equal(t, []string{"S0"}, startedIDs(startAll(t, e, at(0))))
	require.NoError(t, e.Submit(job("B", "borrowed", 3, 6, 1, 0, preempt.Requeue, 0), at(1)))
	require.NoError(t, e.Submit(job("E", "serving", 3, 6, 3, 1, preempt.Requeue, 0), at(2)))
	for _, m := range []int{3, 4} {
		p := startAll(t, e, at(m))
		require.Empty(t, p.Preemptions, p.Describe(e.c, epoch))
		if m == 3 {
			require.Equal(t, []string{"E"}, startedIDs(p), p.Describe(e.c, epoch))
			require.Equal(t, 8, p.Starts[0].Allocation.GPUs())
		}
	}
}

// TestReclaimFailureReasonNamesBorrowers: queue serving's X (one whole
// node, class 0, within serving's guarantee) cannot start: the only
// borrower, B (class 0 too), holds half of node 3, and serving's own jobs
// fill the other nodes. The reclaim search for X finds no set, and the
// reason says why in reclaim's terms: a reclaim takes gangs of queues
// that borrow, whatever their class. Before, it read "preemption did not
// help: no lower-class victims in any domain that could hold it: with
// every lower-class gang stopped (1 gang)", though B is of X's class
// and no class preemption was tried (preemption is off).
func TestReclaimFailureReasonNamesBorrowers(t *testing.T) {
	e, job, at := hybridRig(t)
	half := func(id, q string, node int, p preempt.Policy) Job {
		j := job(id, q, node, node+1, 1, 0, p, 0)
		j.Gang.Members[0].Request.GPUsPerNode = 4
		return j
	}
	require.NoError(t, e.Submit(half("S1", "serving", 3, preempt.Never), at(0)))
	require.NoError(t, e.Submit(half("B", "borrowed", 3, preempt.Requeue), at(0)))
	require.NoError(t, e.Submit(job("S2", "serving", 4, 5, 1, 0, preempt.Never, 0), at(0)))
	require.NoError(t, e.Submit(half("S3", "serving", 5, preempt.Never), at(0)))
	require.NoError(t, e.Submit(half("S4", "serving", 5, preempt.Never), at(0)))
	require.Len(t, startAll(t, e, at(0)).Starts, 5)
	require.NoError(t, e.Finished("S3", at(1)))
	require.NoError(t, e.Submit(job("X", "serving", 3, 6, 1, 0, preempt.Never, 0), at(1)))
	p := startAll(t, e, at(1))
	require.Empty(t, p.Preemptions, p.Describe(e.c, epoch))
	w := waitingOf(p, "X")
	require.NotNil(t, w, p.Describe(e.c, epoch))
	require.True(t, w.PreemptTried)
	m := w.Message(time.Time{})
	require.NotContains(t, m, "lower-class", m)
	require.Contains(t, m, "reclaim did not help: no borrowed GPUs in any domain that could hold it: with every gang of a borrowing queue stopped (1 gang), member m: needs 1 node with 8 free GPUs", m)
}

// hybridRig returns quotaRig's engine on six nodes with a two-minute
// preemption grace and three queues: training (guaranteed 24 GPUs on
// nodes 0-2), serving (guaranteed 24 on nodes 3-5, lending up to 16) and
// borrowed (no guarantee, borrowing freely on nodes 3-5); its job maker;
// and at, the time m minutes after epoch.
func hybridRig(t *testing.T) (*Engine, func(id, queue string, lo, hi, nodes, min int, p preempt.Policy, limit time.Duration) Job, func(m int) time.Time) {
	t.Helper()
	e, job := quotaRig(t, 6, []QueueSpec{
		{Name: "training", Guarantee: 24, Maximum: Unlimited, Nodes: "node[00000-00002]"},
		{Name: "serving", Guarantee: 24, LendingLimit: 16, Maximum: Unlimited, Nodes: "node[00003-00005]"},
		{Name: "borrowed", BorrowingLimit: Unlimited, Maximum: Unlimited, Nodes: "node[00003-00005]"},
	}, func(cfg *Config) { cfg.Preemption.Grace = 2 * time.Minute })
	at := func(m int) time.Time { return epoch.Add(time.Duration(m) * time.Minute) }
	return e, job, at
}
