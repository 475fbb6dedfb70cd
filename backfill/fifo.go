package backfill

import (
	"cmp"
	"fmt"
	"slices"
)

// When the fair-share weights weigh only the age factor
// (fairshare.Weights.SubmitOrdered), priorities order the queue by submit
// time and ID whatever the time and the accounts' usage: strict FIFO and
// FIFO with backfill, as a Kubernetes host without fair share runs. The
// engine then keeps its queue in that order from cycle to cycle instead of
// scoring and sorting every waiting job each cycle: a ranking places the
// jobs that joined the queue since the last one and passes over the ones
// that left, and a waiting job's priority is computed only when its reason
// is reported. In strict order with Config.OnlyChangedWaits, the jobs
// behind the same blocker as last cycle are not visited at all
// (submitOrder.blocker). Ranking costs what changed, not the queue's
// length.
//
// e.order is then kept between cycles: a job waits at position i exactly
// when its pos is i (and its rank too); an entry whose job left the queue
// (started, cancelled, requeued to another position) is a gap the walk
// passes over. Jobs that join go to the end when they come after every
// waiting job in submit order, as arrivals do; otherwise (a requeued job
// keeps its submit time), or once more than 16 gaps make up over a quarter
// of the order past its head, or the head (the positions before the
// first waiting job) makes up over half of it, the order is rebuilt from
// the queue, which also lets go of the records of jobs long gone.

// submitOrder is the state of the queue kept in submit order.
type submitOrder struct {
	// on reports that e.order is the kept order (else the next ranking
	// in submit order builds it from the queue).
	on bool
	// head: e.order[:head] holds no waiting job.
	head int
	// gaps counts the entries of e.order[head:] whose job left the queue.
	gaps int
	// joined lists the jobs that joined the queue since the last ranking
	// (a job may be listed twice, or have left again).
	joined []*jobRec
	// tail describes the last strict walk: blocker (at position
	// blockerPos) held up every job waiting at the positions after it up
	// to tailEnd, and each was told so. When this cycle's blocker is the
	// same job at the same position, those jobs' reasons are unchanged.
	// blocker is nil when there is no such tail (the order was rebuilt,
	// the walk was not strict, or plans list every reason).
	blocker             *jobRec
	blockerPos, tailEnd int
	// rankings and skips count the rankings in kept order and the
	// strict tails skipped (tests check that the paths run).
	rankings, skips uint64
}

// submitOrdered reports whether this cycle ranks in kept submit order:
// the weights of the cycle's fair-share view (the tree's, which the
// caller may have changed since New) order by submit time, and nothing
// reorders or windows the queue (quotas put entitled jobs first;
// MaxJobsTested tests a window of positions).
func (e *Engine) submitOrdered() bool {
	return !e.naive && e.fsView.Config().Weights.SubmitOrdered() && e.quota == nil && e.cfg.MaxJobsTested == 0
}

// enqueue adds j to the waiting queue.
func (e *Engine) enqueue(j *jobRec) {
	e.jobs.pending = insertSorted(e.jobs.pending, j)
	j.noFitGen, j.tested = 0, 0
	if j.tight != nil {
		e.jobs.patient++
	}
	j.pos = -1
	if e.fifo.on {
		e.fifo.joined = append(e.fifo.joined, j)
	}
	if e.kr.on {
		if j.keptGen != e.kr.gen {
			e.kr.joined = append(e.kr.joined, j)
		} else {
			e.kr.back++ // back at its kept place
		}
	}
}

// dequeue takes j out of the waiting queue.
func (e *Engine) dequeue(j *jobRec) {
	e.jobs.pending = removeSorted(e.jobs.pending, j)
	if j.tight != nil {
		e.jobs.patient--
	}
	if j.pos >= 0 {
		e.fifo.gaps++
		j.pos = -1
	}
	if e.kr.on && j.keptGen == e.kr.gen {
		e.kr.gone++
		e.kr.left++
	}
}

// submitBefore orders waiting jobs as priorities that weigh only age do:
// by submit time, then ID (unique among waiting jobs).
func submitBefore(a, b *jobRec) int {
	if c := cmp.Compare(a.prep.Submitted(), b.prep.Submitted()); c != 0 {
		return c
	}
	return cmpString(a.job.ID, b.job.ID)
}

// rankSubmitOrder brings the kept order up to date and returns its part
// from the first waiting job on; c.base is that part's first position.
func (e *Engine) rankSubmitOrder() []*jobRec {
	f := &e.fifo
	if !f.on {
		e.rebuildOrder()
	}
	order := e.order
	for f.head < len(order) && order[f.head].pos != f.head {
		f.head++
		f.gaps--
	}
	joined := f.joined[:0]
	for _, j := range f.joined {
		if j.phase == StatePending && j.pos == -1 {
			j.pos = -2 // listed once
			joined = append(joined, j)
		}
	}
	f.joined = joined
	slices.SortFunc(joined, submitBefore)
	last := len(order) - 1
	for last >= f.head && order[last].pos != last {
		last--
	}
	switch {
	case len(joined) > 0 && last >= f.head && submitBefore(joined[0], order[last]) < 0,
		f.gaps > 16 && f.gaps > (len(order)-f.head)/4,
		f.head > 64 && f.head > len(order)/2:
		e.rebuildOrder()
	default:
		for _, j := range joined {
			j.pos, j.rank = len(order), len(order)
			order = append(order, j)
		}
		e.order = order
	}
	f.joined = f.joined[:0]
	f.rankings++
	if e.checkEach {
		e.checkSubmitOrder()
	}
	return e.order[f.head:]
}

// rebuildOrder builds the kept order from the queue.
func (e *Engine) rebuildOrder() {
	f := &e.fifo
	old := e.order
	order := append(old[:0], e.jobs.pending...)
	if len(order) < len(old) {
		clear(old[len(order):]) // records of jobs gone: let them go
	}
	slices.SortFunc(order, submitBefore)
	for i, j := range order {
		j.pos, j.rank = i, i
	}
	e.order = order
	f.on, f.head, f.gaps, f.blocker = true, 0, 0, nil
	f.joined = f.joined[:0]
}

// checkSubmitOrder panics unless the kept order lists exactly the waiting
// jobs, in the order the fair-share ranking gives them (checkEach).
func (e *Engine) checkSubmitOrder() {
	var live []*jobRec
	for i, j := range e.order {
		if j.pos == i {
			if i < e.fifo.head || j.phase != StatePending || j.rank != i {
				panic(fmt.Sprintf("backfill: job %s kept at position %d (head %d) in phase %v, rank %d", j.job.ID, i, e.fifo.head, j.phase, j.rank))
			}
			live = append(live, j)
		}
	}
	if gaps := len(e.order) - e.fifo.head - len(live); gaps != e.fifo.gaps {
		panic(fmt.Sprintf("backfill: %d gaps in the kept order, %d counted", gaps, e.fifo.gaps))
	}
	ranked := e.wholeRanking()
	if len(ranked) != len(live) {
		panic(fmt.Sprintf("backfill: %d jobs kept in submit order, %d waiting", len(live), len(ranked)))
	}
	for i, r := range ranked {
		if j := e.jobs.pending[r.Index]; live[i] != j {
			panic(fmt.Sprintf("backfill: job %s kept at rank %d, where the ranking puts job %s", live[i].job.ID, i, j.job.ID))
		}
	}
}

// priority returns the priority of job j, at index i of the order the
// walk goes through: the ranking's (whole or kept under fair-share
// weights), or computed now in the kept submit order, which computes
// none.
func (c *cycle) priority(i int, j *jobRec) uint64 {
	switch {
	case c.e.kr.on:
		return c.e.kr.keys[i].prio // the kept ranking's (keptKey.prio)
	case !c.fifo:
		return c.e.prio[i]
	}
	p, err := c.e.fsView.Priority(&j.prep)
	if err != nil {
		panic(fmt.Sprintf("backfill: ranking checked jobs: %v", err))
	}
	return p
}
