package backfill

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestRestateVisitedGap drives restateVisited over a walk order that the
// queue kept in submit order left with a gap (fifo.go): the position of
// job x, cancelled and submitted again under the same ID (a new record,
// appended after every waiting job), or requeued with its submit time
// after every waiting job (the same record, at a new position). The
// public calls build the order (Cancel then Submit, or Failed with
// requeue, then Schedule); the walk passes over the gap (its record left
// the queue, or waits at another position), and restateVisited must too:
// read as a live job, the gap took x's entry in the plan, and the claim's
// move of x's reservation was left out of the plan (every reason listed)
// or listed x twice (only changed reasons).
func TestRestateVisitedGap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes bool
		requeue bool // x requeued, not cancelled and submitted again
	}{
		{"resubmitted, all waits", false, false},
		{"resubmitted, only changed waits", true, false},
		{"requeued, all waits", false, true},
		{"requeued, only changed waits", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, e, must := fullEngine(t, func(c *Config) {
				c.FairShare.Weights = fairshare.Weights{Age: 1000}
				c.OnlyChangedWaits, c.Hold.Enabled = tc.changes, false
			})
			one := func(id string, limit time.Duration) Job {
				return Job{ID: id, Account: "a", TimeLimit: limit, Gang: member(placement.NodesOf(2, 8))}
			}
			at := func(m int) time.Time { return epoch.Add(time.Duration(m) * time.Minute) }
			if tc.requeue {
				// filler takes seven of the nodes big leaves; w waits for
				// two; x runs on the eighth, fails and is requeued with
				// its submit time, after w's, and its node goes down.
				must(e.Finished("big", at(1)))
				must(e.Submit(Job{ID: "filler", Account: "a", TimeLimit: time.Hour,
					Gang: member(placement.NodesOf(7, 8))}, at(1)))
				scheduleStarted(t, e, at(1))
				must(e.Submit(Job{ID: "w", Account: "a", TimeLimit: time.Hour,
					Gang: member(placement.NodesOf(2, 8))}, at(2)))
				must(e.Submit(Job{ID: "x", Account: "a", TimeLimit: 30 * time.Minute,
					Gang: member(placement.NodesOf(1, 8))}, at(3)))
				scheduleStarted(t, e, at(3))
				if st := e.jobs.byID["x"].phase; !st.Active() {
					t.Fatalf("x is %v; the scene needs it running", st)
				}
				must(e.Failed("x", at(4), true))
				for n := range topology.NodeID(e.c.NumNodes()) {
					if e.ledger.State().FreeCount(n) > 0 {
						if _, err := e.NodeDown(n, at(4)); err != nil {
							t.Fatal(err)
						}
					}
				}
			} else {
				must(e.Submit(one("w", time.Hour), at(1)))
				must(e.Submit(one("x", time.Hour), at(2)))
				scheduleStarted(t, e, at(3))
				must(e.Cancel("x", at(4)))
				// Submitted again once the engine forgot the cancelled
				// one (KeepEnded).
				must(e.Submit(one("x", time.Hour), at(10)))
			}
			must(e.Submit(one("p", 2*time.Hour), at(11)))
			p := scheduleStarted(t, e, at(11))
			c := &e.cyc
			order := e.order[c.base:]
			x := e.jobs.byID["x"]
			ids := make([]string, len(order))
			for i, j := range order {
				ids[i] = j.job.ID
			}
			// The order has x's old position before its new one.
			if !c.fifo || fmt.Sprint(ids) != "[w x x p]" || order[2] != x || x.pos != c.base+2 {
				t.Fatalf("scene changed: order %v (fifo %v)", ids, c.fifo)
			}
			if x.resv == nil || x.wait.Code != WaitReserved {
				t.Fatalf("scene changed: x waits %+v", x.wait)
			}
			// A claim of p (the job under test, last) moves x's
			// reservation 30 minutes later.
			var plan Plan
			plan.Time, plan.Unchanged = p.Time, p.Unchanged
			for _, w := range p.Waiting {
				if w.Job != "p" || !tc.changes {
					plan.Waiting = append(plan.Waiting, w) // under test: its own reason last (full plans)
				}
			}
			if tc.changes && !slices.ContainsFunc(plan.Waiting, func(w Waiting) bool { return w.Job == "x" }) {
				t.Fatalf("scene changed: x not listed in %+v", p.Waiting)
			}
			x.resv.start = x.resv.start.Add(30 * time.Minute)
			want, unchanged := x.resv.start, plan.Unchanged
			c.e, c.now, c.plan, c.walking = e, p.Time, &plan, true
			c.walkOrder, c.walkRank = order, 3
			c.restateVisited([]*reservation{x.resv})
			c.walking, c.walkOrder = false, nil

			if !x.wait.Until.Equal(want) {
				t.Errorf("x recorded until %v; want %v", x.wait.Until, want)
			}
			n := 0
			for _, w := range plan.Waiting {
				if w.Job != "x" {
					continue
				}
				n++
				if !w.Until.Equal(want) {
					t.Errorf("plan lists x until %v; want %v", w.Until, want)
				}
			}
			if n != 1 || plan.Unchanged != unchanged {
				t.Errorf("plan lists x %d times, %d unchanged; want once, %d unchanged: %+v", n, plan.Unchanged, unchanged, plan.Waiting)
			}
		})
	}
}
