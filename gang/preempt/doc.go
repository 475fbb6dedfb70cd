// Package preempt finds which running gangs to stop so that a waiting gang
// of a higher priority class can be admitted with all its topology
// constraints: the victim search of preemption.
//
// # Policy
//
// Every running gang is a Candidate: its allocation, a priority class (an
// integer, separate from fair-share ordering), a preemption policy (Never,
// Requeue, Cancel), whether it is inside its exempt time (it has run less
// than the minimum before it may be preempted, Slurm's PreemptExemptTime),
// and its cost: the GPU-seconds of work lost if it stops now (its GPUs
// times the time since it started or last checkpointed), which the caller
// computes. A preemptor of class k may choose only gangs of a class
// strictly lower than k whose policy is not Never and that are outside
// their exempt time. Victims are always whole gangs: every GPU of each.
// Since a victim's class is lower than its preemptor's, a victim can never
// preempt its preemptor in turn (with fixed classes there is no cycle).
//
// A victim set is feasible when the preemptor is admitted (gang.Admitter:
// every member, required levels, domain limits, segments, co-location) on
// the caller's free state with every GPU of every victim released. The
// search returns a feasible set that is minimal (releasing all but any
// one of its victims leaves the preemptor out: each victim is tried
// without, by admission, which settles it when admission is monotone) and
// as good as it can find by this order, compared field by field:
//
//  1. the highest class among the victims, lower first;
//  2. the work lost, the victims' costs summed, less first;
//  3. the number of victims, fewer first;
//  4. the number of lowest-level topology domains (leaves, NVLink blocks)
//     holding GPUs of the victims, fewer first: victims whose release frees
//     one domain beat victims scattered over many.
//
// Verdict.Allocation is the preemptor's placement on the state with the
// victims released; Verdict.Reason says, when no set helps, why in a
// user's words: no lower-class victims in any domain that could hold it
// (with the admission reason when every lower-class gang is stopped), the
// only victims are inside their exempt time, or cannot be preempted
// (policy Never), or both. After an error Find returns it has code
// BadInput, with no victims.
//
// # The search
//
// Find works on a scratch copy of the state, in stages:
//
//  1. Fits: the preemptor is admitted as things are (no victims).
//  2. Lowest class: the preemptible gangs are released class by class,
//     lowest first, and the preemptor tried after each class. The first
//     class after which it fits is the least possible highest victim class
//     whenever admission is monotone (releasing more GPUs never hurts); the
//     gangs up to that class form the pool, and the placement found with
//     the whole pool released guides the next stage.
//  3. Guided set: the pool gangs that the placement of stage 2 overlaps.
//  4. Scopes: each domain of the level the whole gang must sit in (a
//     required co-location, or a single member's required level), or else
//     of the lead member's required level, or else of every level from
//     the lowest whose domains can hold the gang up to the whole cluster.
//     The lead member is the member asking for the most GPUs, when it
//     asks for nodes. A scope's units are the steps of a greedy: with a
//     lead member, a node that lacks the GPUs one of its pods needs, with
//     the pool gangs that must leave it, costed by spreading each gang's
//     cost over its GPUs; otherwise one gang, costed per GPU it frees in
//     the scope. The cheapest units covering the scope's deficit (pods
//     without a node, or GPUs) bound from below the cost of any set that
//     makes room there. Scopes are taken by increasing bound: release
//     units cheapest first until the scope could hold the preemptor
//     (enough nodes, whole segments when the lead member asks for
//     segments, or GPUs), try it with the lead member (or every member)
//     restricted to the scope, release 1, 2, 4... more units after each
//     failure; keep the victims the placement overlaps. The scopes stop
//     when the next bound exceeds the best cost found, when 8 scopes in a
//     row did not improve the best set, or when the work bound is
//     reached. When no scope gives a set with node units, the stage runs
//     again with gang units.
//  5. Minimality: the best set's victims are tried, most expensive first,
//     without each one; a victim the preemptor fits without is dropped.
//  6. Exact: when at most Options.ExactCandidates gangs are preemptible,
//     every subset better than the answer so far is tried in order (keys
//     tabulated without admissions, subsets that cannot free enough GPUs
//     skipped); the first that fits is optimal, and when none does the
//     answer is.
//
// # Bounds and exactness
//
// Work per Find: reading every candidate once (and the allocations of the
// preemptible ones), one copy of the free state, one release of each pool
// gang in stage 2, building the scopes' units in time linear in the
// pool's allocation entries and the cluster's nodes times the scope
// levels (units are sorted lazily, only as far as the bound and the
// greedy need), and trial admissions: one in stage 1, at most one per
// distinct preemptible class in stage 2, at most Options.MaxWork (default
// 64) in stages 3, 4 and 6 together, at most one per victim in stage 5,
// and at most three to explain a failure. Verdict.Work counts them.
//
// Exact: when at most ExactCandidates (default 12) running gangs are
// preemptible, their GPUs lie in at most 64 lowest-level domains, and
// stage 6 ends within MaxWork, the result is optimal by the whole order
// (Verdict.Exact). TestOracle checks this against a brute force over every
// subset on 3,000 random clusters of up to 12 nodes and 10 running gangs.
// Beyond that size only criterion 1 is exact, and only when admission is
// monotone: always for a single-member gang (placement's feasibility is
// exact, and a co-location tries every domain with the GPUs), not
// guaranteed for several members (the admitter places them in a greedy
// order). Criteria 2 to 4 are then best effort: on the oracle's instances
// with the exact stage off, the heuristic found the optimum in 993 of the
// 1,013 instances that had a victim set, and a set in all of them
// (TestHeuristicOracle logs the figures). Every result, exact or not, is
// feasible and minimal.
//
// # Usage
//
//	s, err := preempt.NewSearcher(cluster, preempt.DefaultOptions()) // once per cluster
//	cands := []preempt.Candidate{{ID: "job-3", Alloc: alloc3, Class: 0,
//		Policy: preempt.Requeue, Cost: gpus3 * secondsSinceCheckpoint3}, ...}
//	var res preempt.Verdict // reused between calls
//	err = s.Find(ledger.State(), &preempt.Preemptor{Gang: spec, Class: 2}, cands, &res)
//	switch {
//	case err != nil:                   // a malformed request or candidate: fix it
//	case !res.Found:                   // res.Reason says why preemption does not help
//	case res.Reason.Code == preempt.Fits: // no victims needed: admit it
//	default:                           // stop res.IDs, then admit the gang
//	}
//
// # Caller duties
//
//   - List as candidates every running gang that may be preempted, with
//     the allocation the state holds for it; GPUs held by gangs not listed
//     are never released. A candidate's allocation is checked against the
//     state when the search releases it (an error names the gang); IDs are
//     the caller's and are not checked for uniqueness.
//   - Compute costs in GPU-seconds, in [0, MaxCost], and decide the exempt
//     flags from the time passed in (the package never reads the clock).
//   - Apply a preemption as the host's own mechanism does, then admit the
//     preemptor only once every victim's GPUs are released (below).
//
// # Applying a preemption
//
// The search only decides. The host applies it: signal every victim, wait
// for its GPUs, then start the preemptor. Until the victims are gone the
// preemptor's nodes (Verdict.Allocation) should be kept from other work,
// or the search repeated when the state has changed.
//
//   - Kubernetes: evict the victim's pods (the Eviction API or a delete
//     with a grace period; terminationGracePeriodSeconds is the grace
//     between SIGTERM and SIGKILL), marking the workload preempted (a
//     DisruptionTarget pod condition, or the queueing controller's
//     evicted condition, as Kueue does). With policy Requeue the workload
//     returns to its queue keeping its original creation time; with
//     Cancel it is deleted or marked failed. The GPUs are released when
//     every pod has terminated (the pods are gone or in a terminal phase),
//     not when the eviction is sent: report the gang released then.
//   - Slurm: the host's equivalents of PreemptMode=REQUEUE (the job goes
//     back to the queue) and CANCEL. With a GraceTime, Slurm sets the
//     victim's end time to now plus the grace time and sends SIGCONT and
//     SIGTERM at once (the job's --signal instead, with
//     PreemptParameters=send_user_signal), then SIGTERM and SIGKILL at
//     that end time. The GPUs are released when the job has ended on every
//     node (its epilog done): report the gang released then.
//
// In both, a victim that does not exit within its grace period is killed;
// a node that fails meanwhile releases its gangs as usual. The host
// releases each victim in its books (gang.Ledger.Release) when its GPUs
// are free, then admits the preemptor.
//
// # Concurrency and allocation
//
// A Searcher holds scratch space and is not safe for concurrent use; give
// each goroutine its own. Find only reads the state and the candidates
// (nobody may change them meanwhile), so several Searchers may read one
// state concurrently. In the steady state Find allocates nothing: the
// scratch grows to the largest candidate list seen, the exact stage's
// table (2^ExactCandidates entries) is allocated by NewSearcher, and the
// Verdict's slices are reused.
package preempt
