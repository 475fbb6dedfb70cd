// Package sim is a discrete-event simulator that drives the backfill
// engine (and the baselines) in virtual time over a job trace.
//
// Jobs are submitted at their trace times (divided by a load factor), the
// engine's plans start them, and each finishes after its real duration
// (killed at its time limit if it runs over). Optional seeded node
// failures and repairs (Config.NodeMTBF, Config.Repair) stop the jobs on
// the node: whole-gang requeue, the default, restarts them from scratch
// behind the queue; with Config.OnNodeFailure backfill.Replace their pods
// there move to spare nodes and they restart at once from their last
// checkpoint (Config.Checkpoint); with backfill.Shrink every multi-node
// job is elastic down to half its nodes (it may also start smaller), gives
// up its pods on the node and runs on from its checkpoint on fewer GPUs,
// progressing in proportion to its GPUs (work is counted in time at full
// size), without growing back. Result.FailureRestarts,
// Result.Replacements, Result.Shrinks and Result.FailureLostGPUSeconds
// measure it. A scheduling cycle runs after
// every batch of events at one instant, and optionally at a fixed
// interval while jobs wait.
//
// Policies: pod-by-pod (no gang semantics: the stock Kubernetes model),
// gang-fifo (gang admission, strict submit order), gang-backfill (greedy
// backfill, no reservations) and phalanx (reservation backfill, fair
// share, hold mode: backfill.DefaultConfig). Placement variants:
// leaf-pack, first-fit, random.
//
// Preemption (Config.Preemption): a seeded share of the jobs is urgent
// (class 1) and preempts the others (class 0, requeued when preempted,
// starting over) under the gang policies; the simulated host reports each
// victim released after Preemption.Release. Result.Preemptions,
// Result.PreemptedGPUSeconds (the work the victims lost),
// Result.UrgentWaits and Result.OtherWaits measure it; Preemption.Off
// keeps the classes without preempting, the baseline.
//
// Metrics: utilisation over the active window and before its final drain
// (Result.UtilisationBeforeDrain), GPU-hours idle while jobs were queued,
// GPU-hours held by jobs that cannot run (deadlock),
// GPU-hours held by hold mode, waits per size class (p50 and p95 by
// nearest rank, no interpolation), mean completion time,
// makespan, topology quality of multi-node jobs, per-account share against
// entitlement, and the scheduler's CPU time per cycle (the one quantity
// measured with the wall clock; everything else is deterministic for a
// seed). With Config.UsagePoints set, Result.Usage also holds the busy
// GPUs over time, in total and per account, in bounded memory (a few
// thousand steps whatever the run's length). Config.Progress is a hook
// the caller supplies for progress reports; the simulator itself reads
// no clock for it and starts no goroutine.
//
// # Usage
//
//	jobs, _, err := sim.ReadTrace(f, sim.TraceOptions{LoadFactor: 4, Seed: 1})
//	res, err := sim.Run(sim.Config{Cluster: topology.Default2000(), ClusterName: "default-2k",
//		Trace: "philly", LoadFactor: 4, Policy: sim.Phalanx}, jobs)
//	fmt.Print(sim.Table([]*sim.Result{res}))
//
// The simulator is for benchmarks, tests and examples; it is not part of
// the scheduling core, and it is not safe for concurrent use of one Run.
package sim
