package backfill

import (
	"flag"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// quotaWatch checks every plan of a driven run with queues. Its checks
// work from the queue specs and the jobs alone, not from the engine's
// quota counts.
type quotaWatch struct {
	t *testing.T
	e *Engine
	// d is the driver, nil when a late host drives the engine.
	d     *driver
	w     int
	specs []QueueSpec
	total int
	grace time.Duration
	// kids per queue index (len(specs): the top queues); starved is when
	// each queue first had, after a cycle, a waiting job its guarantee
	// covers without a claim (zero: none); allocs where each active job
	// started.
	kids    [][]int
	starved []time.Time
	// timing: check the reclaim promise (off with reservations and holds,
	// which reclaim keeps off).
	timing bool
	allocs map[string]gang.Allocation
	stats  struct{ reclaims, quotaWaits, borrowed, starvedCycles int }
}

func newQuotaWatch(t *testing.T, d *driver, w int, cfg *Config, total int) *quotaWatch {
	qw := quotaOracle(cfg.Quotas.Queues, total)
	qw.t, qw.e, qw.d, qw.w, qw.grace, qw.timing = t, d.e, d, w, cfg.Preemption.Grace, cfg.ReservationDepth == 0 && !cfg.Hold.Enabled
	d.afterCycle = qw.check
	return qw
}

// quotaOracle returns a watch that knows only the queue specs (for
// quotaErrors and effective).
func quotaOracle(specs []QueueSpec, total int) *quotaWatch {
	n := len(specs)
	qw := &quotaWatch{specs: specs, total: total, kids: make([][]int, n+1), starved: make([]time.Time, n), allocs: map[string]gang.Allocation{}}
	idx := map[string]int{}
	for i, q := range qw.specs {
		idx[q.Name] = i
		p := n
		if q.Parent != "" {
			p = idx[q.Parent]
		}
		qw.kids[p] = append(qw.kids[p], i)
	}
	return qw
}

func (qw *quotaWatch) fail(p *Plan, format string, args ...any) {
	qw.t.Fatalf("workload %d, cycle at %v: %s", qw.w, p.Time.Sub(epoch), fmt.Sprintf(format, args...))
}

// use returns each queue's use (its subtree's starting and running jobs
// and claims), recounted from the jobs.
func (qw *quotaWatch) use() []int {
	e := qw.e
	use := make([]int, len(qw.specs))
	var add func(q, g int)
	add = func(q, g int) {
		use[q] += g
		for i, s := range qw.specs {
			if s.Name == qw.specs[q].Parent {
				add(i, g)
			}
		}
	}
	for _, j := range e.jobs.byID {
		switch {
		case j.phase == StateStarting || j.phase == StateRunning:
			add(e.quota.index[j.job.Queue], j.used)
		case j.phase == StatePending && j.claim != nil:
			add(e.quota.index[j.job.Queue], j.claim.alloc.GPUs())
		}
	}
	return use
}

// effective returns queue q's effective use: its own for a queue without
// children, else the sum over its children of the larger of theirs and
// the guarantee they keep from lending.
func (qw *quotaWatch) effective(q int, use []int) int {
	if len(qw.kids[q]) == 0 {
		return use[q]
	}
	sum := 0
	for _, c := range qw.kids[q] {
		sum += max(qw.effective(c, use), qw.kept(c))
	}
	return sum
}

// kept is the part of queue c's guarantee it does not lend.
func (qw *quotaWatch) kept(c int) int {
	s := qw.specs[c]
	if s.LendingLimit == Unlimited {
		return 0
	}
	return s.Guarantee - min(s.Guarantee, s.LendingLimit)
}

// check runs after every cycle.
func (qw *quotaWatch) check(p *Plan) {
	use := qw.use()
	qw.limits(p, use)
	qw.reclaimed(p, use)
	qw.wholeGangs(p)
}

// limits checks the engine's report of every queue against the
// recount, and the quotas (quotaErrors).
func (qw *quotaWatch) limits(p *Plan, use []int) {
	status := qw.e.Queues()
	for q, s := range qw.specs {
		eff := qw.effective(q, use)
		if st := status[q]; st.Name != s.Name || st.Used != use[q] || st.Borrowed != max(0, eff-s.Guarantee) {
			qw.fail(p, "Queues reports %+v; recounted: use %d, effective %d", st, use[q], eff)
		}
		if eff > s.Guarantee {
			qw.stats.borrowed++
		}
	}
	if errs := qw.quotaErrors(use); len(errs) > 0 {
		qw.fail(p, "%s", errs[0])
	}
}

// quotaErrors lists how use (per queue, a parent's the sum of its
// children's) breaks the quotas: a queue above its maximum, or borrowing
// more than its borrowing limit; a parent (or the cluster at the top)
// whose children use more above their guarantees than it keeps for no
// child, the unused guarantees of the other children up to what each may
// lend, and what it borrows itself cover.
func (qw *quotaWatch) quotaErrors(use []int) []string {
	var errs []string
	for q, s := range qw.specs {
		eff := qw.effective(q, use)
		if s.Maximum != Unlimited && use[q] > s.Maximum {
			errs = append(errs, fmt.Sprintf("queue %s uses %d GPUs, above its maximum %d", s.Name, use[q], s.Maximum))
		}
		if s.BorrowingLimit != Unlimited && eff-s.Guarantee > s.BorrowingLimit {
			errs = append(errs, fmt.Sprintf("queue %s borrows %d GPUs (effective use %d, guarantee %d), above its limit %d",
				s.Name, eff-s.Guarantee, eff, s.Guarantee, s.BorrowingLimit))
		}
	}
	n := len(qw.specs)
	for slot := range n + 1 {
		if len(qw.kids[slot]) == 0 {
			continue
		}
		own, borrows, name := qw.total, 0, "the cluster"
		if slot < n {
			own, name = qw.specs[slot].Guarantee, qw.specs[slot].Name
			borrows = max(0, qw.effective(slot, use)-own)
		}
		over, lendable := 0, 0
		for _, c := range qw.kids[slot] {
			s := qw.specs[c]
			own -= s.Guarantee
			eff := qw.effective(c, use)
			if eff > s.Guarantee {
				over += eff - s.Guarantee
				continue
			}
			lend := s.Guarantee - eff
			if s.LendingLimit != Unlimited {
				lend = min(lend, s.LendingLimit)
			}
			lendable += lend
		}
		if over > own+lendable+borrows {
			errs = append(errs, fmt.Sprintf("%s: its queues use %d GPUs above their guarantees; it has %d unassigned, %d lendable and borrows %d",
				name, over, own, lendable, borrows))
		}
	}
	return errs
}

// reclaimed: a queue with a waiting job its guarantee covers (its use
// plus the job's GPUs within it) and no claim gets it, or a claim for
// it, within the grace period of the first cycle that saw it; reclaim
// victims are of other queues and preemptible.
func (qw *quotaWatch) reclaimed(p *Plan, use []int) {
	e := qw.e
	for _, x := range p.Preemptions {
		pr := e.jobs.byID[x.Preemptor]
		v := e.jobs.byID[x.Victim]
		if pr.claim == nil || !pr.claim.reclaim {
			continue
		}
		qw.stats.reclaims++
		if v.job.Queue == pr.job.Queue || v.job.Preemption == preempt.Never {
			qw.fail(p, "reclaim for %s (queue %s) preempts %s of queue %s, policy %s", pr.job.ID, pr.job.Queue, v.job.ID, v.job.Queue, v.job.Preemption)
		}
	}
	waiting := make([]bool, len(qw.specs))
	for i := range p.Waiting {
		j := e.jobs.byID[p.Waiting[i].Job]
		if p.Waiting[i].Code == WaitQuota {
			qw.stats.quotaWaits++
			if qw.d != nil {
				delete(qw.d.planned, j.job.ID) // its reservation, if any, was dropped
			}
		}
		q := e.quota.index[j.job.Queue]
		if j.claim == nil && use[q]+j.gpus <= qw.specs[q].Guarantee {
			waiting[q] = true
		}
	}
	for q, starving := range waiting {
		switch {
		case !starving:
			qw.starved[q] = time.Time{}
		case qw.starved[q].IsZero():
			qw.starved[q] = p.Time
			qw.stats.starvedCycles++
		case qw.timing && p.Time.Sub(qw.starved[q]) > qw.grace:
			qw.fail(p, "queue %s (using %d of its %d guaranteed GPUs) has had waiting work its guarantee covers since %v", qw.specs[q].Name,
				use[q], qw.specs[q].Guarantee, qw.starved[q].Sub(epoch))
		default:
			qw.stats.starvedCycles++
		}
	}
}

// wholeGangs: every active job holds exactly the GPUs it started on, or
// those of the last pod change the plans reported for it (an elastic gang
// that grew).
func (qw *quotaWatch) wholeGangs(p *Plan) {
	for _, s := range p.Starts {
		var a gang.Allocation
		s.Allocation.CopyTo(&a)
		qw.allocs[s.Job] = a
	}
	for _, pc := range p.PodChanges {
		if a, ok := qw.e.Allocation(pc.Job); ok {
			qw.allocs[pc.Job] = a
		}
	}
	for id, want := range qw.allocs {
		got, ok := qw.e.Allocation(id)
		if !ok {
			delete(qw.allocs, id)
			continue
		}
		if d := cmp.Diff(want, got); d != "" {
			qw.fail(p, "%s holds a part of the gang it started (-started +now):\n%s", id, d)
		}
	}
}

// TestQuotaProperties: over 500 seeded random workloads (100 with
// -short) on 16 nodes of 8 GPUs (128 GPUs): queue trees flat or two levels
// deep, with random guarantees (multiples of a node), borrowing and
// lending limits, maximums and weights, one tree in five with no
// guarantee at all (GrpTRES-style maximums only); 30 jobs of 1 to 4 whole
// nodes in random queues, policies requeue, cancel and never, class
// preemption on for a third of the workloads; no reservations or holds
// (reclaim keeps off them, see the package doc); the host reports each
// victim released 0 to 5 minutes (the grace) after the signal. After
// every cycle, from the queue specs and the jobs alone:
//   - no queue uses more than its maximum, nor borrows more than its
//     borrowing limit; Engine.Queues reports the use and borrowing
//     recounted;
//   - at every parent and at the cluster, the use above the children's
//     guarantees is covered by unassigned guarantee, the unused
//     guarantees of the other children within their lending limits, and
//     what the parent borrows (quotaErrors);
//   - a queue with a waiting job its guarantee covers gets it started or
//     claimed within the grace period of the first cycle that saw it;
//     reclaim victims are of other queues and preemptible;
//   - no gang is ever partly stopped;
//   - every invariant of the engine holds after every event (every
//     workload: the engine's own checker recounts the quotas).
func TestQuotaProperties(t *testing.T) {
	workloads := 500
	if testing.Short() {
		workloads = 100
	}
	var total struct{ reclaims, quotaWaits, borrowed, starvedCycles, rejected int }
	// Workload 7857: a queue below its guarantee whose sibling borrowed
	// it while their parent keeps its guarantee from lending (lending
	// limit 0); the reclaim found no victim that lowered the top's count
	// (the parent's kept guarantee) and the queue starved until the
	// sibling's jobs ended (enoughVictims).
	ws := make([]int, 0, workloads+1)
	for w := range workloads {
		ws = append(ws, w)
	}
	for _, w := range append(ws, 7857) {
		r := rand.New(rand.NewPCG(uint64(w), 19))
		e, jobs, cfg := quotaEngine(t, r, w, false)
		d := newDriver(t, e, jobs, map[string]time.Duration{})
		d.release = func() time.Duration { return time.Duration(r.IntN(6)) * time.Minute }
		e.checkEach = true
		qw := newQuotaWatch(t, d, w, &cfg, e.c.TotalGPUs())
		d.run(time.Time{})
		if e.Pending() != 0 || e.Running() != 0 {
			t.Fatalf("workload %d: %d pending, %d running at the end", w, e.Pending(), e.Running())
		}
		total.reclaims += qw.stats.reclaims
		total.quotaWaits += qw.stats.quotaWaits
		total.borrowed += qw.stats.borrowed
		total.starvedCycles += qw.stats.starvedCycles
		total.rejected += d.rejected
	}
	t.Logf("%+v over %d workloads", total, workloads)
	if total.reclaims < workloads || total.quotaWaits < workloads || total.borrowed < workloads {
		t.Errorf("too easy: %+v over %d workloads", total, workloads)
	}
}

// quotaEngine builds workload w's engine, jobs and config; with plans,
// reservations (depth 4) and hold mode are on, and odd workloads have a
// backlog once a small job has waited 30 minutes.
func quotaEngine(t testing.TB, r *rand.Rand, w int, plans bool) (*Engine, []Job, Config) {
	return quotaEngineWith(t, r, w, plans, nil)
}

// quotaEngineWith is quotaEngine with tune applied to the config (its
// queues drawn) before the engine is made.
func quotaEngineWith(t testing.TB, r *rand.Rand, w int, plans bool, tune func(*Config)) (*Engine, []Job, Config) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReservationDepth = 0
	cfg.Hold.Enabled = false
	if plans {
		cfg.ReservationDepth, cfg.Hold.Enabled = DefaultDepth, true
		cfg.Hold.MinGPUs, cfg.Hold.MinWait = 16, 10*time.Minute
		// Backlogs (BacklogAfter) in odd workloads.
		cfg.BacklogAfter = []time.Duration{8 * time.Hour, 30 * time.Minute}[w%2]
	}
	cfg.FairShare.HalfLife = time.Hour
	cfg.Preemption = PreemptionConfig{Enabled: w%3 == 0, ExemptTime: []time.Duration{0, 20 * time.Minute}[r.IntN(2)],
		Grace: 5 * time.Minute, MinGain: 0, MaxSearches: 16}
	cfg.Quotas = randomQueues(r, w, c.NumNodes())
	if tune != nil {
		tune(&cfg)
	}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatalf("workload %d: %v (queues %+v)", w, err, cfg.Quotas)
	}
	var leaves []string
	for i, q := range cfg.Quotas.Queues {
		if e.quota.leaf[i] {
			leaves = append(leaves, q.Name)
		}
	}
	var jobs []Job
	for i := range 40 {
		// Each queue's jobs come in a burst of its own, so that queues
		// borrow while others are idle and want their guarantee back.
		q := r.IntN(len(leaves))
		j := Job{ID: fmt.Sprintf("j%02d", i), Account: []string{"a", "b", "c"}[r.IntN(3)], Queue: leaves[q],
			Submit:    epoch.Add(time.Duration(q*40+r.IntN(60)) * time.Minute),
			TimeLimit: time.Duration(30+r.IntN(300)) * time.Minute}
		j.Gang.Members = []gang.Member{{Name: "m", Request: placement.NodesOf(1+r.IntN(4), 8)}}
		switch k := r.IntN(10); {
		case k < 1:
			j.Preemption = preempt.Never
		case k < 8:
			j.Preemption = preempt.Requeue
		default:
			j.Preemption = preempt.Cancel
		}
		if r.IntN(5) == 0 {
			j.Class = 1
		}
		jobs = append(jobs, j)
	}
	return e, jobs, cfg
}

// randomQueues draws a queue tree for nodes nodes of 8 GPUs: flat (three
// queues) for even w, else two parents with two and one children; one
// tree in five guarantees nothing; of the others, those with w%4 == 1
// have top queues that lend nothing and guarantee the whole cluster
// between them.
func randomQueues(r *rand.Rand, w, nodes int) QuotaConfig {
	limit := func(lo, spread int) int {
		if r.IntN(2) == 0 {
			return Unlimited
		}
		return 8 * (lo + r.IntN(spread+1))
	}
	spec := func(name, parent string, gNodes int) QueueSpec {
		g := 8 * gNodes
		if w%5 == 0 {
			g = 0
		}
		q := QueueSpec{Name: name, Parent: parent, Guarantee: g, BorrowingLimit: limit(0, 8), LendingLimit: limit(0, gNodes),
			Maximum: limit(g/8+4, 8), Weight: float64(1 + r.IntN(3))}
		return q
	}
	split := func(total, parts int) []int {
		out := make([]int, parts)
		for range r.IntN(total + 1) {
			out[r.IntN(parts)]++
		}
		return out
	}
	var cfg QuotaConfig
	if w%2 == 0 {
		for i, g := range split(nodes, 3) {
			cfg.Queues = append(cfg.Queues, spec(fmt.Sprintf("q%d", i), "", g))
		}
		return cfg
	}
	top := split(nodes, 2)
	a, b := spec("A", "", top[0]), spec("B", "", top[1])
	kidsA := split(top[0], 2)
	if w%4 == 1 && w%5 != 0 {
		// Top queues that lend nothing and guarantee the whole cluster
		// between them: each counts at least its guarantee, so that a
		// child that borrows a sibling's idle guarantee may have to
		// give back several jobs before the claim fits.
		b.Guarantee, b.Maximum = 8*nodes-a.Guarantee, Unlimited
		a.LendingLimit, b.LendingLimit = 0, 0
	}
	cfg.Queues = append(cfg.Queues, a, b, spec("A1", "A", kidsA[0]), spec("A2", "A", kidsA[1]), spec("B1", "B", r.IntN(top[1]+1)))
	return cfg
}

// TestQuotaCheckOracle: the engine's admission test of a gang against its
// queue's quota agrees with the oracle quotaErrors, which knows only the
// specs: over 2,000 random trees (those of the property test) and use
// within the quotas, for every queue without children and gangs of 8 to
// 64 GPUs, the gang fits exactly when adding it to its queue and every
// queue above breaks no quota.
func TestQuotaCheckOracle(t *testing.T) {
	fits, refused := 0, 0
	for w := range 2000 {
		r := rand.New(rand.NewPCG(uint64(w), 21))
		cfg := randomQueues(r, w, 16)
		s, err := newQuotaState(&cfg, 128)
		if err != nil {
			t.Fatal(err)
		}
		qw := quotaOracle(cfg.Queues, 128)
		use := make([]int, len(cfg.Queues))
		addUse := func(q, g int) {
			for a := q; a >= 0; a = s.parent[a] {
				use[a] += g
			}
		}
		for range 12 { // a random valid use
			q, g := r.IntN(len(use)), 8*(1+r.IntN(4))
			if !s.leaf[q] {
				continue
			}
			addUse(q, g)
			if len(qw.quotaErrors(use)) > 0 {
				addUse(q, -g)
				continue
			}
			s.add(q, g)
		}
		for q := range use {
			if !s.leaf[q] {
				continue
			}
			for g := 8; g <= 64; g += 8 {
				addUse(q, g)
				want := len(qw.quotaErrors(use)) == 0
				addUse(q, -g)
				got := s.check(q, g, true, true)
				if (got.code == quotaFits) != want {
					t.Fatalf("tree %d %+v, use %v: %d GPUs for queue %s: check says %+v (%s), the oracle %v",
						w, cfg.Queues, use, g, s.names[q], got, s.explain(q, g, got), want)
				}
				if want {
					fits++
				} else {
					refused++
				}
			}
		}
	}
	t.Logf("%d gangs fit, %d refused", fits, refused)
	if fits < 1000 || refused < 1000 {
		t.Errorf("too easy: %d fit, %d refused", fits, refused)
	}
}

// TestQuotaPropertiesWithPlans: TestQuotaProperties' workloads with
// reservations (depth 4) and hold mode on, half the jobs without a time
// limit (400 workloads, 30 with -short), every check but the reclaim promise (reclaim keeps off
// reservations and holds): the quotas, the engine's invariants after
// every event (reservations dropped and holds ended for jobs that wait
// for quota), whole gangs; every job ends. Odd workloads have backlogs
// (BacklogAfter 30 minutes), and some job is told of one. Reservations
// keep their quota room (quotapromise.go): a reservation is dropped for
// quota only for the causes that doc names: a weighted share, a lending
// limit, the cluster's pool (what the top queues lend one another is not
// promised), or a reclaim or preemption (a claim for a job under the
// queue where the drop's check binds, made since the reservation was
// first planned: claimWatch; the driver runs every job
// within its limit, and cycles run at the events: no late starts). Before
// reservations kept their room, 1,492 were dropped over the first 100
// workloads, 1,008 of them for a weighted share; now 995 are, 877 for a
// weighted share, 101 where a lending limit or a guarantee binds, 16
// after a preemption and 1 for the cluster's pool. (Workloads 50, 230
// and 310 catch a reservation turned from a hold without the check.)
func TestQuotaPropertiesWithPlans(t *testing.T) {
	workloads := 400
	if testing.Short() {
		workloads = 30
	}
	reserved, holds, quotaEnds, backlogTold, quotaMoves := 0, 0, 0, 0, 0
	for w := range workloads {
		r := rand.New(rand.NewPCG(uint64(w), 23))
		e, jobs, cfg := quotaEngine(t, r, w, true)
		d := quotaPlanDriver(t, e, jobs, r)
		e.checkEach = true
		newQuotaWatch(t, d, w, &cfg, e.c.TotalGPUs())
		d.run(time.Time{})
		if e.Pending() != 0 || e.Running() != 0 {
			t.Fatalf("workload %d: %d pending, %d running at the end", w, e.Pending(), e.Running())
		}
		reserved += len(d.planned)
		cw := newClaimWatch(e, jobs)
		for _, p := range d.plans {
			cw.observe(p)
			holds += len(p.Holds)
			for _, w := range p.Waiting {
				if w.NoSlot == Backlog {
					backlogTold++
				}
			}
			for _, h := range p.HoldEnds {
				if h.Cause == HoldQuota {
					quotaEnds++
				}
			}
			for _, m := range p.Moves {
				if m.Cause == CauseQuota {
					quotaMoves++
					if why, ok := documentedQuotaDrop(p, m); !ok && !cw.excused(p, m) {
						t.Errorf("workload %d at %v: %s's reservation dropped for quota (%s), with no claim under that queue since it was made: %s", w, p.Time.Sub(epoch), m.Job, m.By, why)
					}
				}
			}
			cw.forget(p)
		}
	}
	t.Logf("%d jobs held reservations, %d holds seen, %d ended for quota, %d reservations dropped for quota, %d jobs told of a backlog over %d workloads", reserved, holds, quotaEnds, quotaMoves, backlogTold, workloads)
	if reserved < workloads || holds < workloads || backlogTold == 0 {
		t.Errorf("too easy: %d reservations, %d holds, %d told of a backlog", reserved, holds, backlogTold)
	}
}

// quotaPlanDriver returns the driver of the quota workloads with plans:
// every other job without a time limit (no planned start: holds; it runs
// what its limit would have been), victims reported released 0 to 5
// minutes after their signal (drawn from r).
func quotaPlanDriver(t testing.TB, e *Engine, jobs []Job, r *rand.Rand) *driver {
	dur := map[string]time.Duration{}
	for i := range jobs {
		if i%2 == 0 {
			dur[jobs[i].ID], jobs[i].TimeLimit = jobs[i].TimeLimit, 0
		}
	}
	d := newDriver(t, e, jobs, dur)
	d.release = func() time.Duration { return time.Duration(r.IntN(6)) * time.Minute }
	return d
}

// TestQuotaPropertiesLateHost: TestQuotaPropertiesWithPlans' workloads
// driven by the late host of TestLateCycleGuarantee (cycles 0 s to 15
// minutes late, the events meanwhile batched, starts confirmed at the
// cycle's time; jobs without a limit run a drawn time): the quotas and
// whole gangs after every cycle, the engine's invariants after every
// event, the host's promise to due reservations (a due reservation whose
// GPUs are free starts on them, or moves, or waits for a reclaim of its
// queue's guarantee), every move blamed on a late start or given up for
// quota, every job ends; and a reservation is given up for quota only
// for a cause quotapromise.go names that the host can meet (a weighted
// share, a lending limit, the cluster's pool, or a claim under the queue
// where it binds since the reservation was made: claimWatch): never for
// a late start. (Until stop 48 any preemption earlier in the workload
// excused a drop. Over the first 1,000 workloads of this test and of the
// elastic one, each of the 326 drops so excused had a claim under its
// binding queue since its reservation was made; over 10,000, 4 had none,
// and run always: 2779 and 6567 here, 1259 and 3428 in the elastic one.
// Three lost the room to other queues' guarantees, a documented cause
// that the reason did not name: it now says that the other queues under
// the parent where the check binds use their guarantees, which the job
// would borrow (quotaState.guarded). In 3428 a job of the reservation's queue that
// started late in the walk, after keepBook had kept the reservation up,
// ran at its start: the gate gave it up there; now it keeps it, and the
// next cycle moves it to the late job's end (quotaGate, lateTaker).)
//
// With -late-quota-workloads N it runs N workloads (the default 1,000
// runs in about 10 s here; 30 with -short), and always the workloads
// past them that caught a defect. Over the first 10,000 the engine as
// it was failed 12: 892, 2680, 9026, 9040 and 9658 (a job of the same
// queue started late and still ran at a later reservation's start, on
// its GPUs or others, and the reservation was given up for quota there:
// lateQuota moves it to the late job's end), 968, 2256 and 2406 (a due reservation its queue's
// quota held back until a reclaim freed room started off its planned
// GPUs: tryStart), 282 (a drop for the cluster's pool was named for
// the queue's maximum now: nameQuotaDrop); 357, 1218 and 3857 reclaim
// for a due reservation, which the host accepts (the claim's GPUs are
// the victim search's, which may leave the planned ones to others).
//
//	go test ./backfill -run TestQuotaPropertiesLateHost -late-quota-workloads 10000   # about 2 minutes here
var lateQuotaWorkloads = flag.Int("late-quota-workloads", 1000, "workloads of TestQuotaPropertiesLateHost")

func TestQuotaPropertiesLateHost(t *testing.T) {
	workloads := *lateQuotaWorkloads
	if testing.Short() {
		workloads = 30
	}
	ws := make([]int, 0, workloads+10)
	for w := range workloads {
		ws = append(ws, w)
	}
	// The workloads that caught a defect past the first 1,000 (see above).
	for _, w := range []int{1218, 2256, 2406, 2680, 2779, 3857, 6567, 9026, 9040, 9658} {
		if w >= workloads {
			ws = append(ws, w)
		}
	}
	runLateQuota(t, ws, false)
}

// runLateQuota drives workloads ws with the late host (lateQuotaHost), one
// subtest each, and fails when they were too easy (fewer reservations than
// workloads, due reservations kept in under a quarter of them, no late
// move, no move behind a due reservation its quota held back).
func runLateQuota(t *testing.T, ws []int, elastic bool) {
	var total struct{ reserved, lateMoves, quotaMoves, quotaAhead, kept, cycles int }
	for _, w := range ws {
		t.Run(fmt.Sprintf("w=%d", w), func(t *testing.T) {
			h := lateQuotaHost(t, w, elastic)
			h.run()
			h.finalCheck()
			total.reserved += h.stats.reserved
			total.kept += h.stats.kept
			total.cycles += h.cycles
			total.lateMoves += h.stats.lateMoves
			total.quotaMoves += h.stats.quotaMoves
			total.quotaAhead += h.stats.quotaAhead
		})
	}
	t.Logf("%+v over %d workloads", total, len(ws))
	if total.reserved < len(ws) || total.kept < len(ws)/4 || total.lateMoves == 0 || total.quotaAhead == 0 {
		t.Errorf("too easy: %+v over %d workloads", total, len(ws))
	}
}

// TestQuotaPropertiesLateHostElastic: TestQuotaPropertiesLateHost with
// half the gangs of several nodes elastic (gang.Member.Min, two in three
// growing back, Job.Grow): they start cut to what their queue's quota
// takes and are reserved at their minimum. The same checks; a due
// elastic gang its quota cuts may start on part of its planned GPUs.
// When first run, 87 of the first 1,000 workloads failed: 81 started a
// due gang cut by its quota off its planned GPUs (now it starts on part
// of them: startCutOnPlan), and 6 gave a reservation up for quota
// without a documented cause, 2 of them because a due elastic gang
// started above its minimum (at which it was reserved) without counting
// the reservations of others (now it counts them: countAt, keepBook), 4
// because a due gang whose quota took not even its minimum was told why
// its full size did not fit (now it is told why its minimum does not:
// quotaGate; their causes, the cluster's pool and lending limits, are
// documented). Over 10,000 workloads (`-late-quota-workloads 10000`)
// 7 more failed; they run always, and each fix is mutation-checked
// (removing it fails the workloads named):
//   - 1499, 5189, 7582, 7831 and 9557: a gang that may not be preempted
//     (it runs only within its queue's guarantee) was reserved, and jobs
//     of its queue, free to borrow, started in front of it and took the
//     guarantee. Now the room is kept (keptOwn: 7831 and 9557 fail
//     without it; the other three pass with either it or the reclaim
//     below, by which elastic gangs of theirs get their room back).
//   - 6260: a late start pushed a reservation later for its GPUs, to a
//     time when the late job still ran, and so would a reservation of
//     its queue due before it. lateQuota checked that start without the
//     earlier reservation (a job at its own planned start counted none)
//     and left it there, to be given up for quota. Now a start looked at
//     ahead counts the reservations before it (countAt); counted at full
//     size, an elastic one failed 470 (it starts beside this one at its
//     minimum): they count at their minimum (countedGPUs).
//   - 7951: an elastic gang whose queue's guarantee covered its minimum,
//     not its full size, did not reclaim the guarantee another queue
//     borrowed, and gave its reservation up for the parent's pool. Now
//     it reclaims for its minimum (reclaimGuarantee).
//
// 1259 and 3428 run always too (see TestQuotaPropertiesLateHost), and
// 6128, which failed once the fixes above had changed its course: a job
// that may not be preempted was due and late (its GPUs not yet free), and
// a job of its queue free to borrow, due after it, started at its own
// planned start, where it counted no reservation, and took the guarantee.
// Now a job at its own planned start counts the due ones of its queue for
// jobs that cannot be preempted (countAt).
//
// The 10,000 pass (about 2 minutes here):
//
//	go test ./backfill -run TestQuotaPropertiesLateHostElastic -late-quota-workloads 10000
func TestQuotaPropertiesLateHostElastic(t *testing.T) {
	workloads := *lateQuotaWorkloads
	if testing.Short() {
		workloads = 30
	}
	ws := make([]int, workloads, workloads+10)
	for w := range ws {
		ws[w] = w
	}
	// The workloads that caught a defect past the first 1,000 (see above).
	for _, w := range []int{1259, 1499, 3428, 5189, 6128, 6260, 7582, 7831, 7951, 9557} {
		if w >= workloads {
			ws = append(ws, w)
		}
	}
	runLateQuota(t, ws, true)
}

// lateQuotaHost returns the late host of TestQuotaPropertiesLateHost for
// workload w, its quota checks in place.
func lateQuotaHost(t *testing.T, w int, elastic bool) *host {
	r := rand.New(rand.NewPCG(uint64(w), 29))
	e, jobs, cfg := quotaEngine(t, r, w, true)
	for i := range jobs {
		if i%2 == 0 {
			jobs[i].TimeLimit = 0 // the host draws how long it runs
		}
	}
	if elastic {
		// Half the gangs of several nodes elastic, two in three of those
		// growing back (drawn apart: the other draws stay the same).
		er := rand.New(rand.NewPCG(uint64(w), 31))
		for i := range jobs {
			m := &jobs[i].Gang.Members[0]
			if n := m.Request.Nodes; n > 1 && er.IntN(2) == 0 {
				m.Min = 1 + er.IntN(n-1)
				jobs[i].Grow = er.IntN(3) > 0
			}
		}
	}
	h := newHost(t, e, jobs, uint64(w))
	h.quotaMoves = true
	h.release = func() time.Duration { return time.Duration(r.IntN(6)) * time.Minute }
	e.checkEach = true
	qw := quotaOracle(cfg.Quotas.Queues, e.c.TotalGPUs())
	qw.t, qw.e, qw.w, qw.grace = t, e, w, cfg.Preemption.Grace
	cw := newClaimWatch(e, jobs)
	h.afterCycle = func(p *Plan) {
		qw.check(p)
		checkWaitsAgree(t, e, p)
		cw.observe(p)
		defer cw.forget(p)
		for _, m := range p.Moves {
			if m.Cause == CauseLateStart {
				h.stats.lateMoves++
			}
			if m.Cause == CauseQuotaAhead {
				h.stats.quotaAhead++
			}
			if m.Cause != CauseQuota {
				continue
			}
			h.stats.quotaMoves++
			if why, ok := documentedQuotaDrop(p, m); !ok && !cw.excused(p, m) {
				t.Errorf("workload %d at %v: %s's reservation dropped for quota (%s), with no claim under that queue since it was made: %s", w, p.Time.Sub(epoch), m.Job, m.By, why)
			}
		}
	}
	return h
}

// claimWatch tells whether a reservation given up for quota may have
// lost its room to a claim (a reclaim of a guarantee, or a preemption by
// class; quotapromise.go names both): one for a job under the queue
// where the drop's check binds (any, when the cluster binds), made since
// the reservation was first planned. Until stop 64 it saw only claims
// with victims (Plan.Preemptions), and a reclaim on lent pods alone,
// which preempts none, made workload 84 of
// TestQuotaPropertiesLateHostElastic fail once its course reached one
// (TestClaimWatchSeesReclaimWithoutVictims).
type claimWatch struct {
	s      *quotaState
	queue  map[string]int       // job → leaf queue
	since  map[string]time.Time // reserved job → when it was first planned
	claims []claimAt
}

// claimAt is one claim: its job's leaf queue, and when it was made.
type claimAt struct {
	q  int
	at time.Time
}

func newClaimWatch(e *Engine, jobs []Job) *claimWatch {
	cw := &claimWatch{s: e.quota, queue: map[string]int{}, since: map[string]time.Time{}}
	for _, j := range jobs {
		cw.queue[j.ID] = slices.Index(e.quota.names, j.Queue)
	}
	return cw
}

// observe records plan p's claims and new reservations. A claim made in
// p preempts the jobs p.Preemptions lists, or, a reclaim on pods growing
// jobs lend it alone, none: its lent pods, taken in the cycle (a
// PodChange For it), are all that tells of it then, beside its wait.
func (cw *claimWatch) observe(p *Plan) {
	for _, x := range p.Preemptions {
		cw.claims = append(cw.claims, claimAt{cw.queue[x.Preemptor], p.Time})
	}
	for _, pc := range p.PodChanges {
		if pc.For == "" || pc.Kind != PodsRemoved {
			continue
		}
		if w := waitingOf(p, pc.For); w != nil && w.Code == WaitPreempting {
			cw.claims = append(cw.claims, claimAt{cw.queue[pc.For], p.Time})
		}
	}
	for _, r := range p.Reservations {
		if _, ok := cw.since[r.Job]; !ok {
			cw.since[r.Job] = p.Time
		}
	}
}

// excused reports whether a claim may have taken the room of the
// reservation move m of plan p gave up for quota (one never listed in a
// plan was made in p's cycle).
func (cw *claimWatch) excused(p *Plan, m Move) bool {
	at := slices.Index(cw.s.names, m.By)
	since, ok := cw.since[m.Job]
	if !ok {
		since = p.Time
	}
	for _, c := range cw.claims {
		if !c.at.Before(since) && (at < 0 || cw.s.isAncestor(at, c.q)) {
			return true
		}
	}
	return false
}

// forget drops the reservations plan p gave up or started: a new one
// is planned afresh.
func (cw *claimWatch) forget(p *Plan) {
	for _, m := range p.Moves {
		if m.To.IsZero() {
			delete(cw.since, m.Job)
		}
	}
	for _, s := range p.Starts {
		delete(cw.since, s.Job)
	}
}

// documentedQuotaDrop returns the reason plan p gives the job of move m,
// a reservation dropped for quota, and reports whether it names a cause
// quotapromise.go lists that a driver of the property tests can meet
// without a claim: a weighted share, a lending limit, the cluster's pool,
// a parent's room that other queues' guarantees take
// (quotaState.guarded).
func documentedQuotaDrop(p *Plan, m Move) (string, bool) {
	why := ""
	for _, wt := range p.Waiting {
		if wt.Job == m.Job {
			why = wt.Detail
		}
	}
	return why, strings.Contains(why, "weighted share") || strings.Contains(why, "lend no more") ||
		strings.Contains(why, "nothing left to borrow: the cluster's") || strings.Contains(why, "what a queue is guaranteed is its own")
}

// TestReclaimVictimsOracle: the victims reclaim picks for quota's sake
// are enough whenever any set of the candidates is. Over 8,000 random
// trees (those of the property test) with random running jobs within the
// quotas (one in three never preempted), for every queue without
// children and every gang of 8 to 64 GPUs its guarantee covers that the
// quota refuses strictly, with some of the candidates already victims
// (as the topology search's would be): enoughVictims reports room
// exactly when some set of the candidates reclaim would offer (the
// preemptible jobs of the queues that borrow from its side) makes the
// strict check pass (a brute force over every set of up to 10
// candidates, else the full set); it keeps the victims it was given;
// the victims it picks make the check pass, and none it added could be
// spared; and the counts are as before the call, room or not. How often
// it takes more victims than the fewest that would do is logged, not
// checked: the order is most recently started first (least work lost),
// not fewest.
func TestReclaimVictimsOracle(t *testing.T) {
	var found, brute, none, multi, extra int
	for w := range 8000 {
		r := rand.New(rand.NewPCG(uint64(w), 23))
		cfg := randomQueues(r, w, 16)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("tree %d: %v", w, err)
		}
		s, err := newQuotaState(&cfg, 128)
		if err != nil {
			t.Fatal(err)
		}
		var running []*jobRec
		for range 40 { // running jobs, each within the quotas when it started
			q, g := r.IntN(len(cfg.Queues)), 8*(1+r.IntN(2))
			if !s.leaf[q] || s.check(q, g, true, true).code != quotaFits {
				continue
			}
			s.add(q, g)
			j := &jobRec{queue: q, counted: g, seq: uint64(len(running)), start: time.Unix(int64(r.IntN(4)), 0)}
			j.job.Preemption = preempt.Requeue
			if r.IntN(3) == 0 {
				j.job.Preemption = preempt.Never // never a victim
			}
			running = append(running, j)
		}
		used, eff, top := slices.Clone(s.used), slices.Clone(s.eff), s.top
		p := &preemptScratch{}
		for q := range cfg.Queues {
			for g := 8; g <= 64 && s.leaf[q]; g += 8 {
				if !s.entitled(q, g) || s.check(q, g, true, true).code == quotaFits {
					continue
				}
				// The candidates, as reclaim's: the jobs of the queues
				// that borrow from q's side of the tree.
				// Some of them, as if the topology search had chosen
				// them, are victims already.
				p.jobs, p.cands = p.jobs[:0], p.cands[:0]
				var movable, given []int
				for _, j := range running {
					if j.queue != q && s.mayTake(q, j.queue) {
						if j.job.Preemption != preempt.Never {
							movable = append(movable, len(p.jobs))
							if r.IntN(4) == 0 {
								given = append(given, len(p.jobs))
							}
						}
						p.jobs = append(p.jobs, j)
						p.cands = append(p.cands, preempt.Candidate{Policy: j.job.Preemption})
					}
				}
				want, fewest := false, len(movable)+1
				sets := 1 << len(movable)
				if len(movable) > 10 {
					// Only the full set: room only grows as jobs are
					// given back (the brute force below shows it on
					// up to 10 candidates).
					sets = 1
				}
				for set := range sets {
					if sets == 1 {
						set = 1<<len(movable) - 1
					}
					for b, i := range movable {
						if set&(1<<b) != 0 {
							s.add(p.jobs[i].queue, -p.jobs[i].counted)
						}
					}
					if s.check(q, g, true, true).code == quotaFits {
						want, fewest = true, min(fewest, bits.OnesCount(uint(set)))
					} else if want && set == sets-1 {
						t.Fatalf("tree %d, queue %s, %d GPUs: some jobs make room, all of them do not", w, s.names[q], g)
					}
					for b, i := range movable {
						if set&(1<<b) != 0 {
							s.add(p.jobs[i].queue, p.jobs[i].counted)
						}
					}
				}
				s.victims = append(s.victims[:0], given...)
				got := s.enoughVictims(p, q, g, nil)
				for _, i := range given {
					if !slices.Contains(s.victims, i) {
						t.Fatalf("tree %d, queue %s, %d GPUs: the topology search's victim %d was dropped: %v", w, s.names[q], g, i, s.victims)
					}
				}
				if !slices.Equal(used, s.used) || !slices.Equal(eff, s.eff) || top != s.top {
					t.Fatalf("tree %d, queue %s, %d GPUs: counts changed: %v %v %d, were %v %v %d", w, s.names[q], g, s.used, s.eff, s.top, used, eff, top)
				}
				if got != want {
					t.Fatalf("tree %d %+v, queue %s, %d GPUs, jobs %v: enoughVictims says %v with victims %v; some set of jobs makes room: %v",
						w, cfg.Queues, s.names[q], g, jobsOf(p), got, s.victims, want)
				}
				if !got {
					none++
					continue
				}
				found++
				if sets > 1 {
					brute++
					if fewest > 1 {
						multi++
					}
					if len(given) == 0 && len(s.victims) > fewest {
						extra++
					}
				}
				for _, i := range s.victims {
					s.add(p.jobs[i].queue, -p.jobs[i].counted)
				}
				if qc := s.check(q, g, true, true); qc.code != quotaFits {
					t.Fatalf("tree %d, queue %s, %d GPUs: the victims %v leave no room (%s)", w, s.names[q], g, s.victims, s.explain(q, g, qc))
				}
				// None of those it added could be spared.
				for _, i := range s.victims {
					if slices.Contains(given, i) {
						continue
					}
					s.add(p.jobs[i].queue, p.jobs[i].counted)
					if s.check(q, g, true, true).code == quotaFits {
						t.Fatalf("tree %d, queue %s, %d GPUs, jobs %v: victim %d of %v is not needed", w, s.names[q], g, jobsOf(p), i, s.victims)
					}
					s.add(p.jobs[i].queue, -p.jobs[i].counted)
				}
				for _, i := range s.victims {
					s.add(p.jobs[i].queue, p.jobs[i].counted)
				}
			}
		}
	}
	t.Logf("%d claims with victims, %d against the brute force: %d needing more than one, %d given more victims than the fewest that do; %d with none",
		found, brute, multi, extra, none)
	if found < 500 || multi < 50 || none < 50 {
		t.Errorf("too easy: %d claims with victims, %d needing several, %d with none", found, multi, none)
	}
}

// jobsOf lists candidates' queues and GPUs for a failure message.
func jobsOf(p *preemptScratch) []string {
	var out []string
	for _, j := range p.jobs {
		out = append(out, fmt.Sprintf("q%d:%d", j.queue, j.counted))
	}
	return out
}
