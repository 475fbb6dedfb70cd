// Package gang admits multi-part jobs all at once or not at all, and keeps
// the books of what runs where.
//
// A gang (Spec) has an ID and members: roles such as a launcher and 150
// workers, or the components of a heterogeneous job. Each member carries a
// placement.Request and may start elastically with fewer pods (Min). A gang
// may ask to sit inside one domain of a level (Colocation), as a condition
// or a preference.
//
// Admission places every member on the free state and allocates only when
// all are placed; otherwise the state is left exactly as it was, and the
// Admission names the member that failed and the placement reason. A greedy
// pass places the members one by one, most constrained first, in up to
// four orders; when it fails after placing some members, an exact
// search for a packing follows (gangs of up to MaxSearchMembers members,
// every member shape, segments included, bounded by SearchWork; see
// there for what it covers). This makes
// the partial starts and split-cluster deadlocks of pod-by-pod schedulers
// impossible by construction: no GPU is ever held by a gang that is not
// running. The module's tests and examples compare it with such a scheduler.
//
// # Usage
//
//	l := gang.NewLedger(cluster, gang.Options{})
//	res, err := l.Admit(&gang.Spec{ID: "job-7", Members: []gang.Member{
//		{Name: "worker", Request: placement.NodesOf(16, 8)},
//	}})
//	switch {
//	case err != nil:        // the spec is malformed: fix it
//	case !res.Admitted:     // does not fit now: res says why
//	default:                // start it: l.Get("job-7") says where
//	}
//	...
//	l.Release("job-7")      // it finished: every GPU returns
//
// # Pods and ranks
//
// Every pod of an allocation has an identity: its member, its rank within
// the member, its node and its GPUs (Pod). Allocation.Pods iterates over
// them, members in order and each member's pods by rank, allocating
// nothing:
//
//	for p := range alloc.Pods() {
//		launch(p.Member, p.Rank, cluster.NodeName(p.Node), p.GPUs)
//	}
//
// A member's pods are its Assignment entries, one per node, and Admit
// puts them in rank order for collective communication: by node ID, which
// is topology order, so that ranks fill a node, then the next node of the
// same leaf (lowest-level domain), then the next leaf of the same switch
// above, and so on: neighbouring ranks share NVLink, then a leaf switch.
// When every GPU runs one process, Pod.FirstGPURank numbers the GPUs the
// same way (a 64-GPU job on 8-GPU nodes of one leaf has GPU ranks 0-7 on
// its first node, 8-15 on the next node of that leaf). The order is kept
// afterwards: a pod re-placed with ReplacePod keeps its rank on its new
// node, a pod released with ReleasePod takes its rank out (the ranks
// after it move down by one), pods added by GrowMember take the next
// ranks, and Restore keeps the snapshot's order.
//
// # Caller duties
//
//   - Admit, then start the pods where the Allocation says; call Release
//     when the job ends, fails or is cancelled.
//   - When one pod cannot run where the allocation says (its bind failed,
//     its node is failing), move that pod alone with ReplacePod, or, for an
//     elastic member above its minimum, give it up with ReleasePod; the
//     rest of the gang keeps running. A gang is still all-or-nothing at
//     its start: admission never places part of one. GrowMember adds pods
//     to an elastic member below its Request.Nodes, next to its last pod.
//   - Report node failures with NodeDown: it releases, whole, every gang
//     with a member on the node and returns their IDs to requeue or fail.
//     NodeUp returns the node to service; Drain stops new work on it.
//   - After a restart or a leader failover, rebuild the books from the
//     host scheduler's source of truth with Restore (a Snapshot is plain
//     JSON-serialisable data); a conflicting or incomplete report is an
//     error and nothing is applied.
//   - Change the free state only through the Ledger; reading, cloning and
//     copying it (for what-if work) is fine.
//   - Do not modify a Spec's member list after admitting it: the ledger
//     keeps a reference for its checks and snapshots.
//
// # Concurrency
//
// Ledger and Admitter are not safe for concurrent use: the host
// scheduler serialises calls (a scheduling loop does). For parallel
// what-if work give each goroutine its own Admitter and a cloned State.
//
// # Allocation
//
// Admission and release allocate nothing in the steady state: a Ledger
// recycles the buffers of released gangs, and an Admitter reuses the
// Allocation passed to it.
package gang
