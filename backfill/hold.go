package backfill

import (
	"fmt"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/topology"
)

// HoldEnd is a hold that ended without its gang starting, and why.
type HoldEnd struct {
	Job   string       `json:"job"`
	Cause HoldEndCause `json:"cause"`
	// By is the gang that took the hold over, or the node that failed or
	// was drained.
	By string `json:"by,omitempty"`
	// Held is the GPUs it held when it ended (they go back to others).
	Held int `json:"held"`
}

// HoldEndCause says why a hold ended.
type HoldEndCause uint8

// Causes of a hold's end.
const (
	// HoldBudgetSpent: it kept GPUs idle for its whole budget
	// (HoldConfig.Budget); the gang is not held again for as long.
	HoldBudgetSpent HoldEndCause = iota + 1
	// HoldPassedOn: a higher-ranked gang (By) took it over: By holds its
	// GPUs now, or, with them no longer held, By got a reservation
	// (a planned start) instead.
	HoldPassedOn
	// HoldNodeLost: a node of its target failed or was drained (By).
	HoldNodeLost
	// HoldPlanned: a planned start became possible: the gang got a
	// reservation instead.
	HoldPlanned
	// HoldPreempting: the gang preempted jobs for GPUs instead
	// (Plan.Preemptions): lower-class jobs, or, reclaiming its queue's
	// guarantee, gangs of queues that borrow, whatever their class.
	HoldPreempting
	// HoldQuota: the gang's queue has no quota for it now (its reason
	// says which); it may be held again once it has.
	HoldQuota
	// HoldCancelled: the gang was cancelled while held (Engine.Cancel).
	HoldCancelled
	// HoldRestored: Restore dropped it: the config restored with does not
	// allow it (hold mode off, strict order, the gang below
	// HoldConfig.MinGPUs, or past HoldConfig.MaxHolds), or its target
	// puts the gang where it may no longer start (outside its queue's
	// pool, in no queue, or, onto another cluster, outside its node sets
	// or across its Required domain), or a node of its target is down or
	// drained in the snapshot. The gang is planned again.
	HoldRestored
	// HoldUpdated: the gang's node sets were changed (Engine.Update) so
	// that it may no longer be held (below HoldConfig.MinGPUs), or its
	// target is no longer allowed and no other target was found for it.
	// The gang is planned again.
	HoldUpdated
)

var holdEndNames = [...]string{"", "budget spent", "passed on", "node lost", "planned", "preempting", "quota", "cancelled", "restored", "updated"}

// String returns the cause's stable name.
func (c HoldEndCause) String() string {
	return enumName(holdEndNames[:], c, "HoldEndCause")
}

// MarshalText renders the cause's name.
func (c HoldEndCause) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses a cause's name.
func (c *HoldEndCause) UnmarshalText(b []byte) error {
	for i, n := range holdEndNames {
		if i > 0 && n == string(b) {
			*c = HoldEndCause(i)
			return nil
		}
	}
	return fmt.Errorf("unknown hold end cause %q", b)
}

// holdEligibility says whether job j may get a hold at all (ok), from
// when, and whether it is above the hold cap (so it waited CapWait). No
// job may while every active job has a time limit (every gang that fits
// the cluster then has a planned start), nor in strict order (the jobs
// behind the first waiting one are not tested, so a hold of theirs could
// never be kept up).
func (e *Engine) holdEligibility(j *jobRec) (at time.Time, capped, ok bool) {
	h := &e.cfg.Hold
	if !e.mayHold() || !e.holdAllowed(j) {
		return time.Time{}, false, false
	}
	wait := h.MinWait
	if float64(e.holdGPUs(j)) > h.MaxShare*float64(e.c.TotalGPUs()) {
		wait, capped = max(wait, h.CapWait), true
	}
	return later(j.job.Submit.Add(wait), j.holdExpiry), capped, true
}

// holdAllowed reports whether the config lets job j be held at all: hold
// mode on, no strict order, and j of at least Hold.MinGPUs (a leaf's
// worth when 0) by holdGPUs.
func (e *Engine) holdAllowed(j *jobRec) bool {
	h := &e.cfg.Hold
	min := h.MinGPUs
	if min == 0 {
		min = e.leafGPUs
	}
	return h.Enabled && !e.cfg.Strict && e.holdGPUs(j) >= min
}

// holdGPUs returns the GPUs hold mode judges job j by (Hold.MinGPUs,
// Hold.MaxShare): its gpus, a whole-node pod counted at the largest node
// it may use (its own node sets, its queue's pool), but for whole nodes
// of unequal sizes that its queue's limits refuse at that count even
// with nothing in use (its maximum, its guarantee and borrowing limit,
// its guarantee for a job that cannot be preempted: limits change only
// at a restore), their GPUs on the smallest nodes they may use
// (smallGang): they can never start above them, and their hold is
// searched and targeted there (holdSpec).
func (e *Engine) holdGPUs(j *jobRec) int {
	if e.quota == nil || j.wholeG == nil || j.queue < 0 || j.leastGPUs >= j.minGPUs {
		return j.gpus
	}
	s := e.quota
	if !e.mayBorrow(j) && j.gpus > s.guar[j.queue] || s.neverFits(j.queue, j.gpus).code != quotaFits {
		return j.smallGang()
	}
	return j.gpus
}

// mayHold reports whether any job may get a hold (holdEligibility): the
// engine's fields alone, inlined where a long queue's walk asks it of
// every job.
func (e *Engine) mayHold() bool {
	return e.cfg.Hold.Enabled && !e.cfg.Strict && e.jobs.unlimited > 0
}

// accountHolds charges every hold the GPU-seconds it held since the last
// cycle and ends those whose budget is spent.
func (e *Engine) accountHolds(now time.Time, plan *Plan) {
	plan.HoldEnds = append(plan.HoldEnds, e.holdEnds...)
	e.holdEnds = e.holdEnds[:0]
	var dt float64
	if !e.lastCycle.IsZero() {
		dt = now.Sub(e.lastCycle).Seconds()
	}
	e.lastCycle = now
	for _, h := range slices.Clone(e.book.holds) {
		spent := float64(h.held) * dt
		h.spent += spent
		e.heldGPUSeconds += spent
		if h.spent >= h.budget {
			plan.HoldEnds = append(plan.HoldEnds, HoldEnd{Job: h.job.job.ID, Cause: HoldBudgetSpent, Held: h.held})
			h.job.holdExpiry = now.Add(e.cfg.Hold.Budget)
			e.book.dropHold(h)
		}
	}
}

// endHoldBetween records hold h, ended by an event at now between two
// cycles (its gang cancelled, a node of its target lost), as end: it held
// its GPUs idle since the last cycle, and is charged for them as the next
// cycle's accountHolds would have charged it, so that HeldGPUSeconds
// counts every second held.
func (e *Engine) endHoldBetween(h *hold, end HoldEnd, now time.Time) {
	if !e.lastCycle.IsZero() && now.After(e.lastCycle) {
		spent := float64(h.held) * now.Sub(e.lastCycle).Seconds()
		h.spent += spent
		e.heldGPUSeconds += spent
	}
	e.holdEnds = append(e.holdEnds, end)
}

// clearRefusals starts the cycle with no hold marked as having refused a
// job (releaseHold).
func (c *cycle) clearRefusals() {
	for _, h := range c.e.book.holds {
		h.refused = false
	}
}

// releaseHold drops hold h in the walk. When the walk refused a job for
// its GPUs earlier, the next cycle offers them again in priority order,
// at once (Engine.NextEvent); in this one, jobs walked after take them.
func (c *cycle) releaseHold(h *hold) {
	if h.refused {
		c.reoffer = true
	}
	c.freeGoneHeld()
	c.e.book.dropHold(h)
	if c.holdMissPreempts || !c.runsPast(&h.target, time.Time{}) {
		c.holdLetGo()
	}
}

// keepHold keeps job j's hold up: a planned start, when one has become
// possible, replaces it by a reservation; otherwise the target moves to
// where the gang is now estimated to fit soonest, when that is sooner
// (retarget: even with GPUs held; those outside the new target are let
// go), and it holds the free GPUs of its target; a hold moved onto a
// target whose budget it has spent (a smaller one: holdBudget) ends
// there, HoldBudgetSpent. It reports whether j still holds.
func (c *cycle) keepHold(h *hold, spec *gang.Spec, w *Waiting) bool {
	spec = c.holdSpec(h.job, spec)
	if c.mayReserveFor(h.job) {
		if t, ok := c.plannedStart(h.job, spec); ok {
			c.plan.HoldEnds = append(c.plan.HoldEnds, HoldEnd{Job: h.job.job.ID, Cause: HoldPlanned, Held: h.held})
			c.releaseHold(h)
			c.reserveAt(h.job, t, w)
			return false
		}
	}
	held := h.held
	c.retarget(h, spec)
	c.readResv(h.job) // retarget searched a target beside the reservations (resvChanged)
	if h.spent >= h.budget {
		// Moved onto a smaller target, whose budget it has spent: it
		// ends now, as accountHolds ends it, not kept for a cycle with
		// its budget spent (a second cycle at the same time would end
		// it, and with nothing held NextEvent asks for none).
		c.plan.HoldEnds = append(c.plan.HoldEnds, HoldEnd{Job: h.job.job.ID, Cause: HoldBudgetSpent, Held: held})
		h.job.holdExpiry = c.now.Add(c.e.cfg.Hold.Budget)
		c.releaseHold(h)
		c.invalidate()
		return false
	}
	h.held = c.countFree(&h.target)
	c.markHoldKept(h)
	c.reportHold(h, w)
	return true
}

// holdSpec returns the spec job j's hold is searched and targeted with
// (tryHold, keepHold): spec, or, for whole nodes of unequal sizes whose
// queue's limits refuse them on the largest nodes they may use (the GPUs
// j counts) and not on the smallest (its leastGPUs: the gate lets it by
// there), a copy (the engine's scratch) with those members on the
// smallest nodes (onSmallest, on sets of its own, e.holdNodes: the copy
// is searched with after calls that reuse e.planNodes, and may be handed
// to them): a hold on
// nodes its quota refuses would keep GPUs from others that it can never
// start on, and a planned start there is refused. Whatever the spec, the
// start is checked on the GPUs placed (tryStart).
func (c *cycle) holdSpec(j *jobRec, spec *gang.Spec) *gang.Spec {
	return c.e.holdSpecOf(j, spec)
}

// holdSpecOf is cycle.holdSpec, for a hold moved outside a cycle
// (Engine.Update) too: the quota state it reads is the engine's, kept up
// at every start and end.
func (e *Engine) holdSpecOf(j *jobRec, spec *gang.Spec) *gang.Spec {
	if e.quota == nil || j.wholeG == nil || j.queue < 0 || j.leastGPUs >= j.gpus ||
		e.quota.check(j.queue, j.gpus, e.mayBorrow(j), false).code == quotaFits {
		return spec
	}
	return e.onSmallest(copySpec(&e.holdSpec, spec), &e.holdNodes)
}

// plannedStart searches a planned start for job j, held or taking a hold
// over (keepHold, reservePassedOn), its
// placement in e.alloc; none while the reservations planned beside it
// would leave its queue's quota no room for it then (promiseFits): it
// then holds on, and keeps for the cycle the slot it would have taken,
// as a job refused a reservation does.
func (c *cycle) plannedStart(j *jobRec, spec *gang.Spec) (time.Time, bool) {
	e := c.e
	t, ok := e.search(c.now, query{j: j, spec: spec})
	if ok && !e.promiseFits(j, e.plannedGPUs(j), t) {
		c.keepRefusedSlot()
		return time.Time{}, false
	}
	return t, ok
}

// markHoldKept records that a gang keeps or takes a hold in the walk,
// without a planned start: its searches (for a reservation, for a
// target) saw the GPUs of the holds after it in the walk as held for
// good. A lower-ranked hold that the walk lets go of, retargets or starts
// its gang on changes what they saw (freeGoneHeld, startOnHeld), and the
// next cycle, due at once, searches again. keptETA keeps the latest
// estimated start of the holds kept (h.eta, which retarget or newHold set).
func (c *cycle) markHoldKept(h *hold) {
	if !c.holdKept || h.eta.After(c.keptETA) {
		c.keptETA = h.eta
	}
	c.holdKept = true
}

// freeGoneHeld records that GPUs held for a gang ranked below a hold
// kept in the walk (markHoldKept) are no longer held, or run its gang: the
// next cycle offers them again, at once.
func (c *cycle) freeGoneHeld() {
	if c.holdKept {
		c.reoffer = true
	}
}

// startOnHeld records the start in the walk of a held gang, now active,
// whose hold h ended with it: as freeGoneHeld, unless the searches of the
// holds kept before it in the walk would see nothing new in a second
// cycle at the same time. They saw h's target held for good. When every
// GPU of it now runs a job without a limit (never free in a reservation
// search either) estimated to end no sooner than every kept hold's
// target (hold.eta, the latest of them keptETA: a target on those GPUs
// would not be sooner, and retarget moves a hold only to a sooner one),
// neither search finds another outcome; a GPU left free, or on a node
// not up, or with a job that has a limit or ends sooner, may change them.
func (c *cycle) startOnHeld(h *hold) {
	if !c.holdKept || c.runsPast(&h.target, c.keptETA) {
		return
	}
	c.reoffer = true
}

// runsPast reports whether every GPU of a, on a node up, runs an active
// job without a limit (runsForGood) estimated (runtimeEstimate) to end
// no sooner than t; with t zero, any such job (it runs for good as far
// as a search can tell).
func (c *cycle) runsPast(a *gang.Allocation, t time.Time) bool {
	e := c.e
	s := e.ledger.State()
	past := true
	forGPUs(a, func(n, g int) {
		if !past {
			return
		}
		o := e.jobs.owner(n, g)
		past = runsForGood(o) && s.Status(topology.NodeID(n)) == topology.Up &&
			(t.IsZero() || !e.runtimeEstimate(o, c.now).Before(t))
	})
	return past
}

// coverPlanned records that a hold was taken or moved in the walk (a
// lower-ranked gang's target now holds GPUs it did not). An eligible gang
// tested before it was left without a hold on the holds as they were
// then: it had a planned start (tryHold), searched with those GPUs free,
// and the start may lie on them; or it waited out the hysteresis behind a
// lower-ranked hold (contendHold) that has since ended (its gang started
// on its whole target), and the new hold may be its rival. The next
// cycle, due at once, tests it again: as the higher-ranked gang it may
// take the new hold over, as a second cycle at the same time would.
func (c *cycle) coverPlanned() {
	if c.unheldEligible {
		c.reoffer = true
	}
}

// startEstimated records the start in the walk of a job: it runs from
// now on, and the estimated ends that hold targets are searched on
// (holdTarget) change with it. A gang tested earlier in the walk that
// waits for a hold found as the rival of its target (contendHold,
// rivalEstimated: a higher-ranked hold, or a lower-ranked one within the
// hysteresis) may find another target, and another rival, on them (with
// one hold, the rival wherever the target lies, it cannot): the next cycle, due at once, tests it again, as a
// second cycle at the same time would.
func (c *cycle) startEstimated() {
	if c.rivalEstimated {
		c.reoffer = true
	}
}

// startOnBlamed records the start in the walk of a job after the walk
// told a job tested earlier it would fit now but for a hold (classify,
// holdBlamed): the start takes free GPUs, on which that job may no
// longer fit even without the hold, or be placed elsewhere, past another
// hold; the next cycle, due at once, tells it so, as a second cycle at
// the same time would. So does it, in hold mode, after the walk told a
// job it would fit now but for a reservation (resvBlamed): the started
// job may take those GPUs (a reserved job starting at its rank).
func (c *cycle) startOnBlamed() {
	if c.holdBlamed || c.resvBlamed && c.holdInPlay() {
		c.reoffer = true
	}
}

// startOnLoose records the start in the walk of a job after the walk
// left a gang eligible for a hold waiting for its patience, as it fits
// now loosely (looseEligible): the start takes free GPUs, on which that
// gang may no longer fit even loosely, and it would then be tested for a
// hold; the next cycle, due at once, tests it again, as a second cycle
// at the same time would.
func (c *cycle) startOnLoose() {
	if c.looseEligible {
		c.reoffer = true
	}
}

// startOnPlanned records the start in the walk of a job after the walk
// left an eligible gang without a hold because it had a planned start
// but no reservation (tryHold, plannedEligible): the started job runs on
// GPUs that start may have been planned on (until its limit, or for
// good without one), and the gang may then have no planned start and
// take a hold; the next cycle, due at once, tests it again, as a second
// cycle at the same time would.
func (c *cycle) startOnPlanned() {
	if c.plannedEligible {
		c.reoffer = true
	}
}

// startUnlimited records the start in the walk of job j, now active:
// when j has no limit and is the only active job without one, hold mode
// could hold no gang before it (Engine.mayHold), and the gangs walked
// before j, tested or passed over as unchanged, were given no hold. A
// waiting one that hold mode allows may now take one; the next cycle,
// due at once, tests it again, as a second cycle at the same time would.
// (The gangs are read only then: once a cycle at most.)
func (c *cycle) startUnlimited(j *jobRec) {
	e := c.e
	if !c.walking || c.reoffer || j.job.TimeLimit != 0 || e.jobs.unlimited != 1 || !e.mayHold() {
		return
	}
	for _, o := range c.walkOrder[:c.walkRank] {
		if o.phase == StatePending && e.holdAllowed(o) {
			c.reoffer = true
			return
		}
	}
}

// readHoldsMissed records that a search for a start of job j in the walk
// (a reservation's, reserveOrPreempt; a planned start's, tryHold), for
// spec, found none while the hold of another gang kept its target's GPUs
// from it, as for good (holdLetGo). Only a search with a time ahead to
// try counts: an active job with a limit, or a reservation with an end.
// Without one it tried the free GPUs now alone, and a job that would fit
// now but for a hold is told so (classify): the hold refused it, and
// asks for a cycle at once when it ends (releaseHold).
func (c *cycle) readHoldsMissed(j *jobRec, spec *gang.Spec) {
	if !c.walking || len(c.e.book.holds) == 0 || !c.e.profileAhead() {
		return
	}
	for _, h := range c.e.book.holds {
		if h.job == j {
			continue
		}
		need := c.e.leastGPUs(spec)
		if e := c.e; e.pre != nil && c.anyRunning && j.job.Class > c.lowest {
			c.holdMissPreempts = true
		}
		if e := c.e; e.quota != nil && e.reclaimGPUs(j) > 0 {
			c.holdMissPreempts, c.holdMissReclaims = true, true
		}
		switch {
		case c.holdMiss == nil:
			c.holdMiss, c.holdMissNeed = j, need
		case c.holdMiss != j:
			c.holdMissMany = true
			fallthrough
		default:
			c.holdMissNeed = min(c.holdMissNeed, need)
		}
		return
	}
}

// missRoom reports whether the searches readHoldsMissed recorded may
// find a start once a hold let go of its GPUs (holdLetGo, heldStarted):
// whether the fewest GPUs they needed (holdMissNeed) are at most the
// GPUs a search may ever find open: those of the nodes in service but
// the GPUs an active job without a limit runs on (runsForGood: being
// preempted too; no end frees them)
// and, when one job missed, those of the targets of the holds but its
// own (kept for good; when several missed, each may hold one of them,
// and no hold is counted). Counting leaves out where the GPUs lie and
// what reservations and claims keep, so it may say yes in vain; no
// means the searches would find none again: a cycle at once for them
// would change nothing. It reads every GPU's owner, only when a hold is
// let go in a walk after such a search. A search that may look for
// victims or reclaim (holdMissPreempts) may take the GPUs of active jobs
// too: it always may find room.
func (c *cycle) missRoom() bool {
	if c.holdMissPreempts {
		return true
	}
	e := c.e
	s := e.ledger.State()
	room := 0
	for i := range e.c.NumNodes() {
		n := topology.NodeID(i)
		if s.Status(n) != topology.Up {
			continue
		}
		for g := range e.c.NodeGPUs(n) {
			if !runsForGood(e.jobs.owner(i, g)) {
				room++
			}
		}
	}
	for _, h := range e.book.holds {
		if c.holdMissMany || h.job == c.holdMiss {
			continue
		}
		forGPUs(&h.target, func(n, g int) {
			if s.Status(topology.NodeID(n)) == topology.Up && !runsForGood(e.jobs.owner(n, g)) {
				room--
			}
		})
	}
	return c.holdMissNeed <= room
}

// runsForGood reports whether o, an owner of a GPU (nil: none), is an
// active job without a limit, which no end in the profile frees: the
// one rule for runsPast and missRoom. A job being preempted
// (StatePreempting) counts too: it has no end in the profile either, its
// GPUs are no victim's (preemptScratch.candidates takes running jobs,
// and a preemptor's own orphans only when it may look for victims,
// which holdMissPreempts covers), and those a claim takes are kept from
// every search; only the host's report of their release (Preempted), an
// event, frees them, so a second cycle at the same time finds them no
// more open than the first did.
func runsForGood(o *jobRec) bool {
	return o != nil && o.job.TimeLimit == 0 && o.end.IsZero()
}

// profileAhead reports whether the availability profile has a time
// after now: an active job with a limit, or a reservation with an end.
func (e *Engine) profileAhead() bool {
	if len(e.prof.ends) > 0 {
		return true
	}
	_, byEnd := e.book.sorted()
	return len(byEnd) > 0
}

// holdLetGo records that the walk let go of GPUs a hold kept (it ended,
// or moved off them) after a search for another job's start found none
// with them held (readHoldsMissed): that job may now have a start there
// (a reservation, or a planned start that leaves an eligible gang
// without a hold), and the next cycle, due at once, searches again, as a
// second cycle at the same time would. The job tested, whose test lets
// go of the holds (a gang taking them over, a held gang's own hold
// ending), searches again itself if need be (reservePassedOn) or keeps
// what it found: its own miss asks for nothing. Nor does a miss that
// the GPUs left open now could not serve by their count (missRoom), or
// a hold whose every GPU runs an active job without a limit on a node
// up (its callers: a search finds those GPUs no freer than held), unless
// a missing job may look for victims (holdMissPreempts).
func (c *cycle) holdLetGo() {
	if c.holdMiss == nil || !c.walking || c.walkRank >= len(c.walkOrder) {
		return
	}
	if (c.holdMissMany || c.holdMiss != c.walkOrder[c.walkRank]) && c.missRoom() {
		c.reoffer = true
	}
}

// heldStarted records the start in the walk of gang j, now active,
// whose hold h ended with it: as holdLetGo, unless every GPU of h's
// target now runs, on a node up, an active job without a limit (a
// search finds those GPUs no freer than held), or the GPUs left open
// could not serve the miss by their count (missRoom). As for releaseHold
// and retarget, a miss that may look for victims or reclaim
// (holdMissPreempts) is stopped by neither test (missRoom says yes), but
// for the first when no job on the target may be a victim in a second
// cycle at the same time (victimsMayFree): the victim search may take the
// GPUs of such jobs once the hold no longer masks them
// (TestHeldStartMissPreempt), but not those of a gang that may not be
// preempted, or that is inside its exempt time, as j is on its own
// target (TestHeldStartOnTargetMissPreempt).
func (c *cycle) heldStarted(h *hold, j *jobRec) {
	if c.holdMiss == nil || c.holdMiss == j && !c.holdMissMany || !c.missRoom() {
		return
	}
	if c.runsPast(&h.target, time.Time{}) && (!c.holdMissPreempts || !c.victimsMayFree(&h.target)) {
		return
	}
	c.reoffer = true
}

// victimsMayFree reports whether a victim search in a second cycle at the
// same time (its host having confirmed the starts of this one) may take a
// GPU of a from the job that runs it (preemptScratch.candidates,
// preempt.Candidate): a job that may be preempted (not policy Never),
// past its exempt time or taken by a reclaim (never exempt), or one
// being preempted already (a claim's victim, dropped since, is one at no
// cost). The miss's class and queue are not read: yes may be in vain,
// no is sure.
func (c *cycle) victimsMayFree(a *gang.Allocation) bool {
	e := c.e
	exempt := e.cfg.Preemption.ExemptTime
	may := false
	forGPUs(a, func(n, g int) {
		if may {
			return
		}
		o := e.jobs.owner(n, g)
		may = o == nil || o.phase == StatePreempting ||
			o.job.Preemption != preempt.Never && (c.holdMissReclaims || c.now.Sub(o.start) >= exempt)
	})
	return may
}

// readResv records that the hold test of job j read the reservations as
// kept for good (resvChanged).
func (c *cycle) readResv(j *jobRec) {
	if c.resvReader == nil {
		c.resvReader = j
	} else if c.resvReader != j {
		c.resvReadMany = true
	}
}

// resvChanged records a reservation of job j made in the walk, or let go
// in it (j starts), after a hold test read the reservations as kept for
// good (readResv): whether an eligible gang fits once every active job
// has ended (a gang that did not may now, and take a hold; one that did
// may no longer, and is told why it waits instead), or where a hold's
// target lies (another target may now be sooner, or free of holds);
// the next cycle, due at once, tests them again, as a second cycle at
// the same time would. So does a reservation made after the walk told a
// job that waits without one nothing of the slots, one being open to it
// (slotOpenTold), in hold mode (holdInPlay): the new one may take the
// last slot it could have had.
//
// The reservation reservePassedOn gives j when the holds in its way gave
// way is no change when only j's own test read the reservations: that
// test led to it, and a second cycle keeps it up (hold_passed_on_planned
// asks for no cycle at once).
func (c *cycle) resvChanged(j *jobRec, made bool) {
	read := c.resvReader != nil && (c.resvReadMany || c.resvReader != j || c.passingOn != j)
	if read || made && c.slotOpenTold && c.holdInPlay() {
		c.reoffer = true
	}
}

// untested records what the test of a job would have recorded for
// startOnBlamed when the walk gives it, untested, the reason code of a
// cached test of its shape or of its own last one: that a hold keeps it
// waiting (holdBlamed), or, in hold mode, a reservation (resvBlamed).
func (c *cycle) untested(code WaitCode) {
	switch {
	case code == WaitHold:
		c.holdBlamed = true
	case code == WaitReservation && c.e.cfg.Hold.Enabled:
		c.resvBlamed = true
	}
}

// retarget moves hold h to where its gang is now estimated to fit
// soonest, when that is sooner than on its current target: estimates
// change as jobs end and run on (as a strict FIFO queue would take
// whichever GPUs free first), and GPUs it holds outside the new target go
// back to others.
func (c *cycle) retarget(h *hold, spec *gang.Spec) {
	e := c.e
	cur := e.targetETA(h, c.now)
	h.eta = cur
	t, ok := e.holdTarget(h.job, spec, c.now, e.book.holds)
	if !ok || !t.Before(cur) {
		return
	}
	if h.refused {
		c.reoffer = true // GPUs of its old target go back
	}
	c.freeGoneHeld()
	c.coverPlanned()
	past := !c.holdMissPreempts && c.runsPast(&h.target, time.Time{})
	e.alloc.CopyTo(&h.target)
	if !past {
		c.holdLetGo() // GPUs of its old target (missRoom counts its new one)
	}
	h.budget = e.holdBudget(&h.target)
	h.eta = t
	e.book.changed()
	e.book.free(time.Time{}) // GPUs of its old target may be free for others
	c.invalidate()
}

// targetETA estimates when every GPU of hold h's target is free: when the
// last job on it ends (by its limit, or its estimate without one); far in
// the future when a node of it is out of service.
func (e *Engine) targetETA(h *hold, now time.Time) time.Time {
	eta := now
	s := e.ledger.State()
	forGPUs(&h.target, func(n, g int) {
		if s.Status(topology.NodeID(n)) != topology.Up {
			eta = MaxTime
			return
		}
		if o := e.jobs.owner(n, g); o != nil {
			end := later(o.end, now)
			if o.end.IsZero() {
				end = e.runtimeEstimate(o, now)
			}
			eta = later(eta, end)
		}
	})
	return eta
}

// reportHold fills w for a held job.
func (c *cycle) reportHold(h *hold, w *Waiting) {
	w.Code, w.Until = WaitHeld, h.since
	w.Hold = c.e.holdStatus(h)
}

// tryHold gives waiting job j, which has no planned start, a hold when it
// is eligible and its target is free of other holds (or held by a
// lower-ranked gang past the hysteresis); otherwise it says in w why it
// waits for one. It reports false when j is no hold candidate at all.
func (c *cycle) tryHold(j *jobRec, spec *gang.Spec, w *Waiting) bool {
	e := c.e
	spec = c.holdSpec(j, spec)
	at, capped, ok := e.holdEligibility(j)
	if !ok {
		return false
	}
	if _, planned := e.search(c.now, query{j: j, spec: spec}); planned {
		// A hold, a reservation or a start after it may cover that
		// start (coverPlanned, startOnPlanned).
		c.unheldEligible, c.plannedEligible = true, true
		return false // it has a planned start (only not a reservation)
	}
	c.readHoldsMissed(j, spec) // (holdLetGo)
	c.readResv(j)              // (resvChanged)
	if !c.fitsWhenIdle(spec) {
		return false // no hold helps
	}
	if c.now.Before(at) {
		w.Code, w.Until = WaitForHold, at
		switch {
		case c.now.Before(j.holdExpiry):
			w.Detail = "its last hold spent its budget"
		case capped:
			w.Detail = fmt.Sprintf("above the hold cap of %d GPUs", int(e.cfg.Hold.MaxShare*float64(e.c.TotalGPUs())))
		}
		return true
	}
	if len(e.book.holds) < e.cfg.Hold.MaxHolds {
		if t, ok := e.holdTarget(j, spec, c.now, e.book.holds); ok {
			c.newHold(j, t, w)
			return true
		}
	}
	return c.contendHold(j, spec, w)
}

// contendHold handles an eligible gang whose best target is held for
// others: a lower-ranked holder gives way at once if it holds nothing, or
// after the hysteresis; a higher-ranked one keeps it.
func (c *cycle) contendHold(j *jobRec, spec *gang.Spec, w *Waiting) bool {
	e := c.e
	if hs := e.book.holds; !c.naive && len(hs) == 1 && c.ranksAbove(hs[0].job, j) {
		// The only hold outranks j: it is j's rival wherever j's target
		// lies, and j waits for it. (tryHold checked that j fits once every
		// active job has ended, so a target exists.) Skipping the target
		// search matters with one hold, the default: every eligible gang
		// behind the holder comes here every cycle. (The naive path, which
		// the tests compare with this one, searches.)
		w.Code, w.Blocker = WaitForHold, hs[0].job.job.ID
		return true
	}
	t, ok := e.holdTarget(j, spec, c.now, nil)
	if !ok {
		return false
	}
	var rivals []*hold
	for _, h := range e.book.holds {
		if intersects(&e.alloc, &h.target) {
			rivals = append(rivals, h)
		}
	}
	if len(rivals) == 0 && len(e.book.holds) > 0 { // MaxHolds reached: the lowest-ranked hold is the rival
		rivals = append(rivals, slices.MaxFunc(e.book.holds, func(a, b *hold) int {
			switch {
			case c.ranksAbove(a.job, b.job):
				return -1
			case c.ranksAbove(b.job, a.job):
				return 1
			}
			return 0
		}))
	}
	if len(rivals) == 0 {
		return false
	}
	w.Code = WaitForHold
	for _, h := range rivals {
		if c.ranksAbove(h.job, j) {
			w.Blocker = h.job.job.ID
			// With several holds, another may be the rival later in the walk (startEstimated).
			c.rivalEstimated = c.rivalEstimated || len(e.book.holds) > 1
			return true
		}
	}
	if j.holdBlockedSince.IsZero() {
		j.holdBlockedSince = c.now
	}
	giveUp := j.holdBlockedSince.Add(e.cfg.Hold.Hysteresis)
	for _, h := range rivals {
		// What it holds now: a lower-ranked hold is walked after j, so
		// h.held is still the last cycle's count, and GPUs freed since
		// in its target are held too (with that count, a hold that had
		// held nothing passed on at once and let them go).
		h.held = c.countFree(&h.target)
		if h.held > 0 && c.now.Before(giveUp) {
			w.Blocker, w.Until = h.job.job.ID, giveUp
			h.refused = true // a lower-ranked hold: it may end later in the walk
			c.contending = true
			c.unheldEligible = true // another lower-ranked hold may take its place (coverPlanned)
			// With several holds, another may be the rival later in the walk (startEstimated).
			c.rivalEstimated = c.rivalEstimated || len(e.book.holds) > 1
			return true
		}
	}
	for _, h := range rivals {
		c.plan.HoldEnds = append(c.plan.HoldEnds, HoldEnd{Job: h.job.job.ID, Cause: HoldPassedOn, By: j.job.ID, Held: h.held})
		c.releaseHold(h)
	}
	if c.reservePassedOn(j, spec, w) {
		return true
	}
	c.newHold(j, t, w)
	return true
}

// reservePassedOn gives job j, which has just made the holds in its way
// give way (contendHold), a reservation when one can be planned now that
// their GPUs are no longer held for others: tryHold's search saw them
// held, and a hold kept for j would become a reservation only at the next
// cycle (keepHold), after lower-ranked jobs had been walked past GPUs it
// would let go, so a second cycle at the same time would start them. The
// hold's target in e.alloc is kept when j gets none.
func (c *cycle) reservePassedOn(j *jobRec, spec *gang.Spec, w *Waiting) bool {
	e := c.e
	c.invalidate()
	if j.dropped || !c.mayReserveFor(j) || c.countFree(&e.alloc) == e.alloc.GPUs() {
		return false // (its whole target free, it starts at the next cycle, at once: newHold)
	}
	e.alloc.CopyTo(&e.plannedAlloc)
	t, ok := c.plannedStart(j, spec)
	if !ok {
		e.plannedAlloc.CopyTo(&e.alloc)
		return false
	}
	before := e.cacheKey(c.now)
	c.passingOn = j
	c.reserveAt(j, t, w)
	c.passingOn = nil
	e.prof.reserved(j, before, e.cacheKey(c.now))
	return true
}

// newHold gives j a hold on e.alloc, the gang estimated to start at eta.
func (c *cycle) newHold(j *jobRec, eta time.Time, w *Waiting) {
	e := c.e
	h := &hold{job: j, since: c.now, eta: eta}
	e.alloc.CopyTo(&h.target)
	h.budget = e.holdBudget(&h.target)
	e.book.addHold(h)
	j.holdBlockedSince = time.Time{}
	c.coverPlanned()
	h.held = c.countFree(&h.target)
	if h.held == h.target.GPUs() {
		// Its whole target is free (a hold it took over held it): it
		// starts there at the next cycle, which is due at once.
		c.reoffer = true
	}
	c.markHoldKept(h)
	c.invalidate()
	c.reportHold(h, w)
}

// fitsWhenIdle reports whether spec fits once every active job has ended
// (the nodes as they are now, reserved and claimed GPUs kept): whether a
// hold can help it at all. That state is built once per cycle epoch and
// book version (every eligible gang of a cycle asks; a start leaves it as
// it was, since the started job's GPUs count as ended); the naive path
// builds it every time.
func (c *cycle) fitsWhenIdle(spec *gang.Spec) bool {
	e := c.e
	key := [2]uint64{c.epoch, e.book.version}
	if e.idle == nil || c.naive || e.idleAt != key {
		e.allEnded(&e.idle)
		for _, r := range e.book.resv {
			block(e.idle, &r.alloc)
		}
		for _, cl := range e.book.claims {
			block(e.idle, &cl.alloc)
		}
		e.idleAt = key
	}
	return e.admitOn(e.idle, spec, c.naive)
}

// allEnded makes *dst (made on first use) the free state with every
// active job ended: the nodes in service, whole.
func (e *Engine) allEnded(dst **topology.State) {
	if *dst == nil {
		*dst = e.ledger.State().Clone()
	} else if err := e.ledger.State().CopyInto(*dst); err != nil {
		panic(err)
	}
	for _, j := range e.jobs.running {
		releaseOn(*dst, j.alloc)
	}
}

// holdBudget returns the budget, in GPU-seconds, of a hold on target:
// Hold.Budget times the GPUs it targets, which it can hold (the gang's
// GPU count, or less: whole nodes of unequal sizes, counted at the
// largest nodes they may use, targeted on smaller ones, or an elastic
// gang targeted below full size). It follows the
// target (newHold, retarget), and Restore computes it so from the
// target restored, so that a restored hold ends when the one kept on
// would.
func (e *Engine) holdBudget(target *gang.Allocation) float64 {
	return e.cfg.Hold.Budget.Seconds() * float64(target.GPUs())
}

// holdStatus describes hold h.
func (e *Engine) holdStatus(h *hold) *HoldStatus {
	return &HoldStatus{Job: h.job.job.ID, Since: h.since, GPUs: h.held, Target: h.target.GPUs(),
		Nodes: NodeList(e.c, &h.target), SpentGPUHours: h.spent / 3600, BudgetGPUHours: h.budget / 3600, EstimatedStart: h.eta}
}

// holdTarget finds where gang j (with spec) is estimated to fit soonest,
// avoiding every reservation and claim and the holds in avoid (but j's
// own): on an
// estimated profile in which jobs with a time limit end at their limit
// and jobs without one at an estimate from their age and their account's
// observed run times (runtimeEstimate). The placement is left in e.alloc;
// the time is the estimated start.
func (e *Engine) holdTarget(j *jobRec, spec *gang.Spec, now time.Time, avoid []*hold) (time.Time, bool) {
	p := &e.prof
	p.spoil()
	if err := e.ledger.State().CopyInto(p.probe); err != nil {
		panic(err)
	}
	p.blocks.reset()
	for _, r := range e.book.resv {
		p.blocks.add(p.probe, &r.alloc)
	}
	for _, h := range avoid {
		if h.job != j {
			p.blocks.add(p.probe, &h.target)
		}
	}
	for _, cl := range e.book.claims {
		p.blocks.add(p.probe, &cl.alloc)
	}
	if e.admitAt(spec) {
		return now, true
	}
	ends := e.estimatedEnds(now)
	for i := 0; i < len(ends); {
		t := ends[i].end
		for i < len(ends) && !ends[i].end.After(t) {
			p.blocks.releaseUnblocked(p.probe, ends[i].j.alloc)
			i++
		}
		if e.admitAt(spec) {
			return t, true
		}
	}
	return time.Time{}, false
}

// estimatedEnds returns every active job with its end: its limit's end
// (now for one past it), or its estimated end without a limit; by end.
func (e *Engine) estimatedEnds(now time.Time) []endItem {
	out := e.estBuf[:0]
	for _, j := range e.jobs.running {
		end := later(j.end, now)
		if j.end.IsZero() {
			end = e.runtimeEstimate(j, now)
		}
		out = append(out, endItem{end: end, seq: j.seq, j: j})
	}
	slices.SortFunc(out, func(a, b endItem) int {
		if c := a.end.Compare(b.end); c != 0 {
			return c
		}
		return int(a.seq) - int(b.seq)
	})
	e.estBuf = out
	return out
}

// defaultRuntime is the run time assumed for jobs without a limit before
// any job has finished.
const defaultRuntime = time.Hour

// runtimeEstimate estimates when active job j, which has no time limit,
// ends: now plus the median remaining run time of jobs of its account
// that ran at least as long as it has (accounts.residual). For the
// heavy-tailed run times of real traces this expects a young job to end
// sooner than an old one.
func (e *Engine) runtimeEstimate(j *jobRec, now time.Time) time.Time {
	return now.Add(e.accts.residual(j.acct, now.Sub(j.start)))
}
