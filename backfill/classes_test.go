package backfill

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestClassWalk follows the jobs a walk passes over by their classes
// (classes.go) after the world changes, on two engines, one of which
// runs every test anyway (checkEach) and must agree. Four one-node jobs
// fill the cluster; "big" (every node) is reserved from the longest's
// end; three two-node jobs wait: x2 and x3, whose windows reach the
// reservation (every node blocked for them), and x1, whose window does
// not. All three are told the same reason, but x1 is of another class,
// its slot being another. When the one-hour job ends, x1 sees a free node
// and is told so; x2 and x3 see nothing new: x2 is tested, and x3 passed
// over by its class. When a short job takes the free node and gives it
// back, nothing changes for anyone.
func TestClassWalk(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.OnlyChangedWaits, cfg.ReservationDepth = true, 1
	var engines [2]*Engine // passing over by classes, and checking each
	for i := range engines {
		if engines[i], err = New(c, cfg, flatTree(t, cfg.FairShare, "a")); err != nil {
			t.Fatal(err)
		}
	}
	fast, checked := engines[0], engines[1]
	checked.checkEach = true
	for _, e := range engines {
		e.collide = true // one probe window for every class: told apart by shape, slot, reason and book
	}
	now := epoch
	submit := func(id string, nodes int, limit time.Duration) {
		t.Helper()
		j := Job{ID: id, Account: "a", TimeLimit: limit, Submit: now,
			Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(nodes, 8)}}}}
		for _, e := range engines {
			if err := e.Submit(j, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	// schedule runs a cycle on both engines, checks that their plans
	// agree, and returns the fast one's plan and the jobs it passed over
	// by their classes.
	schedule := func() (*Plan, int) {
		t.Helper()
		before := fast.cyc.classSkips
		var plans [2]*Plan
		for i, e := range engines {
			plans[i] = scheduleStarted(t, e, now)
		}
		if a, b := planJSON(t, plans[0]), planJSON(t, plans[1]); a != b {
			t.Fatalf("at %v the plans differ:\n%s\n%s", now.Sub(epoch), a, b)
		}
		if checked.cyc.classSkips != 0 {
			t.Fatalf("the checking engine passed over %d jobs", checked.cyc.classSkips)
		}
		return plans[0], fast.cyc.classSkips - before
	}
	listed := func(p *Plan) map[string]string {
		m := map[string]string{}
		for _, w := range p.Waiting {
			m[w.Job] = fmt.Sprintf("%v: %s", w.Code, w.Reason)
		}
		return m
	}
	for i, l := range []time.Duration{10, 1, 5, 8} {
		submit(fmt.Sprintf("p%d", i), 1, l*time.Hour)
	}
	if p, _ := schedule(); len(p.Starts) != 4 {
		t.Fatalf("%d of the 4 one-node jobs started", len(p.Starts))
	}
	now = now.Add(time.Minute)
	submit("big", 4, 2*time.Hour)
	now = now.Add(time.Minute)
	submit("x2", 2, 20*time.Hour)
	now = now.Add(time.Minute)
	submit("x3", 2, 20*time.Hour)
	now = now.Add(time.Minute)
	submit("x1", 2, 30*time.Minute)
	p, _ := schedule()
	if len(p.Reservations) != 1 || p.Reservations[0].Job != "big" {
		t.Fatalf("reservations %+v, want big's", p.Reservations)
	}
	first := listed(p)
	if first["x1"] == "" || first["x1"] != first["x2"] || first["x2"] != first["x3"] {
		t.Fatalf("x1, x2 and x3 are told %q, %q and %q: want one reason", first["x1"], first["x2"], first["x3"])
	}
	// Cycles with nothing new: the kept ranking, and the marks.
	for range 3 {
		now = now.Add(time.Minute)
		schedule()
	}
	if !fast.kr.on {
		t.Fatal("the ranking is not kept: nothing to mark")
	}
	freed := "" // x1's reason once a node came free
	t.Run("an end", func(t *testing.T) {
		now = now.Add(time.Minute)
		for _, e := range engines {
			if err := e.Finished("p1", now); err != nil {
				t.Fatal(err)
			}
		}
		p, n := schedule()
		got := listed(p)
		if got["x1"] == "" || got["x1"] == first["x1"] {
			t.Fatalf("x1 is told %q after a node came free, want another reason than %q", got["x1"], first["x1"])
		}
		if len(got) != 1 {
			t.Fatalf("listed %v, want x1 alone", got)
		}
		if n != 1 {
			t.Fatalf("%d jobs passed over by their classes, want 1 (x3)", n)
		}
		freed = got["x1"]
	})
	t.Run("a short job on the free node", func(t *testing.T) {
		// A short one-node job starts on the free node and ends: two
		// changes of the world. x1 was walked before s started (s
		// ranks below it: it is younger), and is told of the free node
		// no longer, from the state the plan leaves (recountWaits);
		// when s ends it is told of the free node again. x2 and x3 see
		// every node blocked by big's reservation throughout.
		now = now.Add(time.Minute)
		submit("s", 1, 20*time.Minute)
		p, n := schedule()
		if len(p.Starts) != 1 || p.Starts[0].Job != "s" {
			t.Fatalf("starts %+v, want s", p.Starts)
		}
		// x1, x2 and x3 were walked in the world of the last cycle.
		if n != 0 {
			t.Fatalf("%d jobs passed over by their classes before anything changed, want 0", n)
		}
		got := listed(p)
		if len(got) != 1 || got["x1"] == "" || got["x1"] == freed || !strings.Contains(got["x1"], "the cluster has 0") {
			t.Fatalf("after s started: listed %v; want x1 alone, told the free node is taken (it was told %q)", got, freed)
		}
		now = now.Add(10 * time.Minute)
		for _, e := range engines {
			if err := e.Finished("s", now); err != nil {
				t.Fatal(err)
			}
		}
		p, n = schedule()
		if got := listed(p); len(got) != 1 || got["x1"] != freed || n != 1 {
			t.Fatalf("after s ended: listed %v, %d passed over by their classes; want x1 alone, told %q again, x3 passed over", got, n, freed)
		}
	})
}

// TestClassTable drives the class table directly (classMark, classHolds),
// with every class in one probe window (collide), so that entries are
// told apart by their fields alone: a class is its shape, slot, reason and
// book version; it holds only in the world in which a job of it was last
// marked, and before its least until; an entry claimed again (a full
// window, or a dead entry) names nothing for the keys marked with it.
func TestClassTable(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	if err != nil {
		t.Fatal(err)
	}
	e.collide = true
	cy := &e.cyc
	var ledger uint64
	cy.e, cy.ledgerCount, cy.nowNs, cy.classOn = e, &ledger, 100, true
	cy.classes = make([]classEntry, classCap) // as the first walk that marks keys makes it
	// mark marks a key for a job of shape, slot and reason id, stamped in
	// the world that is, until until.
	mark := func(shape uint64, slot int, id uint64, until int64) keptKey {
		j := &jobRec{phase: StatePending, shapeID: shape, waitID: id,
			stamp: testStamp{world: cy.worldNow(), id: id, until: until, slot: slot}}
		var k keptKey
		cy.classMark(&k, j, cy.worldNow())
		if k.class == 0 {
			t.Fatalf("a job of shape %d, slot %d, reason %d went unmarked", shape, slot, id)
		}
		return k
	}
	a := mark(1, 1, 7, 1000)
	for _, tc := range []struct {
		name        string
		shape, id   uint64
		slot        int
		same, holds bool
	}{
		{"the same class", 1, 7, 1, true, true},
		{"another shape", 2, 7, 1, false, true},
		{"another slot", 1, 7, 2, false, true},
		{"another reason", 1, 8, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := mark(tc.shape, tc.slot, tc.id, 2000)
			if same := k.class == a.class; same != tc.same {
				t.Fatalf("class %x against %x: same %v, want %v", k.class, a.class, same, tc.same)
			}
			if !cy.classHolds(&k) || !cy.classHolds(&a) {
				t.Fatal("a class marked in the world that is does not hold")
			}
		})
	}
	t.Run("the least until", func(t *testing.T) {
		b := mark(1, 1, 7, 500) // a's class: its until comes down to 500
		cy.nowNs = 500          // (and on: the later subtests' untils are after it)
		if cy.classHolds(&a) || cy.classHolds(&b) {
			t.Fatal("a class holds at its least until")
		}
		if k := mark(1, 1, 7, 3000); k.class == a.class || !cy.classHolds(&k) || cy.classHolds(&a) {
			t.Fatal("a job of a class past its until was not given a new entry, or the old one holds")
		}
	})
	t.Run("another world", func(t *testing.T) {
		k := mark(3, 0, 9, 1000)
		ledger++ // the free state changed
		if cy.classHolds(&k) {
			t.Fatal("a class holds in a world no job of it was marked in")
		}
		if k2 := mark(3, 0, 9, 1000); k2.class != k.class || !cy.classHolds(&k) {
			t.Fatal("a job of the class marked in the new world does not make it hold there")
		}
	})
	t.Run("another book", func(t *testing.T) {
		k := mark(4, 0, 9, 1000)
		e.book.changed()
		if cy.classHolds(&k) {
			t.Fatal("a class holds in a world no job of it was marked in")
		}
		if k2 := mark(4, 0, 9, 1000); k2.class == k.class || cy.classHolds(&k) {
			t.Fatal("a job of the class marked under a new book shares the old entry")
		}
	})
	t.Run("a full window", func(t *testing.T) {
		e.book.changed() // every entry dead: k takes the window's first
		k := mark(5, 0, 9, 1000)
		for i := range uint64(classProbe) {
			mark(6+i, 0, 9, 1000)
		}
		if cy.classHolds(&k) {
			t.Fatal("a key whose entry was claimed again still holds")
		}
	})
	t.Run("classes off", func(t *testing.T) {
		cy.classOn = false
		j := &jobRec{phase: StatePending, shapeID: 1, waitID: 7, stamp: testStamp{world: cy.worldNow(), id: 7, until: 1000, slot: 1}}
		k := keptKey{class: a.class}
		cy.classMark(&k, j, cy.worldNow())
		if k.class != 0 {
			t.Fatal("a walk without classes marked a key")
		}
	})
}

// TestClassWalkAgrees runs random queues of few shapes and time limits
// (so that classes have many jobs, in several slots) through submissions,
// ends, failures that requeue, cancellations and nodes going down and up,
// at reservation depths below and above maxSlots, with jobs without a
// limit (hold mode) and ages that stop growing in some seeds, on three
// engines: one
// that passes over jobs by their classes, one that runs every test
// anyway (checkEach), both restored from their snapshots every 97 steps,
// and one that lists every waiting job. After every cycle the first two
// plans are the same, and the first's changes rebuild the third's list
// exactly.
func TestClassWalkAgrees(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 2
	}
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 3, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	requests := []placement.Request{placement.TotalGPUs(1), placement.TotalGPUs(4), placement.NodesOf(1, 8), placement.NodesOf(2, 8), placement.NodesOf(4, 8), placement.TotalGPUs(24)}
	limits := []time.Duration{30 * time.Minute, 2 * time.Hour, 8 * time.Hour, 24 * time.Hour}
	// (Depth 9: a book longer than maxSlots, on the main scratch state.)
	for _, depth := range []int{0, 1, 4, 9} {
		t.Run(fmt.Sprintf("depth=%d", depth), func(t *testing.T) {
			passed, checkedPasses := 0, 0
			for seed := range uint64(seeds) {
				cfg := DefaultConfig()
				cfg.ReservationDepth, cfg.OnlyChangedWaits = depth, true
				cfg.FairShare.HalfLife = time.Hour
				// Backlogs (BacklogAfter) that begin and end often, none,
				// and the default's: the walk passes jobs over behind the
				// first reservation holder during one (mayPassOver).
				cfg.BacklogAfter = [...]time.Duration{time.Hour, 0, 8 * time.Hour}[seed%3]
				if seed%2 == 1 {
					cfg.FairShare.Weights.JobSize = 1 // priority inputs set apart by size
					cfg.FairShare.ClusterGPUs = c.TotalGPUs()
				}
				if seed%3 == 2 {
					// Ages that stop growing within the run: the kept
					// keys are computed again, unmarked.
					cfg.FairShare.MaxAge = 12 * time.Hour
				}
				// A fifth of the jobs without a limit in half the seeds:
				// hold mode may then hold, and classes pause (classWalk)
				// while such a job is active.
				lims := limits
				if seed%4 >= 2 {
					lims = append(lims, 0)
				}
				var engines [3]*Engine // classes, checked, every wait listed
				for i := range engines {
					if engines[i], err = New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c")); err != nil {
						t.Fatal(err)
					}
					// Until the first restore (roundTrip carries no test
					// switch but checkEach).
					engines[i].collide = seed%3 == 1
				}
				engines[1].checkEach = true
				engines[2].cfg.OnlyChangedWaits = false
				r := rand.New(rand.NewPCG(seed, uint64(depth)+77))
				now, next := epoch, 0
				last := map[string]Waiting{}
				do := func(what string, f func(e *Engine) error) {
					t.Helper()
					var errs [3]string
					for i, e := range engines {
						if err := f(e); err != nil {
							errs[i] = err.Error()
						}
					}
					if errs[0] != errs[1] || errs[1] != errs[2] {
						t.Fatalf("seed %d: %s: the engines differ: %q", seed, what, errs)
					}
				}
				for step := range 700 {
					now = now.Add(time.Duration(r.IntN(20)) * time.Minute)
					switch k := r.IntN(20); {
					case k < 9:
						next++
						j := Job{ID: fmt.Sprintf("j%d", next), Account: string(rune('a' + r.IntN(3))), Submit: now,
							TimeLimit: lims[r.IntN(len(lims))],
							Gang:      gang.Spec{Members: []gang.Member{{Name: "m", Request: requests[r.IntN(len(requests))]}}}}
						do("submit", func(e *Engine) error { return e.Submit(j, now) })
					case k < 16:
						// A running job ends (before its limit, most of the
						// time), or in one case of six fails and waits again,
						// back at its place in the kept order (keptRank.back).
						id := ""
						for _, j := range engines[2].jobs.running {
							if j.phase == StateRunning && (id == "" || r.IntN(3) == 0) {
								id = j.job.ID
							}
						}
						switch {
						case id == "":
						case k == 15:
							do("fail "+id, func(e *Engine) error { return e.Failed(id, now, true) })
						default:
							do("finish "+id, func(e *Engine) error { return e.Finished(id, now) })
						}
					case k < 17 && next > 0:
						id := fmt.Sprintf("j%d", 1+r.IntN(next))
						do("cancel "+id, func(e *Engine) error { return e.Cancel(id, now) })
					case k < 18:
						n := topology.NodeID(r.IntN(c.NumNodes()))
						if r.IntN(2) == 0 {
							do("down", func(e *Engine) error { _, err := e.NodeDown(n, now); return err })
						} else {
							do("up", func(e *Engine) error { return e.NodeUp(n, now) })
						}
					}
					if step%97 == 96 {
						passed += engines[0].cyc.classSkips
						checkedPasses += engines[1].cyc.classChecked
						for i := range 2 {
							engines[i] = roundTrip(t, engines[i])
						}
						clear(last) // a restored engine lists every job once
					}
					var plans [3]*Plan
					for i, e := range engines {
						plans[i] = scheduleStarted(t, e, now)
					}
					if a, b := planJSON(t, plans[0]), planJSON(t, plans[1]); a != b {
						t.Fatalf("seed %d step %d: the plans differ:\n%s\n%s", seed, step, a, b)
					}
					for _, w := range plans[0].Waiting {
						last[w.Job] = w
					}
					if n := len(plans[0].Waiting) + plans[0].Unchanged; n != len(plans[2].Waiting) {
						t.Fatalf("seed %d step %d: %d listed + %d unchanged, want %d waiting", seed, step, len(plans[0].Waiting), plans[0].Unchanged, len(plans[2].Waiting))
					}
					for _, want := range plans[2].Waiting {
						got := last[want.Job]
						got.Priority = want.Priority
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("seed %d step %d: job %s: rebuilt from changes %+v, full list %+v", seed, step, want.Job, got, want)
						}
					}
				}
				passed += engines[0].cyc.classSkips
				checkedPasses += engines[1].cyc.classChecked
				if engines[1].cyc.classSkips != 0 {
					t.Fatalf("seed %d: the checking engine passed over %d jobs", seed, engines[1].cyc.classSkips)
				}
			}
			t.Logf("%d jobs passed over by their classes, %d checked", passed, checkedPasses)
			if passed == 0 || checkedPasses == 0 {
				t.Errorf("%d jobs passed over by their classes, %d checked: want both", passed, checkedPasses)
			}
		})
	}
}

// planJSON is p as JSON (a plan's printed form would show pointers).
func planJSON(t *testing.T, p *Plan) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
