package backfill

import (
	"fmt"
	"time"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/topology"
)

// NodeEvent says what a node failure did to one active job.
type NodeEvent struct {
	Job string
	// Requeued is true when the job went back to the queue, false when
	// it failed for good, keeps running, or (a job being preempted, of
	// policy preempt.Cancel) was cancelled.
	Requeued bool
	// Replaced and Shrunk say that the job keeps running (OnNodeFailure
	// Replace or Shrink): its pods on the node were re-placed on other
	// nodes, or given up; Plan.PodChanges lists them.
	Replaced, Shrunk bool
}

// NodeDown marks node down at time now. Every active job with
// a member on it is released whole and requeued or failed per its
// OnNodeFailure policy, or, with Replace or Shrink, keeps running with its
// pods on the node re-placed or given up (the events say which, in job
// order; the next plan's PodChanges lists the pods); a job being
// preempted is released as Preempted would release it, requeued or
// cancelled per its preemption policy; reservations
// on the node are dropped, their jobs re-planned in priority order at the
// next cycle (Plan.Moves says where they went), and a hold on it is
// dropped. A node already down is ErrTransition.
func (e *Engine) NodeDown(node topology.NodeID, now time.Time) ([]NodeEvent, error) {
	o := &op{kind: opNodeDown, now: now, node: node}
	if err := e.apply(o); err != nil {
		return nil, err
	}
	return o.events, nil
}

// NodeUp returns down node node to service at time now; a drained
// node stays drained. A node that is not down is ErrTransition.
func (e *Engine) NodeUp(node topology.NodeID, now time.Time) error {
	return e.apply(&op{kind: opNodeUp, now: now, node: node})
}

// Drain stops new work on node at time now; running jobs stay,
// reservations on it are dropped and re-planned at the next cycle (as
// NodeDown does) and a hold on it is dropped. Draining a down node is remembered: its repair leaves it
// drained. A drained node is ErrTransition.
func (e *Engine) Drain(node topology.NodeID, now time.Time) error {
	return e.apply(&op{kind: opDrain, now: now, node: node})
}

// Resume ends the drain of node at time now (Slurm's
// state=resume); a down node stays down. A node that is not drained is
// ErrTransition.
func (e *Engine) Resume(node topology.NodeID, now time.Time) error {
	return e.apply(&op{kind: opResume, now: now, node: node})
}

// nodeEvent applies a checked node event.
func (e *Engine) nodeEvent(o *op) {
	n := o.node
	st := e.nodes[n]
	switch o.kind {
	case opNodeDown:
		o.events = e.failNode(n, o.now)
		st = nodeState(true, st.drained())
		e.dropOn(n, CauseNodeDown, e.c.NodeName(n), o.now)
	case opNodeUp:
		st = nodeState(false, st.drained())
	case opDrain:
		st = nodeState(st.down(), true)
		e.dropOn(n, CauseNodeDrained, e.c.NodeName(n), o.now)
	case opResume:
		st = nodeState(st.down(), false)
	}
	e.nodes[n] = st
	e.syncStatus(n)
}

// dropOn drops the reservations on node n (their jobs are re-planned in
// priority order at the next cycle, which reports the move with cause)
// and a hold on it.
func (e *Engine) dropOn(n topology.NodeID, cause Cause, node string, now time.Time) {
	e.book.dropOn(n, func(r *reservation) {
		if r.job.moved == nil {
			r.job.moved = &Move{Job: r.job.job.ID, From: r.start, Cause: cause, By: node}
		}
	}, func(h *hold) {
		e.endHoldBetween(h, HoldEnd{Job: h.job.job.ID, Cause: HoldNodeLost, By: node, Held: h.held}, now)
	})
}

// failNode releases every active job on node n (charged up to now) and
// requeues or fails it.
func (e *Engine) failNode(n topology.NodeID, now time.Time) []NodeEvent {
	var hit []*jobRec
	for g := range e.c.NodeGPUs(topology.NodeID(n)) {
		if o := e.jobs.owner(int(n), g); o != nil && !containsJob(hit, o) {
			hit = append(hit, o)
		}
	}
	sortJobs(hit)
	events := make([]NodeEvent, 0, len(hit))
	for _, j := range hit {
		ev := NodeEvent{Job: j.job.ID}
		switch p := j.job.OnNodeFailure; {
		case j.phase == StatePreempting:
			// The host was told to end it: it ends as its preemption
			// policy says (as Preempted would), whatever OnNodeFailure.
			e.deactivate(j, now)
			if j.job.Preemption == preempt.Cancel {
				e.jobs.endJob(j, StateCancelled, now)
			} else {
				e.requeue(j)
				ev.Requeued = true
			}
		case p >= Replace && e.keepOnFailure(j, n, now, &ev):
		case p == Fail:
			e.deactivate(j, now)
			e.jobs.endJob(j, StateFailed, now)
		default:
			e.deactivate(j, now)
			e.requeue(j)
			ev.Requeued = true
		}
		events = append(events, ev)
	}
	return events
}

// syncStatus sets node n's status in the free state from the engine's
// facts: down, else drained, else up.
func (e *Engine) syncStatus(n topology.NodeID) {
	want := topology.Up
	switch st := e.nodes[n]; {
	case st.down():
		want = topology.Down
	case st.drained():
		want = topology.Drained
	}
	if e.ledger.State().Status(topology.NodeID(n)) == want {
		return
	}
	var err error
	switch want {
	case topology.Down:
		_, err = e.ledger.NodeDown(topology.NodeID(n))
	case topology.Drained:
		err = e.ledger.Drain(topology.NodeID(n))
	default:
		err = e.ledger.NodeUp(topology.NodeID(n))
	}
	if err != nil {
		panic(fmt.Sprintf("backfill: node %s: %v", e.c.NodeName(topology.NodeID(n)), err))
	}
	e.prof.version++ // the profile's cached states copy the status
	e.statusGen++
}

func containsJob(list []*jobRec, j *jobRec) bool {
	for _, x := range list {
		if x == j {
			return true
		}
	}
	return false
}
