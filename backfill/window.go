package backfill

// The MaxJobsTested windows. A cycle with a window tests the first
// MaxJobsTested jobs in priority order that the current round of windows
// has not tested; when fewer are left, a new round begins and the window
// fills from the top of the queue. The jobs always tested (reservations,
// holds, claims, strict heads) are tested outside the window too, and
// count as tested in the round, so that they take a window's place only
// at the start of a round (and in the fill from the top). Rounds go by
// job, not by rank, so that jobs starting, arriving or changing places in
// the order between cycles neither skip a job nor test one twice in a
// round (the next cycle resumes after the last job tested, as Slurm's
// bf_continue does). Each test is numbered (Engine.tests) and the number
// stamped on its job; a round is the tests after Engine.roundFrom.
//
// An event (any call but Schedule and Started), or a cycle or a Started
// at or after a time NextEvent named with no event since the last cycle
// (a patience or a hold's budget ended: the plan may change for jobs
// outside the window; a late Started moves the clock past that time, so
// the cycle after it would not see it), makes every waiting job owed a
// test: NextEvent asks for a cycle
// at once until every job that waited then has been tested since, so that
// a host that sleeps until NextEvent does not leave jobs outside the
// windows untested for good. That takes up to about two rounds of windows
// (the jobs tested earlier in the current round wait for the next). A
// cycle without a window tests every job, and owes nothing after it.

// window marks the cycle's window in c.inWindow, per rank of order, and
// reports whether there is one (false when MaxJobsTested is off or at
// least the queue's length: every job is then tested).
func (c *cycle) window(order []*jobRec) bool {
	e := c.e
	b, n := e.cfg.MaxJobsTested, len(order)
	if b <= 0 || b >= n {
		return false
	}
	c.inWindow = append(c.inWindow[:0], make([]bool, n)...)
	k := 0
	for rank, j := range order {
		if k == b {
			break
		}
		if j.tested <= e.roundFrom {
			c.inWindow[rank] = true
			k++
		}
	}
	if k < b {
		// The round ends in this window: the next begins with it, at
		// the top of the queue (the jobs marked so far are tested in
		// this cycle, so in the new round too).
		e.roundFrom = e.tests
		for rank := range order {
			if k == b {
				break
			}
			if !c.inWindow[rank] {
				c.inWindow[rank] = true
				k++
			}
		}
	}
	return true
}

// stamp numbers a test of waiting job j (or a reason decided for it
// without one, behind a strict blocker or for its claim) in a cycle with
// a window (a cycle without one tests every job: settleWindow).
func (c *cycle) stamp(j *jobRec) {
	if !c.windowed {
		return
	}
	c.e.tests++
	j.tested = c.e.tests
}

// settleWindow ends a cycle: without a window every job was tested, and
// the next round begins afresh; with one, the jobs still owed a test
// since the last event are looked for.
func (e *Engine) settleWindow(windowed bool) {
	if !windowed {
		e.roundFrom, e.owed = e.tests, false
		return
	}
	e.owed = false
	for _, j := range e.jobs.pending {
		if j.tested <= e.eventAt {
			e.owed = true
			return
		}
	}
}
