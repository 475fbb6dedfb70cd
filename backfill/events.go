package backfill

import (
	"fmt"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/topology"
)

// opKind is one kind of engine event.
type opKind uint8

const (
	opSubmit opKind = iota + 1
	opCancel
	opStarted
	opFinished
	opFailed
	opNodeDown
	opNodeUp
	opDrain
	opResume
	opSchedule
	opPreempted
	opCheckpointed
	opReplacePod
	opReleasePod
	opUpdate
)

var opNames = [...]string{"", "Submit", "Cancel", "Started", "Finished", "Failed", "NodeDown", "NodeUp", "Drain", "Resume", "Schedule",
	"Preempted", "Checkpointed", "ReplacePod", "ReleasePod", "Update"}

// jobFrom lists, per job event, the states it is allowed from.
var jobFrom = [...]stateSet{
	opCancel:       waitingStates | activeStates,
	opStarted:      setOf(StateStarting),
	opFinished:     activeStates,
	opFailed:       activeStates,
	opPreempted:    setOf(StatePreempting),
	opCheckpointed: setOf(StateRunning, StatePreempting),
	opReplacePod:   setOf(StateStarting, StateRunning),
	opReleasePod:   setOf(StateStarting, StateRunning),
	opUpdate:       waitingStates,
}

// op is one event: what it is, when, and on what.
type op struct {
	kind    opKind
	now     time.Time
	id      string // job ID
	job     Job    // Submit
	requeue bool   // Failed
	plan    *Plan  // Schedule
	member  string // ReplacePod, ReleasePod
	rank    int    // ReplacePod, ReleasePod
	// Resolved by apply.
	mi     int              // the pod's member index
	rep    gang.Replacement // ReplacePod's result
	node   topology.NodeID  // node events
	rec    *jobRec
	upd    *jobRec     // Update: the record of the job as updated (its spec-derived fields)
	events []NodeEvent // NodeDown's result
}

// apply is the engine's one event path: it checks the time, looks the job
// or node up, checks the transition, and only then advances the clock and
// applies the change, which cannot fail. A refused event changes nothing.
func (e *Engine) apply(o *op) error {
	if err := e.checkClock(opNames[o.kind], o.now); err != nil {
		return err
	}
	if err := e.resolve(o); err != nil {
		return err
	}
	switch {
	case o.kind != opSchedule && o.kind != opStarted:
		e.eventAt, e.owed = e.tests, true // every waiting job is owed a test (window.go)
	case !e.owed && e.cfg.MaxJobsTested > 0:
		// A cycle, or a start confirmed, at or after a time NextEvent
		// named (nothing happened since the last cycle, or owed would be
		// set): the plan may change for jobs the windows do not reach (a
		// patience ended, a hold's GPUs freed), so every waiting job is
		// owed a test. (A late Started moves the clock past that time:
		// the cycle after it would not see it.)
		if t, ok := e.nextTimed(); ok && !o.now.Before(t) {
			e.eventAt, e.owed = e.tests, true
		}
	}
	e.last = o.now
	switch o.kind {
	case opCancel, opFinished, opFailed:
		// An active job's GPUs come back before its planned end (the
		// profile is as it was from then on; a job past its limit was
		// expected at once); a waiting job's cancel changes only its
		// reservation, hold or claim, each counted as it goes.
		switch j := o.rec; {
		case j.phase == StatePending:
		case j.phase.Active() && !j.end.IsZero():
			e.book.free(later(j.end, o.now).Add(1))
		default:
			e.book.free(time.Time{})
		}
	case opStarted:
		// The host confirms the start at another time than booked: the
		// job's end moves with it, a time at which reservations may
		// start earlier (the profile is as it was after the later end).
		if j := o.rec; j.job.TimeLimit > 0 && !o.now.Equal(j.start) {
			e.book.note(later(j.end, o.now.Add(j.job.TimeLimit)).Add(1))
		}
	case opNodeDown, opNodeUp, opResume, opPreempted, opReplacePod, opReleasePod:
		e.book.free(time.Time{}) // GPUs or nodes may come back before planned
	}
	e.do(o)
	e.jobs.forget(o.now, e.cfg.KeepEnded)
	if e.checkEach {
		if err := e.check(); err != nil {
			panic(fmt.Sprintf("backfill: invariant broken after %s %s at %v: %v", opNames[o.kind], o.id, o.now, err))
		}
	}
	if e.quota != nil && e.quota.graced {
		e.quota.settle()
	}
	return nil
}

// checkClock refuses a time out of range or before the latest seen. It
// builds the name of the time only for an error (no allocation in a
// call that passes).
func (e *Engine) checkClock(op string, now time.Time) error {
	if now.Before(MinTime) || !now.Before(MaxTime) {
		return checkTime(op+" time", now)
	}
	if now.Before(e.last) {
		return fmt.Errorf("%w: %s at %s is before the latest event at %s", ErrTimeTravel, op, now.UTC().Format(time.RFC3339Nano), e.last.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// resolve looks up the event's job or node and checks that its state
// allows the event.
func (e *Engine) resolve(o *op) error {
	switch o.kind {
	case opSubmit:
		rec, err := e.checkSubmit(o.job, o.now)
		o.rec = rec
		return err
	case opSchedule:
		if o.plan == nil {
			return fmt.Errorf("%w: ScheduleInto with a nil plan", ErrBadArgument)
		}
		return nil
	case opNodeDown, opNodeUp, opDrain, opResume:
		return e.resolveNode(o)
	}
	j, ok := e.jobs.lookup(o.id, o.now, e.cfg.KeepEnded)
	if !ok {
		return fmt.Errorf("%w: %s of job %q", ErrUnknownJob, opNames[o.kind], o.id)
	}
	if st := e.stateOf(j); !jobFrom[o.kind].has(st) {
		return fmt.Errorf("%w: job %s is %s; %s needs %s", ErrTransition, o.id, st, opNames[o.kind], jobFrom[o.kind])
	}
	o.rec = j
	switch o.kind {
	case opReplacePod, opReleasePod:
		return e.resolvePod(o)
	case opUpdate:
		return e.checkUpdate(o)
	}
	return nil
}

// resolveNode checks a node event's node and its state.
func (e *Engine) resolveNode(o *op) error {
	n := o.node
	if n < 0 || int(n) >= e.c.NumNodes() {
		return fmt.Errorf("%w: %s of node %d (the cluster has %d)", topology.ErrUnknownNode, opNames[o.kind], n, e.c.NumNodes())
	}
	st := e.nodes[n]
	var allowed bool
	var need string
	switch o.kind {
	case opNodeDown:
		allowed, need = !st.down(), "up or drained"
	case opNodeUp:
		allowed, need = st.down(), "down"
	case opDrain:
		allowed, need = !st.drained(), "not drained"
	case opResume:
		allowed, need = st.drained(), "drained"
	}
	if !allowed {
		return fmt.Errorf("%w: node %s is %s; %s needs %s", ErrTransition, e.c.NodeName(n), st, opNames[o.kind], need)
	}
	return nil
}

// do applies a checked event.
func (e *Engine) do(o *op) {
	switch o.kind {
	case opSubmit:
		e.seq++
		o.rec.seq = e.seq
		o.rec.acct = e.accts.index(o.rec.job.Account)
		e.jobs.byID[o.rec.job.ID] = o.rec
		e.enqueue(o.rec)
		// A job of an ended one's ID, submitted as of before that one's
		// victims were signalled, takes them as Restore would read it.
		o.rec.orphans = e.hasOrphans(o.rec)
	case opCancel:
		e.cancel(o.rec, o.now)
	case opStarted:
		o.rec.phase = StateRunning
		e.prof.setEnd(o.rec, o.now)
	case opFinished:
		e.accts.observe(o.rec.acct, o.now.Sub(o.rec.start))
		e.deactivate(o.rec, o.now)
		e.jobs.endJob(o.rec, StateFinished, o.now)
	case opFailed:
		// A victim the host was told to end ends as its preemption
		// policy says when the host would requeue it (as Preempted and
		// NodeDown end it): the engine's decision to cancel it stands.
		cancel := o.requeue && o.rec.phase == StatePreempting && o.rec.job.Preemption == preempt.Cancel
		e.deactivate(o.rec, o.now)
		switch {
		case cancel:
			e.jobs.endJob(o.rec, StateCancelled, o.now)
		case o.requeue:
			e.requeue(o.rec)
		default:
			e.jobs.endJob(o.rec, StateFailed, o.now)
		}
	case opSchedule:
		e.runCycle(o.now, o.plan)
	case opPreempted:
		e.deactivate(o.rec, o.now)
		if o.rec.job.Preemption == preempt.Cancel {
			e.jobs.endJob(o.rec, StateCancelled, o.now)
		} else {
			e.requeue(o.rec)
		}
	case opCheckpointed:
		o.rec.checkpoint = o.now
	case opReplacePod, opReleasePod:
		e.podEvent(o)
	case opUpdate:
		e.update(o.rec, o.upd, o.now)
	default:
		e.nodeEvent(o)
	}
}

func (e *Engine) cancel(j *jobRec, now time.Time) {
	if j.phase.Active() {
		e.deactivate(j, now)
	} else {
		if h := e.book.holdOf(j); h != nil {
			e.endHoldBetween(h, HoldEnd{Job: j.job.ID, Cause: HoldCancelled, Held: h.held}, now)
		}
		e.dropWaiting(j)
	}
	e.jobs.endJob(j, StateCancelled, now)
}

// stateOf returns job j's state as the state machine names it.
func (e *Engine) stateOf(j *jobRec) JobState {
	if j.phase != StatePending {
		return j.phase
	}
	switch {
	case j.resv != nil:
		return StateReserved
	case e.book.isHeld(j):
		return StateHeld
	case j.requeues > 0:
		return StateRequeued
	}
	return StatePending
}

// Submit queues job j at time now (its Submit time defaults to now). The
// job is checked first: a malformed job is ErrBadJob, a job that can never
// fit the cluster (on every node up and free, a refusal the admitter
// proves: gang.Admission.Proven) is ErrNeverFits with the placement
// reason, a known ID is ErrDuplicateJob.
func (e *Engine) Submit(j Job, now time.Time) error {
	return e.apply(&op{kind: opSubmit, now: now, id: j.ID, job: j})
}

// Cancel withdraws job id in any waiting or active state: a waiting job
// leaves the queue (and its reservation or hold), an active job is
// released and charged up to now.
func (e *Engine) Cancel(id string, now time.Time) error {
	return e.apply(&op{kind: opCancel, now: now, id: id})
}

// Started confirms that the host launched starting job id at time now;
// its time limit runs from now (from the plan's time until then). A job
// confirmed already is ErrTransition: its limit does not restart.
func (e *Engine) Started(id string, now time.Time) error {
	return e.apply(&op{kind: opStarted, now: now, id: id})
}

// Finished reports that active job id ended at time now: its GPUs return
// and its usage is charged.
func (e *Engine) Finished(id string, now time.Time) error {
	return e.apply(&op{kind: opFinished, now: now, id: id})
}

// Preempted reports that preempting job id (a victim in an earlier
// Plan.Preemptions) has released its GPUs at time now: it has ended on
// every node, after its signal, within its grace period or killed at its
// end. It is charged up to now and requeued with its original submit
// time (policy preempt.Requeue) or cancelled (preempt.Cancel); its
// preemptor starts at the first cycle after all its victims are released.
// A job that is not preempting is ErrTransition. A preempting job that
// ended on its own may be reported with Finished or Failed instead.
func (e *Engine) Preempted(id string, now time.Time) error {
	return e.apply(&op{kind: opPreempted, now: now, id: id})
}

// Checkpointed reports that running (or preempting) job id saved its work
// at time now: preempting it later loses only the work since
// (Preemption.LostGPUSeconds, and the victim search's cost). A job in
// another state is ErrTransition.
func (e *Engine) Checkpointed(id string, now time.Time) error {
	return e.apply(&op{kind: opCheckpointed, now: now, id: id})
}

// Failed reports that active job id failed at time now. With requeue it
// goes back to the queue with its original submit time, but for a job
// being preempted of policy preempt.Cancel, which is cancelled (the
// engine's decision stands, as with Preempted); otherwise it ends as
// failed.
func (e *Engine) Failed(id string, now time.Time, requeue bool) error {
	return e.apply(&op{kind: opFailed, now: now, id: id, requeue: requeue})
}
