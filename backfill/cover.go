package backfill

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// cover is, over time from now on, how many GPUs no profile search can
// place a job on: those of the union of the jobs running at each time
// (the ledger's allocated GPUs, less those of jobs ended by then, a job
// past its end returning at now, as in the profile) and of the
// reservations whose window covers it. It is a step function: the count
// on [at[i], at[i+1]) is used[i], the last segment lasting forever.
//
// A search skips the candidate times at which its job cannot fit by the
// count alone: a GPU free on the probe at t for a job with limit l is in
// none of those sets at any time of [t, t+l) (running jobs only end, and
// a reservation covering a time of the window overlaps it and is
// blocked), so the job needs, at every time of its window, at least as
// many GPUs outside the count as the fewest it can run on. Skipping a
// time this way never changes a search's answer; it spares the probe the
// blocks of every reservation wholly inside the skipped span, which is
// what made a conservative cycle grow as the square of the queue.
//
// The cover does not count holds and claims (the probe blocks them too,
// so leaving them out only weakens the bound), and it counts every
// reservation, so a search for a job with a reservation does not use it.
// It is built by a sweep with a per-GPU count, valid for the cache key it
// was built at; a reservation placed by a search at that key is added in
// place (its GPUs are outside the count over its whole window, by the
// argument above, so the union grows by exactly its GPUs) and the cover
// stays valid at the new key. Anything else rebuilds it on next use.
type cover struct {
	at    []time.Duration // segment starts, since now; at[0] is 0
	used  []int32
	key   cacheKey
	valid bool
	total int32
	maxG  int
	count []uint16 // per GPU (node*maxG+g), sweep scratch, zero between sweeps
}

// coverMinReservations is the book size from which searches use the
// cover: below it a rebuild costs more than the blocks it spares.
const coverMinReservations = 8

func newCover(c *topology.Cluster) cover {
	return cover{total: int32(c.TotalGPUs()), maxG: c.MaxNodeGPUs(),
		count: make([]uint16, c.NumNodes()*c.MaxNodeGPUs())}
}

// maxOffset bounds the times the cover represents exactly: beyond it a
// Duration may saturate and merge distinct times, so a cover reaching it
// is not used.
const maxOffset = time.Duration(math.MaxInt64 / 2)

// coverFor returns the cover for a search of q at now, (re)built if
// needed, or nil when the search must walk every candidate time: the
// naive reference path, a small book, or a job whose own reservation the
// cover counts.
func (e *Engine) coverFor(now time.Time, q query) *cover {
	p := &e.prof
	if p.naive || len(e.book.resv) < e.coverMin || q.j.resv != nil {
		return nil
	}
	cv := &p.cover
	if key := e.cacheKey(now); !cv.valid || cv.key != key {
		cv.valid = e.buildCover(cv, now)
		cv.key = key
	}
	if !cv.valid {
		return nil
	}
	return cv
}

// buildCover sweeps the profile into cv: the ledger's allocated GPUs at
// now, less running jobs' GPUs at their ends, plus reservations' GPUs
// over their windows, counted per GPU so that the union is exact. It
// reports false when a time lies too far ahead to represent.
func (e *Engine) buildCover(cv *cover, now time.Time) bool {
	p := &e.prof
	s := e.ledger.State()
	cv.at, cv.used = cv.at[:0], cv.used[:0]
	var u int32
	for n := range e.c.NumNodes() {
		busy := (uint64(1)<<e.c.NodeGPUs(topology.NodeID(n)) - 1) &^ s.Free(topology.NodeID(n))
		for m := busy; m != 0; m &= m - 1 {
			cv.count[n*cv.maxG+bitIndex(m)] = 1
			u++
		}
	}
	ends := p.sortedEnds(e.cacheKey(now))
	byStart, byEnd := e.book.sorted()
	ok := true
	off := func(t time.Time) time.Duration {
		d := t.Sub(now)
		if d >= maxOffset {
			ok = false
		}
		return max(d, 0)
	}
	live := func(r *reservation) bool { return r.end.IsZero() || r.end.After(now) }
	i, a, z := 0, 0, 0
	for a < len(byStart) && !live(byStart[a]) {
		a++
	}
	for z < len(byEnd) && !byEnd[z].end.After(now) {
		z++
	}
	cv.at, cv.used = append(cv.at, 0), append(cv.used, 0)
	for {
		// The earliest pending event time.
		t, any := time.Duration(math.MaxInt64), false
		if i < len(ends) {
			t, any = min(t, off(ends[i].end)), true
		}
		if a < len(byStart) {
			t, any = min(t, off(byStart[a].start)), true
		}
		if z < len(byEnd) {
			t, any = min(t, off(byEnd[z].end)), true
		}
		if !any || !ok {
			break
		}
		for ; i < len(ends) && off(ends[i].end) == t; i++ {
			u -= cv.apply(ends[i].j.alloc, -1)
		}
		for ; a < len(byStart) && off(byStart[a].start) == t; a++ {
			if r := byStart[a]; live(r) {
				u += cv.apply(&r.alloc, +1)
			}
		}
		for ; z < len(byEnd) && off(byEnd[z].end) == t; z++ {
			u -= cv.apply(&byEnd[z].alloc, -1)
		}
		if n := len(cv.at); cv.at[n-1] == t {
			cv.used[n-1] = u
		} else {
			cv.at, cv.used = append(cv.at, t), append(cv.used, u)
		}
	}
	// Leave the per-GPU counts zero for the next sweep.
	for n := range e.c.NumNodes() {
		clear(cv.count[n*cv.maxG : (n+1)*cv.maxG])
	}
	return ok
}

// apply adds delta to the count of every GPU of a and returns how many
// counts it moved between zero and non-zero.
func (cv *cover) apply(a *gang.Allocation, delta int) int32 {
	var moved int32
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			for m := x.GPUs; m != 0; m &= m - 1 {
				k := int(x.Node)*cv.maxG + bitIndex(m)
				if delta > 0 {
					if cv.count[k] == 0 {
						moved++
					}
					cv.count[k]++
				} else {
					if cv.count[k] == 0 {
						panic(fmt.Sprintf("backfill: cover count of GPU %d of node %d below zero", bitIndex(m), x.Node))
					}
					cv.count[k]--
					if cv.count[k] == 0 {
						moved++
					}
				}
			}
		}
	}
	return moved
}

// split makes d a segment start and returns its index.
func (cv *cover) split(d time.Duration) int {
	i, found := slices.BinarySearch(cv.at, d)
	if found {
		return i
	}
	// i > 0: d >= 0 = at[0].
	cv.at = slices.Insert(cv.at, i, d)
	cv.used = slices.Insert(cv.used, i, cv.used[i-1])
	return i
}

// added counts reservation r, just placed by a search at the cover's key
// (so outside the count over its window), and moves the cover to key.
func (cv *cover) added(r *reservation, now time.Time, key cacheKey) {
	s := later(r.start, now).Sub(now)
	e := time.Duration(math.MaxInt64)
	if !r.end.IsZero() {
		e = r.end.Sub(now)
	}
	if s >= maxOffset || !r.end.IsZero() && e >= maxOffset {
		cv.valid = false
		return
	}
	g := int32(r.alloc.GPUs())
	i := cv.split(s)
	k := len(cv.at)
	if !r.end.IsZero() {
		k = cv.split(e)
	}
	for ; i < k; i++ {
		cv.used[i] += g
	}
	cv.key = key
}

// reserved brings the caches up to key after job j got a reservation
// (now in the book) from the last search, made at key before: the cover
// counts it and its end becomes a candidate time. A cache that was not
// at before is left to be rebuilt.
func (p *profile) reserved(j *jobRec, before, key cacheKey) {
	if p.naive || p.hit != before || p.hitJ != j {
		return
	}
	r := j.resv
	if cv := &p.cover; cv.valid && cv.key == before {
		cv.added(r, before.now, key)
	}
	if p.timesKey == before && p.times != nil && !p.timesAll {
		// A merge left halfway: its place in the book's list moved.
		p.timesKey = cacheKey{}
	}
	if p.timesKey == before && p.times != nil && !r.end.IsZero() {
		// r.end is after now: r starts at a candidate time and has a limit.
		i, found := slices.BinarySearchFunc(p.times, r.end, func(a, b time.Time) int { return a.Compare(b) })
		if !found {
			p.times = slices.Insert(p.times, i, r.end)
			if p.offsOK {
				p.offs = slices.Insert(p.offs, i, r.end.Sub(before.now))
			}
		}
		p.timesKey = key
	}
}

// next returns the index of the first candidate time from offs[i] on
// (offs are the candidate times as offsets from now, ascending) at which a
// job that needs at least need GPUs and runs for l (forever when zero) is
// not excluded by the count, or len(offs). It walks the count's runs of
// segments with room for the job: a candidate time fits when it lies in
// a run that lasts until its window ends.
func (cv *cover) next(offs []time.Duration, i, need int, l time.Duration) int {
	if i >= len(offs) || need > int(cv.total) {
		return len(offs)
	}
	limit := cv.total - int32(need)
	n := len(cv.at)
	// The segment holding offs[i]: the last start not after it.
	q, found := slices.BinarySearch(cv.at, offs[i])
	if !found {
		q--
	}
	for {
		for q < n && cv.used[q] > limit {
			q++
		}
		if q == n {
			return len(offs) // too full forever
		}
		r := q
		for r < n && cv.used[r] <= limit {
			r++
		}
		// The run [at[q], at[r]) has room (to forever when r == n).
		a := cv.at[q]
		if r == n || l > 0 && cv.at[r]-a >= l {
			for i < len(offs) && offs[i] < a {
				i++
			}
			if i == len(offs) || r == n || offs[i] <= cv.at[r]-l {
				return i
			}
		}
		q = r
	}
}

// checkCover verifies a valid cover against a fresh sweep, and the
// cached ended state against a fresh one.
func (e *Engine) checkCover() error {
	p := &e.prof
	if key := e.cacheKey(p.endedKey.now); p.ended != nil && key.ends == p.endedKey.ends {
		fresh := topology.NewState(e.c)
		e.buildEnded(fresh, key)
		if !fresh.Equal(p.ended) {
			return fmt.Errorf("the cached state with every limited job ended differs from a fresh one")
		}
	}
	cv := &e.prof.cover
	if !cv.valid || cv.key != e.cacheKey(cv.key.now) {
		return nil
	}
	ref := newCover(e.c)
	if !e.buildCover(&ref, cv.key.now) {
		return fmt.Errorf("profile cover valid, but a fresh sweep cannot represent it")
	}
	// Merge equal neighbours on both sides: added splits segments.
	a, b := compact(cv.at, cv.used), compact(ref.at, ref.used)
	if !slices.Equal(a, b) {
		return fmt.Errorf("profile cover is %v, a fresh sweep says %v", a, b)
	}
	return nil
}

type coverSeg struct {
	at   time.Duration
	used int32
}

func compact(at []time.Duration, used []int32) []coverSeg {
	var out []coverSeg
	for i := range at {
		if n := len(out); n > 0 && out[n-1].used == used[i] {
			continue
		}
		out = append(out, coverSeg{at[i], used[i]})
	}
	return out
}
