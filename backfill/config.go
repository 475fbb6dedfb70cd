package backfill

import (
	"errors"
	"fmt"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
)

// Errors of the backfill package.
var (
	// ErrConfig marks an invalid Config.
	ErrConfig = errors.New("backfill: invalid config")
	// ErrBadJob marks a job that is malformed (no ID, bad gang spec,
	// unknown account, negative time limit).
	ErrBadJob = errors.New("backfill: bad job")
	// ErrNeverFits marks a job that can never run on the cluster as built:
	// larger than it, or under a constraint no domain can meet.
	ErrNeverFits = errors.New("backfill: job can never fit the cluster")
	// ErrDuplicateJob marks a submission of an ID the engine holds.
	ErrDuplicateJob = errors.New("backfill: duplicate job")
	// ErrUnknownJob marks an ID the engine does not hold, or a job in the
	// wrong state for the call (finishing a pending job).
	ErrUnknownJob = errors.New("backfill: unknown job")
	// ErrTimeTravel marks a call with a time earlier than one already
	// seen.
	ErrTimeTravel = errors.New("backfill: time went backwards")
)

// Conservative, as Config.ReservationDepth, gives every tested job that
// cannot start a reservation (conservative backfill).
const Conservative = -1

// Config tunes the scheduler. Validate checks it; DefaultConfig is a
// sensible start.
type Config struct {
	// ReservationDepth is how many waiting jobs may hold reservations at
	// once: 0 none (greedy backfill), 1 EASY backfill (only the top
	// waiting job), more for deeper planning, Conservative for all.
	ReservationDepth int
	// Strict disables backfill: jobs start in priority order only, and
	// the first job that cannot start blocks every job behind it.
	Strict bool
	// MaxJobsTested bounds the jobs tested per cycle (0: all). Jobs
	// holding reservations or held GPUs are always tested. When the bound
	// stops a cycle early, the next cycle resumes after the last job
	// tested, like Slurm's bf_continue.
	MaxJobsTested int
	// FairShare configures priority (weights, decay, algorithm).
	// ClusterGPUs defaults to the cluster's GPU count.
	FairShare fairshare.Config
	// Hold configures hold mode for jobs whose reservation depends on
	// GPUs with unknown release times.
	Hold HoldConfig
	// Placement is the placement strategy (LeafPack unless comparing
	// baselines); Seed seeds the Random strategy.
	Placement placement.Strategy
	Seed      uint64
}

// HoldConfig bounds hold mode. When the top waiting job cannot be given a
// planned start because running jobs have no time limit, the GPUs of its
// target placement are held for it as they free up, until it fits.
type HoldConfig struct {
	// MaxShare caps the GPUs held, as a share of the cluster's GPUs. A
	// job larger than the cap is not held. 0 disables hold mode.
	MaxShare float64
	// MaxTime caps how long one hold lasts; an expired hold is released
	// and the job is not held again for as long.
	MaxTime time.Duration
}

// DefaultConfig returns the defaults of the phalanx policy: depth-16
// reservations, fair share (fairshare.DefaultConfig), hold mode capped at
// half the cluster for 4 hours.
func DefaultConfig() Config {
	return Config{
		ReservationDepth: 16,
		FairShare:        fairshare.DefaultConfig(),
		Hold:             HoldConfig{MaxShare: 0.5, MaxTime: 4 * time.Hour},
	}
}

// Validate checks the config.
func (c *Config) Validate() error {
	if c.ReservationDepth < Conservative {
		return fmt.Errorf("%w: ReservationDepth %d (use Conservative for all)", ErrConfig, c.ReservationDepth)
	}
	if c.MaxJobsTested < 0 {
		return fmt.Errorf("%w: MaxJobsTested %d", ErrConfig, c.MaxJobsTested)
	}
	if c.Hold.MaxShare < 0 || c.Hold.MaxShare > 1 {
		return fmt.Errorf("%w: Hold.MaxShare %v not in [0, 1]", ErrConfig, c.Hold.MaxShare)
	}
	if c.Hold.MaxShare > 0 && c.Hold.MaxTime <= 0 {
		return fmt.Errorf("%w: Hold.MaxTime must be positive when hold mode is on", ErrConfig)
	}
	if c.Placement > placement.Random {
		return fmt.Errorf("%w: unknown placement strategy %d", ErrConfig, c.Placement)
	}
	if err := c.FairShare.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// FailurePolicy says what happens to a running job when one of its nodes
// goes down.
type FailurePolicy uint8

const (
	// Requeue puts the job back in the queue, with its original submit
	// time (the default).
	Requeue FailurePolicy = iota
	// Fail ends the job; the caller is told it failed.
	Fail
)

// Patience lets a job wait for a tight placement before accepting a looser
// one (Slurm --switches=k@T): until Wait has passed since submission, every
// member must fit within MaxDomains domains of Level (default: the lowest
// level).
type Patience struct {
	MaxDomains int
	Level      string
	Wait       time.Duration
}

// Job is one job: a gang with an account, a time limit and priority
// inputs.
type Job struct {
	// ID identifies the job; Gang.ID is set to it.
	ID string
	// Account is the fair-share leaf account charged for the job.
	Account string
	// Gang is what the job runs: its members and their requests.
	Gang gang.Spec
	// TimeLimit is the longest the job may run; 0 means none (the usual
	// case on Kubernetes): the job can then only use GPUs no reservation
	// needs, and nothing can be planned around it.
	TimeLimit time.Duration
	// QOS and Partition are priority factors in [0, 1].
	QOS, Partition float64
	// Submit is when the job was submitted (its age counts from it).
	Submit time.Time
	// Patience optionally makes the job wait for a tight placement.
	Patience Patience
	// OnNodeFailure says what a node failure does to the running job.
	OnNodeFailure FailurePolicy
}

// gangOptions returns the options of the engine's admitters.
func (c Config) gangOptions() gang.Options {
	return gang.Options{Placement: placement.Options{Strategy: c.Placement, Seed: c.Seed}}
}
