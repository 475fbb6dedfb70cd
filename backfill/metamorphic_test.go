package backfill

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestNaivePathsAgree is a metamorphic test of the engine's caches: the
// same workloads, driven late (see host), give byte-identical JSON plans
// with every cache on (same-shape failure cache, incremental profile
// blocks, sorted reservation and candidate-time caches, the last ranking
// as the next ranking's input, the reusable scratch state, the fit
// prechecks) and with every cache replaced by its naive reference path.
// Workloads mix jobs with and without time limits (so hold mode runs),
// patience and multi-member gangs, at depth 0, 1, 16 and conservative
// (the profile cover on from the first reservation in 3 seeds of 4),
// and strict order; every other seed with preemption on
// (classes and policies drawn, victims released 0 to 20 minutes after
// their signal).
func TestNaivePathsAgree(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 25
	}
	for _, v := range []variant{{"greedy", 0, false, false}, {"easy", 1, false, false}, {"depth16", 16, false, false},
		{"conservative", Conservative, false, false}, {"strict", 0, true, false},
		{"fifo", 0, true, true}, {"age-greedy", 0, false, true}, {"age-easy", 1, false, true}} {
		t.Run(v.name, func(t *testing.T) {
			cycles, preemptions := 0, 0
			var kept, skips uint64
			for seed := range uint64(seeds) {
				fast, e := metamorphicRun(t, v, seed, false)
				slow, _ := metamorphicRun(t, v, seed, true)
				kept, skips = kept+e.fifo.rankings, skips+e.fifo.skips
				cycles += len(fast)
				for _, p := range fast {
					preemptions += bytes.Count(p, []byte(`"Victim"`))
				}
				if len(fast) != len(slow) {
					t.Fatalf("seed %d: %d cycles with caches, %d without", seed, len(fast), len(slow))
				}
				for i := range fast {
					if !bytes.Equal(fast[i], slow[i]) {
						var a, b bytes.Buffer
						_ = json.Indent(&a, fast[i], "", " ")
						_ = json.Indent(&b, slow[i], "", " ")
						t.Fatalf("seed %d cycle %d: plans differ (-cached +naive):\n%s", seed, i, cmp.Diff(a.String(), b.String()))
					}
				}
			}
			t.Logf("%d cycles compared, %d preemptions in them, %d ranked in kept submit order, %d strict tails skipped", cycles, preemptions, kept, skips)
			if preemptions == 0 {
				t.Errorf("no preemption in %d cycles", cycles)
			}
			// The age-only variants run the kept order (not in the seeds
			// with a MaxJobsTested window), and strict order skips tails.
			if v.age && kept == 0 || v.age && v.strict && skips == 0 {
				t.Errorf("kept submit order: %d rankings, %d strict tails skipped", kept, skips)
			}
		})
	}
}

// variant is one engine configuration of TestNaivePathsAgree: the
// reservation depth, strict order, and priorities by age alone (the
// queue then kept in submit order between cycles, fifo.go, with plans
// that list only changed reasons, so that a strict walk skips the
// unchanged tail).
type variant struct {
	name   string
	depth  int
	strict bool
	age    bool
}

func metamorphicRun(t *testing.T, v variant, seed uint64, naive bool) ([][]byte, *Engine) {
	r := rand.New(rand.NewPCG(seed, 77))
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReservationDepth, cfg.Strict = v.depth, v.strict
	if v.age {
		cfg.FairShare.Weights = fairshare.Weights{Age: 1000}
		cfg.OnlyChangedWaits = true
	}
	cfg.FairShare.HalfLife = time.Hour
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 0.75, CapWait: 30 * time.Minute, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 2}
	if seed%3 == 0 {
		cfg.MaxJobsTested = 5
	}
	if seed%2 == 1 {
		cfg.Preemption = PreemptionConfig{Enabled: true, ExemptTime: 10 * time.Minute, Grace: 5 * time.Minute, MinGain: 5 * time.Minute}
	}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	e.setNaive(naive)
	if seed%4 != 3 {
		e.coverMin = 0 // the profile cover at every search, not only long books
	}
	// Every invariant, and every reused probe against a fresh one, after
	// every call in one seed of five.
	e.checkEach = !naive && seed%5 == 0
	// Shape hashes that collide in one seed of five: only the request
	// comparison keeps jobs of different shapes apart in the shape table,
	// and the failure cache's probe windows fill.
	e.collide = seed%5 == 2
	jobs := randomWorkload(r, c, 40, true)
	for i := range jobs {
		switch r.IntN(6) {
		case 0:
			jobs[i].TimeLimit = 0
		case 1:
			jobs[i].Patience = Patience{MaxDomains: 1, Wait: time.Duration(10+r.IntN(50)) * time.Minute}
		}
	}
	if cfg.Preemption.Enabled {
		preemptWorkload(r, jobs)
	}
	h := newHost(t, e, jobs, seed)
	if cfg.Preemption.Enabled {
		rr := rand.New(rand.NewPCG(seed, 78))
		h.release = func() time.Duration { return time.Duration(rr.IntN(20*60)) * time.Second }
	}
	h.record = true
	h.run()
	if len(h.plans) < 10 {
		t.Fatalf("seed %d: only %d cycles", seed, len(h.plans))
	}
	return h.plans, e
}

// setNaive switches every cache of the engine to its reference path.
func (e *Engine) setNaive(on bool) {
	e.naive, e.book.naive, e.prof.naive = on, on, on
}

// TestNaiveAgreesOnMixedNodes: on a cluster of an 8-GPU and a 4-GPU node,
// a whole-node job may take the small node, so the cheap fit checks that
// guard profile searches (and the cover's bound) must not count a whole
// node at the largest node's GPUs: with the 8-GPU node busy for two hours
// and the 4-GPU node for one, a 30-minute whole-node job is planned at
// the hour on the small node, with every cache on as on the naive path
// (before the fix the cached path planned it at two hours).
func TestNaiveAgreesOnMixedNodes(t *testing.T) {
	plan := func(naive bool) []Reservation {
		c, err := topology.Build(topology.ClusterSpec{Levels: []string{"leaf"}, Nodes: []topology.NodeSpec{
			{Name: "big", GPUs: 8, Path: []string{"l0"}}, {Name: "small", GPUs: 4, Path: []string{"l0"}}}})
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.ReservationDepth = Conservative
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
		if err != nil {
			t.Fatal(err)
		}
		e.setNaive(naive)
		e.coverMin, e.checkEach = 0, !naive
		submit := func(id string, at time.Time, req placement.Request, limit time.Duration) {
			j := Job{ID: id, Account: "a", Submit: at, TimeLimit: limit, Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}}
			if err := e.Submit(j, at); err != nil {
				t.Fatal(err)
			}
		}
		submit("big", epoch, placement.NodesOf(1, 8), 2*time.Hour)
		submit("small", epoch, placement.NodesOf(1, 4), time.Hour)
		if _, err := e.Schedule(epoch); err != nil {
			t.Fatal(err)
		}
		at := epoch.Add(time.Minute)
		submit("whole", at, placement.NodesOf(1, 0), 30*time.Minute)
		p, err := e.Schedule(at)
		if err != nil {
			t.Fatal(err)
		}
		return p.Reservations
	}
	fast, slow := plan(false), plan(true)
	if d := cmp.Diff(slow, fast); d != "" {
		t.Fatalf("reservations differ (-naive +cached):\n%s", d)
	}
	if len(slow) != 1 || !slow[0].Start.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("want the whole-node job planned at the hour on the small node, got %+v", slow)
	}
}
