package backfill

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestPreemptDrainReleaseYields: a drain drops preemptor u's claim while
// its victim b releases its GPUs, and the host reports b released before
// the next cycle, so that no claim keeps the GPUs b left. b, requeued,
// outranks u (older, same account); without the yield it restarted on
// them and u preempted c (or, with c protected, waited to preempt b
// again once its start was confirmed). With it, the next cycle passes b over while u waits
// without a claim, u starts on b's GPUs, and the cycle after (at once)
// tests b as any job (it may start elsewhere, off l0). Every way the host can end b's preemption with a
// requeue yields; a preemptor that no longer waits takes no yield.
func TestPreemptDrainReleaseYields(t *testing.T) {
	min := func(m int) time.Time { return epoch.Add(time.Duration(m) * time.Minute) }
	cases := []struct {
		name string
		// release ends b's preemption between the drain and the next
		// cycle, returning the engine to go on with.
		release func(t *testing.T, e *Engine) *Engine
		protect bool // c cannot be preempted
		// yields: b waits for u and u starts on l0; otherwise b starts.
		yields bool
	}{
		{name: "preempted", release: func(t *testing.T, e *Engine) *Engine {
			mustOK(t, e.Preempted("b", min(13)))
			return e
		}, yields: true},
		{name: "preempted, c protected", protect: true, release: func(t *testing.T, e *Engine) *Engine {
			mustOK(t, e.Preempted("b", min(13)))
			return e
		}, yields: true},
		{name: "failed with requeue", release: func(t *testing.T, e *Engine) *Engine {
			mustOK(t, e.Failed("b", min(13), true))
			return e
		}, yields: true},
		{name: "node failure", release: func(t *testing.T, e *Engine) *Engine {
			n, _ := e.c.LookupNode("l0-0")
			if _, err := e.NodeDown(n, min(13)); err != nil {
				t.Fatal(err)
			}
			return e
		}, yields: true},
		{name: "snapshot between", release: func(t *testing.T, e *Engine) *Engine {
			mustOK(t, e.Preempted("b", min(13)))
			return roundTrip(t, e)
		}, yields: true},
		{name: "preemptor cancelled", release: func(t *testing.T, e *Engine) *Engine {
			mustOK(t, e.Preempted("b", min(13)))
			mustOK(t, e.Cancel("u", min(13)))
			return e
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := yieldEngine(t, tc.protect)
			e = tc.release(t, e)
			e.checkEach = true
			check := func() {
				t.Helper()
				if err := e.check(); err != nil {
					t.Fatalf("invariant broken: %v", err)
				}
			}
			check()
			plan, err := e.Schedule(min(13))
			if err != nil {
				t.Fatal(err)
			}
			check()
			starts := map[string]bool{}
			for _, s := range plan.Starts {
				starts[s.Job] = true
			}
			if len(plan.Preemptions) > 0 {
				t.Errorf("the cycle after b's release preempts %s for %s", plan.Preemptions[0].Victim, plan.Preemptions[0].Preemptor)
			}
			if !tc.yields {
				if !starts["b"] {
					t.Fatalf("b yields to a preemptor that no longer waits: starts %v, waiting %+v", plan.Starts, plan.Waiting)
				}
				return
			}
			if starts["b"] || !starts["u"] {
				t.Fatalf("b started on the GPUs it left for u, or u did not: starts %v, waiting %+v", plan.Starts, plan.Waiting)
			}
			if w := e.jobs.byID["b"].wait; w.Code != WaitPriority || w.Blocker != "u" || w.Detail != yieldDetail {
				t.Errorf("b waits with %+v, not for u", w)
			}
			if next, ok := e.NextEvent(); !ok || next.After(min(13).Add(time.Second)) {
				t.Errorf("next event %v, %t: b is tested again at once", next, ok)
			}
			mustOK(t, e.Started("u", min(13)))
			check()
			plan, err = e.Schedule(min(13))
			if err != nil {
				t.Fatal(err)
			}
			check()
			if len(plan.Preemptions) > 0 {
				t.Errorf("the cycle after preempts %v; u runs on the GPUs b left", plan.Preemptions)
			}
			if b := e.jobs.byID["b"]; b.wait.Code == WaitPriority || b.yieldTo != nil {
				t.Errorf("b still yields at the cycle after: %+v", b.wait)
			}
		})
	}
}

// yieldEngine returns an engine on two leaves of six 8-GPU nodes at
// t+11m: b (3 nodes, requeue) and c (4 nodes in one leaf; cancel, or
// never when protect) started at t+0; u (class 1, 4 nodes in one leaf)
// preempted b at t+10m for a claim on l0, and an idle node of the claim
// was drained at t+11m, which dropped it: b preempts for u without a
// claim. Released, b leaves l0 five nodes: room for u, or for b and not
// u.
func yieldEngine(t *testing.T, protect bool) *Engine {
	t.Helper()
	c, err := testcluster.Parse([]string{"leaf"}, "", "l0 6\nl1 6\n")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.FairShare.Weights = fairshare.Weights{Age: 1000, FairShare: 1000}
	cfg.FairShare.MaxAge = 24 * time.Hour
	cfg.Hold.Enabled = false
	cfg.ReservationDepth = 1
	cfg.Preemption.Enabled, cfg.Preemption.ExemptTime, cfg.Preemption.Grace = true, 0, 5*time.Minute
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	if err != nil {
		t.Fatal(err)
	}
	e.checkEach = true
	leaf := placement.NodesOf(4, 8)
	leaf.Required = "leaf"
	cPolicy := preempt.Cancel
	if protect {
		cPolicy = preempt.Never
	}
	mustOK(t, e.Submit(Job{ID: "b", Account: "a", Preemption: preempt.Requeue, Gang: member(placement.NodesOf(3, 8))}, epoch))
	mustOK(t, e.Submit(Job{ID: "c", Account: "a", Preemption: cPolicy, Gang: member(leaf)}, epoch))
	if _, err := e.Schedule(epoch); err != nil {
		t.Fatal(err)
	}
	mustOK(t, e.Started("b", epoch))
	mustOK(t, e.Started("c", epoch))
	at := epoch.Add(10 * time.Minute)
	mustOK(t, e.Submit(Job{ID: "u", Account: "a", Class: 1, Gang: member(leaf)}, at))
	plan, err := e.Schedule(at)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Preemptions) != 1 || plan.Preemptions[0].Victim != "b" {
		t.Fatalf("u preempts %+v, not b", plan.Preemptions)
	}
	// Drain an idle node of u's claim (not one of b's).
	drain := topology.NodeID(-1)
	for _, m := range e.jobs.byID["u"].claim.alloc.Members {
		for _, x := range m.Assignment {
			if drain < 0 && e.jobs.owner(int(x.Node), 0) == nil {
				drain = x.Node
			}
		}
	}
	if drain < 0 {
		t.Fatal("u's claim has no idle node")
	}
	mustOK(t, e.Drain(drain, epoch.Add(11*time.Minute)))
	if u := e.jobs.byID["u"]; u.claim != nil || !u.orphans {
		t.Fatalf("the drain left u's claim (%v), or b not preempting without one (%t)", u.claim != nil, u.orphans)
	}
	if _, err := json.Marshal(e.Snapshot()); err != nil {
		t.Fatal(err)
	}
	return e
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
