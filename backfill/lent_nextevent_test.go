package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// lentWaitScene returns an engine on 2 nodes of 8 GPUs, hold mode off,
// with "lender" (elastic: 2 whole nodes, minimum 1, growing, 2h limit)
// running on both from epoch.
func lentWaitScene(t *testing.T) *Engine {
	t.Helper()
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 2, GPUsPerNode: 8})
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	e, _ := pinnedEngine(t, c, cfg)
	l := Job{ID: "lender", Account: "a", TimeLimit: 2 * time.Hour, Grow: true,
		Gang: gang.Spec{Members: []gang.Member{{Name: "m", Min: 1, Request: placement.NodesOf(2, 8)}}}}
	require.NoError(t, e.Submit(l, epoch))
	require.Len(t, startAll(t, e, epoch).Starts, 1)
	return e
}

// sleepUntilStart runs cycles as a host that sleeps until NextEvent
// does, from now until job id starts or the clock passes until (at most
// 50 cycles, and the clock must move forward between two cycles at the
// same time, so that a cycle owed "at once" forever fails). It returns
// the time id started (zero if it did not) and its plan.
func sleepUntilStart(t *testing.T, e *Engine, now, until time.Time, id string) (time.Time, *Plan) {
	t.Helper()
	at := now
	same := 0
	for range 50 {
		p := startAll(t, e, at)
		for _, s := range p.Starts {
			if s.Job == id {
				return at, p
			}
		}
		next, ok := e.NextEvent()
		if !ok || next.After(until) {
			return time.Time{}, p
		}
		if next.Sub(at) <= time.Nanosecond {
			same++
			require.Less(t, same, 3, "NextEvent asks for a cycle at once again and again at %v", at.Sub(epoch))
		} else {
			same = 0
		}
		at = next
	}
	t.Fatalf("%s neither started nor stopped asking for cycles", id)
	return time.Time{}, nil
}

// TestReservedJobStartsOnLentPods: "lender" (elastic, 2 nodes, minimum
// 1, growing) runs from epoch on both nodes; w (1 node, 1h) is submitted
// at 10m. A waiting job takes the pods a growing job lends only while it
// holds a reservation (lendsTo); w had none when the walk tested it, and
// was reserved at the lender's end (2h). A second cycle at 10m starts w
// on the lent node, but NextEvent named 2h: a host that sleeps until
// NextEvent left w waiting 110 minutes beside an idle lent node. Now
// the reservation that opens lent pods to a job tested before it had one
// asks for a cycle at once, and w starts in it. The host then keeps
// sleeping until NextEvent, and the clock moves on.
func TestReservedJobStartsOnLentPods(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit time.Duration
	}{
		{"w of 1h", time.Hour},
		{"w of 3h, past the lender's end", 3 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := lentWaitScene(t)
			now := epoch.Add(10 * time.Minute)
			w := Job{ID: "w", Account: "a", TimeLimit: tc.limit, Gang: member(placement.NodesOf(1, 8))}
			require.NoError(t, e.Submit(w, now))
			at, p := sleepUntilStart(t, e, now, epoch.Add(2*time.Hour), "w")
			require.False(t, at.IsZero() || at.After(now.Add(time.Nanosecond)), "w starts on the lent node at once (10m), not at %v:\n%s", at.Sub(epoch), p.Describe(e.c, epoch))
			require.Len(t, p.PodChanges, 1, p.Describe(e.c, epoch))
			require.Equal(t, "lender", p.PodChanges[0].Job)
			require.Len(t, p.PodChanges[0].Pods, 1, "the lender gives up its one lent pod")
			// The host keeps sleeping until NextEvent: time advances.
			next, ok := e.NextEvent()
			require.True(t, ok)
			require.True(t, next.After(at.Add(time.Nanosecond)), "NextEvent %v after w started: no cycle owed at once", next.Sub(epoch))
		})
	}
}

// TestReservedJobTooBigForLentPodsNoReoffer: the cycle at once is asked
// for only when the reserved job would start on the lent pods: w2 (2
// nodes) does not fit the lender's one lent node beside nothing free, so
// its reservation at the lender's end (2h) asks for no cycle at once
// (NextEvent names 2h), and a host that sleeps until NextEvent moves on
// to 2h, where w2 starts.
func TestReservedJobTooBigForLentPodsNoReoffer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit time.Duration
	}{
		{"w2 of 1h", time.Hour},
		{"w2 without a limit", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := lentWaitScene(t)
			now := epoch.Add(10 * time.Minute)
			w := Job{ID: "w2", Account: "a", TimeLimit: tc.limit, Gang: member(placement.NodesOf(2, 8))}
			require.NoError(t, e.Submit(w, now))
			p := startAll(t, e, now)
			require.Equal(t, map[string]time.Time{"w2": epoch.Add(2 * time.Hour)}, reservedStarts(p), p.Describe(e.c, epoch))
			next, ok := e.NextEvent()
			require.True(t, ok)
			require.Equal(t, epoch.Add(2*time.Hour), next, "NextEvent %v: no cycle at once for lent pods w2 does not fit", next.Sub(epoch))
			require.NoError(t, e.Finished("lender", next))
			at, p := sleepUntilStart(t, e, next, epoch.Add(3*time.Hour), "w2")
			require.Equal(t, epoch.Add(2*time.Hour), at, p.Describe(e.c, epoch))
		})
	}
}
