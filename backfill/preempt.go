package backfill

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// preemptScratch is the engine's preemption machinery, built once with
// the engine when preemption is on: the victim search and the buffers it
// is fed from, reused by every search (a search allocates nothing in the
// steady state beyond what preempt.Searcher.Find needs).
type preemptScratch struct {
	s     *preempt.Searcher
	state *topology.State // the free state minus every GPU others may keep
	// mask is, per node, the GPUs of the reservations and holds of other
	// jobs: a preemptor is never placed on them, so they are left out of
	// the candidates' allocations.
	mask    []uint64
	touched []topology.NodeID // nodes with a mask
	// own is, per node, the planned GPUs of the searching job's due
	// reservation while prepare runs (ownTouched: its nodes); opened is
	// set when prepare left them open to the search against the
	// reservations planned from its end on (claimFor then moves those
	// the claim overlaps: clearClaim).
	own        []uint64
	ownTouched []topology.NodeID
	opened     bool
	// lent is, per node, the GPUs of the pods growing jobs lend the
	// searching job (Engine.lendsTo), free in state while a search
	// that counts them free runs (by class, or a reclaim's:
	// searchVictims; lentTouched: its nodes); they are left out of their
	// lenders' allocations as candidates, and a claim that uses them
	// takes them from the lenders (claimFor).
	lent        []uint64
	lentTouched []topology.NodeID
	cands       []preempt.Candidate
	jobs        []*jobRec // the job of each candidate
	// spans[i] is candidate i's entries in flat when its allocation was
	// trimmed by the mask (start -1: it was not).
	spans   [][2]int32
	flat    []topology.NodeAlloc
	trimmed []gang.Allocation
	// promised counts the lower-class jobs left out because every GPU
	// they hold is masked (not those left out because their other GPUs
	// are pods they lend).
	promised int
	verdict  preempt.Verdict
	req      preempt.Preemptor
	// startedNow makes the jobs started at the search's time, not yet
	// confirmed, candidates as running ones (restatePreempt: the state
	// the plan leaves once its starts are confirmed).
	startedNow bool
}

func newPreemptScratch(c *topology.Cluster) (*preemptScratch, error) {
	s, err := preempt.NewSearcher(c, preempt.DefaultOptions())
	if err != nil {
		return nil, err
	}
	return &preemptScratch{s: s, state: topology.NewState(c), mask: make([]uint64, c.NumNodes()), own: make([]uint64, c.NumNodes()),
		lent: make([]uint64, c.NumNodes())}, nil
}

// initPreempt resets the cycle's search budget and finds the lowest class
// of the running jobs (the only ones that may be preempted).
func (c *cycle) initPreempt() {
	c.searches, c.anyRunning, c.lowest = 0, false, 0
	c.preemptFails = c.preemptFails[:0]
	if c.e.pre == nil {
		return
	}
	for _, j := range c.e.jobs.running {
		if j.phase == StateRunning && (!c.anyRunning || j.job.Class < c.lowest) {
			c.anyRunning, c.lowest = true, j.job.Class
		}
	}
}

// mayPreempt reports whether waiting job j may look for victims now:
// preemption is on, some running job has a lower class, its search would
// not repeat one that found no placement in the cycle, and the cycle's
// budget (PreemptionConfig.MaxSearches jobs) is not spent. A true answer
// spends one unit of it.
//
// A failed search of a job without GPUs of its own answers a later one
// for a job of the same shape (class and queue included), without GPUs
// of its own either, with a time limit at least as long, while the book
// and the quota counts are as they were (claimFail); one made on a
// patience's tighter shape answers none. The job is given that search's
// reason. Without that rule, jobs of one shape that no preemption can
// place (a gang required in a leaf with a drained node) spent the budget
// in every cycle, and a job behind them that could preempt never
// searched.
func (c *cycle) mayPreempt(j *jobRec, w *Waiting) bool {
	e := c.e
	if e.pre == nil || !c.anyRunning || j.job.Class <= c.lowest {
		return false
	}
	if max := e.cfg.Preemption.MaxSearches; max > 0 && c.searches >= max {
		return false // the budget is spent: no record is read either
	}
	if x := c.failedBefore(j); x != nil {
		w.PreemptTried, w.Preempt, w.PreemptPromised, w.PreemptReclaim = true, x.why, x.promised, false
		if e.checkEach {
			c.checkSkippedSearch(j)
		}
		return false
	}
	c.searches++
	return true
}

// failedBefore returns the record of the cycle's failed victim search
// that answers job j's, if there is one (mayPreempt). Records go stale
// together (the book and the quota counts only move on), so the list is
// emptied when its last one is.
func (c *cycle) failedBefore(j *jobRec) *claimFail {
	e := c.e
	if n := len(c.preemptFails); n > 0 && !c.preemptFails[n-1].current(e) {
		c.preemptFails = c.preemptFails[:0]
	}
	if j.shapeID == 0 || ownsGPUs(j, e) {
		return nil
	}
	for i := range c.preemptFails {
		if x := &c.preemptFails[i]; x.rulesOut(j, j.gpus, e) {
			return x
		}
	}
	return nil
}

// checkSkippedSearch runs the victim search mayPreempt skipped for job j
// (tests, checkEach): it must find no victims.
func (c *cycle) checkSkippedSearch(j *jobRec) {
	spec, _ := c.specFor(j)
	if p := c.e.pre; c.classSearch(p, j, spec) && p.verdict.Found {
		panic(fmt.Sprintf("backfill: the victim search skipped for %s as a repeat of a failed one finds victims", j.job.ID))
	}
}

// classSearch runs the victim search by class for waiting job j placed
// with spec into p.verdict, keeping off what prepare masks, the pods
// growing jobs lend j counted free; when those alone hold j (its start
// on them was refused: its queue's quota does not take it there), or
// its queue's quota does not take the
// claim the search found (lentVictimsOK: a lender's queue that keeps its
// guarantee idle frees no room by giving its pods back, where stopping
// more of j's own queue would), it searches again with them counted
// taken, so that j may still preempt the victims it would without them.
// It reports true.
func (c *cycle) classSearch(p *preemptScratch, j *jobRec, spec *gang.Spec) bool {
	c.searchVictims(p, j, spec, false, true)
	v := &p.verdict
	if !v.Found || len(p.lentTouched) == 0 {
		return true
	}
	if v.Reason.Code == preempt.Fits || c.e.quota != nil && !c.e.lentVictimsOK(p, j, &v.Allocation, v.Victims, c.now) {
		c.searchVictims(p, j, spec, false, false)
	}
	return true
}

// searchVictims runs the victim search for waiting job j placed with
// spec into p.verdict, keeping off what prepare masks: a reclaim's
// (gangs of the queues that borrow from j's side, any class, j searching
// as class 1; reclaimSearch), or a preemption by class (classSearch).
// lend says whether the pods growing jobs lend j count free (prepare).
// A reclaim with no candidate runs none and reports false; otherwise it
// reports true.
func (c *cycle) searchVictims(p *preemptScratch, j *jobRec, spec *gang.Spec, reclaim, lend bool) bool {
	e := c.e
	p.prepare(e, j, c.now, lend)
	p.candidates(e, j, c.now, reclaim)
	class := j.job.Class
	if reclaim {
		if len(p.cands) == 0 {
			return false
		}
		class = 1
	}
	p.req = preempt.Preemptor{Gang: spec, Class: class}
	err := p.s.Find(p.state, &p.req, p.cands, &p.verdict)
	p.req.Gang = nil
	if err != nil {
		panic(fmt.Sprintf("backfill: victim search for %s refused the engine's own candidates: %v", j.job.ID, err))
	}
	return true
}

// far reports whether planned start t is far enough away to preempt
// rather than wait for it: later than now + Grace + MinGain.
func (c *cycle) far(t time.Time) bool {
	p := &c.e.cfg.Preemption
	return t.After(c.now.Add(p.Grace + p.MinGain))
}

// preempt looks for victims for waiting job j, placed with spec, whose
// earliest planned start is planned (zero: it has none). With a victim
// set it preempts them for j (claimFor) and reports true; otherwise it
// notes in w why preemption did not help.
func (c *cycle) preempt(j *jobRec, spec *gang.Spec, planned time.Time, w *Waiting) bool {
	e := c.e
	p := e.pre
	c.classSearch(p, j, spec)
	v := &p.verdict
	if !v.Found {
		if !ownsGPUs(j, e) {
			x := failedSearch(j, j.gpus, e, c.now, false, spec == j.tight)
			x.why, x.promised = v.Reason, p.promised
			c.preemptFails = append(c.preemptFails, x)
		}
		w.PreemptTried, w.Preempt, w.PreemptPromised, w.PreemptReclaim = true, v.Reason, p.promised, false
		return false
	}
	if v.Reason.Code == preempt.Fits {
		// The search state keeps more GPUs from j than the scratch state
		// it failed on, so this cannot happen; waiting is the safe answer.
		return false
	}
	if s := e.quota; s != nil && !e.lentVictimsOK(p, j, &v.Allocation, v.Victims, c.now) {
		// The victims free GPUs, but j's queue has no quota for a claim
		// (it passed the cycle's check only because no GPUs were free),
		// or they would take another queue below its guarantee. An
		// elastic gang the search placed above the size its quota takes
		// (it passed the gate at its minimum) searches again cut to that
		// size (quotaSpec), as it would start.
		cut := c.quotaSpec(j, spec)
		if cut == spec {
			return false
		}
		c.classSearch(p, j, cut)
		if !v.Found || v.Reason.Code == preempt.Fits || !e.lentVictimsOK(p, j, &v.Allocation, v.Victims, c.now) {
			return false
		}
	}
	why := "had no planned start"
	if !planned.IsZero() {
		why = fmt.Sprintf("would otherwise start in %s at the earliest", planned.Sub(c.now))
	}
	c.claimFor(j, p, v.Victims, false, w, func(vj *jobRec) string {
		return fmt.Sprintf("preempted by %s (class %d, above this job's %d) for its %d-GPU gang, which %s",
			j.job.ID, j.job.Class, vj.job.Class, j.gpus, why)
	})
	return true
}

// restatePreempt tells waiting job j, whose victim search by class found
// no set in the walk (w, its wait, PreemptTried), why the search finds
// none on the state the plan leaves (recountWaits): its counts (the
// lower-class gangs, those exempt or protected, the free GPUs with every
// lower-class gang stopped, the gangs left out as promised) and its code
// are those of the running jobs and the free state at j's test, and a
// job ranked below j that started later in the walk changes them, as a
// second cycle at the same time tells, once the host has confirmed the
// starts (the jobs the plan starts are candidates, as running ones:
// preemptScratch.startedNow). The search is the walk's
// (classSearch, on j's spec), charged to no budget; a failed one is
// recorded as mayPreempt records it, to answer the next job of the same
// shape (searched: the records in c.preemptFails are this pass's; the
// walk's are dropped on its first call). Where the search now finds
// victims, or j fits, j keeps the reason of its test and the engine asks
// for a cycle at once (slotOpen): that cycle preempts or starts it.
func (c *cycle) restatePreempt(j *jobRec, w *Waiting, searched *bool) {
	e := c.e
	if !*searched {
		c.preemptFails, *searched = c.preemptFails[:0], true
	}
	if x := c.failedBefore(j); x != nil {
		w.Preempt, w.PreemptPromised = x.why, x.promised
		return
	}
	p := e.pre
	spec, _ := c.specFor(j)
	p.startedNow = true
	c.classSearch(p, j, spec)
	p.startedNow = false
	if v := &p.verdict; v.Found {
		e.slotOpen = true
		return
	}
	if !ownsGPUs(j, e) {
		x := failedSearch(j, j.gpus, e, c.now, false, spec == j.tight)
		x.why, x.promised = p.verdict.Reason, p.promised
		c.preemptFails = append(c.preemptFails, x)
	}
	w.Preempt, w.PreemptPromised = p.verdict.Reason, p.promised
}

// prepare makes the search state the free state minus the GPUs j must
// keep off, and the mask of them: those of every hold and claim but j's
// own, and of every reservation but j's whose window overlaps j's run
// were j to start at the end of the grace period (its time limit from
// now + Grace; for ever without a limit). If the host reports the victims
// released after their grace, j starts late and the engine blames a
// reservation that moves for it on j's late start, as for any other.
// With lend, the pods growing jobs lend j count free, as tryLent counts
// them, so that the search stops only the gangs j needs besides them
// (p.lent marks them).
func (p *preemptScratch) prepare(e *Engine, j *jobRec, now time.Time, lend bool) {
	if err := e.ledger.State().CopyInto(p.state); err != nil {
		panic(err)
	}
	for _, n := range p.touched {
		p.mask[n] = 0
	}
	p.touched = p.touched[:0]
	for _, n := range p.lentTouched {
		p.lent[n] = 0
	}
	p.lentTouched = p.lentTouched[:0]
	if lend && e.jobs.growers > 0 {
		p.releaseLent(e, j, now)
	}
	lim := j.job.TimeLimit
	horizon := now.Add(e.cfg.Preemption.Grace + lim)
	// A due reservation's planned GPUs stay open to its own search
	// against the reservations planned on them from its end on: the
	// grace its claim waits makes it run past that end, as a late start
	// does, and they move later (clearClaim) where they would otherwise
	// keep it from its GPUs and it would lose its reservation.
	own := j.resv
	if own != nil && (own.start.After(now) || own.end.IsZero()) {
		own = nil
	}
	p.opened = own != nil
	if own != nil {
		p.setOwn(&own.alloc)
	}
	for _, r := range e.book.resv {
		if r.job == j || !r.end.IsZero() && !r.end.After(now) || lim > 0 && !r.start.Before(horizon) {
			continue
		}
		if own != nil && !r.start.Before(own.end) {
			p.blockBut(&r.alloc)
			continue
		}
		block(p.state, &r.alloc)
		p.addMask(&r.alloc)
	}
	for _, n := range p.ownTouched {
		p.own[n] = 0
	}
	p.ownTouched = p.ownTouched[:0]
	for _, h := range e.book.holds {
		if h.job != j {
			block(p.state, &h.target)
			p.addMask(&h.target)
		}
	}
	for _, cl := range e.book.claims {
		block(p.state, &cl.alloc)
	}
}

// releaseLent frees in p.state the pods that active jobs lend j
// (Engine.lendsTo: their elastic members' ranks from their minimum on)
// and marks them in p.lent.
func (p *preemptScratch) releaseLent(e *Engine, j *jobRec, now time.Time) {
	for _, l := range e.jobs.running {
		if !e.lendsTo(l, j, now) {
			continue
		}
		for mi := range l.alloc.Members {
			ma := &l.alloc.Members[mi]
			r := lentFrom(&l.job.Gang.Members[mi], ma)
			if r < 0 {
				continue
			}
			if err := p.state.Release(ma.Assignment[r:]); err != nil {
				panic(fmt.Sprintf("backfill: lent pods of %s not held: %v", l.job.ID, err))
			}
			for _, x := range ma.Assignment[r:] {
				if p.lent[x.Node] == 0 {
					p.lentTouched = append(p.lentTouched, x.Node)
				}
				p.lent[x.Node] |= x.GPUs
			}
		}
	}
}

// isVictim reports whether job l is among victims (indexes of p's
// candidates).
func (p *preemptScratch) isVictim(victims []int, l *jobRec) bool {
	for _, i := range victims {
		if p.jobs[i] == l {
			return true
		}
	}
	return false
}

// setOwn marks a's GPUs in p.own.
func (p *preemptScratch) setOwn(a *gang.Allocation) { p.ownTouched = markGPUs(p.own, p.ownTouched, a) }

// markGPUs ors a's GPUs into the per-node masks, appending to touched
// the nodes whose mask was empty; it returns touched.
func markGPUs(masks []uint64, touched []topology.NodeID, a *gang.Allocation) []topology.NodeID {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if masks[x.Node] == 0 {
				touched = append(touched, x.Node)
			}
			masks[x.Node] |= x.GPUs
		}
	}
	return touched
}

// blockBut blocks and masks a's GPUs but those in p.own.
func (p *preemptScratch) blockBut(a *gang.Allocation) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			m := x.GPUs &^ p.own[x.Node]
			if m == 0 {
				continue
			}
			blockGPUs(p.state, x.Node, m)
			if p.mask[x.Node] == 0 {
				p.touched = append(p.touched, x.Node)
			}
			p.mask[x.Node] |= m
		}
	}
}

// addMask marks a's GPUs in p.mask.
func (p *preemptScratch) addMask(a *gang.Allocation) { p.touched = markGPUs(p.mask, p.touched, a) }

// candidates lists the running jobs of a class below j's as candidates
// (every policy, so that the search can say which protection keeps j
// out), each with its allocation minus the masked GPUs; a job left with
// none is no candidate (stopping it frees nothing j may use). With
// quotas, only jobs of j's queue or of queues that borrow from j's side
// are candidates (quotaState.mayTake), and jobs in no queue (restored
// after their queue was removed: they take no queue's guarantee). For a
// reclaim, the candidates are the running jobs of those queues but j's
// own, of every class (class 0 for the search, which j searches as class
// 1) and never exempt, and the jobs in no queue: they hold GPUs no
// guarantee covers (stopping one gives back no quota, but the GPUs).
func (p *preemptScratch) candidates(e *Engine, j *jobRec, now time.Time, reclaim bool) {
	p.cands, p.jobs, p.spans, p.flat = p.cands[:0], p.jobs[:0], p.spans[:0], p.flat[:0]
	p.promised = 0
	exempt := e.cfg.Preemption.ExemptTime
	for _, r := range e.jobs.running {
		// A job signalled for j already, its claim since dropped (a
		// drain), is a candidate as a running one would be, at no
		// further cost and never exempt.
		own := ownVictim(r, j)
		if r.phase != StateRunning && !own && !(p.startedNow && r.phase == StateStarting && r.start.Equal(now)) {
			continue
		}
		class, inExempt := r.job.Class, now.Sub(r.start) < exempt && !own
		switch {
		case reclaim:
			// A job in no queue (its queue gone since a restore) holds
			// GPUs no guarantee covers: a reclaim may take them back.
			if r.queue >= 0 && (r.queue == j.queue || !e.quota.mayTake(j.queue, r.queue)) {
				continue
			}
			class, inExempt = 0, false
		case r.job.Class >= j.job.Class, e.quota != nil && r.queue >= 0 && !e.quota.mayTake(j.queue, r.queue):
			continue
		}
		span, ok := p.trim(r.alloc)
		if !ok {
			// Stopping it frees nothing the search may use. Counted
			// as promised only when every GPU it holds is: a lender
			// whose other GPUs are pods it lends j (counted free
			// already) is not.
			if p.allMasked(r.alloc) {
				p.promised++
			}
			continue
		}
		p.spans = append(p.spans, span)
		p.jobs = append(p.jobs, r)
		cost := lostWork(r, now)
		if own {
			cost = 0
		}
		p.cands = append(p.cands, preempt.Candidate{ID: r.job.ID, Alloc: r.alloc, Class: class,
			Policy: r.job.Preemption, Exempt: inExempt, Cost: cost})
	}
	// The trimmed allocations point into flat, complete only now.
	k := 0
	for i, sp := range p.spans {
		if sp[0] < 0 {
			continue
		}
		if k == len(p.trimmed) {
			p.trimmed = append(p.trimmed, gang.Allocation{Members: make([]gang.MemberAllocation, 1)})
		}
		t := &p.trimmed[k]
		t.ID = p.cands[i].ID
		t.Members[0] = gang.MemberAllocation{Name: "unpromised", Assignment: p.flat[sp[0]:sp[1]], Pods: int(sp[1] - sp[0])}
		k++
	}
	k = 0
	for i, sp := range p.spans {
		if sp[0] >= 0 {
			p.cands[i].Alloc = &p.trimmed[k]
			k++
		}
	}
}

// trim appends to flat a's entries minus the masked and the lent GPUs
// when they touch a, returning their span ({-1, -1} when they do not);
// false when nothing is left.
func (p *preemptScratch) trim(a *gang.Allocation) ([2]int32, bool) {
	hit := false
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			hit = hit || (p.mask[x.Node]|p.lent[x.Node])&x.GPUs != 0
		}
	}
	if !hit {
		return [2]int32{-1, -1}, true
	}
	start := int32(len(p.flat))
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if m := x.GPUs &^ (p.mask[x.Node] | p.lent[x.Node]); m != 0 {
				p.flat = append(p.flat, topology.NodeAlloc{Node: x.Node, GPUs: m})
			}
		}
	}
	end := int32(len(p.flat))
	return [2]int32{start, end}, end > start
}

// allMasked reports whether every GPU of a is masked (promised to a
// reservation or a hold of another job).
func (p *preemptScratch) allMasked(a *gang.Allocation) bool {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if x.GPUs&^p.mask[x.Node] != 0 {
				return false
			}
		}
	}
	return true
}

// ownVictim reports whether job r is preempting for j without a claim:
// signalled for j, whose claim a drain or a failure dropped. Such a
// victim is a candidate of j's searches at no cost, and a claim that
// takes it again does not signal it again.
func ownVictim(r, j *jobRec) bool { return j.orphans && orphanOf(r, j) }

// orphanOf reports whether job r preempts for job j without a claim,
// signalled no earlier than j's submit time (not for an ended job of j's
// ID submitted before): what jobRec.orphans marks, as Restore derives
// it from a snapshot.
func orphanOf(r, j *jobRec) bool {
	return r.phase == StatePreempting && r.victimOf == nil && r.preemptedBy == j.job.ID && !r.preemptedAt.Before(j.job.Submit)
}

// hasOrphans reports whether some job preempts for j without a claim
// (orphanOf): the value of j.orphans, which the engine keeps and the
// invariants check (none while no job preempts without a claim).
func (e *Engine) hasOrphans(j *jobRec) bool {
	return e.book.claimless > 0 && slices.ContainsFunc(e.jobs.running, func(r *jobRec) bool { return orphanOf(r, j) })
}

// lostWork is the work active job j loses if stopped at now, in
// GPU-seconds: its GPUs times the time since it started or last
// checkpointed, at most preempt.MaxCost.
func lostWork(j *jobRec, now time.Time) int64 {
	secs := int64(now.Sub(later(j.start, j.checkpoint)) / time.Second)
	if secs <= 0 {
		return 0
	}
	return min(int64(j.used)*secs, preempt.MaxCost)
}

// claimFor preempts victims (indexes of p's candidates) for j: j's
// reservation or hold gives way to a claim on the verdict's placement,
// each victim becomes preempting (its GPUs count for no queue from now)
// and goes into the plan with the reason why gives it; the claim's GPUs
// count for j's queue.
func (c *cycle) claimFor(j *jobRec, p *preemptScratch, victims []int, reclaim bool, w *Waiting, why func(vj *jobRec) string) {
	e := c.e
	v := &p.verdict
	lentTo := lentState{class: j.job.Class, resv: j.resv != nil} // whom the lenders lend to, before j's reservation goes
	cl := &claim{job: j, since: c.now, due: c.now.Add(e.cfg.Preemption.Grace), reclaim: reclaim}
	v.Allocation.CopyTo(&cl.alloc)
	cl.alloc.ID = j.job.ID
	if r := j.resv; r != nil {
		c.letGo(r) // (the claim keeps the GPUs it takes: counted free, they ask a cycle at once for nothing)
		e.book.remove(r)
	}
	if h := e.book.holdOf(j); h != nil {
		c.plan.HoldEnds = append(c.plan.HoldEnds, HoldEnd{Job: j.job.ID, Cause: HoldPreempting, Held: h.held})
		// As any hold that ends in the walk: a job refused for its GPUs
		// (those the claim does not take are free now) has them offered
		// again at once (releaseHold).
		c.releaseHold(h)
	}
	var due time.Time // the latest deadline of its victims, as told to the host
	for _, i := range victims {
		vj := p.jobs[i]
		if ownVictim(vj, j) { // signalled already: it joins the claim
			vj.victimOf = cl
			e.book.claimless--
			cl.victims = append(cl.victims, vj)
			due = later(due, vj.preemptedAt.Add(e.cfg.Preemption.Grace))
			continue
		}
		due = later(due, cl.due)
		reason := why(vj)
		vj.phase, vj.preemptedAt, vj.preemptedBy, vj.victimOf = StatePreempting, c.now, j.job.ID, cl
		vj.preemptions++
		e.setCounted(vj, 0)
		cl.victims = append(cl.victims, vj)
		c.plan.Preemptions = append(c.plan.Preemptions, Preemption{Victim: vj.job.ID, Preemptor: j.job.ID,
			Policy: vj.job.Preemption, Deadline: cl.due, GPUs: vj.used, LostGPUSeconds: lostWork(vj, c.now),
			Reason: reason})
	}
	if !due.IsZero() {
		cl.due = later(due, c.now) // a victim signalled already keeps its deadline (if not past)
	}
	if len(p.lentTouched) > 0 {
		// The search counted lent pods free (prepare), a preemption's
		// or a reclaim's: the lenders not preempted give up those the
		// claim uses now, for j.
		mark := len(c.plan.PodChanges)
		e.takeLentAs(j, lentTo, &cl.alloc, c.now, c.plan)
		for _, pc := range c.plan.PodChanges[mark:] {
			cl.lent = append(cl.lent, lentPods{job: e.jobs.byID[pc.Job], pods: len(pc.Pods)})
		}
	}
	e.orphanGone(j.job.ID) // the victims left out of the new claim, if any, are orphans still
	if len(cl.victims) == 0 {
		// A reclaim on lent pods alone (their lenders' queues counting
		// less makes the room): startClaims starts it at the next
		// cycle, which no victim's release will bring: ask for it at
		// once (NextEvent).
		c.reoffer = true
	}
	sortJobs(cl.victims)
	e.book.addClaim(cl)
	e.setCounted(j, cl.alloc.GPUs())
	c.invalidate()
	if p.opened {
		c.clearClaim(cl)
	}
	c.reportClaim(cl, w)
}

// clearClaim moves later the reservations of others that share GPUs with
// claim cl and start before its job would end (claim.clears), the claim
// of a due reservation whose search had its planned GPUs open (prepare):
// each to where it keeps its GPUs after the claim and the reservations
// moved before it, blamed on the late start of the claim's job
// (CauseLateStart), or, behind a reservation moved before it, of that
// reservation's job, as when a reservation slips behind a due one.
func (c *cycle) clearClaim(cl *claim) {
	e := c.e
	cr := &c.claimResv
	// The claim holds its GPUs from now on (a review found reservations
	// that ended before it was due left on them).
	cr.job, cr.start, cr.end = cl.job, cl.since, cl.due.Add(cl.job.job.TimeLimit)
	cl.alloc.CopyTo(&cr.alloc)
	prior := append(c.clearPrior[:0], cr)
	byStart, _ := e.book.sorted()
	c.clearAll = append(c.clearAll[:0], byStart...)
	for _, r := range c.clearAll {
		if r.job.resv != r {
			continue
		}
		if k, ok := e.keepTime(r, prior, c.now); ok && k.at.After(later(r.start, c.now)) {
			r.alloc.CopyTo(&e.alloc)
			c.move(r, k.at, k)
			// It slipped behind the claim, though the upkeep may have
			// placed it anew: one that slips behind it blames its job.
			r.placed = false
			prior = append(prior, r)
		}
	}
	if c.walking && len(prior) > 1 {
		c.restateVisited(prior[1:])
	}
	clear(prior)
	c.clearPrior = prior[:0]
	clear(c.clearAll)
	cr.job = nil
}

// restateVisited tells the jobs the walk passed before the one under test
// the new starts of the reservations clearClaim moved (moved): a job
// reserved on one, or waiting for one (WaitReservation), was told its old
// start. Its reason is corrected in its record and in the plan: in place
// where the plan lists it, else (counted unchanged, Config.OnlyChangedWaits)
// listed now at its rank, as a changed reason; one the walk listed as
// changed that is now the reason it was told before (the same ID:
// jobRec.toldID) is taken off the list and counted unchanged. Claims that
// move reservations are rare; the walk's jobs so far are read only then.
//
// The gaps of a kept order (a job that left, or waits at another
// position) are passed over as the walk passes over them: a job
// cancelled and submitted again under its ID has its old record's gap
// before it, which must not take the plan's entry of the new one.
//
// Other reasons are left as the walk's tests gave them. A reason's NoSlot
// counts slots, and a moved reservation keeps its slot. A quota reason
// (WaitQuota) counts the reservations whose window overlaps the job's,
// which a move later can take out of it; but the claim changes the
// queues' use too (its victims' out, its job's in), which no reason told
// before it follows either, as none follows a start later in the walk:
// telling them anew is a test, left to the next cycle (the claim's job
// letting go of its reservation asks for one at once when GPUs of it are
// free: letGo).
func (c *cycle) restateVisited(moved []*reservation) {
	e := c.e
	changes := e.cfg.OnlyChangedWaits
	ws := c.plan.Waiting
	if !changes && len(ws) > 0 {
		ws = ws[:len(ws)-1] // the last is the reason of the job under test
	}
	at := 0 // the plan lists the walk's reasons in rank order
	for rank, j := range c.walkOrder[:c.walkRank] {
		if j.phase != StatePending || c.fifo && j.pos != c.base+rank {
			// A gap the walk passed over (walk): a job that left, or
			// one kept at another position. Its ID may be a waiting
			// job's, later in the walk (cancelled and submitted again):
			// the plan's entry of that ID is not the gap's.
			continue
		}
		listed := at < len(ws) && ws[at].Job == j.job.ID
		if listed {
			at++
		}
		w := j.wait
		switch r := j.resv; {
		case w.Code == WaitReserved && r != nil && slices.Contains(moved, r):
			w.Until = r.start
			if r.start.After(c.now) {
				w.Blocker = "" // no longer due: it waits for no overrun
			}
		case w.Code == WaitReservation:
			b, ok := e.jobs.byID[w.Blocker]
			if !ok || b.resv == nil || !slices.Contains(moved, b.resv) {
				continue
			}
			w.Until = b.resv.start
		default:
			continue
		}
		if w.Until.Equal(j.wait.Until) && w.Blocker == j.wait.Blocker {
			continue
		}
		var id uint64
		if changes {
			id = e.waitID(&w, j)
		}
		switch {
		case listed && changes && id == j.toldID:
			// Listed by the walk as changed, and back to the reason it
			// was told before: counted unchanged.
			ws = slices.Delete(ws, at-1, at)
			at--
			c.plan.Unchanged++
		case listed:
			ws[at-1].Until, ws[at-1].Blocker = w.Until, w.Blocker
		case changes:
			// Counted unchanged: listed now, with its priority.
			w.Priority = c.priority(rank, j)
			ws = slices.Insert(ws, at, w)
			at++
			c.plan.Unchanged--
			j.toldID = j.waitID
		}
		if changes {
			j.waitID = id
		}
		j.wait = w
	}
	if changes {
		c.plan.Waiting = ws
	}
}

// reportClaim fills w for a job waiting for its victims.
func (c *cycle) reportClaim(cl *claim, w *Waiting) {
	w.Code, w.Until, w.Blocker, w.Hold = WaitPreempting, cl.due, "", nil
	w.Member, w.Reason, w.Detail = "", placement.Reason{}, victimList(cl.victims)
}

// victimList names the victims still holding GPUs: "job a", "jobs a, b
// and 3 more"; "" for none.
func victimList(vs []*jobRec) string {
	switch len(vs) {
	case 0:
		return "" // a claim on lent pods alone (claimFor)
	case 1:
		return "job " + vs[0].job.ID
	}
	var b strings.Builder
	b.WriteString("jobs ")
	shown := min(len(vs), 4)
	for i, v := range vs[:shown] {
		switch {
		case i == 0:
		case i == len(vs)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(v.job.ID)
	}
	if more := len(vs) - shown; more > 0 {
		fmt.Fprintf(&b, " and %d more", more)
	}
	return b.String()
}

// startClaims starts every preemptor whose victims have all released
// their GPUs, on its claim. A claim whose GPUs are not all free (which
// the invariants rule out), or that shares GPUs with a due reservation
// (its victims were released later than its job's time limit after
// their grace: the reservation goes first, and keepBook starts it, or
// keeps its GPUs while a job on its other GPUs overran), is dropped and
// its job waits as any other.
func (c *cycle) startClaims() {
	e := c.e
	c.claimBuf = append(c.claimBuf[:0], e.book.claims...)
	for _, cl := range c.claimBuf {
		if len(cl.victims) > 0 {
			continue
		}
		if !allAvailable(e.ledger.State(), &cl.alloc) || c.dueOn(cl) {
			e.book.dropClaim(cl)
			c.invalidate()
			continue
		}
		c.plan.Tested++
		cl.alloc.CopyTo(&e.alloc)
		c.start(cl.job)
	}
	clear(c.claimBuf)
}

// dueOn reports whether claim cl shares GPUs with a due reservation
// (planned start at or before the cycle).
func (c *cycle) dueOn(cl *claim) bool {
	for _, r := range c.e.book.resv {
		if !r.start.After(c.now) && intersects(&cl.alloc, &r.alloc) {
			return true
		}
	}
	return false
}

// released takes preempting job j, whose GPUs are being released, out of
// the claim that waits for it.
//
// A job released without a claim (an orphan: a drain or a failure
// dropped its preemptor's claim, and no cycle took it into a new one
// since) while its preemptor waits without a claim yields to it
// (jobRec.yieldTo): no claim keeps the GPUs it leaves, and requeued, it
// could start on them again ahead of the preemptor (which it may
// outrank: an older job, fair share, a reclaim across queues), to be
// preempted again at the next cycle. A job released from a claim yields
// to its preemptor too, which changes nothing while the claim stands
// (yieldFirst): a drain or a failure may drop the claim before the next
// walk, which must not let the job take back the GPUs it left.
func (e *Engine) released(j *jobRec) {
	if j.victimOf == nil {
		e.book.claimless--
		defer e.orphanGone(j.preemptedBy)
		if p, ok := e.jobs.byID[j.preemptedBy]; ok && orphanOf(j, p) && p.phase == StatePending && p.claim == nil {
			j.yieldTo, j.yieldRuns = p, p.requeues // (cleared by endJob unless j is requeued)
		}
	}
	if cl := j.victimOf; cl != nil {
		j.yieldTo, j.yieldRuns = cl.job, cl.job.requeues // (cleared by endJob unless j is requeued)
		for i, v := range cl.victims {
			if v == j {
				cl.victims = append(cl.victims[:i], cl.victims[i+1:]...)
				break
			}
		}
		e.book.version++
	}
	j.victimOf, j.preemptedAt, j.preemptedBy = nil, time.Time{}, ""
}

// yieldFirst reports whether the walk, about to test waiting job j, which
// yields to the preemptor it was released for without a claim
// (jobRec.yieldTo), passes it over, and then fills w. It does while that
// preemptor still waits without a claim, ranks below j (one ranked above
// had its test already) and fits the GPUs free now, every reservation,
// hold and claim aside (placeFree): j is not tested in this cycle (it
// waits with WaitPriority, Blocker the preemptor), and the next cycle is
// due at once (NextEvent), by when the preemptor has had its test with
// the GPUs j left free. A preemptor that could not use them does not
// keep j from them: j is tested as any job (passed over for nothing, it
// lost them to a job ranked below it, for its limit). A job ranked
// between the two may still take them. The yield lasts for one walk
// that would test j while the preemptor holds no claim (one while its
// claim stands keeps it, for a drain or a failure may drop the claim
// later): it is cleared then either way.
func (c *cycle) yieldFirst(j *jobRec, w *Waiting) bool {
	p := j.yieldTo
	if p.phase == StatePending && p.claim != nil {
		// Its claim keeps the GPUs j left: the yield waits for it to
		// end (its job starting, or a drain or a failure dropping it).
		return false
	}
	j.yieldTo = nil
	if p.phase != StatePending || p.requeues != j.yieldRuns || p.unfit != "" || !c.ranksAbove(j, p) {
		return false
	}
	spec, _ := c.specFor(p)
	if !c.placeFree(spec) {
		return false
	}
	c.clearFree()
	c.reoffer = true
	*w = Waiting{Job: j.job.ID, Code: WaitPriority, Blocker: p.job.ID,
		Detail: yieldDetail}
	return true
}

// yieldDetail is the Detail of a job passed over for its preemptor
// (yieldFirst); Waiting.Message follows the preemptor's ID with it.
const yieldDetail = "for which it was preempted: that job goes first on the GPUs this one left (tested again at the next cycle)"

// orphanGone clears the orphans mark of job id (the preemptor of a
// victim released without a claim) when none of its victims is left
// preempting without one.
func (e *Engine) orphanGone(id string) {
	if p, ok := e.jobs.byID[id]; ok && p.orphans {
		p.orphans = e.hasOrphans(p)
	}
}

// exemptBlocked reports whether waiting job j's last test found that the
// only victims it could preempt were inside their exempt time (or
// protected), before a snapshot too.
func (j *jobRec) exemptBlocked() bool {
	c := j.wait.Preempt.Code
	return j.exemptRestored || j.wait.PreemptTried && (c == preempt.Exempt || c == preempt.Protected)
}

// exemptEnd returns the earliest end after the latest time seen of an
// exempt time that keeps a waiting job from preempting (its last search
// said the only victims were exempt), or false.
func (e *Engine) exemptEnd() (time.Time, bool) {
	if e.pre == nil {
		return time.Time{}, false
	}
	top, any := 0, false
	for _, j := range e.jobs.pending {
		if j.exemptBlocked() && (!any || j.job.Class > top) {
			top, any = j.job.Class, true
		}
	}
	var next time.Time
	if !any {
		return next, false
	}
	for _, j := range e.jobs.running {
		if j.phase != StateRunning || j.job.Class >= top || j.job.Preemption == preempt.Never {
			continue
		}
		if t := j.start.Add(e.cfg.Preemption.ExemptTime); t.After(e.last) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, !next.IsZero()
}

// yieldClaims drops the claims on the GPUs of due reservation r, which
// starts now: a claim may share GPUs only with reservations that start
// after its job would end had it started when due, so its victims were
// released far too late for it (later than its time limit after their
// grace). Its job waits as any other again.
func (c *cycle) yieldClaims(r *reservation) {
	e := c.e
	c.claimBuf = append(c.claimBuf[:0], e.book.claims...)
	for _, cl := range c.claimBuf {
		if intersects(&cl.alloc, &r.alloc) {
			e.book.dropClaim(cl)
			c.invalidate()
		}
	}
	clear(c.claimBuf)
}
