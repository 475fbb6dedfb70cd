package backfill

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the backfill package. Every error a call returns wraps one of
// them (or an error of a lower package: topology.ErrUnknownNode) and names
// the job, node or field involved. A call that returns an error has
// changed nothing, its time included.
var (
	// ErrConfig marks an invalid Config.
	ErrConfig = errors.New("backfill: invalid config")
	// ErrBadJob marks a job that is malformed (no ID, bad gang spec,
	// unknown account, a time limit or factor out of range, a request
	// larger than the cluster).
	ErrBadJob = errors.New("backfill: bad job")
	// ErrNeverFits marks a job that can never run on the cluster as built:
	// no domain can meet its constraints even with every node up and free
	// (a refusal the admitter proves, gang.Admission.Proven; a gang it
	// merely fails to pack on the empty cluster is accepted and waits).
	ErrNeverFits = errors.New("backfill: job can never fit the cluster")
	// ErrDuplicateJob marks a submission of an ID the engine holds (or
	// still remembers as ended, see Config.KeepEnded).
	ErrDuplicateJob = errors.New("backfill: duplicate job")
	// ErrUnknownJob marks an ID the engine does not hold.
	ErrUnknownJob = errors.New("backfill: unknown job")
	// ErrTransition marks an event that the job's or node's state does
	// not allow (Started for a running job, NodeDown for a down node);
	// the error names both states.
	ErrTransition = errors.New("backfill: event not allowed in this state")
	// ErrTimeTravel marks a call with a time earlier than one already
	// seen.
	ErrTimeTravel = errors.New("backfill: time went backwards")
	// ErrBadTime marks a time outside [MinTime, MaxTime).
	ErrBadTime = errors.New("backfill: time out of range")
	// ErrBadArgument marks a nil or otherwise unusable argument.
	ErrBadArgument = errors.New("backfill: bad argument")
	// ErrUpdateField marks an Engine.Update that changes a field of the
	// job other than its members' node sets (placement.Request.Allowed,
	// Excluded, AllowedLabel); the error names the field.
	ErrUpdateField = errors.New("backfill: field cannot be updated")
	// ErrRestore marks an engine snapshot that cannot be restored.
	ErrRestore = errors.New("backfill: cannot restore")
)

// The engine accepts times in [MinTime, MaxTime) and time limits up to
// MaxTimeLimit, so that every difference of two times it handles fits a
// time.Duration and every usage charge is finite.
var (
	MinTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// MaxTimeLimit is the longest time limit (and patience wait) a job may
// have: ten years.
const MaxTimeLimit = 10 * 365 * 24 * time.Hour

// MaxIDLength bounds job IDs, in bytes.
const MaxIDLength = 512

// checkTime reports whether t is in the engine's range.
func checkTime(what string, t time.Time) error {
	if t.Before(MinTime) || !t.Before(MaxTime) {
		return fmt.Errorf("%w: %s %s is outside [%s, %s)", ErrBadTime, what,
			t.UTC().Format(time.RFC3339Nano), MinTime.Format(time.RFC3339), MaxTime.Format(time.RFC3339))
	}
	return nil
}

// checkDuration reports whether d is in [0, MaxTimeLimit].
func checkDuration(what string, d time.Duration) error {
	if d < 0 || d > MaxTimeLimit {
		return fmt.Errorf("%s %v is not in [0, %v]", what, d, MaxTimeLimit)
	}
	return nil
}
