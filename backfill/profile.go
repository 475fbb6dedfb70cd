package backfill

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// profile is the availability profile: the free state now, plus the GPUs
// active jobs return at their ends (start + time limit), in end order. A
// job past its end is expected back at once. Jobs without a limit never
// return in it.
//
// search walks the profile's candidate times forward on a probe state,
// keeping the other reservations' GPUs blocked while their windows
// overlap the job's, and the GPUs of holds and claims (kept for a
// preemptor) at every time; blocks are added and removed
// incrementally as the time advances. With naive set it rebuilds the
// probe from scratch at every candidate time instead (metamorphic tests).
//
// Invariants (check): ends holds exactly the active jobs with a limit,
// in order of their ends.
type profile struct {
	// ends is every active job with a limit, by end then seq: kept
	// sorted in place as jobs start and end (a few hundred entries moved
	// at most), and read whole by every search.
	ends    []endItem
	version uint64 // bumped when ends change
	probe   *topology.State
	blocks  blockSet
	// Caches, valid for (version, book version, now). times holds the
	// candidate times, every one when timesAll is set, else those merged
	// so far, up to ends[mi] and the book's byEnd[mk] (timesUpTo).
	times    []time.Time
	timesAll bool
	mi, mk   int
	offs     []time.Duration // times as offsets from timesKey.now, when offsOK
	offsOK   bool
	timesKey cacheKey
	cover    cover
	// ended is the free state with every active job with a limit ended,
	// for endedKey (jobs without a limit and the ledger's other GPUs stay).
	ended    *topology.State
	endedKey cacheKey
	kept     kept // what the probe stands for after the last search
	// hit is the key and job of the last search that found a time.
	hit   cacheKey
	hitJ  *jobRec
	naive bool
}

type cacheKey struct {
	ends, book uint64
	now        time.Time
}

type endItem struct {
	end time.Time
	seq uint64
	j   *jobRec
}

func endCmp(a, b endItem) int {
	if c := a.end.Compare(b.end); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

func newProfile(c *topology.Cluster) profile {
	return profile{probe: topology.NewState(c), blocks: newBlockSet(c), cover: newCover(c)}
}

// hasEnd reports whether the ends hold active job j's (check).
func (p *profile) hasEnd(j *jobRec) bool {
	_, ok := slices.BinarySearchFunc(p.ends, endItem{end: j.end, seq: j.seq}, endCmp)
	return ok
}

// setEnd sets active job j's start and end (from its time limit).
func (p *profile) setEnd(j *jobRec, start time.Time) {
	p.clearEnd(j)
	j.start, j.end = start, time.Time{}
	if l := j.job.TimeLimit; l > 0 {
		j.end = start.Add(l)
		it := endItem{end: j.end, seq: j.seq, j: j}
		if i, ok := slices.BinarySearchFunc(p.ends, it, endCmp); ok {
			p.ends[i] = it
		} else {
			p.ends = slices.Insert(p.ends, i, it)
		}
	}
	p.version++
}

// clearEnd takes active job j out of the ends. The version moves even
// for a job without a limit: its GPUs leave the profile (the cover counts
// them).
func (p *profile) clearEnd(j *jobRec) {
	if !j.end.IsZero() {
		if i, ok := slices.BinarySearchFunc(p.ends, endItem{end: j.end, seq: j.seq}, endCmp); ok {
			p.ends = slices.Delete(p.ends, i, i+1)
		}
	}
	p.version++
}

// overruns calls f for every active job past its end at now, by end.
func (p *profile) overruns(now time.Time, f func(j *jobRec)) {
	for _, it := range p.ends {
		if it.end.After(now) {
			return
		}
		f(it.j)
	}
}

// sortedEnds returns every end in order, overrun ones included: the
// profile's own list, which the caller reads and does not keep past a
// start or an end.
func (p *profile) sortedEnds(cacheKey) []endItem { return p.ends }

// nextEnd returns the first end after t.
func (p *profile) nextEnd(t time.Time) (time.Time, bool) {
	i, _ := slices.BinarySearchFunc(p.ends, t, func(it endItem, t time.Time) int {
		if it.end.After(t) {
			return 1
		}
		return -1
	})
	if i == len(p.ends) {
		return time.Time{}, false
	}
	return p.ends[i].end, true
}

// candidateTimes returns the times at which GPUs come back: now when some
// job is past its end, then active jobs' ends and reservations' ends
// after now; sorted and distinct, merged from the two ordered lists.
func (p *profile) candidateTimes(key cacheKey, b *book) []time.Time {
	return p.timesUpTo(key, b, math.MaxInt)
}

// timesUpTo returns the first n candidate times (candidateTimes), or all
// of them when there are fewer: a search that stops early (most stop at
// the reservation they keep) merges no further than it reads.
func (p *profile) timesUpTo(key cacheKey, b *book, n int) []time.Time {
	if p.naive {
		return p.naiveTimes(key, b)
	}
	if p.timesKey != key || p.times == nil {
		p.times, p.timesKey, p.offsOK, p.timesAll, p.mi, p.mk = p.times[:0], key, false, false, 0, 0
	}
	if p.timesAll || len(p.times) >= n {
		return p.times
	}
	now := key.now
	ends := p.sortedEnds(key)
	_, byEnd := b.sorted()
	// Both lists are in time order: merge them, dropping duplicates.
	ts := p.times
	add := func(t time.Time) {
		if n := len(ts); n == 0 || !ts[n-1].Equal(t) {
			ts = append(ts, t)
		}
	}
	i, k := p.mi, p.mk
	for len(ts) < n && (i < len(ends) || k < len(byEnd)) {
		if k < len(byEnd) && !byEnd[k].end.After(now) {
			k++ // ended: no candidate
			continue
		}
		if k == len(byEnd) || i < len(ends) && !later(ends[i].end, now).After(byEnd[k].end) {
			add(later(ends[i].end, now))
			i++
		} else {
			add(byEnd[k].end)
			k++
		}
	}
	// (A time merged last may have equals left in either list: the next
	// call's add drops them, as this one's would have.)
	p.times, p.mi, p.mk = ts, i, k
	p.timesAll = i == len(ends) && k == len(byEnd)
	return p.times
}

// naiveTimes is candidateTimes' reference path: every time collected,
// then sorted.
func (p *profile) naiveTimes(key cacheKey, b *book) []time.Time {
	now := key.now
	ends := p.sortedEnds(key)
	ts := p.times[:0]
	for _, it := range ends {
		ts = append(ts, later(it.end, now))
	}
	for _, r := range b.resv {
		if !r.end.IsZero() && r.end.After(now) {
			ts = append(ts, r.end)
		}
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	ts = slices.CompactFunc(ts, func(a, b time.Time) bool { return a.Equal(b) })
	p.times, p.timesKey, p.offsOK, p.timesAll = ts, key, false, true
	return p.times
}

// offsets returns the candidate times (candidateTimes, just called: every
// one) as offsets from their now, computed when first asked after the
// times changed: only searches on a cover read them.
func (p *profile) offsets() []time.Duration {
	if !p.offsOK {
		p.offs = p.offs[:0]
		for _, t := range p.times {
			p.offs = append(p.offs, t.Sub(p.timesKey.now))
		}
		p.offsOK = true
	}
	return p.offs
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// query is one profile search: job j placed with spec, at a candidate
// time before until (any time when until is zero).
type query struct {
	j     *jobRec
	spec  *gang.Spec
	until time.Time
}

// search returns the earliest candidate time (before q.until) at which
// q's job can be admitted in the profile, leaving the placement in
// e.alloc, or false.
func (e *Engine) search(now time.Time, q query) (time.Time, bool) {
	p, key := &e.prof, e.cacheKey(now)
	ts := p.timesUpTo(key, &e.book, 16)
	if len(ts) == 0 || !q.until.IsZero() && !ts[0].Before(q.until) {
		return time.Time{}, false
	}
	w := e.newWalker(now, q)
	cv := e.coverFor(now, q)
	if cv != nil {
		ts = p.candidateTimes(key, &e.book) // the cover skips by index over all of them
	}
	w.ended = cv != nil
	need := e.leastGPUs(q.spec)
	for i := 0; ; i++ {
		if i == len(ts) {
			if p.timesAll {
				break
			}
			if ts = p.timesUpTo(key, &e.book, 2*i); i == len(ts) {
				break
			}
		}
		if cv != nil {
			if i = cv.next(p.offsets(), i, need, q.j.job.TimeLimit); i == len(ts) {
				break
			}
		}
		t := ts[i]
		if !q.until.IsZero() && !t.Before(q.until) {
			break
		}
		w.advance(t)
		if e.admitAt(q.spec) {
			e.prof.hit, e.prof.hitJ = e.cacheKey(now), q.j
			return t, true
		}
	}
	return time.Time{}, false
}

// keepTime returns the earliest time, from r's start (or now, for a due
// reservation) on, at which reservation r can keep its planned GPUs: when
// the active jobs on them have ended (a job past its limit is expected at
// once) and no reservation in prior, which go first, overlaps it on a
// shared GPU. It is false when a job without a limit holds one of them or
// a node of it is out of service. The culprit is what ends last: the job
// or prior reservation whose end the time is, if any.
func (e *Engine) keepTime(r *reservation, prior []*reservation, now time.Time) (keep, bool) {
	k := keep{at: later(r.start, now), ok: true}
	s := e.ledger.State()
	forGPUs(&r.alloc, func(n, g int) {
		if s.Status(topology.NodeID(n)) != topology.Up {
			k.ok = false
		} else if o := e.jobs.owner(n, g); o != nil {
			k.ok = k.ok && !o.end.IsZero()
			if end := later(o.end, now); end.After(k.at) || end.Equal(k.at) && k.job == nil {
				k.at, k.job, k.owner = end, o, true
			}
		}
	})
	for moved := k.ok; moved; {
		moved = false
		for _, p := range prior {
			if p == r || !p.end.IsZero() && !p.end.After(k.at) || r.job.job.TimeLimit > 0 && !p.start.Before(k.at.Add(r.job.job.TimeLimit)) {
				continue
			}
			if intersects(&p.alloc, &r.alloc) {
				if p.end.IsZero() {
					return keep{}, false
				}
				k.at, moved = p.end, true
				if !p.placed {
					// A reservation that slipped: what it waits for is
					// what this one waits for last. (One placed anew in
					// this pass did not slip: the culprit stays.)
					k.job, k.owner = p.job, false
				}
			}
		}
	}
	return k, k.ok
}

// keep is when a reservation can keep its planned GPUs, and what it
// waits for last: an active job (owner) or a reservation's job.
type keep struct {
	at    time.Time
	ok    bool
	job   *jobRec
	owner bool
}

// admitAt tries spec on the probe, leaving the probe unchanged.
func (e *Engine) admitAt(spec *gang.Spec) bool { return e.admitOn(e.prof.probe, spec, e.prof.naive) }

// admitOn tries spec on s, leaving s unchanged (the placement in e.alloc);
// naive skips the quick capacity bounds.
func (e *Engine) admitOn(s *topology.State, spec *gang.Spec, naive bool) bool {
	if !naive && (s.FreeGPUs() < e.leastGPUs(spec) || !mayFit(s, spec)) {
		return false
	}
	res, err := e.adm.Check(s, spec, &e.alloc)
	if err != nil {
		panic(fmt.Sprintf("backfill: checked job %s refused: %v", spec.ID, err))
	}
	return res.Admitted
}

func (e *Engine) cacheKey(now time.Time) cacheKey {
	return cacheKey{ends: e.prof.version, book: e.book.version, now: now}
}

// walker advances the probe through candidate times.
type walker struct {
	e              *Engine
	q              query
	now            time.Time
	ends           []endItem
	byStart, byEnd []*reservation
	next, add, rem int
	gen            uint64 // marks the reservations blocked (activeIn)
	fresh          bool   // the probe is not built yet: the first advance jumps
	ended          bool   // the first advance may start from the ended state
}

func (e *Engine) newWalker(now time.Time, q query) *walker {
	p := &e.prof
	w := &e.walk
	gen := w.gen + 1
	*w = walker{e: e, q: q, now: now, ends: p.sortedEnds(e.cacheKey(now)), gen: gen, fresh: !p.naive}
	w.byStart, w.byEnd = e.book.sorted()
	return w
}

// advance moves the probe to time t.
func (w *walker) advance(t time.Time) {
	p := &w.e.prof
	if p.naive {
		w.rebuild(t)
		return
	}
	if w.fresh {
		w.jump(t)
		return
	}
	for w.next < len(w.ends) && !later(w.ends[w.next].end, w.now).After(t) {
		p.blocks.releaseUnblocked(p.probe, w.ends[w.next].j.alloc)
		w.next++
	}
	l := w.q.j.job.TimeLimit
	var until time.Time
	if l > 0 {
		until = t.Add(l)
	}
	for w.add < len(w.byStart) && (l == 0 || w.byStart[w.add].start.Before(until)) {
		r := w.byStart[w.add]
		w.add++
		if r.job == w.q.j || !r.end.IsZero() && !r.end.After(t) {
			continue
		}
		r.activeIn = w.gen
		p.blocks.add(p.probe, &r.alloc)
		if p.kept.ok {
			p.kept.list = append(p.kept.list, r)
		}
	}
	for w.rem < len(w.byEnd) && !w.byEnd[w.rem].end.After(t) {
		r := w.byEnd[w.rem]
		w.rem++
		if r.activeIn == w.gen {
			r.activeIn = 0
			p.blocks.remove(p.probe, &r.alloc)
		}
	}
}

// jump builds the probe at t, the search's first materialised time: the
// free state (or, when every active job with a limit has ended by t and
// the walker may, the cached ended state), the holds and claims blocked,
// the ends by t released, and the reservations whose windows overlap the
// job's blocked, found from the end index (those ended by t are never
// visited, nor blocked and unblocked). It leaves the walker's positions
// as the incremental advances from now would have.
//
// When the last search's probe was built on the same ended state with no
// hold or claim, and no reservation changed since but by being added or
// removed, the probe is that one's changed by the difference: the
// reservations it blocked that this search does not are unblocked, and
// the others added (consecutive searches of a long queue block mostly the
// same reservations, those at the end of the plan).
func (w *walker) jump(t time.Time) {
	e, p := w.e, &w.e.prof
	w.fresh = false
	l := w.q.j.job.TimeLimit
	var until time.Time
	if l > 0 {
		until = t.Add(l)
	}
	overlaps := func(r *reservation) bool { return r.job != w.q.j && (l == 0 || r.start.Before(until)) }
	k := &p.kept
	// blockWindow blocks the reservations whose windows overlap the job's
	// (from the end index, and those without an end), marking them with
	// this search's gen; those marked with prev are on the probe already.
	// With keep it lists them for the next search.
	blockWindow := func(prev uint64, keep bool) {
		mark := func(r *reservation) {
			if !overlaps(r) {
				return
			}
			if r.activeIn != prev {
				p.blocks.add(p.probe, &r.alloc)
			}
			r.activeIn = w.gen
			if keep {
				k.list = append(k.list, r)
			}
		}
		for _, r := range w.byEnd[w.rem:] {
			mark(r)
		}
		for _, r := range e.book.openEnded() {
			mark(r)
		}
	}
	w.rem, _ = slices.BinarySearchFunc(w.byEnd, t, func(r *reservation, t time.Time) int {
		if r.end.After(t) {
			return 1
		}
		return -1
	})
	w.add = len(w.byStart)
	if l > 0 {
		w.add, _ = slices.BinarySearchFunc(w.byStart, until, func(r *reservation, u time.Time) int {
			if r.start.Before(u) {
				return -1
			}
			return 1
		})
	}
	n := len(w.ends)
	onEnded := w.ended && n > 0 && !later(w.ends[n-1].end, w.now).After(t)
	bare := len(e.book.holds) == 0 && len(e.book.claims) == 0
	key := e.cacheKey(w.now)
	key.book = 0
	if onEnded && bare && k.ok && k.key == key && k.moves == e.book.moves {
		// The last search's probe, moved to this one's reservations.
		prev := k.gen
		old := k.list
		k.list, k.spare = k.spare[:0], old
		blockWindow(prev, true)
		for _, r := range old {
			if r.activeIn == prev {
				r.activeIn = 0
				p.blocks.remove(p.probe, &r.alloc)
			}
		}
		clear(k.spare)
		w.next, k.gen = n, w.gen
		if e.checkEach {
			e.checkJump(w, t)
		}
		return
	}
	*k = kept{list: k.list[:0], spare: k.spare}
	if onEnded {
		if err := e.endedState(w.now).CopyInto(p.probe); err != nil {
			panic(err)
		}
		w.next = n
	} else if err := e.ledger.State().CopyInto(p.probe); err != nil {
		panic(err)
	}
	p.blocks.reset()
	for _, h := range e.book.holds {
		if h.job != w.q.j {
			p.blocks.add(p.probe, &h.target)
		}
	}
	for _, cl := range e.book.claims {
		if cl.job != w.q.j {
			p.blocks.add(p.probe, &cl.alloc)
		}
	}
	for w.next < n && !later(w.ends[w.next].end, w.now).After(t) {
		p.blocks.releaseUnblocked(p.probe, w.ends[w.next].j.alloc)
		w.next++
	}
	keep := onEnded && bare
	blockWindow(w.gen, keep) // none is marked with this search's gen yet
	if keep {
		k.ok, k.key, k.moves, k.gen = true, key, e.book.moves, w.gen
	}
}

// kept is what a search's probe stands for, so that the next search can
// start from it: built on the ended state at key with no hold or claim,
// while the book's moves count was moves, blocking the reservations of
// list marked with gen (list may hold others, since unblocked). Anything
// else that uses the probe drops it (spoil).
type kept struct {
	ok          bool
	key         cacheKey
	moves, gen  uint64
	list, spare []*reservation
}

// spoil records that the probe was used for something else.
func (p *profile) spoil() { p.kept.ok = false }

// checkJump compares the probe a jump reused with one built from scratch
// (tests, checkEach).
func (e *Engine) checkJump(w *walker, t time.Time) {
	p := &e.prof
	fresh := e.endedState(w.now).Clone()
	l := w.q.j.job.TimeLimit
	for _, r := range e.book.resv {
		if r.job != w.q.j && (r.end.IsZero() || r.end.After(t)) && (l == 0 || r.start.Before(t.Add(l))) {
			block(fresh, &r.alloc)
		}
	}
	if !fresh.Equal(p.probe) {
		panic(fmt.Sprintf("backfill: the probe reused for %s at %v differs from one built afresh", w.q.j.job.ID, t))
	}
}

// endedState returns the free state with every active job with a limit
// ended (their GPUs released), cached for the ends and now.
func (e *Engine) endedState(now time.Time) *topology.State {
	p := &e.prof
	key := e.cacheKey(now)
	key.book = 0
	if p.ended == nil {
		p.ended = topology.NewState(e.c)
	} else if p.endedKey == key {
		return p.ended
	}
	e.buildEnded(p.ended, key)
	p.endedKey = key
	return p.ended
}

// buildEnded makes dst the free state with every active job with a limit
// ended (key is the ends' cache key).
func (e *Engine) buildEnded(dst *topology.State, key cacheKey) {
	if err := e.ledger.State().CopyInto(dst); err != nil {
		panic(err)
	}
	for _, it := range e.prof.sortedEnds(key) {
		releaseOn(dst, it.j.alloc)
	}
}

// rebuild makes the probe the profile at t from scratch: the free state,
// plus the GPUs of jobs ended by t, minus the GPUs of the holds, the
// claims and the reservations whose windows overlap the job's.
func (w *walker) rebuild(t time.Time) {
	e, p := w.e, &w.e.prof
	p.spoil()
	if err := e.ledger.State().CopyInto(p.probe); err != nil {
		panic(err)
	}
	for _, it := range w.ends {
		if !later(it.end, w.now).After(t) {
			releaseOn(p.probe, it.j.alloc)
		}
	}
	for _, h := range e.book.holds {
		if h.job != w.q.j {
			block(p.probe, &h.target)
		}
	}
	for _, cl := range e.book.claims {
		if cl.job != w.q.j {
			block(p.probe, &cl.alloc)
		}
	}
	for _, r := range e.book.resv {
		if windowOverlaps(r, w.q.j, t) {
			block(p.probe, &r.alloc)
		}
	}
}

// windowOverlaps reports whether reservation r overlaps the window of job
// j starting at t (to t + its limit, or forever without one).
func windowOverlaps(r *reservation, j *jobRec, t time.Time) bool {
	if r.job == j {
		return false
	}
	if !r.end.IsZero() && !r.end.After(t) {
		return false
	}
	l := j.job.TimeLimit
	return l == 0 || r.start.Before(t.Add(l))
}

// allAvailable reports whether every GPU of a is free and schedulable on s.
func allAvailable(s *topology.State, a *gang.Allocation) bool {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if s.Status(x.Node) != topology.Up || x.GPUs&^s.Free(x.Node) != 0 {
				return false
			}
		}
	}
	return true
}

// block allocates on s the free GPUs of a, skipping nodes that are down.
func block(s *topology.State, a *gang.Allocation) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			blockGPUs(s, x.Node, x.GPUs)
		}
	}
}

// blockGPUs allocates on s the free GPUs of gpus on node n, unless it is
// down.
func blockGPUs(s *topology.State, n topology.NodeID, gpus uint64) {
	m := gpus & s.Free(n)
	if m == 0 || s.Status(n) == topology.Down {
		return
	}
	if err := s.Allocate([]topology.NodeAlloc{{Node: n, GPUs: m}}); err != nil {
		panic(fmt.Sprintf("backfill: blocking free GPUs failed: %v", err))
	}
}

// releaseOn returns a's GPUs to s.
func releaseOn(s *topology.State, a *gang.Allocation) {
	for i := range a.Members {
		if err := s.Release(a.Members[i].Assignment); err != nil {
			panic(fmt.Sprintf("backfill: release of a placed allocation failed: %v", err))
		}
	}
}

// blockSet tracks the blocks of a search: per node the union of the GPUs
// blocked (mask), the part of them taken on the probe because of a block
// (taken), and per GPU how many active blocks cover it (count).
type blockSet struct {
	maxG      int
	mask      []uint64
	taken     []uint64
	count     []uint16
	isTouched []bool
	touched   []int32
}

func newBlockSet(c *topology.Cluster) blockSet {
	n := c.NumNodes()
	return blockSet{maxG: c.MaxNodeGPUs(), mask: make([]uint64, n), taken: make([]uint64, n),
		count: make([]uint16, n*c.MaxNodeGPUs()), isTouched: make([]bool, n)}
}

func (b *blockSet) reset() {
	for _, n := range b.touched {
		clear(b.count[int(n)*b.maxG : int(n+1)*b.maxG])
		b.mask[n], b.taken[n] = 0, 0
		b.isTouched[n] = false
	}
	b.touched = b.touched[:0]
}

// add blocks a's GPUs, taking on probe those that are free there.
func (b *blockSet) add(probe *topology.State, a *gang.Allocation) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			n := x.Node
			if !b.isTouched[n] {
				b.isTouched[n] = true
				b.touched = append(b.touched, int32(n))
			}
			var fresh uint64
			for m := x.GPUs; m != 0; m &= m - 1 {
				k := int(n)*b.maxG + bitIndex(m)
				if b.count[k] == 0 {
					fresh |= m & -m
				}
				b.count[k]++
			}
			b.mask[n] |= fresh
			if f := fresh & probe.Free(topology.NodeID(n)); f != 0 && probe.Status(topology.NodeID(n)) != topology.Down {
				if err := probe.Allocate([]topology.NodeAlloc{{Node: n, GPUs: f}}); err != nil {
					panic(fmt.Sprintf("backfill: blocking failed: %v", err))
				}
				b.taken[n] |= f
			}
		}
	}
}

// remove unblocks a's GPUs, returning to probe those no other block covers.
func (b *blockSet) remove(probe *topology.State, a *gang.Allocation) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			n := x.Node
			var gone uint64
			for m := x.GPUs; m != 0; m &= m - 1 {
				k := int(n)*b.maxG + bitIndex(m)
				b.count[k]--
				if b.count[k] == 0 {
					gone |= m & -m
				}
			}
			b.mask[n] &^= gone
			if u := b.taken[n] & gone; u != 0 {
				if err := probe.Release([]topology.NodeAlloc{{Node: n, GPUs: u}}); err != nil {
					panic(fmt.Sprintf("backfill: unblocking failed: %v", err))
				}
				b.taken[n] &^= u
			}
		}
	}
}

// releaseUnblocked returns an ending job's GPUs to probe, except those
// blocked, which stay allocated as blocks.
func (b *blockSet) releaseUnblocked(probe *topology.State, a *gang.Allocation) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			n := x.Node
			keep := x.GPUs & b.mask[n]
			if free := x.GPUs &^ keep; free != 0 {
				if err := probe.Release([]topology.NodeAlloc{{Node: n, GPUs: free}}); err != nil {
					panic(fmt.Sprintf("backfill: profile release failed: %v", err))
				}
			}
			b.taken[n] |= keep
		}
	}
}

func bitIndex(m uint64) int { return bits.TrailingZeros64(m) }

// mayFit is a cheap necessary condition for admitting spec on s: every
// node-shaped member finds enough schedulable nodes with its per-node GPUs
// free, or idle nodes for whole nodes (of any size: on a cluster of mixed
// nodes a whole-node member may take small ones); members are checked
// separately, so it may pass when the gang does not fit together.
func mayFit(s *topology.State, spec *gang.Spec) bool {
	maxG := s.Cluster().MaxNodeGPUs()
	for i := range spec.Members {
		m := &spec.Members[i]
		r := &m.Request
		if r.GPUs > 0 {
			continue
		}
		need := r.Nodes
		if m.Min > 0 && m.Min < need {
			need = m.Min
		}
		g := r.GPUsPerNode
		switch {
		case g == 0:
			if int(s.Idle().Count()) < need {
				return false
			}
		case g > maxG:
			return false
		case int(s.Avail(g).Count()) < need:
			return false
		}
	}
	return true
}

// leastGPUs is the fewest GPUs spec can be admitted with: its minimum
// size, whole nodes counted at the smallest node's GPUs (gang.Spec.MinGPUs
// counts them at the largest, which is no lower bound on a cluster of
// mixed nodes).
func (e *Engine) leastGPUs(spec *gang.Spec) int {
	n := 0
	for i := range spec.Members {
		m := &spec.Members[i]
		r := &m.Request
		if r.GPUs > 0 {
			n += r.GPUs
			continue
		}
		per := r.GPUsPerNode
		if per == 0 {
			per = e.minNodeGPUs
		}
		nodes := r.Nodes
		if m.Min > 0 && m.Min < nodes {
			nodes = m.Min
		}
		n += nodes * per
	}
	return n
}
