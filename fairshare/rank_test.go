package fairshare

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRankMatchesPrioritize is the property View.Rank promises: on random
// queues (many ties in priority, submit time and ID; both algorithms;
// favouring small or large jobs; with and without the starvation guard;
// in random, ranked and reversed input order) it gives exactly
// Prioritize's order and priorities.
func TestRankMatchesPrioritize(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		algo := []Algorithm{Classic, FairTree}[trial%2]
		t.Run(fmt.Sprintf("trial=%d/algo=%s", trial, algo), func(t *testing.T) {
			cfg := testConfig(algo)
			cfg.Weights.JobSize, cfg.ClusterGPUs = uint32(rng.IntN(2000)), 1+rng.IntN(2048)
			cfg.FavorSmall = rng.IntN(2) == 0
			if rng.IntN(2) == 0 {
				cfg.StarvationBound = time.Duration(1+rng.IntN(72)) * time.Hour
			}
			tr, queued := benchSetup(t, algo, 1+rng.IntN(6), 1+rng.IntN(4), rng.IntN(300))
			if err := tr.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			spread := 1 + rng.IntN(30)
			for i := range queued {
				// Few distinct IDs, submit times and sizes: many ties.
				queued[i].ID = fmt.Sprintf("j%d", rng.IntN(spread))
				queued[i].Submit = t0.Add(-time.Duration(rng.IntN(spread)) * time.Hour)
				queued[i].GPUs = rng.IntN(3) * 8
			}
			switch trial % 3 {
			case 1: // reversed submission
				slices.Reverse(queued)
			case 2: // the previous ranking's order, a few moved
				prev, err := tr.Prioritize(queued, t0, nil)
				if err != nil {
					t.Fatal(err)
				}
				byRank := make([]QueuedJob, len(queued))
				for k, r := range prev {
					byRank[k] = queued[r.Index]
				}
				queued = byRank
			}
			now := t0.Add(time.Duration(rng.IntN(100)) * time.Hour)
			v, err := tr.View(now, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := v.Prioritize(queued, nil)
			if err != nil {
				t.Fatal(err)
			}
			jobs, got := prepareAndRank(t, tr, v, queued)
			if len(got) != len(want) {
				t.Fatalf("Rank gave %d entries, Prioritize %d", len(got), len(want))
			}
			for k := range want {
				if got[k].Index != want[k].Index || got[k].Priority != want[k].Priority {
					t.Fatalf("rank %d: Rank has job %d (priority %d), Prioritize job %d (%s)",
						k, got[k].Index, got[k].Priority, want[k].Index, want[k])
				}
				if id := jobs[got[k].Index].ID(); id != want[k].ID {
					t.Fatalf("rank %d: Prepared.ID %q, Prioritize %q", k, id, want[k].ID)
				}
				if p, err := v.Priority(&jobs[got[k].Index]); err != nil || p != want[k].Priority {
					t.Fatalf("rank %d: Priority gives %d (%v), Prioritize %d", k, p, err, want[k].Priority)
				}
			}
		})
	}
}

// TestSubmitOrdered is the promise of Weights.SubmitOrdered: with only
// the age factor weighted (any weight, maximum age, starvation guard and
// boost), Rank orders random queues by submit time and then ID, whatever
// the accounts' usage, the jobs' sizes and QOS and partition factors,
// and the time (jobs submitted after it included); a queue kept in that
// order needs no ranking. With any other weight set it says no.
func TestSubmitOrdered(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 200 {
		t.Run(fmt.Sprintf("trial=%d", trial), func(t *testing.T) {
			algo := []Algorithm{Classic, FairTree}[trial%2]
			tr, queued := benchSetup(t, algo, 1+rng.IntN(6), 1+rng.IntN(4), 1+rng.IntN(300))
			cfg := testConfig(algo)
			cfg.Weights = Weights{Age: uint32(1 + rng.IntN(5000))}
			cfg.MaxAge = time.Duration(1+rng.IntN(200)) * time.Hour
			if rng.IntN(2) == 0 {
				cfg.StarvationBound = time.Duration(1+rng.IntN(72)) * time.Hour
				cfg.StarvationBoost = uint64(rng.IntN(3))
			}
			if !cfg.Weights.SubmitOrdered() {
				t.Fatalf("weights %+v: not submit-ordered", cfg.Weights)
			}
			if err := tr.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			spread := 1 + rng.IntN(100)
			for i := range queued {
				queued[i].ID = fmt.Sprintf("j%04d", rng.IntN(10000)*len(queued)+i) // unique
				queued[i].Submit = t0.Add(time.Duration(rng.IntN(spread)-spread/2) * time.Hour)
				queued[i].GPUs = rng.IntN(64)
				queued[i].QOS, queued[i].Partition = rng.Float64(), rng.Float64()
			}
			v, err := tr.View(t0.Add(time.Duration(rng.IntN(300))*time.Hour), nil)
			if err != nil {
				t.Fatal(err)
			}
			jobs, got := prepareAndRank(t, tr, v, queued)
			want := make([]int, len(jobs))
			for i := range want {
				want[i] = i
			}
			slices.SortFunc(want, func(a, b int) int {
				if c := cmp.Compare(jobs[a].Submitted(), jobs[b].Submitted()); c != 0 {
					return c
				}
				return strings.Compare(jobs[a].ID(), jobs[b].ID())
			})
			for k := range want {
				if got[k].Index != want[k] {
					t.Fatalf("rank %d: Rank has job %s, submit order job %s", k, jobs[got[k].Index].ID(), jobs[want[k]].ID())
				}
			}
		})
	}
	for _, w := range []Weights{{Age: 1, FairShare: 1}, {Age: 1, JobSize: 1}, {QOS: 1}, {Age: 1, Partition: 1}} {
		if w.SubmitOrdered() {
			t.Errorf("weights %+v: submit-ordered", w)
		}
	}
}

// prepareAndRank prepares queued with tr and ranks them in view v.
func prepareAndRank(t *testing.T, tr *Tree, v *View, queued []QueuedJob) ([]Prepared, []RankEntry) {
	t.Helper()
	jobs := make([]Prepared, len(queued))
	for i := range queued {
		var err error
		if jobs[i], err = tr.Prepare(queued[i]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := v.Rank(jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return jobs, got
}

// TestRankRejects checks the jobs Rank refuses, each named in the error:
// the zero Prepared, a job prepared by another tree, and a job whose
// account has since been given a sub-account (as Prioritize refuses it).
func TestRankRejects(t *testing.T) {
	spec, err := ParseText("a\nb\nc")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := BuildTree(spec, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	other, err := ParseText("x\nb")
	if err != nil {
		t.Fatal(err)
	}
	tr2, err := BuildTree(other, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prep := func(tr *Tree, id, acct string) Prepared {
		t.Helper()
		p, err := tr.Prepare(QueuedJob{ID: id, Account: acct, Submit: t0})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := prep(tr, "ok", "b")
	foreign := prep(tr2, "foreign", "x")
	grown := prep(tr, "grown", "c")
	if err := tr.AddAccount("c", "c1", 1); err != nil {
		t.Fatal(err)
	}
	v, err := tr.View(t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		job  Prepared
		want error
		id   string
	}{
		{"zero", Prepared{}, ErrUnknownAccount, `""`},
		{"foreign", foreign, ErrUnknownAccount, `"foreign"`},
		{"grown", grown, ErrNotLeaf, `"grown"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := v.Rank([]Prepared{good, tc.job}, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), "job "+tc.id) {
				t.Errorf("error %q does not name job %s", err, tc.id)
			}
			if len(out) != 0 {
				t.Errorf("%d entries returned with the error", len(out))
			}
		})
	}
	if _, err := tr.Prepare(QueuedJob{ID: "late", Account: "c", Submit: t0}); !errors.Is(err, ErrNotLeaf) {
		t.Errorf("Prepare on a non-leaf: %v, want ErrNotLeaf", err)
	}
	if _, err := tr.Prepare(QueuedJob{ID: "nobody", Account: "zz", Submit: t0}); !errors.Is(err, ErrUnknownAccount) {
		t.Errorf("Prepare on an unknown account: %v, want ErrUnknownAccount", err)
	}
}

// TestRankNoAllocations: ranking into a slice with room allocates nothing.
func TestRankNoAllocations(t *testing.T) {
	tr, queued := benchSetup(t, FairTree, 10, 4, 500)
	jobs := make([]Prepared, len(queued))
	for i := range queued {
		var err error
		if jobs[i], err = tr.Prepare(queued[i]); err != nil {
			t.Fatal(err)
		}
	}
	v, err := tr.View(t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]RankEntry, 0, len(jobs))
	if n := testing.AllocsPerRun(20, func() {
		if out, err = v.Rank(jobs, out); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Rank allocates %v times per call", n)
	}
}

// TestStaticOrdersPriorities is the promise of View.Static, on random
// queues whose jobs stay below MaxAge: a job's static part plus the age
// weight times its wait over MaxAge is its priority before rounding, and
// so is its key (that sum at a fixed instant) plus the age weight times
// the time since over MaxAge at every later instant; and a key higher than
// another's by over one point ranks the job strictly above it at every
// later instant.
func TestStaticOrdersPriorities(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	for trial := range 200 {
		algo := []Algorithm{Classic, FairTree}[trial%2]
		t.Run(fmt.Sprintf("trial=%d/algo=%s", trial, algo), func(t *testing.T) {
			cfg := testConfig(algo)
			cfg.Weights = Weights{Age: uint32(rng.IntN(5_000_000)), FairShare: uint32(rng.IntN(3000)),
				JobSize: uint32(rng.IntN(3)), QOS: uint32(rng.IntN(2000)), Partition: uint32(rng.IntN(2))}
			cfg.ClusterGPUs, cfg.FavorSmall = 64, rng.IntN(2) == 0
			cfg.MaxAge = time.Duration(200+rng.IntN(1000)) * time.Hour
			tr, queued := benchSetup(t, algo, 1+rng.IntN(4), 1+rng.IntN(3), 2+rng.IntN(60))
			if err := tr.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			for i := range queued {
				queued[i].ID = fmt.Sprintf("j%d", i)
				// A few instants and seconds apart: keys within a point.
				queued[i].Submit = t0.Add(-time.Duration(rng.IntN(4))*time.Hour - time.Duration(rng.IntN(20))*time.Second)
				queued[i].GPUs = rng.IntN(3) * 8
				queued[i].QOS = float64(rng.IntN(3)) * 0.0005
			}
			v0, err := tr.View(t0, nil)
			if err != nil {
				t.Fatal(err)
			}
			jobs := make([]Prepared, len(queued))
			keys := make([]float64, len(queued))
			for i := range queued {
				if jobs[i], err = tr.Prepare(queued[i]); err != nil {
					t.Fatal(err)
				}
				st, err := v0.Static(&jobs[i])
				if err != nil {
					t.Fatal(err)
				}
				keys[i] = st + float64(cfg.Weights.Age)*float64(t0.Sub(queued[i].Submit))/float64(cfg.MaxAge)
				if p, _ := v0.Priority(&jobs[i]); math.Abs(keys[i]-float64(p)) > 0.5+1e-6 {
					t.Fatalf("job %d: static part plus age %.6f, priority %d", i, keys[i], p)
				}
			}
			// Later instants, the same usage (no charges): the same
			// fair-share factors.
			for step := range 5 {
				dt := time.Duration(step*37) * time.Second
				v, err := tr.View(t0.Add(dt), nil)
				if err != nil {
					t.Fatal(err)
				}
				gained := float64(cfg.Weights.Age) * float64(dt) / float64(cfg.MaxAge)
				for a := range jobs {
					pa, _ := v.Priority(&jobs[a])
					if math.Abs(keys[a]+gained-float64(pa)) > 0.5+1e-6 {
						t.Fatalf("step %d: job %d's key plus the age gained %.6f, priority %d", step, a, keys[a]+gained, pa)
					}
					for b := range jobs {
						pb, _ := v.Priority(&jobs[b])
						if keys[a]-keys[b] > 1+1e-6 && pa <= pb {
							t.Fatalf("step %d: job %d's key exceeds job %d's by %.6f, priorities %d and %d", step, a, b, keys[a]-keys[b], pa, pb)
						}
					}
				}
			}
		})
	}
}

// TestStaticKeyErrorBound pins the float error a scheduler that keeps
// its queue between views may assume (backfill's kept ranking does): for
// weights up to 2^32, a job's key (Static plus the age weight times its
// wait at a fixed instant over MaxAge) plus the age weight times the time
// since over MaxAge, at most Static plus the age weight (the age factor
// capped at 1), is within (Weights.Total()+1)·2^-40 of the weighted sum
// Prioritize rounds, at every later instant within MaxAge of the fixed
// one, for jobs below and past MaxAge.
func TestStaticKeyErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	for trial := range 300 {
		algo := []Algorithm{Classic, FairTree}[trial%2]
		cfg := testConfig(algo)
		w := func() uint32 { return uint32(rng.Uint64N(1 << 32)) }
		cfg.Weights = Weights{Age: w(), FairShare: w(), JobSize: w(), QOS: w(), Partition: w()}
		cfg.ClusterGPUs, cfg.FavorSmall = 64, rng.IntN(2) == 0
		cfg.MaxAge = time.Duration(1+rng.IntN(1000)) * time.Hour
		tr, queued := benchSetup(t, algo, 1+rng.IntN(4), 1+rng.IntN(3), 2+rng.IntN(40))
		if err := tr.SetConfig(cfg); err != nil {
			t.Fatal(err)
		}
		for i := range queued {
			queued[i].Submit = t0.Add(-time.Duration(rng.Int64N(2 * int64(cfg.MaxAge))))
			queued[i].GPUs = rng.IntN(80)
			queued[i].QOS, queued[i].Partition = rng.Float64(), rng.Float64()
		}
		v0, err := tr.View(t0, nil)
		if err != nil {
			t.Fatal(err)
		}
		slack := float64(cfg.Weights.Total()+1) * 0x1p-40
		age, maxAge := float64(cfg.Weights.Age), float64(cfg.MaxAge)
		keys, capped := make([]float64, len(queued)), make([]float64, len(queued))
		for i := range queued {
			p, err := tr.Prepare(queued[i])
			if err != nil {
				t.Fatal(err)
			}
			st, err := v0.Static(&p)
			if err != nil {
				t.Fatal(err)
			}
			keys[i] = st + age*(float64(t0.UnixNano()-p.Submitted())/maxAge)
			capped[i] = st + age
		}
		for range 5 {
			now := t0.Add(time.Duration(rng.Int64N(int64(cfg.MaxAge))))
			v, err := tr.View(now, nil)
			if err != nil {
				t.Fatal(err)
			}
			gained := age * (float64(now.UnixNano()-t0.UnixNano()) / maxAge)
			ranked, err := v.Prioritize(queued, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range ranked {
				d := math.Abs(min(keys[r.Index]+gained, capped[r.Index]) - r.Weighted.Sum())
				worst = max(worst, d/slack)
				if d > slack {
					t.Fatalf("trial %d: job %d's key plus the gain is %g from its weighted sum, over the bound %g", trial, r.Index, d, slack)
				}
			}
		}
	}
	t.Logf("largest error: %.3g of the bound", worst)
}
