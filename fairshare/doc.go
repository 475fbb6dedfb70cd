// Package fairshare decides whose job goes first when GPUs are scarce: it
// keeps an account tree with shares and decayed usage, turns them into
// fair-share factors the way Slurm's priority/multifactor plugin does
// (classic or Fair Tree), and ranks pending jobs by a weighted sum of age,
// fair share, job size, QOS and partition factors, with the breakdown of
// every job's priority.
//
// # Model
//
// A Tree has an implicit root (RootName) and accounts below it to any
// depth, for example organisation, team, user. Each account has raw
// shares, which count only against its siblings' shares. Accounts without
// sub-accounts are leaves; jobs name a leaf. A Tree is built from code
// (NewTree, AddAccount) or from a TreeSpec read from text (ParseText) or JSON
// (ParseJSON) by BuildTree.
//
// Usage is charged in GPU-seconds at instants the caller gives. It decays
// with Config.HalfLife, exactly: usage(t) = usage(t0) * 2^-((t-t0)/halflife).
// Each account stores its own usage as a value and the instant of its last
// charge; reading at t computes the decay without changing anything, so
// results never depend on how often they are read, and Decay (which folds
// the decay into storage) changes nothing but rounding.
//
// Two fair-share algorithms are available (Config.Algorithm):
//
//   - Classic: F = 2^(-UE/S/d), with S the account's fraction of the
//     machine (the product of shares over siblings' shares down the tree),
//     U its usage over the machine total, UE its effective usage
//     (UE = U + (UE_parent - U) * shares/siblings' shares, UE = U just
//     below the root) and d the dampening factor. Charges to the root
//     itself count in the machine total only.
//   - FairTree (the default): each account's level fairshare is
//     LF = (shares/siblings' shares) / (usage/parent's usage); the tree is
//     walked depth first, siblings by LF, and the leaves get ranks N..1,
//     factor rank/N. Ties (LFs equal up to rounding: in the sorted
//     siblings, each within a relative 1e-9 of the one before it, so that
//     the order charges arrive in or Decay steps cannot split them): tied
//     leaves share a rank; tied accounts are
//     merged; leaves tied with accounts share their rank with the accounts'
//     best users (as Slurm documents it; Slurm's code does not merge).
//     Zero shares give LF 0; no usage gives LF +Inf.
//
// A job's priority is round(sum of weight x factor) as a uint64, each factor
// in [0, 1]; ties go to the earlier submit time, then the smaller ID.
// With the starvation guard (Config.StarvationBound) a job that has waited
// longer than the bound gets Config.StarvationBoost added, by default
// enough to put it ahead of every job that is not starving (priority
// aging).
//
// # Usage
//
//	spec, err := fairshare.ParseText(`
//		physics shares=40
//		alice   parent=physics shares=1
//		bio     shares=60
//		bob     parent=bio shares=1
//	`)
//	tree, err := fairshare.BuildTree(spec, fairshare.DefaultConfig())
//
//	// Each scheduling cycle, at now:
//	tree.Charge("alice", gpus*fairshare.DecayedSeconds(elapsed, tree.Config().HalfLife), now)
//	snap, err = tree.View(now, snap)              // reuses snap
//	ranked, err = snap.Prioritize(pending, ranked[:0]) // reuses ranked
//	for _, r := range ranked {
//		fmt.Println(r) // "j7 (alice) 6084 = age 500 (0.500) + fairshare ..."
//	}
//
// A scheduler that ranks a long queue every cycle prepares each job once,
// when it joins the queue (Tree.Prepare checks it and resolves its
// account), and ranks the prepared jobs with View.Rank: the same order and
// priorities as Prioritize, without the breakdown, at a fraction of the
// cost (BenchmarkRank).
//
// # Caller duties
//
//   - Pass time in: every method that needs the time takes it. Charge usage
//     as it accrues: GPUs x DecayedSeconds(time since the last charge,
//     HalfLife) for every running job, at each cycle or at its end. That
//     value counts the decay within the interval, so the usage does not
//     depend on how often a job is charged; GPUs x elapsed seconds counts
//     the whole interval at full weight and bills more the less often it
//     is charged. A charge earlier than an account's last update is
//     accepted and decayed from its own instant.
//   - Never read before the latest update: Usage, Factor, View,
//     Prioritize and Decay at an instant earlier than the latest charge or
//     decay fail with ErrTimeTravel.
//   - Give each job a leaf account, a submit time, and QOS and partition
//     factors already scaled to [0, 1]. Check jobs at submission with
//     Tree.CheckJob (or Tree.Prepare): Prioritize and Rank stop at the
//     first bad job. A prepared job stays valid while its account stays a
//     leaf of the tree that prepared it.
//   - Persist usage yourself if it must survive a restart: save the tree's
//     TreeSpec and every account's OwnUsage at one instant t; charging those
//     amounts at t into a tree built from the TreeSpec restores it.
//
// # Concurrency
//
// The package starts no goroutines, does no I/O, never reads the clock and
// uses no randomness. A Tree is not safe for concurrent mutation:
// AddAccount, SetShares, Charge, Decay and SetConfig must not run
// concurrently with any other Tree method. The other Tree methods only
// read and may run concurrently with each other. A View is immutable
// once returned and safe for any number of goroutines; it shares the tree's
// structure copy-on-write, so later changes to the Tree never show in it.
// Reusing a View (passing it to Tree.View) overwrites it.
//
// # Cost
//
// A view is O(accounts) plus, under Fair Tree, a sort of each sibling
// group; ranking is O(jobs log jobs), and about O(jobs) when the jobs
// come in nearly their ranked order (a scheduler passing its queue in
// the previous cycle's ranking, new jobs last: priorities move little
// between cycles). With a reused View and output slice neither allocates
// (BenchmarkPrioritize: 10,000 jobs over 1,000 users recomputed after a
// charge, in submit order and in the previous ranking).
package fairshare
