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

// TestLateReleaseLeafBesideOverrun: as
// TestLateReleaseDueReservationWaitsForOverrun (v and f on a leaf each,
// r reserved at t+10h, u preempts v at t+2m, f overruns its 2h limit, v
// is released at t+11h), with three 1-node 20-minute jobs submitted at
// the release. r stays due, waiting for f, which the engine expects to
// end at once: no job starts on r's planned GPUs (it would delay r), and
// the nodes of v's leaf r does not need are backfilled now, not left
// idle. With r on all 8 nodes none starts; with r on 6, the two nodes
// of v's leaf outside r's plan run two of them.
func TestLateReleaseLeafBesideOverrun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rNodes  int
		started int
	}{
		{"r on every node: the leaf waits for r", 8, 0},
		{"r on 6 nodes: the rest of the leaf runs small jobs", 6, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := preemptOps(t, 4, 0)
			require.NoError(t, e.Submit(leafJob("v", 10*time.Hour, 0, preempt.Requeue), epoch))
			require.NoError(t, e.Submit(leafJob("f", 2*time.Hour, 0, preempt.Never), epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 2)
			var vNodes gang.Allocation
			e.jobs.byID["v"].alloc.CopyTo(&vNodes)
			require.NoError(t, e.Submit(Job{ID: "r", Account: "a", Gang: member(placement.NodesOf(tc.rNodes, 8)), TimeLimit: time.Hour}, epoch.Add(time.Minute)))
			startAll(t, e, epoch.Add(time.Minute))
			require.NoError(t, e.Submit(leafJob("u", 30*time.Minute, 1, preempt.Never), epoch.Add(2*time.Minute)))
			p := startAll(t, e, epoch.Add(2*time.Minute))
			require.Len(t, p.Preemptions, 1, p.Describe(c, epoch))

			at := epoch.Add(11 * time.Hour)
			require.NoError(t, e.Preempted("v", at))
			for _, id := range []string{"s0", "s1", "s2"} {
				require.NoError(t, e.Submit(Job{ID: id, Account: "a", Gang: member(placement.NodesOf(1, 8)), TimeLimit: 20 * time.Minute}, at))
			}
			p = startAll(t, e, at)
			r := e.jobs.byID["r"].resv
			require.NotNil(t, r)
			require.Equal(t, epoch.Add(10*time.Hour), r.start, "r stays due, waiting for f")
			require.Len(t, p.Starts, tc.started, p.Describe(c, epoch))
			for _, s := range p.Starts {
				require.False(t, intersects(&s.Allocation, &r.alloc), "%s starts on r's GPUs\n%s", s.Job, p.Describe(c, epoch))
				forEntries(&s.Allocation, func(x topology.NodeAlloc) {
					in := false
					forEntries(&vNodes, func(y topology.NodeAlloc) { in = in || y.Node == x.Node })
					require.True(t, in, "%s starts off v's leaf", s.Job)
				})
			}
		})
	}
}
