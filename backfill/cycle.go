package backfill

import (
	"fmt"
	"github.com/phalanx-sched/phalanx/placement"
	"math/bits"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// Schedule runs one scheduling cycle at time now and returns the plan.
//
// The cycle, top to bottom:
//
//  1. Charge fair-share usage for running jobs up to now; account the GPUs
//     held by hold mode since the last cycle.
//  2. Order pending jobs by multifactor priority (package fairshare).
//  3. Walk them in that order (jobs holding reservations or held GPUs
//     always; others within the MaxJobsTested window):
//     - start the job now if its gang can be admitted on the free GPUs
//     minus those reserved for other jobs in a window overlapping its own
//     (now to now + time limit; forever without a limit) and minus held
//     GPUs: backfill that never delays a reservation;
//     - else, for a job with a reservation, keep it (moving it earlier if
//     the profile allows) or re-plan it if its plan broke;
//     - else, while fewer than ReservationDepth reservations exist, find
//     the earliest time in the availability profile (the free state plus
//     the GPUs running jobs return at start + time limit, in end-time
//     order) at which the gang can be admitted with the same
//     topology-aware placement, and reserve those GPUs from then;
//     - else, when no such time exists because running jobs have no time
//     limit, hold GPUs for the job as they free up (hold mode);
//     - else record why it waits.
//  4. With Strict, the first job that cannot start stops the walk.
//
// The starts are booked in the engine before Schedule returns; the caller
// launches them and reports back.
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
	if err := e.tick(now); err != nil {
		return err
	}
	plan := p
	*plan = Plan{Time: now, Starts: plan.Starts[:0], Reservations: plan.Reservations[:0], Waiting: plan.Waiting[:0]}

	// 1. Usage and hold accounting.
	e.chargeAll(now)
	if e.hold != nil && !e.lastCycle.IsZero() {
		e.heldGPUSeconds += float64(e.hold.held) * now.Sub(e.lastCycle).Seconds()
	}
	e.lastCycle = now
	if h := e.hold; h != nil && now.Sub(h.since) >= e.cfg.Hold.MaxTime {
		h.job.holdExpiry = now.Add(e.cfg.Hold.MaxTime)
		e.hold = nil
	}

	// 2. Priority order.
	e.fsJobs = e.fsJobs[:0]
	for _, j := range e.pending {
		e.fsJobs = append(e.fsJobs, e.fsJob(j))
	}
	var err error
	if e.fsSnap, err = e.tree.Snapshot(now, e.fsSnap); err != nil {
		return err
	}
	if e.ranked, err = e.fsSnap.Prioritize(e.fsJobs, e.ranked[:0]); err != nil {
		return err
	}
	// Snapshot the queue in priority order: starts change e.pending.
	order := slices.Grow(e.order[:0], len(e.ranked))[:len(e.ranked)]
	for i, r := range e.ranked {
		order[i] = e.pending[r.Index]
	}
	e.order = order

	// The MaxJobsTested window, in ranks, resuming at the cursor.
	n := len(order)
	winStart, winLen := 0, n
	if b := e.cfg.MaxJobsTested; b > 0 && b < n {
		winStart, winLen = e.cursor%n, b
		e.cursor = (winStart + b) % n
	} else {
		e.cursor = 0
	}
	inWindow := func(rank int) bool {
		return (rank-winStart+n)%n < winLen
	}

	c := cycle{e: e, now: now, plan: plan}
	c.invalidate()
	strictBlocker := ""
	for rank, j := range order {
		w := Waiting{Job: j.job.ID, Priority: e.ranked[rank].Priority}
		if e.cfg.Strict && strictBlocker != "" {
			w.Code, w.Blocker = WaitPriority, strictBlocker
			plan.Waiting = append(plan.Waiting, w)
			continue
		}
		if j.resv == nil && (e.hold == nil || e.hold.job != j) && !inWindow(rank) {
			w.Code = WaitPriority
			plan.Waiting = append(plan.Waiting, w)
			continue
		}
		plan.Tested++
		key, cacheable := c.shapeKey(j)
		if cacheable {
			c.prepareScratch(j)
			if hit, ok := c.cached(key); ok {
				// A job of the same shape failed on this very scratch
				// state: this one fails the same way.
				hit.Job, hit.Priority = w.Job, w.Priority
				plan.Waiting = append(plan.Waiting, hit)
				if e.cfg.Strict {
					strictBlocker = j.job.ID
				}
				continue
			}
		}
		if c.tryStart(j) {
			continue
		}
		c.wait(j, &w)
		plan.Waiting = append(plan.Waiting, w)
		if cacheable && j.resv == nil && (e.hold == nil || e.hold.job != j) {
			c.remember(key, w)
		}
		if e.cfg.Strict {
			strictBlocker = j.job.ID
		}
	}

	// Report reservations by planned start, then job ID.
	rs := slices.Clone(e.resv)
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
	if h := e.hold; h != nil {
		plan.Hold = &HoldStatus{Job: h.job.job.ID, Since: h.since, GPUs: h.held, Target: h.target.GPUs()}
	}
	plan.HeldGPUSeconds = e.heldGPUSeconds
	return nil
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

// cycle is the state of one Schedule call.
type cycle struct {
	e    *Engine
	now  time.Time
	plan *Plan
	// The scratch state is the free state minus the GPUs of blockedRes
	// and (when holdBlocked) the held GPUs.
	blockedRes  []*reservation
	holdBlocked bool
	prefix      int          // reservations by start considered
	own         *reservation // the job's own reservation, not blocked
	valid       bool
	lastRes     gang.Result
	// Running jobs' ends in order (refreshed when starts add ends).
	endsBuf      []endItem
	endsDirty    bool
	times        []time.Time
	timesVersion uint64
	withKeep     []time.Time
	// kept reports that the last search kept the reservation unchanged.
	kept bool
	// gen counts changes of the scratch state; failures is a cache of
	// the outcomes of jobs that failed on scratch generation failGen.
	gen      uint64
	failGen  uint64
	failures []failure
}

type failure struct {
	key placement.Request
	min int
	w   Waiting
}

// shapeKey returns the cache key of a job whose outcome depends only on its
// shape and the scratch state: one member, no node sets, no co-location,
// no patience, and no chance of a reservation or hold this cycle (those
// depend on the job's own history).
func (c *cycle) shapeKey(j *jobRec) (failure, bool) {
	g := &j.job.Gang
	if len(g.Members) != 1 || g.Colocate.Level != "" || j.tight != nil || j.resv != nil {
		return failure{}, false
	}
	r := g.Members[0].Request
	if r.Allowed != nil || r.Excluded != nil {
		return failure{}, false
	}
	e := c.e
	if e.hold != nil && e.hold.job == j {
		return failure{}, false
	}
	d := e.cfg.ReservationDepth
	if !e.cfg.Strict && d != 0 && (d == Conservative || len(e.resv) < d) {
		return failure{}, false
	}
	return failure{key: r, min: g.Members[0].Min}, true
}

func (c *cycle) cached(k failure) (Waiting, bool) {
	if c.failGen != c.gen {
		return Waiting{}, false
	}
	for i := range c.failures {
		if f := &c.failures[i]; f.key == k.key && f.min == k.min {
			return f.w, true
		}
	}
	return Waiting{}, false
}

func (c *cycle) remember(k failure, w Waiting) {
	if c.failGen != c.gen {
		c.failures = c.failures[:0]
		c.failGen = c.gen
	}
	if len(c.failures) < 64 {
		k.w = w
		c.failures = append(c.failures, k)
	}
}

func (c *cycle) invalidate() { c.valid = false; c.endsDirty = true }

// limitOf returns the job's time limit (0: none).
func limitOf(j *jobRec) time.Duration { return j.job.TimeLimit }

// overlapsNow reports whether reservation r overlaps the window of job j
// starting now.
func (c *cycle) overlaps(r *reservation, j *jobRec, t time.Time) bool {
	if r.job == j {
		return false
	}
	if !r.end.IsZero() && !r.end.After(t) {
		return false
	}
	l := limitOf(j)
	return l == 0 || r.start.Before(t.Add(l))
}

// prepareScratch makes the scratch state the free state minus what job j
// may not use now.
func (c *cycle) prepareScratch(j *jobRec) {
	e := c.e
	holdBlocked := e.hold != nil && e.hold.job != j
	// The reservations overlapping [now, now+limit) are those starting
	// before now+limit (all of them without a limit): a prefix of the
	// reservations by start.
	byStart, _ := c.sortedReservations()
	k := len(byStart)
	if l := limitOf(j); l > 0 {
		lim := c.now.Add(l)
		k, _ = slices.BinarySearchFunc(byStart, lim, func(r *reservation, t time.Time) int {
			if r.start.Before(t) {
				return -1
			}
			return 1
		})
	}
	if c.valid && holdBlocked == c.holdBlocked && k == c.prefix && j.resv == c.own {
		return
	}
	c.blockedRes = c.blockedRes[:0]
	if err := e.ledger.State().CopyInto(e.scratch); err != nil {
		panic(err)
	}
	c.gen++
	for _, r := range byStart[:k] {
		if c.overlaps(r, j, c.now) {
			c.blockedRes = append(c.blockedRes, r)
			block(e.scratch, &r.alloc)
		}
	}
	if holdBlocked {
		block(e.scratch, &e.hold.target)
	}
	c.holdBlocked, c.prefix, c.own = holdBlocked, k, j.resv
	c.valid = true
}

// block allocates on s the free GPUs of a, skipping nodes that are down.
func block(s *topology.State, a *gang.Allocation) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			m := x.GPUs & s.Free(int(x.Node))
			if m == 0 || s.Status(int(x.Node)) == topology.Down {
				continue
			}
			if err := s.Allocate([]topology.NodeAlloc{{Node: x.Node, GPUs: m}}); err != nil {
				panic(fmt.Sprintf("backfill: blocking free GPUs failed: %v", err))
			}
		}
	}
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
	spec, _ := c.specFor(j)
	res, err := e.adm.Admit(e.scratch, spec, &e.alloc)
	if err != nil {
		panic(fmt.Sprintf("backfill: checked job %s refused: %v", j.job.ID, err))
	}
	c.lastRes = res
	if !res.Admitted {
		return false
	}
	if err := e.ledger.Insert(&j.job.Gang, &e.alloc); err != nil {
		panic(fmt.Sprintf("backfill: admitted job %s refused by the ledger: %v", j.job.ID, err))
	}
	// The scratch state holds the allocation too; it stays valid, but it
	// changed.
	c.gen++
	if i := slices.Index(e.pending, j); i >= 0 {
		e.pending = slices.Delete(e.pending, i, i+1)
	}
	if j.resv != nil {
		e.dropReservation(j.resv)
		c.valid = false
	}
	if e.hold != nil && e.hold.job == j {
		e.hold = nil
		c.valid = false
	}
	j.state = running
	j.lastCharge = c.now
	j.alloc, _ = e.ledger.Get(j.job.ID)
	j.used = j.alloc.GPUs()
	e.setEnd(j, c.now)
	e.running = append(e.running, j)
	c.endsDirty = true
	var st *Start
	c.plan.Starts, st = extend(c.plan.Starts)
	alloc := st.Allocation
	*st = Start{Job: j.job.ID, Allocation: alloc}
	e.alloc.CopyTo(&st.Allocation)
	return true
}

// wait decides what a job that cannot start now gets: a reservation, a
// hold, or a reason.
func (c *cycle) wait(j *jobRec, w *Waiting) {
	e := c.e
	spec, patient := c.specFor(j)
	failed := c.lastRes
	if patient {
		// Would the job fit now without its patience?
		res, _ := e.adm.Admit(e.scratch, &j.job.Gang, &e.alloc)
		if res.Admitted {
			e.releaseOn(e.scratch, &e.alloc)
			w.Code, w.Until = WaitTopology, j.job.Submit.Add(j.job.Patience.Wait)
			w.Member, w.Reason = failed.Member, failed.Reason
			return
		}
	}
	if h := e.hold; h != nil && h.job == j {
		h.held = c.countFree(&h.target)
		w.Code, w.Until = WaitHeld, h.since
		return
	}
	depth := e.cfg.ReservationDepth
	canReserve := !e.cfg.Strict && depth != 0
	if j.resv != nil {
		if c.keepReservation(j, spec) {
			w.Code, w.Until = WaitReserved, j.resv.start
			return
		}
	} else if canReserve && (depth == Conservative || len(e.resv) < depth) {
		if t, ok := c.search(j, spec, time.Time{}); ok {
			r := &reservation{job: j, start: t, firstStart: t}
			if l := limitOf(j); l > 0 {
				r.end = t.Add(l)
			}
			e.alloc.CopyTo(&r.alloc)
			j.resv = r
			e.resv = append(e.resv, r)
			e.resvVersion++
			c.valid = false
			w.Code, w.Until = WaitReserved, t
			return
		}
		if c.startHold(j, spec) {
			w.Code, w.Until = WaitHeld, c.now
			return
		}
	}
	c.classify(j, spec, failed, w)
}

// classify sets a waiting job's reason from its failed admission.
func (c *cycle) classify(j *jobRec, spec *gang.Spec, failed gang.Result, w *Waiting) {
	e := c.e
	w.Code, w.Member, w.Reason = WaitResources, failed.Member, failed.Reason
	if failed.ColocationLevel != "" {
		w.Member = ""
		w.Reason.Code = 0
		w.Detail = failed.String()
	}
	if len(spec.Members) > 1 {
		w.Code = WaitGang
	}
	if len(c.blockedRes) == 0 && !c.holdBlocked {
		return
	}
	// Would it fit without the reservations and holds of others?
	s := e.ledger.State()
	res, _ := e.adm.Admit(s, spec, &e.alloc)
	if !res.Admitted {
		return
	}
	e.releaseOn(s, &e.alloc)
	for _, r := range c.blockedRes {
		if intersects(&e.alloc, &r.alloc) {
			w.Code, w.Blocker, w.Until = WaitReservation, r.job.job.ID, r.start
			return
		}
	}
	if c.holdBlocked && intersects(&e.alloc, &e.hold.target) {
		w.Code, w.Blocker, w.Until = WaitReservation, e.hold.job.job.ID, e.hold.since
	}
}

func intersects(a, b *gang.Allocation) bool {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			for k := range b.Members {
				for _, y := range b.Members[k].Assignment {
					if x.Node == y.Node && x.GPUs&y.GPUs != 0 {
						return true
					}
				}
			}
		}
	}
	return false
}

// countFree counts the GPUs of a that are free now.
func (c *cycle) countFree(a *gang.Allocation) int {
	s := c.e.ledger.State()
	n := 0
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if s.Status(int(x.Node)) != topology.Down {
				n += bits.OnesCount64(x.GPUs & s.Free(int(x.Node)))
			}
		}
	}
	return n
}

// refreshEnds collects running jobs' known ends after now, in order.
func (c *cycle) refreshEnds() {
	if !c.endsDirty {
		return
	}
	c.endsBuf = c.endsBuf[:0]
	c.e.ends.AscendGreaterOrEqual(endItem{end: c.now.Add(1)}, func(it endItem) bool {
		c.endsBuf = append(c.endsBuf, it)
		return true
	})
	c.endsDirty = false
}

// candidateTimes returns the times after now at which GPUs return: running
// jobs' ends and reservations' ends, sorted and distinct; cached until
// starts or reservations change them.
func (c *cycle) candidateTimes() []time.Time {
	e := c.e
	if !c.endsDirty && c.timesVersion == e.resvVersion {
		return c.times
	}
	c.refreshEnds()
	ts := c.times[:0]
	for _, it := range c.endsBuf {
		ts = append(ts, it.end)
	}
	for _, r := range e.resv {
		if !r.end.IsZero() && r.end.After(c.now) {
			ts = append(ts, r.end)
		}
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	ts = slices.CompactFunc(ts, func(a, b time.Time) bool { return a.Equal(b) })
	c.times, c.timesVersion = ts, e.resvVersion
	return ts
}

// search finds the earliest time after now at which job j (with spec) can
// be admitted in the availability profile, leaving the placement in
// e.alloc. With keep set, the job's reservation is kept as soon as the
// search reaches its start and its planned GPUs are all available then; the
// search then reports the reservation's start. A zero keep searches
// without one.
func (c *cycle) search(j *jobRec, spec *gang.Spec, keep time.Time) (time.Time, bool) {
	e := c.e
	c.kept = false
	ts := c.candidateTimes()
	if !keep.IsZero() && keep.After(c.now) {
		// The reservation's own start is a candidate too.
		if i, found := slices.BinarySearchFunc(ts, keep, func(a, b time.Time) int { return a.Compare(b) }); !found {
			c.withKeep = append(append(append(c.withKeep[:0], ts[:i]...), keep), ts[i:]...)
			ts = c.withKeep
		}
	}
	if err := e.ledger.State().CopyInto(e.probe); err != nil {
		panic(err)
	}
	// Blocks are kept incrementally as the time advances: reservations
	// join when their start comes within the job's window and leave when
	// they end; bmask is the union of the GPUs of those active (and of the
	// hold), taken the part of them allocated on the probe because of it.
	e.resetBlocks()
	byStart, byEnd := c.sortedReservations()
	for _, r := range e.resv {
		r.active = false
	}
	if e.hold != nil && e.hold.job != j {
		e.addBlock(&e.hold.target)
	}
	l := limitOf(j)
	need := spec.MinGPUs(e.c)
	next, add, rem := 0, 0, 0
	for _, t := range ts {
		for next < len(c.endsBuf) && !c.endsBuf[next].end.After(t) {
			if a := c.endsBuf[next].j.alloc; a != nil {
				e.releaseUnblocked(a)
			}
			next++
		}
		for add < len(byStart) && (l == 0 || byStart[add].start.Before(t.Add(l))) {
			r := byStart[add]
			add++
			if r.job == j || !r.end.IsZero() && !r.end.After(t) {
				continue
			}
			r.active = true
			e.addBlock(&r.alloc)
		}
		for rem < len(byEnd) && !byEnd[rem].end.After(t) {
			r := byEnd[rem]
			rem++
			if r.active {
				r.active = false
				e.removeBlock(&r.alloc)
			}
		}
		keepCheck := !keep.IsZero() && !t.Before(keep)
		if keepCheck && c.allFree(e.probe, &j.resv.alloc) {
			c.kept = t.Equal(j.resv.start)
			if !c.kept {
				j.resv.alloc.CopyTo(&e.alloc)
			}
			return t, true
		}
		if e.probe.FreeGPUs() < need || !mayFit(e.probe, spec) {
			continue
		}
		res, err := e.adm.Admit(e.probe, spec, &e.alloc)
		if err != nil {
			panic(err)
		}
		if res.Admitted {
			e.releaseOn(e.probe, &e.alloc)
			return t, true
		}
	}
	return time.Time{}, false
}

// sortedReservations returns the reservations by start and, those with an
// end, by end; cached until the reservations change.
func (c *cycle) sortedReservations() (byStart, byEnd []*reservation) {
	e := c.e
	if e.sortedVersion == e.resvVersion {
		return e.byStart, e.byEnd
	}
	e.byStart = append(e.byStart[:0], e.resv...)
	slices.SortStableFunc(e.byStart, func(a, b *reservation) int { return a.start.Compare(b.start) })
	e.byEnd = e.byEnd[:0]
	for _, r := range e.resv {
		if !r.end.IsZero() {
			e.byEnd = append(e.byEnd, r)
		}
	}
	slices.SortStableFunc(e.byEnd, func(a, b *reservation) int { return a.end.Compare(b.end) })
	e.sortedVersion = e.resvVersion
	return e.byStart, e.byEnd
}

// resetBlocks clears the per-node block bookkeeping of the last search.
func (e *Engine) resetBlocks() {
	g := e.c.MaxNodeGPUs()
	for _, n := range e.touched {
		clear(e.bcnt[int(n)*g : int(n+1)*g])
		e.bmask[n], e.taken[n] = 0, 0
		e.isTouched[n] = false
	}
	e.touched = e.touched[:0]
}

// addBlock adds an allocation's GPUs to the blocks, taking those that are
// free on the probe.
func (e *Engine) addBlock(a *gang.Allocation) {
	g := e.c.MaxNodeGPUs()
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			n := x.Node
			if !e.isTouched[n] {
				e.isTouched[n] = true
				e.touched = append(e.touched, n)
			}
			var fresh uint64
			for m := x.GPUs; m != 0; m &= m - 1 {
				k := int(n)*g + bitIndex(m)
				if e.bcnt[k] == 0 {
					fresh |= m & -m
				}
				e.bcnt[k]++
			}
			e.bmask[n] |= fresh
			if b := fresh & e.probe.Free(int(n)); b != 0 && e.probe.Status(int(n)) != topology.Down {
				if err := e.probe.Allocate([]topology.NodeAlloc{{Node: n, GPUs: b}}); err != nil {
					panic(fmt.Sprintf("backfill: blocking failed: %v", err))
				}
				e.taken[n] |= b
			}
		}
	}
}

// removeBlock removes an allocation's GPUs from the blocks, returning to
// the probe those no other active block covers.
func (e *Engine) removeBlock(a *gang.Allocation) {
	g := e.c.MaxNodeGPUs()
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			n := x.Node
			var gone uint64
			for m := x.GPUs; m != 0; m &= m - 1 {
				k := int(n)*g + bitIndex(m)
				e.bcnt[k]--
				if e.bcnt[k] == 0 {
					gone |= m & -m
				}
			}
			e.bmask[n] &^= gone
			if u := e.taken[n] & gone; u != 0 {
				if err := e.probe.Release([]topology.NodeAlloc{{Node: n, GPUs: u}}); err != nil {
					panic(fmt.Sprintf("backfill: unblocking failed: %v", err))
				}
				e.taken[n] &^= u
			}
		}
	}
}

func bitIndex(m uint64) int { return bits.TrailingZeros64(m) }

// releaseUnblocked returns a running job's GPUs to the probe, except those
// currently blocked, which stay allocated as blocks.
func (e *Engine) releaseUnblocked(a *gang.Allocation) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			n := x.Node
			keep := x.GPUs & e.bmask[n]
			if free := x.GPUs &^ keep; free != 0 {
				if err := e.probe.Release([]topology.NodeAlloc{{Node: n, GPUs: free}}); err != nil {
					panic(fmt.Sprintf("backfill: profile release failed: %v", err))
				}
			}
			e.taken[n] |= keep
		}
	}
}

// allFree reports whether every GPU of a is free and schedulable on s.
func (c *cycle) allFree(s *topology.State, a *gang.Allocation) bool {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if s.Status(int(x.Node)) != topology.Up || x.GPUs&^s.Free(int(x.Node)) != 0 {
				return false
			}
		}
	}
	return true
}

// keepReservation keeps job j's reservation, moved earlier when the
// profile now allows it, or re-plans it when its plan broke (a node failed
// or a running job overran its end). It reports whether j still holds a
// reservation.
func (c *cycle) keepReservation(j *jobRec, spec *gang.Spec) bool {
	e := c.e
	r := j.resv
	keep := r.start
	if !keep.After(c.now) {
		// Its start has come and it could not start: its plan broke.
		keep = time.Time{}
	}
	t, ok := c.search(j, spec, keep)
	if !ok {
		e.dropReservation(r)
		c.valid = false
		return false
	}
	if c.kept {
		return true // unchanged
	}
	r.start = t
	if l := limitOf(j); l > 0 {
		r.end = t.Add(l)
	}
	e.alloc.CopyTo(&r.alloc)
	e.resvVersion++
	c.valid = false
	return true
}

// startHold starts hold mode for job j when its reservation failed only
// because running jobs have no known end: it fits once every running job
// has ended, it is within the cap, and no other job is held.
func (c *cycle) startHold(j *jobRec, spec *gang.Spec) bool {
	e := c.e
	h := e.cfg.Hold
	if h.MaxShare <= 0 || e.hold != nil || c.now.Before(j.holdExpiry) {
		return false
	}
	if float64(spec.GPUs(e.c)) > h.MaxShare*float64(e.c.TotalGPUs()) {
		return false
	}
	// The optimistic state: every running job gone, reservations blocked.
	if err := e.ledger.State().CopyInto(e.probe); err != nil {
		panic(err)
	}
	for _, r := range e.running {
		if r.alloc != nil {
			e.releaseOn(e.probe, r.alloc)
		}
	}
	for _, r := range e.resv {
		block(e.probe, &r.alloc)
	}
	res, err := e.adm.Admit(e.probe, spec, &e.alloc)
	if err != nil {
		panic(err)
	}
	if !res.Admitted {
		return false
	}
	hd := &hold{job: j, since: c.now}
	e.alloc.CopyTo(&hd.target)
	e.hold = hd
	hd.held = c.countFree(&hd.target)
	c.valid = false
	return true
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

// mayFit is a cheap necessary condition for admitting spec on s: every
// node-shaped member finds enough schedulable nodes with its per-node GPUs
// free (members are checked separately, so it may pass when the gang does
// not fit together).
func mayFit(s *topology.State, spec *gang.Spec) bool {
	maxG := s.Cluster().MaxNodeGPUs()
	for i := range spec.Members {
		m := &spec.Members[i]
		r := &m.Request
		if r.GPUs > 0 {
			continue
		}
		g := r.GPUsPerNode
		if g == 0 {
			g = maxG
		}
		if g > maxG {
			return false
		}
		need := r.Nodes
		if m.Min > 0 && m.Min < need {
			need = m.Min
		}
		if int(s.Avail(g).Count()) < need {
			return false
		}
	}
	return true
}
