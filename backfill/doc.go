// Package backfill is the scheduling engine a host scheduler embeds: it
// holds the jobs (queue, active and recently ended) and the running gangs,
// and each Schedule(now) returns a Plan: which jobs start now and where,
// which hold reservations (planned start and planned GPUs), which
// reservations moved and why, which jobs overran their limits, and why
// every other job waits.
//
// A cycle orders waiting jobs by multifactor priority (package fairshare),
// starts every due reservation on its planned GPUs, starts every job whose
// gang can be admitted now without touching GPUs reserved for others
// during its run (backfill), and gives waiting jobs, up to
// Config.ReservationDepth of them, a reservation: the earliest time in the
// availability profile (free GPUs now plus the GPUs running jobs return at
// start + time limit) at which their gang can be admitted with the same
// topology-aware placement, on those specific GPUs. Schedule's doc lists
// the steps.
//
// # Promises
//
// Reservations are promises. They persist across cycles and move earlier
// whenever the profile allows. However late the host runs a cycle, a due
// reservation (planned start at or before the cycle) whose planned GPUs
// are free starts first, on those GPUs, and no other job ever starts on
// the GPUs of a due reservation. A reservation moves later only when a job
// it waits for started late (the host confirmed it late, or it started
// from a reservation of its own late) or ran past its time limit, or when
// a node under it failed or was drained; each such move is in Plan.Moves
// with its cause and the job or node responsible. When the host runs a
// cycle at every event and every job runs at most its time limit, no job
// starts later than the start its reservation had when it was made.
//
// A job past its time limit is expected to end at once: a reservation that
// waits for it stays as it is (its Waiting says which job it waits for)
// and Plan.Overruns lists the job every cycle until it ends.
//
// Jobs without a time limit (the usual case on Kubernetes) never use GPUs a
// reservation needs.
//
// # Hold mode
//
// When running jobs have no time limit, no planned start can be given to
// a large gang, and on a busy cluster small jobs would take every GPU
// that frees up. Hold mode (Config.Hold) answers it. A gang is eligible
// for a hold when it asks for at least Hold.MinGPUs (a leaf's worth by
// default) and has waited Hold.MinWait (Hold.CapWait when it asks for
// more than Hold.MaxShare of the cluster); eligibility does not depend on
// its rank, so fair share cannot keep a large gang from it. Eligible
// gangs are served in priority order, up to Hold.MaxHolds at once on
// disjoint targets. A hold's target is where the gang is estimated to fit
// soonest: on a profile in which jobs with a limit end at it and jobs
// without one after the median remaining run time of their account's
// finished jobs that ran as long (a histogram of observed run times); the
// target moves whenever another one is estimated sooner. The hold keeps
// the target's free GPUs idle for the gang as they free up; every other
// job uses every other GPU. A higher-ranked eligible gang whose GPUs a
// lower-ranked gang holds takes the hold over at once if it holds
// nothing, or after Hold.Hysteresis. A hold may keep GPUs idle for at most
// Hold.Budget times the gang's size; then it ends, and the gang is not
// held again for Hold.Budget. Plan.Holds, Plan.HoldEnds and the reasons
// (Held with the counts, nodes and budget left; ForHold with when or why
// not yet; Hold for jobs blocked by another's hold) say what happens.
//
// Depth 1 is EASY backfill, Conservative plans every tested job, depth 0
// is greedy backfill with no reservations, and Strict disables backfill
// (strict priority order). Every waiting job gets a stable, user-facing
// reason: Reserved, Held, Priority, Resources, Reservation, Topology or
// Gang, with the placement reason attached.
//
// # States
//
// Every event goes through one path that checks it against these state
// machines before it changes anything. A job:
//
//	event      from                                  to
//	Submit     (new ID)                              pending
//	Schedule   pending, reserved, held, requeued     starting, or a waiting state
//	Started    starting                              running
//	Finished   starting, running                     finished
//	Failed     starting, running                     failed, or requeued (with requeue)
//	NodeDown   starting, running, with a member on   requeued or failed (OnNodeFailure)
//	           the node
//	Cancel     any waiting or active state           cancelled
//
// Pending, reserved, held and requeued are the waiting states. Schedule
// moves a waiting job to starting (it is booked on GPUs; its time limit
// runs from the plan's time) or between the waiting states. Started moves
// starting to running (the limit then runs from the confirmation); a
// second Started is refused, so the limit never restarts. Finished ends a
// starting or running job; Failed ends it or, with requeue, returns it to
// the queue as requeued, with its original submit time; NodeDown does the
// same to every active job with a member on the node, per the job's
// OnNodeFailure. Cancel ends a job in any waiting or active state. Ended
// jobs (finished, failed, cancelled) are remembered for Config.KeepEnded:
// Job reports them, a repeated event is refused with ErrTransition, and
// their IDs cannot be submitted again meanwhile.
//
// A node is up, drained, down, or down and drained: down (NodeDown, undone
// by NodeUp) and drained (Drain, undone by Resume) are separate facts, so
// a drained node that fails and is repaired is still drained. NodeDown of
// a down node, NodeUp of a node that is not down, Drain of a drained node
// and Resume of a node that is not drained are refused with ErrTransition.
//
// # Errors
//
// A refused call changes nothing, the engine's clock included; its error
// names the job or node and, for a transition, both states. Every call
// can return ErrBadTime (a time outside [MinTime, MaxTime)) and
// ErrTimeTravel (a time before the latest one seen). Besides:
//
//   - Submit: ErrBadJob (malformed: no ID, a bad gang, an unknown account,
//     a time limit, factor or count out of range, a request for more nodes
//     or GPUs than the cluster has, a node set of the wrong length),
//     ErrNeverFits (no domain can meet its constraints even on an empty
//     cluster), ErrDuplicateJob.
//   - Cancel, Started, Finished, Failed: ErrUnknownJob, ErrTransition.
//   - NodeDown, NodeUp, Drain, Resume: topology.ErrUnknownNode,
//     ErrTransition.
//   - ScheduleInto: ErrBadArgument (a nil plan).
//   - New: ErrBadArgument (nil cluster or tree), ErrConfig.
//   - Restore: ErrRestore (listing every problem), ErrBadArgument,
//     ErrConfig.
//
// # Job status and the next event
//
// Job(id) and Jobs() return each job's status: state, submit, start and
// end (or planned start and end), nodes as a Slurm hostlist, the reason
// it waits, whether it has run past its limit; FormatJobs renders them
// as squeue does, and JobStatus marshals to JSON. NextEvent returns the
// earliest time at which the plan can change without a new event (a
// reservation's start, a hold's expiry, the end of a patience or a hold
// cool-down, a running job's time limit), so a host can sleep until then
// or until its next event instead of polling.
//
// # Usage
//
//	tree, _ := fairshare.BuildTree(accounts, cfg.FairShare)
//	e, err := backfill.New(cluster, backfill.DefaultConfig(), tree)
//	err = e.Submit(backfill.Job{ID: "j1", Account: "alice", TimeLimit: 2*time.Hour,
//		Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.NodesOf(16, 8)}}}}, now)
//	for {
//		plan, err := e.Schedule(now)
//		for _, s := range plan.Starts { launch(s.Job, s.Allocation); e.Started(s.Job, now) }
//		for _, w := range plan.Waiting { show(w.Job, w.Message(time.Time{})) }
//		next, ok := e.NextEvent()
//		now = waitForEventOr(next, ok) // report events meanwhile: Finished, Failed, NodeDown...
//	}
//
// # Caller duties
//
//   - Pass the time in every call; times never go backwards.
//   - Apply each plan: the starts are already booked in the engine; launch
//     them, confirm with Started, and report Finished or Failed. Report
//     events at the time they happened when you batch them before a cycle.
//   - Report node failures (NodeDown returns the jobs it requeued or
//     failed), repairs (NodeUp), drains (Drain) and their end (Resume).
//   - Call Schedule when something changed (a submit, a finish, a node)
//     and by NextEvent; with MaxJobsTested, or to let priorities that drift
//     with time (age, decaying usage) reshuffle reservations, also at a
//     fixed cadence.
//   - Save Snapshot (plain JSON-serialisable data) to survive a restart;
//     Restore checks everything in it before rebuilding.
//
// # Concurrency
//
// An Engine is not safe for concurrent use; the host's scheduling loop
// serialises calls. Plans, statuses and snapshots are plain data and may
// be handed to other goroutines.
package backfill
