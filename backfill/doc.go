// Package backfill is the scheduling engine a host scheduler embeds: it
// holds the pending queue and the running gangs, and each Schedule(now)
// returns a Plan: which jobs start now and where, which hold reservations
// (planned start and planned GPUs), and why every other job waits.
//
// A cycle orders pending jobs by multifactor priority (package fairshare),
// starts every job whose gang can be admitted now without touching GPUs
// reserved for others during its run (backfill), and gives waiting jobs,
// up to Config.ReservationDepth of them, a reservation: the earliest time
// in the availability profile (free GPUs now plus the GPUs running jobs
// return at start + time limit) at which their gang can be admitted with
// the same topology-aware placement, on those specific GPUs. Reservations
// are promises: they persist across cycles, move only earlier while their
// plan holds, and are re-planned only when a node fails or a running job
// overruns its limit. When every job runs at most its time limit, no job
// starts later than the start its reservation had when it was made.
//
// Jobs without a time limit (the usual case on Kubernetes) never use GPUs a
// reservation needs. When the top waiting job cannot get a planned start
// because running jobs have no known end, hold mode keeps the GPUs of its
// target placement for it as they free up, within Config.Hold's caps, and
// reports the GPU-seconds held.
//
// Depth 1 is EASY backfill, Conservative plans every tested job, depth 0
// is greedy backfill with no reservations, and Strict disables backfill
// (strict priority order). Every waiting job gets a stable, user-facing
// reason: Reserved, Held, Priority, Resources, Reservation, Topology or
// Gang, with the placement reason attached.
//
// # Usage
//
//	tree, _ := fairshare.BuildTree(accounts, cfg.FairShare)
//	e, err := backfill.New(cluster, backfill.DefaultConfig(), tree)
//	err = e.Submit(backfill.Job{ID: "j1", Account: "alice", TimeLimit: 2*time.Hour,
//		Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.NodesOf(16, 8)}}}}, now)
//	plan, err := e.Schedule(now)
//	for _, s := range plan.Starts { launch(s.Job, s.Allocation); e.Started(s.Job, now) }
//	for _, w := range plan.Waiting { show(w.Job, w.Message(time.Time{})) }
//	...
//	e.Finished("j1", later)        // or Failed, Cancel; NodeDown, NodeUp, Drain
//
// # Caller duties
//
//   - Pass the time in every call; times never go backwards
//     (ErrTimeTravel).
//   - Apply each plan: the starts are already booked in the engine; launch
//     them, confirm with Started (the time limit runs from then), and report
//     Finished or Failed. Cancel withdraws a job in any state.
//   - Report node failures (NodeDown returns the jobs it requeued or
//     failed), repairs (NodeUp) and drains.
//   - Call Schedule when something changed (a submit, a finish, a node) and
//     at a fixed interval, so that reservations and holds advance.
//   - Save Snapshot (plain JSON-serialisable data) to survive a restart;
//     Restore checks it before rebuilding.
//
// # Concurrency
//
// An Engine is not safe for concurrent use; the host's scheduling loop
// serialises calls. Plans are plain data and may be handed to other
// goroutines.
package backfill
