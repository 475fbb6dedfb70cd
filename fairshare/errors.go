package fairshare

import "errors"

// Sentinel errors. Every error returned by this package wraps one of these
// (test with errors.Is) and its message names the account, job, field, line
// or time at fault.
var (
	// ErrConfig marks a Config that fails Validate.
	ErrConfig = errors.New("fairshare: invalid config")
	// ErrBadName marks an account name that is empty, reserved ("root") or
	// contains whitespace, a control character, '=' or '#'.
	ErrBadName = errors.New("fairshare: bad account name")
	// ErrDuplicateAccount marks an account defined twice.
	ErrDuplicateAccount = errors.New("fairshare: duplicate account")
	// ErrUnknownAccount marks an account name the tree does not have: a
	// parent, the target of a charge or query, or the account of a job.
	ErrUnknownAccount = errors.New("fairshare: unknown account")
	// ErrBadShares marks raw shares that are negative, NaN or above
	// MaxShares.
	ErrBadShares = errors.New("fairshare: bad shares")
	// ErrCycle marks a tree description whose parent links form a cycle.
	ErrCycle = errors.New("fairshare: cycle in account tree")
	// ErrSyntax marks malformed text or JSON input.
	ErrSyntax = errors.New("fairshare: syntax error")
	// ErrBadCharge marks a charge that is negative, NaN or infinite, or
	// that would take an account's usage past MaxUsage (and a usage
	// record outside [0, MaxUsage]).
	ErrBadCharge = errors.New("fairshare: bad charge")
	// ErrBadTime marks an instant that int64 nanoseconds since 1970 cannot
	// hold: before time.Unix(0, math.MinInt64), 1677-09-21
	// 00:12:43.145224192 UTC, or after time.Unix(0, math.MaxInt64),
	// 2262-04-11 23:47:16.854775807 UTC (both ends are accepted); the zero
	// time.Time (year 1) among them.
	ErrBadTime = errors.New("fairshare: time out of range")
	// ErrTimeTravel marks a read or decay at an instant earlier than the
	// latest instant the tree has been told about.
	ErrTimeTravel = errors.New("fairshare: time before the tree's latest update")
	// ErrNotLeaf marks a job on an account that has sub-accounts (or on
	// root), or a fair-share factor asked of such an account. Jobs belong
	// to leaves.
	ErrNotLeaf = errors.New("fairshare: account is not a leaf")
	// ErrBadJob marks a job with a zero submit time, a negative GPU count,
	// or a QOS or partition factor outside [0, 1].
	ErrBadJob = errors.New("fairshare: bad job")
)
