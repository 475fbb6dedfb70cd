package backfill

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// Engine is the scheduler a host embeds. It holds the pending queue, the
// running gangs (a gang.Ledger), the reservations and the fair-share tree;
// Schedule(now) returns a Plan. It does no I/O, starts no goroutines and
// never reads the clock: every time is a parameter, and the same calls give
// the same plans. It is not safe for concurrent use.
type Engine struct {
	c      *topology.Cluster
	cfg    Config
	tree   *fairshare.Tree
	ledger *gang.Ledger
	adm    *gang.Admitter
	empty  *topology.State // for never-fits checks

	jobs map[string]*jobRec
	// Accounts by index, for batched usage charges.
	acctIdx     map[string]int
	acctNames   []string
	acctCharge  []float64
	acctTouched []int
	pending     []*jobRec // submission order
	running     []*jobRec // start order
	ends        *btree.BTreeG[endItem]
	resv        []*reservation
	hold        *hold
	seq         uint64
	last        time.Time // latest time seen
	cursor      int       // bf_continue: priority rank to resume at

	heldGPUSeconds float64
	lastCycle      time.Time

	// Cycle scratch.
	order   []*jobRec
	fsSnap  *fairshare.Snapshot
	fsJobs  []fairshare.Job
	ranked  []fairshare.Ranked
	scratch *topology.State
	probe   *topology.State
	alloc   gang.Allocation
	// Incremental blocks of the profile search (per node, and per GPU
	// the number of active blocks covering it).
	bmask, taken  []uint64
	bcnt          []uint16
	isTouched     []bool
	touched       []int32
	resvVersion   uint64
	sortedVersion uint64
	byStart       []*reservation
	byEnd         []*reservation
}

type jobState uint8

const (
	pending jobState = iota
	running
)

type jobRec struct {
	job   Job
	state jobState
	seq   uint64
	gpus  int
	// tight is the job's gang with its patience constraint applied.
	tight *gang.Spec
	acct  int // index of the account in the engine's account list
	// Running jobs.
	alloc      *gang.Allocation // the ledger's, while running
	used       int              // GPUs allocated
	start      time.Time
	end        time.Time // zero: no limit
	lastCharge time.Time
	confirmed  bool
	// Pending jobs.
	resv       *reservation
	holdExpiry time.Time // not held again before this
}

type reservation struct {
	active     bool // during a profile search: blocking the job searched
	job        *jobRec
	start, end time.Time // end zero: no limit
	firstStart time.Time
	alloc      gang.Allocation
}

type hold struct {
	job    *jobRec
	since  time.Time
	target gang.Allocation
	held   int
}

type endItem struct {
	end time.Time
	seq uint64
	j   *jobRec
}

func endLess(a, b endItem) bool {
	if !a.end.Equal(b.end) {
		return a.end.Before(b.end)
	}
	return a.seq < b.seq
}

// New returns an engine for cluster c with config cfg and fair-share tree
// tree (its accounts are the jobs' accounts; the engine charges usage to
// it as jobs run). The engine owns the tree from now on.
func New(c *topology.Cluster, cfg Config, tree *fairshare.Tree) (*Engine, error) {
	if cfg.FairShare.ClusterGPUs == 0 {
		cfg.FairShare.ClusterGPUs = c.TotalGPUs()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if tree == nil {
		return nil, fmt.Errorf("%w: no fair-share tree", ErrConfig)
	}
	if err := tree.SetConfig(cfg.FairShare); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	e := &Engine{
		c:           c,
		cfg:         cfg,
		tree:        tree,
		ledger:      gang.NewLedger(c, cfg.gangOptions()),
		adm:         gang.NewAdmitter(c, cfg.gangOptions()),
		empty:       topology.NewState(c),
		jobs:        make(map[string]*jobRec),
		acctIdx:     make(map[string]int),
		ends:        btree.NewG(16, endLess),
		scratch:     topology.NewState(c),
		probe:       topology.NewState(c),
		bmask:       make([]uint64, c.NumNodes()),
		taken:       make([]uint64, c.NumNodes()),
		bcnt:        make([]uint16, c.NumNodes()*c.MaxNodeGPUs()),
		isTouched:   make([]bool, c.NumNodes()),
		resvVersion: 1,
	}
	return e, nil
}

// Cluster returns the engine's cluster.
func (e *Engine) Cluster() *topology.Cluster { return e.c }

// Config returns the engine's config.
func (e *Engine) Config() Config { return e.cfg }

// State returns the free state (read-only: change it through the engine).
func (e *Engine) State() *topology.State { return e.ledger.State() }

// Ledger returns the ledger of running gangs (read-only).
func (e *Engine) Ledger() *gang.Ledger { return e.ledger }

// FairShare returns the fair-share tree (read-only).
func (e *Engine) FairShare() *fairshare.Tree { return e.tree }

// Pending returns the number of pending jobs.
func (e *Engine) Pending() int { return len(e.pending) }

// Running returns the number of running jobs.
func (e *Engine) Running() int { return len(e.running) }

// HeldGPUSeconds returns the GPU-seconds held idle for held jobs so far.
func (e *Engine) HeldGPUSeconds() float64 { return e.heldGPUSeconds }

// JobState reports whether job id is pending or running ("" when the
// engine does not hold it).
func (e *Engine) JobState(id string) string {
	j, ok := e.jobs[id]
	switch {
	case !ok:
		return ""
	case j.state == running:
		return "running"
	}
	return "pending"
}

// Job returns job id as submitted (with its Gang.ID set).
func (e *Engine) Job(id string) (Job, bool) {
	j, ok := e.jobs[id]
	if !ok {
		return Job{}, false
	}
	return j.job, true
}

// Allocation returns where running job id runs.
func (e *Engine) Allocation(id string) (*gang.Allocation, bool) {
	return e.ledger.Get(id)
}

func (e *Engine) tick(now time.Time) error {
	if now.Before(e.last) {
		return fmt.Errorf("%w: %s is before %s", ErrTimeTravel, now.Format(time.RFC3339Nano), e.last.Format(time.RFC3339Nano))
	}
	e.last = now
	return nil
}

// Submit queues job j at time now. The job is checked first: a malformed
// job is ErrBadJob, a job that can never fit the cluster (on every node
// up and free) is ErrNeverFits with the placement reason, a known ID is
// ErrDuplicateJob.
func (e *Engine) Submit(j Job, now time.Time) error {
	if j.ID != "" {
		if _, dup := e.jobs[j.ID]; dup {
			return fmt.Errorf("%w: %s", ErrDuplicateJob, j.ID)
		}
	}
	if j.Submit.IsZero() {
		j.Submit = now
	}
	rec, err := e.check(j)
	if err != nil {
		return err
	}
	if err := e.tick(now); err != nil {
		return err
	}
	e.seq++
	rec.seq = e.seq
	e.jobs[j.ID] = rec
	e.pending = append(e.pending, rec)
	return nil
}

// check validates a job as Submit does and builds its record.
func (e *Engine) check(j Job) (*jobRec, error) {
	if j.ID == "" {
		return nil, fmt.Errorf("%w: no ID", ErrBadJob)
	}
	if j.Gang.ID != "" && j.Gang.ID != j.ID {
		return nil, fmt.Errorf("%w: job %s has gang ID %s", ErrBadJob, j.ID, j.Gang.ID)
	}
	j.Gang.ID = j.ID
	if j.TimeLimit < 0 {
		return nil, fmt.Errorf("%w: job %s: negative time limit", ErrBadJob, j.ID)
	}
	if j.Submit.IsZero() {
		return nil, fmt.Errorf("%w: job %s: no submit time", ErrBadJob, j.ID)
	}
	if err := j.Gang.Validate(e.c); err != nil {
		return nil, fmt.Errorf("%w: job %s: %w", ErrBadJob, j.ID, err)
	}
	rec := &jobRec{job: j, gpus: j.Gang.GPUs(e.c), acct: e.accountIndex(j.Account)}
	if err := e.tree.CheckJob(e.fsJob(rec)); err != nil {
		return nil, fmt.Errorf("%w: job %s: %w", ErrBadJob, j.ID, err)
	}
	if p := j.Patience; p.MaxDomains > 0 {
		if p.Level != "" {
			if _, ok := e.c.Level(p.Level); !ok {
				return nil, fmt.Errorf("%w: job %s: patience level %q: %w", ErrBadJob, j.ID, p.Level, topology.ErrUnknownLevel)
			}
		}
		t := j.Gang
		t.Members = slices.Clone(j.Gang.Members)
		for i := range t.Members {
			r := &t.Members[i].Request
			if r.MaxDomains == 0 || r.MaxDomains > p.MaxDomains {
				r.MaxDomains, r.MaxDomainsLevel = p.MaxDomains, p.Level
			}
		}
		if err := t.Validate(e.c); err != nil {
			return nil, fmt.Errorf("%w: job %s: with its patience: %w", ErrBadJob, j.ID, err)
		}
		rec.tight = &t
	}
	// Never fits: the gang does not fit an empty cluster.
	res, err := e.adm.Admit(e.empty, &j.Gang, &e.alloc)
	if err != nil {
		return nil, fmt.Errorf("%w: job %s: %w", ErrBadJob, j.ID, err)
	}
	if !res.Admitted {
		return nil, fmt.Errorf("%w: job %s: %s", ErrNeverFits, j.ID, res)
	}
	e.releaseOn(e.empty, &e.alloc)
	return rec, nil
}

func (e *Engine) fsJob(j *jobRec) fairshare.Job {
	return fairshare.Job{ID: j.job.ID, Account: j.job.Account, Submit: j.job.Submit, GPUs: j.gpus, QOS: j.job.QOS, Partition: j.job.Partition}
}

func (e *Engine) releaseOn(s *topology.State, a *gang.Allocation) {
	for i := range a.Members {
		if err := s.Release(a.Members[i].Assignment); err != nil {
			panic(fmt.Sprintf("backfill: release of a just-placed allocation failed: %v", err))
		}
	}
}

// Cancel removes job id: a pending job leaves the queue (and its
// reservation), a running job is released and charged up to now.
func (e *Engine) Cancel(id string, now time.Time) error {
	j, ok := e.jobs[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownJob, id)
	}
	if err := e.tick(now); err != nil {
		return err
	}
	if j.state == running {
		return e.finish(j, now)
	}
	e.dropPending(j)
	return nil
}

// Started confirms that the host launched job id at time now; its time
// limit runs from now (the plan's time until then).
func (e *Engine) Started(id string, now time.Time) error {
	j, ok := e.jobs[id]
	if !ok || j.state != running {
		return fmt.Errorf("%w: %s is not starting", ErrUnknownJob, id)
	}
	if err := e.tick(now); err != nil {
		return err
	}
	j.confirmed = true
	e.setEnd(j, now)
	return nil
}

// Finished reports that running job id ended at time now: its GPUs return
// and its usage is charged.
func (e *Engine) Finished(id string, now time.Time) error {
	j, ok := e.jobs[id]
	if !ok || j.state != running {
		return fmt.Errorf("%w: %s is not running", ErrUnknownJob, id)
	}
	if err := e.tick(now); err != nil {
		return err
	}
	return e.finish(j, now)
}

// Failed reports that running job id failed at time now. With requeue it
// goes back to the queue with its original submit time; otherwise it is
// forgotten.
func (e *Engine) Failed(id string, now time.Time, requeue bool) error {
	j, ok := e.jobs[id]
	if !ok || j.state != running {
		return fmt.Errorf("%w: %s is not running", ErrUnknownJob, id)
	}
	if err := e.tick(now); err != nil {
		return err
	}
	if err := e.finish(j, now); err != nil {
		return err
	}
	if requeue {
		e.requeue(j)
	}
	return nil
}

func (e *Engine) finish(j *jobRec, now time.Time) error {
	e.charge(j, now)
	if err := e.ledger.Release(j.job.ID); err != nil {
		return err
	}
	e.unlink(j)
	delete(e.jobs, j.job.ID)
	return nil
}

// unlink takes running job j out of the running list and end index.
func (e *Engine) unlink(j *jobRec) {
	if !j.end.IsZero() {
		e.ends.Delete(endItem{end: j.end, seq: j.seq})
	}
	if i := slices.Index(e.running, j); i >= 0 {
		e.running = slices.Delete(e.running, i, i+1)
	}
}

func (e *Engine) requeue(j *jobRec) {
	j.state, j.confirmed, j.alloc, j.used = pending, false, nil, 0
	j.start, j.end, j.lastCharge = time.Time{}, time.Time{}, time.Time{}
	e.jobs[j.job.ID] = j
	// Back in submission order.
	i, _ := slices.BinarySearchFunc(e.pending, j.seq, func(x *jobRec, s uint64) int {
		switch {
		case x.seq < s:
			return -1
		case x.seq > s:
			return 1
		}
		return 0
	})
	e.pending = slices.Insert(e.pending, i, j)
}

func (e *Engine) dropPending(j *jobRec) {
	if i := slices.Index(e.pending, j); i >= 0 {
		e.pending = slices.Delete(e.pending, i, i+1)
	}
	if j.resv != nil {
		e.dropReservation(j.resv)
	}
	if e.hold != nil && e.hold.job == j {
		e.hold = nil
	}
	delete(e.jobs, j.job.ID)
}

func (e *Engine) dropReservation(r *reservation) {
	if i := slices.Index(e.resv, r); i >= 0 {
		e.resv = slices.Delete(e.resv, i, i+1)
	}
	e.resvVersion++
	r.job.resv = nil
}

// charge bills job j's GPUs from its last charge to now.
func (e *Engine) charge(j *jobRec, now time.Time) {
	if j.lastCharge.IsZero() || !now.After(j.lastCharge) || j.alloc == nil {
		return
	}
	secs := now.Sub(j.lastCharge).Seconds()
	if err := e.tree.Charge(j.job.Account, float64(j.used)*secs, now); err != nil {
		panic(fmt.Sprintf("backfill: charging %s: %v", j.job.ID, err))
	}
	j.lastCharge = now
}

// chargeAll bills every running job up to now, one charge per account
// (summed in running order, so the result is deterministic).
func (e *Engine) chargeAll(now time.Time) {
	for _, j := range e.running {
		if j.lastCharge.IsZero() || !now.After(j.lastCharge) || j.alloc == nil {
			continue
		}
		if e.acctCharge[j.acct] == 0 {
			e.acctTouched = append(e.acctTouched, j.acct)
		}
		e.acctCharge[j.acct] += float64(j.used) * now.Sub(j.lastCharge).Seconds()
		j.lastCharge = now
	}
	slices.Sort(e.acctTouched)
	for _, a := range e.acctTouched {
		if err := e.tree.Charge(e.acctNames[a], e.acctCharge[a], now); err != nil {
			panic(fmt.Sprintf("backfill: charging account %s: %v", e.acctNames[a], err))
		}
		e.acctCharge[a] = 0
	}
	e.acctTouched = e.acctTouched[:0]
}

// accountIndex returns the index of account name, adding it if new.
func (e *Engine) accountIndex(name string) int {
	if i, ok := e.acctIdx[name]; ok {
		return i
	}
	i := len(e.acctNames)
	e.acctIdx[name] = i
	e.acctNames = append(e.acctNames, name)
	e.acctCharge = append(e.acctCharge, 0)
	return i
}

func (e *Engine) setEnd(j *jobRec, start time.Time) {
	if !j.end.IsZero() {
		e.ends.Delete(endItem{end: j.end, seq: j.seq})
	}
	j.start = start
	j.end = time.Time{}
	if j.job.TimeLimit > 0 {
		j.end = start.Add(j.job.TimeLimit)
		e.ends.ReplaceOrInsert(endItem{end: j.end, seq: j.seq, j: j})
	}
}

// NodeEvent says what a node failure did to one running job.
type NodeEvent struct {
	Job string
	// Requeued is true when the job went back to the queue, false when
	// it failed for good.
	Requeued bool
}

// NodeDown marks the named node down at time now. Every running job with
// a member on it is released whole and requeued or failed per its
// OnNodeFailure policy; reservations and holds on the node are re-planned
// at the next cycle.
func (e *Engine) NodeDown(node string, now time.Time) ([]NodeEvent, error) {
	n, ok := e.c.NodeIndex(node)
	if !ok {
		return nil, fmt.Errorf("%w: %q", topology.ErrUnknownNode, node)
	}
	if err := e.tick(now); err != nil {
		return nil, err
	}
	for _, id := range e.ledger.GangsOn(n) {
		e.charge(e.jobs[id], now)
	}
	dead, err := e.ledger.NodeDown(n)
	if err != nil {
		return nil, err
	}
	events := make([]NodeEvent, 0, len(dead))
	for _, id := range dead {
		j := e.jobs[id]
		e.unlink(j)
		delete(e.jobs, id)
		ev := NodeEvent{Job: id}
		if j.job.OnNodeFailure == Requeue {
			e.requeue(j)
			ev.Requeued = true
		}
		events = append(events, ev)
	}
	for _, r := range slices.Clone(e.resv) {
		if r.alloc.OnNode(n) {
			e.dropReservation(r)
		}
	}
	if e.hold != nil && e.hold.target.OnNode(n) {
		e.hold = nil
	}
	return events, nil
}

// NodeUp returns the named node to service at time now.
func (e *Engine) NodeUp(node string, now time.Time) error {
	n, ok := e.c.NodeIndex(node)
	if !ok {
		return fmt.Errorf("%w: %q", topology.ErrUnknownNode, node)
	}
	if err := e.tick(now); err != nil {
		return err
	}
	return e.ledger.NodeUp(n)
}

// Drain stops new work on the named node; running jobs stay.
func (e *Engine) Drain(node string, now time.Time) error {
	n, ok := e.c.NodeIndex(node)
	if !ok {
		return fmt.Errorf("%w: %q", topology.ErrUnknownNode, node)
	}
	if err := e.tick(now); err != nil {
		return err
	}
	for _, r := range slices.Clone(e.resv) {
		if r.alloc.OnNode(n) {
			e.dropReservation(r)
		}
	}
	return e.ledger.Drain(n)
}
