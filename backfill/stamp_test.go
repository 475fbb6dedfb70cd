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

// TestQuietWalk: in cycles driven by submissions alone, the walk passes
// over the jobs whose stamps hold without reading their records
// (cycle.quietWalk), and its plans are those of an engine that walks
// every job and checks each predicted skip (checkEach). A job cancelled
// between cycles, a stamp that expires as time passes, and a submission
// that lets hold mode hold (the first job without a time limit) each make
// the walk go through every job again.
func TestQuietWalk(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.OnlyChangedWaits, cfg.ReservationDepth = true, 1
	cfg.Hold.MinGPUs = 24
	var engines [2]*Engine // passing over quiet jobs, and checking each
	for i := range engines {
		if engines[i], err = New(c, cfg, flatTree(t, cfg.FairShare, "a", "b")); err != nil {
			t.Fatal(err)
		}
	}
	fast, checked := engines[0], engines[1]
	checked.checkEach = true
	now := epoch
	submit := func(id string, nodes int, limit time.Duration) {
		t.Helper()
		acct := "a"
		if len(id)%2 == 0 {
			acct = "b"
		}
		j := Job{ID: id, Account: acct, TimeLimit: limit, Submit: now,
			Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(nodes, 8)}}}}
		for _, e := range engines {
			if err := e.Submit(j, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	// schedule runs a cycle on both engines, checks that their plans
	// agree, and returns the jobs the fast one passed over.
	schedule := func() int {
		t.Helper()
		before := fast.cyc.quietSkips
		var plans [2]string
		for i, e := range engines {
			plans[i] = fmt.Sprintf("%+v", *scheduleStarted(t, e, now))
		}
		if plans[0] != plans[1] {
			t.Fatalf("at %v the plans differ:\n%s\n%s", now.Sub(epoch), plans[0], plans[1])
		}
		if checked.cyc.quietSkips != 0 {
			t.Fatalf("the checking engine passed over %d jobs", checked.cyc.quietSkips)
		}
		return fast.cyc.quietSkips - before
	}
	submit("r1", 2, 10*time.Hour)
	schedule()
	for i := range 12 {
		submit(fmt.Sprintf("w%d", i), 3, time.Duration(2+i)*time.Hour)
	}
	schedule()
	schedule() // the kept ranking and the marks, in a cycle where nothing changed
	if !fast.kr.on {
		t.Fatal("the ranking is not kept: nothing to mark")
	}
	t.Run("submissions", func(t *testing.T) {
		// (The first cycles may rank the queue whole, as the accounts'
		// usage moves: their keys are new, and unmarked.)
		n := 0
		for i := range 4 {
			now = now.Add(time.Minute)
			submit(fmt.Sprintf("x%d", i), 3, 20*time.Hour)
			n = schedule()
		}
		// Every waiting job but the reserved one and the one just
		// submitted: 12 w jobs and 4 x jobs, less 2.
		if n != 14 {
			t.Fatalf("%d jobs passed over in the last cycle of submissions, want 14", n)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		now = now.Add(time.Minute)
		for _, e := range engines {
			if err := e.Cancel("w5", now); err != nil {
				t.Fatal(err)
			}
		}
		if n := schedule(); n != 0 {
			t.Fatalf("after a cancel %d jobs passed over", n)
		}
		now = now.Add(time.Minute)
		if n := schedule(); n == 0 {
			t.Fatal("the cycle after passed over none")
		}
	})
	t.Run("a start in a quiet walk", func(t *testing.T) {
		// s13, of account a (which uses nothing, so its jobs rank above
		// b's), fits on a free node and ends before the reservation: it
		// starts in the middle of a walk that passes over quiet jobs,
		// and b's jobs after it are told the one free node left.
		now = now.Add(time.Minute)
		submit("s13", 1, time.Hour)
		n := schedule()
		if st, _ := fast.Job("s13"); st.State != StateRunning {
			t.Fatalf("s13 is %v, want running", st.State)
		}
		if n != 2 {
			t.Fatalf("%d jobs passed over, want the 2 ranked before s13 (w11 and w10, of account a)", n)
		}
	})
	t.Run("stamps expire", func(t *testing.T) {
		// w7 (9 hours) is stamped until its window reaches w0's
		// reservation, at r1's end (10h): at 1h. Cycles every 10 minutes
		// with nothing else changing pass over it until then, the first
		// one after goes through every job (w7 is told of the
		// reservation), and the next ones pass over them all again. (The
		// first cycle tests w11 and w10 again: their stamps are from
		// before s13 started.)
		var passed []int
		for now.Before(epoch.Add(90 * time.Minute)) {
			now = now.Add(10 * time.Minute)
			passed = append(passed, schedule())
		}
		if got := fmt.Sprint(passed); got != "[12 14 14 14 14 0 14 14 14]" {
			t.Fatalf("passed over %s in the cycles from %v, want [12 14 14 14 14 0 14 14 14]", got, now.Add(-80*time.Minute).Sub(epoch))
		}
	})
	t.Run("hold mode", func(t *testing.T) {
		// A job without a limit starts beside the reservation: hold mode
		// may hold from now on, and every waiting job is large enough
		// for a hold (Hold.MinGPUs 24), so none is cacheable, and none
		// is passed over.
		now = now.Add(time.Minute)
		submit("u", 1, 0)
		schedule()
		if st, _ := fast.Job("u"); st.State != StateRunning {
			t.Fatalf("u is %v, want running", st.State)
		}
		for range 3 {
			now = now.Add(time.Minute)
			if n := schedule(); n != 0 {
				t.Fatalf("with hold mode in play %d jobs passed over", n)
			}
		}
	})
}

// scheduleStarted runs a cycle of e at now and confirms every start it
// plans at once.
func scheduleStarted(t testing.TB, e *Engine, now time.Time) *Plan {
	t.Helper()
	p, err := e.Schedule(now)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Starts {
		if err := e.Started(s.Job, now); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
