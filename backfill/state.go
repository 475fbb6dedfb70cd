package backfill

import (
	"fmt"
	"strings"
)

// JobState is where a job is in its life; doc.go draws the state machine.
type JobState uint8

// Job states. Pending, Reserved, Held and Requeued are the waiting states:
// the job is in the queue. Starting, Running and Preempting hold GPUs.
// Finished, Failed and Cancelled are final.
const (
	// StatePending: waiting, with neither a reservation nor a hold.
	StatePending JobState = iota + 1
	// StateReserved: waiting with a reservation (planned start and GPUs).
	StateReserved
	// StateHeld: waiting while hold mode keeps GPUs for it.
	StateHeld
	// StateRequeued: back in the queue after a failure, with its
	// original submit time; otherwise like Pending.
	StateRequeued
	// StateStarting: a plan started it; the host has not confirmed the
	// launch (Started) yet. Its time limit runs from the plan's time.
	StateStarting
	// StateRunning: the host confirmed the launch; the time limit runs
	// from the confirmation.
	StateRunning
	// StateFinished: it ended (Finished).
	StateFinished
	// StateFailed: it failed and was not requeued.
	StateFailed
	// StateCancelled: it was cancelled (or preempted with policy
	// preempt.Cancel).
	StateCancelled
	// StatePreempting: a plan preempted it (Plan.Preemptions): the host
	// signals it, and it holds its GPUs until the host reports them
	// released (Engine.Preempted), when it is requeued or cancelled per
	// its Job.Preemption policy.
	StatePreempting
)

var jobStateNames = [...]string{"", "pending", "reserved", "held", "requeued", "starting", "running", "finished", "failed", "cancelled", "preempting"}

// String returns the state's stable lower-case name.
func (s JobState) String() string {
	return enumName(jobStateNames[:], s, "JobState")
}

// MarshalText renders the state's name.
func (s JobState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a state's name.
func (s *JobState) UnmarshalText(b []byte) error {
	for i, n := range jobStateNames {
		if i > 0 && n == string(b) {
			*s = JobState(i)
			return nil
		}
	}
	return fmt.Errorf("unknown job state %q", b)
}

// Waiting reports whether the state is one of the waiting states.
func (s JobState) Waiting() bool { return s >= StatePending && s <= StateRequeued }

// Active reports whether the job holds GPUs (starting, running or
// preempting).
func (s JobState) Active() bool {
	return s == StateStarting || s == StateRunning || s == StatePreempting
}

// Ended reports whether the state is final.
func (s JobState) Ended() bool { return s >= StateFinished && s <= StateCancelled }

// stateSet is a set of job states, for the transition table.
type stateSet uint16

func setOf(states ...JobState) stateSet {
	var s stateSet
	for _, x := range states {
		s |= 1 << x
	}
	return s
}

func (s stateSet) has(x JobState) bool { return s&(1<<x) != 0 }

func (s stateSet) String() string {
	var names []string
	for x := StatePending; x <= StatePreempting; x++ {
		if s.has(x) {
			names = append(names, x.String())
		}
	}
	return strings.Join(names, ", ")
}

var (
	waitingStates = setOf(StatePending, StateReserved, StateHeld, StateRequeued)
	activeStates  = setOf(StateStarting, StateRunning, StatePreempting)
)

// NodeState is what the engine knows of a node: down (failed) and
// drained (no new work) are separate facts, so a drained node that fails
// and is repaired is still drained.
type NodeState uint8

// Node states.
const (
	// NodeUp: in service.
	NodeUp NodeState = iota
	// NodeDrained: running work stays, nothing new is placed.
	NodeDrained
	// NodeDown: failed; nothing runs or is placed on it.
	NodeDown
	// NodeDownDrained: failed, and drained: a repair leaves it drained.
	NodeDownDrained
)

var nodeStateNames = [...]string{"up", "drained", "down", "down+drained"}

// String returns "up", "drained", "down" or "down+drained".
func (s NodeState) String() string {
	if int(s) < len(nodeStateNames) {
		return nodeStateNames[s]
	}
	return fmt.Sprintf("NodeState(%d)", uint8(s))
}

func nodeState(down, drained bool) NodeState {
	s := NodeUp
	if drained {
		s = NodeDrained
	}
	if down {
		s += NodeDown
	}
	return s
}

func (s NodeState) down() bool    { return s >= NodeDown }
func (s NodeState) drained() bool { return s == NodeDrained || s == NodeDownDrained }
