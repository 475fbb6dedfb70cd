package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// reofferEngine returns an engine on two leaves of 4 nodes x 8 GPUs,
// hold mode off, QOS ranking above age, with A (node 0, 5h), B (node 1,
// 3h), D (node 3, 5h) and C (nodes 4-7, 5h) running from epoch and R
// (two nodes of a leaf, 1h, QOS 0.5) reserved on nodes 1-2 from B's end
// at 3h; node 2 is free. pinned submits a job pinned to nodes [lo, hi).
func reofferEngine(t *testing.T) (*Engine, func(id string, lo, hi int, limit time.Duration) Job) {
	t.Helper()
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.FairShare.Weights = fairshare.Weights{Age: 1000, QOS: 1e7}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	pinned := func(id string, lo, hi int, limit time.Duration) Job {
		s := c.NewNodeSet()
		for n := lo; n < hi; n++ {
			s.Set(uint(n))
		}
		return Job{ID: id, Account: "a", TimeLimit: limit, Gang: member(placement.Request{Nodes: hi - lo, GPUsPerNode: 8, Allowed: s})}
	}
	for _, j := range []Job{pinned("A", 0, 1, 5*time.Hour), pinned("B", 1, 2, 3*time.Hour), pinned("D", 3, 4, 5*time.Hour), pinned("C", 4, 8, 5*time.Hour)} {
		require.NoError(t, e.Submit(j, epoch))
	}
	require.Len(t, startAll(t, e, epoch).Starts, 4)
	r := Job{ID: "R", Account: "a", QOS: 0.5, TimeLimit: time.Hour, Gang: member(placement.Request{Nodes: 2, GPUsPerNode: 8, Required: "leaf"})}
	require.NoError(t, e.Submit(r, epoch))
	p := startAll(t, e, epoch)
	require.Equal(t, map[string]time.Time{"R": epoch.Add(3 * time.Hour)}, reservedStarts(p), p.Describe(c, epoch))
	return e, pinned
}

// TestReservationStartedEarlyReoffers: J (node 2, 10h), ranked above R,
// is refused node 2, which R's reservation (nodes 1-2 from 3h) holds
// during J's run, and reserved after it. At 40m C ends, and R, tested
// after J, starts now on nodes 4-5, long before its planned start: node 2
// is free and nobody's. NextEvent named R's end, an hour away, though a
// second cycle at the same time started J (found by a reviewer's probe:
// only a due reservation started elsewhere asked for a cycle at once). Now a reservation let go in the walk after a job whose
// run it overlapped was left waiting asks for a cycle at once, and that
// cycle starts J.
func TestReservationStartedEarlyReoffers(t *testing.T) {
	e, pinned := reofferEngine(t)
	now := epoch.Add(30 * time.Minute)
	j := pinned("J", 2, 3, 10*time.Hour)
	j.QOS = 1
	require.NoError(t, e.Submit(j, now))
	p := startAll(t, e, now)
	require.Equal(t, map[string]time.Time{"R": epoch.Add(3 * time.Hour), "J": epoch.Add(4 * time.Hour)}, reservedStarts(p), p.Describe(e.c, epoch))
	now = epoch.Add(40 * time.Minute)
	require.NoError(t, e.Finished("C", now))
	p = startAll(t, e, now)
	require.Equal(t, []string{"R"}, startedIDs(p), p.Describe(e.c, epoch))
	startsAtOnce(t, e, now, "J")
}

// TestReservationStartedEarlyNoReoffer: the rule is no wider than it
// needs: R starting early off its reservation asks for no cycle at once
// when the walk left no job waiting before it whose run it overlapped
// (K, ranked above R and refused for D's node, ends before R's planned
// start).
func TestReservationStartedEarlyNoReoffer(t *testing.T) {
	e, pinned := reofferEngine(t)
	now := epoch.Add(40 * time.Minute)
	k := pinned("K", 3, 4, time.Hour)
	k.QOS = 1
	require.NoError(t, e.Submit(k, now))
	require.NoError(t, e.Finished("C", now))
	p := startAll(t, e, now)
	require.Equal(t, []string{"R"}, startedIDs(p), p.Describe(e.c, epoch))
	next, ok := e.NextEvent()
	require.True(t, ok)
	require.True(t, next.After(now.Add(time.Nanosecond)), "NextEvent %v: no cycle owed at once", next.Sub(epoch))
}
