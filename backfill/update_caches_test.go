package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestUpdateClearsNeverFitsMark: queue q (two nodes' worth, strict
// order) runs A on one of four nodes; node 3 is drained. B, two nodes on
// n2 and n3 only, can never run on the nodes in service: the cycle marks
// it so (jobRec.noFitGen) and it heads nothing. Updated to n0-n2, it
// could run once A ends, and so heads q's strict order (it waits for
// quota beside A): S, one node submitted behind it, waits for it. With
// the mark kept (the nodes in service did not change, so the mark's
// number still held), B was still taken for one that can never run, and
// S started ahead of it.
func TestUpdateClearsNeverFitsMark(t *testing.T) {
	e, job := quotaRig(t, 4, []QueueSpec{{Name: "q", Guarantee: 16, Maximum: 16, LendingLimit: Unlimited, StrictOrder: true}}, nil)
	c := e.c
	require.NoError(t, e.Submit(job("A", "q", 0, 4, 1, 0, preempt.Requeue, 3*time.Hour), mins(0)))
	require.Len(t, startAll(t, e, mins(0)).Starts, 1)
	st, _ := e.Job("A")
	require.Equal(t, "node00000", st.Nodes, "n0: not one of B's")
	require.NoError(t, e.Drain(3, mins(1)))
	require.NoError(t, e.Submit(job("B", "q", 2, 4, 2, 0, preempt.Requeue, time.Hour), mins(1)))
	p := startAll(t, e, mins(2))
	require.Empty(t, p.Starts, p.Describe(c, epoch))
	require.NotZero(t, e.jobs.byID["B"].noFitGen, "B found not to fit the nodes in service")

	require.NoError(t, e.Update(withSets(t, e, "B", nodeSet(c, 0, 1, 2), nil), mins(3)))
	require.NoError(t, e.Submit(job("S", "q", 0, 4, 1, 0, preempt.Requeue, time.Hour), mins(3)))
	p = startAll(t, e, mins(4))
	desc := p.Describe(c, epoch)
	require.Empty(t, p.Starts, desc)
	w := waitingOf(p, "S")
	require.NotNil(t, w, desc)
	require.Equal(t, WaitQuota, w.Code, desc)
	require.Equal(t, "B", w.Blocker, desc)
}
