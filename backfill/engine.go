package backfill

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/topology"
)

// Engine is the scheduler a host embeds. It holds the jobs (queue, active
// and recently ended), the running gangs (a gang.Ledger), the reservation
// book, the availability profile and the fair-share tree; Schedule(now)
// returns a Plan. It does no I/O, starts no goroutines and never reads
// the clock: every time is a parameter, and the same calls give the same
// plans. It is not safe for concurrent use.
type Engine struct {
	c      *topology.Cluster
	cfg    Config
	tree   *fairshare.Tree
	ledger *gang.Ledger
	adm    *gang.Admitter
	empty  *topology.State // for never-fits checks

	jobs  jobTable
	nodes []NodeState
	accts accounts
	book  book
	prof  profile
	pre   *preemptScratch // nil unless preemption is on
	quota *quotaState     // nil without queues

	seq            uint64
	last           time.Time // latest time seen
	heldGPUSeconds float64
	// The MaxJobsTested windows (Slurm's bf_continue, by job): tests
	// counts the walk's tests, each stamped on its job (jobRec.tested);
	// the current round of windows began after test roundFrom, and the
	// last event (any call but a cycle or a confirmed start) came after
	// test eventAt. owed is set while a job that waited at the last
	// event has not been tested since: NextEvent then asks for a cycle
	// at once, so that a host that sleeps until NextEvent tests the
	// whole queue once after every event (window.go).
	tests, roundFrom, eventAt uint64
	owed                      bool
	// slotOpen is set when the last cycle left a reservation slot free
	// behind a job it passed while every slot was taken
	// (cycle.resvClosed), or let go of a hold's GPUs after it refused
	// them to a job, or of a reservation's after it kept them from one,
	// or made a claim with no victim, or reserved a job that would start
	// on pods lent only to reserved jobs (cycle.reoffer): NextEvent asks
	// for a cycle at once, which offers them in priority order (starts
	// the claim, or the job on the lent pods).
	slotOpen    bool
	lastCycle   time.Time
	holdEnds    []HoldEnd   // since the last cycle, for its plan
	podChanges  []PodChange // since the last cycle, for its plan
	leafGPUs    int         // GPUs of the largest lowest-level domain
	resvMin     int         // Config.ReservationMinGPUs resolved (0: off)
	minNodeGPUs int         // GPUs of the smallest node

	// The queue kept in submit order (fifo.go).
	fifo submitOrder

	// Scratch.
	cyc   cycle
	walk  walker
	order []*jobRec
	// The last cycle's ranking (before quota reordering), the input of
	// this cycle's (rankInput) and its generation marks.
	lastRanking, rankIn []*jobRec
	rankGen             uint64
	fsView              *fairshare.View
	fsJobs              []fairshare.QueuedJob // the naive path's ranking input
	ranked              []fairshare.Ranked    // and output
	preps               []fairshare.Prepared  // ranking input
	entries             []fairshare.RankEntry // and output
	prio                []uint64              // per rank in e.order: the job's priority (whole rankings; kept ones hold it in kr.keys)
	// kr is the ranking kept between cycles under fair-share weights
	// (keptrank.go).
	kr          keptRank
	scratch     *topology.State // in use: mainScratch or a cycle slot
	mainScratch *topology.State
	alloc       gang.Allocation
	// plannedAlloc keeps a profile search's placement while a victim
	// search runs.
	plannedAlloc gang.Allocation
	nodeMask     []uint64 // per node, zero between uses
	podScratch   []bool   // per member: shrink on a node failure
	// quotaSpec is an elastic gang cut to what its queue's quota takes
	// (cycle.quotaSpec); its Members are its own.
	quotaSpec gang.Spec
	// minSpec is reclaimGuarantee's: a spec with its elastic members at
	// their minimum (its Members are its own).
	minSpec gang.Spec
	// holdSpec is a held whole-node gang on the smallest nodes it may
	// use (cycle.holdSpec; its Members are its own), and holdNodes the
	// Allowed sets of those members, its own too: never e.planNodes,
	// which calls made while holdSpec is in use set afresh.
	holdSpec    gang.Spec
	holdNodes   []*bitset.BitSet
	rankScratch []int      // ranks of pods to give up
	lentBack    []lentBack // lentQuotaFits's undo list
	// promised and endedBy list the reservations countAt counted in the
	// quota state and the running jobs it took out; the counts'
	// generation was promiseGen before.
	promised   []*reservation
	endedBy    []*jobRec
	promiseGen uint64
	avoid      *bitset.BitSet // nodes with promised GPUs, for replacements
	// planNodes holds, per member, the nodes of a due reservation an
	// elastic gang cut by its quota starts on (cycle.startCutOnPlan),
	// the smaller nodes whole-node pods are placed on again
	// (cycle.startOnSmaller), or the smallest a reclaim places them on
	// (onSmallest); each user sets them afresh, so a spec whose sets
	// they are is good only until the next user (a hold's has its own:
	// holdNodes).
	planNodes []*bitset.BitSet
	lent      *topology.State // the scratch state plus lent pods (made when first needed)
	estBuf    []endItem
	// idle is the free state once every active job has ended (reserved
	// and claimed GPUs kept), for hold eligibility (fitsWhenIdle); made
	// when first needed, valid for the cycle epoch and book version in
	// idleAt.
	idle   *topology.State
	idleAt [2]uint64
	// inService is the free state with every active job ended: the nodes
	// in service, whole (cycle.queueCanUse, built at most once a cycle).
	// inServiceGen numbers its contents: it grows when a build differs
	// from the one before (kept in inServiceLast), as a node goes down,
	// drains or comes back; a waiting job found not to fit it keeps the
	// number (jobRec.noFitGen) and is not tried again until it changes.
	inService, inServiceLast *topology.State
	inServiceGen             uint64
	// statusGen counts the changes of a node's status (syncStatus): the
	// quota shares count the GPUs in service again when it moves.
	statusGen uint64

	// waits interns the reasons plans list when they list only changes
	// (waitID); waitSeq is the last ID given, evict picks the entry a
	// table miss replaces.
	waits          []internedWait
	waitSeq, evict uint64

	// shapes numbers simple jobs' shapes for the same-shape failure
	// cache (shapeid.go).
	shapes shapeTable

	// Test switches: naive runs every cache's reference path; checkEach
	// verifies every invariant after every call; collide keeps 2 bits of
	// each job's shape hash, so that the shape table meets shapes with
	// equal hashes, and 2 bits of each shape number in the failure
	// cache's home, so that its probe windows fill.
	naive, checkEach, collide bool
	// checkSearch compares every kept reservation's shortened search for
	// an earlier start with the whole search (upkeep), alone.
	checkSearch bool
	// coverMin is the book size from which searches use the cover
	// (coverMinReservations; tests lower it).
	coverMin int
}

// New returns an engine for cluster c with config cfg and fair-share tree
// tree (its accounts are the jobs' accounts; the engine charges usage to
// it as jobs run). The engine owns the tree from now on; its clock starts
// at the tree's latest update (fairshare.Tree.Latest): an event before it
// is ErrTimeTravel. A refused New leaves the tree as it was.
func New(c *topology.Cluster, cfg Config, tree *fairshare.Tree) (*Engine, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: no cluster", ErrBadArgument)
	}
	if tree == nil {
		return nil, fmt.Errorf("%w: no fair-share tree", ErrBadArgument)
	}
	if cfg.FairShare.ClusterGPUs == 0 {
		cfg.FairShare.ClusterGPUs = c.TotalGPUs()
	}
	cfg.Quotas.Queues = slices.Clone(cfg.Quotas.Queues) // the engine's own
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		c:        c,
		cfg:      cfg,
		tree:     tree,
		ledger:   gang.NewLedger(c, gang.Options{}),
		adm:      gang.NewAdmitter(c, gang.Options{}),
		empty:    topology.NewState(c),
		jobs:     newJobTable(c),
		nodes:    make([]NodeState, c.NumNodes()),
		accts:    accounts{idx: make(map[string]int)},
		prof:     newProfile(c),
		scratch:  topology.NewState(c),
		nodeMask: make([]uint64, c.NumNodes()),
		coverMin: coverMinReservations,
	}
	e.mainScratch = e.scratch
	e.minNodeGPUs = c.MaxNodeGPUs()
	for n := range c.NumNodes() {
		e.minNodeGPUs = min(e.minNodeGPUs, c.NodeGPUs(topology.NodeID(n)))
	}
	if c.Depth() == 0 {
		e.leafGPUs = c.TotalGPUs() // a flat cluster: one domain
	} else {
		for d := range c.NumDomains(c.Depth() - 1) {
			e.leafGPUs = max(e.leafGPUs, c.Domain(c.Depth()-1, d).GPUs)
		}
	}
	if d := cfg.ReservationDepth; d > 1 {
		if e.resvMin = cfg.ReservationMinGPUs; e.resvMin == MultiNode {
			e.resvMin = c.MaxNodeGPUs() + 1
		}
	}
	if cfg.Preemption.Enabled {
		var err error
		if e.pre, err = newPreemptScratch(c); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if err := e.initQuotas(); err != nil {
		return nil, err
	}
	if at, ok := tree.Latest(); ok {
		// The tree cannot be read before its latest update: neither can
		// the engine's clock start before it.
		if err := checkTime("the fair-share tree's latest update", at); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		e.last = at
	}
	// Last, as nothing can fail after it: a refused New leaves the tree
	// as it was.
	if err := tree.SetConfig(cfg.FairShare); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return e, nil
}

// Cluster returns the engine's cluster.
func (e *Engine) Cluster() *topology.Cluster { return e.c }

// Config returns a copy of the engine's config (New keeps its own copy
// too: changing the caller's config afterwards changes nothing).
func (e *Engine) Config() Config {
	cfg := e.cfg
	cfg.Quotas.Queues = slices.Clone(cfg.Quotas.Queues)
	return cfg
}

// CopyState copies the engine's free state (which GPUs are free, which
// nodes down or drained) into dst, a state of the engine's cluster,
// without allocating: for a host's own what-if placements, preemption
// searches (gang/preempt) or displays. Changes to dst do not reach the
// engine; change the engine through its events.
func (e *Engine) CopyState(dst *topology.State) error {
	if dst == nil {
		return fmt.Errorf("%w: CopyState into a nil state", ErrBadArgument)
	}
	if err := e.ledger.State().CopyInto(dst); err != nil {
		return fmt.Errorf("%w: CopyState: %w", ErrBadArgument, err)
	}
	return nil
}

// UsedGPUs returns how many GPUs running jobs hold.
func (e *Engine) UsedGPUs() int { return e.ledger.State().UsedGPUs() }

// FairShare returns the fair-share view (every account's shares, usage
// and factor) at the latest time the engine has seen, the usage of the
// active jobs since their last charge included (the engine bills them at
// its cycles; the view counts it on a copy, so asking changes nothing);
// it is read-only data and stays valid as the engine goes on.
func (e *Engine) FairShare() (*fairshare.View, error) {
	tree := e.tree
	for _, j := range e.jobs.running {
		last := e.jobs.lastCharge(j)
		if !e.last.After(last) || j.used == 0 {
			continue
		}
		if tree == e.tree {
			tree = e.tree.Clone()
		}
		secs := fairshare.DecayedSeconds(e.last.Sub(last), tree.Config().HalfLife)
		if err := tree.Charge(j.job.Account, float64(j.used)*secs, e.last); err != nil {
			return nil, fmt.Errorf("fair-share view at %v: job %s: %w", e.last, j.job.ID, err)
		}
	}
	v, err := tree.View(e.last, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: fair-share view at %v: %w", ErrBadTime, e.last, err)
	}
	return v, nil
}

// AddAccount adds account name with the given raw shares below parent
// ("" for the root) to the engine's fair-share tree. Errors are the
// tree's (fairshare.ErrBadName, fairshare.ErrDuplicateAccount,
// fairshare.ErrUnknownAccount, fairshare.ErrBadShares), naming the
// account, or ErrBadArgument when parent is a leaf account that jobs the
// engine knows name: waiting, active, or ended and still remembered
// (Config.KeepEnded; a snapshot holds them). An account with
// sub-accounts cannot hold jobs. On error nothing changes.
func (e *Engine) AddAccount(parent, name string, shares float64) error {
	if n := e.jobsOf(parent); n > 0 {
		return fmt.Errorf("%w: account %s has %s waiting, active or recently ended (remembered for %v), and an account with sub-accounts cannot hold jobs: %s cannot go below it",
			ErrBadArgument, parent, jobCount(n), e.cfg.KeepEnded, name)
	}
	return e.tree.AddAccount(parent, name, shares)
}

// jobsOf counts the jobs of account acct that the engine knows at its
// latest time: waiting, active, and ended but remembered.
func (e *Engine) jobsOf(acct string) int {
	n := 0
	for _, list := range [][]*jobRec{e.jobs.pending, e.jobs.running, e.jobs.ended} {
		for _, j := range list {
			if j.job.Account != acct {
				continue
			}
			if k, ok := e.jobs.lookup(j.job.ID, e.last, e.cfg.KeepEnded); ok && k == j {
				n++
			}
		}
	}
	return n
}

// Now returns the latest time the engine has seen (zero before the first
// call).
func (e *Engine) Now() time.Time { return e.last }

// Pending returns the number of waiting jobs.
func (e *Engine) Pending() int { return len(e.jobs.pending) }

// Running returns the number of active (starting or running) jobs.
func (e *Engine) Running() int { return len(e.jobs.running) }

// HeldGPUSeconds returns the GPU-seconds held idle for held jobs so far.
func (e *Engine) HeldGPUSeconds() float64 { return e.heldGPUSeconds }

// JobSpec returns a copy of job id as submitted (with its Gang.ID set,
// and a queue's nodes applied to its node sets and named in their
// AllowedLabel), while the engine holds it. Submit keeps its own copy of
// the job, so neither the caller's Job nor the copy returned here shares
// memory with the engine's record.
func (e *Engine) JobSpec(id string) (Job, bool) {
	j, ok := e.jobs.lookup(id, e.last, e.cfg.KeepEnded)
	if !ok {
		return Job{}, false
	}
	job := j.job
	job.Gang = cloneGang(job.Gang)
	return job, true
}

// Allocation returns a copy of where active job id runs.
func (e *Engine) Allocation(id string) (gang.Allocation, bool) {
	var out gang.Allocation
	a, ok := e.ledger.Get(id)
	if ok {
		a.CopyTo(&out)
	}
	return out, ok
}

// NodeState returns what the engine knows of node n, or false when the
// cluster has no such node.
func (e *Engine) NodeState(n topology.NodeID) (NodeState, bool) {
	if n < 0 || int(n) >= len(e.nodes) {
		return 0, false
	}
	return e.nodes[n], true
}

func (e *Engine) fsJob(j *jobRec) fairshare.QueuedJob {
	return fairshare.QueuedJob{ID: j.job.ID, Account: j.job.Account, Submit: j.job.Submit, GPUs: j.gpus, QOS: j.job.QOS, Partition: j.job.Partition}
}

// activate makes waiting job j active on the ledger allocation booked for
// it at now: its end, its GPUs' owner, the running list.
func (e *Engine) activate(j *jobRec, now time.Time) {
	j.phase = StateStarting
	j.lastCharge = now
	j.yieldTo = nil // (the walk clears it when it reaches j: kept for a start it did not test, the invariants would fail)
	j.alloc, _ = e.ledger.Get(j.job.ID)
	j.used = j.alloc.GPUs()
	e.prof.setEnd(j, now)
	e.jobs.addRunning(j)
	e.jobs.setOwner(j.alloc, j)
	if j.job.TimeLimit == 0 {
		e.jobs.unlimited++
	}
	if j.job.Grow {
		e.jobs.growers++
	}
	e.setCounted(j, j.used)
}

// deactivate releases active job j's GPUs after charging it up to now
// (a preempting job leaves the claim that waits for it).
func (e *Engine) deactivate(j *jobRec, now time.Time) {
	if j.phase == StatePreempting {
		e.released(j)
	}
	e.charge(j, now)
	e.setCounted(j, 0)
	e.jobs.setOwner(j.alloc, nil)
	if err := e.ledger.Release(j.job.ID); err != nil {
		panic(fmt.Sprintf("backfill: active job %s not in the ledger: %v", j.job.ID, err))
	}
	e.prof.clearEnd(j)
	j.lastCharge = e.jobs.lastCharge(j) // its own, once it is no longer active
	e.jobs.removeRunning(j)
	if j.job.TimeLimit == 0 {
		e.jobs.unlimited--
	}
	if j.job.Grow {
		e.jobs.growers--
	}
	j.alloc, j.used, j.end, j.checkpoint, j.recabled = nil, 0, time.Time{}, time.Time{}, false
}

// requeue puts a job whose gang was released back in the queue with its
// original submit time.
func (e *Engine) requeue(j *jobRec) {
	j.phase = StatePending
	j.requeues++
	j.start, j.promised, j.lastCharge = time.Time{}, time.Time{}, time.Time{}
	j.wait, j.waitID, j.exemptRestored = Waiting{}, 0, false
	j.holdBlockedSince = time.Time{} // (test clears it too; a snapshot may hold one)
	e.enqueue(j)
}

// dropWaiting takes waiting job j out of the queue, its reservation, its
// hold and its claim (the jobs it preempted go on preempting).
func (e *Engine) dropWaiting(j *jobRec) {
	e.dequeue(j)
	if j.resv != nil {
		e.book.remove(j.resv)
	}
	if j.claim != nil {
		e.book.dropClaim(j.claim)
	}
	if h := e.book.holdOf(j); h != nil {
		e.book.dropHold(h)
	}
}

// charge bills active job j's GPUs from its last charge to now, decayed
// within the interval (fairshare.DecayedSeconds), so a job's usage does
// not depend on how often the host runs cycles.
func (e *Engine) charge(j *jobRec, now time.Time) {
	last := e.jobs.lastCharge(j)
	if !now.After(last) {
		return
	}
	secs := fairshare.DecayedSeconds(now.Sub(last), e.tree.Config().HalfLife)
	if err := e.tree.Charge(j.job.Account, float64(j.used)*secs, now); err != nil {
		panic(fmt.Sprintf("backfill: charging %s: %v", j.job.ID, err))
	}
	j.lastCharge = now
	e.jobs.fresh = append(e.jobs.fresh, j)
}

// chargeAll bills every active job up to now, one charge per account
// (summed in job order, so the result is deterministic). Every job but
// those charged on their own since (jobTable.fresh) was last charged at
// chargedAt: their GPUs and accounts are read from the billing list, not
// from their records.
func (e *Engine) chargeAll(now time.Time) {
	a, t := &e.accts, &e.jobs
	fresh := t.fresh
	slices.SortFunc(fresh, func(x, y *jobRec) int { return cmp.Compare(x.seq, y.seq) })
	fresh = slices.Compact(fresh)
	after := now.After(t.chargedAt)
	hl := e.tree.Config().HalfLife
	secs := fairshare.DecayedSeconds(now.Sub(t.chargedAt), hl)
	k := 0
	for i := range t.bill {
		b := &t.bill[i]
		for k < len(fresh) && fresh[k].seq < b.seq {
			k++ // ended since
		}
		s, ok := secs, after
		if k < len(fresh) && fresh[k] == t.running[i] {
			// Its own last charge, the same value the per-job
			// computation gives.
			last := t.lastCharge(fresh[k])
			s, ok = fairshare.DecayedSeconds(now.Sub(last), hl), now.After(last)
			k++
		}
		if !ok {
			continue
		}
		if a.charge[b.acct] == 0 {
			a.touched = append(a.touched, int(b.acct))
		}
		a.charge[b.acct] += float64(b.used) * s
	}
	clear(t.fresh) // keeps no record alive
	t.fresh = t.fresh[:0]
	t.chargedAt = later(t.chargedAt, now)
	slices.Sort(a.touched)
	for _, i := range a.touched {
		if err := e.tree.Charge(a.names[i], a.charge[i], now); err != nil {
			panic(fmt.Sprintf("backfill: charging account %s: %v", a.names[i], err))
		}
		a.charge[i] = 0
	}
	a.touched = a.touched[:0]
}

func init() {
	access.EngineAdmitters = func(x any) (ledger, admitter any) {
		e := x.(*Engine)
		return e.ledger, e.adm
	}
}
