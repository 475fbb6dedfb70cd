package backfill

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// wait decides what a job that cannot start now gets: its hold, its
// reservation (kept up by upkeep), a new reservation, a hold, or a
// reason; a job that may preempt and would not start soon otherwise
// first looks for victims. A job left with anything but a reason
// (classify) marks the holds whose GPUs refused it (refusedBy), as
// classify does.
func (c *cycle) wait(j *jobRec, w *Waiting) {
	if !c.waitFor(j, w) {
		spec, _ := c.specFor(j)
		c.refusedBy(j, spec)
	}
}

// refusedBy marks every hold but job j's own whose target the placement
// j would have on the GPUs free now, every reservation, hold and claim
// aside, takes GPUs of (as classify does for the hold it blames): the
// hold refused j, tested before its gang, and when the walk lets it go
// the next cycle offers its GPUs again at once (releaseHold). Without
// holds to mark, nothing is placed.
func (c *cycle) refusedBy(j *jobRec, spec *gang.Spec) {
	e := c.e
	own, unmarked := e.book.holdOf(j), false
	for _, h := range e.book.holds {
		if h != own && !h.refused {
			unmarked = true
			break
		}
	}
	if !unmarked {
		return
	}
	if !c.placeFree(spec) {
		return
	}
	for _, h := range e.book.holds {
		if h != own && c.hitsFree(&h.target) {
			h.refused = true
		}
	}
	c.clearFree()
}

// placeFree places spec on the GPUs free now, every reservation, hold and
// claim aside, into e.alloc, and marks its GPUs per node in e.nodeMask
// for hitsFree (clearFree clears them); false when it does not fit.
func (c *cycle) placeFree(spec *gang.Spec) bool {
	e := c.e
	s := e.ledger.State()
	if !c.naive && (s.FreeGPUs() < e.leastGPUs(spec) || !mayFit(s, spec)) {
		return false
	}
	if res, _ := e.adm.Check(s, spec, &e.alloc); !res.Admitted {
		return false
	}
	forEntries(&e.alloc, func(x topology.NodeAlloc) { e.nodeMask[x.Node] |= x.GPUs })
	return true
}

// hitsFree reports whether a takes a GPU of placeFree's placement, in one
// pass over a's entries.
func (c *cycle) hitsFree(a *gang.Allocation) bool {
	m := c.e.nodeMask
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if m[x.Node]&x.GPUs != 0 {
				return true
			}
		}
	}
	return false
}

// clearFree clears placeFree's marks.
func (c *cycle) clearFree() {
	m := c.e.nodeMask
	forEntries(&c.e.alloc, func(x topology.NodeAlloc) { m[x.Node] = 0 })
}

// waitFor is wait but for the holds' marks; it reports whether the job
// was left with a reason (classify, which marks the hold it blames).
func (c *cycle) waitFor(j *jobRec, w *Waiting) bool {
	spec, patient := c.specFor(j)
	failed := c.lastRes
	if c.e.quota != nil && c.reclaimGuarantee(j, w) {
		return false
	}
	if h := c.e.book.holdOf(j); h != nil && c.keepHold(h, spec, w) {
		if c.mayPreempt(j, w) {
			c.preempt(j, spec, time.Time{}, w)
		}
		return false
	}
	if r := j.resv; r != nil {
		if c.far(r.start) && c.mayPreempt(j, w) && c.preempt(j, spec, r.start, w) {
			return false
		}
		w.Code, w.Until = WaitReserved, r.start
		if !r.start.After(c.now) {
			if o := c.overrunOn(&r.alloc); o != nil {
				w.Blocker = o.job.ID
			}
		}
		return false
	}
	if patient && c.fitsLoosely(j, failed, w) {
		if _, _, ok := c.e.holdEligibility(j); ok {
			// A start, or a hold given or moved, may take the free GPUs
			// it fits on (startOnLoose, coverPlanned).
			c.looseEligible, c.unheldEligible = true, true
		}
		return false
	}
	if j.resv != nil {
		return false // keepHold made it a reservation
	}
	if c.reserveOrPreempt(j, spec, w) {
		return false
	}
	if c.tryHold(j, spec, w) {
		return false
	}
	c.classify(spec, failed, w)
	if w.Code == WaitResources || w.Code == WaitGang {
		w.NoSlot = c.noSlot(j)
		if w.NoSlot == 0 && c.mayReserveFor(j) && c.e.cfg.Hold.Enabled {
			c.slotOpenTold = true // (resvChanged)
		}
	}
	return true
}

// noSlot says why job j, which holds no reservation, was refused a slot
// (0 when it was not: reservations are off or unbounded, or a slot was
// open to it and none could be planned). It follows mayReserveFor's
// cases, the lasting reason first: a small job that has not aged is told
// of the small slot's holder even when the walk also keeps a slot, since
// it could not take that one either.
func (c *cycle) noSlot(j *jobRec) NoSlotCode {
	cfg := &c.e.cfg
	if cfg.Strict || cfg.ReservationDepth == 0 || c.mayReserveFor(j) {
		return 0
	}
	switch {
	case c.backlog:
		return Backlog
	case c.slotsFull():
		return SlotsTaken
	case !c.e.large(j) && !c.aged(j) && c.smallHeld() > 0:
		return SmallSlotTaken
	}
	return SlotKept // resvClosed, lastSlotKept or keptForSmall
}

// reserveOrPreempt gives job j, which has no reservation, one at the
// earliest time the profile admits it (while ReservationDepth allows),
// unless that time is far (or there is none) and j may preempt: it then
// looks for victims first. It reports whether j got a reservation or a
// claim.
func (c *cycle) reserveOrPreempt(j *jobRec, spec *gang.Spec, w *Waiting) bool {
	e := c.e
	canReserve := c.mayReserveFor(j) && !j.dropped
	if !canReserve && !c.mayPreempt(j, w) {
		return false
	}
	// Without a reservation to make, the search only tells how far j's
	// start is, and mayPreempt has admitted j already.
	t, found := e.search(c.now, query{j: j, spec: spec})
	if !found {
		c.readHoldsMissed(j, spec) // (holdLetGo)
	}
	if (!found || c.far(t)) && (!canReserve || c.mayPreempt(j, w)) {
		if found {
			// The search's placement in e.alloc is needed for the
			// reservation if preemption does not help.
			e.alloc.CopyTo(&e.plannedAlloc)
		}
		if c.preempt(j, spec, t, w) {
			return true
		}
		if found {
			e.plannedAlloc.CopyTo(&e.alloc)
		}
	}
	if found && canReserve && e.quota != nil && !e.promiseFits(j, e.plannedGPUs(j), t) {
		// Whole nodes of unequal sizes placed on large nodes are
		// planned again on smaller ones, later if need be, as a start
		// is (startOnSmaller): it is charged the GPUs placed.
		at, g, ok := c.reserveOnSmaller(j, spec, t)
		if !ok {
			// Its queue's quota has room for it now (the gate), not at
			// its planned start beside the reservations planned to run
			// while it would: it waits for quota, and keeps the slot it
			// would have taken (no job ranked below takes it, in this
			// cycle, to reserve the room this one needs). The reason
			// is the last placement's (its smallest nodes').
			qc, _, why, _ := e.promiseCheck(j, g, true, at)
			c.quotaWait(j, qc, why, w)
			c.keepRefusedSlot()
			return true
		}
		t = at
	}
	if found && canReserve {
		before := e.cacheKey(c.now)
		c.reserveAt(j, t, w)
		e.prof.reserved(j, before, e.cacheKey(c.now))
		return true
	}
	return false
}

// reserveOnSmaller plans job j, whose placement found at t (on e.alloc)
// its queue's quota refuses there (promiseCheck at plannedGPUs), again
// when it has whole-node members and may use nodes of unequal sizes (its
// leastGPUs below the GPUs placed): its whole-node pods on the nodes
// below the largest they took, then below that (smallerBy), each at the
// earliest time the profile admits it. It returns the start and
// placement (e.alloc) of the first its quota takes there, and ok; else
// the start and planned GPUs of the last placement found (the first's
// when none is tried), for the reason. spec is left as it was.
func (c *cycle) reserveOnSmaller(j *jobRec, spec *gang.Spec, t time.Time) (at time.Time, g int, ok bool) {
	e := c.e
	at, g = t, e.plannedGPUs(j)
	if j.wholeG == nil || j.leastGPUs >= e.alloc.GPUs() {
		return at, g, false
	}
	place := func() bool {
		s, found := e.search(c.now, query{j: j, spec: spec})
		if found {
			at, g = s, e.plannedGPUs(j)
		}
		return found
	}
	ok = c.smallerBy(spec, place, func() bool { return e.promiseFits(j, g, at) })
	return at, g, ok
}

// settleMove reports where a job whose reservation an event dropped went:
// a later reservation, or none.
func (c *cycle) settleMove(j *jobRec) {
	m := j.moved
	if m == nil {
		return
	}
	j.moved = nil
	switch {
	case j.phase != StatePending:
		return // it started
	case j.resv != nil:
		if !j.resv.start.After(m.From) {
			return
		}
		m.To = j.resv.start
	}
	c.plan.Moves = append(c.plan.Moves, *m)
}

// mayReserve reports whether a slot is free and open to the rest of the
// walk; mayReserveFor adds the job's own class.
func (c *cycle) mayReserve() bool {
	cfg := &c.e.cfg
	d := cfg.ReservationDepth
	return !cfg.Strict && d != 0 && (d == Conservative || len(c.e.book.resv)+c.quotaRefused < d && !c.resvClosed)
}

// keepRefusedSlot keeps, for the rest of the walk, the reservation slot
// of a job refused a reservation because its queue's quota would have no
// room at its planned start: no job ranked below takes it to reserve the
// room that job needs (mayReserve counts it; during a backlog it is the
// one slot, as heldAbove says).
func (c *cycle) keepRefusedSlot() {
	c.quotaRefused++
	c.heldAbove = true
}

// mayReserveFor reports whether job j may take a new reservation: a slot
// is free and open to it, and, for a job below ReservationMinGPUs that
// has not waited ReservationAnyAfter, no other such job holds one. While
// the walk keeps a slot for a small job it refused (keptForSmall), no
// other job takes that slot.
func (c *cycle) mayReserveFor(j *jobRec) bool {
	if c.backlog {
		// EASY while the queue has a backlog: the first job the walk
		// leaves waiting with a reservation holds the only one that
		// counts; those held further down from before are kept.
		return !c.heldAbove
	}
	if !c.mayReserve() {
		return false
	}
	switch {
	case c.e.large(j):
		return !c.lastSlotKept()
	case c.aged(j):
		return !c.keptForSmall()
	default:
		return !c.smallClosed && c.smallHeld() == 0
	}
}

// keptForSmall reports whether the walk keeps a slot for a small job it
// passed while another held the small jobs' one: that one has freed
// since (its job started in the walk), and it waits for the next cycle
// to offer it in rank order, as resvClosed does for every slot.
func (c *cycle) keptForSmall() bool {
	return c.smallClosed && c.smallHeld() == 0
}

// lastSlotKept reports whether the one free slot left is kept for a
// small job (keptForSmall), so that no gang may take it.
func (c *cycle) lastSlotKept() bool {
	return c.keptForSmall() && len(c.e.book.resv) >= c.e.cfg.ReservationDepth-1
}

// large reports whether job j may take any reservation slot (at least
// ReservationMinGPUs, or the rule is off).
func (e *Engine) large(j *jobRec) bool {
	return e.resvMin == 0 || j.gpus >= e.resvMin
}

// smallHeld counts the reservations held by jobs below
// ReservationMinGPUs (0 when the rule is off).
func (c *cycle) smallHeld() int {
	e, n := c.e, 0
	if e.resvMin == 0 {
		return 0
	}
	for _, r := range e.book.resv {
		if !e.large(r.job) {
			n++
		}
	}
	return n
}

// slotsFull reports whether every reservation slot of a bounded depth is
// taken.
func (c *cycle) slotsFull() bool {
	d := c.e.cfg.ReservationDepth
	return d > 0 && len(c.e.book.resv) >= d
}

// closedKeepsSlot reports whether a slot is free that resvClosed or
// smallClosed keeps from the rest of the walk.
func (c *cycle) closedKeepsSlot() bool {
	return !c.slotsFull() && (c.resvClosed || c.keptForSmall())
}

// passedWaiting records that the walk passed job j, waiting, which holds
// no reservation (tested or not): if no slot was open to it, a slot that
// frees later in the walk is left for the next cycle (resvClosed,
// smallClosed), so that it does not go to a job ranked below j.
func (c *cycle) passedWaiting(j *jobRec) {
	switch {
	case c.slotsFull():
		c.resvClosed = true
	case c.e.large(j) && c.lastSlotKept():
		c.resvClosed = true // the one slot left is kept for a small job
	case !c.smallClosed && !c.e.large(j) && !c.aged(j) && c.smallHeld() > 0:
		c.smallClosed = true
	}
}

// leftWaiting records that the walk left job j waiting (it was tested
// and did not start): the reservations that overlap its run, were it to
// start now, were kept from it (letGo).
func (c *cycle) leftWaiting(j *jobRec) {
	if c.refusedTo.Equal(MaxTime) {
		return
	}
	to := MaxTime
	if l := j.job.TimeLimit; l > 0 {
		to = c.now.Add(l)
	}
	if to.After(c.refusedTo) {
		c.refusedTo = to
	}
}

// letGo records that the walk lets go of reservation r (its job starts,
// or it is dropped) after it left waiting a job whose run would overlap
// it (leftWaiting), and that some of its GPUs are free now (not taken by
// its job starting): those were kept from that job, which was tested
// before and may start on them now, so the next cycle offers them again
// in priority order, at once (as releaseHold does for a hold's). In
// this cycle, jobs walked after take them.
func (c *cycle) letGo(r *reservation) {
	if r.start.Before(c.refusedTo) && c.countFree(&r.alloc) > 0 {
		c.reoffer = true
	}
}

// startedInWalk records the end, at its limit, of job j's run, started
// in the walk: a new candidate time for the reservations searched before
// the walk (upkeep), which could move earlier onto its GPUs then
// (reofferEarlyWindows).
func (c *cycle) startedInWalk(j *jobRec) {
	if !c.walking {
		return
	}
	if end := c.now.Add(j.job.TimeLimit); c.earlyEnd.IsZero() || end.Before(c.earlyEnd) {
		c.earlyEnd = end
	}
}

// reofferEarlyWindows asks for a cycle at once when the walk started a
// job whose run would end (at its limit) before the start of a
// reservation kept up before the walk (upkeep) that overlaps the run of
// a job the walk left waiting, were it to start now (leftWaiting), on
// GPUs free now: the next cycle's upkeep searches that reservation again
// (the end is a new candidate time, Engine.book.free), may move it
// earlier onto the started job's GPUs, and let the waiting job start on
// those it keeps now (as letGo does for a reservation let go).
func (c *cycle) reofferEarlyWindows() {
	if c.earlyEnd.IsZero() || c.reoffer {
		return
	}
	for _, r := range c.e.book.resv {
		if !r.inWalk && r.start.After(c.earlyEnd) && r.start.Before(c.refusedTo) && c.countFree(&r.alloc) > 0 {
			c.reoffer = true
			return
		}
	}
}

// holdInPlay reports whether hold mode is in play in the cycle: a gang
// held as the walk began, or one could be then or now (Engine.mayHold:
// once the walk started the first active job without a limit too).
// With every active job under a limit, hold mode holds nothing, and the
// cycle asks for no more cycles at once than with hold mode off (the
// conservative scenario, TestFreedSlotGoesByRank).
func (c *cycle) holdInPlay() bool {
	return c.holdOn || c.e.mayHold()
}

// reofferStaleResv asks for a cycle at once, in hold mode, when the walk
// freed something (a hold ended or moved, a reservation was let go, a
// job with a limit started: Engine.book.free) after the last search of
// a reservation not yet due: kept up before the walk (upkeep), or made
// in it before the change. That search saw the GPUs held, reserved or
// free for good; the next cycle's upkeep searches again and may move the
// reservation earlier (onto the old target of a hold that moved, or
// planned from the end of a job started on GPUs a hold kept), as a
// second cycle at the same time would. Outside hold mode a reservation
// that may move earlier asks for no cycle of its own: it asks only when
// a job left waiting would start on the GPUs it keeps now
// (reofferEarlyWindows, letGo).
func (c *cycle) reofferStaleResv() {
	e := c.e
	if c.reoffer || !c.holdInPlay() || e.book.freed == c.freedBefore {
		return
	}
	for _, r := range e.book.resv {
		if r.checked < e.book.freed && r.start.After(c.now) {
			c.reoffer = true
			return
		}
	}
}

// passedRun is passedWaiting for a run of jobs passed over unread (by
// their stamps or classes); a job that left the queue is not waiting.
// The jobs are read only when one of them could close something. The run
// counts as jobs without a limit left waiting (leftWaiting), unread.
func (c *cycle) passedRun(jobs []*jobRec) {
	c.refusedTo = MaxTime
	if c.slotsFull() {
		c.resvClosed = true
		return
	}
	if c.e.resvMin == 0 || c.resvClosed {
		return
	}
	small := !c.smallClosed && c.smallHeld() > 0
	large := c.lastSlotKept()
	if !small && !large {
		return
	}
	for _, j := range jobs {
		if j.phase != StatePending {
			continue
		}
		c.passedWaiting(j)
		if small && c.smallClosed || c.resvClosed {
			return
		}
	}
}

// reserveAt gives job j a reservation from t on e.alloc, and says so in
// w: due at once, it names the job past its time limit on its GPUs, if
// any, as waitFor does in the cycles after. A job the reservation opens
// lent pods to asks for a cycle at once (lentOpened).
func (c *cycle) reserveAt(j *jobRec, t time.Time, w *Waiting) {
	e := c.e
	_, patient := c.specFor(j)
	r := &reservation{job: j, start: t, firstStart: t, checked: e.book.freed, patient: patient, inWalk: c.walking}
	if l := j.job.TimeLimit; l > 0 {
		r.end = t.Add(l)
	}
	e.alloc.CopyTo(&r.alloc)
	e.book.add(r)
	c.invalidate()
	w.Code, w.Until = WaitReserved, t
	if !t.After(c.now) {
		// Due at once, on GPUs a job past its limit may still hold: it
		// is told so from this cycle on, as waitFor tells it after.
		if o := c.overrunOn(&r.alloc); o != nil {
			w.Blocker = o.job.ID
		}
	}
	if c.walking && c.lentOpened(j) {
		c.reoffer = true
	}
	if c.walking {
		// Its planned GPUs are kept from the searches after it, as a
		// hold's target is: an eligible gang tested before, left
		// without a hold, may have had its planned start there.
		c.coverPlanned()
		c.resvChanged(j, true)
	}
}

// lentOpened reports whether job j, just reserved in the walk, would
// start now on the pods growing jobs lend it now that it holds a
// reservation (lentPlace), one of them lending it none while it held
// none: j was tested without them (tryLent), and the next cycle, at
// once, starts it there. A job that would not fit them asks for no
// cycle, so that one reserved again every cycle does not ask for one at
// once forever. It overwrites e.alloc (the reservation holds its copy).
func (c *cycle) lentOpened(j *jobRec) bool {
	e := c.e
	if e.jobs.growers == 0 {
		return false
	}
	with, without := lentState{class: j.job.Class, resv: true}, lentState{class: j.job.Class}
	opened := false
	for _, l := range e.jobs.running {
		if opened = e.lendsAs(l, with, c.now) && !e.lendsAs(l, without, c.now); opened {
			break
		}
	}
	if !opened {
		return false
	}
	full, _ := c.specFor(j)
	spec := c.quotaSpec(j, full)
	c.prepareScratch(j)
	return c.lentPlace(j, spec)
}

// upkeep keeps reservation r, moved earlier when the profile now allows
// it. It moves later only when it cannot keep its planned GPUs from its
// start: a job it waits for started late, or a reservation before it on
// shared GPUs slipped (both come from a late start); it then moves to a
// fresh placement found before it could keep them, or else to the time it
// can, or is dropped. A reservation whose GPUs are held only by jobs past
// their time limit stays as it is, waiting for them. Every later move or
// drop goes into the plan with its cause.
func (c *cycle) upkeep(r *reservation) {
	e, j := c.e, r.job
	spec, patient := c.specFor(j)
	k, keepable := e.keepTime(r, c.slipped, c.now)
	// Its queue's quota has no room for it before a late job ends.
	var quotaFrom time.Time
	if keepable {
		quotaFrom = c.lateQuota(r, &k)
	}
	var until time.Time
	if keepable {
		until = k.at
	}
	var t time.Time
	found := false
	kept := keepable && !k.at.After(later(r.start, c.now))
	// A reservation that keeps its start needs no search for an earlier
	// one unless something was freed since the last search found none,
	// and then only before the time from which every such change left
	// the profile as that search saw it (book.changedBefore).
	if !kept || c.naive || r.checked != e.book.freed || r.patient != patient {
		q := query{j: j, spec: spec, until: until}
		if from, ok := e.book.changedBefore(r.checked); ok && kept && !c.naive && r.patient == patient {
			if from = later(from, c.now.Add(1)); from.Before(q.until) {
				q.until = from
			}
		}
		t, found = e.search(c.now, q)
		if (e.checkEach || e.checkSearch) && !q.until.Equal(until) {
			if t2, found2 := e.search(c.now, query{j: j, spec: spec, until: until}); found2 != found || found && !t2.Equal(t) {
				panic(fmt.Sprintf("backfill: reservation of %s searched before %v found %v %v, before %v %v %v", j.job.ID, q.until, t, found, until, t2, found2))
			}
		}
		r.checked, r.patient = e.book.freed, patient
	}
	if found && t.Before(quotaFrom) {
		// GPUs found before the late job's end, where its queue's quota
		// has no room (the search finds GPUs only): it keeps its GPUs
		// to then, and the next cycle searches again.
		found = false
		r.checked = math.MaxUint64
	}
	if found && t.Before(r.start) && !e.promiseFits(j, e.plannedGPUs(j), t) {
		// Earlier, its queue's quota would have no room for it beside
		// the reservations of others it would run with (promiseCheck):
		// as when no earlier start is found, it keeps its start, moves
		// to the time it can keep its GPUs, or is dropped. The next
		// cycle searches again (an earlier start exists; the quota may
		// have room for it then).
		found = false
		r.checked = math.MaxUint64
	}
	if found && t.After(r.start) && keepable && k.at.After(t) && !e.promiseFits(j, e.plannedGPUs(j), t) {
		// Later, on the fresh placement, its queue's quota would have no
		// room for it beside the reservations of others it would run
		// with (one a late start pushed into its window): it moves to
		// the time it can keep its planned GPUs instead, and the next
		// cycle searches again.
		found = false
		r.checked = math.MaxUint64
	}
	switch {
	case found:
		// Its new place is settled like a slipped one's: a reservation
		// kept up after it that slips on its own GPUs keeps off it (one
		// slipped onto a reservation moved before it in the same pass:
		// found by the invariant checker on random operations).
		c.move(r, t, k)
		r.placed = true
		c.slipped = append(c.slipped, r)
	case !keepable:
		cause, by := c.blame(k)
		c.plan.Moves = append(c.plan.Moves, Move{Job: j.job.ID, From: r.start, Cause: cause, By: by})
		e.book.remove(r)
		j.dropped = true
		c.invalidate()
	case k.at.After(later(r.start, c.now)):
		r.alloc.CopyTo(&e.alloc)
		c.move(r, k.at, k)
		c.slipped = append(c.slipped, r)
	case !r.start.After(c.now):
		// Due, waiting for jobs past their limit: it goes first.
		c.slipped = append(c.slipped, r)
	}
}

// lateQuota moves k, the time from which reservation r keeps its planned
// GPUs, later when r's queue's quota has no room for it at its start
// (checked as at its planned start) and a job that started late
// (cycle.late), under the queue where that check binds, still runs then
// but would have ended by then on time: to the latest end of such jobs,
// blamed on that job. The room the late job takes comes
// back only at its end; a reservation left at its start would be given
// up for quota when due. It returns the latest such end (zero when no
// late job takes its room), before which its quota has no room.
func (c *cycle) lateQuota(r *reservation, k *keep) time.Time {
	e := c.e
	if len(c.late) == 0 {
		return time.Time{}
	}
	at := later(r.start, c.now)
	qc, _, _, fits := e.promiseCheck(r.job, e.minGPUsOf(r), false, at)
	if fits {
		return time.Time{}
	}
	t, by := c.lateTaker(qc, at)
	if by == nil {
		return time.Time{}
	}
	if t.After(k.at) {
		k.at, k.job, k.owner = t, by, true
	}
	return t
}

// lateTaker returns the latest end of the jobs that started late
// (cycle.late) under the queue where check qc binds (any, when the
// cluster binds) and still run at at, though on time they would have
// ended by then, and the job of that end (nil when there is none): only
// such a job takes the quota room a reservation starting at at lacks.
func (c *cycle) lateTaker(qc quotaCheck, at time.Time) (time.Time, *jobRec) {
	var t time.Time
	var by *jobRec
	for _, o := range c.late {
		if (qc.at < 0 || c.e.quota.isAncestor(qc.at, o.queue)) && o.end.After(at) && !o.promised.Add(o.job.TimeLimit).After(at) && o.end.After(t) {
			t, by = o.end, o
		}
	}
	return t, by
}

// move moves reservation r to start t on e.alloc, recording a later move
// with its cause (k says what r waits for).
func (c *cycle) move(r *reservation, t time.Time, k keep) {
	e := c.e
	if t.After(r.start) {
		cause, by := c.blame(k)
		c.plan.Moves = append(c.plan.Moves, Move{Job: r.job.job.ID, From: r.start, To: t, Cause: cause, By: by})
	}
	// Moved, it no longer holds its GPUs on from now for its quota: a
	// reservation that slips behind it is blamed on this move's cause
	// (a chain), not on its quota.
	r.quotaHeld = false
	old := r.end
	r.start, r.end = t, time.Time{}
	if l := r.job.job.TimeLimit; l > 0 {
		r.end = t.Add(l)
	}
	// Its old GPUs and time are free for others; its blocks, old and new,
	// end by the later end.
	if old.IsZero() || r.end.IsZero() {
		e.book.free(time.Time{})
	} else {
		e.book.free(later(old, r.end).Add(1))
	}
	r.checked = e.book.freed - 1 // search again next time: it moved
	e.alloc.CopyTo(&r.alloc)
	e.book.changed()
	c.invalidate()
}

// blame names why a reservation could not keep its planned start, from
// what it waits for last: an active job that started late (its end moved
// past the start) or overran, or a reservation before it on shared GPUs
// that slipped (a due one whose job has not started, or one moved later),
// which comes from a late start too, unless that due one's GPUs were
// free and its job's quota held it back (CauseQuotaAhead).
func (c *cycle) blame(k keep) (Cause, string) {
	switch {
	case k.job == nil:
		return CauseUnknown, ""
	case !k.owner && k.job.resv != nil && k.job.resv.quotaHeld:
		return CauseQuotaAhead, k.job.job.ID
	case !k.owner:
		return CauseLateStart, k.job.job.ID
	case k.job.late():
		return CauseLateStart, k.job.job.ID
	case k.job.overrun(c.now):
		return CauseOverrun, k.job.job.ID
	}
	return CauseUnknown, k.job.job.ID
}

// overrunOn returns the lowest-numbered job past its time limit on a's
// GPUs, or nil.
func (c *cycle) overrunOn(a *gang.Allocation) *jobRec {
	var over *jobRec
	forGPUs(a, func(n, g int) {
		if o := c.e.jobs.owner(n, g); o != nil && o.overrun(c.now) && (over == nil || o.seq < over.seq) {
			over = o
		}
	})
	return over
}

// forGPUs calls f for every GPU of a.
func forGPUs(a *gang.Allocation, f func(n, g int)) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			for m := x.GPUs; m != 0; m &= m - 1 {
				f(int(x.Node), bitIndex(m))
			}
		}
	}
}

// fitsLoosely reports whether a patient job j would fit now without its
// patience; it then waits for a tighter placement (w says until when).
func (c *cycle) fitsLoosely(j *jobRec, failed gang.Admission, w *Waiting) bool {
	e := c.e
	res, _ := e.adm.Check(e.scratch, &j.job.Gang, &e.alloc)
	if !res.Admitted {
		return false
	}
	w.Code, w.Until = WaitTopology, j.job.Submit.Add(j.job.Patience.Wait)
	w.Member, w.Reason = failed.Member, failed.Reason
	return true
}

// classify sets a waiting job's reason from its failed admission.
func (c *cycle) classify(spec *gang.Spec, failed gang.Admission, w *Waiting) {
	e := c.e
	w.Code, w.Member, w.Reason = WaitResources, failed.Member, failed.Reason
	c.alone = failed.Proven && !failed.Searched
	c.aloneLater = c.alone && failed.Orders > 1
	if failed.ColocationLevel != "" {
		w.Member = ""
		w.Reason.Code = 0
		w.Detail = failed.String()
	}
	if len(spec.Members) > 1 {
		w.Code = WaitGang
	}
	switch r, h, cl, _ := c.freeBlocker(spec); {
	case r != nil:
		w.Code, w.Blocker, w.Until = WaitReservation, r.job.job.ID, r.start
		if e.cfg.Hold.Enabled {
			c.resvBlamed = true // (startOnBlamed)
		}
	case h != nil:
		w.Code, w.Blocker, w.Until = WaitHold, h.job.job.ID, h.since
		h.refused = true
		c.holdBlamed = true // (startOnBlamed)
	case cl != nil:
		w.Code, w.Blocker, w.Until = WaitClaimed, cl.job.job.ID, cl.since
	}
}

// blameEntry is reblame's answer for the jobs of a shape on the scratch
// contents of gen (cycle.gen; gens start at 1, so that the zero entry
// matches none).
type blameEntry struct {
	shape, gen uint64
	r          *reservation
	h          *hold
	cl         *claim
	placed     bool
}

// blameBits is the log2 of blameCap, the size of reblame's table.
const (
	blameBits = 6
	blameCap  = 1 << blameBits
)

// blameHome is the entry of reblame's table for a shape on the scratch
// contents of gen: the top bits of a multiplicative hash of both.
func blameHome(shape, gen uint64) int {
	return int((shape*0x9e3779b97f4a7c15 ^ gen*0xc2b2ae3d27d4eb4f) >> (64 - blameBits))
}

// freeBlocker returns the reservation (of the scratch state's,
// blockedRes), else the hold (but ownHold), else the claim whose GPUs
// spec's placement without them (placeFree) takes, or all nil when spec
// fits nowhere without them either, or fits without taking theirs
// (placed says which).
func (c *cycle) freeBlocker(spec *gang.Spec) (r *reservation, h *hold, cl *claim, placed bool) {
	e := c.e
	if len(c.blockedRes) == 0 && len(e.book.holds) == 0 && len(e.book.claims) == 0 {
		return nil, nil, nil, false
	}
	// Would it fit without the reservations and holds of others?
	if !c.placeFree(spec) {
		return nil, nil, nil, false
	}
	defer c.clearFree()
	for _, r := range c.blockedRes {
		if c.hitsFree(&r.alloc) {
			return r, nil, nil, true
		}
	}
	for _, h := range e.book.holds {
		if h != c.ownHold && c.hitsFree(&h.target) {
			return nil, h, nil, true
		}
	}
	for _, cl := range e.book.claims {
		if c.hitsFree(&cl.alloc) {
			return nil, nil, cl, true
		}
	}
	return nil, nil, nil, true
}

// reblame tells job j, told at its test that it would fit but for the
// GPUs of another's reservation, hold or claim (w, its placement reason
// recounted on the state the plan leaves: recountWaits), what classify
// tells it on that state: the blocker whose GPUs its placement without
// them takes, or, when starts later in the walk left it no such
// placement, that it waits for resources (WaitResources, WaitGang), and
// why it holds no reservation (noSlot), as a repeat of the cycle tells.
// One that now fits without taking theirs keeps its code (the next cycle
// tests it). Unlike classify, it marks no hold as refused and no
// reservation or hold as blamed: the walk is over. The scratch state
// must be j's (prepareScratch).
//
// A simple job's answer (jobRec.simple: its shape is its whole request)
// depends on its shape and the scratch contents alone (the free state is
// that state and its blocks): it is kept in a small table (cycle.blames)
// for the next job of the shape on the same contents (a queue of shared
// shapes tells many such jobs).
func (c *cycle) reblame(j *jobRec, w *Waiting) {
	spec, _ := c.specFor(j)
	var (
		r      *reservation
		h      *hold
		cl     *claim
		placed bool
	)
	if !c.naive && j.simple && j.tight == nil && j.resv == nil && c.ownHold == nil {
		m := &c.blames[blameHome(j.shapeID, c.gen)]
		if m.shape != j.shapeID || m.gen != c.gen {
			r, h, cl, placed = c.freeBlocker(spec)
			*m = blameEntry{shape: j.shapeID, gen: c.gen, r: r, h: h, cl: cl, placed: placed}
		}
		r, h, cl, placed = m.r, m.h, m.cl, m.placed
	} else {
		r, h, cl, placed = c.freeBlocker(spec)
	}
	switch {
	case r != nil:
		w.Code, w.Blocker, w.Until = WaitReservation, r.job.job.ID, r.start
	case h != nil:
		w.Code, w.Blocker, w.Until = WaitHold, h.job.job.ID, h.since
	case cl != nil:
		w.Code, w.Blocker, w.Until = WaitClaimed, cl.job.job.ID, cl.since
	case !placed:
		w.Code, w.Blocker, w.Until = WaitResources, "", time.Time{}
		if len(spec.Members) > 1 {
			w.Code = WaitGang
		}
		w.NoSlot = c.noSlot(j)
	}
}

// openSlotTaken reports whether wait w, Resources or Gang, was told
// while a slot was open to its job (NoSlot 0 where the config bounds the
// reservations: no start could be planned); recountWaits tells it
// SlotsTaken when jobs ranked below it filled the book later in the
// walk, as noSlot tells it in a repeat of the cycle.
func (c *cycle) openSlotTaken(w *Waiting) bool {
	cfg := &c.e.cfg
	return w.NoSlot == 0 && (w.Code == WaitResources || w.Code == WaitGang) && !cfg.Strict && cfg.ReservationDepth > 0
}

// countFree counts the GPUs of a that are free now.
func (c *cycle) countFree(a *gang.Allocation) int {
	s := c.e.ledger.State()
	n := 0
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if s.Status(x.Node) != topology.Down {
				n += bits.OnesCount64(x.GPUs & s.Free(x.Node))
			}
		}
	}
	return n
}

// aged reports whether job j, below ReservationMinGPUs, has waited
// ReservationAnyAfter and so may take any slot.
func (c *cycle) aged(j *jobRec) bool {
	w := c.e.cfg.ReservationAnyAfter
	return w > 0 && c.now.Sub(j.job.Submit) >= w
}

// noteWorld marks the reasons of the walk's ranks below rank stale when
// the world (the ledger state, the book) changed since the walk last
// looked: they were told on a state the plan no longer leaves.
func (c *cycle) noteWorld(rank int) {
	if l, b := *c.ledgerCount, c.e.book.version; l != c.staleLedger || b != c.staleBook {
		c.staleLedger, c.staleBook, c.staleTo = l, b, rank
	}
}

// recountWaits reads anew, on the state the plan leaves (after every
// start, reservation, hold and grow of the cycle), the counts of the
// placement reasons (Resources, Gang, and the reason a Reservation, Hold
// or Claimed wait carries from the same test) of the jobs the walk told before
// the world last changed (staleTo): "the cluster has 1" was true where
// the walk met the job, and a start later in the walk may have made it
// untrue, which a second cycle with nothing changed would tell. It does
// not place: the job's scratch state is prepared as its test's was (a
// kept slot, which the walk's starts kept up, costs a look-up) and the
// reason reads that state's domain counters (placement.Reason.Recount).
// Only reasons whose counts are counters of that state are read: the
// failing member failed by itself (jobRec.alone), its request has no
// node sets, segments or domain limit; others keep the counts of their
// test (a gang member placed after another, a Topology wait, whose
// spans come from a placement). A count that now reaches the need keeps
// the reason of the test: the next cycle tests the job. The one
// placement is a gang's whose failing member failed by itself only in a
// later order than its first (jobRec.aloneLater): a member tried before
// it may fail first on that state, as a repeat of the cycle tells, so
// the gang is tried anew there (gang.Admitter.Check, the state left as
// it is) and told the member and reason that fails, or, when it fits,
// the reason of its test. A job so recounted that was told it would fit
// but for another's reservation, hold or claim is told what classify
// tells on that state (reblame): the blocker its placement without them
// takes now, or, when starts later in the walk left it none, that it
// waits for resources. A quota reason
// the gate gave at the job's full size for a limit or the weighted
// share (jobRec.quotaAt, quotaShare) is told on the queues' use the plan
// leaves where the same queue still refuses it. A job refused a slot
// while one was free (SmallSlotTaken, SlotKept) is told SlotsTaken when
// the plan leaves the book full, as noSlot tells it in a repeat of the
// cycle, and so is a job told while a slot was open to it, no start
// planned (openSlotTaken). A failed victim search by class (PreemptTried)
// is run again on that state (restatePreempt), its reason and left-out
// count told as the search gives them, for the jobs told before the
// world last changed and, when the cycle started a job (a candidate once
// confirmed), for every job of a class above the lowest started,
// wherever it ranks. The walk order's gaps are passed over as
// restateVisited passes them. As restateVisited does,
// with OnlyChangedWaits a reason that changes is listed (or taken off
// the list when it is back to what the job was told before), and the
// job's marks from its test are cleared.
func (c *cycle) recountWaits(order []*jobRec) {
	e := c.e
	n := min(c.staleTo, len(order))
	// A job the cycle started is a candidate of a victim search only
	// once confirmed: every failed search by a class above the lowest
	// started (lowStart) is read anew, wherever its job ranks.
	end, lowStart := n, math.MaxInt
	if e.pre != nil {
		for _, r := range e.jobs.running {
			if r.phase == StateStarting && r.start.Equal(c.now) {
				lowStart = min(lowStart, r.job.Class)
			}
		}
		if lowStart < math.MaxInt {
			end = len(order)
		}
	}
	if end == 0 {
		return
	}
	if *c.ledgerCount != c.walkLedger {
		// A grow after the walk changed the ledger: the kept scratch
		// states predate it.
		c.invalidate()
	}
	changes := e.cfg.OnlyChangedWaits
	ws := c.plan.Waiting
	at := 0           // the plan lists the walk's reasons in rank order
	searched := false // restatePreempt has searched (c.preemptFails is its)
	for rank, j := range order[:end] {
		if j.phase != StatePending || c.fifo && j.pos != c.base+rank {
			// A gap the walk passed over, as restateVisited passes it:
			// its ID may be a waiting job's later in the walk
			// (cancelled and submitted again), whose entry it is not.
			continue
		}
		listed := at < len(ws) && ws[at].Job == j.job.ID
		if listed {
			at++
		}
		if !changes && !listed {
			continue
		}
		// Most reasons have nothing to read anew: tell them apart
		// before copying the reason (a quiet walk lists thousands).
		was := &j.wait
		// A job that would fit but for GPUs reserved, held or claimed
		// for another (classify) carries the placement reason of the
		// same test: its message does not quote it, but the plan lists
		// it and OnlyChangedWaits compares it.
		placed := was.Code == WaitResources || was.Code == WaitGang ||
			was.Code == WaitReservation || was.Code == WaitHold || was.Code == WaitClaimed
		stale := rank < n
		count := stale && placed && j.alone && (was.Reason.Code == placement.NoCapacity || was.Reason.Code == placement.RequiredLevel)
		full := stale && placed && (was.NoSlot == SmallSlotTaken || was.NoSlot == SlotKept || c.openSlotTaken(was)) && !c.backlog && c.slotsFull()
		quota := stale && was.Code == WaitQuota && (j.quotaAt.code != quotaFits || j.quotaShare)
		pre := was.PreemptTried && !was.PreemptReclaim && e.pre != nil && (stale || j.job.Class > lowStart)
		if !count && !full && !quota && !pre {
			continue
		}
		w := *was
		if pre {
			c.restatePreempt(j, &w, &searched)
		}
		if s := e.quota; quota {
			// On the use the plan leaves, as the gate would: a limit or
			// the weighted share of the same queue (its Blocker)
			// refuses it, or the next cycle tests it.
			qc := s.check(j.queue, j.gpus, e.mayBorrow(j), false)
			switch {
			case qc.code != quotaFits:
				by := w.Blocker
				if qc.at >= 0 {
					by = s.names[qc.at] // (quotaWait)
				}
				if by == w.Blocker {
					w.Detail = c.overWhy(j, qc, j.gpus, 0)
				}
			case !s.entitled(j.queue, j.gpus):
				if a, h := s.overShare(j.queue, j.gpus); a >= 0 && s.names[a] == w.Blocker {
					w.Detail = c.shareWhy(j, a, h)
				}
			}
		}
		if full {
			// A job ranked below it took the last slot later in the
			// walk: noSlot names the full book first, as it does for
			// the same job in a repeat of the cycle.
			w.NoSlot = SlotsTaken
		}
		switch {
		case count && j.aloneLater:
			// A member placed before the failing one in the gang's
			// first order may fail first on this state, as a repeat of
			// the cycle would tell: the gang is tried anew (Check leaves
			// the state as it is). One that fits keeps the reason of its
			// test (the next cycle tests it).
			c.prepareScratch(j)
			full, _ := c.specFor(j)
			res, err := e.adm.Check(e.scratch, c.quotaSpec(j, full), &e.alloc)
			if err != nil {
				panic(fmt.Sprintf("backfill: checked job %s refused: %v", j.job.ID, err))
			}
			if !res.Admitted && res.ColocationLevel == "" {
				w.Member, w.Reason = res.Member, res.Reason
				j.alone = res.Proven && !res.Searched
				j.aloneLater = j.alone && res.Orders > 1
			}
		case count:
			c.prepareScratch(j)
			if r := &w.Reason; r.Recount(e.scratch) && r.Have >= r.Need {
				w.Reason = was.Reason // (the next cycle tests it)
			}
		}
		if count && was.Code != WaitResources && was.Code != WaitGang {
			// Starts later in the walk may have left it no placement
			// without the blocker's GPUs, or one that takes another's.
			c.reblame(j, &w)
		}
		if w.Code == was.Code && w.Blocker == was.Blocker && w.Until.Equal(was.Until) &&
			w.Member == was.Member && w.Reason == was.Reason && w.Detail == was.Detail && w.NoSlot == was.NoSlot &&
			w.Preempt == was.Preempt && w.PreemptPromised == was.PreemptPromised {
			continue
		}
		var id uint64
		if changes {
			id = e.waitID(&w, j)
		}
		switch {
		case listed && changes && id == j.toldID:
			ws = slices.Delete(ws, at-1, at)
			at--
			c.plan.Unchanged++
		case listed:
			ws[at-1].Code, ws[at-1].Blocker, ws[at-1].Until = w.Code, w.Blocker, w.Until
			ws[at-1].Member, ws[at-1].Reason, ws[at-1].Detail, ws[at-1].NoSlot = w.Member, w.Reason, w.Detail, w.NoSlot
			ws[at-1].Preempt, ws[at-1].PreemptPromised = w.Preempt, w.PreemptPromised
		case changes:
			w.Priority = c.priority(rank, j)
			ws = slices.Insert(ws, at, w)
			at++
			c.plan.Unchanged--
			j.toldID = j.waitID
		}
		if changes {
			j.waitID = id
		}
		if k := c.walkKeys; rank < len(k) {
			// Marked with the reason told at its test: no later walk
			// passes it over by that mark (markQuiet, classMark).
			k[rank].quiet, k[rank].class = 0, 0
		}
		j.wait = w
	}
	if changes {
		c.plan.Waiting = ws
	}
}
