package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestPreemptPromisedLeavesOutLenders: Waiting.PreemptPromised counts
// "the lower-class running jobs the search left out because every GPU
// they hold is promised to a reservation or a hold of another job". v
// (class 0, nodes 0-1) and g (class 0, elastic: 6 nodes, minimum 2,
// growing, lending its 4 pods above its minimum) run; r (class 0, 2
// nodes pinned to the nodes of g's minimum pods, 1h) is reserved at g's
// end.
// u (class 1, 7 nodes, no limit: every reservation blocks it) waits: v
// and the lent pods make 6 nodes. g was counted as promised, though
// only its minimum pods are (r's); its 4 lent pods are promised to
// nobody, and the search counted them free. The count now leaves out a
// lender whose GPUs not promised are pods it lends: u's reason says
// nothing promised. With r on all 6 of g's nodes (reserved at g's end),
// every GPU g holds is promised: it is still counted.
func TestPreemptPromisedLeavesOutLenders(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ranks    []int // g's ranks whose nodes r is pinned to
		promised int
	}{
		{"reservation on the lender's minimum pods", []int{0, 1}, 0},
		{"reservation on all the lender's pods", []int{0, 1, 2, 3, 4, 5}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := preemptOps(t, 4, 0)
			v := pinnedJob(c, "v", 0, 2, 10*time.Hour)
			v.Preemption = preempt.Requeue
			require.NoError(t, e.Submit(v, epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 1)
			g := Job{ID: "g", Account: "a", TimeLimit: 10 * time.Hour, Grow: true, Preemption: preempt.Requeue,
				Gang: gang.Spec{Members: []gang.Member{{Name: "m", Min: 2, Request: placement.NodesOf(6, 8)}}}}
			require.NoError(t, e.Submit(g, epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 1)
			startAll(t, e, epoch.Add(time.Minute)) // g lends from the cycle after its start

			ga := e.jobs.byID["g"].alloc.Members[0].Assignment
			require.Len(t, ga, 6)
			rq := placement.NodesOf(len(tc.ranks), 8)
			rq.Allowed = c.NewNodeSet()
			for _, k := range tc.ranks {
				rq.Allowed.Set(uint(ga[k].Node))
			}
			require.NoError(t, e.Submit(Job{ID: "r", Account: "a", TimeLimit: time.Hour, Gang: member(rq)}, epoch.Add(2*time.Minute)))
			p := startAll(t, e, epoch.Add(2*time.Minute))
			require.Empty(t, p.Starts, p.Describe(c, epoch))
			require.Len(t, p.Reservations, 1, p.Describe(c, epoch))

			at := epoch.Add(20 * time.Minute)
			u := Job{ID: "u", Account: "a", Class: 1, Gang: member(placement.NodesOf(7, 8))}
			require.NoError(t, e.Submit(u, at))
			p = startAll(t, e, at)
			require.Empty(t, p.Starts, p.Describe(c, epoch))
			require.Empty(t, p.Preemptions, p.Describe(c, epoch))
			var w *Waiting
			for i := range p.Waiting {
				if p.Waiting[i].Job == "u" {
					w = &p.Waiting[i]
				}
			}
			require.NotNil(t, w, p.Describe(c, epoch))
			require.True(t, w.PreemptTried, p.Describe(c, epoch))
			require.Equal(t, tc.promised, w.PreemptPromised, w.Message(epoch))
		})
	}
}
