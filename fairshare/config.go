package fairshare

import (
	"fmt"
	"math"
	"time"
)

// Algorithm selects how usage and shares become a fair-share factor.
type Algorithm uint8

const (
	// FairTree ranks every leaf by walking the tree depth first, siblings
	// in order of level fairshare (shares over usage, both relative to the
	// siblings); the leaf ranked first gets 1 and the last 1/N. It is
	// Slurm's default since 19.05 and the zero value.
	FairTree Algorithm = iota
	// Classic computes F = 2^(-UE/S/d) from the normalised shares S and
	// the effective usage UE of Slurm's classic algorithm
	// (PriorityFlags=NO_FAIR_TREE), with dampening d.
	Classic
)

// String returns "fairtree" or "classic".
func (a Algorithm) String() string {
	switch a {
	case FairTree:
		return "fairtree"
	case Classic:
		return "classic"
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// Weights are the multipliers of the five priority factors. A job's
// priority is the sum of weight times factor (each factor in [0, 1]),
// rounded to the nearest integer, so Total is the largest priority a job
// can reach without a starvation boost.
type Weights struct {
	// Age weighs how long the job has waited, up to Config.MaxAge.
	Age uint32
	// FairShare weighs the fair-share factor of the job's account.
	FairShare uint32
	// JobSize weighs the job's GPU count against Config.ClusterGPUs.
	JobSize uint32
	// QOS weighs the QOS factor the caller puts on the job.
	QOS uint32
	// Partition weighs the partition factor the caller puts on the job.
	Partition uint32
}

// Total returns the sum of the weights.
func (w Weights) Total() uint64 {
	return uint64(w.Age) + uint64(w.FairShare) + uint64(w.JobSize) +
		uint64(w.QOS) + uint64(w.Partition)
}

// SubmitOrdered reports whether these weights rank every set of jobs in
// submit order (ties to the smaller ID), whatever the time and the
// accounts' usage: only the age factor is weighted. A job's priority then
// never falls behind that of a job submitted after it (the age factor
// and the starvation boost both grow with the wait), so a scheduler may
// keep its queue in submit order instead of ranking it every cycle, and
// ask View.Priority for a job's priority only when it reports one.
func (w Weights) SubmitOrdered() bool {
	return w.FairShare == 0 && w.JobSize == 0 && w.QOS == 0 && w.Partition == 0
}

// maxBoost bounds Config.StarvationBoost so that a priority (at most
// 5 x 2^32 + boost) never overflows a uint64.
const maxBoost = uint64(1) << 62

// Config holds the fair-share and priority settings of a Tree. The zero
// Config is invalid (at least one weight must be positive); start from
// DefaultConfig.
type Config struct {
	// Algorithm selects FairTree (the zero value) or Classic.
	Algorithm Algorithm
	// HalfLife is the time after which charged usage counts half. Zero
	// disables decay: usage then only grows. Negative is invalid.
	HalfLife time.Duration
	// Dampening is the classic algorithm's FairShareDampeningFactor d in
	// F = 2^(-UE/S/d): larger values flatten the penalty for heavy use.
	// Zero means 1; otherwise it must be at least 1. Fair Tree ignores it.
	Dampening float64
	// Weights are the multipliers of the priority factors.
	Weights Weights
	// MaxAge is the wait at which the age factor reaches 1. It must be
	// positive when Weights.Age is not zero.
	MaxAge time.Duration
	// ClusterGPUs is the GPU count the job-size factor is measured
	// against. It must be positive when Weights.JobSize is not zero.
	ClusterGPUs int
	// FavorSmall makes the job-size factor favour small jobs: a 1-GPU job
	// gets 1 and a whole-cluster job 1/ClusterGPUs. When false a job gets
	// GPUs/ClusterGPUs (capped at 1), favouring large jobs.
	FavorSmall bool
	// StarvationBound, when positive, turns on the starvation guard: a job
	// that has waited strictly longer than this gets StarvationBoost added
	// to its priority. Zero turns the guard off.
	StarvationBound time.Duration
	// StarvationBoost is the priority added to a starving job. Zero means
	// Weights.Total()+1, which puts every starving job ahead of every job
	// that is not starving; starving jobs then keep their usual order
	// among themselves. At most 2^62.
	StarvationBoost uint64
}

// DefaultConfig returns a usable configuration close to Slurm's defaults:
// Fair Tree, a 7-day half-life and a 7-day maximum age, dampening 1, the
// fair-share weight ten times the age, QOS and partition weights, job size
// unweighted and the starvation guard off.
func DefaultConfig() Config {
	return Config{
		Algorithm: FairTree,
		HalfLife:  7 * 24 * time.Hour,
		Dampening: 1,
		Weights: Weights{
			Age:       1000,
			FairShare: 10000,
			QOS:       1000,
			Partition: 1000,
		},
		MaxAge: 7 * 24 * time.Hour,
	}
}

// Validate reports the first problem with c as an error wrapping
// ErrConfig and naming the field, or nil.
func (c *Config) Validate() error {
	switch {
	case c.Algorithm != FairTree && c.Algorithm != Classic:
		return fmt.Errorf("%w: Algorithm %d is neither FairTree nor Classic", ErrConfig, c.Algorithm)
	case c.HalfLife < 0:
		return fmt.Errorf("%w: HalfLife %v is negative", ErrConfig, c.HalfLife)
	case math.IsNaN(c.Dampening) || math.IsInf(c.Dampening, 0) ||
		(c.Dampening != 0 && c.Dampening < 1):
		return fmt.Errorf("%w: Dampening %v must be 0 (meaning 1) or a finite value >= 1", ErrConfig, c.Dampening)
	case c.Weights.Total() == 0:
		return fmt.Errorf("%w: all Weights are zero", ErrConfig)
	case c.MaxAge < 0:
		return fmt.Errorf("%w: MaxAge %v is negative", ErrConfig, c.MaxAge)
	case c.Weights.Age > 0 && c.MaxAge == 0:
		return fmt.Errorf("%w: MaxAge must be positive when Weights.Age is %d", ErrConfig, c.Weights.Age)
	case c.ClusterGPUs < 0:
		return fmt.Errorf("%w: ClusterGPUs %d is negative", ErrConfig, c.ClusterGPUs)
	case c.Weights.JobSize > 0 && c.ClusterGPUs == 0:
		return fmt.Errorf("%w: ClusterGPUs must be positive when Weights.JobSize is %d", ErrConfig, c.Weights.JobSize)
	case c.StarvationBound < 0:
		return fmt.Errorf("%w: StarvationBound %v is negative", ErrConfig, c.StarvationBound)
	case c.StarvationBoost > maxBoost:
		return fmt.Errorf("%w: StarvationBoost %d exceeds 2^62", ErrConfig, c.StarvationBoost)
	}
	return nil
}

// dampening returns d, with 0 read as 1.
func (c *Config) dampening() float64 {
	if c.Dampening == 0 {
		return 1
	}
	return c.Dampening
}

// boost returns the starvation boost, with 0 read as Weights.Total()+1.
func (c *Config) boost() uint64 {
	if c.StarvationBoost == 0 {
		return c.Weights.Total() + 1
	}
	return c.StarvationBoost
}
