package preempt

import (
	"errors"
	"fmt"

	"github.com/phalanx-sched/phalanx/gang"
)

// Errors of the preempt package.
var (
	// ErrOptions marks Options that Validate refuses.
	ErrOptions = errors.New("preempt: invalid options")
	// ErrBadRequest marks a preemptor that cannot be searched for: no
	// gang, or a gang spec the cluster refuses.
	ErrBadRequest = errors.New("preempt: bad request")
	// ErrBadCandidate marks a running gang described wrongly: no ID or
	// allocation, a cost out of range, an unknown policy, or an
	// allocation whose GPUs are not allocated on the state (or are
	// claimed by another candidate).
	ErrBadCandidate = errors.New("preempt: bad candidate")
)

// MaxCost is the largest Candidate.Cost accepted, in GPU-seconds (about
// 35,000 GPU-years): sums over millions of victims stay exact in an int64.
const MaxCost = int64(1) << 40

// MaxExactCandidates is the largest Options.ExactCandidates: the exact
// search keeps a table of 2^ExactCandidates victim sets.
const MaxExactCandidates = 16

// Policy says what happens to a gang when it is preempted, and whether it
// may be at all.
type Policy uint8

const (
	// Never protects the gang: it is never chosen as a victim. It is the
	// zero value, so a candidate is preemptible only when its host says
	// so.
	Never Policy = iota
	// Requeue stops the gang and returns it to the queue, keeping its
	// submit time.
	Requeue
	// Cancel stops the gang for good.
	Cancel
)

var policyNames = [...]string{"never", "requeue", "cancel"}

// String returns "never", "requeue" or "cancel".
func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// MarshalText renders the policy's name (for JSON plans).
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses a policy's name; an unknown name is an error.
func (p *Policy) UnmarshalText(b []byte) error {
	q, ok := ParsePolicy(string(b))
	if !ok {
		return fmt.Errorf("unknown preemption policy %q", b)
	}
	*p = q
	return nil
}

// ParsePolicy returns the policy named by String.
func ParsePolicy(name string) (Policy, bool) {
	for i, n := range policyNames {
		if n == name {
			return Policy(i), true
		}
	}
	return 0, false
}

// Candidate is one running gang as the victim search sees it.
type Candidate struct {
	// ID names the gang in results and errors.
	ID string
	// Alloc is where the gang runs (every GPU it holds). It is only read.
	Alloc *gang.Allocation
	// Class is the gang's priority class; only gangs of a class strictly
	// lower than the preemptor's may be chosen.
	Class int
	// Policy says whether the gang may be preempted (not Never) and how
	// its host stops it.
	Policy Policy
	// Exempt marks a gang inside its exempt time (it has run less than
	// the minimum before preemption, Slurm's PreemptExemptTime): it is
	// not chosen.
	Exempt bool
	// Cost is the work lost if the gang is stopped now, in GPU-seconds
	// (its GPUs times the time since it started or last checkpointed),
	// in [0, MaxCost]. The caller computes it; the search only adds
	// costs up.
	Cost int64
}

// Preemptible reports whether c may be chosen by a preemptor of class
// class: a lower class, a policy other than Never, outside its exempt
// time.
func (c *Candidate) Preemptible(class int) bool {
	return c.Class < class && c.Policy != Never && !c.Exempt
}

// Preemptor is the gang that wants to run and its class.
type Preemptor struct {
	// Gang is the preemptor's spec, with all its topology constraints.
	Gang *gang.Spec
	// Class is the preemptor's priority class.
	Class int
}

// Options bound the search. DefaultOptions gives the values the package
// doc's bounds are stated for.
type Options struct {
	// MaxWork bounds the trial admissions (each one gang admission on the
	// scratch state) of the guided, scope and exact stages of one search.
	// Besides, a search makes one admission to see whether the gang fits
	// as things are, at most one per distinct class of the preemptible
	// gangs, at most one per victim to check minimality, and at most three
	// to explain a failure (see the package doc).
	MaxWork int
	// ExactCandidates turns on the exact search when at most this many
	// running gangs are preemptible by the preemptor (0 disables it; at
	// most MaxExactCandidates).
	ExactCandidates int
}

// DefaultOptions returns MaxWork 64 and ExactCandidates 12.
func DefaultOptions() Options {
	return Options{MaxWork: 64, ExactCandidates: 12}
}

// Validate reports whether the options are usable.
func (o *Options) Validate() error {
	if o.MaxWork < 1 {
		return fmt.Errorf("%w: MaxWork %d (want at least 1)", ErrOptions, o.MaxWork)
	}
	if o.ExactCandidates < 0 || o.ExactCandidates > MaxExactCandidates {
		return fmt.Errorf("%w: ExactCandidates %d (want 0 to %d)", ErrOptions, o.ExactCandidates, MaxExactCandidates)
	}
	return nil
}

// Verdict is the outcome of one search. Its slices are reused when the
// Verdict is passed back to Find.
type Verdict struct {
	// Found reports whether releasing the victims lets the preemptor be
	// admitted. When Reason.Code is Fits it fits as things are and there
	// are no victims.
	Found bool
	// Reason says why no victim set helps; otherwise its Code is Found,
	// or Fits (BadInput when Find returned an error).
	Reason Explanation
	// Victims are the chosen gangs as indexes into the candidates passed
	// to Find, ascending; IDs holds their IDs in the same order.
	Victims []int
	IDs     []string
	// Allocation is the preemptor's placement on the state with every
	// victim released (admission with all its constraints).
	Allocation gang.Allocation
	// MaxClass is the highest victim class, Cost the GPU-seconds lost
	// (the victims' costs summed), GPUs the GPUs they hold, and Domains
	// the lowest-level topology domains (leaves, blocks) holding them.
	MaxClass int
	Cost     int64
	GPUs     int
	Domains  int
	// Exact reports that the victim set is proven optimal: the exact
	// stage tried every better set and none is feasible (with Found
	// false: it tried every set and none is).
	Exact bool
	// Work counts the trial admissions the search made.
	Work int
}

func (r *Verdict) reset() {
	r.Found, r.Exact = false, false
	r.Reason = Explanation{}
	r.Victims, r.IDs = r.Victims[:0], r.IDs[:0]
	r.Allocation.ID, r.Allocation.Members = "", r.Allocation.Members[:0]
	r.MaxClass, r.Cost, r.GPUs, r.Domains, r.Work = 0, 0, 0, 0, 0
}
