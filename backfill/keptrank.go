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
// its wait over MaxAge. While the accounts' fair-share factors stay as
// they are (under Fair Tree they change only when the accounts' order
// does: 96 times in the 156,803 cycles of Philly at load 4), no job's
// wait reaches MaxAge, no job is submitted in the future and no
// starvation bound is set, every job's priority grows by the same amount
// between two cycles. Its key, the priority it had before rounding at the
// instant the keys were computed (keptRank.now0), then orders the jobs at
// every instant, up to rounding and float error: a job whose key exceeds
// another's by at least keptRank.margin (one priority point and a bound on
// the float error) ranks strictly above it.
//
// The kept order is cut into spans: a cut falls between two positions when
// every key before it, back to the last cut, exceeds every key after it by
// the margin. Jobs in different spans keep their order. Inside a span the
// order may change with time only when it holds jobs with different
// priority inputs (fairshare.View.SameInputs; two jobs with the same
// inputs rank by submit time at every instant) or a job that just joined:
// such a span is re-ranked (its groups merged, with exact priorities for
// the jobs compared), the others are left as they are. A cycle reads no
// waiting job's record but those of the jobs that joined and of the
// re-ranked spans: jobs that left stay in the order, passed over by the
// walk, until a quarter of it has left; ranks are not kept (holds compare
// jobs with cycle.ranksAbove). Ranking the queue whole scores and sorts
// every job. A waiting job's priority is computed when its reason is
// reported (cycle.priority).
//
// When any of the conditions fails (a fair-share factor or the priority
// configuration changed, a job reached MaxAge or was submitted after the
// cycle's instant), the cycle ranks the whole queue (Engine.rank), and the
// keys are computed again from that ranking.

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
	// margin is the key difference from which one job ranks strictly
	// above another at every instant: one priority point plus a bound on
	// the float error of the keys and of the priorities.
	margin float64
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
	// lasted counts the kept rankings since the keys were computed;
	// after one that lasted fewer than four, the next wait whole
	// rankings go by before keys are computed again, backoff doubling.
	lasted, wait, backoff int
	// groups holds one job's prepared form per set of priority inputs
	// (keptKey.group); a key's group is found by a linear search, and
	// past maxKeptGroups sets the ranking is not kept.
	groups []fairshare.Prepared
	// Scratch: the compacted order and its keys, the suffix maxima, a
	// span's jobs and keys while it is re-ranked.
	order2 []*jobRec
	keys2  []keptKey
	sufMax []float64
	span   []keptEntry
	runs   []keptRun
	merged []keptEntry
	// groupAt maps a group to its run in the span being re-ranked (index
	// + 1; 0 outside groupRuns).
	groupAt []int32
	// rankings, reranked, scored, exact and keyed count the kept
	// rankings, the spans re-ranked, the jobs whose priorities they
	// computed (exact: from the job's record, the key being too close to
	// half a point) and the whole rankings whose keys were computed
	// (tests check the paths ran, and the back-off).
	rankings, reranked, scored, exact, keyed uint64
}

// keptKey is one kept job's key.
type keptKey struct {
	key    float64 // its priority before rounding at now0, uncapped
	submit int64   // its submit time (nanoseconds since 1970)
	group  int32   // the index of its priority inputs in keptRank.groups
	fresh  bool    // it joined at this ranking
}

// keptRun is one group's jobs in a span being re-ranked: span[next:end]
// are still to be merged.
type keptRun struct {
	next, end int
	group     int32
	fresh     bool // it holds a job that just joined
}

// keptEntry is a job of a span being re-ranked.
type keptEntry struct {
	j    *jobRec
	k    keptKey
	prio uint64
}

// maxKeptGroups bounds the sets of priority inputs a kept ranking tells
// apart (accounts, GPU counts under a size weight, QOS and partition
// values); beyond it the queue is ranked whole every cycle.
const maxKeptGroups = 256

// prioUnknown marks, in e.prio, a priority not computed by the ranking.
const prioUnknown = math.MaxUint64

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
	if !e.keptEligible() || !e.keptConfigSame() || !e.keptFactorsSame() ||
		kr.maxAge > 0 && now.UnixNano()-kr.now0 >= int64(kr.maxAge) {
		// (Keys a whole MaxAge old are computed again, which keeps
		// their values, and so their float errors, below twice the
		// weights' total.)
		e.leaveKept()
		return nil, false
	}
	// The jobs that joined, once each, with their keys, by key.
	span := kr.span[:0]
	for _, j := range kr.joined {
		if j.phase != StatePending || j.keptGen == kr.gen {
			continue // left again, listed twice, or back at its place
		}
		k, ok := e.keptKeyOf(j)
		if !ok {
			clear(kr.joined)
			kr.joined = kr.joined[:0]
			clear(span)
			kr.span = span[:0]
			e.leaveKept()
			return nil, false
		}
		j.keptGen, k.fresh = kr.gen, true
		span = append(span, keptEntry{j: j, k: k})
	}
	clear(kr.joined) // keeps no record alive
	clear(kr.joined)
	kr.joined = kr.joined[:0]
	if compact := kr.gone > 16 && kr.gone > len(e.order)/4; len(span) > 0 || compact {
		e.mergeKept(span, compact)
	}
	clear(span)
	kr.span = span[:0]
	e.prio = slices.Grow(e.prio[:0], len(e.order))[:len(e.order)]
	for i := range e.prio {
		e.prio[i] = prioUnknown
	}
	kr.gained = 0
	if ns := now.UnixNano(); kr.age > 0 && kr.maxAge > 0 {
		kr.gained = kr.age * (float64(ns-kr.now0) / float64(kr.maxAge))
	}
	if !e.rerankSpans(now.UnixNano()) {
		// A job whose age factor stopped growing (or submitted after
		// now): keys no longer order the queue.
		e.leaveKept()
		return nil, false
	}
	kr.rankings++
	kr.lasted++
	if kr.lasted == 1 {
		e.dropWholeRanking()
	}
	if e.checkEach {
		e.checkKept()
	}
	return e.order, true
}

// dropWholeRanking clears the last whole ranking's input and output
// (whose records the kept ranking no longer reads), so that they keep no
// job's record alive while the ranking is kept; once per kept period.
func (e *Engine) dropWholeRanking() {
	clear(e.lastRanking[:cap(e.lastRanking)])
	clear(e.rankIn[:cap(e.rankIn)])
	clear(e.preps[:cap(e.preps)])
	e.lastRanking, e.rankIn, e.preps = e.lastRanking[:0], e.rankIn[:0], e.preps[:0]
}

// mergeKept merges the jobs that joined (span, by key) into the kept
// order by key and, when compact is set, drops the entries of jobs that
// left the queue (the only pass over the waiting jobs' records; otherwise
// the walk passes over them).
func (e *Engine) mergeKept(span []keptEntry, compact bool) {
	kr := &e.kr
	slices.SortFunc(span, func(a, b keptEntry) int {
		if a.k.key != b.k.key {
			if a.k.key > b.k.key {
				return -1
			}
			return 1
		}
		return cmpString(a.j.job.ID, b.j.job.ID)
	})
	out, keys := kr.order2[:0], kr.keys2[:0]
	a := 0
	for i, j := range e.order {
		if compact && j.phase != StatePending {
			if j.keptGen == kr.gen {
				j.keptGen = 0
			}
			continue
		}
		k := kr.keys[i]
		for a < len(span) && span[a].k.key > k.key {
			out, keys = append(out, span[a].j), append(keys, span[a].k)
			a++
		}
		out, keys = append(out, j), append(keys, k)
	}
	for ; a < len(span); a++ {
		out, keys = append(out, span[a].j), append(keys, span[a].k)
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

// rerankSpans cuts the kept order into spans and re-ranks, with the jobs'
// exact priorities, those whose order may have changed. It reports false
// when a job in the order (waiting or not) was submitted after ns, or has
// waited MaxAge: the keys do not order such jobs.
func (e *Engine) rerankSpans(ns int64) bool {
	kr := &e.kr
	keys := kr.keys
	n := len(keys)
	suf := slices.Grow(kr.sufMax[:0], n)[:n]
	// Keys are never NaN: plain comparisons, not the builtin min and max
	// (which order NaNs).
	top := math.Inf(-1)
	minSub, maxSub := int64(math.MaxInt64), int64(math.MinInt64)
	for i := n - 1; i >= 0; i-- {
		if k := keys[i].key; k > top {
			top = k
		}
		suf[i] = top
		minSub, maxSub = min(minSub, keys[i].submit), max(maxSub, keys[i].submit)
	}
	kr.sufMax = suf
	if n > 0 && (maxSub > ns || kr.age > 0 && kr.maxAge > 0 && ns-minSub >= int64(kr.maxAge)) {
		return false
	}
	lo, runMin := 0, math.Inf(1)
	for i := range n {
		if k := keys[i].key; k < runMin {
			runMin = k
		}
		if i+1 < n && runMin-suf[i+1] < kr.margin {
			continue
		}
		if i+1-lo > 1 {
			switch mixed, fresh := e.spanState(lo, i+1); {
			case mixed:
				e.rerank(lo, i+1)
			case fresh:
				e.sortSubmitted(lo, i+1)
			}
		}
		for k := lo; k <= i; k++ {
			keys[k].fresh = false
		}
		lo, runMin = i+1, math.Inf(1)
	}
	return true
}

// spanState reports whether span [lo, hi) of the kept order holds jobs
// with different priority inputs (their order may change with time), and
// whether it holds a job that just joined (placed by its key, which need
// not break ties as the ranking does).
func (e *Engine) spanState(lo, hi int) (mixed, fresh bool) {
	keys := e.kr.keys[lo:hi]
	for i := range keys {
		mixed = mixed || keys[i].group != keys[0].group
		fresh = fresh || keys[i].fresh
	}
	return mixed, fresh
}

// sortSubmitted orders span [lo, hi), whose jobs have the same priority
// inputs, by submit time and ID: the ranking's order for such jobs at
// every instant, found without their priorities.
func (e *Engine) sortSubmitted(lo, hi int) {
	kr := &e.kr
	span := kr.span[:0]
	for i := lo; i < hi; i++ {
		span = append(span, keptEntry{j: e.order[i], k: kr.keys[i], prio: prioUnknown})
	}
	e.placeSpan(lo, span)
}

// rerank orders span [lo, hi) of the kept order, whose jobs have
// different priority inputs, as the fair-share ranking does (priority,
// then submit time, then ID). The jobs of one group (the same inputs) rank
// by submit time and ID at every instant, so the span is the merge of its
// groups in that order; the merge takes from the group whose next job
// ranks first as many jobs as rank before every other group's next one,
// found by a galloping search. Priorities are computed for the jobs
// compared only: a burst of one account's jobs that another's job falls
// into costs a few dozen priorities, not one per job.
func (e *Engine) rerank(lo, hi int) {
	kr := &e.kr
	span, runs := e.groupRuns(lo, hi)
	merged := kr.merged[:0]
	for {
		// The group whose next job ranks first, and the best next job
		// of the others.
		first, second := -1, -1
		for r := range runs {
			if runs[r].next == runs[r].end {
				continue
			}
			switch {
			case first < 0:
				first = r
			case e.keptBefore(&span[runs[r].next], &span[runs[first].next]):
				first, second = r, first
			case second < 0 || e.keptBefore(&span[runs[r].next], &span[runs[second].next]):
				second = r
			}
		}
		if first < 0 {
			break
		}
		run := &runs[first]
		take := run.end
		if second >= 0 {
			take = e.gallop(span, run.next, run.end, &span[runs[second].next])
		}
		merged = append(merged, span[run.next:take]...)
		run.next = take
	}
	for i, s := range merged {
		e.order[lo+i], kr.keys[lo+i], e.prio[lo+i] = s.j, s.k, s.prio
		if s.prio != prioUnknown {
			kr.scored++
		}
	}
	clear(span)
	clear(merged)
	kr.span, kr.runs, kr.merged = span[:0], runs[:0], merged[:0]
	kr.reranked++
}

// groupRuns lists span [lo, hi) of the kept order by group (each group's
// jobs by submit time and ID, as they rank) in kr.span, and the groups'
// runs in kr.runs. The span lists each group's jobs in that order already,
// but for the jobs that just joined: a stable partition by group, and an
// insertion sort of the runs with such jobs, are enough.
func (e *Engine) groupRuns(lo, hi int) ([]keptEntry, []keptRun) {
	kr := &e.kr
	if len(kr.groupAt) < len(kr.groups) {
		kr.groupAt = make([]int32, maxKeptGroups)
	}
	runs := kr.runs[:0]
	for i := lo; i < hi; i++ {
		g := kr.keys[i].group
		at := kr.groupAt[g] - 1 // runs index + 1, 0 when none yet
		if at < 0 || int(at) >= len(runs) || runs[at].group != g {
			at = int32(len(runs))
			kr.groupAt[g] = at + 1
			runs = append(runs, keptRun{group: g})
		}
		runs[at].end++ // a count until the offsets below
		runs[at].fresh = runs[at].fresh || kr.keys[i].fresh
	}
	n := 0
	for r := range runs {
		c := runs[r].end
		runs[r].next, runs[r].end = n, n // end: the next free slot
		n += c
	}
	span := slices.Grow(kr.span[:0], n)[:n]
	for i := lo; i < hi; i++ {
		r := &runs[kr.groupAt[kr.keys[i].group]-1]
		span[r.end] = keptEntry{j: e.order[i], k: kr.keys[i], prio: prioUnknown}
		r.end++
	}
	for r := range runs {
		kr.groupAt[runs[r].group] = 0
		if runs[r].fresh {
			part := span[runs[r].next:runs[r].end]
			for i := 1; i < len(part); i++ {
				for k := i; k > 0 && submittedBefore(&part[k], &part[k-1]); k-- {
					part[k], part[k-1] = part[k-1], part[k]
				}
			}
		}
	}
	kr.span, kr.runs = span, runs
	return span, runs
}

// submittedBefore orders jobs of one group: by submit time, then ID.
func submittedBefore(a, b *keptEntry) bool {
	if a.k.submit != b.k.submit {
		return a.k.submit < b.k.submit
	}
	return a.j.job.ID < b.j.job.ID
}

// gallop returns the end of the jobs of span[from:to] (a group, in its
// order) that rank before h; the first does.
func (e *Engine) gallop(span []keptEntry, from, to int, h *keptEntry) int {
	// Probe from+1, from+3, from+7, ... until one does not rank before h,
	// then search the last stride.
	lo, step := from+1, 1 // span[:lo] rank before h
	hi := to
	for lo < to {
		p := min(lo+step-1, to-1)
		if !e.keptBefore(&span[p], h) {
			hi = p
			break
		}
		lo, step = p+1, step*2
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e.keptBefore(&span[m], h) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// keptBefore reports whether a ranks before b (the fair-share ranking's
// order), computing the priorities it needs.
func (e *Engine) keptBefore(a, b *keptEntry) bool {
	pa, pb := e.keptPriority(a), e.keptPriority(b)
	switch {
	case pa != pb:
		return pa > pb
	case a.k.submit != b.k.submit:
		return a.k.submit < b.k.submit
	}
	return a.j.job.ID < b.j.job.ID
}

// keptPriority returns the priority of x, computed once: its key plus
// the age all jobs gained since the keys' instant, rounded, unless that
// lies within the float error of half a point (then the job's record
// gives it exactly).
func (e *Engine) keptPriority(x *keptEntry) uint64 {
	if x.prio == prioUnknown {
		kr := &e.kr
		v := x.k.key + kr.gained
		if f := v - math.Floor(v); math.Abs(f-0.5) > kr.margin-1 {
			x.prio = uint64(math.Round(v))
		} else {
			x.prio = e.fsPriority(x.j)
			kr.exact++
		}
	}
	return x.prio
}

// placeSpan sorts span as the fair-share ranking does (priority, then
// submit time, then ID; the priorities are all known or all
// prioUnknown) and writes it to the kept order from position lo.
func (e *Engine) placeSpan(lo int, span []keptEntry) {
	kr := &e.kr
	slices.SortFunc(span, func(a, b keptEntry) int {
		switch {
		case a.prio != b.prio:
			if a.prio > b.prio {
				return -1
			}
			return 1
		case a.k.submit != b.k.submit:
			if a.k.submit < b.k.submit {
				return -1
			}
			return 1
		}
		return cmpString(a.j.job.ID, b.j.job.ID)
	})
	for i, s := range span {
		e.order[lo+i], kr.keys[lo+i], e.prio[lo+i] = s.j, s.k, s.prio
	}
	clear(span)
	kr.span = span[:0]
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
	// Priorities stay below the weights' total (the age factor stays
	// below 1): the error of a key or a priority before rounding is a few
	// units in the last place of that.
	kr.margin = 1 + float64(cfg.Weights.Total()+1)*0x1p-40
	kr.factors = kr.factors[:0]
	for _, name := range e.accts.names {
		f, err := e.fsView.Factor(name)
		if err != nil {
			f = math.NaN()
		}
		kr.factors = append(kr.factors, f)
	}
	kr.groups = kr.groups[:0]
	kr.gen++ // every stamp of an earlier kept order is stale
	kr.gone = 0
	keys := kr.keys[:0]
	for _, j := range e.order {
		k, ok := e.keptKeyOf(j)
		if !ok {
			kr.keys = keys[:0]
			return
		}
		keys = append(keys, k)
		j.keptGen = kr.gen
	}
	kr.keys, kr.on = keys, true
	kr.keyed++
}

// keptKeyOf returns waiting job j's key; false when its priority inputs
// would make more than maxKeptGroups groups (or the key is not finite).
func (e *Engine) keptKeyOf(j *jobRec) (keptKey, bool) {
	kr := &e.kr
	static, err := e.fsView.Static(&j.prep)
	if err != nil {
		panic(fmt.Sprintf("backfill: ranking checked jobs: %v", err))
	}
	sub := j.prep.Submitted()
	k := keptKey{key: static, submit: sub, group: -1}
	if kr.age > 0 && kr.maxAge > 0 {
		k.key += kr.age * (float64(kr.now0-sub) / float64(kr.maxAge))
	}
	if math.IsNaN(k.key) || math.IsInf(k.key, 0) {
		return keptKey{}, false // orders nothing
	}
	for g := range kr.groups {
		same, err := e.fsView.SameInputs(&kr.groups[g], &j.prep)
		if err != nil {
			panic(fmt.Sprintf("backfill: ranking checked jobs: %v", err))
		}
		if same {
			k.group = int32(g)
			break
		}
	}
	if k.group < 0 {
		if len(kr.groups) == maxKeptGroups {
			return keptKey{}, false
		}
		k.group = int32(len(kr.groups))
		kr.groups = append(kr.groups, j.prep)
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
	e.lastRanking = append(e.lastRanking[:0], e.order...)
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
	if len(e.kr.keys) != len(e.order) || len(e.prio) != len(e.order) {
		panic(fmt.Sprintf("backfill: %d jobs in the kept order, %d keys, %d priorities", len(e.order), len(e.kr.keys), len(e.prio)))
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
		if p := e.prio[i]; p != prioUnknown && p != r.Priority {
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
