package backfill

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// reasonWatch checks every reason a plan lists against the plan itself,
// against the engine's record of it (Engine.Jobs), and, with
// Config.OnlyChangedWaits, against what the job was told before.
type reasonWatch struct {
	t      *testing.T
	e      *Engine
	before map[string]Waiting // each waiting job's recorded reason before the cycle
	// claimMoves counts the plans in which a claim moved a reservation
	// later (a move blamed on the claim's job, listed waiting for its
	// victims), quotaFirst those of them in which the walk had told a
	// job ranked above the claim's WaitQuota; checked the reasons read
	// against a reservation.
	claimMoves, quotaFirst, checked int
}

// snap records each waiting job's reason before a cycle.
func (rw *reasonWatch) snap() {
	rw.before = map[string]Waiting{}
	for _, s := range rw.e.Jobs() {
		if !s.State.Active() && !s.State.Ended() {
			rw.before[s.ID] = s.wait
		}
	}
}

// sameWait compares two reasons but for their job and priority.
func sameWait(a, b Waiting) bool {
	a.Job, a.Priority, b.Job, b.Priority = "", 0, "", 0
	return equalWaits(&a, &b)
}

// counting is the start of a quota reason that names a reservation
// counted against a job's start now (one refused a reservation for quota
// begins "at its planned start, ").
const counting = "counting the "

// check checks plan p.
func (rw *reasonWatch) check(p *Plan) {
	t, e := rw.t, rw.e
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("cycle at %v: %s", p.Time, fmt.Sprintf(format, args...))
	}
	rw.checked += checkWaitsAgree(t, e, p)
	resv := map[string]*Reservation{}
	for i := range p.Reservations {
		resv[p.Reservations[i].Job] = &p.Reservations[i]
	}
	rec := map[string]Waiting{}
	for _, s := range e.Jobs() {
		if !s.State.Active() && !s.State.Ended() {
			rec[s.ID] = s.wait
		}
	}
	preemptors := map[string]bool{}
	for _, x := range p.Preemptions {
		preemptors[x.Preemptor] = true
	}
	listed, quotaAbove := map[string]bool{}, false
	for _, w := range p.Waiting {
		if listed[w.Job] {
			fail("%s listed twice", w.Job)
		}
		listed[w.Job] = true
		if r, ok := rec[w.Job]; !ok {
			fail("%s listed %v, but it does not wait", w.Job, w.Code)
		} else if !sameWait(r, w) {
			fail("%s listed %+v, recorded %+v", w.Job, w, r)
		}
		if old, ok := rw.before[w.Job]; ok && e.cfg.OnlyChangedWaits && sameWait(old, w) {
			fail("%s listed as changed with the reason it was told before: %+v", w.Job, w)
		}
		limit := e.jobs.byID[w.Job].job.TimeLimit
		end := p.Time.Add(limit) // its run's end, were it to start now
		switch w.Code {
		case WaitReservation:
			// It would fit now but on GPUs reserved for Blocker: that
			// reservation starts before its run would end.
			if b, ok := resv[w.Blocker]; ok && limit > 0 {
				rw.checked++
				if !b.Start.Before(end) {
					fail("%s told %s's reservation from %v keeps it waiting; its run would end at %v", w.Job, w.Blocker, b.Start, end)
				}
			}
		case WaitQuota:
			quotaAbove = true
			by, ok := strings.CutPrefix(w.Detail, counting)
			if !ok || limit == 0 {
				break
			}
			// "counting the N GPUs reserved for job X, which plans to
			// run while this job would": X's reservation, while it
			// holds one, overlaps the job's run from now.
			var n int
			var x string
			if _, err := fmt.Sscanf(by, "%d GPUs reserved for job %s", &n, &x); err != nil {
				fail("%s's quota reason %q unread: %v", w.Job, w.Detail, err)
				break
			}
			if b, ok := resv[strings.TrimSuffix(x, ",")]; ok {
				rw.checked++
				if !b.Start.Before(end) {
					fail("%s told a reservation from %v runs while it would (to %v): %q", w.Job, b.Start, end, w.Detail)
				}
			}
		case WaitPreempting:
			moved := false
			for _, m := range p.Moves {
				moved = moved || m.By == w.Job && m.Cause == CauseLateStart
			}
			if moved && preemptors[w.Job] {
				rw.claimMoves++
				if quotaAbove {
					rw.quotaFirst++
				}
			}
		}
	}
	n := 0
	for id, r := range rec {
		if listed[id] {
			continue
		}
		n++
		if !e.cfg.OnlyChangedWaits {
			fail("%s waits (%+v), not listed", id, r)
			continue
		}
		if old, ok := rw.before[id]; !ok || !sameWait(old, r) {
			fail("%s counted unchanged, its reason %+v was %+v (waited %v)", id, r, old, ok)
		}
	}
	if e.cfg.OnlyChangedWaits && n != p.Unchanged {
		fail("%d waiting jobs not listed, %d counted unchanged", n, p.Unchanged)
	}
}

// TestClaimVisitedReasons checks every reason of every plan, listing
// every reason or only the changed ones (Config.OnlyChangedWaits), where
// claims move reservations later (clearClaim) after the walk has told
// jobs ranked above the claim's their reasons: against the plan (a
// reserved job at its reservation's start, a job waiting for a
// reservation, or for quota beside one it names, told of one that
// starts before its run from now would end), against the engine's record,
// and, listing only changes, that a job listed was told something else
// before and that Unchanged counts the others exactly.
//
// The replay of testdata/claim_clear_blame.json (six cycles) has a claim
// (j143's reclaim) move j129's and j78's reservations after the walk
// told twelve jobs ranked above j143 WaitQuota; in the last case j129
// and j78 were told, the cycle before, the reasons the claim brings them
// back to (the walk had moved their reservations earlier and listed
// them): they are not listed, their reasons unchanged. Workloads 881
// and 3857 of lateQuotaHost's late host under preemption (two of the
// four of its first 6,000 workloads whose claims move reservations in
// both listings: 881, 1218, 3857, 5008) run to their end. (The host
// cycles when NextEvent asks, and these workloads hold: the cycles at
// once hold mode asks for with jobs under limits (stop 67) moved the
// claims of 1494 and 3797, picked before, off reservations; 2748's
// claim was a reclaim that took the quota room of reservations of its
// queue and class, which reclaimTakesPromise now refuses.)
func TestClaimVisitedReasons(t *testing.T) {
	var claimMoves, quotaFirst int
	for _, tc := range []struct {
		name     string
		changes  bool
		workload int  // a random workload, or -1 for the replay
		toldBack bool // j129 and j78 told before what the replay's first plan tells them
	}{
		{"replay, all waits", false, -1, false},
		{"replay, only changed waits", true, -1, false},
		{"replay, only changed waits, told the starts moved back to", true, -1, true},
		{"workload 881, all waits", false, 881, false},
		{"workload 881, only changed waits", true, 881, false},
		{"workload 3857, all waits", false, 3857, false},
		{"workload 3857, only changed waits", true, 3857, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rw *reasonWatch
			if tc.workload >= 0 {
				rw = runReasonWorkload(t, tc.workload, tc.changes)
			} else {
				rw = runReasonReplay(t, tc.changes, tc.toldBack)
			}
			if rw.claimMoves == 0 || rw.checked == 0 {
				t.Errorf("too easy: %d plans with a claim moving reservations, %d reasons checked", rw.claimMoves, rw.checked)
			}
			claimMoves += rw.claimMoves
			quotaFirst += rw.quotaFirst
		})
	}
	if quotaFirst == 0 {
		t.Errorf("too easy: of %d plans with a claim moving reservations, none after a quota reason", claimMoves)
	}
}

// runReasonReplay runs six cycles of the replay under reasonWatch. With
// toldBack, j129 and j78 were told before the reasons the first cycle
// ends with (their reservations' starts after the claim moved them),
// and its plan does not list them.
func runReasonReplay(t *testing.T, changes, toldBack bool) *reasonWatch {
	told := map[string]Waiting{}
	if toldBack {
		e, in := claimClearReplay(t, changes)
		if _, err := e.Schedule(in.Snapshot.Time); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"j129", "j78"} {
			told[id] = e.jobs.byID[id].wait
		}
	}
	e, in := claimClearReplay(t, changes)
	for id, w := range told {
		j := e.jobs.byID[id]
		j.wait = w
		j.waitID = e.waitID(&j.wait, j)
	}
	rw := &reasonWatch{t: t, e: e}
	now := in.Snapshot.Time
	for cycle := range 6 {
		rw.snap()
		p, err := e.Schedule(now)
		if err != nil {
			t.Fatal(err)
		}
		rw.check(p)
		if cycle == 0 {
			for _, w := range p.Waiting {
				if _, ok := told[w.Job]; ok {
					t.Errorf("first plan lists %s with %+v, the reason it was told before", w.Job, w)
				}
			}
		}
		next, ok := e.NextEvent()
		if !ok {
			break
		}
		now = next
	}
	return rw
}

// runReasonWorkload drives random workload w with lateQuotaHost's late
// host, under reasonWatch.
func runReasonWorkload(t *testing.T, w int, changes bool) *reasonWatch {
	r := rand.New(rand.NewPCG(uint64(w), 29))
	e, jobs, _ := quotaEngineWith(t, r, w, true, func(c *Config) { c.OnlyChangedWaits = changes })
	for i := range jobs {
		if i%2 == 0 {
			jobs[i].TimeLimit = 0 // the host draws how long it runs
		}
	}
	h := newHost(t, e, jobs, uint64(w))
	h.quotaMoves = true
	h.release = func() time.Duration { return time.Duration(r.IntN(6)) * time.Minute }
	e.checkEach = true
	rw := &reasonWatch{t: t, e: e}
	h.beforeCycle, h.afterCycle = rw.snap, rw.check
	h.run()
	return rw
}

// TestRestateVisitedBackToTold drives restateVisited alone, after the
// replay's first cycle (j129's reservation moved to 20:44:47), listing
// only changed reasons: j129 was told, the cycle before, its reservation
// starts at 20:44:47; the walk moved it earlier to 20:39:47 and listed
// it, and the claim moves it back. Its reason is the one it was told:
// it is no longer listed, and counts unchanged. A job whose restated
// reason is new stays listed, with it.
func TestRestateVisitedBackToTold(t *testing.T) {
	walked := time.Date(2026, 12, 7, 20, 39, 47, 0, time.UTC)
	for _, tc := range []struct {
		name string
		told time.Duration // the start told before the cycle, from the walk's
		// listed: whether j129 is listed after the restate.
		listed bool
	}{
		{"back to the start told", 5 * time.Minute, false},
		{"a start not told", 3 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, in := claimClearReplay(t, true)
			p, err := e.Schedule(in.Snapshot.Time)
			if err != nil {
				t.Fatal(err)
			}
			res, cur := e.jobs.byID["j129"], e.jobs.byID["j101"]
			if res.resv == nil || !res.resv.start.Equal(walked.Add(5*time.Minute)) {
				t.Fatalf("replay changed: j129's reservation %+v", res.resv)
			}
			// The cycle before told j129 its start then; the walk
			// listed the one it planned before the claim.
			told := Waiting{Job: "j129", Code: WaitReserved, Until: walked.Add(tc.told)}
			res.wait = told
			res.waitID = e.waitID(&res.wait, nil)
			toldID := res.waitID
			w := Waiting{Job: "j129", Code: WaitReserved, Until: walked}
			res.toldID, res.waitID = res.waitID, e.waitID(&w, nil)
			res.wait = w
			plan := &Plan{Time: p.Time, Waiting: []Waiting{w}, Unchanged: 4}
			c := &e.cyc
			c.e, c.now, c.plan, c.walking = e, p.Time, plan, true
			c.walkOrder, c.walkRank = []*jobRec{res, cur}, 1
			c.restateVisited([]*reservation{res.resv})
			c.walking, c.walkOrder = false, nil

			want := res.resv.start
			if !res.wait.Until.Equal(want) {
				t.Errorf("j129 recorded until %v; want %v", res.wait.Until, want)
			}
			if back := want.Equal(told.Until); back != !tc.listed {
				t.Fatalf("test case wrong: restated %v, told %v", want, told.Until)
			}
			if !tc.listed {
				if len(plan.Waiting) != 0 || plan.Unchanged != 5 || res.waitID != toldID {
					t.Errorf("plan lists %+v, %d unchanged, j129's ID %d (told %d); want none listed, 5 unchanged, the told ID",
						plan.Waiting, plan.Unchanged, res.waitID, toldID)
				}
				return
			}
			if len(plan.Waiting) != 1 || !plan.Waiting[0].Until.Equal(want) || plan.Unchanged != 4 || res.waitID == toldID {
				t.Errorf("plan lists %+v, %d unchanged, j129's ID %d (told %d); want j129 until %v listed, 4 unchanged, a new ID",
					plan.Waiting, plan.Unchanged, res.waitID, toldID, want)
			}
		})
	}
}
