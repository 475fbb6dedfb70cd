package backfill

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// elasticRun is one seeded workload of TestElasticProperties.
type elasticRun struct {
	t     *testing.T
	seed  int
	c     *topology.Cluster
	e     *Engine
	d     *driver
	specs map[string]*Job
	// Counts over the run, for the test's report and its "too easy" check.
	grown, shrunk, replaced, requeued, reserved, lent, podOps, preempted int
	// quotas: the workload has queues, whose limits may make a reserved
	// job wait for quota (it gives up its reservation), so its promises
	// are not checked.
	quotas     bool
	quotaWaits int
}

// TestElasticProperties is acceptance point 2 of issue 17: over 500
// seeded workloads (60 with -short) of elastic and fixed-size gangs with
// random node failure policies, half of them with random node failures
// and repairs, with every engine invariant checked after every call:
//
//   - an elastic member never runs below its minimum nor above the pods it
//     asks for, and with a Step always runs a multiple of it; a
//     fixed-size one always runs whole;
//   - a shrink, a growth or a replacement never touches a GPU another job
//     holds (each job's GPUs are its own, and the free state agrees); pods
//     lent by a growing job go to the job that starts on them;
//   - growth and replacement keep off every GPU promised to a reservation
//     whose window overlaps the job's run, and, on the workloads without
//     failures, where every job runs exactly its time limit, no
//     reservation ever moves later and no job starts later than the start
//     its reservation had when it was made: growth never delays a
//     reservation;
//   - a replaced pod, and every pod after a growth, stays inside the
//     domains its gang requires (the member's Required level, a required
//     co-location);
//   - on the workloads with failures, an adapter also re-places or
//     releases single pods at random (Engine.ReplacePod, ReleasePod), with
//     the same checks; on half of them preemption is on, with random
//     classes and policies, so preemptors take lent pods too.
func TestElasticProperties(t *testing.T) {
	seeds := 500
	if testing.Short() {
		seeds = 60
	}
	var sum elasticRun
	var quotaGrowths, quotaShrinks int // on the workloads with queues
	for seed := range seeds {
		run := newElasticRun(t, seed)
		run.drive(seed%2 == 1)
		sum.grown += run.grown
		sum.shrunk += run.shrunk
		sum.replaced += run.replaced
		sum.requeued += run.requeued
		sum.reserved += run.reserved
		sum.lent += run.lent
		sum.podOps += run.podOps
		sum.preempted += run.preempted
		sum.quotaWaits += run.quotaWaits
		if run.quotas {
			quotaGrowths += run.grown
			quotaShrinks += run.shrunk + run.lent
		}
	}
	t.Logf("%d seeds: %d growths, %d shrinks on failure, %d lendings, %d replacements, %d requeues on failure, %d reservations kept, %d single-pod moves or releases, %d preemptions",
		seeds, sum.grown, sum.shrunk, sum.lent, sum.replaced, sum.requeued, sum.reserved, sum.podOps, sum.preempted)
	t.Logf("with queues: %d growths, %d shrinks or lendings, %d waits for quota", quotaGrowths, quotaShrinks, sum.quotaWaits)
	if quotaGrowths == 0 || quotaShrinks == 0 || sum.quotaWaits == 0 {
		t.Error("the workloads with queues should grow, shrink and wait for quota")
	}
	if sum.grown == 0 || sum.shrunk == 0 || sum.lent == 0 || sum.replaced == 0 || sum.requeued == 0 || sum.reserved == 0 || sum.podOps == 0 || sum.preempted == 0 {
		t.Error("the generator should produce growths, shrinks, lendings, replacements, requeues and reservations")
	}
}

func newElasticRun(t *testing.T, seed int) *elasticRun {
	r := rand.New(rand.NewPCG(uint64(seed), 17))
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	preempting := seed%4 == 3 // with failures (odd seeds), and preemption
	if preempting {
		cfg.Preemption = PreemptionConfig{Enabled: true, Grace: 5 * time.Minute, MaxSearches: 16}
	}
	// One workload in five has queues (with their own random source, so
	// that the others stay as they were): growth, shrinks and lending
	// must keep every queue's count, which the engine's checker recounts
	// after every call, and growth must stay within the queue's limits.
	var queues []string
	if seed%5 == 4 {
		rq := rand.New(rand.NewPCG(uint64(seed), 23))
		cfg.Quotas = randomQueues(rq, seed, c.NumNodes())
		for _, q := range cfg.Quotas.Queues {
			if !slices.ContainsFunc(cfg.Quotas.Queues, func(o QueueSpec) bool { return o.Parent == q.Name }) {
				queues = append(queues, q.Name)
			}
		}
	}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	e.checkEach = true
	jobs := randomWorkload(r, c, 24, true)
	for i := range jobs {
		if len(queues) > 0 {
			jobs[i].Queue = queues[i%len(queues)]
		}
	}
	run := &elasticRun{t: t, seed: seed, c: c, e: e, specs: map[string]*Job{}, quotas: len(queues) > 0}
	for i := range jobs {
		j := &jobs[i]
		m := &j.Gang.Members[0]
		if n := m.Request.Nodes; n > 1 && r.IntN(2) == 0 {
			m.Min = 1 + r.IntN(n-1)
			if n >= 4 && n%2 == 0 && r.IntN(3) == 0 {
				m.Step, m.Min = 2, 2*(1+r.IntN(n/2-1))
			}
			j.Grow = r.IntN(3) > 0
		}
		j.OnNodeFailure = FailurePolicy(r.IntN(4))
		if r.IntN(8) == 0 {
			j.Gang.Colocate = gang.Colocation{Level: "spine", Required: true}
		}
		// Domain limits, segments and patience, which every start (the
		// ledger checks each) and every restore hold the gang to.
		q := &m.Request
		switch r.IntN(8) {
		case 0:
			q.MaxDomains, q.MaxDomainsLevel = 1+r.IntN(3), []string{"", "spine"}[r.IntN(2)]
		case 1:
			if q.Nodes%2 == 0 && q.GPUs == 0 {
				q.SegmentSize, q.SegmentLevel = 2, []string{"", "spine"}[r.IntN(2)]
				m.Step = 0
				if m.Min > 0 {
					m.Min = max(2, m.Min/2*2)
					if m.Min >= q.Nodes {
						m.Min = 0
					}
				}
			}
		case 2:
			j.Patience = Patience{MaxDomains: 1, Level: []string{"", "spine"}[r.IntN(2)], Wait: 20 * time.Minute}
		}
		if preempting {
			preemptJob(r, j)
		}
		run.specs[j.ID] = j
	}
	run.d = newDriver(t, e, jobs, nil)
	// Count runs, so that the finish of a run a failure ended is dropped.
	run.d.release = func() time.Duration { return 0 }
	run.d.afterCycle = run.checkPlan
	return run
}

// drive runs the workload, with random failures (one node down every 20
// minutes on average for 6 hours, each repaired after up to 2 hours) or
// without, in which case reservations must never move.
func (x *elasticRun) drive(failures bool) {
	r := rand.New(rand.NewPCG(uint64(x.seed), 99))
	d := x.d
	if !failures {
		d.noMoves = !x.quotas
		d.run(time.Time{})
		if !x.quotas {
			x.checkPromises()
		}
		return
	}
	type repair struct {
		at   time.Time
		node topology.NodeID
	}
	var repairs []repair
	for now := epoch; now.Before(epoch.Add(6 * time.Hour)); {
		now = now.Add(time.Duration(1+r.IntN(40)) * time.Minute)
		d.run(now)
		for len(repairs) > 0 && !repairs[0].at.After(now) {
			if err := x.e.NodeUp(repairs[0].node, now); err != nil {
				x.t.Fatalf("seed %d: %v", x.seed, err)
			}
			repairs = repairs[1:]
		}
		x.podEvent(r, now)
		n := topology.NodeID(r.IntN(x.c.NumNodes()))
		if st, _ := x.e.NodeState(n); st != NodeUp {
			continue
		}
		x.fail(n, now)
		repairs = append(repairs, repair{at: now.Add(time.Duration(1+r.IntN(120)) * time.Minute), node: n})
		for i := len(repairs) - 1; i > 0 && repairs[i].at.Before(repairs[i-1].at); i-- {
			repairs[i], repairs[i-1] = repairs[i-1], repairs[i]
		}
		// A cycle right after the failure, as a host runs one.
		heap.Push(&d.events, event{at: now, finish: true, id: "", run: -1})
	}
	for _, rp := range repairs {
		d.run(rp.at)
		if err := x.e.NodeUp(rp.node, later(rp.at, x.e.Now())); err != nil {
			x.t.Fatalf("seed %d: %v", x.seed, err)
		}
	}
	d.run(time.Time{})
}

// podEvent re-places or releases one pod of a random active job at now,
// as an adapter does after a failed bind, and checks the job.
func (x *elasticRun) podEvent(r *rand.Rand, now time.Time) {
	if len(x.e.jobs.running) == 0 {
		return
	}
	j := x.e.jobs.running[r.IntN(len(x.e.jobs.running))]
	if j.phase != StateStarting && j.phase != StateRunning {
		return
	}
	mi := r.IntN(len(j.alloc.Members))
	ma := &j.alloc.Members[mi]
	rank := r.IntN(len(ma.Assignment))
	if r.IntN(2) == 0 {
		if err := x.e.ReleasePod(j.job.ID, ma.Name, rank, now); err == nil {
			x.podOps++
		} else if !errors.Is(err, gang.ErrBelowMin) {
			x.t.Fatalf("seed %d: ReleasePod: %v", x.seed, err)
		}
	} else {
		rep, err := x.e.ReplacePod(j.job.ID, ma.Name, rank, now)
		if err != nil {
			x.t.Fatalf("seed %d: ReplacePod: %v", x.seed, err)
		}
		if rep.Replaced {
			x.podOps++
			if rep.New.Rank != rank || rep.New.Node == rep.Old.Node {
				x.t.Fatalf("seed %d: ReplacePod moved rank %d to %+v", x.seed, rank, rep.New)
			}
		}
	}
	x.checkJob(j.job.ID, j.alloc)
}

// fail takes node n down at now and checks what happened to the jobs on
// it: replaced pods inside their gang's domains and off every promised
// node.
func (x *elasticRun) fail(n topology.NodeID, now time.Time) {
	type promise struct {
		start, end time.Time
		nodes      map[topology.NodeID]bool
	}
	var promises []promise
	for _, r := range x.e.book.resv {
		p := promise{start: r.start, end: r.end, nodes: map[topology.NodeID]bool{}}
		forEntries(&r.alloc, func(a topology.NodeAlloc) { p.nodes[a.Node] = true })
		promises = append(promises, p)
	}
	evs, err := x.e.NodeDown(n, now)
	if err != nil {
		x.t.Fatalf("seed %d: down %d: %v", x.seed, n, err)
	}
	for _, ev := range evs {
		if !ev.Replaced && !ev.Shrunk {
			x.d.runs[ev.Job]++ // its pending finish is void
			if ev.Requeued {
				x.requeued++
			}
			continue
		}
		a, ok := x.e.Allocation(ev.Job)
		if !ok {
			x.t.Fatalf("seed %d: job %s kept running but has no allocation", x.seed, ev.Job)
		}
		end := x.e.jobs.byID[ev.Job].end
		for p := range a.Pods() {
			for _, pr := range promises {
				overlaps := (pr.end.IsZero() || pr.end.After(now)) && (end.IsZero() || pr.start.Before(end))
				if overlaps && pr.nodes[p.Node] && p.Node != n {
					x.checkNotNew(ev.Job, p)
				}
			}
		}
		x.checkJob(ev.Job, &a)
		if ev.Replaced {
			x.replaced++
		}
		if ev.Shrunk {
			x.shrunk++
		}
	}
	// Failures drop reservations (and requeue jobs that had one): those
	// are made anew, with a new first start.
	for k := range x.d.planned {
		if j := x.e.jobs.byID[k]; j == nil || j.resv == nil {
			delete(x.d.planned, k)
		}
	}
}

// checkNotNew fails when pod p of job id, on a node promised to an
// overlapping reservation, is one of the pods the last failure placed.
func (x *elasticRun) checkNotNew(id string, p gang.Pod) {
	for i := range x.e.podChanges {
		pc := &x.e.podChanges[i]
		if pc.Job != id || pc.Kind != PodsReplaced {
			continue
		}
		for _, q := range pc.Pods {
			if q.Node == p.Node && q.MemberIndex == p.MemberIndex {
				x.t.Fatalf("seed %d: job %s: replacement pod on %s, promised to a reservation during its run", x.seed, id, x.c.NodeName(p.Node))
			}
		}
	}
}

// checkPlan checks every active job after a cycle, and the growths of the
// plan against its reservations.
func (x *elasticRun) checkPlan(p *Plan) {
	x.preempted += len(p.Preemptions)
	for i := range p.Waiting {
		if p.Waiting[i].Code == WaitQuota {
			x.quotaWaits++
			delete(x.d.planned, p.Waiting[i].Job) // its reservation, if any, was dropped
		}
	}
	for _, j := range x.e.jobs.running {
		x.checkJob(j.job.ID, j.alloc)
	}
	for i := range p.PodChanges {
		pc := &p.PodChanges[i]
		if pc.Kind == PodsRemoved && pc.For != "" {
			x.lent++
			x.checkLent(p, pc)
		}
		if pc.Kind != PodsAdded {
			continue
		}
		x.grown++
		end := x.e.jobs.byID[pc.Job].end
		for _, r := range p.Reservations {
			if !r.End.IsZero() && !r.End.After(p.Time) || !end.IsZero() && !r.Start.Before(end) {
				continue
			}
			for _, q := range pc.Pods {
				forEntries(&r.Allocation, func(a topology.NodeAlloc) {
					if a.Node == q.Node {
						x.t.Fatalf("seed %d at %v: %s grew onto %s, promised to %s from %v", x.seed, p.Time.Sub(epoch), pc.Job, x.c.NodeName(q.Node), r.Job, r.Start.Sub(epoch))
					}
				})
			}
		}
	}
}

// checkLent checks pods lent by a growing job: the job took them (a
// start of the plan, or a claim it waits on for its victims), each lent
// pod shares a GPU with its allocation but those that complete a step,
// and the lender kept its minimum (checkJob).
func (x *elasticRun) checkLent(p *Plan, pc *PodChange) {
	var took *gang.Allocation
	for i := range p.Starts {
		if p.Starts[i].Job == pc.For {
			took = &p.Starts[i].Allocation
		}
	}
	if j := x.e.jobs.byID[pc.For]; took == nil && j != nil && j.claim != nil {
		took = &j.claim.alloc
	}
	if took == nil {
		x.t.Fatalf("seed %d: %s lent pods to %s, which neither started nor claimed them", x.seed, pc.Job, pc.For)
	}
	unused := map[int]int{} // per member: lent pods the taker does not use
	for _, q := range pc.Pods {
		shared := false
		forEntries(took, func(a topology.NodeAlloc) { shared = shared || a.Node == q.Node && a.GPUs&q.GPUs != 0 })
		if !shared {
			unused[q.MemberIndex]++
		}
	}
	for mi, n := range unused {
		if step := x.specs[pc.Job].Gang.Members[mi].Step; n >= max(step, 1) {
			x.t.Fatalf("seed %d: %s lent %d pods that %s does not use (step %d)", x.seed, pc.Job, n, pc.For, step)
		}
	}
}

// checkJob checks active job id's allocation: sizes within bounds, its
// GPUs its own, its pods inside the domains its gang requires.
func (x *elasticRun) checkJob(id string, a *gang.Allocation) {
	spec := x.specs[id]
	ctx := func() string { return fmt.Sprintf("seed %d: job %s", x.seed, id) }
	for mi := range spec.Gang.Members {
		m, ma := &spec.Gang.Members[mi], &a.Members[mi]
		lo := m.Request.Nodes
		if m.Min > 0 {
			lo = m.Min
		}
		if m.Request.GPUs == 0 && (ma.Pods < lo || ma.Pods > m.Request.Nodes || len(ma.Assignment) != ma.Pods || ma.Pods%max(m.Step, 1) != 0) {
			x.t.Fatalf("%s member %s: %d pods, want %d to %d in steps of %d", ctx(), m.Name, ma.Pods, lo, m.Request.Nodes, max(m.Step, 1))
		}
		if m.Request.Required != "" {
			x.oneDomain(ctx, m.Request.Required, ma.Assignment)
		}
	}
	if spec.Gang.Colocate.Required {
		var all []topology.NodeAlloc
		for p := range a.Pods() {
			all = append(all, topology.NodeAlloc{Node: p.Node, GPUs: p.GPUs})
		}
		x.oneDomain(ctx, spec.Gang.Colocate.Level, all)
	}
	for p := range a.Pods() {
		for m := p.GPUs; m != 0; m &= m - 1 {
			if o := x.e.jobs.owner(int(p.Node), bitIndex(m)); o == nil || o.job.ID != id {
				x.t.Fatalf("%s: GPU %d of %s is not its own", ctx(), bitIndex(m), x.c.NodeName(p.Node))
			}
		}
	}
}

func (x *elasticRun) oneDomain(ctx func() string, level string, pods []topology.NodeAlloc) {
	lvl, _ := x.c.Level(level)
	for _, p := range pods {
		if x.c.NodeDomain(p.Node, lvl) != x.c.NodeDomain(pods[0].Node, lvl) {
			x.t.Fatalf("%s: pods on %s and %s, two %s domains", ctx(), x.c.NodeName(pods[0].Node), x.c.NodeName(p.Node), level)
		}
	}
}

// checkPromises checks, after a run without failures, that every job
// that held a reservation started no later than its first planned start.
func (x *elasticRun) checkPromises() {
	for id, planned := range x.d.planned {
		x.reserved++
		got, ok := x.d.started[id]
		if !ok || got.After(planned) {
			x.t.Fatalf("seed %d: job %s reserved for %v started at %v (started: %v)", x.seed, id, planned.Sub(epoch), got.Sub(epoch), ok)
		}
	}
}
