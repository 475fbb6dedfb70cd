package backfill

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
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
// Under checkEach every kept ranking is compared, order and priorities,
// with a whole ranking. The test also asserts that rounding did reorder
// jobs between cycles (so mending the order was needed), and that jobs
// were promoted and merged.
func TestKeptRankingFollowsPriorities(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.OnlyChangedWaits, cfg.Hold.Enabled = true, false
	e := fullCluster(t, c, cfg, "a", "b", "c")
	r := rand.New(rand.NewPCG(5, 8))
	now := epoch
	cycles, ranked, flips := 0, 0, 0
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
	t.Logf("%d cycles, %d kept rankings, %d of %d jobs ranked promoted, %d merged, %d adjacent pairs reordered", cycles, kr.rankings, kr.promoted, ranked, kr.merged, flips)
	if kr.rankings < uint64(cycles)*9/10 {
		t.Errorf("%d kept rankings in %d cycles", kr.rankings, cycles)
	}
	if kr.promoted == 0 || kr.merged == 0 || flips == 0 {
		t.Errorf("%d jobs promoted, %d merged, %d pairs reordered: the test queue does not exercise the kept ranking", kr.promoted, kr.merged, flips)
	}
}

// TestKeptRankingLeaves checks that the kept fair-share ranking hands
// over to a whole ranking, and comes back, when what keeps it valid
// changes: a fair-share factor (another account's job runs), keys a
// MaxAge old (computed again), and the configuration allowing it at all
// (quotas, MaxJobsTested, a starvation bound or age-only weights turn it
// off).
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
			t.Fatal("changed fair-share factors and keys a MaxAge old left the kept ranking on")
		}
		if now.Sub(epoch) < cfg.FairShare.MaxAge || leaves[len(leaves)-1] < cfg.FairShare.MaxAge {
			t.Fatalf("whole rankings at %v: none once the keys were MaxAge (%v) old", leaves, cfg.FairShare.MaxAge)
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

// keptQueue makes an engine under fair-share weights with checkEach on
// (every kept ranking compared with a whole one) on a full 4-node cluster
// (account a runs on two nodes, b and c on one each), and n whole-cluster jobs
// waiting from accounts a, b and c with QOS factors less than a point
// apart, submitted a minute apart. set, if given, changes the
// configuration first.
func keptQueue(t *testing.T, n int, set ...func(*Config)) (*Engine, *fairshare.Tree, time.Time) {
	t.Helper()
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.OnlyChangedWaits, cfg.Hold.Enabled = true, false
	for _, f := range set {
		f(&cfg)
	}
	tree := flatTree(t, cfg.FairShare, "a", "b", "c")
	e, err := New(c, cfg, tree)
	if err != nil {
		t.Fatal(err)
	}
	e.checkEach = true
	now := epoch
	for _, r := range []struct {
		id, acct string
		nodes    int
	}{{"ra", "a", 2}, {"rb", "b", 1}, {"rc", "c", 1}} {
		j := Job{ID: r.id, Account: r.acct, TimeLimit: 1000 * time.Hour,
			Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(r.nodes, 8)}}}}
		if err := e.Submit(j, now); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.Schedule(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Starts) != 3 {
		t.Fatalf("%d of the 3 running jobs started", len(p.Starts))
	}
	for _, id := range []string{"ra", "rb", "rc"} {
		if err := e.Started(id, now); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		now = now.Add(time.Minute)
		j := Job{ID: fmt.Sprintf("w%02d", i), Account: []string{"a", "b", "c"}[i%3], TimeLimit: time.Hour,
			QOS:  float64(i%4) * 0.0004,
			Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(4, 8)}}}}
		if err := e.Submit(j, now); err != nil {
			t.Fatal(err)
		}
	}
	return e, tree, now
}

// TestKeptRankingBacksOff checks the back-off of the kept fair-share
// ranking: when every cycle changes the priority configuration (so no
// kept ranking lasts), keys are computed in few cycles, not in each; once
// the changes stop, rankings are kept again within the longest back-off;
// and after a kept ranking that lasted, a change does not delay the keys.
// checkEach compares every kept ranking with a whole one.
func TestKeptRankingBacksOff(t *testing.T) {
	e, tree, now := keptQueue(t, 30)
	kr := &e.kr
	cycle := func() {
		t.Helper()
		now = now.Add(time.Minute)
		if _, err := e.Schedule(now); err != nil {
			t.Fatal(err)
		}
	}
	base := tree.Config()
	other := base
	other.Weights.QOS += 1000
	const churn = 200 // ends on other
	for i := range churn {
		cfg := base
		if i%2 == 1 {
			cfg = other
		}
		if err := tree.SetConfig(cfg); err != nil {
			t.Fatal(err)
		}
		cycle()
	}
	t.Logf("under churn: keys computed in %d of %d cycles, %d kept rankings, back-off %d", kr.keyed, churn, kr.rankings, kr.backoff)
	if kr.keyed == 0 || kr.keyed*16 > churn {
		t.Errorf("keys computed in %d of %d cycles whose configuration changed each time; want at least one and at most 1/16", kr.keyed, churn)
	}
	if kr.rankings != 0 {
		t.Errorf("%d rankings kept across configuration changes", kr.rankings)
	}
	// Quiet: kept again within the longest back-off (64 cycles, and one
	// to compute the keys).
	const quiet = 80
	before := kr.rankings
	for range quiet {
		cycle()
	}
	if got := kr.rankings - before; got < quiet-65 {
		t.Errorf("%d of %d quiet cycles kept the ranking; want at least %d", got, quiet, quiet-65)
	}
	// While the ranking is kept, the last whole ranking's scratch and the
	// list of joined jobs hold no job's record (they would keep ended
	// jobs alive).
	for name, list := range map[string][]*jobRec{"lastRanking": e.lastRanking, "rankIn": e.rankIn, "joined": kr.joined} {
		for i, j := range list[:cap(list)] {
			if j != nil {
				t.Errorf("%s[%d] holds job %s while the ranking is kept", name, i, j.job.ID)
				break
			}
		}
	}
	for i, p := range e.preps[:cap(e.preps)] {
		if p != (fairshare.Prepared{}) {
			t.Errorf("preps[%d] holds job %s while the ranking is kept", i, p.ID())
			break
		}
	}
	// One change after a lasting kept ranking: the cycle that sees it
	// ranks whole and computes the keys again at once.
	keyed, before := kr.keyed, kr.rankings
	if err := tree.SetConfig(base); err != nil {
		t.Fatal(err)
	}
	cycle()
	if kr.rankings != before || kr.keyed != keyed+1 {
		t.Errorf("the cycle after a change kept %d rankings and computed keys %d times; want 0 and 1", kr.rankings-before, kr.keyed-keyed)
	}
	cycle()
	if kr.rankings != before+1 {
		t.Error("the cycle after the keys were computed again did not keep the ranking")
	}
}

// TestKeptRankingFollowsCallerChanges changes, between two cycles of a
// kept fair-share ranking, what the caller may change through the tree or
// the engine: the configuration, an account's shares, a new account with
// a job. checkEach compares every kept ranking with a whole one; the test
// also checks that the changed cycle ranked whole, that the next ones are
// kept again, and the job the change puts first.
func TestKeptRankingFollowsCallerChanges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		apply func(*testing.T, *Engine, *fairshare.Tree, time.Time)
		first string // the account whose job ranks first after the change
	}{
		{"SetConfig", func(t *testing.T, _ *Engine, tree *fairshare.Tree, _ time.Time) {
			cfg := tree.Config()
			cfg.Weights.QOS = 10000 * cfg.Weights.FairShare // the QOS factor now decides
			if err := tree.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
		}, "QOS 0.0012"},
		{"SetShares", func(t *testing.T, _ *Engine, tree *fairshare.Tree, _ time.Time) {
			if err := tree.SetShares("a", 1000); err != nil {
				t.Fatal(err)
			}
		}, "a"},
		{"Engine.AddAccount", func(t *testing.T, e *Engine, _ *fairshare.Tree, now time.Time) {
			if err := e.AddAccount("", "d", 1); err != nil {
				t.Fatal(err)
			}
			j := Job{ID: "wd", Account: "d", TimeLimit: time.Hour,
				Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(4, 8)}}}}
			if err := e.Submit(j, now); err != nil {
				t.Fatal(err)
			}
		}, "d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Fair share weighted 1,000 (the default before 500): a new
			// account's job outranks the queue's older ones.
			e, tree, now := keptQueue(t, 24, func(c *Config) { c.FairShare.Weights.FairShare = 1000 })
			kr := &e.kr
			cycle := func() uint64 {
				t.Helper()
				now = now.Add(time.Minute)
				before := kr.rankings
				if _, err := e.Schedule(now); err != nil {
					t.Fatal(err)
				}
				return kr.rankings - before
			}
			for range 5 {
				cycle()
			}
			if cycle() != 1 {
				t.Fatal("the ranking was not kept before the change")
			}
			first := func() (string, string) {
				top := e.order[0].job
				if tc.first[0] == 'Q' {
					return top.ID, fmt.Sprintf("QOS %.4f", top.QOS)
				}
				return top.ID, top.Account
			}
			if id, got := first(); got == tc.first {
				t.Fatalf("job %s (%s) first before the change", id, got)
			}
			tc.apply(t, e, tree, now)
			if cycle() != 0 {
				t.Fatal("the cycle after the change kept the ranking")
			}
			if id, got := first(); got != tc.first {
				t.Errorf("job %s (%s) first after the change; want %s", id, got, tc.first)
			}
			for range 5 {
				cycle()
			}
			if cycle() != 1 {
				t.Error("the ranking was not kept again after the change")
			}
		})
	}
}

// TestKeptRankingNearHalfPoints drives the kept fair-share ranking with an
// age weight near 2^32, where a priority before rounding carries a float
// error of about a fiftieth of a point: bursts of one account's jobs
// submitted at the same instant with QOS factors under a point apart are
// re-ranked every cycle, and the priorities whose keys fall within that
// error of half a point must come from the jobs' records (checkEach
// compares every kept ranking, order and priorities, with a whole one).
// The keys' actual errors are far below the bound, so rounding them there
// would agree too: the test shows the fallback runs and is right (a
// fallback that floors is caught), not that rounding would fail.
func TestKeptRankingNearHalfPoints(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.OnlyChangedWaits, cfg.Hold.Enabled = true, false
	cfg.FairShare.Weights = fairshare.Weights{Age: math.MaxUint32, QOS: 1000}
	e := fullCluster(t, c, cfg, "a")
	now := epoch
	r := rand.New(rand.NewPCG(3, 7))
	for step := range 400 {
		if step%40 == 0 {
			for i := range 12 {
				j := Job{ID: fmt.Sprintf("b%d-%02d", step, i), Account: "a", TimeLimit: time.Hour,
					QOS:  float64(r.IntN(3)) * 0.0004,
					Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(4, 8)}}}}
				if err := e.Submit(j, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		now = now.Add(time.Duration(1+r.IntN(1000)) * time.Millisecond)
		if _, err := e.Schedule(now); err != nil {
			t.Fatal(err)
		}
	}
	kr := &e.kr
	t.Logf("%d kept rankings, %d jobs promoted, %d priorities computed exactly", kr.rankings, kr.promoted, kr.exact)
	if kr.rankings < 300 || kr.exact == 0 {
		t.Errorf("%d kept rankings in 400 cycles, %d priorities computed exactly: the test does not exercise the fallback", kr.rankings, kr.exact)
	}
}

// TestIDPrefixOrdersIDs checks that idPrefix orders two IDs as the IDs
// order wherever their prefixes differ (keptAfter compares prefixes
// before the IDs).
func TestIDPrefixOrdersIDs(t *testing.T) {
	ids := []string{"", "a", "a0", "ab", "ab\x00", "abcdefgh", "abcdefgh1", "abcdefgi", "b", "9", "10", "job-0001", "job-0002", "\xff", "é"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = "0129az-\x00\xff"[r.IntN(9)]
		}
		ids = append(ids, string(b))
	}
	for _, a := range ids {
		for _, b := range ids[:40] {
			pa, pb := idPrefix(a), idPrefix(b)
			if pa != pb && (pa < pb) != (a < b) {
				t.Fatalf("idPrefix(%q) = %#x, idPrefix(%q) = %#x: ordered unlike the IDs", a, pa, b, pb)
			}
		}
	}
}

// TestKeptRankingPastMaxAge keeps the fair-share ranking while jobs wait
// past MaxAge (an hour here), when their age factor stops growing and
// jobs submitted later catch up with them: the kept order caps each
// job's priority at its static part plus the age weight. Jobs join every
// ten minutes; checkEach compares every kept ranking with a whole one. The
// ranking must stay kept but for the cycles that compute the keys again
// (every MaxAge), with jobs past MaxAge in it.
func TestKeptRankingPastMaxAge(t *testing.T) {
	e, _, now := keptQueue(t, 30, func(c *Config) {
		c.FairShare.MaxAge = time.Hour
		c.FairShare.Weights.Age = 20_000 // a point every 0.18 s of waiting
	})
	kr := &e.kr
	const cycles = 300
	for i := range cycles {
		now = now.Add(time.Minute)
		if i%10 == 0 {
			j := Job{ID: fmt.Sprintf("x%03d", i), Account: []string{"a", "b", "c"}[i%3], TimeLimit: time.Hour,
				QOS:  float64(i%4) * 0.0004,
				Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(4, 8)}}}}
			if err := e.Submit(j, now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Schedule(now); err != nil {
			t.Fatal(err)
		}
	}
	capped := 0
	for _, j := range e.jobs.pending {
		if now.Sub(j.job.Submit) >= time.Hour {
			capped++
		}
	}
	t.Logf("%d kept rankings in %d cycles, keys computed %d times, %d jobs promoted, %d of %d waiting past MaxAge", kr.rankings, cycles, kr.keyed, kr.promoted, capped, len(e.jobs.pending))
	if kr.rankings < cycles-cycles/50 || capped < 20 || !kr.on {
		t.Errorf("%d kept rankings in %d cycles with %d of %d jobs past MaxAge: want all but the re-keying ones kept", kr.rankings, cycles, capped, len(e.jobs.pending))
	}
	// A job capped for a minute has a priority that no longer changes:
	// the kept ranking computes it no more.
	for i, j := range e.order {
		if j.phase == StatePending && now.Sub(j.job.Submit) >= time.Hour+time.Minute && !math.IsInf(kr.keys[i].cross, 1) {
			t.Errorf("job %s, waiting %v past MaxAge, is computed again from gain %g", j.job.ID, now.Sub(j.job.Submit)-time.Hour, kr.keys[i].cross)
		}
	}
}

// TestKeptRankingPromoteDown drives promote's branch for a priority that
// fell (which the engine never produces) and its revisit of the job moved
// into position i: every kept job's recorded priority is raised by 20
// (the order stays sorted) and its cross reset, so that every job is
// computed again and moves down past the jobs within 20 points after it.
func TestKeptRankingPromoteDown(t *testing.T) {
	e, _, now := keptQueue(t, 24)
	for range 6 {
		now = now.Add(time.Minute)
		if _, err := e.Schedule(now); err != nil {
			t.Fatal(err)
		}
	}
	kr := &e.kr
	if !kr.on || kr.rankings == 0 {
		t.Fatal("ranking not kept")
	}
	for i := range kr.keys {
		kr.keys[i].prio += 20
		kr.keys[i].cross = math.Inf(-1)
	}
	moved := kr.promoted
	e.promote()
	if got := kr.promoted - moved; got != uint64(len(kr.keys)) {
		t.Fatalf("%d of %d jobs moved", got, len(kr.keys))
	}
	e.checkKept() // panics on a wrong order or priority
}

// TestKeptRankingSpareCapacity checks that the slices the ranking reuses
// keep no record of a job the engine forgot in their spare capacity: jobs
// are cancelled while the ranking is kept, then the queue is ranked whole
// (a changed configuration) with fewer jobs than the slices held.
func TestKeptRankingSpareCapacity(t *testing.T) {
	e, tree, now := keptQueue(t, 40)
	for range 3 {
		now = now.Add(time.Minute)
		if _, err := e.Schedule(now); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 8 { // at most 16 leave: no compaction
		if err := e.Cancel(fmt.Sprintf("w%02d", 4*i+1), now); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Minute)
	if _, err := e.Schedule(now); err != nil {
		t.Fatal(err)
	}
	cfg := tree.Config()
	cfg.Weights.QOS++
	if err := tree.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	for range 20 { // past KeepEnded: the cancelled jobs are forgotten
		now = now.Add(time.Minute)
		if _, err := e.Schedule(now); err != nil {
			t.Fatal(err)
		}
	}
	for name, list := range map[string][]*jobRec{"order": e.order, "order2": e.kr.order2,
		"lastRanking": e.lastRanking, "rankIn": e.rankIn, "joined": e.kr.joined} {
		for _, j := range list[len(list):cap(list)] {
			if j != nil {
				t.Errorf("%s's spare capacity holds job %s (%s)", name, j.job.ID, j.phase)
				break
			}
		}
	}
}

// fullCluster makes an engine with configuration cfg and checkEach on,
// on cluster c, which a job of accounts[0] started at epoch fills (its
// limit a thousand hours).
func fullCluster(t *testing.T, c *topology.Cluster, cfg Config, accounts ...string) *Engine {
	t.Helper()
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, accounts...))
	if err != nil {
		t.Fatal(err)
	}
	e.checkEach = true
	whole := Job{ID: "whole", Account: accounts[0], TimeLimit: 1000 * time.Hour,
		Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(c.NumNodes(), c.Node(0).GPUs)}}}}
	if err := e.Submit(whole, epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schedule(epoch); err != nil {
		t.Fatal(err)
	}
	if err := e.Started("whole", epoch); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSubmitOrderFollowsTreeWeights changes the tree's weights from age
// alone (the queue kept in submit order, fifo.go) to weights under which
// a job submitted last ranks first: the next cycle must rank by the new
// weights (checkEach compares every kept order with a whole ranking).
func TestSubmitOrderFollowsTreeWeights(t *testing.T) {
	e, tree, now := keptQueue(t, 10, func(c *Config) {
		c.FairShare.Weights = fairshare.Weights{Age: 1000}
	})
	for range 2 {
		now = now.Add(time.Minute)
		if _, err := e.Schedule(now); err != nil {
			t.Fatal(err)
		}
	}
	if !e.fifo.on {
		t.Fatal("age-only weights did not keep the queue in submit order")
	}
	cfg := tree.Config()
	cfg.Weights = fairshare.Weights{Age: 1000, QOS: 100000}
	if err := tree.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	late := Job{ID: "late", Account: "a", TimeLimit: time.Hour, QOS: 1,
		Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(4, 8)}}}}
	if err := e.Submit(late, now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if _, err := e.Schedule(now); err != nil {
		t.Fatal(err)
	}
	if top := e.order[0].job.ID; top != "late" || e.fifo.on {
		t.Errorf("job %s first (submit order kept: %v); want late, ranked by its QOS", top, e.fifo.on)
	}
}
