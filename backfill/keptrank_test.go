package backfill

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestKeptRankingFollowsPriorities drives a queue the kept fair-share
// ranking (keptrank.go) must re-rank as time goes: bursts of jobs from
// three accounts submitted seconds apart, with QOS factors less than a
// priority point apart, behind a job that holds the whole cluster, with a
// cycle every few seconds, jobs cancelled now and then, and single jobs
// between the bursts.
// Under checkEach every kept ranking is compared, order, ranks and the
// priorities it computed, with a whole ranking. The test also asserts
// that rounding did reorder jobs between cycles (so the re-ranking was
// needed), that spans were re-ranked, and that the single jobs were not
// scored.
func TestKeptRankingFollowsPriorities(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.OnlyChangedWaits, cfg.Hold.Enabled = true, false
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	e.checkEach = true
	r := rand.New(rand.NewPCG(5, 8))
	now := epoch
	whole := Job{ID: "whole", Account: "a", TimeLimit: 100 * time.Hour,
		Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(4, 8)}}}}
	if err := e.Submit(whole, now); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schedule(now); err != nil {
		t.Fatal(err)
	}
	if err := e.Started("whole", now); err != nil {
		t.Fatal(err)
	}
	cycles, ranked, flips, singles, unscored := 0, 0, 0, 0, 0
	var last []*jobRec
	for step := range 1500 {
		now = now.Add(time.Duration(1+r.IntN(6)) * time.Second)
		if step%20 == 0 { // a job alone, with no QOS
			j := Job{ID: fmt.Sprintf("t%d", step), Account: []string{"a", "b", "c"}[r.IntN(3)], TimeLimit: time.Hour,
				Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(1, 8)}}}}
			if err := e.Submit(j, now); err != nil {
				t.Fatal(err)
			}
		}
		if step%150 == 0 { // a burst
			for i := range 20 {
				j := Job{ID: fmt.Sprintf("s%d-%d", step, i), Account: []string{"a", "b", "c"}[r.IntN(3)],
					Submit: now.Add(-time.Duration(r.IntN(20)) * time.Second), TimeLimit: time.Hour,
					QOS:  float64(r.IntN(3)) * 0.0004,
					Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(1+r.IntN(2), 8)}}}}
				if err := e.Submit(j, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		if step%37 == 0 && len(e.jobs.pending) > 0 {
			if err := e.Cancel(e.jobs.pending[r.IntN(len(e.jobs.pending))].job.ID, now); err != nil {
				t.Fatal(err)
			}
		}
		p, err := e.Schedule(now)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Starts) > 0 {
			t.Fatalf("step %d: %d jobs started on a full cluster", step, len(p.Starts))
		}
		cycles++
		ranked += len(e.order)
		for i, j := range e.order {
			if j.job.ID[0] == 't' {
				singles++
				if e.prio[i] == prioUnknown {
					unscored++
				}
			}
		}
		// Waiting jobs next to each other in the last ranking whose
		// order changed.
		at := map[*jobRec]int{}
		for i, j := range e.order {
			if j.phase == StatePending {
				at[j] = i
			}
		}
		for i := 1; i < len(last); i++ {
			a, okA := at[last[i-1]]
			b, okB := at[last[i]]
			if okA && okB && a > b {
				flips++
			}
		}
		last = last[:0]
		for _, j := range e.order {
			if j.phase == StatePending {
				last = append(last, j)
			}
		}
	}
	kr := &e.kr
	t.Logf("%d cycles, %d kept rankings, %d spans re-ranked, %d of %d jobs ranked scored, %d adjacent pairs reordered", cycles, kr.rankings, kr.reranked, kr.scored, ranked, flips)
	if kr.rankings < uint64(cycles)*9/10 {
		t.Errorf("%d kept rankings in %d cycles", kr.rankings, cycles)
	}
	if kr.reranked == 0 || flips == 0 {
		t.Errorf("%d spans re-ranked, %d pairs reordered: the test queue does not exercise re-ranking", kr.reranked, flips)
	}
	if kr.scored >= uint64(ranked) || unscored*2 < singles {
		t.Errorf("%d of %d jobs ranked were scored, %d of %d single jobs ranked not scored", kr.scored, ranked, unscored, singles)
	}
}

// TestKeptRankingLeaves checks that the kept fair-share ranking hands
// over to a whole ranking, and comes back, when what keeps it valid
// changes: a fair-share factor (another account's job runs), a job
// reaching MaxAge, and the configuration allowing it at all (quotas,
// MaxJobsTested, a starvation bound or age-only weights turn it off).
func TestKeptRankingLeaves(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id, acct string, submit time.Time, nodes int) Job {
		return Job{ID: id, Account: acct, Submit: submit, TimeLimit: time.Hour,
			Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(nodes, 8)}}}}
	}
	t.Run("factors and MaxAge", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.OnlyChangedWaits, cfg.Hold.Enabled = true, false
		cfg.FairShare.MaxAge = 2 * time.Hour
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
		if err != nil {
			t.Fatal(err)
		}
		e.checkEach = true
		now := epoch
		for i, j := range []Job{job("big", "a", now, 3), job("w1", "b", now, 2), job("w2", "a", now, 2)} {
			if err := e.Submit(j, now); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if _, err := e.Schedule(now); err != nil {
					t.Fatal(err)
				}
				if err := e.Started("big", now); err != nil {
					t.Fatal(err)
				}
			}
		}
		kept := func() uint64 {
			t.Helper()
			before := e.kr.rankings
			if _, err := e.Schedule(now); err != nil {
				t.Fatal(err)
			}
			return e.kr.rankings - before
		}
		// Account a's job starts using GPUs: the first minute changes
		// the accounts' order (a now has usage, b none), the next ones
		// do not.
		for i := range 3 {
			now = now.Add(time.Minute)
			if got := kept(); i == 2 && got != 1 {
				t.Fatal("a cycle with the same fair-share factors ranked the queue whole")
			}
		}
		// Account a has run alone so far; b's usage now overtakes it.
		if err := e.Finished("big", now); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Schedule(now); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"w1", "w2"} {
			if err := e.Started(id, now); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Submit(job("w3", "a", now, 1), now); err != nil {
			t.Fatal(err)
		}
		if err := e.Submit(job("w4", "b", now, 4), now); err != nil {
			t.Fatal(err)
		}
		var leaves []time.Duration
		for range 20 {
			now = now.Add(15 * time.Minute)
			if kept() == 0 {
				leaves = append(leaves, now.Sub(epoch))
			}
		}
		if len(leaves) == 0 {
			t.Fatal("changed fair-share factors and a job past MaxAge left the kept ranking on")
		}
		if now.Sub(epoch) < cfg.FairShare.MaxAge || leaves[len(leaves)-1] < cfg.FairShare.MaxAge {
			t.Fatalf("whole rankings at %v: none past MaxAge (%v)", leaves, cfg.FairShare.MaxAge)
		}
	})
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"MaxJobsTested", func(c *Config) { c.MaxJobsTested = 5 }},
		{"starvation bound", func(c *Config) { c.FairShare.StarvationBound = time.Hour }},
		{"age alone", func(c *Config) {
			c.FairShare.Weights.FairShare, c.FairShare.Weights.QOS, c.FairShare.Weights.Partition = 0, 0, 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.set(&cfg)
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			now := epoch
			for i := range 6 {
				if err := e.Submit(job(fmt.Sprint(i), "a", now, 4), now); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Schedule(now); err != nil {
					t.Fatal(err)
				}
				now = now.Add(time.Minute)
			}
			if e.kr.on || e.kr.rankings != 0 {
				t.Fatalf("kept ranking on (%d rankings)", e.kr.rankings)
			}
		})
	}
}
