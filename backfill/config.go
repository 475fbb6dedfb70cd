package backfill

import (
	"fmt"
	"math"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
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
	// ReservationMinGPUs keeps the slots of a bounded ReservationDepth
	// past the first for large jobs: a job of fewer GPUs may take a
	// reservation only while no other job of fewer GPUs holds one. Small
	// jobs are then planned as under EASY backfill, one at a time, and
	// the other ReservationDepth-1 slots protect the gangs that backfill
	// would otherwise pass over for hours. 0 turns it off (any job takes
	// any slot); MultiNode (DefaultConfig's) means one GPU more than the
	// cluster's largest node holds, so that jobs that fit on one node
	// share one slot. It has no effect with depth 1 or Conservative.
	ReservationMinGPUs int
	// ReservationAnyAfter lets a job below ReservationMinGPUs that has
	// waited this long (since its submit time) take any slot, so that
	// slots kept for gangs do not starve small jobs on a queue that
	// waits for days (0: never; DefaultConfig: a day). It counts against
	// the small jobs' one slot all the same. Like priorities, it changes
	// with time alone: a cycle run at the host's usual cadence reflects
	// it (NextEvent does not wake for it).
	ReservationAnyAfter time.Duration
	// BacklogAfter, when positive, plans as EASY backfill while the queue
	// has a backlog: while some waiting job below ReservationMinGPUs
	// (any job, with that rule off) has waited this long since its
	// submit time (not counting one its queue's quota check refuses
	// before the walk, at a maximum, a borrowing limit or a parent's
	// limit, or beyond its guarantee while it may not be preempted: a
	// queue at its limit is no backlog of the cluster; nor one of a
	// node's worth of GPUs or more while BacklogFreeShare of the
	// cluster's GPUs are free), a job
	// may take a new reservation only while no waiting job ranked above
	// it holds one, whatever the depth. Reservations held by jobs ranked
	// lower are kept until their jobs start, whether taken before the
	// backlog or during it by a job then first in line (each job that
	// comes first later takes one more): while the backlog lasts more
	// than ReservationDepth may exist, more than one small job may hold
	// one, and the first job in line may be planned after them. Once no
	// such job has waited that long the slots past the first open
	// again, as those reservations start. Where every job waits days,
	// the slots past the first lengthen the mean wait of all jobs for
	// little gain to gangs; at 8 hours (DefaultConfig) this brings it
	// near EASY's there, and gangs wait about as long as under EASY
	// (benchmarks/README.md, "What the slots cost the other jobs" and
	// "BacklogAfter in the default"). 0: off. It has no effect with
	// ReservationDepth 0, 1 or Conservative, or with Strict. A plan that
	// lists only changes (OnlyChangedWaits) skips the tests that would
	// fail as before during a backlog too, and passes over the jobs
	// after the first job left holding a reservation, as it does without
	// one; the cycle a backlog begins or ends in tests every job again.
	// Like ReservationAnyAfter it changes with time alone (NextEvent does
	// not wake for it), with the GPUs free, and with quotas also as the
	// queues' use changes.
	// Plan.Backlog names the job whose wait makes a backlog.
	BacklogAfter time.Duration
	// BacklogFreeShare keeps a waiting job of a node's worth of GPUs or
	// more (Cluster.MaxNodeGPUs) from making a backlog (BacklogAfter)
	// while at least this share of the cluster's GPUs is free on
	// schedulable nodes: such a job waits for a node to be wholly free,
	// the free GPUs scattered over nodes that run other jobs, not for a
	// deep queue, and planning as EASY would only take the gangs'
	// reservations away (benchmarks/README.md, "Why seed 4 of Philly at
	// load 3 moved"). Free GPUs that some reservation plans to use do
	// not count: they are kept for it, not scattered (counted, the
	// reservations' own draining kept a deep queue from making a
	// backlog: "What makes the Philly load-4 p95 and max"). 0: such jobs
	// make a backlog as any other does; DefaultConfig: 0.05, a
	// twentieth. In [0, 1].
	BacklogFreeShare float64
	// Strict disables backfill: jobs start in priority order only, and
	// the first job that cannot start blocks every job behind it (a job
	// waiting for its queue's quota blocks nobody).
	Strict bool
	// MaxJobsTested bounds the jobs tested per cycle (0: all). Jobs
	// holding reservations or held GPUs are always tested. When the bound
	// stops a cycle early, the next cycle resumes after the last job
	// tested, like Slurm's bf_continue: each cycle tests the first jobs
	// in priority order that the current round of windows has not
	// tested, and a round ends when every waiting job has been. After an
	// event, or a time NextEvent named, NextEvent asks for cycles at once
	// until every job that waited then has been tested, so that a host
	// that sleeps until NextEvent reaches them all.
	MaxJobsTested int
	// OnlyChangedWaits makes each plan list, in Plan.Waiting, the waiting
	// jobs whose Waiting (its priority aside) changed since the engine
	// last listed the job, instead of every waiting job; Plan.Unchanged
	// counts the others. A job is listed the first time it waits, when
	// its reason changes, and in a restored engine's first cycle.
	// Engine.Job gives any job's current reason, Engine.Jobs every
	// job's. The decisions are the same either way. A host that
	// updates what users see only on a change (pod conditions, say)
	// saves the writing and reading of every waiting job's 552-byte
	// record in every cycle.
	OnlyChangedWaits bool
	// FairShare configures priority (weights, decay, algorithm).
	// ClusterGPUs defaults to the cluster's GPU count.
	FairShare fairshare.Config
	// Hold configures hold mode for jobs whose reservation depends on
	// GPUs with unknown release times.
	Hold HoldConfig
	// KeepEnded is how long the engine remembers a finished, failed or
	// cancelled job: Job reports its status and a repeated event gets
	// ErrTransition rather than ErrUnknownJob, and its ID cannot be
	// submitted again meanwhile (Slurm's MinJobAge). Zero forgets at once.
	KeepEnded time.Duration
	// Preemption configures preemption (off by default).
	Preemption PreemptionConfig
	// Quotas configures queues with guarantees, borrowing and lending
	// limits, maximums and weights (none by default). Reclaim preempts
	// with Preemption's Grace whether Preemption is on or not.
	Quotas QuotaConfig
}

// PreemptionConfig configures preemption: a waiting job that cannot start
// now, and would not start soon from a reservation, stops running jobs of
// a strictly lower Job.Class whose Job.Preemption policy allows it (whole
// gangs, chosen by package gang/preempt), and starts on their GPUs once
// the host reports them released. See preemption in the package doc.
//
// It is off by default: a plan with preemptions asks the host to signal
// the victims and to report each release (Engine.Preempted); a host that
// does not would leave the preemptor waiting for ever. Jobs are never
// preempted unless they say so (Job.Preemption's zero value is
// preempt.Never), so turning it on changes nothing until jobs use classes
// and policies.
type PreemptionConfig struct {
	// Enabled turns preemption on.
	Enabled bool
	// ExemptTime is how long a job runs (since its start) before it may
	// be preempted (Slurm's PreemptExemptTime). It also keeps a requeued
	// victim that started again from being preempted again at once.
	ExemptTime time.Duration
	// Grace is the time the host gives a victim between the signal and
	// the kill: its GPUs are expected back within it
	// (Preemption.Deadline).
	Grace time.Duration
	// MinGain: a job preempts only when it could not start from a
	// reservation by now + Grace + MinGain (the earliest start the
	// availability profile gives it is later, or there is none).
	// Preempting for less would destroy work to gain little.
	MinGain time.Duration
	// MaxSearches bounds the jobs that look for victims per cycle (0: no
	// bound): each may run a profile search (to see how far its start
	// is) and a victim search. Jobs past it search at a later cycle. A
	// job whose search would repeat one that failed in the cycle spends
	// none of it (see the package doc).
	MaxSearches int
}

// MultiNode, as Config.ReservationMinGPUs, means one GPU more than the
// cluster's largest node: every job that could fit on one node is small.
const MultiNode = -1

// DefaultDepth is DefaultConfig's ReservationDepth.
const DefaultDepth = 4

// DefaultPriority is DefaultConfig's priority: fairshare.DefaultConfig
// (Fair Tree, 7-day half-life) with an age weight of 10,000 a day of
// waiting, growing for a year (MaxAge 365 days, weight 3,650,000), against
// a fair-share weight of 500, so that a job's fair share moves it by at
// most about 1.2 hours of waiting: the queue is close to first come, first
// served, with heavy users' jobs a little later. QOS and partition keep
// their weights of 1,000. The age term does not stop growing after a day:
// on a queue where jobs wait for days (Philly at load 4 in
// benchmarks/README.md), a capped age term leaves fair share alone to
// order every job past the cap, and large jobs of busy accounts are
// overtaken for days.
func DefaultPriority() fairshare.Config {
	c := fairshare.DefaultConfig()
	c.Weights = fairshare.Weights{Age: 365 * 10000, FairShare: 500, QOS: 1000, Partition: 1000}
	c.MaxAge = 365 * 24 * time.Hour
	return c
}

// HoldConfig configures hold mode, the engine's answer to "how does a
// large gang ever start when running jobs have no time limit?" (no
// reservation can then be planned for it). A hold keeps the free GPUs of a
// target placement for one gang as they free up, until the gang fits;
// other jobs use every GPU the hold does not need. The target is where the
// gang is estimated to fit soonest, from what runs there (each job's age
// and its account's observed run times). See hold mode in the package doc.
type HoldConfig struct {
	// Enabled turns hold mode on.
	Enabled bool
	// MinGPUs makes only gangs of at least this many GPUs eligible for a
	// hold; 0 means the GPUs of the cluster's largest lowest-level domain
	// (a leaf's worth). Here and for MaxShare, whole nodes of unequal
	// sizes count at the largest nodes they may use, unless their queue's
	// limits refuse that even with nothing in use: then at the smallest,
	// where their hold is targeted.
	MinGPUs int
	// MinWait makes a gang eligible only once it has waited this long
	// since it was submitted (an SLA; 0: at once).
	MinWait time.Duration
	// MaxShare and CapWait: a gang of more than MaxShare of the
	// cluster's GPUs becomes eligible only after waiting CapWait (it is
	// told so in its reason).
	MaxShare float64
	CapWait  time.Duration
	// Budget bounds what a hold may cost: it may keep GPUs idle for at
	// most Budget times the GPUs of its target (GPU-time): the gang's
	// GPU count, or less where the target is smaller (whole nodes of
	// unequal sizes count the nodes targeted, not the largest they may
	// use; an elastic gang targeted below full size, its pods there); a
	// hold moved to another target takes that target's budget (moved
	// onto a smaller one whose budget it has spent, it ends in that
	// cycle). A hold whose budget is spent ends, and the gang is not
	// held again for Budget.
	Budget time.Duration
	// Hysteresis: a higher-ranked eligible gang whose GPUs are held for
	// a lower-ranked one takes the hold over once it has waited this long
	// behind it (at once when the lower-ranked hold holds nothing yet).
	Hysteresis time.Duration
	// MaxHolds bounds the holds at once (their targets never share a
	// GPU).
	MaxHolds int
}

// DefaultConfig returns the defaults of the phalanx policy: reservations
// for the first 4 jobs of the queue (DefaultDepth), of which jobs that fit
// on one node hold at most one until they have waited a day
// (ReservationMinGPUs, ReservationAnyAfter), and one reservation only
// (EASY) while some such job has waited 8 hours (BacklogAfter; a job of
// a whole node's GPUs only while fewer than a twentieth of the GPUs are
// free, BacklogFreeShare), a
// queue ordered mostly by age with fair share as a bounded adjustment
// (DefaultPriority), and
// hold mode for
// gangs of a leaf's worth of GPUs or more that have waited 55 minutes
// (those above half the cluster: 70 minutes), each hold's budget 4 hours of
// the gang's size, one hold at a time; preemption off (when turned on:
// 10 minutes exempt, 5 minutes grace, 30 minutes minimum gain, 16 searches
// a cycle). The hold waits come from the
// stream study in benchmarks/README.md (a gang in a stream of small jobs
// without limits): they let at least twice as many small jobs start while
// the gang waits as strict FIFO does, and start the gang within 1.5 times
// FIFO's wait. One hold at a time comes from the synthetic workload
// without limits (12 seeds): with up to 4 disjoint holds, each kept its
// target's GPUs idle while it drained and none filled sooner, so the
// holds kept 3.7 times the GPU-hours idle (9,325 against 2,543 a run),
// utilisation fell from 81.8% to 74.6% and large jobs waited longer
// (p95 20h21m against 16h46m).
//
// The depth, the slots kept for gangs, the order and BacklogAfter (8
// hours) come from the frontier study in benchmarks/README.md
// (cmd/frontier), against greedy backfill and EASY backfill in age order
// on the synthetic workload (6 seeds) and the Philly and ITP traces (6
// trace seeds): the GPU-hours left idle while jobs wait are within one
// point of capacity of greedy backfill's; where queues are hours, gangs
// wait far less than under EASY in age order (the p95 of jobs over 16
// GPUs is 2h24m against 6h6m on Philly at load 3, 39m against 12h19m on
// ITP cluster 3); where every job waits days (Philly at load 4, ITP
// cluster 4) the backlog rule plans as EASY, and the mean wait of all
// jobs is within 3% of EASY's (5h8m against 5h1m, 17h16m against
// 17h9m), where four slots throughout gave 6h26m and 25h4m. The study
// also shows what it costs and where it still loses: single-node jobs
// wait longer at worst (the longest wait of any job on Philly at load 3
// is 9h50m against 6h58m); the backlog rule acts on Philly at load 3 too,
// where gangs wait longer than with four slots throughout (p95 2h24m
// against 1h58m; less since a job of a whole node's GPUs waiting while
// GPUs stand free makes no backlog: 1h46m on three trace seeds,
// benchmarks/README.md "Why seed 4 of Philly at load 3 moved"); on ITP
// cluster 4 the longest gang wait is 19 minutes
// longer than under EASY (there an age-ordered queue drains as fast as
// its idle GPUs allow, and the slots of the first hours keep more of them
// idle); and the tables move with the fair-share weight and with the
// seeds.
func DefaultConfig() Config {
	return Config{
		ReservationDepth:    DefaultDepth,
		ReservationMinGPUs:  MultiNode,
		ReservationAnyAfter: 24 * time.Hour,
		BacklogAfter:        8 * time.Hour,
		BacklogFreeShare:    0.05,
		FairShare:           DefaultPriority(),
		Hold: HoldConfig{Enabled: true, MinWait: 55 * time.Minute, MaxShare: 0.5, CapWait: 70 * time.Minute, Budget: 4 * time.Hour,
			Hysteresis: 30 * time.Minute, MaxHolds: 1},
		KeepEnded:  5 * time.Minute,
		Preemption: PreemptionConfig{ExemptTime: 10 * time.Minute, Grace: 5 * time.Minute, MinGain: 30 * time.Minute, MaxSearches: 16},
	}
}

// Validate checks the config: every field in range, no NaN or infinity.
// The error wraps ErrConfig and names the field.
func (c *Config) Validate() error {
	switch {
	case c.ReservationDepth < Conservative:
		return fmt.Errorf("%w: ReservationDepth %d (use Conservative for all)", ErrConfig, c.ReservationDepth)
	case c.ReservationMinGPUs < MultiNode:
		return fmt.Errorf("%w: ReservationMinGPUs %d (use MultiNode for one GPU more than a node)", ErrConfig, c.ReservationMinGPUs)
	case c.MaxJobsTested < 0:
		return fmt.Errorf("%w: MaxJobsTested %d is negative", ErrConfig, c.MaxJobsTested)
	case math.IsNaN(c.Hold.MaxShare) || c.Hold.MaxShare < 0 || c.Hold.MaxShare > 1:
		return fmt.Errorf("%w: Hold.MaxShare %v not in [0, 1]", ErrConfig, c.Hold.MaxShare)
	case math.IsNaN(c.BacklogFreeShare) || c.BacklogFreeShare < 0 || c.BacklogFreeShare > 1:
		return fmt.Errorf("%w: BacklogFreeShare %v not in [0, 1]", ErrConfig, c.BacklogFreeShare)
	case c.Hold.MinGPUs < 0:
		return fmt.Errorf("%w: Hold.MinGPUs %d is negative", ErrConfig, c.Hold.MinGPUs)
	case c.Hold.Enabled && (c.Hold.Budget <= 0 || c.Hold.MaxHolds <= 0):
		return fmt.Errorf("%w: Hold.Budget %v and Hold.MaxHolds %d must be positive when hold mode is on", ErrConfig, c.Hold.Budget, c.Hold.MaxHolds)
	case c.Hold.MaxHolds < 0:
		return fmt.Errorf("%w: Hold.MaxHolds %d is negative", ErrConfig, c.Hold.MaxHolds)
	case c.Preemption.MaxSearches < 0:
		return fmt.Errorf("%w: Preemption.MaxSearches %d is negative", ErrConfig, c.Preemption.MaxSearches)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"KeepEnded", c.KeepEnded}, {"ReservationAnyAfter", c.ReservationAnyAfter}, {"BacklogAfter", c.BacklogAfter}, {"Hold.MinWait", c.Hold.MinWait}, {"Hold.CapWait", c.Hold.CapWait},
		{"Hold.Budget", c.Hold.Budget}, {"Hold.Hysteresis", c.Hold.Hysteresis}, {"Preemption.ExemptTime", c.Preemption.ExemptTime},
		{"Preemption.Grace", c.Preemption.Grace}, {"Preemption.MinGain", c.Preemption.MinGain}} {
		if err := checkDuration(d.name, d.d); err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	fs := c.FairShare
	if fs.ClusterGPUs == 0 {
		fs.ClusterGPUs = 1 // New sets the cluster's GPU count: any positive count validates alike
	}
	if err := fs.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c.Quotas.Validate()
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
	// Replace keeps the job running: each of its pods on the failed node
	// is re-placed on a spare node inside the domains its gang requires
	// (gang.Ledger.ReplacePod), off every GPU promised to a reservation,
	// hold or claim while the job runs, and the job restarts from its
	// checkpoint (Plan.PodChanges). When some pod finds no spare node the
	// job is requeued.
	Replace
	// Shrink keeps an elastic job running smaller: the pods on the failed
	// node of members above their minimum are given up
	// (gang.Ledger.ReleasePod); pods of members that cannot spare them
	// are re-placed as with Replace. When neither works the job is
	// requeued.
	Shrink
)

var failurePolicyNames = [...]string{"requeue", "fail", "replace", "shrink"}

// String returns "requeue", "fail", "replace" or "shrink".
func (p FailurePolicy) String() string {
	if int(p) < len(failurePolicyNames) {
		return failurePolicyNames[p]
	}
	return fmt.Sprintf("FailurePolicy(%d)", uint8(p))
}

// ParseFailurePolicy returns the policy named s ("" is requeue), and
// false for an unknown name.
func ParseFailurePolicy(s string) (FailurePolicy, bool) {
	if s == "" {
		return Requeue, true
	}
	for i, n := range failurePolicyNames {
		if n == s {
			return FailurePolicy(i), true
		}
	}
	return 0, false
}

// Patience lets a job wait for a tight placement before accepting a looser
// one (Slurm --switches=k@T): until Wait has passed since submission, every
// member must fit within MaxDomains domains of Level (default: the lowest
// level). A member whose own domain limit that one does not imply (its
// limit lies at a lower level, or allows fewer domains) keeps its own
// limit, which every placement of the job meets.
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
	// Grow makes the job's elastic members (Min set, one node at a time:
	// no GPU total, no segments) resizable while it runs. They grow, up
	// to the pods their requests ask for, when GPUs are free that no
	// waiting job or reservation needs (Plan.PodChanges, PodsAdded); and
	// their pods above Min are lent: a waiting job that fits now only
	// with them, and holds a reservation or (with preemption on) is of a
	// higher class, starts on them before any preemption, and the job
	// gives them up (PodsRemoved, with PodChange.For; never in the cycle
	// that started it). The host must be able to add and remove ranks of a
	// running job.
	Grow bool
	// Class is the job's priority class, separate from its fair-share
	// priority: with preemption on, a waiting job may preempt running
	// jobs of a strictly lower class only. Default 0; any integer.
	Class int
	// Preemption says whether and how the job may be preempted: the zero
	// value preempt.Never protects it (a job is preemptible only when it
	// says so); preempt.Requeue returns it to the queue with its submit
	// time once its GPUs are released, preempt.Cancel ends it as
	// cancelled.
	Preemption preempt.Policy
	// Queue names the job's queue (a queue without children of
	// Config.Quotas); it must be empty without queues. With some queue
	// guaranteed GPUs, a job whose Preemption is preempt.Never runs only
	// within its queue's guarantee.
	Queue string
}
