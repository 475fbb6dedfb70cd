package backfill

import (
	"encoding/json"
	"os"
	"testing"
	"testing/fstest"
	"time"

	"github.com/phalanx-sched/phalanx/topology/slurm"
)

// checkWaitsAgree checks that the reasons of plan p, and the engine's
// statuses after it, agree with p's reservations: a job told it is
// reserved (WaitReserved) is planned to start at its reservation's
// start, and a job told it waits for a reservation (WaitReservation)
// names that reservation's start, when its job still holds one. It
// returns the number of reasons checked against a reservation.
func checkWaitsAgree(t *testing.T, e *Engine, p *Plan) int {
	t.Helper()
	starts := map[string]time.Time{}
	for _, r := range p.Reservations {
		starts[r.Job] = r.Start
	}
	n := 0
	check := func(where string, w *Waiting) {
		switch w.Code {
		case WaitReserved:
			n++
			if s, ok := starts[w.Job]; !ok || !w.Until.Equal(s) {
				t.Errorf("cycle at %v: %s: %s is told it is reserved from %v; the plan's reservation starts at %v (held %v)",
					p.Time, where, w.Job, w.Until, s, ok)
			}
		case WaitReservation:
			if s, ok := starts[w.Blocker]; ok {
				n++
				if !w.Until.Equal(s) {
					t.Errorf("cycle at %v: %s: %s is told %s's reservation blocks it until %v; that reservation starts at %v",
						p.Time, where, w.Job, w.Blocker, w.Until, s)
				}
			}
		}
	}
	for i := range p.Waiting {
		check("plan", &p.Waiting[i])
	}
	for _, s := range e.Jobs() {
		if s.State.Active() || s.State.Ended() {
			continue
		}
		w := s.wait
		w.Job = s.ID
		check("status", &w)
		if st, ok := starts[s.ID]; ok && s.Code == WaitReserved && !s.PlannedStart.Equal(st) {
			t.Errorf("cycle at %v: status of %s plans its start at %v; the plan's reservation at %v", p.Time, s.ID, s.PlannedStart, st)
		}
	}
	return n
}

// TestClaimClearWaitsAgree replays testdata/claim_clear_blame.json, whose
// first cycle makes a claim (j143's reclaim) that moves later the
// reservations of j129 and j78 (clearClaim) after the walk had told them
// their old starts. Every plan of the replay, listing every reason or
// only the changed ones (Config.OnlyChangedWaits), and the statuses
// after it, must give each reserved job its reservation's start, and
// each job waiting for a reservation that reservation's start.
//
// In the last case the host was told, the cycle before, the starts the
// walk tells j129 and j78 before the claim: their reasons count as
// unchanged when the walk passes them, and must be listed once the claim
// moves their reservations.
func TestClaimClearWaitsAgree(t *testing.T) {
	told := map[string]time.Time{
		"j129": time.Date(2026, 12, 7, 20, 39, 47, 0, time.UTC),
		"j78":  time.Date(2026, 12, 8, 0, 39, 47, 0, time.UTC),
	}
	for _, tc := range []struct {
		name    string
		changes bool
		told    bool
	}{
		{"all waits", false, false},
		{"only changed waits", true, false},
		{"only changed waits, old starts told before", true, true},
	} {
		changes := tc.changes
		t.Run(tc.name, func(t *testing.T) {
			e, in := claimClearReplay(t, changes)
			if tc.told {
				for id, at := range told {
					j := e.jobs.byID[id]
					j.wait = Waiting{Job: id, Code: WaitReserved, Until: at}
					j.waitID = e.waitID(&j.wait, j)
				}
			}
			now, checked, moved := in.Snapshot.Time, 0, map[string]bool{}
			for cycle := range 6 {
				p, err := e.Schedule(now)
				if err != nil {
					t.Fatal(err)
				}
				if cycle == 0 {
					listed := map[string]bool{}
					for _, w := range p.Waiting {
						listed[w.Job] = true
					}
					if !listed["j129"] || !listed["j78"] {
						t.Errorf("first plan lists j129 %v, j78 %v; both moved, so both changed", listed["j129"], listed["j78"])
					}
					if n := waitingJobs(e); len(p.Waiting)+p.Unchanged != n {
						t.Errorf("first plan lists %d reasons and counts %d unchanged; %d jobs wait", len(p.Waiting), p.Unchanged, n)
					}
				}
				for _, m := range p.Moves {
					moved[m.Job] = true
				}
				checked += checkWaitsAgree(t, e, p)
				next, ok := e.NextEvent()
				if !ok {
					break
				}
				now = next
			}
			if !moved["j129"] || !moved["j78"] || checked == 0 {
				t.Errorf("too easy: moved %v, %d reasons checked", moved, checked)
			}
		})
	}
}

// waitingJobs counts the jobs that wait (neither active nor ended).
func waitingJobs(e *Engine) int {
	n := 0
	for _, s := range e.Jobs() {
		if !s.State.Active() && !s.State.Ended() {
			n++
		}
	}
	return n
}

// TestRestateVisitedBlocked drives restateVisited alone, after the
// replay's first cycle (j129's reservation moved to 20:44:47): a job the
// walk passed, told j129's reservation blocks it until the old start
// (WaitReservation), is told the new start, as is j129 itself; listed in
// place, or, counted unchanged under Config.OnlyChangedWaits, listed now
// at its rank.
func TestRestateVisitedBlocked(t *testing.T) {
	old := time.Date(2026, 12, 7, 20, 39, 47, 0, time.UTC)
	for _, changes := range []bool{false, true} {
		t.Run(map[bool]string{false: "all waits", true: "only changed waits"}[changes], func(t *testing.T) {
			e, in := claimClearReplay(t, changes)
			p, err := e.Schedule(in.Snapshot.Time)
			if err != nil {
				t.Fatal(err)
			}
			res, blocked, cur := e.jobs.byID["j129"], e.jobs.byID["j84"], e.jobs.byID["j101"]
			if res.resv == nil || !res.resv.start.After(old) || blocked.resv != nil {
				t.Fatalf("replay changed: j129's reservation %+v, j84's %+v", res.resv, blocked.resv)
			}
			res.wait = Waiting{Job: "j129", Code: WaitReserved, Until: old}
			blocked.wait = Waiting{Job: "j84", Code: WaitReservation, Blocker: "j129", Until: old}
			plan := &Plan{Time: p.Time, Waiting: []Waiting{res.wait}}
			if changes {
				res.waitID, blocked.waitID = e.waitID(&res.wait, nil), e.waitID(&blocked.wait, nil)
				plan.Unchanged = 1 // j84
			} else {
				plan.Waiting = append(plan.Waiting, blocked.wait, Waiting{Job: "j101"}) // j101: under test
			}
			blockedID := blocked.waitID
			c := &e.cyc
			c.e, c.now, c.plan, c.walking = e, p.Time, plan, true
			c.walkOrder, c.walkRank = []*jobRec{res, blocked, cur}, 2
			c.restateVisited([]*reservation{res.resv})
			c.walking, c.walkOrder = false, nil

			want := res.resv.start
			if changes {
				if plan.Unchanged != 0 || blocked.waitID == blockedID {
					t.Errorf("j84 counted unchanged %d, its reason's ID %d (was %d)", plan.Unchanged, blocked.waitID, blockedID)
				}
				if len(plan.Waiting) != 2 {
					t.Fatalf("plan lists %+v; want j129 and j84", plan.Waiting)
				}
			} else if len(plan.Waiting) != 3 || plan.Waiting[2].Job != "j101" {
				t.Fatalf("plan lists %+v; want j129, j84 and j101 under test", plan.Waiting)
			}
			for i, j := range []*jobRec{res, blocked} {
				if w := plan.Waiting[i]; w.Job != j.job.ID || !w.Until.Equal(want) || !j.wait.Until.Equal(want) {
					t.Errorf("%s listed %+v, recorded %+v; want until %v", j.job.ID, w, j.wait, want)
				}
			}
		})
	}
}

// claimClearReplay restores the engine of testdata/claim_clear_blame.json,
// listing only changed reasons or all of them.
func claimClearReplay(t *testing.T, changes bool) (*Engine, struct {
	Config   Config
	Snapshot Snapshot
}) {
	t.Helper()
	var in struct {
		Config   Config
		Snapshot Snapshot
	}
	c, _, err := slurm.LoadConf(fstest.MapFS{"topology.conf": {Data: []byte(blockConf)}}, "topology.conf", slurm.Options{DefaultGPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/claim_clear_blame.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	in.Config.OnlyChangedWaits = changes
	e, err := Restore(c, in.Config, &in.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	return e, in
}
