package backfill

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// JobStatus is one job as the engine sees it: what a host shows its users
// (squeue) without keeping a second copy of every job.
type JobStatus struct {
	ID      string   `json:"id"`
	Account string   `json:"account"`
	State   JobState `json:"state"`
	// GPUs is, for an active job (starting, running, preempting), the
	// GPUs it holds on its Nodes, what it is charged (an elastic gang's
	// at its current size, whole nodes at the GPUs of the nodes it got).
	// For a waiting or ended job it is what the job asks for at full
	// size, a whole-node pod counted at the GPUs of the largest node it
	// may use (its queue's pool, its own node sets): a bound, as it may
	// start smaller (an elastic gang cut to its quota, whole nodes on
	// smaller nodes).
	GPUs int `json:"gpus"`
	// TimeLimit is the job's limit (zero: none); JSON writes it as a Go
	// duration string.
	TimeLimit time.Duration `json:"-"`
	Submit    time.Time     `json:"submit"`
	// Start is when it started (starting, running and ended jobs that
	// ran); End is when it ended, or, for an active job, when its time
	// limit runs out (zero without one).
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// PlannedStart and PlannedEnd are a reserved job's planned window.
	PlannedStart time.Time `json:"planned_start,omitzero"`
	PlannedEnd   time.Time `json:"planned_end,omitzero"`
	// Nodes is where an active job runs, or where a reserved or held
	// job, or one waiting for the jobs it preempted, is planned, as a
	// Slurm hostlist.
	Nodes string `json:"nodes,omitempty"`
	// Code and Reason say why a waiting job waits, as of the last cycle.
	Code   WaitCode `json:"code,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Overrun reports an active job past its time limit.
	Overrun bool `json:"overrun,omitempty"`
	// Requeues counts the times the job went back to the queue.
	Requeues int `json:"requeues,omitempty"`
	// Class is the job's priority class (Job.Class); Preemptions counts
	// the times it was preempted.
	Class       int `json:"class,omitempty"`
	Preemptions int `json:"preemptions,omitempty"`
	// Queue is the job's queue (Job.Queue).
	Queue string  `json:"queue,omitempty"`
	wait  Waiting // for FormatJobs' relative times
}

// MarshalJSON writes the status with snake_case names and the time limit
// as a Go duration string ("2h0m0s").
func (s JobStatus) MarshalJSON() ([]byte, error) {
	type plain JobStatus
	out := struct {
		plain
		TimeLimit string `json:"time_limit,omitempty"`
	}{plain: plain(s)}
	if s.TimeLimit > 0 {
		out.TimeLimit = s.TimeLimit.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *JobStatus) UnmarshalJSON(b []byte) error {
	type plain JobStatus
	in := struct {
		*plain
		TimeLimit string `json:"time_limit,omitempty"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	s.TimeLimit = 0
	if in.TimeLimit != "" {
		d, err := time.ParseDuration(in.TimeLimit)
		if err != nil {
			return fmt.Errorf("job %s: time_limit: %w", s.ID, err)
		}
		s.TimeLimit = d
	}
	return nil
}

// Job returns the status of job id (ended jobs while remembered, see
// Config.KeepEnded).
func (e *Engine) Job(id string) (JobStatus, bool) {
	j, ok := e.jobs.lookup(id, e.last, e.cfg.KeepEnded)
	if !ok {
		return JobStatus{}, false
	}
	return e.status(j), true
}

// Jobs returns the status of every job the engine holds, in submission
// order.
func (e *Engine) Jobs() []JobStatus {
	all := make([]*jobRec, 0, len(e.jobs.byID))
	for id := range e.jobs.byID {
		if j, ok := e.jobs.lookup(id, e.last, e.cfg.KeepEnded); ok {
			all = append(all, j)
		}
	}
	sortJobs(all)
	out := make([]JobStatus, len(all))
	for i, j := range all {
		out[i] = e.status(j)
	}
	return out
}

func (e *Engine) status(j *jobRec) JobStatus {
	s := JobStatus{ID: j.job.ID, Account: j.job.Account, State: e.stateOf(j), GPUs: j.gpus,
		TimeLimit: j.job.TimeLimit, Submit: j.job.Submit, Requeues: j.requeues, Class: j.job.Class, Preemptions: j.preemptions,
		Queue: j.job.Queue}
	switch {
	case j.phase.Active():
		s.GPUs = j.used // what it holds, not its bound
		s.Start, s.End, s.Nodes = j.start, j.end, NodeList(e.c, j.alloc)
		s.Overrun = j.overrun(e.last)
		if j.phase == StatePreempting {
			s.Reason = "preempted by " + j.preemptedBy + ": signalled, holding its GPUs until the host reports them released"
		}
	case j.phase.Ended():
		s.End = j.ended
		if !j.start.IsZero() {
			s.Start = j.start
		}
	default:
		s.Code, s.Reason, s.wait = j.wait.Code, j.wait.Message(time.Time{}), j.wait
		if j.wait.Code == 0 {
			s.Reason = "not scheduled yet"
		}
		if r := j.resv; r != nil {
			s.PlannedStart, s.PlannedEnd, s.Nodes = r.start, r.end, NodeList(e.c, &r.alloc)
		} else if h := e.book.holdOf(j); h != nil {
			s.Nodes = NodeList(e.c, &h.target)
		} else if cl := j.claim; cl != nil {
			s.Nodes = NodeList(e.c, &cl.alloc)
		}
	}
	return s
}

// NodeList renders every node of an allocation as one Slurm hostlist.
func NodeList(c *topology.Cluster, a *gang.Allocation) string {
	var names []string
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			names = append(names, c.NodeName(x.Node))
		}
	}
	slices.Sort(names)
	return topology.CompressHostlist(slices.Compact(names))
}

// FormatJobs renders job statuses as a table, as squeue does: one line per
// job with its ID, account, state, GPUs, time limit, submit, start and end
// times, nodes and reason (times relative to epoch when it is not zero).
func FormatJobs(jobs []JobStatus, epoch time.Time) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "JOBID\tACCOUNT\tSTATE\tGPUS\tLIMIT\tSUBMIT\tSTART\tEND\tNODES\tREASON")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return formatTime(t, epoch)
	}
	for _, s := range jobs {
		limit, start, end := "-", at(s.Start), at(s.End)
		if s.TimeLimit > 0 {
			limit = s.TimeLimit.String()
		}
		if s.State == StateReserved {
			start, end = at(s.PlannedStart)+" (planned)", at(s.PlannedEnd)
		}
		reason := s.Reason
		if s.wait.Code != 0 {
			reason = s.wait.Message(epoch)
		}
		state := s.State.String()
		if s.Overrun {
			state += " (overrun)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Account, state, s.GPUs, limit,
			at(s.Submit), start, end, dash(s.Nodes), dash(reason))
	}
	_ = w.Flush()
	return b.String()
}

// NextEvent returns the earliest time after the latest one seen at which
// the plan can change without a new event: at once (the latest time seen
// plus a nanosecond) when the last cycle left a reservation slot free for
// the next cycle to offer in priority order (see Schedule), let go of
// a hold's GPUs after it refused them to a job, or gave or moved a hold
// past a higher-ranked gang it left without one, or started a job after
// a reason or decision about a hold that the start may change (see Hold
// mode),
// started a job whose reservation was due off its planned GPUs (which
// the reservation held from the cycle's time, refusing them to jobs
// ranked above it), made a claim with no victim (a reclaim on pods
// growing jobs lend alone: the next cycle starts it, and no victim's
// release will ask for that cycle), or reserved a job that would then
// start on the pods a growing job lends only to reserved ones (see Node
// failures and elastic gangs), a reservation's planned start,
// a hold's expiry (its budget spent at the rate it holds GPUs now), the
// end of a waiting job's patience or hold cool-down (not of a job that can
// never start under the current config, which no time changes),
// an active job's time limit, the end of the exempt time of a running job
// that a waiting job would preempt if it could. A host can sleep until then (or until an
// event: a submit, a finish, a node) instead of polling. It reports false
// when nothing is due. Priorities drift with time (age, decaying usage),
// small jobs reach Config.ReservationAnyAfter, and a backlog begins once a
// small job has waited Config.BacklogAfter (8 hours by default), all of
// which can change which jobs get reservations; a host that wants that
// reflected also schedules at its usual cadence. With MaxJobsTested every
// cycle tests another window of the queue, and NextEvent asks for cycles
// at once after an event (any call but Schedule and Started), or a cycle
// or a start confirmed (Started) at or after a time it named (without an
// event between), until every
// job that waited then has been tested since: a few cycles of the
// window's size (up to about two rounds of windows, as the jobs tested
// earlier in the round wait for the next), and then a host may sleep.
func (e *Engine) NextEvent() (time.Time, bool) {
	next, _ := e.nextTimed()
	if e.slotOpen || e.owed && e.cfg.MaxJobsTested > 0 {
		next = e.last.Add(time.Nanosecond) // at once
	}
	return next, !next.IsZero()
}

// nextTimed is NextEvent but for the cycles it asks for at once: the
// earliest of the times the plan may change at without an event.
func (e *Engine) nextTimed() (time.Time, bool) {
	var next time.Time
	consider := func(t time.Time) {
		if t.After(e.last) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, r := range e.book.resv {
		consider(r.start)
	}
	for _, h := range e.book.holds {
		if h.spent >= h.budget {
			// Spent already (a budget lowered at a restore), whatever
			// it holds: the next cycle ends it (accountHolds).
			consider(e.last.Add(time.Nanosecond))
			continue
		}
		// Its budget runs out at the rate it holds GPUs now, charged
		// from the last cycle (accountHolds).
		if h.held > 0 && !e.lastCycle.IsZero() {
			left := math.Ceil((h.budget - h.spent) / float64(h.held))
			if left*float64(time.Second) < float64(MaxTime.Sub(e.lastCycle)) {
				consider(later(e.lastCycle.Add(time.Duration(left)*time.Second), e.last.Add(time.Nanosecond)))
			}
		}
	}
	// Only patience and holds make a waiting job's own time matter
	// (holdEligibility's engine-wide conditions first).
	var queue []*jobRec
	if h := &e.cfg.Hold; e.jobs.patient > 0 || h.Enabled && !e.cfg.Strict && e.jobs.unlimited > 0 {
		queue = e.jobs.pending
	}
	for _, j := range queue {
		if j.unfit != "" {
			continue // it can never start under this config: no time changes its plan
		}
		if j.tight != nil {
			consider(j.job.Submit.Add(j.job.Patience.Wait))
		}
		if at, _, ok := e.holdEligibility(j); ok && j.resv == nil && !e.book.isHeld(j) {
			consider(at)
			if !j.holdBlockedSince.IsZero() {
				consider(j.holdBlockedSince.Add(e.cfg.Hold.Hysteresis))
			}
		}
	}
	if t, ok := e.exemptEnd(); ok {
		consider(t)
	}
	if t, ok := e.prof.nextEnd(e.last); ok {
		consider(t)
	}
	return next, !next.IsZero()
}
