package backfill

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// wait decides what a job that cannot start now gets: its hold, its
// reservation kept (or moved), a new reservation, a hold, or a reason.
func (c *cycle) wait(j *jobRec, w *Waiting) {
	spec, patient := c.specFor(j)
	failed := c.lastRes
	if h := c.e.book.hold; h != nil && h.job == j {
		h.held = c.countFree(&h.target)
		w.Code, w.Until = WaitHeld, h.since
		return
	}
	dropped := false
	if j.resv != nil {
		if c.upkeep(j, spec, w) {
			return
		}
		dropped = true
	}
	if patient && c.fitsLoosely(j, failed, w) {
		return
	}
	if c.mayReserve() {
		if !dropped && c.reserve(j, spec, w) {
			return
		}
		if c.startHold(j, spec) {
			w.Code, w.Until = WaitHeld, c.now
			return
		}
	}
	c.classify(spec, failed, w)
}

// settleMove reports where a job whose reservation an event dropped went:
// a later reservation, or none.
func (c *cycle) settleMove(j *jobRec) {
	m := j.moved
	if m == nil {
		return
	}
	j.moved = nil
	switch {
	case j.phase != StatePending:
		return // it started
	case j.resv != nil:
		if !j.resv.start.After(m.From) {
			return
		}
		m.To = j.resv.start
	}
	c.plan.Moves = append(c.plan.Moves, *m)
}

// mayReserve reports whether a new reservation may be made.
func (c *cycle) mayReserve() bool {
	cfg := &c.e.cfg
	d := cfg.ReservationDepth
	return !cfg.Strict && d != 0 && (d == Conservative || len(c.e.book.resv) < d)
}

// reserve gives job j a reservation at the earliest time the profile
// admits it, if there is one.
func (c *cycle) reserve(j *jobRec, spec *gang.Spec, w *Waiting) bool {
	e := c.e
	res := e.search(c.now, query{j: j, spec: spec})
	if !res.found {
		return false
	}
	r := &reservation{job: j, start: res.at, firstStart: res.at}
	if l := j.job.TimeLimit; l > 0 {
		r.end = res.at.Add(l)
	}
	e.alloc.CopyTo(&r.alloc)
	e.book.add(r)
	c.valid = false
	w.Code, w.Until = WaitReserved, res.at
	return true
}

// upkeep keeps job j's reservation, moved earlier when the profile now
// allows it, or re-plans it when a job it waits for started late. A
// reservation whose GPUs are held only by jobs past their time limit stays
// as it is, waiting for them. It reports whether j still holds a
// reservation; every later move or drop goes into the plan with its cause.
func (c *cycle) upkeep(j *jobRec, spec *gang.Spec, w *Waiting) bool {
	e := c.e
	r := j.resv
	res := e.search(c.now, query{j: j, spec: spec, keep: r})
	if res.kept {
		w.Code, w.Until = WaitReserved, r.start
		if !r.start.After(c.now) {
			if o := c.overrunOn(&r.alloc); o != nil {
				w.Blocker = o.job.ID
			}
		}
		return true
	}
	var cause Cause
	var by string
	if !res.found || res.at.After(r.start) {
		cause, by = c.blame(r)
	}
	return c.replan(r, res, cause, by, w)
}

// replan moves reservation r to the search result (e.alloc), or drops it
// when the search found nothing, recording a later move in the plan.
func (c *cycle) replan(r *reservation, res searchResult, cause Cause, by string, w *Waiting) bool {
	e := c.e
	c.valid = false
	if !res.found {
		c.plan.Moves = append(c.plan.Moves, Move{Job: r.job.job.ID, From: r.start, Cause: cause, By: by})
		e.book.remove(r)
		return false
	}
	if res.at.After(r.start) {
		c.plan.Moves = append(c.plan.Moves, Move{Job: r.job.job.ID, From: r.start, To: res.at, Cause: cause, By: by})
	}
	r.start, r.end = res.at, time.Time{}
	if l := r.job.job.TimeLimit; l > 0 {
		r.end = res.at.Add(l)
	}
	e.alloc.CopyTo(&r.alloc)
	e.book.changed()
	w.Code, w.Until = WaitReserved, r.start
	return true
}

// blame says why reservation r cannot keep its planned start: a job on
// its planned GPUs that started late (its end moved past r's start) or
// overran, or a due reservation on them whose job starts late.
func (c *cycle) blame(r *reservation) (Cause, string) {
	e := c.e
	var late, over *jobRec
	forGPUs(&r.alloc, func(n, g int) {
		o := e.jobs.owner(n, g)
		if o == nil || !o.end.IsZero() && !o.end.After(r.start) {
			return
		}
		if o.late() {
			if late == nil || o.seq < late.seq {
				late = o
			}
		} else if o.overrun(c.now) && (over == nil || o.seq < over.seq) {
			over = o
		}
	})
	switch {
	case late != nil:
		return CauseLateStart, late.job.ID
	case over != nil:
		return CauseOverrun, over.job.ID
	}
	for _, o := range e.book.resv {
		if o != r && o.start.Before(c.now) && overlapping(o, r) && intersects(&o.alloc, &r.alloc) {
			return CauseLateStart, o.job.job.ID
		}
	}
	return CauseUnknown, ""
}

// overrunOn returns the lowest-numbered job past its time limit on a's
// GPUs, or nil.
func (c *cycle) overrunOn(a *gang.Allocation) *jobRec {
	var over *jobRec
	forGPUs(a, func(n, g int) {
		if o := c.e.jobs.owner(n, g); o != nil && o.overrun(c.now) && (over == nil || o.seq < over.seq) {
			over = o
		}
	})
	return over
}

// forGPUs calls f for every GPU of a.
func forGPUs(a *gang.Allocation, f func(n, g int)) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			for m := x.GPUs; m != 0; m &= m - 1 {
				f(int(x.Node), bitIndex(m))
			}
		}
	}
}

// fitsLoosely reports whether a patient job j would fit now without its
// patience; it then waits for a tighter placement (w says until when).
func (c *cycle) fitsLoosely(j *jobRec, failed gang.Result, w *Waiting) bool {
	e := c.e
	res, _ := e.adm.Admit(e.scratch, &j.job.Gang, &e.alloc)
	if !res.Admitted {
		return false
	}
	releaseOn(e.scratch, &e.alloc)
	w.Code, w.Until = WaitTopology, j.job.Submit.Add(j.job.Patience.Wait)
	w.Member, w.Reason = failed.Member, failed.Reason
	return true
}

// classify sets a waiting job's reason from its failed admission.
func (c *cycle) classify(spec *gang.Spec, failed gang.Result, w *Waiting) {
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
	releaseOn(s, &e.alloc)
	for _, r := range c.blockedRes {
		if intersects(&e.alloc, &r.alloc) {
			w.Code, w.Blocker, w.Until = WaitReservation, r.job.job.ID, r.start
			return
		}
	}
	if c.holdBlocked && intersects(&e.alloc, &e.book.hold.target) {
		w.Code, w.Blocker, w.Until = WaitReservation, e.book.hold.job.job.ID, e.book.hold.since
	}
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

// startHold starts hold mode for job j when its reservation failed only
// because running jobs have no known end: it fits once every running job
// has ended, it is within the cap, and no other job is held.
func (c *cycle) startHold(j *jobRec, spec *gang.Spec) bool {
	e := c.e
	h := e.cfg.Hold
	if h.MaxShare <= 0 || e.book.hold != nil || c.now.Before(j.holdExpiry) {
		return false
	}
	if float64(spec.GPUs(e.c)) > h.MaxShare*float64(e.c.TotalGPUs()) {
		return false
	}
	// The optimistic state: every running job gone, reservations blocked.
	probe := e.prof.probe
	if err := e.ledger.State().CopyInto(probe); err != nil {
		panic(err)
	}
	for _, r := range e.jobs.running {
		releaseOn(probe, r.alloc)
	}
	for _, r := range e.book.resv {
		block(probe, &r.alloc)
	}
	res, err := e.adm.Admit(probe, spec, &e.alloc)
	if err != nil {
		panic(fmt.Sprintf("backfill: checked job %s refused: %v", j.job.ID, err))
	}
	if !res.Admitted {
		return false
	}
	hd := &hold{job: j, since: c.now}
	e.alloc.CopyTo(&hd.target)
	e.book.hold = hd
	e.book.changed()
	hd.held = c.countFree(&hd.target)
	c.valid = false
	return true
}
