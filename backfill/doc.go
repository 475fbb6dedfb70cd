// Package backfill is the scheduling engine a host scheduler embeds: it
// holds the jobs (queue, active and recently ended) and the running gangs,
// and each Schedule(now) returns a Plan: which jobs start now and where,
// which hold reservations (planned start and planned GPUs), which
// reservations moved and why, which jobs overran their limits, and why
// every other job waits.
//
// A cycle orders waiting jobs by multifactor priority (package fairshare;
// each active job's GPUs are billed to its account at every cycle and at
// its end, decayed within each interval as fairshare.DecayedSeconds says,
// so an account's usage does not depend on how often the host runs
// cycles), starts every due reservation on its planned GPUs, starts every job whose
// gang can be admitted now without touching GPUs reserved for others
// during its run (backfill), and gives waiting jobs, up to
// Config.ReservationDepth of them, a reservation: the earliest time in the
// availability profile (free GPUs now plus the GPUs running jobs return at
// start + time limit) at which their gang can be admitted with the same
// topology-aware placement, on those specific GPUs. A reservation is kept
// until its job starts, so a job may hold one while a job ranked above it
// (a later arrival of a lighter account, say) waits without; the
// slots then go to the highest-ranked jobs as they free, a slot freed in
// the middle of a walk at the next cycle. With Config.ReservationMinGPUs
// (DefaultConfig: more GPUs than a node holds) jobs below it hold at most
// one of the slots between them, and the rest are kept for larger gangs,
// until a small job has waited Config.ReservationAnyAfter (a day). With
// Config.BacklogAfter (DefaultConfig: 8 hours), while some job below
// ReservationMinGPUs has waited that long (one its queue's quota holds
// back does not count), a job may take a new reservation only while no
// job ranked above it holds one, as under EASY backfill (reservations
// held by jobs ranked lower are kept until their jobs start); the plan
// names such a job in Plan.Backlog. Schedule's doc lists the steps.
//
// # Promises
//
// Reservations are promises. They persist across cycles and move earlier
// whenever the profile allows. However late the host runs a cycle, a due
// reservation (planned start at or before the cycle) whose planned GPUs
// are free starts first, on those GPUs, and no other job ever starts on
// the GPUs of a due reservation. (Due reservations start in planned-start
// order: a cycle late enough may find two due on the same GPUs, one
// planned from the other's end; the first starts late on them, and the
// second moves later, blamed on that late start, or starts at once
// elsewhere if it fits.) A reservation moves later only when a job
// it waits for started late (the host confirmed it late, or it started
// from a reservation of its own late) or ran past its time limit, or when
// a node under it failed or was drained; each such move is in Plan.Moves
// with its cause and the job or node responsible. When the host runs a
// cycle at every event and every job runs at most its time limit, no job
// starts later than the start its reservation had when it was made.
//
// A job past its time limit is expected to end at once: a reservation that
// waits for it stays as it is (its Waiting says which job it waits for)
// and Plan.Overruns lists the job every cycle until it ends. A due
// reservation holds its planned GPUs from the cycle's time. When a job,
// tested at its rank, starts off its reservation (elsewhere: it fits
// better on GPUs free now, or before its planned start), or gives it up
// (its queue's quota, a preemption), after the walk left waiting a job
// whose run would overlap the reservation, the planned GPUs it let go
// that are free are offered again at once (NextEvent), in priority order.
// Reservations are kept up before the walk: when the walk starts a job
// whose run would end (at its limit) before the start of such a
// reservation, which holds GPUs free now and overlaps the run of a job
// the walk left waiting, the next cycle is due at once too, and searches
// that reservation again: it may move earlier, onto the started job's
// GPUs, and leave the waiting job those it kept.
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
// its rank, so fair share cannot keep a large gang from it. Whole nodes
// count the GPUs of the largest nodes they may use (their node sets,
// their queue's pool), or, when their queue's limits refuse that count
// even with nothing in use, of the smallest nodes, where they can start
// and their hold is targeted. Eligible
// gangs are served in priority order, up to Hold.MaxHolds at once on
// disjoint targets (one by default: several holds each keep their own
// target's GPUs idle while it drains, and on the synthetic workload
// without limits that cost utilisation and lengthened large jobs' waits). A hold's target is where the gang is estimated to fit
// soonest: on a profile in which jobs with a limit end at it and jobs
// without one after the median remaining run time of their account's
// finished jobs that ran as long (a histogram of observed run times); the
// target moves whenever another one is estimated sooner. The hold keeps
// the target's free GPUs idle for the gang as they free up; every other
// job uses every other GPU. A higher-ranked eligible gang whose GPUs a
// lower-ranked gang holds takes the hold over at once if it holds
// nothing, or after Hold.Hysteresis. A hold may keep GPUs idle for at most
// Hold.Budget times the GPUs of its target, which it can hold (the
// gang's size, or less: whole nodes of unequal sizes count the nodes
// targeted, not the largest they may use, and an elastic gang targeted
// below full size its pods there; the budget follows the target when it
// moves, a hold moved onto a smaller target whose budget it has spent
// ending in that cycle, and Restore computes it so); then it ends, and
// the gang is not held again for Hold.Budget (NextEvent wakes for it).
// A hold whose gang
// gains a planned start becomes its reservation when the walk reaches
// the gang, in priority order (reservation slots go in that order). A
// job ranked above the gang and tested before was refused for the hold's
// GPUs (whatever it got instead: a reason, a reservation, a hold), and
// jobs ranked below take them in this cycle: when a hold ends or moves
// in a cycle after it refused a job (a planned start, a higher-ranked
// gang taking it over, its queue's quota, its gang preempting instead,
// its gang starting), the next cycle is due at once
// (NextEvent) to offer its GPUs again in priority order;
// so is it when a gang gets a hold whose target is all free (one it took
// over had kept it), and the gang starts there; and when, after a gang
// kept or took a hold, the walk lets go of a lower-ranked hold's GPUs
// (it ends, moves, or its gang starts): the holder saw them held for
// good, and the next cycle searches its start and target again (not
// after a start that leaves every GPU of the target running a job
// without a limit estimated to end no sooner than the targets of the
// holds kept: those searches would find the same); and
// when the walk gives a hold to, or moves one of, a gang ranked below an
// eligible gang it left without one (that gang had a planned start but
// no reservation, or waited out the hysteresis behind a lower-ranked
// hold): the new target may cover that start or be its rival, and the
// next cycle tests it again, as a second cycle at the same time would
// (it may take the hold over). So is it, for the same reason, when a
// gang the walk left without a hold sees a held gang start (its hold
// gone, another may be taken), when a job starts after a gang was told
// to wait for a hold found as the rival of its estimated target (the start changes
// the estimates; with one hold, the rival wherever the target lies, it
// does not matter), and when a job starts after another was told it
// would fit now but for a hold (the start takes free GPUs that placement
// may have needed), and when a job starts, or a hold is given or moved,
// after an eligible gang with patience was left waiting for a tighter
// placement because it fits now loosely (it went to no hold test, and
// may no longer fit). With jobs under time limits, while hold mode is
// in play (a gang held, or an active job without a limit, so that one
// could be), so is it when the walk changes what a hold test or a
// reservation search before it saw: a reservation not yet due was
// searched before a hold moved or ended,
// a reservation was let go, or a job with a limit started (it may move
// earlier); a reservation is made or let go after a hold test read the
// reservations, or after a job was told nothing of the slots while one
// was open to it; a job starts, or a reservation is made, after an
// eligible gang was left without a hold for a planned start; a job
// starts after another was told it would fit now but for a reservation;
// the walk lets go of a hold's GPUs (it ends or moves, or its gang
// starts; unless, for a job that may not look for victims or reclaim,
// jobs without a limit, running or being preempted, now run on all of
// its target, or the GPUs left open could not serve its search by their
// count) after a search for another job's start (a
// reservation, or a planned start for an eligible gang) found none with
// them held, a time ahead to try (a job or reservation with an end);
// and the first active job without a limit starts after gangs that hold
// mode could not yet hold were walked. A host that repeats a cycle at
// the same time then gets the same decisions and reasons. (With every
// active job under a limit and no hold, hold mode holds nothing, and
// none of these asks for a cycle at once, as with it off: a reservation
// kept up before the walk may then move earlier at a second cycle, onto
// the end of a job started in it.) A gang
// that takes a hold over first searches again for a planned start, on
// the GPUs the hold it took over no longer keeps.
// Plan.Holds, Plan.HoldEnds and the reasons (Held with the counts, nodes
// and budget left; ForHold with when or why not yet; Hold for jobs
// blocked by another's hold) say what happens.
//
// Depth 1 is EASY backfill, Conservative plans every tested job, depth 0
// is greedy backfill with no reservations, and Strict disables backfill
// (strict priority order). Every waiting job gets a stable, user-facing
// reason: Reserved, Held, Priority, Resources, Reservation, Topology,
// Gang, Hold, ForHold, Preempting, Claimed or Quota, with the placement reason
// attached, why it got no reservation when it was refused a slot
// (Waiting.NoSlot), and why preemption did not help when it was tried.
//
// # What a cycle costs
//
// A cycle ranks the queue from the last cycle's ranking (a nearly sorted
// input sorts in about linear time) and tests the jobs in order against
// a scratch state: the free state minus the GPUs of the reservations
// overlapping the job's window. With a short book (up to 8 reservations)
// one scratch state is kept per prefix of the reservations by start, so
// jobs with different time limits do not rebuild one back and forth; a
// start takes its GPUs off every one. A job of the same shape as one that
// failed on the same scratch contents gets its outcome from a cache. A
// job that would start at a later time is placed on the availability
// profile; with 8 or more reservations (conservative backfill) the
// search first skips every time at which a count of the GPUs running
// jobs and reservations take leaves too few for it, and starts from the
// last search's probe, so a cycle that plans every job of a long queue
// no longer costs the square of its length. A kept reservation searches
// for an earlier start only after something was freed, and then only
// before the time from which every change since its last search left the
// availability profile as it was (the end of the job that finished, of
// the job that started, of the reservation that went), and merges the
// candidate times (the ends of running jobs and of reservations) only as
// far as it reads them. When the priority weights
// weigh only age (fairshare.Weights.SubmitOrdered: strict FIFO, FIFO
// with backfill) and neither quotas nor MaxJobsTested reorder the queue,
// the queue is kept in submit order between cycles instead of ranked:
// a cycle places the jobs that joined and passes over those that left,
// computes a priority only for a reason it reports, and in strict order
// with OnlyChangedWaits does not visit the jobs behind the same blocker
// as last cycle. Under other weights, without quotas, MaxJobsTested or a
// starvation bound, the ranking is kept too while the accounts'
// fair-share factors stay as they are: every priority then grows alike
// until its job has waited MaxAge, so a job's priority before rounding is
// its key (fairshare.View.Static plus its age at a fixed instant) plus
// what every job gained since, capped at its static part plus the age
// weight, and a cycle looks again only at the jobs whose priority before
// rounding crossed a half point, moving each up past the few jobs it now
// outranks, and merges in the jobs that joined. With OnlyChangedWaits,
// a job that last failed as any job of its shape would (a same-shape
// failure) carries a stamp of what it failed on: the free state and the
// book as they were (change counts, not contents), until when its
// window's reservations stay those, and the reason it was left with.
// While the stamp holds, its test is skipped and its reason is
// unchanged: in a cycle driven only by submissions, most of a long queue,
// until the free state or the book changes (a start; a due reservation,
// whose end moves with now, changes the book every cycle). Quotas,
// holds, claims, and growing jobs under preemption (they lend pods as
// time passes) turn the stamps off. In the kept fair-share ranking each
// job's key also records the world its stamp held in when the walk left
// it, so that the next cycle, if that world still is, passes over runs
// of such jobs without reading their records (no preemption, strict
// order or MaxJobsTested window, no job gone from the queue since, no
// such stamp expired). The key records the job's class too: its shape,
// the length of its reservation prefix and its reason, in the book's
// version. When the world changed (a job ended), the walk tests the
// first job it meets of each class, and once one failed as its class
// says in the world that is, passes over the others of the class without
// reading their records (not while hold mode may hold; a book change, or
// the earliest expiry of a stamp of the class, ends a class). A cycle's
// usage charges read a list of the active jobs' GPUs and accounts kept
// beside the running list, not their records. None of this changes a
// decision: the
// package's tests run every cache against its reference path and compare
// the plans byte for byte, and under their invariant checker every
// skipped test runs anyway and must agree. benchmarks/README.md has the
// figures.
//
// # Preemption
//
// With Config.Preemption on, a job may stop running jobs of a strictly
// lower priority class (Job.Class, separate from fair share) whose policy
// allows it (Job.Preemption: never, the zero value, protects a job;
// requeue and cancel say what happens to it). A waiting job that cannot
// start now tries it in the walk of the cycle when some running job has
// a lower class and it would not start soon otherwise: it holds no
// reservation and the profile gives it no start by now + Grace + MinGain
// ("far"), or its reservation starts later than that. A job whose
// reservation is due, or near, waits for it and loses nobody's work.
//
// The victims are chosen by package gang/preempt among the running
// (confirmed) jobs outside their exempt time: whole gangs whose release
// lets the job in with all its topology constraints, by the lowest
// possible highest victim class, then least work lost (each victim's GPUs
// times the time since its start or its last Checkpointed), then fewest
// victims, then fewest leaves. The job's placement keeps off the GPUs of
// holds, of other claims, and of every reservation whose window overlaps
// the job's run were it to start when the victims' grace ends (from now
// to now + Grace + its time limit; every reservation, for a job without
// a limit): no reservation moves for a preemption whose victims are
// released within their grace. Released later, the preemptor starts
// late, and a reservation it delays moves with cause late start, as for
// any late start. Running jobs whose every GPU is so kept are no
// candidates (Waiting.PreemptPromised counts them). At most
// PreemptionConfig.MaxSearches jobs search per cycle; a job whose search
// would repeat one that found no placement in the cycle (the same shape,
// class and queue, a time limit at least as long, no reservation, hold,
// claim or queue count changed since, neither job with GPUs of its own)
// is given that search's answer and reason, and spends none of that
// budget.
//
// A found set goes into Plan.Preemptions (victim, preemptor, policy, the
// grace's end, the work lost, and a reason in words: "preempted by X
// (class 2, above this job's 0) for its 256-GPU gang, which had no
// planned start"). The victims become preempting: they keep their GPUs
// until the host reports them released. The preemptor's placement is
// claimed for it: its free GPUs are kept from every other job, as a hold
// keeps them, and it starts on it at the first cycle after its last
// victim is released (WaitPreempting says which victims it waits for;
// jobs that would fit on the claimed GPUs wait with WaitClaimed). A
// released victim is requeued with its original submit time (requeue) or
// cancelled (cancel). A waiting job whose search found no set says why in
// its reason (Waiting.PreemptTried, Waiting.Preempt): no lower-class
// victims in any domain that could hold it, victims inside their exempt
// time, or protected by policy never.
//
// No thrashing: a victim's class is below its preemptor's, so it can
// never preempt it in turn, nor any job of its own class; every
// preemptor -> victim chain descends in class and cannot cycle. A requeued
// victim cannot take back the GPUs it left (they are claimed, or, when a
// drain or a failure dropped the claim, its preemptor goes first on
// them: below), and once
// it runs again it may be preempted again only after its exempt time:
// a job is preempted at most once per ExemptTime of running.
//
// A claim ends when its job starts, is cancelled, or a node under it
// fails or is drained (its job searches again at the next cycle; the
// victims already signalled go on preempting and are released as usual,
// and until then that search counts their GPUs as its job's at no cost:
// a new claim that takes them does not signal them again). A victim
// released before that cycle (Preempted, Failed with requeue, a node
// failure; before the claim ended or after) leaves GPUs no claim keeps;
// requeued, it yields to its preemptor: the first walk that would test it
// (one whose MaxJobsTested window leaves it out does not, nor one while
// the claim stands) passes it over (WaitPriority, Blocker
// the preemptor, with a Detail) while the preemptor still waits without
// a claim, ranks below it and fits the GPUs free now (every reservation,
// hold and claim aside), so that the preemptor has its test with those
// GPUs free (it starts on them, or claims them with other victims), and
// the next cycle is due at once (NextEvent), in which the victim is
// tested as any job. Without it, a victim that outranks its preemptor
// (an older job, fair share, a reclaim across queues) restarted on the
// GPUs it left and was preempted again, or another gang was. A job
// ranked between the two is tested before the preemptor and may still
// take those GPUs (the preemptor then looks for victims again); a
// preemptor that does not fit them does not keep the victim from them.
// Should a victim be released so late that a reservation the claim shares
// GPUs with is due first (its time limit after the grace's end), the
// claim is dropped and the reservation goes first: it starts, or, its
// GPUs not all free (a job on them past its limit), holds them as a due
// reservation does, and its job searches again.
//
// # Applying a preemption
//
// For each entry of Plan.Preemptions the host signals the victim at once
// and reports Engine.Preempted when every GPU of it is free; it may report
// Finished or Failed instead if the victim ended on its own meanwhile.
// Then it runs a cycle, which starts the preemptor.
//
//   - Kubernetes: evict the victim's pods (the Eviction API, or a delete
//     with a grace period: terminationGracePeriodSeconds set to Grace),
//     and mark the workload preempted (a DisruptionTarget pod condition,
//     or the queueing controller's evicted condition); call Preempted
//     when every pod has terminated (gone or in a terminal phase), not
//     when the eviction is sent. A requeued victim's workload goes back
//     to its queue; the engine requeues it with its original submit
//     time.
//   - Slurm: the equivalents of PreemptMode=REQUEUE or CANCEL with
//     GraceTime set to Grace: signal the job (SIGCONT and SIGTERM, or its
//     --signal), kill it at the grace's end, and call Preempted when the
//     job has ended on every node (its epilog done).
//
// A victim that does not exit within its grace is killed by the host;
// the engine waits for the report however late it comes (the preemptor's
// reason says the grace's end; the claim is kept). Checkpointed tells the
// engine that a running job saved its work, so that preempting it loses
// only the work since.
//
// # Quotas
//
// Config.Quotas arranges queues in a tree, like Kueue's cohorts and KAI's
// queues. Each queue has a guarantee (GPUs it gets back whenever its work
// waits), a borrowing limit (how far above its guarantee it may go), a
// lending limit (how much of its unused guarantee others may borrow; the
// rest stays idle for it), a maximum (a hard cap, Slurm's GrpTRES) and a
// weight. A parent's guarantee covers its children's; what it does not
// give them is theirs to share (a Kueue cohort's own quota is a parent's
// guarantee minus its children's). Jobs name a queue without children
// (Job.Queue). A queue with Nodes is a node pool: its jobs, and those of
// the queues below it, are placed on those nodes only (a partition;
// reasons count the other nodes as "outside queue q's pool"); a
// pool lends its idle nodes to another through a queue on its nodes that
// borrows its unused quota, and the part of its guarantee above its
// lending limit is the floor it never lends (examples/hybrid), as long as that queue can borrow from no other
// queue: quotas count GPUs, not nodes, so GPUs another queue lends it
// are taken on the pool's nodes too, floor included (the other pools of
// examples/hybrid lend nothing). Limits and pools bind starts: restored under a
// config that lowered or moved them (Restore), running jobs stay where
// and as they run, and their queues take nothing more until back within
// the limits. Reclaim takes only from queues that borrow: a
// pool's guarantee holds when the queues that may also use its nodes
// either have pools of their own elsewhere or borrow to be there. A
// queue's use is the GPUs of its subtree's starting and running jobs and
// claims; a preempting job's GPUs count for nobody. Engine.Queues reports
// each queue's use, borrowing, waiting GPUs and share.
//
// A job starts only if, at its queue and every queue above it, the use
// stays within the maximum and the effective use within the guarantee
// plus the borrowing limit, and the top queues within the cluster (there
// only the GPUs queues keep idle from lending bind: a job the GPUs in use
// leave no room for waits for GPUs, with its reservation). A
// parent's effective use is the sum over its children of the larger of
// their effective use and the part of their guarantee they do not lend;
// so whatever a queue uses above its guarantee is borrowed from the
// unused, lendable guarantee of others or from what its parent keeps for
// no child. A job that may not be preempted (Job.Preemption never) runs
// only within its queue's guarantee, when any queue has one: what is
// borrowed can always be taken back. Among queues that want more than
// their guarantees, what is above (less the guarantees others keep
// idle from lending) is shared by weight (water filling of the GPUs in
// service, on nodes that are up and those jobs still hold on drained
// nodes, over each queue's use plus its waiting jobs' GPUs, capped by its
// limits and its pool's GPUs in service, siblings on overlapping pools
// together by their union's): a job that would take its queue beyond its share waits while
// a sibling waits below its own, one of whose waiting jobs could use GPUs
// as they free up (it fits the nodes in service once every active job
// has ended; a sibling whose jobs cannot, such as a gang required in one
// leaf while a node of every leaf is drained, holds nothing back, or the
// GPUs would stand idle). Such jobs still count in their queue's demand,
// so that a sibling with one job that could run and one that could not
// is given a share as if both could. A job without quota waits with
// WaitQuota; its reason names the queue and the limit ("queue research:
// 1600 of 1600 GPUs (1200 guaranteed, borrowing limit 400), borrowing
// limit reached"; with room left below the limit, the job's GPUs against
// it: "queue bob: 16 of 24 GPUs in use, 8 left below its maximum; the job
// would take 16"), and it gives up its reservation or hold.
//
// Within a queue, jobs start best effort (Kueue's BestEffortFIFO): a job
// its quota holds back does not keep smaller jobs of its queue from the
// room the running jobs free, so one that needs more than any one of them
// frees can wait for as long as smaller ones keep coming. A queue with
// QueueSpec.StrictOrder (Kueue's StrictFIFO) starts its jobs in rank
// order instead while one of them waits for quota: no job ranked below it
// in the queue starts (one holding a reservation or a claim aside), and
// each is told so (WaitQuota, Blocker the job ahead; WaitPriority outside
// a MaxJobsTested window).
//
// Every start is checked again on the GPUs actually placed (whole nodes
// are counted until then at the GPUs of the largest node the job may use:
// its queue's pool, its own node sets; gang.Member.WholeNodeGPUs): a job
// whose queue does not take them waits for quota, and a running job is
// charged the GPUs it holds (JobStatus.GPUs says so). Whole nodes of
// unequal sizes are refused at Submit, and held back by the quota gate,
// only when their queue's limits refuse them even on the smallest nodes
// they may use, each pod on its own node; when the quota refuses the
// nodes placed (on free GPUs, or on the pods growing jobs lend), their
// whole-node pods are placed again on smaller nodes
// (below the largest they took, then below that), so that a job of two
// whole nodes in a queue of 8 GPUs starts on two 4-GPU nodes of a
// cluster of 4- and 8-GPU nodes. Placed above those fewest GPUs, they
// are held to the weighted share too (the gate read it there): past it,
// smaller nodes are tried, and the job otherwise waits for its share. A
// reservation is planned so too: when
// the quota refuses the placement found at the earliest start (or, for a
// job without a reservation, the larger nodes free now while the smaller
// ones are taken), the
// smaller nodes' earliest start is reserved, and the job keeps that
// reservation, not starting early, while larger nodes its quota refuses
// free up before it. A hold (hold mode) is searched and targeted on the
// smallest nodes when its queue's limits refuse the largest. An elastic gang (gang.Member.Min)
// is held to these limits at the size it starts at, as in Kueue's
// partial admission: when its queue's quota or weighted share does not
// take it at full size, it starts at the largest size they take (its
// elastic members cut, the last first, a step at a time), never below its
// minimum. Submit refuses it only when its minimum could never fit.
// Growth then stays within the quota too.
//
// Reservations keep their quota room, as they keep their GPUs: a job that
// would start now (or a gang that would grow), while other jobs hold
// reservations, is checked with the GPUs of every reservation whose window
// overlaps its run (from its start to its limit's end; without a limit, to
// the end of time) counted as in use, and waits for quota when they would
// not all fit ("counting the 16 GPUs reserved for job R, which plans to run
// while this job would: queue q: 16 of 16 GPUs, maximum reached"). Other
// queues' reservations count only when the job would borrow (its own
// queue's reservations counted): a job within its queue's guarantee is not
// held back for another queue's reservations, nor for a parent's or the
// cluster's limit that others' borrowing fills (what a queue is guaranteed
// is its own, and reclaim gets it in). A reservation for a job that may
// not be preempted, which runs only within its queue's guarantee, keeps
// that room from the others of its queue: one that would take the queue
// past its guarantee beside it waits ("...: queue q: 16 of 16 guaranteed
// GPUs in use, and the reserved job cannot be preempted: ..."). The
// counts in use are those of
// now: a job that will have ended by a reservation's start still counts
// against it. A reservation made, moved earlier or turned from a hold is
// checked at its planned start on the counts of then (jobs whose limit
// ends by it taken out, claims whose job started when due would end by
// it too, the overlapping reservations of others counted
// in; an elastic gang at its minimum). A reserved job's own planned start,
// looked at ahead of time (the gate, a late start), counts the
// reservations of others that start before it (they run by then; an
// elastic gang's at its minimum); a job refused a reservation so
// waits for quota without one, keeping for the cycle the slot it would
// have taken. A reserved job whose queue's limits have no room for it now
// but will at its planned start keeps its reservation and does not start
// early, whatever its weighted share now (read when it is due); one
// within its limits now but over its weighted share waits for quota and
// gives its reservation up, as any job over its share waits. A held job
// refused a reservation holds on and keeps the slot. A reservation can
// still be given up for quota (Move with CauseQuota) when a job runs past
// its limit, for a weighted share (shares move with every queue's
// demand), when a lending limit moves with other queues' use, when a
// queue uses the guarantee it would have borrowed (the reason says that
// the other queues under the parent where the check binds use their
// guarantees, which the job would borrow), when the cluster's pool
// (what the top queues lend one another, not promised) has no room, or
// when a reclaim (by a job of a higher class) or a preemption takes the
// room. A reservation not yet due
// that its queue's limits leave room for neither now nor at its planned
// start is given up with a reason that says both ("...; it gives up its
// reservation: at its planned start, ..."). Late starts: a reservation
// whose planned start a job that started late still overlaps (it would
// have ended by then), under the queue where its quota has no room there,
// moves to that job's end, blamed on it (CauseLateStart), also when the
// job started late later in the same cycle (the reservation then waits
// for the next cycle to move it); a reservation a late start pushes later
// for its GPUs is not checked again at its new start. A due reservation
// whose planned GPUs are free but whose queue's quota has no room for it
// holds them on from the cycle's time, as a due one whose job has not
// started does; a reservation after it on shared GPUs that moves behind
// it is blamed on that job with CauseQuotaAhead, not on a late start,
// and, when that job then gives its reservation up for quota in the same
// cycle, is moved earlier again by a later cycle when it can. A due
// reservation whose placement its queue's quota takes, but not beside
// the reservations it would run with (the room kept for one of its
// queue due before it, for a job that cannot be preempted), is kept and
// waits (WaitReserved), its reason saying why its quota does not take it
// now: the queue, its use and the limit, and the reservation counted
// (Waiting.Detail), not a planned start already past. Under
// quotas, a due reservation whose queue's quota had no room
// for it until a reclaim or preemption in the cycle freed some still
// starts on its planned GPUs when they are free, and an elastic gang its
// quota cuts starts on its planned nodes; a due elastic gang (whose
// reservation holds GPUs for its full size, but whose quota room was
// checked at its minimum) starts above its minimum only with room for the
// reservations of others it would run beside, at the largest size from
// its reservation's down that has it (the checks are not monotone in the
// GPUs: its full size passing says nothing of a smaller one). One whose queue's
// guarantee must be reclaimed first waits for its victims, as any job its
// guarantee covers, on the GPUs the victim search finds; its planned GPUs
// are open to that search though others are reserved on them from its
// planned end (the victims' grace makes it run past it): those move after
// its claim, blamed on its late start.
//
// The walk of a cycle tests first, in priority order, the jobs their
// queues' guarantees cover (going down the queue, a queue's use plus its
// covered jobs before stays within its guarantee; an elastic gang is
// covered at its minimum when its full size is not, and whole nodes of
// unequal sizes on the smallest nodes they may use when neither is),
// then the others: a
// job that borrows never takes, within a cycle, GPUs that another
// queue's guarantee covers (a job started in the cycle could not be
// reclaimed in it).
//
// Reclaim: a waiting job that its queue's guarantee covers (the queue's
// use plus the job's GPUs is within it; an elastic gang whose minimum it
// covers reclaims for its minimum, and starts cut on the GPUs claimed;
// whole nodes of unequal sizes whose pods on the smallest nodes they may
// use it covers reclaim for those, placed there, the search run again
// without one of the largest nodes taken while it places them on more)
// but that cannot start, for want of free GPUs or because others
// borrowed the quota, looks for victims at once, in the cycle, whatever
// its class and whether preemption is on (unless its run would overlap
// reservations of its queue, for jobs of its class or a higher one, that
// its queue's maximum or borrowing limit leaves no room for beside it,
// each read at its planned start as its own check reads it, the jobs
// ended by then taken out: it then waits for quota, as a start would,
// and does not jump them):
// running gangs of queues that borrow from its side of the tree (the
// queue just below the two queues' closest common parent is above its
// guarantee). The victim search of package gang/preempt picks whole
// gangs whose GPUs let the job in with its topology constraints, by
// least work lost, which puts the most recently started first; then,
// while the quota still has no room, the borrowers' gangs most recently
// started first are added, each that brings the quota closer to room
// (with several victims when one alone is not enough), and those that
// later ones made unneeded are spared. The victims are preempted as in preemption
// (Plan.Preemptions, with PreemptionConfig.Grace; exempt times do not apply),
// the job's placement is claimed for it, and it starts at the first cycle
// after they are released: within one cycle plus the grace when the host
// releases them in time (a claim on pods growing jobs lend it, whose
// lenders' queues then count less, may need no victim: it starts at the
// next cycle, which NextEvent asks for at once). A search that finds no set says why in the
// job's reason ("reclaim did not help: no borrowed GPUs in any domain
// that could hold it: ...", Waiting.PreemptReclaim). A search that would repeat one that failed in
// the cycle is skipped: after one for a job of g GPUs and time limit l
// whose victims left no quota room, the queue's jobs of g GPUs or more
// with a limit of at least l (none counts as the longest); after one that
// found no placement, the jobs of the same shape with such a limit, which
// are given its reason. A job with a reservation, hold or claim of its own
// still searches, and so does a job that growing jobs lend other pods
// than the failed one (lenders lend by class: see below), and every job
// once the cycle has changed a
// reservation, hold, claim or queue count since the failure. After 8
// failures of a queue in a cycle its searches stop until the next. With
// quotas, preemption by class takes only gangs of the job's own queue or
// of queues that borrow from its side, and never leaves another queue
// below its guarantee.
//
// Reclaim keeps off the GPUs of reservations, holds and claims of other
// jobs, as preemption does: with reservations on GPUs that borrowers use
// it may find no set until they start. Like a preemptor's, its search
// counts free the pods growing jobs lend the job (those of a lower class
// with preemption on, or any when it holds a reservation: see Node
// failures and elastic gangs), and the lenders' queues count without the
// lent pods the placement takes: it stops only the gangs it needs
// besides them, and its claim takes them from the lenders (PodsRemoved,
// For the job), which keep their minimum; when that leaves its queue's
// quota no room, it searches with them counted taken. Over-quota shares are not
// reclaimed (a queue above its guarantee but below its weighted share
// waits for others' jobs to end).
//
// # Node failures and elastic gangs
//
// A node failure releases every active job on the node whole, and
// requeues it (Requeue, the default) or fails it (Fail), unless its
// Job.OnNodeFailure lets it keep running:
//
//   - Replace re-places each of its pods on the node, alone
//     (gang.Ledger.ReplacePod): same member and rank, same shape, inside
//     every domain its gang requires (the member's Required level, a
//     required co-location, its innermost segments), next to its
//     neighbours first, and off every node with a GPU promised to a hold,
//     a claim or a reservation whose window overlaps the job's run (every
//     reservation, for a job without a limit), so that no promise moves
//     for it. The host starts the new pods and restarts the job from its
//     checkpoint; its start and time limit are unchanged. When some pod
//     finds no node, the job is requeued whole.
//   - Shrink gives up the pods on the node of every elastic member
//     (gang.Member.Min) that stays at or above its minimum
//     (gang.Ledger.ReleasePod; the later ranks move down), and re-places
//     the pods of the other members as Replace does; failing both, the
//     job is requeued whole.
//
// NodeEvent says which happened; the next plan's PodChanges lists the
// pods (PodsReplaced, PodsRemoved, with the node).
//
// A job with Job.Grow set grows while it runs: at the end of a cycle in
// which every waiting job holds a reservation and there is no hold and no
// claim, each elastic member below the pods it asks for takes free nodes
// next to its last pod (its leaf first, then the domain above;
// gang.Ledger.GrowMember), off every node promised to a reservation
// overlapping its run, so growth never delays a reservation
// (PodsAdded, at the next ranks). A job that cannot start at full size
// starts at the largest size that fits, at least its minimum, as
// admission does; growth then brings it up. A job whose lent pods a
// preemptor's or a reclaim's claim took (below) grows back by as many, at the end of
// any cycle and by the same rules, once that claim is dropped without
// starting (its preemptor cancelled, a drain or failure under it): the
// claim took them for nothing. A snapshot keeps both facts (the claim's
// lenders, ClaimRecord.Lent; the pods owed, JobRecord.OwedPods), so a
// restored engine gives them back as the original would.
//
// The pods of such a job above its minimum are lent, not owned (from the
// cycle after its start). A waiting job that does not fit now and holds a
// reservation, or, with preemption on, is of a higher class than the
// lender, tries again with them counted free (the GPUs
// promised to reservations overlapping its run, holds and claims still
// kept off); when it fits, the growing jobs give up the lent pods its
// placement uses (PodsRemoved, PodChange.For names the job) and it starts
// now, before any preemption is considered: a job whose reservation a
// failure pushed back can so start on time, and a preemptor takes lent
// pods rather than stop a gang. A job reserved in a cycle was tested
// before it held the reservation: when it would start on pods lent to it
// only now, the cycle asks for the next at once (Engine.NextEvent), which
// starts it there. A preemptor that needs more than the
// lent pods counts them free in its victim search too, as a reclaim of
// its queue's guarantee does (a lender may still
// be a victim, for its other pods): it stops only the gangs it needs
// besides them, and when it claims, the lenders not stopped give up the
// lent pods its claim uses at once (PodsRemoved, For the preemptor,
// beside Plan.Preemptions); one that the lent pods alone would hold but
// its queue's quota refused there, or whose queue's quota does not take
// the claim with them (a lender's queue that keeps its guarantee idle
// frees no room by giving them back), searches with them counted taken.
// Lent pods are not counted in
// the availability profile: a reservation is never planned on them.
//
// # States
//
// Every event goes through one path that checks it against these state
// machines before it changes anything. A job:
//
//	event         from                                 to
//	Submit        (new ID)                             pending
//	Schedule      pending, reserved, held, requeued    starting, or a waiting state
//	Schedule      running (a preemption's victim)      preempting
//	Started       starting                             running
//	Finished      starting, running, preempting        finished
//	Failed        starting, running, preempting        failed, or requeued (with requeue; cancelled
//	                                                   if preempting with policy cancel)
//	NodeDown      starting, running, preempting, with  requeued or failed, or (unchanged) with
//	              a member on the node                 pods replaced or removed (OnNodeFailure)
//	Preempted     preempting                           requeued or cancelled (Job.Preemption)
//	Checkpointed  running, preempting                  (unchanged)
//	ReplacePod    starting, running                    (unchanged; one pod moved)
//	ReleasePod    starting, running                    (unchanged; one pod given up)
//	Cancel        any waiting or active state          cancelled
//	Update        pending, reserved, held, requeued    (unchanged, or pending: its reservation or
//	                                                   hold dropped; node sets changed)
//
// Pending, reserved, held and requeued are the waiting states; starting,
// running and preempting the active ones (they hold GPUs). Schedule
// moves a waiting job to starting (it is booked on GPUs; its time limit
// runs from the plan's time) or between the waiting states. Started moves
// starting to running (the limit then runs from the confirmation); a
// second Started is refused, so the limit never restarts. Finished ends an
// active job; Failed ends it or, with requeue, returns it to
// the queue as requeued, with its original submit time (a job being
// preempted of policy cancel is cancelled instead, as Preempted would
// end it); NodeDown does the
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
//     a queue that is not one without children, or one without quotas,
//     a time limit, factor or count out of range, a request for more nodes
//     or GPUs than the cluster has, a node set of the wrong length; a
//     Job.Submit time out of range is ErrBadTime as well),
//     ErrNeverFits (no domain can meet its constraints even on an empty
//     cluster, as the admitter proves (gang.Admission.Proven), or its
//     queue could never hold it), ErrDuplicateJob.
//   - Cancel, Started, Finished, Failed, Preempted, Checkpointed:
//     ErrUnknownJob, ErrTransition (Preempted of a job that is not
//     preempting, Checkpointed of one that is not running or preempting).
//   - Update: ErrUnknownJob, ErrTransition (a job that is not waiting),
//     ErrUpdateField (a field other than the node sets differs), and
//     Submit's ErrBadJob and ErrNeverFits for the new spec.
//   - ReplacePod, ReleasePod: ErrUnknownJob, ErrTransition (a job that is
//     not starting or running), gang.ErrUnknownPod, and for ReleasePod
//     gang.ErrBelowMin.
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
// earliest time at which the plan can change without a new event (at once
// when the last cycle left a reservation slot for the next, a
// reservation's start, a hold's expiry, the end of a patience or a hold
// cool-down, a running job's time limit, the end of an exempt time that
// keeps a job from preempting), so a host can sleep until then
// or until its next event instead of polling.
//
// The counts a waiting job's reason quotes describe the state the plan
// leaves, after every start, reservation, hold and claim of the cycle,
// not the state met when the walk tested the job: "needs 4 nodes with 8
// free GPUs; the cluster has 1" and "queue A: 35 of 48 GPUs in use" are
// true once the plan is applied, and a second Schedule at the same time
// with nothing changed tells the same words, so a host writing reasons
// into pod status writes nothing new. The counts are read again after
// the walk from the counters of the job's scratch state and of the
// queues (placement.Reason.Recount), not by placing the job again. So
// are those of the placement reason (Waiting.Reason) that a job which
// would fit now but for GPUs reserved, held or claimed for another
// carries from its test: its message does not quote them, but
// Config.OnlyChangedWaits compares them. Why a victim search found no
// set ("cannot be preempted (2 gangs ...)", the free GPUs with every
// lower-class gang stopped) is the search's on that state too, the
// cycle's starts counted among the running gangs as once confirmed: the
// search runs again after the walk (one per shape) when the cycle
// started a job of a lower class or the world changed after the job's
// test; where it then finds victims, the job keeps its test's reason and
// NextEvent asks for a cycle at once. Two kinds keep the counts of
// the test: a gang member's reason given after another member was
// placed or by the packing search, and quota reasons
// other than a limit or a weighted share met at the job's full size (an
// elastic gang gated at its minimum, reservations counted ahead, a
// reservation given up in the cycle, which the reason names). The next
// cycle tests those jobs again.
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
//   - When what a waiting job's pods may use changes (node labels, taints
//     or cordons that its node sets stand for), call Update with the new
//     sets rather than Cancel and Submit: the job keeps its place, and
//     its reservation or hold where the new sets allow it (a reservation
//     they do not allow is dropped and shows in the next plan's Moves
//     with CauseUpdated; a hold moves or ends, HoldUpdated), and the next
//     cycle, which NextEvent asks for at once, plans it on the new sets.
//     Only the node sets may change; a job that is not waiting keeps
//     running where it was placed (a cordon is a Drain).
//   - Report node failures (NodeDown returns the jobs it requeued or
//     failed, or kept running), repairs (NodeUp), drains (Drain) and their
//     end (Resume); run a cycle after a failure.
//   - Apply Plan.PodChanges: start the pods added or moved (a job whose
//     pods moved restarts from its checkpoint), stop the pods removed.
//     Allocation pods are in rank order (gang.Allocation.Pods). When one
//     pod cannot be bound, call ReplacePod (or, for an elastic member,
//     ReleasePod) instead of failing the job.
//   - With preemption on, or queues with guarantees: signal every victim
//     of Plan.Preemptions and report its release (Preempted); report
//     checkpoints (Checkpointed) to keep the work counted as lost honest.
//   - Call Schedule when something changed (a submit, a finish, a node)
//     and by NextEvent (with MaxJobsTested, NextEvent asks for cycles at
//     once after an event, or a time it named, until its windows have
//     tested every job that waited then); to let priorities that drift
//     with time (age, decaying usage) reshuffle reservations, also at a
//     fixed cadence.
//   - Save Snapshot (plain JSON-serialisable data) to survive a restart;
//     Restore checks everything in it before rebuilding. To change the
//     queues' limits or pools, rename or remove queues, or turn quotas
//     on or off, restore under the new config: what runs stays, and the
//     new queues bind every start after it; a waiting job whose queue is
//     gone waits, told to be submitted again (Restore says how).
//
// # Concurrency
//
// An Engine is not safe for concurrent use; the host's scheduling loop
// serialises calls. Plans, statuses and snapshots are plain data and may
// be handed to other goroutines.
package backfill
