package backfill

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/topology"
)

// Schedule runs one scheduling cycle at time now and returns the plan.
//
// The cycle, top to bottom:
//
//  1. Charge fair-share usage for running jobs up to now; account the GPUs
//     held by hold mode since the last cycle; extend due reservations;
//     start every preemptor whose victims have all released their GPUs,
//     on its claim (a claim sharing GPUs with a due reservation, its
//     victims released that late, is dropped: the reservation goes first).
//  2. Order waiting jobs by multifactor priority (package fairshare);
//     with queues, the jobs their queues' guarantees cover go first
//     (stably), those that would borrow after them.
//  3. Go through the reservations in planned-start order: start every due
//     one (planned start at or before now, however late the cycle runs)
//     whose planned GPUs are free, on those GPUs: a reserved job goes first
//     as soon as its GPUs are free. Keep up the others: a reservation
//     moves earlier when the profile allows it, and later only when a job
//     it waits for started late (or overran, or a reservation before it on
//     shared GPUs slipped for that reason); each later move is in
//     Plan.Moves with its cause.
//  4. Walk the other waiting jobs in priority order (jobs holding
//     reservations or held GPUs always; others within the MaxJobsTested
//     window):
//     - start the job now if its gang can be admitted on the free GPUs
//     minus those reserved for other jobs in a window overlapping its own
//     (now to now + time limit; forever without a limit) and minus held
//     GPUs: backfill that never delays a reservation; a job that starts
//     off a reservation of its own lets go of the free GPUs of it,
//     which, when they were kept from a job tested before, the next
//     cycle offers again, at once (NextEvent);
//     - else, a job with a reservation keeps it, unless it may preempt
//     (below) and its reservation starts later than now + Grace +
//     MinGain;
//     - else, while fewer than ReservationDepth reservations exist (and,
//     for a job below ReservationMinGPUs, no other such job holds one),
//     or, during a backlog (Config.BacklogAfter), while no waiting job
//     ranked above it holds one, whatever the depth,
//     find the earliest time in the availability profile at which the gang can
//     be admitted with the same topology-aware placement, and reserve
//     those GPUs from then; once the walk has passed a waiting job
//     without a reservation while every slot was taken, a slot that
//     frees later in the walk (a reserved job further down starting now)
//     is left for the next cycle, whose walk offers it in priority order
//     (NextEvent asks for that cycle at once; not during a backlog): it
//     does not go to a job ranked below one the walk refused it (with
//     MaxJobsTested, the next cycle offers it within its own window); the
//     one slot of jobs below ReservationMinGPUs is kept so among them;
//     - with preemption on, a job of a class above some running job's
//     whose earliest such time is later than now + Grace + MinGain (or
//     that has none) first looks for victims (package gang/preempt): if
//     a victim set lets it in, the victims are preempted
//     (Plan.Preemptions) and their GPUs claimed for it;
//     - else, when no such time exists because running jobs have no time
//     limit, hold GPUs for the job as they free up (hold mode);
//     - else record why it waits (with why preemption did not help).
//  5. With Strict, the first job that cannot start stops the walk.
//
// The starts are booked in the engine before Schedule returns (the jobs
// are starting); the caller launches them and confirms with Started.
func (e *Engine) Schedule(now time.Time) (*Plan, error) {
	plan := &Plan{}
	if err := e.ScheduleInto(now, plan); err != nil {
		return nil, err
	}
	return plan, nil
}

// ScheduleInto runs a cycle like Schedule, writing the plan into p and
// reusing its slices (a caller that keeps no earlier plan avoids most of a
// cycle's allocation this way).
func (e *Engine) ScheduleInto(now time.Time, p *Plan) error {
	return e.apply(&op{kind: opSchedule, now: now, plan: p})
}

// cycle is the state of one Schedule call.
type cycle struct {
	e    *Engine
	now  time.Time
	plan *Plan
	// windowed is set when a MaxJobsTested window leaves jobs untested
	// this cycle; inWindow marks, per rank, the jobs it holds (window.go).
	windowed bool
	inWindow []bool
	// fifo is set when the walk goes through the queue kept in submit
	// order (fifo.go), from position base on; priorities are then
	// computed for the jobs reported, not kept per rank.
	fifo bool
	base int
	// Quiet ranks (quietWalk): qwWorld is the world of the latest marks
	// in the kept ranking's keys (keptKey.quiet) and qwUntil the earliest
	// until of the stamps so marked; qwLeft and qwHold are the kept
	// order's departures and mayHold when the last walk ended.
	qwWorld uint64
	qwUntil int64
	qwLeft  uint64
	qwHold  bool
	// qwBacklog is backlog when the marks and the class table were made:
	// a walk whose backlog differs trusts neither (quietWalk).
	qwBacklog bool
	// goneOK is set while the walk may pass over the keys marked
	// keptGone, their jobs' records unread: no job came back to its
	// place in the kept order since the last walk, which ended with
	// the count qwBack of those that did (keptRank.back).
	goneOK bool
	qwBack uint64
	// resvClosed is set once the walk has passed a waiting job without a
	// reservation while every reservation slot was taken
	// (passedWaiting): no job after it may take a slot that frees later
	// in the walk (a reserved job starting at its rank), which would go
	// to a job ranked below one that wanted it. The slot waits for the
	// next cycle, whose walk offers it in rank order.
	resvClosed bool
	// backlog is set when Config.BacklogAfter applies this cycle (some
	// small job waits past it): a job may take a new reservation only
	// while no waiting job before it in the walk holds one (heldAbove),
	// as under EASY backfill.
	backlog, heldAbove bool
	// contending is set while a job is tested (test) when a lower-ranked
	// gang's hold keeps it waiting within the hysteresis (contendHold).
	contending bool
	// reoffer is set when the walk let go of GPUs of a hold after it
	// refused a job ranked above its gang for them (releaseHold), or of
	// a reservation after it left waiting a job whose run would overlap
	// it (letGo): the next cycle offers them again, at once; or when a
	// hold was given or moved past an eligible gang left without one
	// (coverPlanned): the next cycle tests it again; or when a
	// claim was made with no victim (claimFor): the next cycle starts it.
	// It is set too when the walk reserved a job that then would start
	// on pods growing jobs lend only to reserved jobs (lentOpened): the
	// next cycle, at once, starts it there.
	reoffer bool
	// walking is set while the walk runs (reservations made then are
	// reservation.inWalk); walkOrder is the order it goes through and
	// walkRank the rank of the job it tests: the jobs before it were
	// told their reasons (restateVisited).
	walking   bool
	walkOrder []*jobRec
	walkRank  int
	// earlyEnd is the earliest end, at its limit, of a run the walk
	// started (startedInWalk); zero for none.
	earlyEnd time.Time
	// freedBefore is the book's freed count when the walk began
	// (reofferStaleResv).
	freedBefore uint64
	// holdOn is set when hold mode was in play as the walk began: a
	// gang held, or one could be (Engine.mayHold); see holdInPlay.
	holdOn bool
	// holdKept is set once a hold is kept or taken in the walk
	// (markHoldKept), and keptETA is then the latest estimated start
	// (hold.eta) of the holds kept or taken so far (startOnHeld).
	holdKept bool
	keptETA  time.Time
	// unheldEligible is set once an eligible gang tested in the walk was
	// left without a hold on the holds as they were then: it had a
	// planned start but no reservation (tryHold), or waits out the
	// hysteresis behind a lower-ranked hold (contendHold); see
	// coverPlanned.
	unheldEligible bool
	// plannedEligible is set once an eligible gang tested in the walk
	// was left without a hold because it has a planned start but no
	// reservation (tryHold); see startOnPlanned.
	plannedEligible bool
	// resvReader is the first job whose hold test in the walk read the
	// reservations as kept for good: whether an eligible gang fits once
	// every active job has ended (tryHold, fitsWhenIdle), or where a
	// hold's target lies (holdTarget, from tryHold or retarget), and
	// resvReadMany is set once another job's test read them too; see
	// readResv and resvChanged.
	resvReader   *jobRec
	resvReadMany bool
	// holdMiss is the first job whose search for a start in the walk
	// (reserveOrPreempt, tryHold) found none while another gang's hold
	// kept GPUs from it, and holdMissMany is set once another job's
	// search did too; see readHoldsMissed and holdLetGo. holdMissNeed
	// is the fewest GPUs any of those searches needed (their specs'
	// least: missRoom). holdMissPreempts is set when one of those jobs
	// may look for victims or reclaim (its class above the lowest
	// running one, or a guarantee to reclaim): its victim search masks
	// the holds too, and may take GPUs that missRoom and runsPast count
	// as kept for good; holdMissReclaims when one may reclaim (its
	// victims are never exempt: victimsMayFree).
	holdMiss         *jobRec
	holdMissMany     bool
	holdMissNeed     int
	holdMissPreempts bool
	holdMissReclaims bool
	// passingOn is the job reservePassedOn is reserving, while it does.
	passingOn *jobRec
	// slotOpenTold is set once the walk, with Config.Hold.Enabled, told a job that
	// waits without a reservation nothing of the slots, a slot being
	// open to it (noSlot 0); see resvChanged.
	slotOpenTold bool
	// rivalEstimated is set once a gang tested in the walk waits for a
	// hold that is the rival of its estimated target (contendHold); see
	// startEstimated.
	rivalEstimated bool
	// holdBlamed is set once the walk told a job it would fit now but
	// for a hold (classify, or the reason of a cached or skipped test:
	// untested); see startOnBlamed.
	holdBlamed bool
	// resvBlamed is holdBlamed for a reservation (recorded with
	// Config.Hold.Enabled, acted on in hold mode only: holdInPlay).
	resvBlamed bool
	// looseEligible is set once a gang eligible for a hold was left
	// waiting for its patience because it fits now, loosely
	// (fitsLoosely): it went to no hold test; see startOnLoose.
	looseEligible bool
	// refusedTo is the latest end of the run, were it to start now, of
	// the jobs the walk has left waiting so far (MaxTime for one without
	// a limit, or a run of jobs passed over unread; zero for none): the
	// reservations starting before it were kept from one of them
	// (windowOverlaps).
	refusedTo time.Time
	// smallClosed is resvClosed for jobs below Config.ReservationMinGPUs:
	// set once the walk has passed such a job while another held the one
	// reservation they may hold.
	smallClosed bool
	// quotaBlocked is set by tryStart when the job it placed is over its
	// queue's quota on the GPUs placed, blockedGPUs to those GPUs (the
	// last placement refused: startOnSmaller tries others).
	quotaBlocked bool
	blockedGPUs  int
	// quotaRefused counts the jobs refused a reservation in the walk
	// because its queue's quota would have no room at the planned start
	// (keepRefusedSlot): each keeps the slot it would have taken.
	quotaRefused int
	// quietSkips counts the waiting jobs quiet walks passed over, and
	// quietChecked those they would have but for checkEach.
	quietSkips, quietChecked int
	// The class table (classMark): classes holds its entries, classOn
	// is set while the walk may pass over jobs by their classes
	// (classWalk), classesLive while an entry may be in use, classSerial
	// numbers the entries claimed; classSkips and classChecked count as
	// quietSkips and quietChecked do.
	classes                  []classEntry
	classOn, classesLive     bool
	classSerial              uint64
	classSkips, classChecked int
	// waitBuf is where a waiting job's reason is built when the plan
	// lists only changes (Config.OnlyChangedWaits); hitID is the ID of
	// the job's reason when its test found it in, or added it to, the
	// same-shape failure cache, or was skipped (skipTest: the reason the
	// job has), and 0 otherwise.
	waitBuf Waiting
	hitID   uint64
	// prioWait and prioID cache the ID of the last "waiting for priority"
	// reason (behind a strict blocker, or outside the MaxJobsTested
	// window), which most of a long queue shares in a cycle.
	prioWait Waiting
	prioID   uint64
	// The scratch state in use (e.scratch) is the free state minus the
	// GPUs of blockedRes and of every hold but ownHold's; gen names its
	// contents (a fresh number whenever they change).
	blockedRes []*reservation
	ownHold    *hold
	gen        uint64
	genSeq     uint64
	// The main scratch state (e.mainScratch), for any job: valid while
	// valid is set, for the reservations by start up to prefix but own,
	// and the holds but mainOwnHold's.
	mainBlocked []*reservation
	mainOwnHold *hold
	mainGen     uint64
	prefix      int          // reservations by start considered
	own         *reservation // the job's own reservation, not blocked
	valid       bool
	// slots are scratch states kept per prefix of a short book (at most
	// maxSlots reservations), for jobs without a reservation or hold of
	// their own: their scratch depends on their window only through the
	// prefix, so jobs with different time limits need not rebuild one
	// state back and forth. A slot is valid while its epoch is the
	// cycle's (invalidate moves it).
	slots   []slot
	epoch   uint64
	lastRes gang.Admission
	// failures caches the outcomes of jobs that failed, each on the
	// scratch contents it names (gen): an open-addressed table of
	// failureCap entries indexed by shape and gen, probed over
	// failureProbe entries (a full window overwrites its first entry). Its
	// keys (failKeys, 16 bytes each) are apart from the outcomes, so
	// that a probe reads one small array.
	failKeys []failKey
	failures []failure
	naive    bool
	// due is the reservations by start at the cycle's beginning; slipped
	// those kept up so far that go first on their GPUs but moved (due
	// ones not started, ones moved later to keep their GPUs, ones moved
	// to a new place).
	due, slipped []*reservation
	// late lists, under quotas, the running jobs that started late with
	// a time limit (keepBook; lateQuota reads it).
	late []*jobRec
	// clearClaim's scratch: the claim as a reservation, the reservations
	// that go before the others on their GPUs, and the book by start.
	claimResv            reservation
	clearPrior, clearAll []*reservation
	// Preemption: the jobs that looked for victims, the searches that
	// found no placement (mayPreempt), the lowest class of the running
	// jobs (when there is one), scratch for the claims.
	searches     int
	preemptFails []claimFail
	// inServiceBuilt: Engine.inService is this cycle's; noFit are
	// shapes found not to fit it (the last 16, by noFitN); probes counts
	// the jobs tried on it.
	inServiceBuilt bool
	probes         int
	noFit          [16]uint64
	noFitN         int
	anyRunning     bool
	lowest         int
	claimBuf       []*claim
	// offs is the reservations by start, each as its start's offset from
	// now, for the book version offsVer (startsWithin): a job's window
	// is compared with durations instead of times.
	offs      []time.Duration
	offsVer   uint64
	offsValid bool
	// skips is set when a waiting job's test may be skipped by its stamp
	// this cycle (skipTest); skippedTests counts the tests skipped over
	// the engine's life (tests); nowNs is now in Unix nanoseconds.
	skips        bool
	skippedTests int
	nowNs        int64
	// The world is the ledger state's contents and the book as they are:
	// ledgerCount points to the state's change count (access.StateChanges),
	// and worldSeq numbers each pair of that count and the book's version
	// seen (worldLedger, worldBook: the last), across cycles. Both only
	// grow, so a pair seen once never comes back, and equal numbers mean
	// nothing changed in between (worldNow).
	ledgerCount                      *uint64
	worldSeq, worldLedger, worldBook uint64
	// stampNext is the stamp the job under test gets if its test fails
	// as any job of its shape would (stampable), its ID aside;
	// stampStays says its test was skipped and its stamp stays; slotLen
	// is the length of the reservation prefix of the last scratch state
	// prepared (prepareScratch).
	stampNext  testStamp
	stampable  bool
	stampStays bool
	slotLen    int
	// staleTo is the number of walk ranks whose reasons were told before
	// the world (the ledger state, the book) last changed in the cycle:
	// recountWaits reads their counts anew. staleLedger and staleBook
	// are the pair the walk last saw (noteWorld); walkLedger is the
	// ledger's change count when the walk ended (the scratch states
	// follow every change until then: started).
	staleTo                int
	staleLedger, staleBook uint64
	walkLedger             uint64
	// walkKeys is the kept ranking's keys the walk marked (quietWalk),
	// or nil: recountWaits clears the marks of a reason it changes.
	walkKeys []keptKey
	// blames is reblame's table of answers by shape and scratch
	// contents (blameEntry).
	blames [blameCap]blameEntry
	// alone is set by classify when the failing member failed by itself
	// on the scratch state (first in an order the gang was tried in, or
	// the gang's one member): its reason's counts are that state's.
	// aloneLater is set with it when that order was not the gang's
	// first: members placed before the failing one in the first order
	// fitted then (jobRec.aloneLater).
	alone, aloneLater bool
}

// testStamp records what a waiting job's last test failed on, when it
// failed as any job of its shape would on its slot (a same-shape failure,
// cached or new): the world it failed in (cycle.worldNow), the time until
// which its slot's blocks stay those (until, Unix nanoseconds: when the
// next reservation by start enters its reservation prefix as now moves),
// and the ID of the reason it was then left with. While all three hold,
// the same test on the same contents fails the same way, and the job is
// told nothing new (cycle.skipTest). The zero stamp matches no world.
type testStamp struct {
	world, id uint64
	until     int64
	slot      int // the length of its reservation prefix (cycle.slotLen)
	// backlog is cycle.backlogState at the test: whether a backlog
	// (Config.BacklogAfter) was on and, if so, whether a job ranked
	// above held a reservation, which together decide whether the job
	// may take one.
	backlog uint8
}

// failKey is the key of one entry of the same-shape failure cache: a
// job's shape and the scratch contents it failed on (gen 0: empty).
type failKey struct {
	shape
	gen uint64
}

// failure is what the job of the entry with the same index in failKeys
// got.
type failure struct {
	w  Waiting
	id uint64 // w's ID (Engine.waitID) when plans list only changes
	// alone is cycle.alone at the failure (jobRec.alone).
	alone bool
}

// slot is one scratch state of cycle.slots.
type slot struct {
	st          *topology.State
	epoch, book uint64 // the cycle's epoch and the book's version it was built at
	gen         uint64
	blocked     []*reservation
}

// maxSlots bounds the book size for which scratch slots are kept; failureCap
// the failure cache.
const (
	maxSlots     = 8
	failureBits  = 8
	failureCap   = 1 << failureBits
	failureProbe = 8
)

// newGen returns a fresh scratch contents number.
func (c *cycle) newGen() uint64 {
	c.genSeq++
	return c.genSeq
}

// invalidate records that the free state or the book changed in a way the
// scratch states do not follow: every one is rebuilt before its next use.
func (c *cycle) invalidate() {
	c.valid = false
	c.epoch++
	c.gen = c.newGen()
}

// shape is what a cacheable job's outcome depends on besides the scratch
// state: the number of its request, member bounds, class and queue.
type shape struct {
	id uint64 // jobRec.shapeID: equal numbers, equal shapes
}

// shapeHash hashes what a shape is (FNV-1a over the request's fields but
// the node sets, which make a job uncacheable): the shape table
// (shapeTable.id) numbers shapes from it at submission.
func shapeHash(j *Job) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) { h = (h ^ v) * 1099511628211 }
	str := func(s string) {
		for i := range len(s) {
			mix(uint64(s[i]))
		}
		mix(0xff)
	}
	mix(uint64(j.Class))
	for _, m := range j.Gang.Members {
		r := &m.Request
		mix(uint64(m.Min))
		mix(uint64(m.Step))
		mix(uint64(r.Nodes))
		mix(uint64(r.GPUsPerNode))
		mix(uint64(r.GPUs))
		if r.Exclusive {
			mix(1)
		}
		str(r.Required)
		str(r.Preferred)
		mix(uint64(r.MaxDomains))
		str(r.MaxDomainsLevel)
		mix(uint64(r.SegmentSize))
		str(r.SegmentLevel)
		for _, sg := range r.Segments {
			mix(uint64(sg.Size))
			str(sg.Level)
		}
	}
	return h
}

// runCycle is Schedule's body, run by apply once the call is checked.
func (e *Engine) runCycle(now time.Time, plan *Plan) {
	*plan = Plan{Time: now, Starts: plan.Starts[:0], Reservations: plan.Reservations[:0],
		Waiting: plan.Waiting[:0], Moves: plan.Moves[:0], Overruns: plan.Overruns[:0],
		Holds: plan.Holds[:0], HoldEnds: plan.HoldEnds[:0], Preemptions: plan.Preemptions[:0],
		PodChanges: plan.PodChanges[:0]}
	e.chargeAll(now)
	e.accountHolds(now, plan)
	e.takePodChanges(plan)
	e.book.extendDue(now)
	order := e.rank(now)
	c := &e.cyc
	c.e, c.now, c.plan, c.naive = e, now, plan, e.naive
	c.fifo, c.base = e.fifo.on, e.fifo.head
	c.offsValid, c.resvClosed, c.smallClosed, c.reoffer, c.quotaRefused = false, false, false, false, 0
	c.refusedTo, c.holdKept, c.unheldEligible, c.rivalEstimated = time.Time{}, false, false, false
	c.holdBlamed, c.keptETA, c.looseEligible, c.plannedEligible = false, time.Time{}, false, false
	c.resvReader, c.resvReadMany, c.slotOpenTold, c.resvBlamed = nil, false, false, false
	c.holdMiss, c.holdMissMany, c.holdMissNeed, c.holdMissPreempts, c.holdMissReclaims = nil, false, 0, false, false
	c.earlyEnd, c.walking = time.Time{}, false
	c.invalidate()
	c.startClaims()
	c.initPreempt()
	c.initQuota(order)
	c.keepBook()
	c.startBacklog()
	c.startSkips()
	c.clearRefusals()
	c.freedBefore = e.book.freed
	c.holdOn = e.mayHold() || len(e.book.holds) > 0
	c.walk(order)
	c.walking, c.walkOrder = false, nil
	c.reofferStaleResv()
	e.settleWindow(c.windowed)
	c.reofferEarlyWindows()
	e.slotOpen = !c.backlog && c.closedKeepsSlot() || c.reoffer
	e.grow(now, plan)
	c.noteWorld(len(order))
	c.recountWaits(order)
	c.walkKeys = nil
	e.report(plan)
}

// rank orders the waiting jobs by priority into e.order (their
// priorities in e.prio). The naive path ranks through
// fairshare.View.Prioritize, from the jobs' fields, every call; the
// other through fairshare.View.Rank, from the jobs prepared at
// submission: the agreement tests compare them. When the weights order
// by submit time, it returns the order kept between cycles instead
// (rankSubmitOrder), and e.prio is not filled (cycle.priority).
func (e *Engine) rank(now time.Time) []*jobRec {
	var err error
	if e.fsView, err = e.tree.View(now, e.fsView); err != nil {
		panic(fmt.Sprintf("backfill: fair-share snapshot at a checked time: %v", err))
	}
	if e.submitOrdered() {
		e.kr.on = false
		return e.rankSubmitOrder()
	}
	e.fifo.on = false
	if order, ok := e.rankKept(now); ok {
		return order
	}
	in := e.rankInput()
	order := slices.Grow(emptied(e.order, len(in)), len(in))[:len(in)]
	e.prio = slices.Grow(e.prio[:0], len(in))[:len(in)]
	if e.naive {
		e.fsJobs = e.fsJobs[:0]
		for _, j := range in {
			e.fsJobs = append(e.fsJobs, e.fsJob(j))
		}
		if e.ranked, err = e.fsView.Prioritize(e.fsJobs, e.ranked[:0]); err != nil {
			panic(fmt.Sprintf("backfill: ranking checked jobs: %v", err))
		}
		for i, r := range e.ranked {
			j := in[r.Index]
			order[i], e.prio[i], j.rank = j, r.Priority, i
		}
	} else {
		if e.entries, err = e.fsView.Rank(e.preps, e.entries[:0]); err != nil {
			panic(fmt.Sprintf("backfill: ranking checked jobs: %v", err))
		}
		for i, r := range e.entries {
			j := in[r.Index]
			order[i], e.prio[i], j.rank = j, r.Priority, i
		}
	}
	e.order = order
	e.lastRanking = append(emptied(e.lastRanking, len(order)), order...)
	e.keepRanking(now)
	if e.quota != nil {
		e.entitledFirst()
	}
	return order
}

// rankInput lists the waiting jobs for ranking: those of the last
// ranking still waiting, in that order, then the others (new or
// requeued) by submission. Priorities change little between cycles, so
// the ranking sorts this nearly sorted list in about linear time; the
// order it returns does not depend on the input's (fairshare ranks by a
// total order on priority, submit time and ID). Outside the naive path
// it also lists the jobs' prepared forms in e.preps, in the same order,
// while each job's record is at hand.
func (e *Engine) rankInput() []*jobRec {
	if e.naive {
		return e.jobs.pending
	}
	// A generation mark per call: the waiting jobs taken from the last
	// ranking get it, so that the pass over the queue lists each of the
	// others exactly once. A job is waiting exactly when its phase is
	// StatePending (the invariant checker holds the queue to it).
	e.rankGen++
	taken := e.rankGen
	in, preps := e.rankIn[:0], e.preps[:0]
	for _, j := range e.lastRanking {
		if j.phase == StatePending && j.rankGen != taken {
			j.rankGen = taken
			in, preps = append(in, j), append(preps, j.prep)
		}
	}
	for _, j := range e.jobs.pending {
		if j.rankGen != taken {
			in, preps = append(in, j), append(preps, j.prep)
		}
	}
	clearPast(e.rankIn, len(in))
	clearPast(e.preps, len(preps))
	e.rankIn, e.preps = in, preps
	return in
}

// keepBook goes through the reservations in planned-start order (an
// earlier promise goes first on shared GPUs): a due reservation whose
// planned GPUs are free now, and not needed first by an earlier one that
// slipped, starts on them, however late the cycle runs; every other one
// is kept up (upkeep).
func (c *cycle) keepBook() {
	e := c.e
	byStart, _ := e.book.sorted()
	c.due = append(c.due[:0], byStart...)
	c.slipped = c.slipped[:0]
	for _, r := range c.due {
		r.placed, r.quotaHeld = false, false
	}
	c.late = c.late[:0]
	if e.quota != nil && len(c.due) > 0 {
		for _, o := range e.jobs.running {
			if o.job.TimeLimit > 0 && o.late() {
				c.late = append(c.late, o)
			}
		}
	}
	for _, r := range c.due {
		if r.job.resv != r {
			continue
		}
		if !r.start.After(c.now) {
			if k, ok := e.keepTime(r, c.slipped, c.now); ok && !k.at.After(c.now) && allAvailable(e.ledger.State(), &r.alloc) {
				if e.startFits(r.job, &r.alloc, c.now) {
					c.plan.Tested++
					c.yieldClaims(r)
					r.alloc.CopyTo(&e.alloc)
					c.start(r.job)
					continue
				}
				r.quotaHeld = true // its GPUs are free; its quota is not
			}
		}
		r.inWalk = false
		c.upkeep(r)
	}
	e.book.trimFreed()
}

// walk tests the waiting jobs in priority order.
func (c *cycle) walk(order []*jobRec) {
	e := c.e
	c.walking = true
	c.windowed = c.window(order)
	strictBlocker := ""
	changes := e.cfg.OnlyChangedWaits
	// In kept submit order, the strict tail of the last cycle (fifo.go)
	// is skipped when this cycle's blocker is the same job at the same
	// position (blockerAt); skipped counts the waiting jobs passed over,
	// less those walked after the tail's end.
	tail := c.fifo && e.cfg.Strict && changes
	blockerAt, skipped, decided, jumped := -1, 0, false, false
	keys, quiet := c.quietWalk(order)
	c.walkKeys = keys
	c.classOn = c.classWalk(keys)
	c.goneOK = keys != nil && c.qwBack == e.kr.back
	marked := -1 // the rank whose job the walk last tested (markQuiet)
	c.walkOrder = order
	c.staleTo, c.staleLedger, c.staleBook = 0, *c.ledgerCount, e.book.version
	for rank := 0; rank < len(order); rank++ {
		if marked >= 0 {
			c.markQuiet(keys, order, marked)
			marked = -1
		}
		c.noteWorld(rank)
		if c.goneOK && keys[rank].class == keptGone {
			// A job that left (and did not come back: goneOK).
			if e.checkEach && order[rank].phase == StatePending {
				panic(fmt.Sprintf("backfill: job %s at rank %d marked gone, but waiting", order[rank].job.ID, rank))
			}
			continue
		}
		predicted, predictedClass := false, false
		if quiet != 0 && keys[rank].quiet == quiet && c.mayPassOver() {
			// The stamps of this job and of the run of marked ones after
			// it hold: their tests would be skipped and their reasons are
			// unchanged (skipTest). Under checkEach the walk goes through
			// them anyway and checks each skip.
			switch {
			case c.worldNow() != quiet:
				quiet = 0 // a test changed the world: no mark holds
			case e.checkEach:
				predicted = true
				c.quietChecked++
			default:
				end := rank + 1
				for end < len(order) && keys[end].quiet == quiet {
					end++
				}
				n := end - rank
				c.passedRun(order[rank:end])
				c.plan.Tested += n
				c.plan.Unchanged += n
				c.skippedTests += n
				c.quietSkips += n
				rank = end - 1
				continue
			}
		}
		if c.classOn && !predicted && c.mayPassOver() {
			// A job of its class failed in this world as it did: so
			// would it (classes.go), and the run of such jobs after it.
			if e.checkEach {
				if c.classHolds(&keys[rank]) {
					predictedClass = true
					c.classChecked++
				}
			} else if end := c.passClasses(keys, rank); end > rank {
				c.passedRun(order[rank:end])
				rank = end - 1
				continue
			}
		}
		if keys != nil {
			keys[rank].class = 0 // marked again if the walk leaves it unchanged (markQuiet)
		}
		if tail && blockerAt >= 0 && !decided {
			// The first job behind the blocker. Every job before it
			// started (strict order, no quotas, no window), so the others
			// behind it wait; those up to the last tail's end are told
			// what they were told then, when the blocker is the same.
			decided = true
			if f := &e.fifo; f.blocker == order[blockerAt] && f.blockerPos == c.base+blockerAt {
				skipped, jumped = len(e.jobs.pending)-1, true // less those walked after the tail
				f.skips++
				if rank = f.tailEnd - c.base; rank >= len(order) {
					break
				}
			}
		}
		j := order[rank]
		c.walkRank = rank
		if j.phase != StatePending || c.fifo && j.pos != c.base+rank {
			if keys != nil {
				// A job that left is not passed over as waiting, and
				// the next walks pass over it unread (goneOK).
				keys[rank].quiet, keys[rank].class = 0, keptGone
			}
			continue // started by its due reservation, or left the queue
		}
		if jumped {
			skipped--
		}
		// w is built in place at the end of the plan's list, and taken
		// off again if the job starts (the cycle adds to the list nowhere
		// else; a claim that moves reservations corrects the reasons
		// listed before it in place: restateVisited); when the plan lists
		// only changes, it is built in the cycle's buffer and listed if it
		// changed (restateVisited lists there the reasons of jobs passed
		// before it that a claim changed).
		var w *Waiting
		if changes {
			w = &c.waitBuf
		} else {
			c.plan.Waiting, w = extend(c.plan.Waiting)
		}
		c.hitID = 0
		switch {
		case e.cfg.Strict && strictBlocker != "":
			c.stamp(j)
			if changes {
				// Most of a strict queue waits behind the same blocker
				// cycle after cycle: an unchanged reason is told by its
				// ID, before the reason is even built.
				if c.hitID = c.priorityID(WaitPriority, strictBlocker); c.hitID == j.waitID {
					c.plan.Unchanged++
					continue
				}
			}
			*w = Waiting{Job: j.job.ID, Code: WaitPriority, Blocker: strictBlocker}
		case j.claim != nil:
			c.stamp(j)
			*w = Waiting{Job: j.job.ID}
			c.reportClaim(j.claim, w)
			if e.cfg.Strict {
				strictBlocker, blockerAt = j.job.ID, rank
			}
		case c.windowed && !c.inWindow[rank] && j.resv == nil && j.moved == nil && !j.dropped && !e.book.isHeld(j) && !c.strictTested(j):
			c.passedWaiting(j)
			if changes {
				if c.hitID = c.priorityID(WaitPriority, ""); c.hitID == j.waitID {
					c.plan.Unchanged++
					continue
				}
			}
			*w = Waiting{Job: j.job.ID, Code: WaitPriority}
		case j.yieldTo != nil && c.yieldFirst(j, w):
			// Released for a preemptor that still waits without a
			// claim: it goes first on the GPUs this job left.
			c.passedWaiting(j)
		default:
			c.plan.Tested++
			c.stamp(j)
			if keys != nil {
				marked = rank
			}
			skippedBefore := c.skippedTests
			started := !c.test(j, w)
			if predicted && c.skippedTests == skippedBefore {
				panic(fmt.Sprintf("backfill: job %s at rank %d marked quiet in world %d, but its test was not skipped", j.job.ID, rank, quiet))
			}
			if predictedClass && (started || !(c.hitID != 0 && c.hitID == j.waitID || keepID(j, w) != 0)) {
				panic(fmt.Sprintf("backfill: job %s at rank %d passed over by its class, but its test started it or changed its reason", j.job.ID, rank))
			}
			c.settleMove(j)
			if !started {
				c.leftWaiting(j)
			}
			if !started && j.resv == nil && j.claim == nil {
				c.passedWaiting(j)
			}
			if !started && j.resv != nil {
				c.heldAbove = true // the one reservation of a backlog (mayReserveFor)
			}
			if j.dropped {
				j.dropped = false // written only when set: a long queue's records stay clean
			}
			if started {
				c.setStamp(j)
				if !changes {
					c.plan.Waiting = c.plan.Waiting[:len(c.plan.Waiting)-1]
				}
				continue
			}
			if c.hitID != 0 && c.hitID == j.waitID {
				// Unchanged, and w not even written (test): the job's
				// reason is the one it was last listed with.
				c.setStamp(j)
				if e.cfg.Strict && j.wait.Code != WaitQuota {
					strictBlocker, blockerAt = j.job.ID, rank
				}
				c.plan.Unchanged++
				continue
			}
			if e.cfg.Strict && w.Code != WaitQuota {
				// A job waiting for its queue's quota holds up no
				// other queue (Kueue's StrictFIFO is per queue).
				strictBlocker, blockerAt = j.job.ID, rank
			}
		}
		if changes {
			id := c.hitID
			if id == 0 {
				id = e.waitID(w, j)
			}
			// Equal IDs are the same reason; a different one may still
			// be (the table gave the content a new ID after forgetting
			// it), which one whole comparison settles.
			if id == j.waitID || keepID(j, w) != 0 {
				c.setStamp(j)
				c.plan.Unchanged++
				continue
			}
			j.toldID, j.waitID = j.waitID, id
			// A priority is computed only for the reasons listed.
			w.Priority = c.priority(rank, j)
			c.plan.Waiting = append(c.plan.Waiting, *w)
		} else {
			w.Priority = c.priority(rank, j)
		}
		j.wait, j.exemptRestored = *w, false
		if w.Hold != nil {
			// The plan's listing shares w's status: the record keeps its
			// own, which a caller changing the plan cannot reach.
			h := *w.Hold
			j.wait.Hold = &h
		}
		c.setStamp(j)
	}
	if marked >= 0 {
		c.markQuiet(keys, order, marked)
	}
	c.noteWorld(len(order))
	c.walkLedger = *c.ledgerCount
	if keys != nil {
		c.qwLeft, c.qwHold, c.qwBack = e.kr.left, e.mayHold(), e.kr.back
	}
	if skipped < 0 {
		panic(fmt.Sprintf("backfill: %d waiting jobs skipped behind blocker %s", skipped, strictBlocker))
	}
	c.plan.Unchanged += skipped
	if f := &e.fifo; tail && blockerAt >= 0 {
		f.blocker, f.blockerPos, f.tailEnd = order[blockerAt], c.base+blockerAt, c.base+len(order)
	} else {
		f.blocker = nil
	}
}

// quietWalk returns the kept ranking's keys when the walk marks them
// (markQuiet), and the world in which it may pass over the jobs whose
// keys it marked (0: none). A job is passed over, its record unread, when
// its test would be skipped (skipTest) and the walk would do nothing else
// with it: its key was marked in the world that still is (its stamp held
// when the walk last left it, so it was cacheable then, and its reason
// unchanged); no stamp marked in that world has expired (qwUntil); and
// nothing outside that world decides whether the job is cacheable: no
// job left the kept order since the last walk (a departed job stays in
// the order, passed over uncounted), hold mode may hold as it might then
// (mayHold), no preemption, quota or claims (startSkips), no strict order
// and no tested-jobs window. In a cycle driven by submissions alone the
// walk then tests the jobs that joined and the few whose keys are not
// marked (reservations, uncacheable jobs), and reads no other record.
func (c *cycle) quietWalk(order []*jobRec) ([]keptKey, uint64) {
	e := c.e
	if !c.skips || !e.kr.on || c.fifo || len(e.kr.keys) != len(order) {
		// A walk that marks nothing may change reasons in the world that
		// is: no mark of it is to be trusted after.
		c.qwWorld = 0
		return nil, 0
	}
	if c.backlog != c.qwBacklog {
		// A backlog (Config.BacklogAfter) began or ended, with time
		// alone: the marks and the classes were made under the other
		// rule. This walk marks anew.
		c.qwBacklog, c.qwWorld = c.backlog, 0
		c.forgetClasses()
	}
	keys := e.kr.keys
	if e.pre == nil && !e.cfg.Strict && !c.windowed && c.qwLeft == e.kr.left && c.qwHold == e.mayHold() {
		if w := c.worldNow(); w == c.qwWorld && c.nowNs < c.qwUntil {
			return keys, w
		}
	}
	// The walk goes through every job and marks them anew: their
	// earliest until too.
	c.qwWorld = 0
	return keys, 0
}

// markQuiet marks the key of the job at rank with the world in which its
// stamp holds, or with none (quietWalk).
func (c *cycle) markQuiet(keys []keptKey, order []*jobRec, rank int) {
	j, k := order[rank], &keys[rank]
	w := c.worldNow()
	if j.phase != StatePending {
		k.quiet, k.class = 0, keptGone // it started: it left
		return
	}
	if j.stamp.world != w || j.stamp.id != j.waitID || j.stamp.backlog != c.backlogState() {
		k.quiet, k.class = 0, 0
		return
	}
	c.classMark(k, j, w)
	k.quiet = w
	if c.qwWorld != w {
		c.qwWorld, c.qwUntil = w, math.MaxInt64
	}
	c.qwUntil = min(c.qwUntil, j.stamp.until)
}

// priorityID returns the ID (Engine.waitID) of the "waiting for
// priority" reason with that code and blocker and nothing else, from the
// cycle's cache when the last one asked for was the same: one reason, and
// one ID, for most of a long queue.
func (c *cycle) priorityID(code WaitCode, blocker string) uint64 {
	if c.prioID != 0 && code == c.prioWait.Code && blocker == c.prioWait.Blocker {
		return c.prioID
	}
	c.prioWait = Waiting{Code: code, Blocker: blocker}
	c.prioID = c.e.waitID(&c.prioWait, nil)
	return c.prioID
}

// test tries to start job j now; when it cannot, it fills w (which it
// overwrites whole) with what j gets instead (reservation, hold, reason)
// and reports true. w's priority is left for the walk to fill when it
// lists the reason. When the plan lists only changes and the job's
// reason is unchanged (hitID is its ID), w may be left unwritten.
//
// Unless the test ends waiting behind a lower-ranked gang's hold within
// the hysteresis (contendHold), it clears j's hysteresis clock: the
// hysteresis counts afresh when such a hold keeps it waiting again (a
// clock left from an earlier wait, before a start and a requeue, a quota
// wait or a drain, passed holds on at once).
func (c *cycle) test(j *jobRec, w *Waiting) bool {
	c.contending = false
	waits := c.testJob(j, w)
	if !c.contending {
		j.holdBlockedSince = time.Time{}
	}
	return waits
}

// testJob is test without the hysteresis clock's upkeep.
func (c *cycle) testJob(j *jobRec, w *Waiting) bool {
	alone, aloneLater := j.alone, j.aloneLater
	j.alone, c.alone, j.quotaAt, j.quotaShare = false, false, quotaCheck{}, false
	j.aloneLater, c.aloneLater = false, false
	if c.e.quota != nil {
		*w = Waiting{Job: j.job.ID}
		if c.quotaGate(j, w) {
			return true
		}
	}
	c.stampable = false
	key, cacheable := c.shapeKey(j)
	if cacheable {
		if c.skips {
			if c.skipTest(j) {
				j.alone, j.aloneLater = alone, aloneLater // its reason stays
				c.untested(j.wait.Code)
				return true
			}
			c.stampNext = testStamp{world: c.worldNow(), backlog: c.backlogState()}
		}
		c.prepareScratch(j)
		if hit, ok := c.cached(&key); ok {
			c.stampable = c.skips
			// (A hold a cached reason blames (WaitHold) was marked as
			// having refused a job by the test that made the entry, in
			// this cycle: refusals are cleared only when a cycle begins,
			// and a hold that ends or changes invalidates the entries.)
			// A job of the same shape failed on this very scratch
			// state: this one fails the same way (w is written once,
			// and not at all when the plan lists only changes and the
			// job's reason is this one already).
			c.hitID = hit.id
			c.untested(hit.w.Code)
			j.alone = hit.alone
			if hit.id != 0 && (hit.id == j.waitID || sameReason(&hit.w, j)) {
				c.hitID = j.waitID // unchanged: the walk lists nothing
				return true
			}
			*w = hit.w
			w.Job = j.job.ID
			return true
		}
	}
	if c.e.quota == nil {
		*w = Waiting{Job: j.job.ID}
	}
	if c.tryStart(j) {
		return false
	}
	if c.quotaBlocked {
		c.quotaBlocked = false
		c.quotaBlockedWait(j, w)
		return true
	}
	c.wait(j, w)
	j.alone, j.aloneLater = c.alone, c.aloneLater
	if cacheable && j.resv == nil && j.claim == nil && !c.e.book.isHeld(j) && w.Code != WaitForHold {
		c.remember(j, &key, w)
		c.stampable = c.skips
	}
	return true
}

// skipTest reports whether job j, cacheable, would fail this cycle as its
// last test did (its stamp holds): the ledger state and the book are as
// they were, its slot's reservation prefix and blocks too, and it was
// left with the reason it has. The walk then tells it nothing new, as it
// would after the test. With checkEach the test runs anyway, and must
// agree.
func (c *cycle) skipTest(j *jobRec) bool {
	s := &j.stamp
	if s.world != c.worldNow() || c.nowNs >= s.until || s.id != j.waitID || s.backlog != c.backlogState() {
		return false
	}
	c.hitID = j.waitID
	if c.e.checkEach {
		c.checkSkip(j)
	}
	c.skippedTests++
	c.stampStays = true
	return true
}

// checkSkip runs the test skipTest skipped and panics unless it fails
// with the reason job j has (tests, checkEach).
func (c *cycle) checkSkip(j *jobRec) {
	c.skips = false
	defer func() { c.skips = true }()
	var w Waiting
	c.hitID = 0
	if !c.test(j, &w) {
		panic(fmt.Sprintf("backfill: job %s started where its stamp said it would fail", j.job.ID))
	}
	if unchanged := c.hitID != 0 && c.hitID == j.waitID || keepID(j, &w) != 0; !unchanged {
		panic(fmt.Sprintf("backfill: job %s was told %+v where its stamp said %+v", j.job.ID, w, j.wait))
	}
	c.hitID = j.waitID
}

// worldNow returns the number of the world as it is now: the same as
// the last time it was asked if the ledger state and the book did not
// change since, a new one otherwise.
func (c *cycle) worldNow() uint64 {
	if l, b := *c.ledgerCount, c.e.book.version; l != c.worldLedger || b != c.worldBook || c.worldSeq == 0 {
		c.worldLedger, c.worldBook = l, b
		c.worldSeq++
	}
	return c.worldSeq
}

// setStamp gives job j, just tested, the stamp of its test when it
// failed as any job of its shape would, and none otherwise.
func (c *cycle) setStamp(j *jobRec) {
	if c.stampStays {
		c.stampStays = false
		return
	}
	if !c.stampable || c.worldNow() != c.stampNext.world || c.closedKeepsSlot() {
		// An older stamp may stay: it names a world gone for good, or
		// the reason the job is left with is another (its ID). A test
		// made while resvClosed or smallClosed kept a slot free from the job is not
		// stamped: no world covers that flag, and a quiet walk would
		// pass the job over in the next cycle, where the slot is open.
		c.stampable = false
		return
	}
	c.stampable = false
	s := c.stampNext
	s.id, s.slot = j.waitID, c.slotLen
	s.until = math.MaxInt64
	if l := j.limit; l > 0 && c.slotLen < len(c.offs) {
		// The next reservation by start enters the job's prefix once
		// now+limit passes its start (offs, from the job's test, holds
		// the starts less now). No reservation of the prefix ends while
		// the book stays as it is: a due one's end moves with now
		// (book.extendDue), which changes the book.
		s.until = c.nowNs + int64(c.offs[c.slotLen]-l)
	}
	if w := c.e.cfg.ReservationAnyAfter; w > 0 && !c.e.large(j) && !c.aged(j) {
		// Once it has waited w, the job may take any slot (and may from
		// then on: a job that has waited w already needs no bound).
		s.until = min(s.until, j.job.Submit.Add(w).UnixNano())
	}
	j.stamp = s
}

// startBacklog sets backlog (Config.BacklogAfter): whether some waiting
// job below ReservationMinGPUs (any, with that rule off) has waited
// BacklogAfter, other than one its queue's quota holds back
// (waitsForQuota, read from the quota state before the walk) and, while
// at least Config.BacklogFreeShare of the cluster's GPUs are free on
// schedulable nodes and planned by no reservation (unreservedFree), one
// of a node's worth of GPUs or more, and names the first such
// job found in Plan.Backlog. It reads the queue, the free GPUs and the
// quota state alone, not the jobs' last reasons, which a restored engine
// does not have.
func (c *cycle) startBacklog() {
	e := c.e
	c.backlog, c.heldAbove = false, false
	if !e.backlogRule() {
		return
	}
	// A job of a whole node's GPUs, or of whole nodes (of a pool of
	// smaller nodes too), that waits while GPUs stand free waits for a
	// node to be wholly free (the free GPUs are scattered): the
	// queue is not deep, and planning as EASY would only take the gangs'
	// reservations away (benchmarks/README.md, "Why seed 4 of Philly at
	// load 3 moved").
	share := e.cfg.BacklogFreeShare
	// (A relative tolerance, for a share such as 0.05 whose product
	// rounds just above a whole count: an absolute one made a tiny share
	// of a small cluster roomy with no GPU free.)
	roomy := share > 0 && float64(e.ledger.State().FreeGPUs()) >= share*float64(e.c.TotalGPUs())*(1-1e-12)
	if roomy && len(e.book.resv) > 0 {
		// GPUs free on GPUs a reservation plans to use are kept for it,
		// not scattered: counted, the reservations' own draining made a
		// deep queue of whole-node jobs look roomy, and kept the slots
		// open that drain them (benchmarks/README.md, "What makes the
		// Philly load-4 p95 and max").
		roomy = float64(e.unreservedFree()) >= share*float64(e.c.TotalGPUs())*(1-1e-12)
	}
	for _, j := range e.jobs.pending {
		if roomy && (j.gpus >= e.c.MaxNodeGPUs() || j.wholeG != nil) {
			continue
		}
		if (e.resvMin == 0 || !e.large(j)) && c.now.Sub(j.job.Submit) >= e.cfg.BacklogAfter && !c.waitsForQuota(j) {
			c.backlog, c.plan.Backlog = true, j.job.ID
			return
		}
	}
}

// unreservedFree returns the GPUs free on schedulable nodes less those of
// them that some reservation plans to use (each GPU once, however many
// reservations plan it). It uses e.nodeMask and leaves it zero.
func (e *Engine) unreservedFree() int {
	s := e.ledger.State()
	m := e.nodeMask
	for _, r := range e.book.resv {
		for mi := range r.alloc.Members {
			for _, a := range r.alloc.Members[mi].Assignment {
				m[a.Node] |= a.GPUs
			}
		}
	}
	free := s.FreeGPUs()
	for _, r := range e.book.resv {
		for mi := range r.alloc.Members {
			for _, a := range r.alloc.Members[mi].Assignment {
				if m[a.Node] != 0 && s.Schedulable(a.Node) {
					free -= bits.OnesCount64(s.Free(a.Node) & m[a.Node])
				}
				m[a.Node] = 0 // counted once
			}
		}
	}
	return free
}

// backlogState returns what a backlog (Config.BacklogAfter) makes of
// the job the walk is at: 0 without one; during one, 1 while no job
// ranked above holds a reservation (it may take one) and 2 once one does
// (it may not). A test's outcome depends on it, so it is part of the
// test's stamp: a stamp made under another state is not reused.
func (c *cycle) backlogState() uint8 {
	switch {
	case !c.backlog:
		return 0
	case !c.heldAbove:
		return 1
	}
	return 2
}

// mayPassOver reports whether the walk may pass over marked jobs here, by
// their marks or their classes. During a backlog, a job is marked only
// when its stamp says a job ranked above held a reservation
// (backlogState 2; one that may take a reservation is never marked);
// ranks move with time alone, so that holds again only where a job
// before it in this walk holds one: then every job after it too, as
// heldAbove stays set for the rest of the walk.
func (c *cycle) mayPassOver() bool { return !c.backlog || c.heldAbove }

// backlogRule reports whether Config.BacklogAfter can apply: set, with a
// depth above 1 and no strict order.
func (e *Engine) backlogRule() bool {
	d := e.cfg.ReservationDepth
	return e.cfg.BacklogAfter > 0 && d > 1 && !e.cfg.Strict
}

// startSkips readies the cycle's stamps (skipTest). They are used when
// the plan lists only changes and none of these is in play: quotas (a
// job's gate is outside the stamp), holds and claims (left out to keep
// the stamp's reasoning short; they are in the book's version), with
// preemption, growing jobs: a growing job lends pods from the first
// cycle after its start on (lends), a change that time alone makes. A
// backlog (Config.BacklogAfter) also begins and ends with time alone: the
// stamps record it (backlogState) instead, its start or end resets the
// marks and classes (quietWalk), and during one the walk passes marked
// jobs over only behind a job holding a reservation (mayPassOver).
func (c *cycle) startSkips() {
	e := c.e
	c.skips = e.cfg.OnlyChangedWaits && !c.naive && e.quota == nil && len(e.book.holds) == 0 && len(e.book.claims) == 0 &&
		(e.pre == nil || e.jobs.growers == 0)
	c.stampable, c.stampStays = false, false
	c.ledgerCount = access.StateChanges(e.ledger.State())
	c.nowNs = c.now.UnixNano()
}

// shapeKey returns the cache key of a job whose outcome depends only on its
// shape and the scratch state: one member, no node sets, no co-location,
// no patience, and no chance of a reservation or hold this cycle (those
// depend on the job's own history).
func (c *cycle) shapeKey(j *jobRec) (shape, bool) {
	if c.naive || !j.simple || j.tight != nil || j.resv != nil || j.moved != nil || j.dropped {
		return shape{}, false
	}
	e := c.e
	if c.mayReserveFor(j) {
		return shape{}, false
	}
	if e.book.isHeld(j) {
		return shape{}, false
	}
	if e.mayHold() {
		if _, _, ok := e.holdEligibility(j); ok {
			return shape{}, false // its outcome depends on its own history
		}
	}
	// A job that may look for victims or reclaim its queue's guarantee
	// has an outcome that depends on the cycle's state too (the victim
	// search budget, the queues found without a claim, its own time
	// limit through how far its planned start is).
	if e.pre != nil && c.anyRunning && j.job.Class > c.lowest {
		return shape{}, false
	}
	if e.quota != nil && e.reclaimGPUs(j) > 0 {
		return shape{}, false
	}
	return shape{id: j.shapeID}, true
}

// cached returns the failure a job of shape k met on the scratch contents
// in use, if one is in the table.
func (c *cycle) cached(k *shape) (*failure, bool) {
	if c.failKeys == nil {
		return nil, false
	}
	h := c.failHome(k)
	for i := range failureProbe {
		if at := (h + i) % failureCap; c.failKeys[at] == (failKey{*k, c.gen}) {
			return &c.failures[at], true
		}
	}
	return nil, false
}

// remember puts the failure w of job j, of shape k, in the table for the
// scratch contents in use, with its reason's ID when the plan lists only
// changes (hitID then names it too).
func (c *cycle) remember(j *jobRec, k *shape, w *Waiting) {
	if c.failKeys == nil {
		c.failKeys = make([]failKey, failureCap)
		c.failures = make([]failure, failureCap)
	}
	h := c.failHome(k)
	at := h
	for i := range failureProbe {
		if c.failKeys[(h+i)%failureCap].gen != c.gen {
			at = (h + i) % failureCap // free, or of other scratch contents
			break
		}
	}
	c.failKeys[at] = failKey{*k, c.gen}
	f := &c.failures[at]
	*f = failure{w: *w, alone: c.alone}
	if c.e.cfg.OnlyChangedWaits {
		f.id = c.e.waitID(w, j)
		c.hitID = f.id // the walk needs no second lookup for j
	}
}

// failHome is the first table entry shape k may take on the scratch
// contents in use (gen 0 marks an empty entry: gens start at 1): the top
// bits of a multiplicative hash of both. With e.collide (tests) only two
// bits of the shape count, so that shapes crowd one probe window.
func (c *cycle) failHome(k *shape) int {
	id := k.id
	if c.e.collide {
		id &= 3
	}
	return int(((id ^ c.gen<<20) * 0x9e3779b97f4a7c15) >> (64 - failureBits))
}

// prepareScratch makes the scratch state the free state minus what job j
// may not use now.
func (c *cycle) prepareScratch(j *jobRec) {
	e := c.e
	ownHold := e.book.holdOf(j)
	// The reservations overlapping [now, now+limit) are those starting
	// before now+limit (all of them without a limit): a prefix of the
	// reservations by start.
	byStart, _ := e.book.sorted()
	k := len(byStart)
	if l := j.limit; l > 0 {
		k = c.startsWithin(byStart, l)
	}
	c.slotLen = k
	if e.checkEach {
		defer c.checkScratch(j, byStart[:k], ownHold)
	}
	if !c.naive && ownHold == nil && j.resv == nil && len(byStart) <= maxSlots {
		c.useSlot(j, byStart[:k])
		return
	}
	e.scratch = e.mainScratch
	defer func() { c.blockedRes, c.ownHold, c.gen = c.mainBlocked, c.mainOwnHold, c.mainGen }()
	if !c.naive && c.valid && ownHold == c.mainOwnHold && k >= c.prefix && j.resv == c.own {
		// Blocking is a union: the reservations that overlap this
		// job's window and not the last one's (a longer limit) go on
		// top of the scratch state as it is.
		if k > c.prefix {
			c.mainGen = c.newGen()
			c.mainBlocked = c.blockOverlapping(e.mainScratch, c.mainBlocked, j, byStart[c.prefix:k])
			c.prefix = k
		}
		return
	}
	if err := e.ledger.State().CopyInto(e.mainScratch); err != nil {
		panic(err)
	}
	c.mainGen = c.newGen()
	c.mainBlocked = c.blockOverlapping(e.mainScratch, c.mainBlocked[:0], j, byStart[:k])
	c.blockOthers(e.mainScratch, ownHold)
	c.mainOwnHold, c.prefix, c.own = ownHold, k, j.resv
	c.valid = true
}

// startsWithin is startsBefore(byStart, now+l) for the book's
// reservations by start, from their offsets from now (kept while the book
// does not change).
func (c *cycle) startsWithin(byStart []*reservation, l time.Duration) int {
	if !c.offsValid || c.offsVer != c.e.book.version || len(c.offs) != len(byStart) {
		c.offs = c.offs[:0]
		for _, r := range byStart {
			c.offs = append(c.offs, r.start.Sub(c.now))
		}
		c.offsVer, c.offsValid = c.e.book.version, true
	}
	lo := 0
	if len(c.offs) <= maxSlots {
		// A count (the offsets are in order): no branch to mispredict,
		// where a search's depends on each job's limit.
		for _, o := range c.offs {
			if o < l {
				lo++
			}
		}
	} else {
		hi := len(c.offs)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if c.offs[m] < l {
				lo = m + 1
			} else {
				hi = m
			}
		}
	}
	if c.e.checkEach {
		if want := startsBefore(byStart, c.now.Add(l)); lo != want {
			panic(fmt.Sprintf("backfill: %d reservations start within %v of now, %d by their times", lo, l, want))
		}
	}
	return lo
}

// startsBefore returns how many of the reservations byStart (by start)
// start before t: a binary search, written out (the generic search with a
// comparator cost twice as much); the walk uses startsWithin, tests this.
func startsBefore(byStart []*reservation, t time.Time) int {
	lo, hi := 0, len(byStart)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if byStart[m].start.Before(t) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// checkScratch compares the scratch state in use for job j with one built
// afresh (tests, checkEach).
func (c *cycle) checkScratch(j *jobRec, prefix []*reservation, ownHold *hold) {
	e := c.e
	fresh := e.ledger.State().Clone()
	for _, r := range prefix {
		if windowOverlaps(r, j, c.now) {
			block(fresh, &r.alloc)
		}
	}
	c.blockOthers(fresh, ownHold)
	if !fresh.Equal(e.scratch) {
		panic(fmt.Sprintf("backfill: the scratch state for %s differs from one built afresh", j.job.ID))
	}
}

// useSlot makes the scratch state in use the slot for the reservations of
// prefix (by start), built when it is not valid, for job j, which has no
// reservation or hold of its own.
func (c *cycle) useSlot(j *jobRec, prefix []*reservation) {
	e := c.e
	if c.slots == nil {
		c.slots = make([]slot, maxSlots+1)
	}
	sl := &c.slots[len(prefix)]
	if sl.epoch != c.epoch || sl.book != e.book.version || sl.st == nil {
		if sl.st == nil {
			sl.st = e.ledger.State().Clone() // no index rebuild
		} else if err := e.ledger.State().CopyInto(sl.st); err != nil {
			panic(err)
		}
		sl.blocked = c.blockOverlapping(sl.st, sl.blocked[:0], j, prefix)
		c.blockOthers(sl.st, nil)
		sl.epoch, sl.book, sl.gen = c.epoch, e.book.version, c.newGen()
	}
	e.scratch, c.blockedRes, c.ownHold, c.gen = sl.st, sl.blocked, nil, sl.gen
}

// blockOthers blocks on s the holds but ownHold and the claims.
func (c *cycle) blockOthers(s *topology.State, ownHold *hold) {
	for _, h := range c.e.book.holds {
		if h != ownHold {
			block(s, &h.target)
		}
	}
	for _, cl := range c.e.book.claims {
		block(s, &cl.alloc)
	}
}

// started records that the job just admitted on the scratch state in use
// was booked (it is in e.alloc): that state holds it; every other valid
// one takes its GPUs off too (each is the free state minus its blocks, so
// the GPUs the job took from the free state go, whatever it blocks).
func (c *cycle) started() {
	e := c.e
	if e.scratch != e.mainScratch && c.valid {
		block(e.mainScratch, &e.alloc)
	}
	c.mainGen = c.newGen()
	for i := range c.slots {
		sl := &c.slots[i]
		if sl.st == nil || sl.epoch != c.epoch || sl.book != e.book.version {
			continue
		}
		if sl.st != e.scratch {
			block(sl.st, &e.alloc)
		}
		sl.gen = c.newGen()
		if sl.st == e.scratch {
			c.gen = sl.gen
		}
	}
	if e.scratch == e.mainScratch {
		c.gen = c.mainGen
	}
}

// blockOverlapping blocks on s the reservations of rs that overlap job
// j's window from now, and appends them to list.
func (c *cycle) blockOverlapping(s *topology.State, list []*reservation, j *jobRec, rs []*reservation) []*reservation {
	for _, r := range rs {
		if windowOverlaps(r, j, c.now) {
			list = append(list, r)
			block(s, &r.alloc)
		}
	}
	return list
}

// specFor returns the gang spec job j is placed with now: the tight one
// while its patience lasts.
func (c *cycle) specFor(j *jobRec) (*gang.Spec, bool) {
	if j.tight != nil && c.now.Before(j.job.Submit.Add(j.job.Patience.Wait)) {
		return j.tight, true
	}
	return &j.job.Gang, false
}

// tryStart starts job j now if it fits; it reports whether it did.
func (c *cycle) tryStart(j *jobRec) bool {
	e := c.e
	c.prepareScratch(j)
	full, _ := c.specFor(j)
	spec := c.quotaSpec(j, full)
	if r := j.resv; e.quota != nil && r != nil && !r.start.After(c.now) && allAvailable(e.scratch, &r.alloc) {
		// Due, its planned GPUs free, and passed over by keepBook (its
		// queue's quota had no room for it then, before a reclaim or a
		// preemption freed some, or takes it only cut): it starts on
		// them, as promised (cut: on its planned nodes). An elastic gang
		// reserved below its full size and above its minimum starts at
		// its reservation's size: where the quota took the full size but
		// not that one (the checks are not monotone in the GPUs: the
		// cluster's pool binds only where the GPUs counted leave room),
		// it is cut from there.
		if n := r.alloc.GPUs(); spec == full && j.minGPUs < n && n < j.gpus && !e.startFits(j, &r.alloc, c.now) {
			spec = c.quotaSpecAt(j, full, r.alloc.GPUs())
		}
		if spec == full {
			r.alloc.CopyTo(&e.alloc)
			block(e.scratch, &e.alloc)
			c.lastRes = gang.Admission{Admitted: true}
			return c.startChecked(j)
		}
		if c.startCutOnPlan(j, spec, r) {
			return true
		}
	}
	res, err := e.adm.Admit(e.scratch, spec, &e.alloc)
	if err != nil {
		panic(fmt.Sprintf("backfill: checked job %s refused: %v", j.job.ID, err))
	}
	c.lastRes = res
	if !res.Admitted {
		return c.tryLent(j, spec)
	}
	// (Started off its reservation, it lets go of the GPUs of it it
	// does not use: start.)
	if c.startChecked(j) {
		return true
	}
	return c.quotaBlocked && c.startOnSmaller(j, spec)
}

// startOnSmaller starts job j, whose placement on e.alloc its queue's
// quota refused (startChecked), on smaller nodes when it has whole-node
// members and may use nodes of unequal sizes (its leastGPUs below the
// GPUs placed): the placer, which knows nothing of quotas, may have put
// its whole-node pods on large nodes where smaller ones take it within
// its queue's limits (onSmaller, on the scratch state); it reports
// whether it started. spec is left as it was.
func (c *cycle) startOnSmaller(j *jobRec, spec *gang.Spec) bool {
	if j.wholeG == nil || j.leastGPUs >= c.blockedGPUs {
		return false
	}
	started := c.onSmaller(spec, c.e.scratch, func() bool { return c.startChecked(j) })
	c.quotaBlocked = !started // blockedGPUs: the last placement refused
	return started
}

// onSmaller places the whole-node members of spec, placed on e.alloc,
// again on state st on the nodes below the largest one they took, then
// below that, while the gang is admitted there and fits (its quota)
// refuses the placement; it reports whether fits took one (e.alloc holds
// it, c.lastRes its admission). A gang of more than 8 members is not
// tried; spec is left as it was.
func (c *cycle) onSmaller(spec *gang.Spec, st *topology.State, fits func() bool) bool {
	var res gang.Admission
	place := func() bool {
		var err error
		if res, err = c.e.adm.Admit(st, spec, &c.e.alloc); err != nil {
			panic(fmt.Sprintf("backfill: checked gang refused on smaller nodes: %v", err))
		}
		return res.Admitted
	}
	if !c.smallerBy(spec, place, fits) {
		return false
	}
	c.lastRes = res
	return true
}

// smallerBy narrows the whole-node members of spec, placed on e.alloc,
// to the nodes below the largest one they took, then below that, calling
// place (which leaves its placement in e.alloc and reports whether it
// found one) on each, while place finds one and fits refuses it; it
// reports whether fits took one (e.alloc holds it). A gang of more than
// 8 members is not tried; spec is left as it was.
func (c *cycle) smallerBy(spec *gang.Spec, place, fits func() bool) bool {
	e := c.e
	var saved [8]*bitset.BitSet
	if len(spec.Members) > len(saved) {
		return false
	}
	for len(e.planNodes) < len(spec.Members) {
		e.planNodes = append(e.planNodes, bitset.New(uint(e.c.NumNodes())))
	}
	for i := range spec.Members {
		saved[i] = spec.Members[i].Request.Allowed
	}
	ok := false
	for {
		// The largest node a whole-node pod took, and the largest size
		// below it.
		top := 0
		for i := range e.alloc.Members {
			ma := &e.alloc.Members[i]
			if mi := memberIndex(spec, ma.Name); mi >= 0 && isWhole(&spec.Members[mi]) {
				for _, x := range ma.Assignment {
					top = max(top, e.c.NodeGPUs(x.Node))
				}
			}
		}
		below := 0
		for n := 0; n < e.c.NumNodes(); n++ {
			if g := e.c.NodeGPUs(topology.NodeID(n)); g < top {
				below = max(below, g)
			}
		}
		if below == 0 {
			break
		}
		for i := range spec.Members {
			m := &spec.Members[i]
			if !isWhole(m) {
				continue
			}
			on := e.planNodes[i].ClearAll()
			for n := 0; n < e.c.NumNodes(); n++ {
				if e.c.NodeGPUs(topology.NodeID(n)) <= below {
					on.Set(uint(n))
				}
			}
			if saved[i] != nil {
				on.InPlaceIntersection(saved[i])
			}
			m.Request.Allowed = on
		}
		if !place() {
			break
		}
		if fits() {
			ok = true
			break
		}
	}
	for i := range spec.Members {
		spec.Members[i].Request.Allowed = saved[i]
	}
	return ok
}

// isWhole reports whether member m asks for whole nodes.
func isWhole(m *gang.Member) bool { return m.Request.GPUs == 0 && m.Request.GPUsPerNode == 0 }

// memberIndex returns the index of g's member called name, -1 when there
// is none.
func memberIndex(g *gang.Spec, name string) int {
	for i := range g.Members {
		if g.Members[i].Name == name {
			return i
		}
	}
	return -1
}

// startCutOnPlan starts job j, whose due reservation r has its planned
// GPUs free, cut to spec (a copy its quota takes, quotaSpec) on the nodes
// of r: each member's placement is limited to its planned nodes (its
// pods take whole planned nodes, or GPUs of them). It reports whether it
// started; spec is left as it was. A gang of more than 8 members, or one
// its planned nodes do not hold cut (its own Allowed or Excluded), or
// one its quota refuses there, is placed as any start is (tryStart).
func (c *cycle) startCutOnPlan(j *jobRec, spec *gang.Spec, r *reservation) bool {
	e := c.e
	var saved [8]*bitset.BitSet
	if len(spec.Members) > len(saved) {
		return false // a gang of more members is placed as any start is
	}
	for len(e.planNodes) < len(spec.Members) {
		e.planNodes = append(e.planNodes, bitset.New(uint(e.c.NumNodes())))
	}
	for i := range spec.Members {
		m := &spec.Members[i]
		saved[i] = m.Request.Allowed
		on := e.planNodes[i].ClearAll()
		for k := range r.alloc.Members {
			if r.alloc.Members[k].Name == m.Name {
				for _, x := range r.alloc.Members[k].Assignment {
					on.Set(uint(x.Node))
				}
			}
		}
		if saved[i] != nil {
			on.InPlaceIntersection(saved[i])
		}
		m.Request.Allowed = on
	}
	res, err := e.adm.Admit(e.scratch, spec, &e.alloc)
	for i := range spec.Members {
		spec.Members[i].Request.Allowed = saved[i]
	}
	if err != nil {
		panic(fmt.Sprintf("backfill: checked job %s refused on its planned nodes: %v", j.job.ID, err))
	}
	if !res.Admitted {
		return false
	}
	c.lastRes = res
	if c.startChecked(j) {
		return true
	}
	// Refused for quota: tryStart places it as any start (and checks it
	// again), so the flag is its to set.
	c.quotaBlocked = false
	return false
}

// startChecked starts job j on e.alloc, placed on the scratch state,
// unless its queue's quota (or, for whole nodes placed above their
// leastGPUs, its weighted share: shareFits) does not take it (the scratch
// state then gives the GPUs back); it reports whether it started.
func (c *cycle) startChecked(j *jobRec) bool {
	e := c.e
	if e.quota != nil && (!e.startFits(j, &e.alloc, c.now) || !e.shareFits(j, e.alloc.GPUs())) {
		// Its queue's quota does not take the GPUs placed: the scratch
		// state gives them back (it is then as it was, contents number
		// included), and the job waits for quota (test).
		releaseOn(e.scratch, &e.alloc)
		c.quotaBlocked, c.blockedGPUs = true, e.alloc.GPUs()
		return false
	}
	// The scratch state holds the allocation too; it stays valid, but it
	// changed.
	c.started()
	c.start(j)
	return true
}

// start books waiting job j on e.alloc (already checked free) and adds it
// to the plan.
func (c *cycle) start(j *jobRec) {
	e := c.e
	if err := e.ledger.Insert(&j.job.Gang, &e.alloc); err != nil {
		panic(fmt.Sprintf("backfill: admitted job %s refused by the ledger: %v", j.job.ID, err))
	}
	j.promised, j.owed = c.now, 0 // (owed pods of an earlier run: a new start owes nothing)
	if cl := j.claim; cl != nil {
		// It was due when its victims' grace ended.
		if cl.due.Before(c.now) {
			j.promised = cl.due
		}
		cl.lent = nil // used: its lenders are owed nothing
		e.book.dropClaim(cl)
		c.invalidate()
	}
	if r := j.resv; r != nil {
		if r.start.Before(c.now) {
			j.promised = r.start
		}

		// Started where it fits now (not on its planned GPUs, or on
		// part of them, or before its planned start), it lets go of
		// the planned GPUs it does not take (letGo).
		c.letGo(r)
		c.resvChanged(j, false)
		e.book.remove(r)
		c.invalidate()
	}
	var endedHold *hold
	if h := e.book.holdOf(j); h != nil {
		// Its hold ends: a job ranked above it that it refused in this
		// walk (waiting out the hysteresis behind it, or blocked by it)
		// is tested again at once, as when a hold it refused jobs for
		// ends: the GPUs of its target it does not take (free after its
		// start) are no longer held, and on those it takes the job no
		// longer fits but for a hold. An eligible gang left without a
		// hold is tested again too (coverPlanned): one hold fewer may
		// let it take one. A hold kept before it in the walk saw its
		// target held (startOnHeld, once the job is active).
		if h.refused {
			c.reoffer = true
		}
		endedHold = h
		c.coverPlanned()
		e.book.dropHold(h)
		c.invalidate()
	}
	if j.job.TimeLimit > 0 {
		c.startedInWalk(j)
		// Its end is a new candidate time, at which a kept reservation
		// may start earlier than at any time its last search saw, so
		// upkeep searches again. (It was counted only when the job ran on
		// GPUs a reservation needs later; TestNaivePathsAgreeUnderRandomOps
		// found a reservation kept later than the reference path's after
		// a start elsewhere.) From just after that end on, the profile is
		// as it was.
		e.book.free(c.now.Add(j.job.TimeLimit + 1))
	}
	e.dequeue(j)
	c.startEstimated()
	c.startOnLoose()
	c.startOnPlanned()
	e.activate(j, c.now)
	c.startOnBlamed() // once j is active: its start may put hold mode in play (holdInPlay)
	c.startUnlimited(j)
	if endedHold != nil {
		c.startOnHeld(endedHold)
		c.heldStarted(endedHold, j)
	}
	if e.quota != nil && j.job.TimeLimit > 0 && j.late() {
		c.late = append(c.late, j) // for the reservations kept up after it (lateQuota)
	}
	j.wait, j.waitID, j.exemptRestored = Waiting{}, 0, false
	var st *Start
	c.plan.Starts, st = extend(c.plan.Starts)
	alloc := st.Allocation
	*st = Start{Job: j.job.ID, Allocation: alloc}
	e.alloc.CopyTo(&st.Allocation)
}

// extend grows s by one element, keeping the old contents of a reused slot
// (so that its buffers can be reused), and returns the new element.
func extend[T any](s []T) ([]T, *T) {
	if len(s) < cap(s) {
		s = s[:len(s)+1]
	} else {
		var zero T
		s = append(s, zero)
	}
	return s, &s[len(s)-1]
}

// report adds the overruns, the reservations and the hold to the plan.
func (e *Engine) report(plan *Plan) {
	e.prof.overruns(plan.Time, func(j *jobRec) {
		plan.Overruns = append(plan.Overruns, Overrun{Job: j.job.ID, End: j.end})
	})
	rs := append(e.cyc.due[:0], e.book.resv...)
	slices.SortFunc(rs, func(a, b *reservation) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return cmpString(a.job.job.ID, b.job.job.ID)
	})
	for _, r := range rs {
		var pr *Reservation
		plan.Reservations, pr = extend(plan.Reservations)
		alloc := pr.Allocation
		*pr = Reservation{Job: r.job.job.ID, Start: r.start, End: r.end, FirstStart: r.firstStart, Allocation: alloc}
		r.alloc.CopyTo(&pr.Allocation)
	}
	for _, h := range e.book.holds {
		plan.Holds = append(plan.Holds, *e.holdStatus(h))
	}
	plan.HeldGPUSeconds = e.heldGPUSeconds
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
