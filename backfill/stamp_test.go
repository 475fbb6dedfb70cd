package backfill

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestSkippedTests drives a queue through every input of a skipped test
// (cycle.skipTest). Cycles with nothing but submissions skip the tests of
// the jobs that waited before, each stamp checked by running its test
// anyway (checkEach); a job whose window comes to overlap a reservation as
// time passes, a node going down and a finished job each make the jobs
// they touch tested again, with their new reasons listed.
func TestSkippedTests(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.OnlyChangedWaits, cfg.Hold.Enabled, cfg.ReservationDepth = true, false, 1
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	if err != nil {
		t.Fatal(err)
	}
	e.checkEach = true
	now := epoch
	submit := func(id string, nodes int, limit time.Duration) {
		t.Helper()
		j := Job{ID: id, Account: "a", TimeLimit: limit,
			Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(nodes, 8)}}}}
		if err := e.Submit(j, now); err != nil {
			t.Fatal(err)
		}
	}
	// schedule runs a cycle and returns the reasons it lists, by job, and
	// the tests it skipped.
	schedule := func() (map[string]string, int) {
		t.Helper()
		before := e.cyc.skippedTests
		p, err := e.Schedule(now)
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]string{}
		for _, w := range p.Waiting {
			listed[w.Job] = w.Reason.String()
		}
		for _, s := range p.Starts {
			if err := e.Started(s.Job, now); err != nil {
				t.Fatal(err)
			}
		}
		return listed, e.cyc.skippedTests - before
	}
	// r1 runs on 2 of the 4 nodes for 10 hours; big, the whole cluster,
	// has the one reservation, at r1's end. w waits for 3 nodes for 9
	// hours: until an hour from now its window ends before big's
	// reservation starts, so that reservation does not block it.
	submit("r1", 2, 10*time.Hour)
	schedule()
	submit("big", 4, time.Hour)
	submit("w", 3, 9*time.Hour)
	listed, _ := schedule()
	if got := listed["w"]; !strings.Contains(got, "the cluster has 2") {
		t.Fatalf("w is told %q, want the 2 free nodes", got)
	}
	t.Run("quiet cycles skip", func(t *testing.T) {
		for i := range 5 {
			now = now.Add(10 * time.Minute)
			submit(fmt.Sprintf("x%d", i), 3, 20*time.Hour)
			listed, skipped := schedule()
			// w and the x jobs before this one; big, reserved, is
			// always tested.
			if skipped != i+1 {
				t.Fatalf("cycle %d skipped %d tests, want %d", i, skipped, i+1)
			}
			if _, ok := listed["w"]; ok || len(listed) != 1 {
				t.Fatalf("cycle %d listed %v, want only the new job", i, listed)
			}
		}
	})
	t.Run("window reaches a reservation", func(t *testing.T) {
		now = epoch.Add(time.Hour + time.Minute)
		listed, skipped := schedule()
		if got := listed["w"]; !strings.Contains(got, "the cluster has 0") {
			t.Fatalf("w is told %q, want no free node outside big's reservation", got)
		}
		if skipped != 5 {
			t.Fatalf("skipped %d tests, want the 5 x jobs'", skipped)
		}
	})
	t.Run("node down", func(t *testing.T) {
		now = now.Add(time.Minute)
		if _, err := e.NodeDown(3, now); err != nil {
			t.Fatal(err)
		}
		listed, skipped := schedule()
		if skipped != 0 || len(listed) == 0 {
			t.Fatalf("after a node went down: %d tests skipped, %v listed", skipped, listed)
		}
	})
	t.Run("job finished", func(t *testing.T) {
		now = now.Add(time.Minute)
		schedule() // stamps again
		now = now.Add(time.Minute)
		if err := e.Finished("r1", now); err != nil {
			t.Fatal(err)
		}
		if _, skipped := schedule(); skipped != 0 {
			t.Fatalf("after a job finished: %d tests skipped", skipped)
		}
	})
}

// TestSkippedTestsLentPods: under preemption, a growing job lends pods to
// higher classes from the first cycle after its start on, while it is
// still starting (not confirmed): a change that time alone makes, which
// the stamps do not record. A higher-class job that failed in the cycle
// that started the lender must be tested again, and start on the lent
// pods, as it does when the plan lists every reason (found by review:
// it waited, stamped, until the lender's start was confirmed).
func TestSkippedTestsLentPods(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, changes := range []bool{false, true} {
		t.Run(fmt.Sprintf("changes=%v", changes), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.OnlyChangedWaits, cfg.Hold.Enabled, cfg.ReservationDepth = changes, false, 0
			cfg.Preemption = PreemptionConfig{Enabled: true}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			e.checkEach = true
			now := epoch
			lender := Job{ID: "l", Account: "a", TimeLimit: 10 * time.Hour, Grow: true, Submit: now.Add(-time.Hour),
				Gang: gang.Spec{Members: []gang.Member{{Name: "m", Min: 1, Request: placement.NodesOf(4, 8)}}}}
			j := Job{ID: "j", Account: "a", TimeLimit: time.Hour, Class: 1, Submit: now,
				Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(1, 8)}}}}
			for _, job := range []Job{lender, j} {
				if err := e.Submit(job, now); err != nil {
					t.Fatal(err)
				}
			}
			started := map[string]int{}
			for cycle := range 3 {
				p, err := e.Schedule(now)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range p.Starts {
					started[s.Job] = cycle
				}
				now = now.Add(time.Minute) // the lender is never confirmed
			}
			if at, ok := started["j"]; !ok || at != 1 || started["l"] != 0 {
				t.Fatalf("starts by cycle %v, want l in cycle 0 and j on its lent pods in cycle 1", started)
			}
		})
	}
}
