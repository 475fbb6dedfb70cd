package backfill

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Restore rebuilds an engine for cluster c with config cfg from a
// snapshot, trusting nothing in it. It refuses, listing every problem
// (errors.Join inside an ErrRestore error): another format version; a time
// out of range or later than the snapshot's (a planned time, such as a
// hold's estimated start or a pending move's old start, may lie past
// MaxTime but not past what JSON encodes); an unknown node; a job that
// Submit would refuse on c for other reasons than cfg's queues no longer
// letting it fit; a job listed twice or numbered at or above the
// snapshot's sequence counter, or two jobs with one number; requeue or
// preemption counts below 0 or above math.MaxInt32; a running gang that
// does not match its job's spec (members, pod counts, GPUs per pod, nodes
// the request allows, its Required domain), sits on a down node or belongs
// to no active job; an active job with an end time, or with a start or a
// last charge before its submit; a GPU claimed twice; a
// reservation, hold or claim whose placement names a GPU twice, puts two
// pods of a member on one node, or does not match its job's spec as a
// running gang must; a reservation or hold for a job that is not waiting,
// a second reservation for one job, reservations sharing GPUs in
// overlapping windows; a hold or claim that began before its job's
// submit; a claim due before it began or more than MaxTimeLimit (the
// longest grace) after; a claim for a job that is not waiting (or is
// reserved or held), that shares GPUs with a hold, another claim or a
// reservation it could overlap, or sits on GPUs held by jobs other than
// its victims; a victim that is not preempting, is of a class not below
// its preemptor's or is listed twice; a preempting job without a preemptor
// or signal time, or whose policy is never; a reclaim claim with a
// victim of its own queue; hold ends
// without a job or a known cause, or with negative GPUs or more than the
// cluster's (the snapshot's or c's, the larger); pod changes
// without a job, a kind or a time, or with pods off the cluster's nodes or
// GPUs; run-time histograms that are unknown, repeated, too long, count
// more than math.MaxInt32 runs or do not add up; bad or infinite
// GPU-second counts; bad usage, or usage charged after the snapshot's
// time. When c is not the cluster the snapshot was taken on (its
// Fingerprint differs), every node is mapped by name: the restore succeeds
// only if every name maps, and an error says what differs. Onto another
// cluster, running gangs are not checked against the nodes, Required
// domains, domain limits, segments and co-location their requests ask for
// (a node cabled into another domain may put a running gang across its
// Required domain; it runs there all the same), plans that break them are
// dropped and planned again, and pod changes not yet reported keep their
// node numbers. On the same cluster every placement is checked against all
// of them (gang.Spec.CheckAllocation).
//
// cfg may change the queues' limits and pools since the snapshot (the
// same queue names for the jobs), as an operator does across a restart:
// running gangs stay where they run (checked against the node sets their
// jobs were submitted with), and a queue above a lowered limit keeps what
// it runs but takes nothing more until its use is back within the limit;
// a reservation, hold or claim that a queue's new pool does not contain,
// and a claim of a queue above a lowered limit, is dropped (a claim's
// victims still stop) and planned again, as is a hold cfg's hold mode
// does not allow (hold mode off, strict order, its gang below
// Hold.MinGPUs, or beyond Hold.MaxHolds: the first MaxHolds holds of the
// snapshot are kept) or one on a node the snapshot lists down or drained
// (as NodeDown and Drain drop it; so is a reservation there, the next
// plan reporting its move with the node as theirs do, and a claim with
// GPUs there, its victims still stopping and their preemptor going
// first on the GPUs they leave). Every reservation is dropped under a cfg
// that makes none (ReservationDepth 0, or Strict); under a lower depth
// they are kept, as those of a backlog are, until their jobs start. A
// dropped hold is
// charged, in HeldGPUSeconds, for the GPUs it held from the last cycle
// to the snapshot, and the next plan lists it in HoldEnds with cause
// HoldRestored; a hold kept has cfg's budget (Hold.Budget times the GPUs
// of its target; one whose spending has reached it ends at the next cycle,
// HoldBudgetSpent, which NextEvent asks for at once). A hold's count of GPUs held above the GPUs of its
// target that no running gang holds (a host booked pods on GPUs it had
// counted) is cut to them, kept or dropped: it is charged, and its end
// reported, for those alone. A waiting job
// that fits c on the nodes it was submitted with but that the new queues
// can never run (Submit would refuse it now with ErrNeverFits: its
// queue's pool is too small, or its size, an elastic gang's minimum, is
// above a limit) waits for quota, its reason saying why, reserves,
// holds and reclaims nothing and counts in no queue's demand, until it is
// cancelled or a config lets it run. A job c itself cannot fit is
// refused, as before.
//
// cfg may also rename or remove queues, give a queue children, and turn
// quotas on or off. Without queues (Config.Quotas empty) jobs run and
// wait as without quotas, each keeping its queue's name (for a config
// with queues again, which places it there), and a claim
// that reclaims a queue's guarantee is dropped (its victims still stop).
// Under queues, a job whose queue is not a queue of cfg without children
// (renamed, removed or given children), or that has no queue (quotas
// turned on), keeps its queue's name but is in no queue: running, it
// runs on where it runs, counted in no queue's use (no queue's limits
// see it, it grows by none, and a reclaim of a queue's guarantee or a
// job of a higher class may preempt it: no guarantee covers it); waiting (or once requeued), it waits
// for quota, its reason naming the queue (`queue "old" is not in the
// config (Config.Quotas): it cannot start unless it is submitted again
// to a queue`), and, as a job the new queues can never run, reserves,
// holds and reclaims nothing (its reservation, hold or claim is dropped,
// a claim's victims still stopping) and counts in no queue's demand,
// until it is cancelled or a config lets it run.
func Restore(c *topology.Cluster, cfg Config, snap *Snapshot) (*Engine, error) {
	if snap == nil {
		return nil, fmt.Errorf("%w: no snapshot", ErrRestore)
	}
	if c == nil {
		return nil, fmt.Errorf("%w: no cluster", ErrBadArgument)
	}
	if snap.Version < 2 || snap.Version > SnapshotVersion {
		return nil, fmt.Errorf("%w: snapshot format version %d, this engine reads 2 to %d", ErrRestore, snap.Version, SnapshotVersion)
	}
	if cfg.FairShare.ClusterGPUs == 0 {
		// As New reads it (the cluster's GPUs), before the tree checks
		// the config: a job-size weight needs a positive count.
		cfg.FairShare.ClusterGPUs = c.TotalGPUs()
	}
	tree, err := fairshare.BuildTree(snap.Accounts, cfg.FairShare)
	if err != nil {
		return nil, fmt.Errorf("%w: accounts: %w", ErrRestore, err)
	}
	e, err := New(c, cfg, tree)
	if err != nil {
		return nil, err
	}
	r := &restorer{e: e, snap: snap, recorded: make(map[*jobRec]JobState), asRecorded: make(map[*jobRec]*gang.Spec), resvDropped: make(map[*jobRec]bool),
		moved: snap.Cluster.Diff(ClusterFingerprint(c)) != ""}
	if err := tree.SetUsage(snap.Usage); err != nil {
		r.bad("usage: %v", err)
	}
	for _, u := range snap.Usage {
		// A charge after the snapshot's time would put the fair-share
		// tree ahead of every later call's clock. (A snapshot without a
		// time, of a fresh engine, may have usage: the clock starts at
		// the latest.)
		if !snap.Time.IsZero() && u.At.After(snap.Time) {
			r.bad("usage of account %s at %s is after the snapshot's time %s", u.Account, u.At.UTC().Format(time.RFC3339Nano), snap.Time.UTC().Format(time.RFC3339Nano))
		}
	}
	r.run()
	if len(r.errs) > 0 {
		if d := snap.Cluster.Diff(ClusterFingerprint(c)); d != "" {
			r.errs = append([]error{fmt.Errorf("the cluster differs from the snapshot's: %s", d)}, r.errs...)
		}
		return nil, fmt.Errorf("%w: %w", ErrRestore, errors.Join(r.errs...))
	}
	return e, nil
}

// restorer rebuilds an engine from a snapshot, collecting every problem.
type restorer struct {
	e        *Engine
	snap     *Snapshot
	errs     []error
	recorded map[*jobRec]JobState // the state each job's record gave
	// asRecorded is each job's gang as its record gave it, before cfg's
	// queue pools cut its node sets: where it may run, and was planned.
	asRecorded map[*jobRec]*gang.Spec
	// moved: the cluster is not the snapshot's (nodes mapped by name).
	moved bool
	// droppedHolds are the holds the restore dropped (HoldRestored), for
	// the next plan's HoldEnds.
	droppedHolds []HoldEnd
	// resvDropped marks the jobs whose reservation the restore dropped
	// for a lost node.
	resvDropped map[*jobRec]bool
}

// placed returns the spec job j's placements are checked against: its
// gang as recorded (a running gang stays where it runs when cfg's pool
// for its queue no longer has its nodes), or, onto another cluster than
// the snapshot's, or for a job recabled by an earlier such restore, that
// gang without node sets, Required levels, domain limits, segments and
// co-location (a node cabled into another domain may put a running gang
// across its Required domain, or over its limit; it runs there all the
// same).
func (r *restorer) placed(j *jobRec) *gang.Spec {
	if !r.moved && !j.recabled {
		return r.asRecorded[j]
	}
	g := *r.asRecorded[j]
	g.Members = slices.Clone(g.Members)
	for i := range g.Members {
		q := &g.Members[i].Request
		q.Allowed, q.Excluded, q.Required = nil, nil, ""
		q.MaxDomains, q.MaxDomainsLevel = 0, ""
		q.SegmentSize, q.SegmentLevel, q.Segments = 0, "", [placement.MaxSegmentLayers]placement.Segment{}
	}
	g.Colocate = gang.Colocation{}
	return &g
}

// stale reports whether a plan of waiting job j (a reservation, hold or
// claim), true to the job as recorded, puts it where it may not start:
// outside cfg's pool for its queue, or in no queue of cfg's, or, onto
// another cluster, outside its
// node sets or across its Required domain (placed did not check them; a
// start there would be refused). The plan is dropped (a claim's victims
// still stop) and the next cycle plans again.
func (r *restorer) stale(j *jobRec, a *gang.Allocation) bool {
	if r.e.quota != nil && j.queue < 0 {
		return true // in no queue (its queue was removed): it never starts
	}
	return j.job.Gang.CheckAllocation(r.e.c, a) != nil
}

func (r *restorer) bad(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

// podChanges restores the pod changes not yet reported, checking that
// each names a job, a kind, a time not after the snapshot's and pods on
// the cluster's nodes, each with GPUs of its node and ranks from 0 (as
// many old pods as new ones for a replacement).
func (r *restorer) podChanges() {
	e := r.e
	for i := range r.snap.PodChanges {
		pc := &r.snap.PodChanges[i]
		ok := pc.Job != "" && pc.Kind >= PodsReplaced && pc.Kind <= PodsAdded && (pc.Kind == PodsReplaced) == (len(pc.Old) > 0) &&
			(pc.Kind != PodsReplaced || len(pc.Old) == len(pc.Pods)) && !pc.Time.IsZero()
		r.notAfter(fmt.Sprintf("pod change %d time", i), pc.Time)
		for _, p := range slices.Concat(pc.Pods, pc.Old) {
			ok = ok && p.Node >= 0 && int(p.Node) < e.c.NumNodes() && p.GPUs != 0 && p.MemberIndex >= 0 && p.Rank >= 0 && p.FirstGPURank >= 0
			// Onto another cluster a pod change's node numbers are not
			// mapped (they report what happened on the old one).
			ok = ok && (r.moved || p.GPUs>>uint(e.c.NodeGPUs(p.Node)) == 0)
		}
		if !ok {
			r.bad("pod change %d (job %q, %s): malformed", i, pc.Job, pc.Kind)
			continue
		}
		e.podChanges = append(e.podChanges, *pc)
	}
}

// run restores in dependency order; each step checks what it reads.
func (r *restorer) run() {
	e, s := r.e, r.snap
	if err := checkTime("snapshot time", s.Time); err != nil && !s.Time.IsZero() {
		r.bad("%v", err)
		return
	}
	r.notAfter("last cycle", s.LastCycle)
	if !finiteNonNeg(s.HeldGPUSeconds) {
		r.bad("held GPU-seconds %v out of range", s.HeldGPUSeconds)
	}
	if s.Tests > math.MaxInt64 || s.RoundFrom > s.Tests || s.EventAt > s.Tests {
		// No engine tests 2^63 jobs; from near 2^64 the count would wrap.
		r.bad("test counter %d, round from test %d or last event after test %d out of range", s.Tests, s.RoundFrom, s.EventAt)
	}
	if s.Seq > math.MaxInt64 {
		// It counts submissions: no engine reaches 2^63, and from near
		// 2^64 the next ones would wrap to numbers jobs hold.
		r.bad("sequence counter %d is beyond any count of submissions", s.Seq)
	}
	e.seq, e.lastCycle, e.heldGPUSeconds = s.Seq, s.LastCycle, s.HeldGPUSeconds
	e.tests, e.roundFrom, e.eventAt = s.Tests, s.RoundFrom, s.EventAt
	// A flag that owes nothing while a job is owed a test is refused
	// (the invariants, checked below).
	e.owed = s.Owed
	// Only a cycle leaves a slot for the next one; a wrong flag otherwise
	// costs one early cycle (NextEvent's wake is after the latest time
	// seen, which a cycle's time is not before).
	e.slotOpen = s.SlotOpen && !s.LastCycle.IsZero()
	e.last = s.Time
	if at, ok := e.tree.Latest(); ok && at.After(e.last) {
		e.last = at // a snapshot without a time, whose tree was charged
	}
	r.nodes()
	ledger, err := gang.Restore(e.c, gang.Snapshot{Gangs: s.Gangs}, gang.Options{})
	if err != nil {
		r.bad("%v", err)
		return
	}
	e.ledger = ledger
	r.jobs()
	r.reservations()
	r.holds()
	r.claims()
	r.yields()
	if len(r.errs) > 0 {
		return
	}
	for n := range e.nodes {
		e.syncStatus(topology.NodeID(n))
	}
	if err := e.recountQuotas(); err != nil {
		r.bad("%v", err)
		return
	}
	if err := e.check(); err != nil {
		r.bad("%v", err)
	}
}

// maxRestartCount bounds a job's recorded requeues and preemptions: far
// more than any job sees, far enough below the int's range that counting
// on cannot wrap.
const maxRestartCount = math.MaxInt32

// lastEncodable is the latest time a snapshot can hold: JSON encodes
// years up to 9999. Planned times may lie past MaxTime (a time limit
// after a start near it), so MaxTime does not bound them.
var lastEncodable = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// encodable reports whether t lies in [MinTime, lastEncodable].
func encodable(t time.Time) bool { return !t.Before(MinTime) && !t.After(lastEncodable) }

// checkPlanned is checkTime for a planned time (a reservation's start or
// end, a claim's due time), which may lie past MaxTime: planned from a
// time before it, a time limit or a grace later.
func checkPlanned(what string, t time.Time) error {
	if !encodable(t) {
		return fmt.Errorf("%w: %s %s is outside [%s, %s]", ErrBadTime, what,
			t.UTC().Format(time.RFC3339Nano), MinTime.Format(time.RFC3339), lastEncodable.Format(time.RFC3339))
	}
	return nil
}

// checkPlannedOrZero is checkPlanned for a time that may be unset (zero).
func checkPlannedOrZero(what string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	return checkPlanned(what, t)
}

// finiteNonNeg reports whether x is a number from 0 up, not infinite
// (a snapshot holding one would not encode as JSON).
func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

// notAfter refuses a time after the snapshot's (zero passes).
func (r *restorer) notAfter(what string, t time.Time) {
	if !t.IsZero() && (t.After(r.snap.Time) || t.Before(MinTime)) {
		r.bad("%s %s is not within [%s, the snapshot's time %s]", what, t.UTC().Format(time.RFC3339Nano),
			MinTime.Format(time.RFC3339), r.snap.Time.UTC().Format(time.RFC3339Nano))
	}
}

// nodes restores the node facts.
func (r *restorer) nodes() {
	for _, l := range []struct {
		names   []string
		down    bool
		listing string
	}{{r.snap.Down, true, "down"}, {r.snap.Drained, false, "drained"}} {
		for _, name := range l.names {
			n, ok := r.e.c.LookupNode(name)
			switch {
			case !ok:
				r.bad("%s list: %v: %q", l.listing, topology.ErrUnknownNode, name)
			case l.down && r.e.nodes[n].down() || !l.down && r.e.nodes[n].drained():
				r.bad("%s list: node %s listed twice", l.listing, name)
			case l.down:
				r.e.nodes[n] = nodeState(true, r.e.nodes[n].drained())
			default:
				r.e.nodes[n] = nodeState(r.e.nodes[n].down(), true)
			}
		}
	}
}

// jobs restores every job and links active ones to their gangs.
func (r *restorer) jobs() {
	e := r.e
	seqs := make(map[uint64]string)
	active := make(map[string]bool)
	for i := range r.snap.Jobs {
		jr := &r.snap.Jobs[i]
		j := r.job(jr)
		if j == nil {
			continue
		}
		if prev, dup := seqs[j.seq]; dup {
			r.bad("jobs %s and %s share sequence number %d", prev, j.job.ID, j.seq)
			continue
		}
		seqs[j.seq] = j.job.ID
		e.jobs.byID[j.job.ID] = j
		switch {
		case j.phase == StatePending:
			e.jobs.pending = append(e.jobs.pending, j)
			if j.tight != nil {
				e.jobs.patient++
			}
		case j.phase.Active():
			if r.linkActive(j) {
				active[j.job.ID] = true
			}
		default:
			e.jobs.ended = append(e.jobs.ended, j)
		}
	}
	for _, id := range e.ledger.IDs() {
		if !active[id] {
			r.bad("the gang %s belongs to no active job", id)
		}
	}
	sortJobs(e.jobs.pending)
	sortJobs(e.jobs.running)
	slices.SortStableFunc(e.jobs.ended, func(a, b *jobRec) int { return a.ended.Compare(b.ended) })
}

// job rebuilds one job record, checked as Submit checks a job.
func (r *restorer) job(jr *JobRecord) *jobRec {
	e := r.e
	fail := func(format string, args ...any) *jobRec {
		r.bad("job %s: %s", jr.ID, fmt.Sprintf(format, args...))
		return nil
	}
	if _, dup := e.jobs.byID[jr.ID]; dup {
		return fail("listed twice")
	}
	if jr.Seq == 0 || jr.Seq > r.snap.Seq {
		return fail("sequence number %d is not in [1, %d], the snapshot's counter", jr.Seq, r.snap.Seq)
	}
	job, err := r.jobSpec(jr)
	if err != nil {
		return fail("%v", err)
	}
	j, err := e.validateJob(job, false) // cfg may no longer fit it: it waits
	if err != nil {
		return fail("%v", err)
	}
	recorded := job.Gang // validateJob cut a copy to cfg's pool
	recorded.ID = jr.ID
	r.asRecorded[j] = &recorded
	for _, t := range []struct {
		what string
		at   time.Time
	}{{"submit", jr.Submit}, {"start", jr.Start}, {"promised start", jr.Promised}, {"last charge", jr.LastCharge}, {"end", jr.Ended},
		{"checkpoint", jr.Checkpoint}, {"preemption", jr.PreemptedAt}, {"hold blocked since", jr.HoldBlocked}} {
		r.notAfter("job "+jr.ID+" "+t.what, t.at)
	}
	if err := checkTime("job "+jr.ID+" hold cool-down end", jr.HoldExpiry); err != nil && !jr.HoldExpiry.IsZero() {
		r.bad("%v", err)
	}
	j.seq, j.requeues, j.holdExpiry, j.holdBlockedSince = jr.Seq, jr.Requeues, jr.HoldExpiry, jr.HoldBlocked
	if jr.PreemptExempt && jr.State != StatePending && jr.State != StateReserved && jr.State != StateHeld && jr.State != StateRequeued {
		return fail("marked as waiting on exempt victims but %s", jr.State)
	}
	j.exemptRestored = jr.PreemptExempt
	j.start, j.promised, j.lastCharge, j.ended = jr.Start, jr.Promised, jr.LastCharge, jr.Ended
	j.checkpoint, j.preemptedAt, j.preemptedBy, j.preemptions = jr.Checkpoint, jr.PreemptedAt, jr.PreemptedBy, jr.Preemptions
	j.acct = e.accts.index(job.Account)
	if jr.Preemptions < 0 || jr.Preemptions > maxRestartCount || jr.Requeues < 0 || jr.Requeues > maxRestartCount {
		return fail("%d preemptions or %d requeues, not in [0, %d]", jr.Preemptions, jr.Requeues, maxRestartCount)
	}
	if jr.Recabled && jr.State != StateStarting && jr.State != StateRunning && jr.State != StatePreempting {
		return fail("recabled but %s", jr.State)
	}
	j.recabled = jr.Recabled
	if jr.OwedPods != 0 {
		if jr.OwedPods < 0 || !jr.Grow || jr.State != StateStarting && jr.State != StateRunning || jr.OwedPods > gangPods(&job.Gang) {
			return fail("owed %d lent pods, but it is not an active growing job with as many pods", jr.OwedPods)
		}
		j.owed = jr.OwedPods
	}
	if m := jr.Moved; m != nil {
		if m.Job != jr.ID || m.Cause < CauseUnknown || m.Cause > CauseNodeDrained && m.Cause != CauseUpdated || !m.To.IsZero() || !encodable(m.From) {
			return fail("a bad pending move record")
		}
		mv := *m
		j.moved = &mv
	}
	r.recorded[j] = jr.State
	return r.setState(j, jr)
}

// setState sets a restored job's phase from its recorded state.
func (r *restorer) setState(j *jobRec, jr *JobRecord) *jobRec {
	if !r.preemptionFits(jr) {
		return nil
	}
	if jr.Tested != 0 && !jr.State.Waiting() {
		r.bad("job %s is %s, but has a test number (only waiting jobs do)", jr.ID, jr.State)
		return nil
	}
	switch st := jr.State; {
	case st.Waiting():
		j.phase = StatePending
		if !jr.Start.IsZero() || !jr.Ended.IsZero() || (st == StateRequeued) != (jr.Requeues > 0) && st != StateReserved && st != StateHeld {
			r.bad("job %s is %s but has a start, an end, or requeues that do not match", jr.ID, st)
			return nil
		}
		if jr.Tested > r.snap.Tests {
			r.bad("job %s was tested as test %d of the snapshot's %d", jr.ID, jr.Tested, r.snap.Tests)
			return nil
		}
		j.tested = jr.Tested
	case st.Active():
		j.phase = st
		if jr.Start.IsZero() || jr.LastCharge.IsZero() || jr.Promised.IsZero() || jr.Moved != nil || !jr.Ended.IsZero() {
			r.bad("job %s is %s without a start, a due start or a last charge, or with a pending move or an end", jr.ID, st)
			return nil
		}
		// Activation and the host's start come after the submit (a job
		// is never submitted later than the call's time). A last charge
		// may precede the start the host confirms, not the submit: one
		// before it would bill usage from before the job existed.
		if jr.Start.Before(jr.Submit) || jr.LastCharge.Before(jr.Submit) {
			r.bad("job %s is %s with a start or a last charge before its submit", jr.ID, st)
			return nil
		}
	case st.Ended():
		j.phase = st
		if jr.Ended.IsZero() {
			r.bad("job %s is %s without an end time", jr.ID, st)
			return nil
		}
	default:
		r.bad("job %s has no valid state", jr.ID)
		return nil
	}
	return j
}

// preemptionFits checks a job record's preemption facts against its
// state: only a preempting job has a signal time and a preemptor (and it
// must be preemptible), only an active one a checkpoint, within its run.
func (r *restorer) preemptionFits(jr *JobRecord) bool {
	preempting := jr.State == StatePreempting
	switch {
	case preempting != !jr.PreemptedAt.IsZero() || preempting != (jr.PreemptedBy != ""):
		r.bad("job %s is %s with a preemption time %v and preemptor %q", jr.ID, jr.State, jr.PreemptedAt, jr.PreemptedBy)
	case preempting && (jr.Preemption == "" || jr.Preemption == preempt.Never.String() || jr.PreemptedAt.Before(jr.Start)):
		r.bad("job %s is preempting but cannot be preempted, or was preempted before it started", jr.ID)
	case !jr.Checkpoint.IsZero() && (!jr.State.Active() || jr.Checkpoint.Before(jr.Start)):
		r.bad("job %s is %s with a checkpoint at %v, outside a run", jr.ID, jr.State, jr.Checkpoint)
	default:
		return true
	}
	return false
}

// jobSpec rebuilds a job from its record.
func (r *restorer) jobSpec(jr *JobRecord) (Job, error) {
	j := Job{ID: jr.ID, Account: jr.Account, Submit: jr.Submit, QOS: jr.QOS, Partition: jr.Partition, Queue: jr.Queue}
	var err error
	if jr.TimeLimit != "" {
		if j.TimeLimit, err = time.ParseDuration(jr.TimeLimit); err != nil {
			return j, fmt.Errorf("time limit: %w", err)
		}
	}
	if p := jr.Patience; p != nil {
		j.Patience = Patience{MaxDomains: p.MaxDomains, Level: p.Level}
		if j.Patience.Wait, err = time.ParseDuration(p.Wait); err != nil {
			return j, fmt.Errorf("patience wait: %w", err)
		}
	}
	var ok bool
	if j.OnNodeFailure, ok = ParseFailurePolicy(jr.OnNodeFailure); !ok {
		return j, fmt.Errorf("unknown on_node_failure %q", jr.OnNodeFailure)
	}
	j.Class, j.Grow = jr.Class, jr.Grow
	if jr.Preemption != "" {
		p, ok := preempt.ParsePolicy(jr.Preemption)
		if !ok {
			return j, fmt.Errorf("unknown preemption policy %q", jr.Preemption)
		}
		j.Preemption = p
	}
	j.Gang, err = jr.Gang.Spec(r.e.c, jr.ID)
	return j, err
}

// linkActive links an active job to its gang in the ledger, checking the
// gang against the job's spec and the node facts.
func (r *restorer) linkActive(j *jobRec) bool {
	e := r.e
	a, ok := e.ledger.Get(j.job.ID)
	if !ok {
		r.bad("job %s is %s but has no running gang", j.job.ID, j.phase)
		return false
	}
	i := slices.IndexFunc(r.snap.Gangs, func(g gang.GangRecord) bool { return g.ID == j.job.ID })
	if err := r.placed(j).CheckRecord(e.c, &r.snap.Gangs[i]); err != nil {
		r.bad("job %s: %v", j.job.ID, err)
		return false
	}
	if r.moved && !j.recabled && r.asRecorded[j].CheckRecord(e.c, &r.snap.Gangs[i]) != nil {
		j.recabled = true // where the old cabling put it: it runs there
	}
	// The ledger's copy of the gang holds only its sizes: give it the
	// job's spec, whose required domains and co-location keep re-placed
	// pods where the job was admitted to run (as before the snapshot).
	if err := e.ledger.SetSpec(&j.job.Gang); err != nil {
		r.bad("job %s: %v", j.job.ID, err)
		return false
	}
	for _, m := range a.Members {
		for _, x := range m.Assignment {
			if e.nodes[x.Node].down() {
				r.bad("job %s runs on node %s, which is down", j.job.ID, e.c.NodeName(x.Node))
				return false
			}
		}
	}
	j.alloc, j.used = a, a.GPUs()
	start := j.start
	e.prof.setEnd(j, start)
	e.jobs.addRunning(j) // charged from its own last charge (fresh)
	e.jobs.setOwner(a, j)
	if j.job.TimeLimit == 0 {
		e.jobs.unlimited++
	}
	if j.job.Grow {
		e.jobs.growers++
	}
	return true
}

// reservations restores the book's reservations.
func (r *restorer) reservations() {
	e := r.e
	for _, rr := range r.snap.Reservations {
		j, ok := e.jobs.byID[rr.Job]
		switch {
		case !ok || j.phase != StatePending:
			r.bad("a reservation for %s, which is not waiting", rr.Job)
			continue
		case j.resv != nil || r.resvDropped[j]:
			r.bad("job %s has two reservations", rr.Job)
			continue
		}
		a, err := e.allocationOf(&rr.Placement)
		if err != nil || a.ID != rr.Job {
			r.bad("the reservation for %s: %v (placement of %q)", rr.Job, err, a.ID)
			continue
		}
		if err := r.placed(j).CheckAllocation(e.c, &a); err != nil {
			r.bad("the reservation for %s: %v", rr.Job, err)
			continue
		}
		if err := errors.Join(checkPlanned("reservation start", rr.Start), checkPlanned("reservation first start", rr.FirstStart),
			checkPlannedOrZero("reservation end", rr.End)); err != nil {
			r.bad("the reservation for %s: %v", rr.Job, err)
			continue
		}
		if l := j.job.TimeLimit; l == 0 && !rr.End.IsZero() || l > 0 && rr.End.Before(rr.Start.Add(l)) {
			r.bad("the reservation for %s ends at %v, not a time limit after its start", rr.Job, rr.End)
			continue
		}
		// Checked whole first: a record dropped as stale, or under a cfg
		// that gives no job a reservation (ReservationDepth 0, or
		// Strict: the cycle would never have made it, nor ever drop
		// it), is still checked.
		if r.stale(j, &a) || e.cfg.Strict || e.cfg.ReservationDepth == 0 {
			r.recorded[j] = StatePending
			continue
		}
		if node, cause, lost := r.lostNode(&a); lost {
			// On a node down or drained: dropped as NodeDown and Drain
			// drop it, the next plan reporting the move with the node
			// (still counted: a second reservation for the job is
			// refused).
			if j.moved == nil {
				j.moved = &Move{Job: j.job.ID, From: rr.Start, Cause: cause, By: e.c.NodeName(node)}
			}
			r.resvDropped[j] = true
			r.recorded[j] = StatePending
			continue
		}
		// checked: never, so that the first cycle searches it again.
		res := &reservation{job: j, start: rr.Start, end: rr.End, firstStart: rr.FirstStart, alloc: a, checked: ^uint64(0)}
		e.book.add(res)
	}
	for _, j := range e.jobs.pending {
		if (j.resv != nil) != (r.recorded[j] == StateReserved) {
			r.bad("job %s is recorded %s, which does not match its reservation (or lack of one)", j.job.ID, r.recorded[j])
		}
	}
	if err := e.book.check(e.c); err != nil {
		r.bad("%v", err)
	}
}

// holds restores the holds, the hold ends not yet reported and the
// observed run times.
func (r *restorer) holds() {
	e := r.e
	for _, h := range r.snap.Holds {
		r.hold(h)
	}
	for _, j := range e.jobs.pending {
		if (r.recorded[j] == StateHeld) != e.book.isHeld(j) {
			r.bad("job %s is recorded %s, which does not match its hold (or lack of one)", j.job.ID, r.recorded[j])
		}
	}
	for i, he := range r.snap.HoldEnds {
		if he.Job == "" || he.Cause < HoldBudgetSpent || int(he.Cause) >= len(holdEndNames) || he.Held < 0 {
			r.bad("hold end %d (job %q, cause %d, %d GPUs held): malformed", i, he.Job, he.Cause, he.Held)
		} else if most := max(e.c.TotalGPUs(), r.snap.Cluster.GPUs); he.Held > most {
			// A hold holds free GPUs of the cluster the snapshot was
			// taken on. (Not bounded by the GPUs of the job the
			// snapshot names: a held job cancelled and forgotten
			// before the next cycle leaves its hold end behind, and a
			// job submitted since may reuse its ID.)
			r.bad("hold end %d (job %q): %d GPUs held, more than the cluster's %d", i, he.Job, he.Held, most)
		}
	}
	e.holdEnds = append(slices.Clone(r.snap.HoldEnds), r.droppedHolds...)
	r.podChanges()
	var sum [runtimeBins]uint64 // in 64 bits: the accounts' counts add up without wrapping
	for _, rt := range r.snap.Runtimes {
		h, fits := runtimesOf(rt)
		if !e.tree.Has(rt.Account) || !fits || h.n == 0 {
			r.bad("run times of account %q: unknown, empty, or with too many bins or runs", rt.Account)
			continue
		}
		i := e.accts.index(rt.Account)
		if e.accts.runs[i].n > 0 {
			r.bad("run times of account %q: given twice", rt.Account)
			continue
		}
		e.accts.runs[i] = h
		for k, c := range h.counts {
			sum[k] += uint64(c)
		}
	}
	all, fits := runtimesOf(r.snap.AllRuntimes)
	for k, c := range all.counts {
		fits = fits && uint64(c) == sum[k]
	}
	if !fits {
		r.bad("the all-account run times do not add up the accounts'")
	} else {
		e.accts.all = all
	}
	if err := e.book.check(e.c); err != nil {
		r.bad("%v", err)
	}
}

// hold restores one hold.
func (r *restorer) hold(h HoldRecord) {
	e := r.e
	j, ok := e.jobs.byID[h.Job]
	if !ok || j.phase != StatePending || j.resv != nil || r.recorded[j] != StateHeld || e.book.isHeld(j) {
		r.bad("a hold for %s, which is not a held job", h.Job)
		return
	}
	a, err := e.allocationOf(&h.Target)
	if err != nil || a.ID != h.Job {
		r.bad("the hold for %s: %v (target of %q)", h.Job, err, a.ID)
		return
	}
	if err := r.placed(j).CheckAllocation(e.c, &a); err != nil {
		r.bad("the hold for %s: %v", h.Job, err)
		return
	}
	if h.Held < 0 || h.Held > a.GPUs() || !finiteNonNeg(h.SpentGPUs) || !finiteNonNeg(h.BudgetGPUs) || h.BudgetGPUs == 0 {
		r.bad("the hold for %s holds %d of %d GPUs, or has spent %v of a budget of %v GPU-seconds", h.Job, h.Held, a.GPUs(), h.SpentGPUs, h.BudgetGPUs)
		return
	}
	// A hold holds only the free GPUs of its target: a count above them
	// (a host that booked pods on GPUs the hold had counted, as the
	// Kubernetes plugin's adoption does) is cut to them, so that neither
	// the next cycle's charge and budget nor a report of its end counts
	// GPUs a running gang holds.
	h.Held = min(h.Held, r.freeOf(&a))
	r.notAfter("hold start", h.Since)
	if h.Since.Before(j.job.Submit) {
		// A cycle holds GPUs for a job it has: never before its submit
		// (checked on, as notAfter is: every problem listed).
		r.bad("the hold for %s began at %s, before its submit %s", h.Job, h.Since.UTC().Format(time.RFC3339Nano), j.job.Submit.UTC().Format(time.RFC3339Nano))
	}
	if !encodable(h.EstimatedStart) {
		r.bad("the hold for %s: estimated start %s is outside [%s, %s]", h.Job, h.EstimatedStart.UTC().Format(time.RFC3339Nano),
			MinTime.Format(time.RFC3339), lastEncodable.Format(time.RFC3339))
	}
	// Checked whole first: a record dropped as stale, on a node down or
	// drained (NodeDown and Drain drop such a hold; a snapshot edited by
	// its host may still have one), or as one cfg's hold mode does not
	// allow (off, strict order, a gang below MinGPUs, more than MaxHolds
	// holds: those after the first MaxHolds of the snapshot), is still
	// checked.
	if r.stale(j, &a) || r.onLostNode(&a) || !e.holdAllowed(j) || len(e.book.holds) >= e.cfg.Hold.MaxHolds {
		// It held its GPUs idle from the last cycle to the snapshot:
		// charged as a hold an event ends then is (endHoldBetween).
		if !e.lastCycle.IsZero() && e.last.After(e.lastCycle) {
			e.heldGPUSeconds += float64(h.Held) * e.last.Sub(e.lastCycle).Seconds()
		}
		// The next plan lists it among the holds that ended (holds).
		r.droppedHolds = append(r.droppedHolds, HoldEnd{Job: h.Job, Cause: HoldRestored, Held: h.Held})
		r.recorded[j] = StatePending
		return
	}
	// Its budget is cfg's, on the target restored (holdBudget: the same
	// as the snapshot's under the config it was taken with, the
	// snapshot's figure itself not trusted): a hold whose spending has
	// reached a lowered budget ends at the next cycle (HoldBudgetSpent),
	// as any hold does.
	e.book.addHold(&hold{job: j, since: h.Since, target: a, held: h.Held, spent: h.SpentGPUs, budget: e.holdBudget(&a), eta: h.EstimatedStart})
}

// gangPods returns the pods of g's members at full size.
func gangPods(g *gang.Spec) int {
	n := 0
	for i := range g.Members {
		n += g.Members[i].Request.Nodes
	}
	return n
}

// freeOf returns the GPUs of placement a that no running gang holds,
// on nodes down too (unlike cycle.countFree): a hold with GPUs on a node
// the snapshot lists down is dropped, charged for the count its last
// cycle made with the node up, as NodeDown charges it (endHoldBetween).
func (r *restorer) freeOf(a *gang.Allocation) int {
	s := r.e.ledger.State()
	n := 0
	for _, m := range a.Members {
		for _, x := range m.Assignment {
			n += bits.OnesCount64(x.GPUs & s.Free(x.Node))
		}
	}
	return n
}

// onLostNode reports whether placement a has a pod on a node that is
// down or drained.
func (r *restorer) onLostNode(a *gang.Allocation) bool {
	_, _, lost := r.lostNode(a)
	return lost
}

// lostNode returns the first node of placement a that is down or
// drained, with the cause a move off it has (CauseNodeDown before
// CauseNodeDrained for a node both down and drained).
func (r *restorer) lostNode(a *gang.Allocation) (topology.NodeID, Cause, bool) {
	for _, m := range a.Members {
		for _, x := range m.Assignment {
			switch st := r.e.nodes[x.Node]; {
			case st.down():
				return x.Node, CauseNodeDown, true
			case st.drained():
				return x.Node, CauseNodeDrained, true
			}
		}
	}
	return 0, 0, false
}

// claims restores the claims and links their victims.
func (r *restorer) claims() {
	e := r.e
	for i := range r.snap.Claims {
		r.claim(&r.snap.Claims[i])
	}
	// A job whose victims preempt for it without a claim (a drain
	// dropped it) takes them again at no cost while it waits
	// (ownVictim). (Not a job of the same ID submitted since.)
	for _, v := range e.jobs.running {
		if v.phase == StatePreempting && v.victimOf == nil {
			e.book.claimless++
		}
		if j, ok := e.jobs.byID[v.preemptedBy]; ok && orphanOf(v, j) {
			j.orphans = true
		}
	}
	if err := e.book.check(e.c); err != nil {
		r.bad("%v", err)
	}
}

// yields links each requeued job that yields to its preemptor
// (JobRecord.YieldTo) to it: a waiting job that was requeued, naming
// another job the snapshot holds.
func (r *restorer) yields() {
	e := r.e
	for i := range r.snap.Jobs {
		jr := &r.snap.Jobs[i]
		if jr.YieldTo == "" {
			continue
		}
		j, ok := e.jobs.byID[jr.ID]
		p, known := e.jobs.byID[jr.YieldTo]
		if !ok || j.phase != StatePending || j.requeues == 0 || !known || p == j {
			r.bad("job %s yields to %q, but it is not a requeued waiting job, or that names no other job", jr.ID, jr.YieldTo)
			continue
		}
		j.yieldTo, j.yieldRuns = p, p.requeues
	}
}

// claim restores one claim.
func (r *restorer) claim(cr *ClaimRecord) {
	e := r.e
	j, ok := e.jobs.byID[cr.Job]
	if !ok || j.phase != StatePending || j.resv != nil || e.book.isHeld(j) || j.claim != nil {
		r.bad("a claim for %s, which is not waiting, or is reserved, held or claiming already", cr.Job)
		return
	}
	a, err := e.allocationOf(&cr.Placement)
	if err != nil || a.ID != cr.Job {
		r.bad("the claim for %s: %v (placement of %q)", cr.Job, err, a.ID)
		return
	}
	if err := r.placed(j).CheckAllocation(e.c, &a); err != nil {
		r.bad("the claim for %s: %v", cr.Job, err)
		return
	}
	r.notAfter("claim start", cr.Since)
	if cr.Since.Before(j.job.Submit) {
		// A cycle preempts for a job it has: never before its submit
		// (checked on: a victim preempted before it is listed too).
		r.bad("the claim for %s began at %s, before its submit %s", cr.Job, cr.Since.UTC().Format(time.RFC3339Nano), j.job.Submit.UTC().Format(time.RFC3339Nano))
	}
	// A claim is due when its victims' grace ends: a grace after its
	// start (PreemptionConfig.Grace, at most MaxTimeLimit under any config).
	if cr.Due.Before(cr.Since) || cr.Due.After(cr.Since.Add(MaxTimeLimit)) || checkPlanned("claim due", cr.Due) != nil {
		r.bad("the claim for %s is due at %v, before it began, more than MaxTimeLimit (the longest grace) after it, or out of range", cr.Job, cr.Due)
		return
	}
	cl := &claim{job: j, since: cr.Since, due: cr.Due, alloc: a, reclaim: cr.Reclaim}
	for _, id := range cr.Victims {
		v, ok := e.jobs.byID[id]
		if !ok || v.phase != StatePreempting || v.victimOf != nil || slices.Contains(cl.victims, v) || v.preemptedBy != cr.Job || v.job.Class >= j.job.Class && !cl.reclaim {
			r.bad("the claim for %s lists %s, which is not a preempting job of a lower class preempted for it (once), or of any class for a reclaim", cr.Job, id)
			return
		}
		if v.preemptedAt.Before(j.job.Submit) {
			r.bad("the claim for %s lists %s, preempted at %s, before %s was submitted", cr.Job, id, v.preemptedAt.UTC().Format(time.RFC3339Nano), cr.Job)
			return
		}
		if cl.reclaim && j.job.Queue != "" && v.job.Queue == j.job.Queue {
			// Checked on the names recorded, whatever cfg's queues: a
			// claim dropped as stale below is still checked.
			r.bad("the reclaim claim for %s lists %s, of its own queue %q", cr.Job, id, j.job.Queue)
			return
		}
		cl.victims = append(cl.victims, v)
	}
	for _, lr := range cr.Lent {
		l, ok := e.jobs.byID[lr.Job]
		if !ok || l == j || !l.job.Grow || l.phase != StateStarting && l.phase != StateRunning || lr.Pods <= 0 || lr.Pods > gangPods(&l.job.Gang) ||
			slices.ContainsFunc(cl.lent, func(x lentPods) bool { return x.job == l }) {
			r.bad("the claim for %s lists %d pods lent by %s, which is not another active growing job with as many pods (once)", cr.Job, lr.Pods, lr.Job)
			return
		}
		cl.lent = append(cl.lent, lentPods{job: l, pods: lr.Pods})
	}
	// Dropped as stale, or on a node down or drained (as NodeDown and
	// Drain drop it): its victims still stop, their preemptor going first
	// on the GPUs they leave (orphanOf), and the next cycle plans it again;
	// the pods lenders gave up for it are owed back (as dropClaim owes
	// them).
	if r.stale(j, &a) || r.onLostNode(&a) {
		for _, l := range cl.lent {
			l.job.owed += l.pods
		}
		return
	}
	for _, v := range cl.victims {
		v.victimOf = cl
	}
	sortJobs(cl.victims)
	e.book.addClaim(cl)
}
