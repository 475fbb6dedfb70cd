package backfill

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestNaivePathsAgree is a metamorphic test of the engine's caches: the
// same workloads, driven late (see host), give byte-identical JSON plans
// with every cache on (same-shape failure cache, incremental profile
// blocks, sorted reservation and candidate-time caches, the reusable
// scratch state, the fit prechecks) and with every cache replaced by its
// naive reference path. Workloads mix jobs with and without time limits
// (so hold mode runs), patience and multi-member gangs, at depth 0, 1, 16
// and conservative, and strict order.
func TestNaivePathsAgree(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 25
	}
	type variant struct {
		name   string
		depth  int
		strict bool
	}
	for _, v := range []variant{{"greedy", 0, false}, {"easy", 1, false}, {"depth16", 16, false}, {"conservative", Conservative, false}, {"strict", 0, true}} {
		t.Run(v.name, func(t *testing.T) {
			cycles := 0
			for seed := range uint64(seeds) {
				fast := metamorphicRun(t, v.depth, v.strict, seed, false)
				slow := metamorphicRun(t, v.depth, v.strict, seed, true)
				cycles += len(fast)
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
			t.Logf("%d cycles compared", cycles)
		})
	}
}

func metamorphicRun(t *testing.T, depth int, strict bool, seed uint64, naive bool) [][]byte {
	r := rand.New(rand.NewPCG(seed, 77))
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReservationDepth, cfg.Strict = depth, strict
	cfg.FairShare.HalfLife = time.Hour
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 0.75, CapWait: 30 * time.Minute, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 2}
	if seed%3 == 0 {
		cfg.MaxJobsTested = 5
	}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	e.setNaive(naive)
	jobs := randomWorkload(r, c, 40, true)
	for i := range jobs {
		switch r.IntN(6) {
		case 0:
			jobs[i].TimeLimit = 0
		case 1:
			jobs[i].Patience = Patience{MaxDomains: 1, Wait: time.Duration(10+r.IntN(50)) * time.Minute}
		}
	}
	h := newHost(t, e, jobs, seed)
	h.record = true
	h.run()
	if len(h.plans) < 10 {
		t.Fatalf("seed %d: only %d cycles", seed, len(h.plans))
	}
	return h.plans
}

// setNaive switches every cache of the engine to its reference path.
func (e *Engine) setNaive(on bool) {
	e.naive, e.book.naive, e.prof.naive = on, on, on
}
