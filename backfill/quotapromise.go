package backfill

import (
	"fmt"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
)

// Reservations keep their quota room.
//
// A reservation's planned start is a promise. Under quotas, GPUs are not
// the only thing a job started in front of it can take: a job of the same
// queue, or of a queue that shares a limit with it, can take the quota
// room the reserved job needs, so that at its planned start it waits for
// quota and gives its reservation up (CauseQuota). So a job that would
// start now (or grow), while others hold reservations, is checked against
// its queue's quota with the GPUs of every other reservation whose window
// overlaps its own (from its start to its time limit's end; without a
// limit, to the end of time; a running job growing, to its limit's end)
// counted as in use: it starts
// only if they would all fit together. Other queues' reservations count
// only when it would borrow, its own queue's reservations counted: what a
// queue is guaranteed is its own, and a reservation of another queue that
// would borrow it is not kept from it. For the same reason a job within
// its guarantee passes where only a parent's or the cluster's pool has no
// room (others borrow it, and reclaim gets it in). A reservation for a
// job that may not be preempted (it runs only within its queue's
// guarantee: quotaNoBorrow) keeps that room from the others of its queue:
// one that would take the queue past its guarantee beside it does not
// start (quotaKeepOwn, keptOwn), even where borrowing would let it; one
// that would start after it has started does, and an elastic one counts
// at its minimum (it starts within the guarantee). A due one not started
// yet (a late host, a job past its limit on its GPUs) counts even at the
// planned start of a reservation due after it, which otherwise counts
// none.
// The counts in use are those of now,
// which is conservative: a job that ends before a reservation starts still
// counts against it.
//
// A reservation made, moved earlier, or turned from a hold is checked the
// same way at its planned start t, on the counts of t: the GPUs of the
// running jobs whose time limit ends by t are taken out (and those of
// claims whose job, started when due, ends by t), the overlapping
// reservations of others counted in; an elastic gang at its minimum (it
// starts cut to what its quota takes); whether the job is within its
// guarantee is read on those counts too. A reserved job's own planned
// start, looked at ahead of time (the gate's check of its start, lateQuota),
// counts the reservations of others that start before it, which run by
// then (an elastic gang's at its minimum: at its start it counts the
// reservations of others, so it starts above its minimum only where they
// leave room); its reservation was checked with them, and a late start
// since may have taken their room. A job refused a reservation so
// waits for quota without a planned start (no later start is searched)
// and keeps, for the cycle, the slot it would have taken, so that no job
// ranked below reserves the room it needs (a held job holds on); a reservation refused an
// earlier start keeps its start (or moves as late as it must, as when no
// earlier start is found). A reserved job that could start before its
// planned start is checked as a job starting now; at its planned start
// it is checked on the counts alone (its promise). A reserved job whose
// queue's limits have no room for it now but will at its planned start
// (checked as above) keeps its reservation and does not start early,
// whatever its weighted share now (read when it is due); one within its
// limits now but over its weighted share waits for quota and gives it up,
// as any job over its share waits (keeping it would hold GPUs for a job
// the shares may keep waiting at its start).
//
// Late starts (upkeep). A job that started late runs past its planned
// end: a reservation whose start it still overlaps, though on time it
// would have ended by then, and whose queue's quota has no room there,
// moves to its end (lateQuota; the GPUs a search finds before it are
// passed over), blamed on it (CauseLateStart). A job that starts late in
// the walk, after keepBook kept such a reservation up, takes that room
// too: the gate does not give the reservation up for it (lateTaker), and
// the next cycle moves it. A reservation a late start pushes later to
// a fresh placement, before the time it could keep its planned GPUs, is
// checked there (upkeep): where its queue's quota has no room for it
// beside the reservations of others (one the late start pushed into its
// window), it moves instead to the time it can keep its planned GPUs.
// One that cannot keep them (a job without a time limit holds one) moves
// to the fresh placement unchecked (no workload of 10,000 of each of the
// two late-host quota property tests reached that case). One pushed later on its planned GPUs is not
// checked again at its new start (such a check, with lateQuota in place,
// was never decisive over 10,000 workloads of
// TestQuotaPropertiesLateHost, and was removed).
// A due reservation that keepBook passed over because its queue's quota
// had no room, and that has room later in the cycle (a reclaim or a
// preemption freed some), starts on its planned GPUs when they are free
// (tryStart); an elastic gang its quota cuts starts on its planned nodes
// (startCutOnPlan). A due elastic gang, whose quota room was checked at
// its minimum (its reservation holds GPUs for its full size), starts
// above it only with the reservations of others it would run beside
// counted (countAt, keepBook).
//
// What can still drop a reservation for quota: a job that runs past its
// time limit (the limit said it would be gone), the weighted shares (a
// queue waiting below its share holds others back, and the shares move
// with every queue's demand), lending limits (a queue that lends no more
// than a part of its guarantee keeps the rest idle as its own use falls,
// which takes room from queues that borrow), a queue using its guarantee
// that a reservation of another queue would have borrowed (the reason
// then says that the other queues under the parent where the check
// binds use their guarantees: quotaState.guarded), the cluster's
// pool (what the top queues lend one another: the check of it is not
// made where the GPUs counted, in use now and reserved, exceed the
// cluster, which they often do, many of those in use being freed by the
// reservations' starts; a check that made it kept jobs from starting with
// one queue without limits, where no quota binds), and reclaims and
// preemption claims, which take quota to give a guarantee or a higher
// class its GPUs. A reclaim does not take the room under its own queue's
// limits (its maximum, its guarantee plus borrowing limit) that the
// reservations of its queue for jobs of its class or a higher one, whose
// window overlaps its run, need at their planned starts, read on the
// counts each one's own check reads there (reclaimTakesPromise,
// roomTakenAt: the queue's jobs that end before it do not hold a reclaim
// back): it would jump them as a plain start may not; one of a higher
// class may, and the limits of the queues above it are not read (its
// victims may free room there).

// countAt sets the quota counts to what job j, starting at from with g
// GPUs, must fit into (see above), and reports whether it changed them
// (uncount undoes it): with ended and from after now (the engine's time),
// the running jobs whose limit ends by from taken out, and the claims
// whose job, started when due (or now, when later), ends by from (a
// later start is a late start); the reservations of
// others whose window overlaps j's counted in: those of j's own queue,
// and those of other queues when j would borrow with its own queue's
// counted (a job within its own queue's guarantee is not held back for
// another queue's reservations: what a queue is guaranteed is its own).
// j's own reservation is never counted; a job starting at its own
// reservation's planned start or later counts, up to its gang's minimum,
// when from is now (its promise: the counts alone) only the due ones of
// its queue for jobs that cannot be preempted, due before it (they go
// first: keptOwn),
// and those that
// start before from when from is later (they run by then), an elastic
// gang's at its minimum (countedGPUs); above its minimum (an elastic
// gang's quota room is checked at its minimum) it counts them as any
// start does.
func (e *Engine) countAt(j *jobRec, g int, from time.Time, ended bool) bool {
	s := e.quota
	if s == nil || len(e.book.resv) == 0 && !ended {
		return false
	}
	end := MaxTime
	switch {
	case j.phase != StatePending:
		if !j.end.IsZero() {
			end = j.end
		}
	case j.job.TimeLimit > 0:
		end = from.Add(j.job.TimeLimit)
	}
	gone := e.endedBy[:0]
	if ended && from.After(e.last) {
		// Grown at once to the most it can hold: appends one at a time
		// grew it by doubling, several allocations in an engine's first
		// cycles (a restored engine's first cycle among them).
		gone = slices.Grow(gone, len(e.jobs.running)+len(e.book.claims))
		for _, o := range e.jobs.running {
			if o.counted > 0 && !o.end.IsZero() && !o.end.After(from) {
				gone = append(gone, o)
			}
		}
		for _, cl := range e.book.claims {
			// A claim's job runs from its due start (a later start is
			// a late start: lateQuota).
			if o := cl.job; o != j && o.counted > 0 && o.job.TimeLimit > 0 && !later(cl.due, e.last).Add(o.job.TimeLimit).After(from) {
				gone = append(gone, o)
			}
		}
	}
	e.promiseGen = s.gen
	for _, o := range gone {
		s.add(o.queue, -o.counted)
	}
	rs := e.promised[:0]
	all := j.resv == nil || j.resv.start.After(from) || g > j.minGPUs
	ahead := all || from.After(e.last)
	// Its own queue's first: within its guarantee at from (the counts of
	// then, its queue's reservations in them)? Else the reservations of
	// other queues count too. At its own planned start now, only the due
	// ones of its queue for jobs that cannot be preempted, due before it
	// (keptOwn; two such jobs due do not each wait for the other: a review
	// found them waiting forever).
	own := g
	for _, r := range e.book.resv {
		if r.job.queue == j.queue && e.overlaps(j, r, from, end, all) && (ahead || !e.mayBorrow(r.job) && r.start.Before(j.resv.start)) {
			rs = append(rs, r)
			own += e.countedGPUs(r, all)
		}
	}
	if ahead {
		if !s.entitled(j.queue, own) {
			for _, r := range e.book.resv {
				if r.job.queue != j.queue && e.overlaps(j, r, from, end, all) {
					rs = append(rs, r)
				}
			}
		}
	}
	e.promised, e.endedBy = rs, gone
	for _, r := range rs {
		r.counted = e.countedGPUs(r, all)
		s.add(r.job.queue, r.counted)
	}
	if len(rs) == 0 && len(gone) == 0 {
		s.gen = e.promiseGen
		return false
	}
	return true
}

// overlaps reports whether countAt counts reservation r, of another job
// than j, for j's window [from, end): r's job has not started and r's
// window overlaps it; unless all, r starts before from (at j's own
// planned start, the reservations before it, which run by then).
func (e *Engine) overlaps(j *jobRec, r *reservation, from, end time.Time, all bool) bool {
	return r.job != j && r.job.counted == 0 && r.start.Before(end) && (r.end.IsZero() || r.end.After(from)) &&
		(all || r.start.Before(from))
}

// countedGPUs returns the GPUs countAt counts for reservation r: its
// placement's, or, unless all (at a job's own planned start, the
// reservations before it), an elastic gang's minimum when smaller: its
// quota room was kept at its minimum, and at its start it counts the
// reservations of others it would run beside (keepBook), so that it
// starts above it only where they leave room.
func (e *Engine) countedGPUs(r *reservation, all bool) int {
	if all {
		return r.alloc.GPUs()
	}
	return e.minGPUsOf(r)
}

// minGPUsOf returns reservation r's GPUs at its gang's minimum: its
// placement's, or an elastic gang's minimum when smaller (its quota room
// is kept at that size).
func (e *Engine) minGPUsOf(r *reservation) int {
	return min(r.alloc.GPUs(), r.job.minGPUs)
}

// roomTakenAt reports whether g GPUs of job j (a claim's), running at
// reservation r's planned start (at now when r is due), leave r no room
// there under its queue's own limits (its maximum, its guarantee plus
// borrowing limit), on the counts r's own promise check reads there
// (countAt for r's job at its start, at its gang's minimum, the jobs
// ended by then taken out): r's GPUs and g counted beside them, a
// reservation of j's own that runs by then counted once (j's run
// replaces it). The limits above the leaf are not read.
func (e *Engine) roomTakenAt(r *reservation, j *jobRec, g int, now time.Time) bool {
	s, q := e.quota, r.job.queue
	n := e.minGPUsOf(r) + g
	counted := e.countAt(r.job, e.minGPUsOf(r), later(r.start, now), true)
	if counted {
		for _, x := range e.promised {
			if x.job == j {
				n -= x.counted
			}
		}
	}
	taken := s.used[q]+n > s.max[q] || s.eff[q]+n > s.ceil[q]
	if counted {
		e.uncount()
	}
	return taken
}

// uncount undoes countAt. The counts after both are the counts before
// (they depend only on each queue's total), and so is their generation.
func (e *Engine) uncount() {
	s := e.quota
	for i := len(e.promised) - 1; i >= 0; i-- {
		r := e.promised[i]
		s.add(r.job.queue, -r.counted)
	}
	for i := len(e.endedBy) - 1; i >= 0; i-- {
		o := e.endedBy[i]
		s.add(o.queue, o.counted)
	}
	s.gen = e.promiseGen
	e.promised, e.endedBy = e.promised[:0], e.endedBy[:0]
}

// promiseCheck checks g more GPUs of job j starting at from against its
// queue's quota on the counts countAt sets. The cluster's own limit binds
// only where the GPUs counted leave room (quotaState.check, not strict):
// the reserved GPUs are counted beside the GPUs in use now, many of which
// will have been freed by then, and where the GPUs go is the
// reservations' business; what is checked is the queues' limits.
// When they leave no room, it returns the check's outcome, the
// reservation it blames (the earliest under the queue where the check
// binds, else the first counted; nil when none was counted) and, with
// explain, the reason; otherwise ok.
func (e *Engine) promiseCheck(j *jobRec, g int, explain bool, from time.Time) (qc quotaCheck, by *reservation, why string, ok bool) {
	s := e.quota
	// The counts of now first; for a later start, the running jobs that
	// end by then are taken out (a pass over them) only when those leave
	// no room: taking use out never takes room from a queue's limits
	// (lift is monotone in use). It can from the cluster's pool, whose
	// check is skipped while the GPUs counted exceed the cluster; the
	// pool is not promised (see above).
	counted, ended := false, false
	for {
		counted = e.countAt(j, g, from, ended)
		qc = s.check(j.queue, g, e.mayBorrow(j), false)
		if qc.code == quotaPool && s.entitled(j.queue, g) {
			// Within its guarantee, the reservations of its queue
			// counted: others borrow the room it lacks, and reclaim
			// gets it in (what a queue is guaranteed is its own).
			qc = quotaCheck{}
		}
		if qc.code == quotaFits {
			if by = e.keptOwn(j, g, from); by != nil {
				qc = quotaCheck{quotaKeepOwn, j.queue}
			}
		}
		if qc.code == quotaFits || ended || !from.After(e.last) {
			break
		}
		if counted {
			e.uncount()
		}
		by, ended = nil, true
	}
	if counted {
		defer e.uncount()
	}
	if qc.code == quotaFits {
		return qc, nil, "", true
	}
	for _, r := range e.promised {
		if qc.code == quotaKeepOwn {
			break
		}
		if (qc.at < 0 || s.isAncestor(qc.at, r.job.queue)) && (by == nil || r.start.Before(by.start)) {
			by = r
		}
	}
	if by == nil && len(e.promised) > 0 {
		by = e.promised[0]
	}
	if explain {
		why = s.explain(j.queue, g, qc)
		if by != nil {
			why = fmt.Sprintf("counting the %d GPUs reserved for job %s, which plans to run while this job would: %s", by.counted, by.job.job.ID, why)
		}
		if from.After(e.last) {
			why = "at its planned start, " + why
		}
	}
	return qc, by, why, false
}

// keptOwn returns, when g more GPUs of job j, starting at from, would
// take its queue past its guarantee on the counts countAt set, the
// earliest counted reservation of its queue for a job that cannot be
// preempted, due or starting at from or later (nil when there is none):
// such a job runs only within its queue's guarantee, so the others of
// its queue, free to borrow, may not take that room in front of it
// (quotaKeepOwn). One that starts between now and from runs by then,
// and j borrowing beside it takes nothing from it; an elastic one runs
// within the guarantee, its room kept at its minimum (it counts no more
// here). A job ranked behind it may still start within the guarantee.
func (e *Engine) keptOwn(j *jobRec, g int, from time.Time) *reservation {
	s := e.quota
	if !s.guaranteed {
		return nil
	}
	use := s.used[j.queue] + g
	var by *reservation
	for _, r := range e.promised {
		if r.job.queue != j.queue || e.mayBorrow(r.job) {
			continue
		}
		use -= r.counted - e.minGPUsOf(r)
		if r.start.Before(from) && r.start.After(e.last) {
			continue
		}
		if by == nil || r.start.Before(by.start) {
			by = r
		}
	}
	if use <= s.guar[j.queue] {
		return nil
	}
	return by
}

// promiseFits reports whether the quota takes g more GPUs of job j,
// starting at from, on the counts countAt sets (true without quotas).
func (e *Engine) promiseFits(j *jobRec, g int, from time.Time) bool {
	if e.quota == nil {
		return true
	}
	_, _, _, ok := e.promiseCheck(j, g, false, from)
	return ok
}

// startFits reports whether job j may start at now on allocation a as far
// as quotas go (true without quotas): its queue's quota takes it
// (quotaFits), and so does the room the reservations it would run beside
// need (promiseFits).
func (e *Engine) startFits(j *jobRec, a *gang.Allocation, now time.Time) bool {
	return e.quotaFits(j, a) && e.promiseFits(j, a.GPUs(), now)
}

// plannedGPUs returns the GPUs job j's quota is checked for at a planned
// start on e.alloc: the placement's, or an elastic gang's minimum when
// smaller (it starts cut to what its quota takes then, as the gate let it
// by at its minimum).
func (e *Engine) plannedGPUs(j *jobRec) int {
	return min(e.alloc.GPUs(), j.minGPUs)
}

// quotaWait makes job j wait for quota with reason why, the queue where
// check qc binds named (its own when the cluster binds), and gives up
// its reservation and its hold; j heads its queue's strict order
// (noteHead).
func (c *cycle) quotaWait(j *jobRec, qc quotaCheck, why string, w *Waiting) {
	s := c.e.quota
	w.Code, w.Detail, w.Blocker = WaitQuota, why, j.job.Queue // in no queue (-1): the one it names
	if j.queue >= 0 {
		w.Blocker = s.names[j.queue]
	}
	if qc.at >= 0 {
		w.Blocker = s.names[qc.at]
	}
	c.dropPromises(j, w.Blocker)
	c.noteHead(j, w)
}
