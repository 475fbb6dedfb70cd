package backfill

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestOnlyChangedWaits runs random operation sequences (hold mode,
// preemption and queues as in the naive agreement test; strict order or a
// MaxJobsTested window in half the seeds) on two engines
// that differ only in Config.OnlyChangedWaits, restoring the one that
// lists changes from its snapshot every 97 steps. After every call:
//   - everything but the waiting list is the same (decisions do not
//     depend on the report);
//   - the changes listed so far, priorities aside, rebuild exactly the
//     full list of the other engine, and the listed and unchanged jobs
//     add up to it, in its order;
//   - Engine.Job on the changes engine gives each waiting job the same
//     reason as on the other;
//   - a job is listed only when its reason changed (or once after a
//     restore);
//   - most cycles leave some jobs out (the listing is of changes);
//   - tests are skipped by their stamps (cycle.skipTest), each checked
//     by running it anyway in the seeds with the invariant checker
//     (in seed 23, every other span between restores runs unchecked,
//     held to the other engine's list alone);
//   - (logged) jobs are passed over by quiet walks and by their classes
//     (TestClassWalkAgrees holds classes to account on queues of few
//     shapes, where they pass over many).
func TestOnlyChangedWaits(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	c := opsCluster(t)
	for _, depth := range []int{0, 1, 16, Conservative} {
		t.Run(fmt.Sprintf("depth=%d", depth), func(t *testing.T) {
			listed, left, skipped, checked, passed := 0, 0, 0, 0, 0
			classed, classChecked := 0, 0
			for seed := range uint64(seeds) {
				full := randomOpsEngine(t, c, depth, seed, false)
				changes := randomOpsEngine(t, c, depth, seed, false)
				changes.cfg.OnlyChangedWaits = true
				// Strict order and a tested-jobs window give the "waiting
				// for priority" reasons most of a long queue shares;
				// strict order with quotas (seed%4 == 1: randomOpsEngine)
				// and without (seed%8 == 3). The other odd seeds, without
				// preemption, quotas, a strict order or a window, and with
				// fair-share weights but in seed 15, are those in which
				// walks pass over quiet jobs (cycle.quietWalk).
				for _, e := range []*Engine{full, changes} {
					// Every third seed crowds the shape, failure and class
					// tables' probe windows, until the first restore (which
					// carries no test switch but checkEach).
					e.collide = seed%3 == 0
					switch {
					case seed%4 == 1, seed%8 == 3:
						e.cfg.Strict = true
					case seed%4 == 2:
						e.cfg.MaxJobsTested = 3
					}
				}
				last := map[string]Waiting{} // the changes engine's latest listing per job
				since := map[string]bool{}   // jobs listed since the last restore
				r := rand.New(rand.NewPCG(seed, uint64(depth+2000)))
				now := epoch
				for i := range 600 {
					st, do := randomOp(r, c, full)
					now = later(now.Add(st.dt), full.Now())
					if i%97 == 96 {
						passed += changes.cyc.quietSkips + changes.cyc.quietChecked
						classed += changes.cyc.classSkips + changes.cyc.classChecked
						classChecked += changes.cyc.classChecked
						skipped += changes.cyc.skippedTests
						if changes.checkEach {
							checked += changes.cyc.skippedTests
						}
						changes = roundTrip(t, changes)
						if seed%24 == 23 {
							// Checked and unchecked in turn: the jobs
							// passed over unchecked are held to the other
							// engine's list alone.
							changes.checkEach = i/97%2 == 1
						}
						clear(since) // a restored engine lists every job once
					}
					// A job cancelled or submitted again under its ID
					// waits anew: it is listed again.
					switch st.kind {
					case opSubmit:
						delete(since, st.job.ID)
					case opCancel:
						delete(since, st.id)
					}
					if st.kind != opSchedule {
						if a, b := do(full, st, now), do(changes, st, now); a != b {
							t.Fatalf("seed %d step %d (%v): the engines differ: %q against %q", seed, i, st, a, b)
						}
						continue
					}
					pf, errF := full.Schedule(now)
					pc, errC := changes.Schedule(now)
					if (errF == nil) != (errC == nil) {
						t.Fatalf("seed %d step %d: errors %v and %v", seed, i, errF, errC)
					}
					if errF != nil {
						continue
					}
					listed += len(pc.Waiting)
					left += pc.Unchanged
					k := 0
					for _, w := range pc.Waiting {
						if was, ok := last[w.Job]; ok && since[w.Job] {
							was.Priority = w.Priority
							if reflect.DeepEqual(was, w) {
								t.Fatalf("seed %d step %d: job %s listed with an unchanged reason %+v", seed, i, w.Job, w)
							}
						}
						last[w.Job], since[w.Job] = w, true
						for k < len(pf.Waiting) && pf.Waiting[k].Job != w.Job {
							k++
						}
						if k == len(pf.Waiting) {
							t.Fatalf("seed %d step %d: job %s listed out of the full list's order, or not in it", seed, i, w.Job)
						}
					}
					if n := len(pc.Waiting) + pc.Unchanged; n != len(pf.Waiting) {
						t.Fatalf("seed %d step %d: %d listed + %d unchanged, want %d waiting", seed, i, len(pc.Waiting), pc.Unchanged, len(pf.Waiting))
					}
					for _, want := range pf.Waiting {
						got, ok := last[want.Job]
						got.Priority = want.Priority
						if !ok || !reflect.DeepEqual(got, want) {
							t.Fatalf("seed %d step %d: job %s: rebuilt from changes %+v, full list %+v", seed, i, want.Job, got, want)
						}
						js, _ := changes.Job(want.Job)
						jf, _ := full.Job(want.Job)
						if js.Code != jf.Code || js.Reason != jf.Reason {
							t.Fatalf("seed %d step %d: Engine.Job(%s): %v %q against %v %q", seed, i, want.Job, js.Code, js.Reason, jf.Code, jf.Reason)
						}
					}
					// A job that stops waiting (it starts) is listed anew
					// when it waits again.
					waiting := map[string]bool{}
					for _, w := range pf.Waiting {
						waiting[w.Job] = true
					}
					for id := range since {
						if !waiting[id] {
							delete(since, id)
						}
					}
					pf.Waiting, pc.Waiting, pc.Unchanged = nil, nil, 0
					a, _ := json.Marshal(pf)
					b, _ := json.Marshal(pc)
					if string(a) != string(b) {
						t.Fatalf("seed %d step %d: the plans differ beyond the waiting list:\n%s\n%s", seed, i, a, b)
					}
				}
				passed += changes.cyc.quietSkips + changes.cyc.quietChecked
				classed += changes.cyc.classSkips + changes.cyc.classChecked
				classChecked += changes.cyc.classChecked
				skipped += changes.cyc.skippedTests
				if changes.checkEach {
					checked += changes.cyc.skippedTests
				}
			}
			t.Logf("%d waits listed, %d left out as unchanged, %d tests skipped (%d checked, %d passed over by quiet walks, %d by their classes, %d of those checked)", listed, left, skipped, checked, passed, classed, classChecked)
			if checked == 0 {
				t.Errorf("no skipped test was checked")
			}
			// (Deeper reservations leave few jobs cacheable, so few
			// stamped: none passed over.)
			if passed == 0 && !testing.Short() && depth >= 0 && depth <= 1 {
				t.Errorf("no job was passed over by a quiet walk")
			}
			if left < listed {
				t.Errorf("%d waits listed against %d left out: want most left out", listed, left)
			}
		})
	}
}

// TestOnlyChangedWaitsTimeline follows one job: listed when it first
// waits, left out while its reason stands (its priority growing with
// age), and started when the cluster empties; Engine.Job stays current.
func TestOnlyChangedWaitsTimeline(t *testing.T) {
	_, e, must := fullEngine(t, func(cfg *Config) {
		cfg.OnlyChangedWaits = true
	})
	must(e.Submit(Job{ID: "w", Account: "b", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch.Add(time.Minute)))
	listed := func(p *Plan) (Waiting, bool) {
		for _, w := range p.Waiting {
			if w.Job == "w" {
				return w, true
			}
		}
		return Waiting{}, false
	}
	p, err := e.Schedule(epoch.Add(time.Minute))
	must(err)
	if first, ok := listed(p); !ok || first.Code != WaitReserved {
		t.Fatalf("first cycle: w listed %v as %v, want listed, reserved", ok, first.Code)
	}
	for k := 2; k <= 4; k++ {
		p, err = e.Schedule(epoch.Add(time.Duration(k) * time.Minute))
		must(err)
		if w, ok := listed(p); ok {
			t.Fatalf("cycle %d: w listed again with an unchanged reason: %+v", k, w)
		}
		if p.Unchanged != 1 {
			t.Fatalf("cycle %d: Unchanged %d, want 1", k, p.Unchanged)
		}
		if js, _ := e.Job("w"); js.Code != WaitReserved {
			t.Fatalf("cycle %d: Engine.Job says %v", k, js.Code)
		}
	}
	must(e.Cancel("big", epoch.Add(5*time.Minute)))
	p, err = e.Schedule(epoch.Add(5 * time.Minute))
	must(err)
	if len(p.Starts) != 1 || p.Starts[0].Job != "w" || len(p.Waiting) != 0 || p.Unchanged != 0 {
		t.Fatalf("after the cluster emptied: %+v, want w started and nothing waiting", p)
	}
}

// TestOnlyChangedWaitsAllocs: a cycle in which no reason changes
// allocates no more with OnlyChangedWaits than without it.
func TestOnlyChangedWaitsAllocs(t *testing.T) {
	allocs := func(changes bool) float64 {
		_, e, must := fullEngine(t, func(cfg *Config) {
			cfg.OnlyChangedWaits = changes
		})
		for i := range 20 {
			must(e.Submit(Job{ID: fmt.Sprintf("w%d", i), Account: "b", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1+i%3, 8))}, epoch.Add(time.Minute)))
		}
		into, at := &Plan{}, epoch.Add(2*time.Minute)
		must(e.ScheduleInto(at, into))
		return testing.AllocsPerRun(20, func() {
			at = at.Add(time.Second)
			must(e.ScheduleInto(at, into))
			if changes && (len(into.Waiting) != 0 || into.Unchanged != 20) {
				t.Fatalf("a cycle with nothing changed lists %d and leaves out %d", len(into.Waiting), into.Unchanged)
			}
		})
	}
	if all, changed := allocs(false), allocs(true); changed > all {
		t.Errorf("a cycle with nothing changed allocates %v times with OnlyChangedWaits, %v without", changed, all)
	}
}

// TestOnlyChangedWaitsManyReasons: more distinct reasons than the intern
// table holds (1,500 reservations under conservative backfill, their
// starts in whole minutes), in cycles where nothing changes: none is
// listed again. (A hash without a final mix put such reasons in a couple
// of slots and listed every one every cycle; without re-using a job's ID
// for its unchanged reason, most were listed every cycle once the table
// overflowed.)
func TestOnlyChangedWaitsManyReasons(t *testing.T) {
	c, e, must := fullEngine(t, func(cfg *Config) {
		cfg.ReservationDepth = Conservative
		cfg.OnlyChangedWaits = true
	})
	const n = 1500
	for i := range n {
		must(e.Submit(Job{ID: fmt.Sprintf("w%04d", i), Account: "b", TimeLimit: time.Duration(1+i%7) * time.Minute,
			Gang: member(placement.NodesOf(1+i%c.NumNodes(), 8))}, epoch.Add(time.Minute)))
	}
	p, err := e.Schedule(epoch.Add(time.Minute))
	must(err)
	if len(p.Waiting) != n || len(p.Reservations) != n {
		t.Fatalf("first cycle: %d listed, %d reservations, want %d of each", len(p.Waiting), len(p.Reservations), n)
	}
	for k := 1; k <= 3; k++ {
		p, err = e.Schedule(epoch.Add(time.Minute + time.Duration(k)*time.Second))
		must(err)
		if len(p.Waiting) != 0 || p.Unchanged != n {
			t.Fatalf("cycle %d with nothing changed: %d listed, %d unchanged, want 0 and %d", k, len(p.Waiting), p.Unchanged, n)
		}
	}
}

// fullEngine returns an engine on opsCluster, configured by DefaultConfig
// and set, whose every node runs job "big" (account a, an hour from
// epoch), with a must that fails t on an error.
func fullEngine(t *testing.T, set func(*Config)) (*topology.Cluster, *Engine, func(error)) {
	t.Helper()
	c := opsCluster(t)
	cfg := DefaultConfig()
	set(&cfg)
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.Submit(Job{ID: "big", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(c.NumNodes(), 8))}, epoch))
	_, err = e.Schedule(epoch)
	must(err)
	must(e.Started("big", epoch))
	return c, e, must
}

// TestSubmitOrderLetsGo: a queue kept in submit order through many
// cycles in which the head starts and finishes (strict FIFO, then FIFO
// with backfill) stays about as long as the queue: the positions of jobs
// long gone are let go, and so are their records.
func TestSubmitOrderLetsGo(t *testing.T) {
	for _, strict := range []bool{true, false} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.FairShare.Weights = fairshare.Weights{Age: 1000}
			cfg.Strict, cfg.OnlyChangedWaits, cfg.ReservationDepth, cfg.Hold.Enabled = strict, true, 0, false
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			now, longest := epoch, 0
			for i := range 3000 {
				now = now.Add(time.Minute)
				job := Job{ID: fmt.Sprintf("j%d", i), Account: "a", TimeLimit: time.Hour,
					Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(1, 8)}}}}
				if err := e.Submit(job, now); err != nil {
					t.Fatal(err)
				}
				scheduleStarted(t, e, now)
				for _, s := range e.Jobs() {
					if s.State.Active() && now.Sub(s.Start) >= 3*time.Minute {
						if err := e.Finished(s.ID, now); err != nil {
							t.Fatal(err)
						}
					}
				}
				longest = max(longest, len(e.jobs.pending))
			}
			if e.fifo.rankings == 0 {
				t.Fatal("the queue was not kept in submit order")
			}
			if n := len(e.order); n > 2*longest+130 {
				t.Fatalf("kept order of %d positions for a queue of at most %d jobs", n, longest)
			}
			for _, j := range e.order[len(e.order):cap(e.order)] {
				if j != nil {
					t.Fatalf("job %s still referenced past the kept order's end", j.job.ID)
				}
			}
		})
	}
}
