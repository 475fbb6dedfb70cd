package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// ownerRow is what one node of runsForGoodScene holds, besides the wall.
type ownerRow int

const (
	rowFree             ownerRow = iota // nothing
	rowLimit                            // a running job with a limit
	rowUnlimited                        // a running job without a limit
	rowStarting                         // a job without a limit, started, not confirmed
	rowElastic                          // an elastic job without a limit (Grow)
	rowPreempting                       // a job without a limit being preempted
	rowPreemptingLimit                  // a job with a limit being preempted
	rowHeld                             // free, in the target of another gang's hold
	rowOwnHold                          // free, in the target of the missing job's own hold
	rowDrainedUnlimited                 // a job without a limit on a drained node
)

// runsForGoodScene builds, on opsCluster (8 nodes of 8 GPUs), a wall of
// one job without a limit that may not be preempted on 7 nodes, and on
// the eighth (returned) what row says. A preempted job is preempted by
// q, of a higher class, for that node: q's claim keeps it. Job a (one
// node, class 0: it may not preempt) waits; it is the missing job of the
// callers' tests. The engine is left at the returned time.
func runsForGoodScene(t *testing.T, row ownerRow) (*Engine, topology.NodeID, *jobRec, time.Time) {
	t.Helper()
	_, e, must := fullEngine(t, func(c *Config) {
		c.Hold.Enabled = true
		c.Preemption.Enabled, c.Preemption.ExemptTime = true, 0
	})
	must(e.Finished("big", epoch.Add(time.Minute)))
	now := epoch.Add(2 * time.Minute)
	must(e.Submit(Job{ID: "w", Account: "a", Gang: member(placement.NodesOf(7, 8))}, now))
	scheduleStarted(t, e, now)
	var node topology.NodeID = -1
	for i := range e.c.NumNodes() {
		if e.jobs.owner(i, 0) == nil {
			node = topology.NodeID(i)
		}
	}
	if node < 0 || e.ledger.State().FreeCount(node) != 8 {
		t.Fatalf("scene changed: no free node beside the wall")
	}
	r := Job{ID: "r", Account: "a", Gang: member(placement.NodesOf(1, 8))}
	switch row {
	case rowLimit, rowPreemptingLimit:
		r.TimeLimit = 10 * time.Hour
	case rowElastic:
		r.Grow = true
		r.Gang = gang.Spec{Members: []gang.Member{{Name: "m", Min: 1, Request: placement.NodesOf(1, 8)}}}
	}
	if row == rowPreempting || row == rowPreemptingLimit {
		r.Preemption = preempt.Requeue
	}
	now = now.Add(time.Minute)
	if row != rowFree && row != rowHeld && row != rowOwnHold {
		must(e.Submit(r, now))
		if row == rowStarting {
			if _, err := e.Schedule(now); err != nil {
				t.Fatal(err)
			}
		} else {
			scheduleStarted(t, e, now)
		}
		if o := e.jobs.owner(int(node), 0); o == nil || o.job.ID != "r" {
			t.Fatalf("scene changed: r not on node %d", node)
		}
	}
	switch row {
	case rowPreempting, rowPreemptingLimit:
		now = now.Add(time.Minute)
		must(e.Submit(Job{ID: "q", Account: "b", Class: 1, Gang: member(placement.NodesOf(1, 8))}, now))
		p := scheduleStarted(t, e, now)
		if len(p.Preemptions) != 1 || p.Preemptions[0].Victim != "r" || e.jobs.byID["r"].phase != StatePreempting {
			t.Fatalf("scene changed: preemptions %v", p.Preemptions)
		}
	case rowDrainedUnlimited:
		must(e.Drain(node, now))
	}
	now = now.Add(time.Minute)
	for _, id := range []string{"a", "h"} {
		must(e.Submit(Job{ID: id, Account: "b", Gang: member(placement.NodesOf(1, 8))}, now))
	}
	a := e.jobs.byID["a"]
	switch row {
	case rowHeld, rowOwnHold:
		keeper := e.jobs.byID["h"]
		if row == rowOwnHold {
			keeper = a
		}
		e.book.addHold(&hold{job: keeper, since: now, target: nodeAlloc(node)})
	}
	return e, node, a, now
}

// nodeAlloc is an allocation of every GPU of node n (8).
func nodeAlloc(n topology.NodeID) gang.Allocation {
	return gang.Allocation{Members: []gang.MemberAllocation{{Name: "m", Pods: 1,
		Assignment: []topology.NodeAlloc{{Node: n, GPUs: 0xff}}}}}
}

// TestRunsForGoodCallers pins, per owner of a node's GPUs, the answers
// of the two callers of runsForGood, the one rule for "a job runs on
// these GPUs for good as far as a search at the cycle's time can tell":
// runsPast (with no time bound: may a hold let go of that node be
// skipped, its GPUs no freer for a search than held) and missRoom (may
// a search that missed ever find that node's 8 GPUs open). Both read a
// job being preempted without a limit as running for good: no end in the
// profile frees it, no victim search takes it, and its preemptor's
// claim keeps its GPUs from every search until the host reports them
// released (an event). Before, missRoom alone counted them as open
// (runsForGood left StatePreempting out) and asked for cycles at once
// that changed nothing (TestHoldLetGoMissPreemptingRoom). A GPU free
// but in another gang's hold target is no room unless the hold is the
// missing job's own; a drained node is never room, and runsPast does
// not skip it.
func TestRunsForGoodCallers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		row      ownerRow
		runsPast bool // runsPast(node, zero time)
		room     bool // missRoom counts the node's GPUs open
	}{
		{"no owner", rowFree, false, true},
		{"running with a limit", rowLimit, false, true},
		{"running without a limit", rowUnlimited, true, false},
		{"starting without a limit", rowStarting, true, false},
		{"elastic without a limit", rowElastic, true, false},
		{"preempting without a limit", rowPreempting, true, false},
		{"preempting with a limit", rowPreemptingLimit, false, true},
		{"in another gang's hold target", rowHeld, false, false},
		{"in the missing job's own hold target", rowOwnHold, false, true},
		{"without a limit on a drained node", rowDrainedUnlimited, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, node, a, now := runsForGoodScene(t, tc.row)
			c := &e.cyc
			c.e, c.now = e, now
			target := nodeAlloc(node)
			if got := c.runsPast(&target, time.Time{}); got != tc.runsPast {
				t.Errorf("runsPast(node %d) = %v; want %v", node, got, tc.runsPast)
			}
			c.holdMiss, c.holdMissMany, c.holdMissPreempts = a, false, false
			for _, need := range []int{1, 8} {
				c.holdMissNeed = need
				if got := c.missRoom(); got != tc.room {
					t.Errorf("missRoom for a miss needing %d = %v; want %v", need, got, tc.room)
				}
			}
			c.holdMiss, c.holdMissNeed = nil, 0
		})
	}
}

// TestHoldLetGoMissPreemptingRoom: the decision the one rule changes. On
// opsCluster (8 nodes of 8 GPUs) a wall without a limit that may not be
// preempted runs on 5 nodes, l with a limit on one (the profile has a
// time ahead), r without a limit on one, preempted by q (class 1), whose
// claim keeps r's node; the eighth node is the target of h's hold. Job a
// (class 0: it may not preempt) needs 3 nodes and misses. When the walk
// lets go of h's hold, a search may find open h's node and l's (16 GPUs:
// a's miss asks for nothing, missRoom); before, missRoom counted r's
// node too (24) and asked for a cycle at once. That cycle changed
// nothing for a: its search, with h's hold let go, still finds no start
// (r's node stays claimed, and r has no end), as it would not until the
// host reports r released (Preempted), an event.
func TestHoldLetGoMissPreemptingRoom(t *testing.T) {
	_, e, must := fullEngine(t, func(c *Config) {
		c.Hold.Enabled = true
		c.Preemption.Enabled, c.Preemption.ExemptTime = true, 0
	})
	must(e.Finished("big", epoch.Add(time.Minute)))
	now := epoch.Add(2 * time.Minute)
	must(e.Submit(Job{ID: "w", Account: "a", Gang: member(placement.NodesOf(5, 8))}, now))
	must(e.Submit(Job{ID: "l", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, now))
	must(e.Submit(Job{ID: "r", Account: "a", Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, now))
	must(e.Submit(Job{ID: "x", Account: "a", Gang: member(placement.NodesOf(1, 8))}, now))
	if p := scheduleStarted(t, e, now); len(p.Starts) != 4 {
		t.Fatalf("scene changed: %d starts", len(p.Starts))
	}
	now = now.Add(time.Minute)
	must(e.Submit(Job{ID: "q", Account: "b", Class: 1, Gang: member(placement.NodesOf(1, 8))}, now))
	if p := scheduleStarted(t, e, now); len(p.Preemptions) != 1 || p.Preemptions[0].Victim != "r" {
		t.Fatalf("scene changed: preemptions %v", p.Preemptions)
	}
	free := topology.NodeID(e.jobs.byID["x"].alloc.Members[0].Assignment[0].Node)
	now = now.Add(time.Minute)
	must(e.Finished("x", now))
	for _, id := range []string{"a", "h", "b"} {
		gpus := 8
		if id == "a" {
			gpus = 24
		}
		must(e.Submit(Job{ID: id, Account: "b", Gang: member(placement.NodesOf(gpus/8, 8))}, now))
	}
	a, b := e.jobs.byID["a"], e.jobs.byID["b"]
	h := &hold{job: e.jobs.byID["h"], since: now, target: nodeAlloc(free)}
	e.book.addHold(h)
	if !e.profileAhead() {
		t.Fatal("scene changed: no time ahead in the profile")
	}
	if _, found := e.search(now, query{j: a, spec: &a.job.Gang}); found {
		t.Fatal("scene changed: a's search found a start")
	}
	c := &e.cyc
	c.e, c.now, c.walking, c.reoffer, c.holdKept = e, now, true, false, false
	c.holdMiss, c.holdMissMany, c.holdMissNeed, c.holdMissPreempts = nil, false, 0, false
	c.initPreempt()
	c.readHoldsMissed(a, &a.job.Gang)
	if c.holdMiss != a || c.holdMissPreempts {
		t.Fatalf("a's miss not recorded as one that may not preempt (miss %v, preempts %v)", c.holdMiss != nil, c.holdMissPreempts)
	}
	c.walkOrder, c.walkRank = []*jobRec{a, b}, 1
	c.releaseHold(h)
	got := c.reoffer
	c.walking, c.walkOrder, c.reoffer, c.holdMiss = false, nil, false, nil
	if got {
		t.Errorf("cycle at once after h's hold let go; a's miss of 24 GPUs has 16 a search may find open (r's node is claimed)")
	}
	// Why none is right: with h's hold let go, a's search still finds none.
	if at, found := e.search(now, query{j: a, spec: &a.job.Gang}); found {
		t.Errorf("a's search finds a start at %v once h's hold is let go: the cycle at once was owed", at)
	}
}
