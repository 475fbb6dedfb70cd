package fairshare

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchSetup builds a tree of accounts x users (root -> account -> user),
// charges random usage to the users over the week before t0, and returns
// jobs pending on random users, submitted within that week.
func benchSetup(tb testing.TB, algo Algorithm, accounts, users, jobs int) (*Tree, []QueuedJob) {
	tb.Helper()
	cfg := testConfig(algo)
	cfg.Weights.JobSize, cfg.ClusterGPUs = 1000, 1024
	cfg.StarvationBound = 5 * 24 * time.Hour
	tr, err := NewTree(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var names []string
	for a := range accounts {
		acct := fmt.Sprintf("acct%03d", a)
		if err := tr.AddAccount("", acct, float64(1+rng.IntN(100))); err != nil {
			tb.Fatal(err)
		}
		for u := range users {
			user := fmt.Sprintf("%s-user%02d", acct, u)
			if err := tr.AddAccount(acct, user, float64(1+rng.IntN(4))); err != nil {
				tb.Fatal(err)
			}
			names = append(names, user)
		}
	}
	for range 5 * len(names) {
		at := t0.Add(-time.Duration(rng.Int64N(int64(week))))
		if err := tr.Charge(names[rng.IntN(len(names))], float64(rng.IntN(8*3600*64)), at); err != nil {
			tb.Fatal(err)
		}
	}
	js := make([]QueuedJob, jobs)
	for i := range js {
		js[i] = QueuedJob{
			ID:        fmt.Sprintf("job%05d", i),
			Account:   names[rng.IntN(len(names))],
			Submit:    t0.Add(-time.Duration(rng.Int64N(int64(week)))),
			GPUs:      1 << rng.IntN(8),
			QOS:       float64(rng.IntN(3)) / 2,
			Partition: 1,
		}
	}
	return tr, js
}

// BenchmarkPrioritize is acceptance point 5: 10,000 pending jobs over
// 1,000 users in 100 accounts, re-ranked after a usage change. Each
// iteration charges one user a GPU-hour a minute later than the last,
// recomputes the view into the same View and ranks all jobs into
// the same slice.
//
// With input=ranked the jobs are passed in their previous ranking, as the
// backfill engine does (the sort's insertion pass then does the work);
// with input=submit in submit order.
func BenchmarkPrioritize(b *testing.B) {
	for _, algo := range []Algorithm{Classic, FairTree} {
		for _, input := range []string{"submit", "ranked"} {
			b.Run("algo="+algo.String()+"/input="+input, func(b *testing.B) {
				benchPrioritize(b, algo, input == "ranked")
			})
		}
	}
}

func benchPrioritize(b *testing.B, algo Algorithm, ranked bool) {
	tr, jobs := benchSetup(b, algo, 100, 10, 10000)
	benchRankLoop(b, tr, jobs, jobs, ranked, (*View).Prioritize, func(r Ranked) int { return r.Index })
}

// BenchmarkRank is BenchmarkPrioritize's case through View.Rank, on jobs
// prepared once (Tree.Prepare, untimed: a scheduler prepares a job when
// it joins the queue, not every cycle).
func BenchmarkRank(b *testing.B) {
	for _, algo := range []Algorithm{Classic, FairTree} {
		for _, input := range []string{"submit", "ranked"} {
			b.Run("algo="+algo.String()+"/input="+input, func(b *testing.B) {
				benchRank(b, algo, input == "ranked")
			})
		}
	}
}

func benchRank(b *testing.B, algo Algorithm, ranked bool) {
	tr, queued := benchSetup(b, algo, 100, 10, 10000)
	jobs := make([]Prepared, len(queued))
	for i := range queued {
		var err error
		if jobs[i], err = tr.Prepare(queued[i]); err != nil {
			b.Fatal(err)
		}
	}
	benchRankLoop(b, tr, queued, jobs, ranked, (*View).Rank, func(r RankEntry) int { return r.Index })
}

// benchRankLoop times one ordering call (rank: Prioritize or Rank) per
// iteration over jobs, after a charge to one of queued's accounts (queued
// and jobs hold the same jobs) and a recomputed view, as a cycle of the
// backfill engine does. With ranked the jobs are passed in the previous
// call's order (the copy is timed: the engine makes it too).
func benchRankLoop[J, R any](b *testing.B, tr *Tree, queued []QueuedJob, jobs []J, ranked bool,
	rank func(*View, []J, []R) ([]R, error), index func(R) int) {
	now := t0
	snap, err := tr.View(now, nil)
	if err != nil {
		b.Fatal(err)
	}
	out, err := rank(snap, jobs, nil)
	if err != nil {
		b.Fatal(err)
	}
	byRank := make([]J, len(jobs))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now = now.Add(time.Minute)
		i++
		if err := tr.Charge(queued[i%len(queued)].Account, 3600, now); err != nil {
			b.Fatal(err)
		}
		if snap, err = tr.View(now, snap); err != nil {
			b.Fatal(err)
		}
		if ranked {
			for k, r := range out {
				byRank[k] = jobs[index(r)]
			}
			jobs, byRank = byRank, jobs
		}
		if out, err = rank(snap, jobs, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(jobs)), "ns/job")
}

// BenchmarkSnapshot isolates the per-account part: 1,100 accounts.
func BenchmarkSnapshot(b *testing.B) {
	for _, algo := range []Algorithm{Classic, FairTree} {
		b.Run("algo="+algo.String(), func(b *testing.B) {
			tr, _ := benchSetup(b, algo, 100, 10, 0)
			snap, err := tr.View(t0, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if snap, err = tr.View(t0, snap); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
