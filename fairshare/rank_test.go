package fairshare

import (
	"errors"
	"fmt"
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
			jobs := make([]Prepared, len(queued))
			for i := range queued {
				if jobs[i], err = tr.Prepare(queued[i]); err != nil {
					t.Fatal(err)
				}
			}
			got, err := v.Rank(jobs, nil)
			if err != nil {
				t.Fatal(err)
			}
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
			}
		})
	}
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
