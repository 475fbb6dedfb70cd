package backfill

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// preemptOps returns opsCluster and an engine on it with preemption on (5
// minutes' grace, 30 minutes' minimum gain), hold mode off, the
// reservation depth and MaxJobsTested given, and its invariants checked
// after every call.
func preemptOps(t *testing.T, depth, tested int) (*topology.Cluster, *Engine) {
	t.Helper()
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.ReservationDepth, cfg.MaxJobsTested = depth, tested
	cfg.Hold.Enabled = false
	cfg.Preemption = PreemptionConfig{Enabled: true, Grace: 5 * time.Minute, MinGain: 30 * time.Minute}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	return c, e
}

// pinnedJob is job id of account a on the whole nodes [lo, hi) of c
// (allowed on those alone), with the limit given.
func pinnedJob(c *topology.Cluster, id string, lo, hi int, limit time.Duration) Job {
	r := placement.NodesOf(hi-lo, 8)
	r.Allowed = c.NewNodeSet()
	for n := lo; n < hi; n++ {
		r.Allowed.Set(uint(n))
	}
	return Job{ID: id, Account: "a", Gang: member(r), TimeLimit: limit}
}

// leafJob is job id of account a on the 4 whole nodes of one leaf
// (required), of the limit, class and preemption policy given.
func leafJob(id string, limit time.Duration, class int, pol preempt.Policy) Job {
	r := placement.NodesOf(4, 8)
	r.Required = "leaf"
	return Job{ID: id, Account: "a", Gang: member(r), TimeLimit: limit, Class: class, Preemption: pol}
}

// TestLateReleaseDueReservationFirst: v (class 0, 10h limit) and f (2h)
// run on a leaf each; r (all 8 nodes, 1h) is reserved at t+10h, v's end;
// u (class 1, a leaf, 30m) preempts v at t+2m and claims its leaf, which
// r shares from t+10h (after u's end, had it started when due). f ends at
// t+2h. The doc (Preemption): "Should a victim be released so late that
// a reservation the claim shares GPUs with is due first (its time limit
// after the grace's end), the reservation starts and the claim is
// dropped"; and no job ever starts on the GPUs of a due reservation. With
// v released at t+11h, r is due and its GPUs are all free: r starts, u
// does not. Before the fix the claim started first, at the top of the
// cycle, on r's GPUs, and r moved to t+11h30m ("late start u"). Released
// within its grace, u starts on its claim and r moves earlier, to f's
// end.
func TestLateReleaseDueReservationFirst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		release  time.Duration
		starts   string
		rPlanned time.Duration // r's planned start after the release cycle (0: started)
	}{
		{name: "released within the grace", release: 6 * time.Minute, starts: "u", rPlanned: 2 * time.Hour},
		{name: "released after the reservation is due", release: 11 * time.Hour, starts: "r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := preemptOps(t, 4, 0)
			require.NoError(t, e.Submit(leafJob("v", 10*time.Hour, 0, preempt.Requeue), epoch))
			require.NoError(t, e.Submit(leafJob("f", 2*time.Hour, 0, preempt.Never), epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 2)
			require.NoError(t, e.Submit(Job{ID: "r", Account: "a", Gang: member(placement.NodesOf(8, 8)), TimeLimit: time.Hour}, epoch.Add(time.Minute)))
			p := startAll(t, e, epoch.Add(time.Minute))
			require.Len(t, p.Reservations, 1)
			require.Equal(t, epoch.Add(10*time.Hour), p.Reservations[0].Start)
			require.NoError(t, e.Submit(leafJob("u", 30*time.Minute, 1, preempt.Never), epoch.Add(2*time.Minute)))
			p = startAll(t, e, epoch.Add(2*time.Minute))
			require.Len(t, p.Preemptions, 1)
			require.Equal(t, "v", p.Preemptions[0].Victim)
			if tc.release > 2*time.Hour {
				require.NoError(t, e.Finished("f", epoch.Add(2*time.Hour)))
				startAll(t, e, epoch.Add(2*time.Hour))
			}

			at := epoch.Add(tc.release)
			require.NoError(t, e.Preempted("v", at))
			p = startAll(t, e, at)
			var started []string
			for _, s := range p.Starts {
				started = append(started, s.Job)
			}
			require.Equal(t, []string{tc.starts}, started, p.Describe(c, epoch))
			st, ok := e.Job("r")
			require.True(t, ok)
			if tc.rPlanned == 0 {
				require.Equal(t, StateRunning, st.State)
				require.Equal(t, at, st.Start)
				return
			}
			require.Equal(t, StateReserved, st.State)
			require.Equal(t, epoch.Add(tc.rPlanned), st.PlannedStart)
			require.Empty(t, p.Moves, "no reservation moves later")
		})
	}
}

// TestReleasedThenClaimDroppedYields: f (never) runs on one node of leaf
// 0, v (requeue, a leaf, 4h) on leaf 1; u (class 1, 6 nodes) preempts v
// and claims l0's nodes 1-2 and leaf 1. Before the next cycle the host
// reports, in either order, v's release and the failure of node 1, a
// claim node (events batched between cycles). The doc (Preemption: no
// thrashing): "A requeued victim cannot take back the GPUs it left (they
// are claimed, or, when a drain or a failure dropped the claim, its
// preemptor goes first on them)". u fits the GPUs free then (nodes 2-3
// and leaf 1) and starts; v waits, yielding to it. Before the fix, with
// the release reported first (v left its claim while the claim still
// stood, so it was not marked to yield) v, older, started again on leaf 1
// and u got a reservation 4 hours later: v's 10.7 GPU-hours were lost for
// nothing. A restore between the two events changes nothing.
func TestReleasedThenClaimDroppedYields(t *testing.T) {
	for _, tc := range []struct {
		name        string
		releaseLast bool
		restore     bool // snapshot and restore between the two events
	}{
		{name: "released, then the claim's node fails"},
		{name: "released, restored, then the claim's node fails", restore: true},
		{name: "the claim's node fails, then released", releaseLast: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := preemptOps(t, 1, 0)
			f, v := pinnedJob(c, "f", 0, 1, 4*time.Hour), pinnedJob(c, "v", 4, 8, 4*time.Hour)
			v.Preemption = preempt.Requeue
			require.NoError(t, e.Submit(f, epoch))
			require.NoError(t, e.Submit(v, epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 2)
			u := Job{ID: "u", Account: "a", Gang: member(placement.NodesOf(6, 8)), TimeLimit: time.Hour, Class: 1}
			require.NoError(t, e.Submit(u, epoch.Add(20*time.Minute)))
			p := startAll(t, e, epoch.Add(20*time.Minute))
			require.Len(t, p.Preemptions, 1)
			require.Len(t, e.book.claims, 1)
			var down topology.NodeID = -1 // a claimed node of leaf 0, where v never ran
			for pod := range e.book.claims[0].alloc.Pods() {
				if pod.Node < 4 && down < 0 {
					down = pod.Node
				}
			}
			require.GreaterOrEqual(t, int(down), 1)

			release := func(at time.Time) { require.NoError(t, e.Preempted("v", at)) }
			fail := func(at time.Time) {
				_, err := e.NodeDown(down, at)
				require.NoError(t, err)
			}
			first, second := release, fail
			if tc.releaseLast {
				first, second = fail, release
			}
			first(epoch.Add(22 * time.Minute))
			if tc.restore {
				e = roundTrip(t, e)
			}
			second(epoch.Add(23 * time.Minute))
			p = startAll(t, e, epoch.Add(24*time.Minute))
			require.Len(t, p.Starts, 1, p.Describe(c, epoch))
			require.Equal(t, "u", p.Starts[0].Job, p.Describe(c, epoch))
			w := waitingOf(p, "v")
			require.NotNil(t, w)
			require.Equal(t, WaitPriority, w.Code)
			require.Equal(t, "u", w.Blocker)
		})
	}
}

// TestRepeatedCallsChangeNothing: a host that repeats a call in the
// middle of a preemption or after an elastic job shrank gets the error
// the doc names, and the engine is as it was (its snapshot unchanged).
// u (class 1) preempts v and claims its nodes; e (elastic, min 2 of 4
// pods, Shrink) lost a pod to a failure of node 0.
func TestRepeatedCallsChangeNothing(t *testing.T) {
	setup := func(t *testing.T) *Engine {
		c, e := preemptOps(t, DefaultDepth, 0)
		el := pinnedJob(c, "e", 0, 4, 4*time.Hour)
		el.Gang.Members[0].Min, el.OnNodeFailure = 2, Shrink
		v := pinnedJob(c, "v", 4, 8, 4*time.Hour)
		v.Preemption = preempt.Requeue
		require.NoError(t, e.Submit(el, epoch))
		require.NoError(t, e.Submit(v, epoch))
		require.Len(t, startAll(t, e, epoch).Starts, 2)
		evs, err := e.NodeDown(0, epoch.Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, []NodeEvent{{Job: "e", Shrunk: true}}, evs)
		u := Job{ID: "u", Account: "a", Gang: member(placement.NodesOf(4, 8)), TimeLimit: time.Hour, Class: 1}
		require.NoError(t, e.Submit(u, epoch.Add(20*time.Minute)))
		p := startAll(t, e, epoch.Add(20*time.Minute))
		require.Len(t, p.Preemptions, 1)
		require.Equal(t, "v", p.Preemptions[0].Victim)
		return e
	}
	at := epoch.Add(22 * time.Minute)
	for _, tc := range []struct {
		name  string
		first func(e *Engine) error // applied once and accepted
		again func(e *Engine) error // the repeat, refused
		want  error
	}{
		{"Preempted twice",
			func(e *Engine) error { return e.Preempted("v", at) },
			func(e *Engine) error { return e.Preempted("v", at) }, ErrTransition},
		{"Started twice for the preemptor",
			func(e *Engine) error {
				if err := e.Preempted("v", at); err != nil {
					return err
				}
				p, err := e.Schedule(at)
				if err != nil || len(p.Starts) != 1 || p.Starts[0].Job != "u" {
					return fmt.Errorf("u should start: %v %v", p, err)
				}
				return e.Started("u", at)
			},
			func(e *Engine) error { return e.Started("u", at) }, ErrTransition},
		{"Started for the preemptor still waiting for its victim",
			func(e *Engine) error { return nil },
			func(e *Engine) error { return e.Started("u", at) }, ErrTransition},
		{"Started for the victim",
			func(e *Engine) error { return nil },
			func(e *Engine) error { return e.Started("v", at) }, ErrTransition},
		{"NodeDown twice under the shrunk job",
			func(e *Engine) error { return nil },
			func(e *Engine) error { _, err := e.NodeDown(0, at); return err }, ErrTransition},
		{"ReleasePod of the shrunk job at its minimum",
			func(e *Engine) error { return e.ReleasePod("e", "m", 0, at) },
			func(e *Engine) error { return e.ReleasePod("e", "m", 0, at) }, gang.ErrBelowMin},
		{"ReplacePod of the victim",
			func(e *Engine) error { return nil },
			func(e *Engine) error { _, err := e.ReplacePod("v", "m", 0, at); return err }, ErrTransition},
		{"Cancel twice for the preemptor",
			func(e *Engine) error { return e.Cancel("u", at) },
			func(e *Engine) error { return e.Cancel("u", at) }, ErrTransition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			require.NoError(t, tc.first(e))
			before := e.Snapshot()
			err := tc.again(e)
			require.ErrorIs(t, err, tc.want)
			require.Empty(t, cmp.Diff(before, e.Snapshot()), "a refused call changed the engine")
		})
	}
}
