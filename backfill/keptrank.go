package backfill

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
)

// Under fair-share weights the ranking is kept between cycles too, while
// what moves priorities moves them all alike. A job's priority before
// rounding is its static part (fairshare.View.Static: the weighted
// fair-share, size, QOS and partition factors) plus the age weight times
// its wait over MaxAge, up to MaxAge. While the accounts' fair-share
// factors stay as they are (under Fair Tree they change only when the
// accounts' order does: 96 times in the 156,803 cycles of Philly at load
// 4) and no starvation bound is set, every job's priority grows by the
// same amount between two cycles until it has waited MaxAge, and stays
// then. Its key, the priority it had before rounding at the instant the
// keys were computed (keptRank.now0), plus that amount (keptRank.gained),
// at most its static part plus the age weight (keptKey.capped), is its
// priority before rounding now, within a float error bounded by
// keptRank.slack.
//
// The kept order is sorted as the ranking sorts (priority, submit time,
// ID), with each job's priority when it was placed and the gain from
// which that priority may change: the gain at which its priority before
// rounding, give or take the error, reaches the next half point
// (keptKey.cross). Priorities only grow, so a cycle mends the order only
// where a job's gain is reached: its priority is computed again and, if it
// grew, the job moves up past the few jobs that now rank after it
// (promote, an insertion sort of the jobs whose priority changed). The
// jobs that joined are then merged in by their priorities, in place from
// the end. A cycle reads the kept keys, and no waiting job's record but
// those of the jobs that joined, of the jobs whose priority before
// rounding lies within the float error of half a point (computed from the
// record), and of jobs compared when their priorities, submit times and
// the first eight bytes of their IDs tie. Jobs that left stay in the
// order (their priorities kept up like the others'), passed over by the
// walk, until a quarter of it has left; ranks are not kept (holds compare
// jobs with cycle.ranksAbove). Ranking the queue whole scores and sorts
// every job. When kept rankings do not last four cycles, the next keys
// wait a number of whole rankings that doubles each time (leaveKept).
//
// When any of the conditions fails (a fair-share factor or the priority
// configuration changed), and when the keys are MaxAge old (which bounds
// their float error), the cycle ranks the whole queue (Engine.rank), and
// the keys are computed again from that ranking.

// keptRank is the state of the ranking kept between cycles.
type keptRank struct {
	// on reports that e.order is the last cycle's ranking, keys its
	// jobs' keys (else the next ranking is a whole one).
	on   bool
	keys []keptKey
	// The priority configuration (whole, and the age weight and MaxAge
	// the keys use) and the fair-share factors (per engine account, NaN
	// where unknown) the keys were computed with, and their instant
	// (nanoseconds since 1970).
	cfg     fairshare.Config
	age     float64
	maxAge  time.Duration
	factors []float64
	now0    int64
	// slack bounds the float error of a key plus the gain, as a
	// priority before rounding (keptPrio, crossAt).
	slack float64
	// gained is what every job's priority before rounding gained since
	// now0 (the age weight times the time over MaxAge): a job's key plus
	// gained is its priority before rounding this cycle.
	gained float64
	// joined lists the jobs that joined the queue since the last
	// ranking (a job may be listed twice, or have left again).
	joined []*jobRec
	// gen numbers the kept order: a job is in it exactly when its
	// keptGen is gen (it may have left the queue: the walk passes over
	// it). gone counts the jobs that left since the order was last
	// compacted.
	gen  uint64
	gone int
	// left counts the jobs that left the kept order, never reset (a quiet
	// walk needs none to have left since the last walk); back counts
	// those that came back to their place in it (keys marked keptGone
	// are trusted while none did since the last walk).
	left, back uint64
	// lasted counts the kept rankings since the keys were computed;
	// after one that lasted fewer than four, the next wait whole
	// rankings go by before keys are computed again, backoff doubling.
	lasted, wait, backoff int
	// Scratch: the merged order and its keys, the jobs that joined.
	order2 []*jobRec
	keys2  []keptKey
	fresh  []keptEntry
	due    []int32 // promote's positions
	// rankings, keyed, promoted, merged and exact count the kept
	// rankings, the whole rankings whose keys were computed, the jobs
	// whose priority changed while kept, the jobs that joined a kept
	// order, and the priorities computed from the job's record (the key
	// being too close to half a point): tests check the paths ran, and
	// the back-off.
	rankings, keyed, promoted, merged, exact uint64
}

// keptKey is one kept job's key.
type keptKey struct {
	key    float64 // its priority before rounding at now0, uncapped
	submit int64   // its submit time (nanoseconds since 1970)
	// capped is its priority before rounding once it has waited MaxAge
	// (its static part plus the age weight; +Inf without an age term).
	capped float64
	// id is the job ID's first eight bytes, big-endian, zero-padded:
	// ordered as the IDs are where they differ (keptAfter).
	id uint64
	// prio is the job's priority when it was last placed, and cross
	// the least gain (keptRank.gained) from which it may be another
	// (crossAt).
	prio  uint64
	cross float64
	// quiet is the world (cycle.worldNow) in which the job's stamp held
	// when the walk last left it, 0 for none: the walk passes over the
	// job without reading its record while that world lasts (quietWalk).
	quiet uint64
	// class names the entry of the cycle's class table (classMark) the
	// job's outcome fell in when the walk last left it with its stamp
	// holding, 0 for none: in a later world, the walk passes over the job
	// without reading its record once a job of the same class failed
	// there as before (classHolds). keptGone marks a job that left.
	class uint64
}

// keptGone is the class of a kept key whose job left the queue: the walk
// passes over it without reading its record while no job came back to
// its place in the kept order (cycle.goneOK). No class table entry's
// serial reaches it.
const keptGone = ^uint64(0)

// keptEntry is a job that joined, with its key.
type keptEntry struct {
	j *jobRec
	k keptKey
}

// keptEligible reports whether this engine's configuration lets a ranking
// be kept: fair-share weights other than age alone (which fifo.go keeps in
// submit order), nothing that reorders or windows the queue, no
// starvation boost.
func (e *Engine) keptEligible() bool {
	return !e.naive && e.quota == nil && e.cfg.MaxJobsTested == 0 && e.fsView.Config().StarvationBound <= 0
}

// rankKept brings the kept ranking up to date at now and returns it; it
// reports false, and turns the kept ranking off, when it cannot be kept
// this cycle (the caller then ranks the whole queue).
func (e *Engine) rankKept(now time.Time) ([]*jobRec, bool) {
	kr := &e.kr
	if !kr.on {
		return nil, false
	}
	ns := now.UnixNano()
	if !e.keptEligible() || !e.keptConfigSame() || !e.keptFactorsSame() ||
		kr.maxAge > 0 && ns-kr.now0 >= int64(kr.maxAge) {
		// (Keys a whole MaxAge old are computed again, which keeps the
		// priorities before rounding they give, min(key+gained,
		// capped), and so their float errors, below twice the weights'
		// total.)
		e.leaveKept()
		return nil, false
	}
	last := kr.gained
	kr.gained = 0
	if kr.age > 0 && kr.maxAge > 0 {
		kr.gained = kr.age * (float64(ns-kr.now0) / float64(kr.maxAge))
	}
	// The jobs that joined, once each, with their keys.
	fresh := kr.fresh[:0]
	finite := true
	for _, j := range kr.joined {
		if j.phase != StatePending || j.keptGen == kr.gen {
			continue // left again, listed twice, or back at its place
		}
		k, ok := e.keptKeyOf(j)
		if finite = ok; !ok {
			break
		}
		j.keptGen = kr.gen
		fresh = append(fresh, keptEntry{j: j, k: k})
	}
	clear(kr.joined) // keeps no record alive
	kr.joined = kr.joined[:0]
	if !finite || kr.gained < last {
		// A key that is not finite: keys no longer order the queue
		// (and the time never goes back). The stamps given to the jobs
		// that joined go stale with the next keys (keepRanking).
		clear(fresh)
		kr.fresh = fresh[:0]
		e.leaveKept()
		return nil, false
	}
	e.promote()
	if compact := kr.gone > 16 && kr.gone > len(e.order)/4; len(fresh) > 0 || compact {
		e.mergeKept(fresh, compact)
	}
	clear(fresh)
	kr.fresh = fresh[:0]
	kr.rankings++
	kr.lasted++
	if kr.lasted == 4 {
		// A kept ranking that lasts (see leaveKept) drops the records
		// the whole one holds; one that does not is left the cost.
		e.dropWholeRanking()
	}
	if e.checkEach {
		e.checkKept()
	}
	return e.order, true
}

// promote mends the kept order where a job's priority may have grown
// since it was placed (its cross is reached): the job's priority is
// computed again and, when it changed, the job moves up past the jobs that
// now rank after it. Before the pass the order is sorted by the jobs'
// last priorities, which only grow; the jobs before position i are sorted
// by their priorities now, and a job whose priority did not change ranks
// after every one of them that it followed, so the pass is an insertion
// sort that moves only the jobs whose priority changed, each past the few
// within a point of it. (A priority that fell, which the float error
// bound rules out, would move its job down, which the pass allows too.)
func (e *Engine) promote() {
	kr := &e.kr
	keys := kr.keys
	g := kr.gained
	// The positions whose cross is reached, gathered without a branch:
	// about half of a long queue at Philly's pace, in no order a branch
	// predicts.
	due := slices.Grow(kr.due[:0], len(keys))[:len(keys)]
	n := 0
	for i := range keys {
		due[n] = int32(i)
		n += b2i(keys[i].cross <= g)
	}
	kr.due = due
	for _, i := range due[:n] {
		if !e.promoteAt(int(i)) {
			// A priority fell (float error) and its job moved down: the
			// positions after it shifted, so the rest of the pass looks
			// at every position from there.
			e.promoteFrom(int(i))
			return
		}
	}
}

// promoteFrom is promote's pass from position i on, looking at every
// position.
func (e *Engine) promoteFrom(i int) {
	keys, g := e.kr.keys, e.kr.gained
	for ; i < len(keys); i++ {
		if keys[i].cross <= g && !e.promoteAt(i) {
			i-- // position i holds a job not yet looked at
		}
	}
}

// promoteAt computes again the priority of the kept job at position i,
// whose cross is reached, and moves it where it now ranks; it reports
// false when the job moved down (the jobs after i then moved up one).
func (e *Engine) promoteAt(i int) bool {
	kr := &e.kr
	keys, order, g := kr.keys, e.order, kr.gained
	kp := &keys[i]
	p := e.keptPrio(order[i], kp)
	kp.cross = kr.crossAt(kp, g)
	if p == kp.prio {
		return true
	}
	up := p > kp.prio
	kp.prio = p
	kr.promoted++
	// Most changes keep the job's place: it is written in place.
	if up && (i == 0 || !keptAfter(&keys[i-1], order[i-1], kp, order[i])) ||
		!up && (i+1 == len(keys) || !keptAfter(kp, order[i], &keys[i+1], order[i+1])) {
		return true
	}
	k, j := *kp, order[i]
	at := i
	if up {
		for at > 0 && keptAfter(&keys[at-1], order[at-1], &k, j) {
			keys[at], order[at] = keys[at-1], order[at-1]
			at--
		}
	} else {
		for at+1 < len(keys) && keptAfter(&k, j, &keys[at+1], order[at+1]) {
			keys[at], order[at] = keys[at+1], order[at+1]
			at++
		}
	}
	keys[at], order[at] = k, j
	return up
}

// b2i is 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// keptAfter reports whether kept job ja (key a) ranks after kept job jb
// (key b) by their priorities when last placed, submit times and IDs.
func keptAfter(a *keptKey, ja *jobRec, b *keptKey, jb *jobRec) bool {
	switch {
	case a.prio != b.prio:
		return a.prio < b.prio
	case a.submit != b.submit:
		return a.submit > b.submit
	case a.id != b.id:
		return a.id > b.id // without reading the jobs' records
	}
	return ja.job.ID > jb.job.ID
}

// idPrefix returns the first eight bytes of id as a big-endian number,
// zero-padded: two IDs whose prefixes differ order as their prefixes do.
func idPrefix(id string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(id) {
			p |= uint64(id[i])
		}
	}
	return p
}

// dropWholeRanking clears the last whole ranking's input and output
// (whose records the kept ranking no longer reads), so that they keep no
// job's record alive while the ranking is kept; once per kept period,
// at its fourth cycle.
func (e *Engine) dropWholeRanking() {
	clear(e.lastRanking[:cap(e.lastRanking)])
	clear(e.rankIn[:cap(e.rankIn)])
	clear(e.preps[:cap(e.preps)])
	e.lastRanking, e.rankIn, e.preps = e.lastRanking[:0], e.rankIn[:0], e.preps[:0]
}

// clearPast clears the elements of s from n on, up to its length: a
// slice reused for n elements then keeps no job's record alive past them.
func clearPast[T any](s []T, n int) {
	if n < len(s) {
		clear(s[n:])
	}
}

// emptied returns s emptied for reuse by n elements (clearPast).
func emptied[T any](s []T, n int) []T {
	clearPast(s, n)
	return s[:0]
}

// mergeKept merges the jobs that joined (fresh, with their keys) into the
// kept order, sorted by their priorities now, and, when compact is set,
// drops the entries of jobs that left the queue (the only pass over the
// waiting jobs' records; otherwise the walk passes over them).
func (e *Engine) mergeKept(fresh []keptEntry, compact bool) {
	kr := &e.kr
	for i := range fresh {
		f := &fresh[i]
		f.k.prio, f.k.cross = e.keptPrio(f.j, &f.k), kr.crossAt(&f.k, kr.gained)
	}
	slices.SortFunc(fresh, func(a, b keptEntry) int {
		switch {
		case keptAfter(&a.k, a.j, &b.k, b.j):
			return 1
		case keptAfter(&b.k, b.j, &a.k, a.j):
			return -1
		}
		return 0
	})
	kr.merged += uint64(len(fresh))
	if !compact {
		// In place, from the end: the order grows by the jobs that
		// joined, and only the entries after the first of them move,
		// each once (jobs join a few a cycle, mostly near the end).
		n := len(e.order)
		e.order = slices.Grow(e.order, len(fresh))[:n+len(fresh)]
		kr.keys = slices.Grow(kr.keys, len(fresh))[:n+len(fresh)]
		i, w := n-1, n+len(fresh)-1
		for a := len(fresh) - 1; a >= 0; w-- {
			if i >= 0 && keptAfter(&kr.keys[i], e.order[i], &fresh[a].k, fresh[a].j) {
				e.order[w], kr.keys[w] = e.order[i], kr.keys[i]
				i--
			} else {
				e.order[w], kr.keys[w] = fresh[a].j, fresh[a].k
				a--
			}
		}
		return
	}
	out, keys := kr.order2[:0], kr.keys2[:0]
	a := 0
	for i, j := range e.order {
		if compact && j.phase != StatePending {
			if j.keptGen == kr.gen {
				j.keptGen = 0
			}
			continue
		}
		k := &kr.keys[i]
		for a < len(fresh) && keptAfter(k, j, &fresh[a].k, fresh[a].j) {
			out, keys = append(out, fresh[a].j), append(keys, fresh[a].k)
			a++
		}
		out, keys = append(out, j), append(keys, *k)
	}
	for ; a < len(fresh); a++ {
		out, keys = append(out, fresh[a].j), append(keys, fresh[a].k)
	}
	if compact {
		kr.gone = 0
	}
	// The old storage is the next merge's scratch, cleared so that it
	// keeps no record alive.
	clear(e.order)
	kr.order2, kr.keys2 = e.order[:0], kr.keys[:0]
	e.order, kr.keys = out, keys
}

// crossAt returns the least gain from which job key k, whose priority
// was settled at gain g, may have another priority. Its priority before
// rounding, min(k.key plus the gain, k.capped), is known within the
// slack; the rounded priority stays as it was while the interval from
// that value at g less twice the slack to k.key plus the later gain plus
// twice the slack holds no half point (the capped value is below the
// uncapped one), and for good once the job's age is capped beyond doubt.
func (kr *keptRank) crossAt(k *keptKey, g float64) float64 {
	slack := 2 * kr.slack
	if g >= k.capped-k.key+slack {
		return math.Inf(1) // capped: its priority no longer grows
	}
	half := math.Ceil(min(k.key+g, k.capped)-slack-0.5) + 0.5 // the first half point at or above the low end
	return half - slack - k.key
}

// keptPrio returns the priority of kept job j with key k this cycle: its
// priority before rounding (its key plus the gain, at most its capped
// value), rounded, unless that lies within the float error of half a
// point (then the job's record gives it exactly).
func (e *Engine) keptPrio(j *jobRec, k *keptKey) uint64 {
	kr := &e.kr
	v := min(k.key+kr.gained, k.capped)
	if f := v - math.Floor(v); math.Abs(f-0.5) > kr.slack {
		return uint64(math.Round(v))
	}
	kr.exact++
	return e.fsPriority(j)
}

// keepRanking computes the keys of the ranking just made whole at now,
// so that the next cycles keep it, when the configuration allows.
func (e *Engine) keepRanking(now time.Time) {
	kr := &e.kr
	kr.on = false
	clear(kr.joined)
	kr.joined = kr.joined[:0]
	if !e.keptEligible() {
		return
	}
	if kr.wait > 0 {
		// Kept rankings have not lasted lately: rank whole for a while
		// rather than pay for keys that the next cycle drops.
		kr.wait--
		return
	}
	kr.lasted = 0
	cfg := e.fsView.Config()
	kr.cfg = cfg
	kr.age, kr.maxAge, kr.now0 = float64(cfg.Weights.Age), cfg.MaxAge, now.UnixNano()
	// Priorities before rounding stay below the weights' total (the age
	// factor is at most 1; a key past it is capped, whatever its own
	// value): their error is a few units in the last place of that
	// (fairshare's TestStaticKeyErrorBound measures it).
	kr.slack = float64(cfg.Weights.Total()+1) * 0x1p-40
	kr.factors = kr.factors[:0]
	for _, name := range e.accts.names {
		f, err := e.fsView.Factor(name)
		if err != nil {
			f = math.NaN()
		}
		kr.factors = append(kr.factors, f)
	}
	kr.gen++ // every stamp of an earlier kept order is stale
	kr.gone = 0
	kr.gained = 0
	// Room for the jobs that join before the next compaction, so that the
	// merges do not grow the keys again and again.
	keys := slices.Grow(kr.keys[:0], len(e.order)+len(e.order)/8+16)
	for _, j := range e.order {
		k, ok := e.keptKeyOf(j)
		if !ok {
			kr.keys = keys[:0]
			return
		}
		// Placed by this ranking, with the priority it computed.
		k.prio = e.prio[len(keys)]
		k.cross = kr.crossAt(&k, 0)
		keys = append(keys, k)
		j.keptGen = kr.gen
	}
	kr.keys, kr.on = keys, true
	kr.keyed++
}

// keptKeyOf returns waiting job j's key; false when the key is not
// finite.
func (e *Engine) keptKeyOf(j *jobRec) (keptKey, bool) {
	kr := &e.kr
	static, err := e.fsView.Static(&j.prep)
	if err != nil {
		panic(fmt.Sprintf("backfill: ranking checked jobs: %v", err))
	}
	sub := j.prep.Submitted()
	k := keptKey{key: static, submit: sub, id: j.idKey, capped: math.Inf(1)}
	if kr.age > 0 && kr.maxAge > 0 {
		k.key += kr.age * (float64(kr.now0-sub) / float64(kr.maxAge))
		k.capped = static + kr.age
	}
	if math.IsNaN(k.key) || math.IsInf(k.key, 0) {
		return keptKey{}, false // orders nothing
	}
	return k, true
}

// ranksAbove reports whether waiting job a ranks above waiting job b in
// this cycle's order: by their ranks, or under the kept fair-share
// ranking (which does not keep ranks) by the ranking's own order.
func (c *cycle) ranksAbove(a, b *jobRec) bool {
	e := c.e
	if !e.kr.on {
		return a.rank < b.rank
	}
	pa, pb := e.fsPriority(a), e.fsPriority(b)
	switch {
	case pa != pb:
		return pa > pb
	case a.prep.Submitted() != b.prep.Submitted():
		return a.prep.Submitted() < b.prep.Submitted()
	}
	return a.job.ID < b.job.ID
}

// fsPriority returns job j's priority at the cycle's fair-share view.
func (e *Engine) fsPriority(j *jobRec) uint64 {
	p, err := e.fsView.Priority(&j.prep)
	if err != nil {
		panic(fmt.Sprintf("backfill: ranking checked jobs: %v", err))
	}
	return p
}

// keptConfigSame reports whether the priority configuration is the one
// the keys were computed with (the caller's tree may be given another).
func (e *Engine) keptConfigSame() bool {
	return e.fsView.Config() == e.kr.cfg
}

// keptFactorsSame reports whether every account's fair-share factor is
// the one the keys were computed with (accounts new since then have no
// kept job: their factors are recorded now).
func (e *Engine) keptFactorsSame() bool {
	kr := &e.kr
	for i, name := range e.accts.names {
		f, err := e.fsView.Factor(name)
		if err != nil {
			f = math.NaN()
		}
		if i >= len(kr.factors) {
			kr.factors = append(kr.factors, f)
			continue
		}
		if f != kr.factors[i] && !(math.IsNaN(f) && math.IsNaN(kr.factors[i])) {
			return false
		}
	}
	return true
}

// leaveKept turns the kept ranking off; the next ranking is whole, from
// the kept order as its nearly sorted input.
func (e *Engine) leaveKept() {
	kr := &e.kr
	if !kr.on {
		return
	}
	kr.on = false
	clear(kr.joined)
	kr.joined = kr.joined[:0]
	e.lastRanking = append(emptied(e.lastRanking, len(e.order)), e.order...)
	// A kept ranking that did not last a few cycles did not pay for its
	// keys: back off, longer each time in a row (at most 64 cycles).
	if kr.lasted < 4 {
		kr.backoff = min(2*kr.backoff+1, 64)
		kr.wait = kr.backoff
	} else {
		kr.backoff = 0
	}
}

// checkKept panics unless the kept ranking lists each waiting job once,
// in the order, and with the priorities it computed, a whole ranking gives
// them, and its records of the jobs in it are right (checkEach).
func (e *Engine) checkKept() {
	ranked := e.wholeRanking()
	if len(e.kr.keys) != len(e.order) {
		panic(fmt.Sprintf("backfill: %d jobs in the kept order, %d keys", len(e.order), len(e.kr.keys)))
	}
	// The whole order, jobs that left included, is sorted by the keys'
	// priorities (what promote and the merge rely on).
	for i := 1; i < len(e.order); i++ {
		if keptAfter(&e.kr.keys[i-1], e.order[i-1], &e.kr.keys[i], e.order[i]) {
			panic(fmt.Sprintf("backfill: job %s (priority %d) kept before job %s (priority %d)", e.order[i-1].job.ID, e.kr.keys[i-1].prio, e.order[i].job.ID, e.kr.keys[i].prio))
		}
	}
	gone, at := 0, 0
	for i, j := range e.order {
		if j.keptGen != e.kr.gen {
			panic(fmt.Sprintf("backfill: job %s in the kept order with stamp %d, not %d", j.job.ID, j.keptGen, e.kr.gen))
		}
		if j.phase != StatePending {
			gone++
			continue
		}
		if at >= len(ranked) {
			panic(fmt.Sprintf("backfill: more jobs waiting in the kept order than the %d waiting", len(ranked)))
		}
		r := ranked[at]
		at++
		if want := e.jobs.pending[r.Index]; j != want {
			panic(fmt.Sprintf("backfill: job %s kept at rank %d, where the ranking puts job %s", j.job.ID, at-1, want.job.ID))
		}
		if p := e.kr.keys[i].prio; p != r.Priority {
			panic(fmt.Sprintf("backfill: job %s kept with priority %d, ranked with %d", j.job.ID, p, r.Priority))
		}
	}
	if at != len(ranked) {
		panic(fmt.Sprintf("backfill: %d jobs waiting in the kept order, %d waiting", at, len(ranked)))
	}
	if gone > e.kr.gone {
		panic(fmt.Sprintf("backfill: %d jobs that left in the kept order, %d counted", gone, e.kr.gone))
	}
}

// wholeRanking ranks the waiting queue whole (e.jobs.pending's indices), for
// the checks that compare a kept order with it (checkEach).
func (e *Engine) wholeRanking() []fairshare.RankEntry {
	preps := make([]fairshare.Prepared, len(e.jobs.pending))
	for i, j := range e.jobs.pending {
		preps[i] = j.prep
	}
	ranked, err := e.fsView.Rank(preps, nil)
	if err != nil {
		panic(fmt.Sprintf("backfill: ranking checked jobs: %v", err))
	}
	return ranked
}
