package backfill

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// reservation is a waiting job's planned start on planned GPUs.
type reservation struct {
	job *jobRec
	// start is the planned start; end is start plus the time limit (zero
	// without one). A due reservation (start at or before the cycle's
	// time) whose job has not started yet is extended: end runs a time
	// limit from the cycle, so that others keep off its GPUs meanwhile.
	start, end time.Time
	firstStart time.Time
	alloc      gang.Allocation
	// checked is the book's freed count when the last search for an
	// earlier start found none, and patient the spec it searched with.
	checked uint64
	patient bool
	// placed is set while the book is kept up when the reservation moved
	// to a new place found by a search (it is settled, like a slipped
	// one, but no late start moved it).
	placed bool
	// quotaHeld is set while the book is kept up when the reservation was
	// due with its planned GPUs free, but its job's queue's quota had no
	// room to start it: reservations that slip behind it blame that
	// (CauseQuotaAhead), not a late start.
	quotaHeld bool
	// activeIn is search scratch: the reservation blocks the job of the
	// search whose generation (walker.gen) it holds.
	activeIn uint64
	// counted is countAt scratch: the GPUs it counted for the
	// reservation, which uncount takes out again.
	counted int
	// inWalk is cycle scratch: it was made in this cycle's walk, after
	// the reservations searched before it (keepBook clears it).
	inWalk bool
}

// hold is one hold of hold mode: the free GPUs of a target placement kept
// for one waiting gang as they free up, because no planned start can be
// given to it (running jobs have no time limit).
type hold struct {
	job    *jobRec
	since  time.Time
	target gang.Allocation
	held   int       // GPUs of the target free (and so held) when last counted: this cycle's once its job or a higher-ranked contender was walked (contendHold), else the last cycle's
	spent  float64   // GPU-seconds held idle so far
	budget float64   // GPU-seconds it may hold
	eta    time.Time // estimated start of the gang on its target
	// refused is set when this cycle refused a job for the hold's GPUs,
	// whatever the job got instead (classify, refusedBy, contendHold;
	// clearRefusals clears it).
	refused bool
}

// claim is the placement kept for a waiting job that preempted running
// jobs (its victims) until they release their GPUs: its free GPUs are
// kept from every other job, as a hold's are, and the preemptor starts on
// it at the first cycle after the last victim is released.
type claim struct {
	job   *jobRec
	since time.Time // when the victims were signalled
	due   time.Time // since + Grace: when the preemptor is due to start
	alloc gang.Allocation
	// victims are the preempted jobs still holding GPUs (preempting);
	// each is removed when its GPUs are released.
	victims []*jobRec
	// reclaim: the claim gets a queue's guarantee back from queues that
	// borrow (victims of any class); otherwise its victims are of a
	// lower class.
	reclaim bool
	// lent are the lenders that gave up lent pods for the claim, and how
	// many: dropped without starting, it gives them back (jobRec.owed).
	lent []lentPods
}

// lentPods is a lender and the pods it gave up for a claim.
type lentPods struct {
	job  *jobRec
	pods int
}

// book is the reservation book: the reservations, in the order they were
// made, indexes of them by start and by end, the holds and the claims.
//
// Invariants (check): every reservation's job is waiting and points back
// at it, one reservation per job; two reservations whose windows overlap
// share no GPU; a held job is waiting, holds no reservation and one hold;
// hold targets share no GPU with each other or with a reservation; a
// claim's job is waiting with neither a reservation nor a hold and points
// back at it; claims share no GPU with each other or a hold, nor with a
// reservation that starts before the claim's job would end if it started
// when due.
type book struct {
	resv    []*reservation
	version uint64 // bumped on every change
	// Indexes of resv by start and by end, valid while indexed: kept up
	// to date by add and remove, rebuilt by sorted after changed.
	indexed        bool
	byStart, byEnd []*reservation
	open           []*reservation // those without an end, by start
	holds          []*hold
	claims         []*claim
	// claimless counts the jobs preempting without a claim (dropClaim):
	// while none, no job has victims of its own outside a claim.
	claimless int
	naive     bool // re-sort on every use (metamorphic tests)
	// moves counts the changes of a reservation in place (changed).
	moves uint64
	// freed counts the changes that can let a reservation start earlier:
	// GPUs returned before their planned end, reservations and holds gone
	// or moved earlier, nodes back in service.
	freed uint64
	// freedLog holds, for each count of freed above freedFrom, the time
	// from which that change left the availability profile as it was
	// (zero: none, it may have changed at any time): a kept reservation
	// whose last search found no earlier start needs to search only
	// before the latest of these since (upkeep).
	freedLog  []freedEntry
	freedFrom uint64
	// noted is the time from which the changes since the last count
	// that add times to the profile without freeing anything (a
	// reservation added or extended, a start confirmed late) left it as
	// it was; notedAll that one of them has no such time. The next count
	// takes them in: a search it causes must look up to them.
	noted    time.Time
	notedAll bool
	// dropped is called with every claim dropped (the engine stops
	// counting its GPUs for its job's queue).
	dropped func(*claim)
}

// freedEntry is one change counted by book.freed: the count it made, and
// the time from which it left the profile unchanged (zero: unknown).
type freedEntry struct {
	n    uint64
	from time.Time
}

// free counts a change that can let a reservation start earlier; the
// profile is as it was from time from on (zero: at no time known).
func (b *book) free(from time.Time) {
	b.freed++
	if b.notedAll || from.IsZero() {
		from = time.Time{}
	} else {
		from = later(from, b.noted)
	}
	b.noted, b.notedAll = time.Time{}, false
	b.freedLog = append(b.freedLog, freedEntry{n: b.freed, from: from})
}

// note records a change that adds a time to the profile (a reservation's
// or a job's end) without freeing anything: the profile is as it was
// from time from on (zero: at no time known).
func (b *book) note(from time.Time) {
	if from.IsZero() {
		b.notedAll = true
	}
	b.noted = later(b.noted, from)
}

// nextInstant returns the instant after t, or zero for zero (no end).
func nextInstant(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(1)
}

// changedBefore returns the time before which the profile may have
// changed since freed counted checked (every change since then, counted
// or noted, left it as it was from that time on), or false when that is
// unknown: a change of unknown extent, or a count the log does not
// cover.
func (b *book) changedBefore(checked uint64) (time.Time, bool) {
	if checked < b.freedFrom || checked > b.freed || b.notedAll {
		return time.Time{}, false
	}
	t := b.noted // changes noted since the last count, not yet in the log
	for i := len(b.freedLog) - 1; i >= 0 && b.freedLog[i].n > checked; i-- {
		from := b.freedLog[i].from
		if from.IsZero() {
			return time.Time{}, false
		}
		t = later(t, from)
	}
	return t, true
}

// trimFreed forgets the changes every reservation's last search has
// seen.
func (b *book) trimFreed() {
	least := b.freed
	for _, r := range b.resv {
		least = min(least, r.checked)
	}
	if least <= b.freedFrom {
		return
	}
	k := 0
	for k < len(b.freedLog) && b.freedLog[k].n <= least {
		k++
	}
	b.freedLog = slices.Delete(b.freedLog, 0, k)
	b.freedFrom = least
}

func (b *book) add(r *reservation) {
	b.resv = append(b.resv, r)
	r.job.resv = r
	b.version++
	b.note(nextInstant(r.end)) // its end is a new time in the profile
	if b.indexed {
		// r is last in the book: after every equal key keeps it stable.
		b.byStart = insertAfterEqual(b.byStart, r, func(x *reservation) time.Time { return x.start })
		if !r.end.IsZero() {
			b.byEnd = insertAfterEqual(b.byEnd, r, func(x *reservation) time.Time { return x.end })
		} else {
			b.open = insertAfterEqual(b.open, r, func(x *reservation) time.Time { return x.start })
		}
	}
}

// insertAfterEqual inserts r into list, sorted by key, after every
// element whose key is not after r's.
func insertAfterEqual(list []*reservation, r *reservation, key func(*reservation) time.Time) []*reservation {
	k := key(r)
	i, _ := slices.BinarySearchFunc(list, k, func(x *reservation, t time.Time) int {
		if key(x).After(t) {
			return 1
		}
		return -1
	})
	return slices.Insert(list, i, r)
}

func (b *book) remove(r *reservation) {
	i := slices.Index(b.resv, r)
	if i < 0 {
		panic(fmt.Sprintf("backfill: reservation of %s not in the book", r.job.job.ID))
	}
	b.resv = slices.Delete(b.resv, i, i+1)
	r.job.resv = nil
	b.version++
	b.free(nextInstant(r.end)) // its blocks end there
	if b.indexed {
		b.byStart = slices.Delete(b.byStart, slices.Index(b.byStart, r), slices.Index(b.byStart, r)+1)
		if k := slices.Index(b.byEnd, r); k >= 0 {
			b.byEnd = slices.Delete(b.byEnd, k, k+1)
		}
		if k := slices.Index(b.open, r); k >= 0 {
			b.open = slices.Delete(b.open, k, k+1)
		}
	}
}

// changed records that a reservation's start, end or GPUs changed.
func (b *book) changed() {
	b.version++
	b.moves++
	b.indexed = false
}

// holdOf returns job j's hold, or nil.
func (b *book) holdOf(j *jobRec) *hold {
	for _, h := range b.holds {
		if h.job == j {
			return h
		}
	}
	return nil
}

// isHeld reports whether j has a hold.
func (b *book) isHeld(j *jobRec) bool { return b.holdOf(j) != nil }

// addHold adds a hold.
func (b *book) addHold(h *hold) {
	b.holds = append(b.holds, h)
	b.version++
}

// dropHold removes hold h.
func (b *book) dropHold(h *hold) {
	i := slices.Index(b.holds, h)
	if i < 0 {
		panic(fmt.Sprintf("backfill: hold of %s not in the book", h.job.job.ID))
	}
	b.holds = slices.Delete(b.holds, i, i+1)
	b.version++
	b.free(time.Time{})
}

// addClaim adds claim c.
func (b *book) addClaim(c *claim) {
	b.claims = append(b.claims, c)
	c.job.claim = c
	b.version++
}

// dropClaim removes claim c; its victims still holding GPUs go on
// preempting without it.
func (b *book) dropClaim(c *claim) {
	i := slices.Index(b.claims, c)
	if i < 0 {
		panic(fmt.Sprintf("backfill: claim of %s not in the book", c.job.job.ID))
	}
	b.claims = slices.Delete(b.claims, i, i+1)
	c.job.claim = nil
	for _, l := range c.lent { // dropped without starting (start clears lent first)
		if l.job.phase == StateStarting || l.job.phase == StateRunning {
			l.job.owed += l.pods
		}
	}
	c.lent = nil
	if b.dropped != nil {
		b.dropped(c)
	}
	for _, v := range c.victims {
		v.victimOf = nil
	}
	b.claimless += len(c.victims)
	if len(c.victims) > 0 {
		c.job.orphans = true
	}
	b.version++
	b.free(time.Time{})
}

// clears reports whether the claim's job, started when due, ends before
// reservation r starts: only then may they share GPUs.
func (c *claim) clears(r *reservation) bool {
	l := c.job.job.TimeLimit
	return l > 0 && !r.start.Before(c.due.Add(l))
}

// sorted returns the reservations by start and, those with an end, by
// end; both orders are stable (ties keep the book's order).
func (b *book) sorted() (byStart, byEnd []*reservation) {
	if !b.naive && b.indexed {
		return b.byStart, b.byEnd
	}
	b.byStart = append(b.byStart[:0], b.resv...)
	slices.SortStableFunc(b.byStart, func(x, y *reservation) int { return x.start.Compare(y.start) })
	b.byEnd = b.byEnd[:0]
	for _, r := range b.resv {
		if !r.end.IsZero() {
			b.byEnd = append(b.byEnd, r)
		}
	}
	slices.SortStableFunc(b.byEnd, func(x, y *reservation) int { return x.end.Compare(y.end) })
	b.open = b.open[:0]
	for _, r := range b.byStart {
		if r.end.IsZero() {
			b.open = append(b.open, r)
		}
	}
	b.indexed = true
	return b.byStart, b.byEnd
}

// openEnded returns the reservations without an end, by start (valid
// after sorted).
func (b *book) openEnded() []*reservation {
	if !b.indexed {
		b.sorted()
	}
	return b.open
}

// extendDue extends every due reservation with a limit to end a time
// limit after now.
func (b *book) extendDue(now time.Time) {
	for _, r := range b.resv {
		if l := r.job.job.TimeLimit; l > 0 && r.start.Before(now) {
			if end := now.Add(l); !end.Equal(r.end) {
				r.end = end
				b.changed()
				b.note(end.Add(1))
			}
		}
	}
}

// dropOn drops every reservation, hold and claim with GPUs on node n,
// calling the functions for each reservation and hold before it goes.
func (b *book) dropOn(n topology.NodeID, fr func(r *reservation), fh func(h *hold)) {
	for _, c := range slices.Clone(b.claims) {
		if c.alloc.OnNode(n) {
			b.dropClaim(c)
		}
	}
	for _, r := range slices.Clone(b.resv) {
		if r.alloc.OnNode(topology.NodeID(n)) {
			fr(r)
			b.remove(r)
		}
	}
	for _, h := range slices.Clone(b.holds) {
		if h.target.OnNode(topology.NodeID(n)) {
			fh(h)
			b.dropHold(h)
		}
	}
}

// overlapping reports whether the windows of two reservations overlap.
func overlapping(a, b *reservation) bool {
	aEndsFirst := !a.end.IsZero() && !a.end.After(b.start)
	bEndsFirst := !b.end.IsZero() && !b.end.After(a.start)
	return !aEndsFirst && !bEndsFirst
}

// check verifies the book's invariants.
func (b *book) check(c *topology.Cluster) error {
	var errs []error
	if b.indexed {
		byStart, byEnd, open := slices.Clone(b.byStart), slices.Clone(b.byEnd), slices.Clone(b.open)
		b.indexed = false
		fs, fe := b.sorted()
		if !slices.Equal(byStart, fs) || !slices.Equal(byEnd, fe) || !slices.Equal(open, b.open) {
			errs = append(errs, fmt.Errorf("reservation indexes kept by add and remove differ from a fresh sort"))
		}
	}
	seen := make(map[*jobRec]bool)
	for i, r := range b.resv {
		id := r.job.job.ID
		switch {
		case seen[r.job]:
			errs = append(errs, fmt.Errorf("job %s has two reservations", id))
		case r.job.resv != r:
			errs = append(errs, fmt.Errorf("reservation of %s is not the job's", id))
		case r.job.phase != StatePending:
			errs = append(errs, fmt.Errorf("reservation of %s, which is %s", id, r.job.phase))
		case !r.end.IsZero() && !r.end.After(r.start):
			errs = append(errs, fmt.Errorf("reservation of %s ends before it starts", id))
		}
		seen[r.job] = true
		for _, o := range b.resv[:i] {
			if overlapping(r, o) && intersects(&r.alloc, &o.alloc) {
				errs = append(errs, fmt.Errorf("reservations of %s and %s overlap on shared GPUs", id, o.job.job.ID))
			}
		}
		for _, h := range b.holds {
			if intersects(&r.alloc, &h.target) {
				errs = append(errs, fmt.Errorf("reservation of %s shares GPUs with the hold of %s", id, h.job.job.ID))
			}
		}
	}
	for i, h := range b.holds {
		if h.job.phase != StatePending || h.job.resv != nil || b.holdOf(h.job) != h {
			errs = append(errs, fmt.Errorf("hold of %s, which is %s, reserved or held twice", h.job.job.ID, h.job.phase))
		}
		for _, o := range b.holds[:i] {
			if intersects(&h.target, &o.target) {
				errs = append(errs, fmt.Errorf("holds of %s and %s share GPUs", h.job.job.ID, o.job.job.ID))
			}
		}
	}
	return errors.Join(append(errs, b.checkClaims()...)...)
}

// checkClaims verifies the claims' invariants within the book.
func (b *book) checkClaims() []error {
	var errs []error
	for i, c := range b.claims {
		id := c.job.job.ID
		if c.job.phase != StatePending || c.job.resv != nil || b.isHeld(c.job) || c.job.claim != c {
			errs = append(errs, fmt.Errorf("claim of %s, which is %s, reserved, held or claiming twice", id, c.job.phase))
		}
		for _, o := range b.claims[:i] {
			if intersects(&c.alloc, &o.alloc) {
				errs = append(errs, fmt.Errorf("claims of %s and %s share GPUs", id, o.job.job.ID))
			}
		}
		for _, r := range b.resv {
			if !c.clears(r) && intersects(&c.alloc, &r.alloc) {
				errs = append(errs, fmt.Errorf("claim of %s shares GPUs with the reservation of %s, which starts before it would end", id, r.job.job.ID))
			}
		}
		for _, h := range b.holds {
			if intersects(&c.alloc, &h.target) {
				errs = append(errs, fmt.Errorf("claim of %s shares GPUs with the hold of %s", id, h.job.job.ID))
			}
		}
	}
	return errs
}

// forEntries calls f for every node entry of a.
func forEntries(a *gang.Allocation, f func(x topology.NodeAlloc)) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			f(x)
		}
	}
}

// intersects reports whether two allocations share a GPU.
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
