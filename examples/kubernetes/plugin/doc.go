// Package plugin runs Phalanx as kube-scheduler framework plugins: pod
// groups become Phalanx gangs, the backfill engine decides which gang starts
// and on which nodes, and the framework binds each pod to the node of its
// rank. Register it with app.WithPlugin(plugin.Name, plugin.New) and enable
// it in a profile (deploy/scheduler-config.yaml).
//
// # Gangs from pods
//
// Pods of this profile with the scheduler-plugins coscheduling label
// scheduling.x-k8s.io/pod-group form one group per namespace and value; its
// minimum comes from the PodGroup object (scheduling.x-k8s.io/v1alpha1,
// spec.minMember, read without depending on scheduler-plugins) or, when the
// CRD is not installed, from the pod annotation scheduling.x-k8s.io/min-member.
// A GPU pod without the label is a group of one. Pod labels can change:
// a pod that is not bound and not in its group's gang moves to the group
// its labels now name; one that is bound, or in its group's gang (waiting
// or admitted), stays in the group it had. A pending pod is an
// unbound one that the scheduler may try: a pod with a scheduling gate, or
// being deleted, is not pending until the gate is lifted (it joins no gang
// and does not count towards minMember). Once the group has minMember
// pending pods, they are submitted as one gang (account: the
// namespace; submit time: the earliest pod's creation, kept across
// resubmissions), one member per pod shape, each pod one node with its
// nvidia.com/gpu count. A gang waiting in the engine when minMember rises
// above its pod count is withdrawn until enough pods are pending; one that
// loses a pod while it waits is submitted again without it (its shapes'
// measured allowed node sets kept: see PostFilter), or withdrawn until
// enough pods are pending; one that loses a pod once admitted, before it
// runs whole (the pod deleted, or being deleted or gated: the scheduler
// will not try it), is torn down at once. A group
// runs one gang at a time: pods created after its gang was submitted (a
// group with more pods than minMember, created in batches) wait, with that
// reason, until every pod of that gang is gone. After a restart, a group
// found running is adopted as a running gang (its pods that were not
// running then wait for it as late pods do, told that it was found
// running and adopted), and a group found half-bound, or running with a
// pod on a deleted node, is deleted (see Restarts and leader election). Topology
// comes from node labels through a topology/kube preset (Args.Topology).
// Pods of a group without GPUs are not supported: such a pod (an MPI
// launcher labelled with its workers' group) is a member of its gang that
// asks for no GPU count, which the engine reads as a whole GPU node held
// exclusively (placement.Request with GPUsPerNode 0), and a gang with
// such a pod found running after a restart is not adopted (a Warning
// says its pods ask for no GPUs). Leave the label off such pods.
//
// # Restarts and leader election
//
// The plugin keeps its books in memory: a new scheduler process (a restart,
// or a standby that takes over) starts with no job in its engine. In every
// engine cycle, from its first, it adopts each group with no job whose
// bound pods (not being deleted, by the plugin or anyone: a terminating
// pod is not adopted, its GPUs stay used until it is gone) are at least
// minMember: a gang that the process before it started. The gang enters the engine as
// a running job on its pods' nodes (one member per pod shape, the pods in
// rank order, GPU indices the engine picks among those no other gang holds:
// Kubernetes does not say which GPUs a pod got), with the namespace as its
// account, the earliest pod's creation as its submit time and the earliest
// status.startTime of its pods as its start (the adoption when no pod reports
// one; kept between the submit and the adoption), so that what the engine
// reads of the run so far (when the job is estimated to end, the run time
// it learns for the namespace when the job ends) is the gang's; its
// usage is charged from the adoption. From then on it is booked as a gang the plugin started: it
// counts towards its namespace's fair share, the group runs no other gang
// while it runs (pods created later wait, with that reason, until every pod
// of it is gone), it finishes when all its pods are gone, and a node
// failure under it ends it and deletes its pods. A standby adopts too, as
// the leader binds, so it holds the leader's gangs when it takes over; a
// node failure under such a gang ends its job on the standby, which
// deletes no pod (the leader does, if it lives): the group is then without
// a job, and examined in every cycle while the replica stands by, as
// after a restart (adopted again once its pods run whole on live nodes,
// else left as used GPUs, and never deleted as a partial gang: it was
// seen running whole). A gang with a pod on a node that is in the cluster
// model but down (not Ready) is adopted like
// any other once the replica schedules, and the node's failure is then
// applied to it as to a gang that ran when the node failed: the engine
// fails the job and its pods are deleted. A standby, whose teardown would
// delete none, leaves such a gang as it is (its pods used GPUs) until it
// schedules. A gang with a pod on a node that is outside the model
// because it serves no GPUs (deleted, or with no GPU resource at all,
// before the process started: a node in the model that does so is down,
// as above) cannot be adopted, nor ended by the engine: once
// the replica has scheduled for a minute (a node the previous leader
// bound onto just before the takeover may reach the node informer after
// its pods; if it appears meanwhile, the gang is adopted), all its bound
// pods are deleted, as a partial gang's are (below), with a Warning event (reason PhalanxNotAdopted) on
// its first pod naming the node (those still bound of them if the gang
// lost pods meanwhile, such as the one on the deleted node, which PodGC
// force-deletes after some 40 s), and the GPUs they hold on live nodes
// return to the pool once they are gone. A standby leaves such a gang as
// it is (its pods used GPUs) until it schedules. One case is not covered:
// a pod on a node down for longer than its toleration (about five
// minutes) is terminating, so its gang, with fewer than minMember pods
// that are not, is not offered for adoption, and its other pods stay
// used GPUs until they end or an operator deletes them. A
// gang the engine cannot take (a pod on a node left out of the cluster
// model for a defect of its own, such as a missing topology label: see
// Nodes; two pods of one shape on one node, more GPUs on a node
// than other gangs leave free) is not adopted: its pods stay used GPUs,
// like pods Phalanx did not place; the plugin logs why and, once it
// schedules, records a Warning event (reason PhalanxNotAdopted) on the
// gang's first pod, once per reason. It acts on the cluster
// only once it schedules, which it learns from its first PreFilter call:
// under leader election a standby runs its informers and this plugin's
// loop (New starts it) but no scheduling cycle, so it never calls
// PreFilter, deletes no pod and writes no pod condition. Until then it
// activates one pending pod of its profile, which PreEnqueue lets through,
// so that a leader with nothing else to schedule calls PreFilter too (the
// pod is refused there like any pod without a slot); each engine cycle it
// moves on to the next pending pod, so that a pod that another plugin
// rejects before Phalanx's PreFilter does not hold it back. Nothing else
// tells the plugin that its replica leads (kube-scheduler builds the
// plugins before the election and gives them no sign of its outcome), so
// a leader with no pod of its profile that reaches Phalanx's PreFilter
// (none pending, or every pending one held back by another plugin's
// PreEnqueue or rejected by its PreFilter) goes on as a standby, for as
// long as that lasts: a node failure under a running gang ends its job
// but deletes none of its pods (those on live nodes run on as a part of
// the gang, their GPUs counted as used by pods Phalanx did not place,
// until a pod of the profile is pending: typically the replacement a
// Job creates once the pod on the failed node is evicted, some five
// minutes later; then the replica schedules and the group is handled as
// after a restart); a gang found with a pod on a node outside the model
// is not deleted, nor is a gang found on a down node adopted and ended,
// nor a partial gang deleted; and no PodScheduled condition and no
// event is written (neither PhalanxNotAdopted nor PhalanxNodeLeftOut: the
// node warnings a standby held back are recorded once it schedules).
//
// Once it schedules (the first engine cycle after its first PreFilter), it
// deletes the partial gangs that no scheduler is binding any more. A group
// is half-bound when it has no job, fewer bound pods (terminating ones not
// counted, nor deleted) than minMember and a pending pod (pending as above: bound pods beside gated or terminating pods
// only are not half-bound): a gang that was binding when the scheduler that
// placed it stopped, or when the leader died (a standby that started before
// the failure saw the leader begin to bind it). Each group half-bound then,
// or that becomes half-bound within partialSettle (60 s) of it, has its
// bound pods deleted, as after a teardown, once they have stayed the same
// for partialSettle: binds the previous leader had sent may still land after
// the takeover (within the API server's request timeout), and each one that
// lands restarts the wait; a gang they complete is adopted instead. The
// plugin cannot complete such a gang (it submits pending pods only); the
// pending pods and the ones recreated for the deleted ones form the next
// gang. Meanwhile the group's pending pods form no gang, even when they
// are at least minMember (a group with more pods than its minimum): they
// wait, with that reason, so that the bound pods are not left running
// beside a new gang, and a late bind of the previous leader does not put
// a pod of the new gang on a node the engine did not give it. Such a
// late bind can still land on a gang the replica admitted from pods
// pending at the takeover (none of the old leader's binds had landed):
// a pod of an admitted gang seen bound on a node other than the one the
// engine gave it tears the gang down, as a gang that cannot run whole. A group with bound pods and no pending pod when the replica begins
// to schedule is a running gang that lost pods (its replacements not yet
// created, or gated), not a gang being bound, whose unbound pods are
// pending: it is never deleted by this rule while it has bound pods, even
// when a replacement created within partialSettle makes it half-bound;
// nor is a group the replica saw running whole (at least minMember bound:
// adopted, or not adoptable): an Indexed Job that creates its next index
// as one of its pods completes keeps running, and its pending pods wait
// until they are minMember, or, when the group was adopted as a running
// gang, until every pod of that gang is gone. A running gang that lost a
// pod whose replacement is already pending when the replica begins to
// schedule cannot be told from a gang being bound, and is deleted too,
// unless the replica saw it running whole. A group first half-bound later
// than partialSettle after the replica began to schedule is never deleted
// by this rule (only this replica binds then, and its gangs have jobs). A
// standby deletes nothing: the leader may be binding. A group whose bound
// pods are fewer than its minMember and that has no pending pod is neither
// deleted nor adopted: its pods stay used GPUs.
// deploy/scheduler-config.yaml sets delayCacheUntilActive, so that a
// standby does not even start informers.
//
// On failover a host can expect the new leader to schedule as soon as it
// runs, without waiting for a pod to come back to PreFilter on its own. A
// standby's scheduling queue is filled by its informers but not served:
// the pods it let through PreEnqueue (its leader probe, its scouts, the
// pods of gangs its engine admitted) wait in its active queue and are
// tried as soon as it leads, and the first of them to reach PreFilter
// makes it act. Every other pod of the profile is held by PreEnqueue, or
// refused at PreFilter once the replica leads, and no cluster event moves
// it (its queueing hints skip them all): the plugin itself activates it,
// in the engine cycle that admits its gang or sends it as a scout, so
// no gang waits on the framework's backoff, nor on its flush of
// unschedulable pods (five minutes), for the takeover. With
// delayCacheUntilActive, the informers start once the replica leads; its
// loop looks every second, and its first engine cycle, once they have
// synced, activates the probe and the scouts.
//
// # Extension points
//
//   - PreEnqueue holds a group's pods until the engine admits the gang (one
//     pod per shape goes through earlier as a scout, see below).
//   - PreFilter restricts an admitted pod to the node of its rank; Filter
//     accepts no other node.
//   - PostFilter: a scout's cycle measures its shape: the profile's Filter
//     plugins are run on every GPU node with the node's GPU count lifted (GPUs
//     are the engine's business), and the nodes that pass become the member's
//     allowed node set (placement.Request.Allowed). It is measured once per
//     shape (a scout that the scheduler will not try any more, being
//     deleted or gated, is given up at once and another pod of its shape
//     sent; one whose scheduling cycle has not begun within 10 s is given
//     up too (a measurement from a cycle that began within them counts,
//     however late it lands, unless one from a cycle that began later
//     came first, or a node changed after it began: see below), and
//     is from then on an ordinary pod of its group, held until its gang
//     is admitted, and, if the shape still needs measuring, the next pod
//     of its shape (in pod order, wrapping round) is sent: kube-scheduler gives a plugin no sign that another plugin's
//     PreEnqueue holds a pod back, or that a pod waits in its queue, so
//     such a scout is only seen by its timeout), and
//     again for a gang still waiting after Args.AllowedTTLSeconds
//     or, at once, when a node joins (or is back under a deleted node's
//     name) or its labels, taints, cordon or allocatable resources change:
//     then only the shapes that node could serve (it is in the cluster
//     model and has at least the shape's GPUs per pod; a shape of no GPUs
//     takes any node) are measured again. Until that measurement counts,
//     a gang waiting in the engine has the changed node taken out of the
//     allowed node sets of those shapes at once, so that GPUs freed
//     elsewhere meanwhile do not let the engine admit it there, where the
//     Filter plugins may reject it now: its sets only shrink until then,
//     and the measurement puts the node back if it still passes. A
//     measurement with another result (a node rejected now, or one
//     accepted again) changes the sets too. The plugin changes a waiting
//     gang's sets in place (Engine.Update): the gang keeps its job, its
//     submit time and what the engine planned for it where the new sets
//     allow it (a hold whose target they leave out moves to another,
//     keeping its start and the GPU-seconds spent, and lets go of the
//     GPUs it held off its new target), so a node that changes every few
//     seconds does not keep a held gang from collecting its GPUs, and its
//     pods show the engine's reason. A gang that the shrunk sets leave no
//     room for, or whose job the engine no longer has waiting, is
//     withdrawn and submitted again instead (its submit time kept): the
//     former is out of the engine until the measurement lands, its pods
//     showing that it is being measured. An admitted gang keeps its
//     nodes. A scout whose scheduling cycle began before the plugin's
//     node informer reported such a change measured on a snapshot
//     without it: its measurement does not count,
//     however late it lands, and the shape is measured again, so no gang
//     is submitted with a node its Filter plugins reject since the change.
//     The scheduler's snapshot may lag the plugin's node informer (each
//     hears of a node change on its own, in no set order): a measurement
//     whose snapshot lacked a GPU node the plugin knows, or held one with
//     other labels, taints, cordon or allocatable resources than the
//     plugin's copy, is taken again at once (once: while the same nodes
//     are missing or differ, the second measurement stands until the
//     next one; a node that changes again makes it stale anew); a
//     waiting gang meanwhile loses the nodes such a measurement rejects,
//     and gains none it accepts.
//     A gang that can never fit the cluster (a member with more pods than
//     it has nodes included) waits with that reason and is tried again
//     after the TTL, or at once on such a node change that serves one of
//     its shapes.
//     An admitted pod rejected on its own node tears the gang down so that it
//     is placed again.
//   - Reserve and Permit hold every pod of the gang until all are reserved,
//     then let them through to binding together. A pod of a group without a
//     slot (its gang was torn down after the pod's PreFilter, or the pod was
//     deleted) is refused, never let through alone. The UIDs of deleted pods
//     are remembered (the last 16,384), so a hook called for a deleted pod
//     never brings it back into its group.
//   - Unreserve: before Permit let the pod through, the gang did not
//     assemble: it is torn down. After, the pod's bind failed: the first
//     failure retries on the same node (the gang keeps its GPUs); a later one
//     has the engine move that one pod, keeping its member and rank
//     (backfill.Engine.ReplacePod; the pod retries on its node when no other
//     fits); at Args.MaxBindAttempts the gang is torn down and its bound pods
//     are deleted, so that no partial gang is left running. A pod whose bind
//     was in flight at the teardown is deleted too if that bind succeeds
//     (PostBind, or the informer, sees it bound), and is pending again if it
//     fails; it joins no new gang until then.
//   - PostBind of the gang's last pod reports Started, unless the gang is
//     already to be torn down (a pod of it began to be deleted, or was
//     gated, while its bind was in flight): it never ran whole.
//   - Pod deletion or termination of every pod of a running gang reports
//     Finished; a node that is not Ready (or deleted), or, once in the
//     engine's cluster, has no GPUs at all any more (capacity and
//     allocatable 0 or missing), is NodeDown: the gangs on it end and their
//     pods are deleted (a gang with a dead rank is dead). A node that
//     serves no GPUs while its capacity has some (none allocatable: its
//     device plugin is down or restarting, as in a DaemonSet rollout) is
//     drained, as a cordoned node is: no gang is placed there, and the
//     gangs running there go on, as their pods do (the kubelet kills
//     none); once its GPUs are allocatable again it takes gangs again, and
//     once its capacity is gone too (the kubelet drops a resource whose
//     plugin stays away), it is down.
//   - The engine's reason for a waiting gang becomes the message of its pods'
//     PodScheduled condition.
//
// # Policy
//
// The engine runs backfill.DefaultConfig: reservations for the first
// backfill.DefaultDepth (4) gangs of a queue ordered mostly by age
// (backfill.DefaultPriority, with the namespace's fair share as a bounded
// adjustment), hold mode for gangs of a leaf's worth of GPUs or more, and
// preemption off: the plugin does not signal victims, so a plan never
// asks it to.
//
// # Pod identity
//
// Pods are matched to the engine's assignment by assignSlots: within a
// member, the i-th pod in rank order (the phalanx.dev/rank annotation, the
// StatefulSet pod-index label, the Indexed Job completion index, or a number
// ending the pod name; unranked pods last, by name) gets the i-th node of the
// member's assignment, the core's pod of rank i (gang.Pod.Rank: ranks follow
// node order, so consecutive ranks share a leaf). A pod moved after a failed
// bind keeps its rank.
//
// # Nodes
//
// The engine's cluster is built from the GPU nodes' labels and allocatable
// GPU counts through topology/kube, and rebuilt (Snapshot and Restore) when
// a node is added or its GPU capacity or allocatable count changes, or the
// value of a label the model reads: a level label of Args.Topology's preset
// (or of Args.Levels, a trailing kubernetes.io/hostname excepted: it names
// the node and adds no level), a label added, removed or emptied counting
// as a change. A change of any other label (a monitoring agent's heartbeat
// rewritten every second) costs no rebuild; it still has the waiting
// gangs' pod shapes that the node could serve measured again (see
// Extension points), since the other Filter plugins may read any label.
// A node that cannot enter the cluster model on its own (a missing or empty
// topology label, a bad GPU count) is left out, and a node already in it
// keeps its former labels and GPUs; either way the plugin logs it and
// records a Warning event (reason PhalanxNodeLeftOut) on the node, once per
// reason (once the replica schedules: a standby records none), and looks
// at the node again when what the model reads of it changes. A node whose GPU
// count drops below the GPUs that pods hold on it (the engine could not
// move onto the rebuilt cluster) keeps its former count, with such a
// warning, drained meanwhile (its kubelet has no GPU for a new pod; its
// gangs run on), and costs no rebuild: each cycle compares its new count
// with the GPUs held there, and the cluster is rebuilt once they fit (again
// after the gangs that ended and the foreign pods gone in that cycle freed
// theirs, before Schedule: the GPUs they freed are never offered at the
// former count; a node that gets its GPUs back meanwhile is in line again,
// and a later drop is warned about again). The GPUs held count by number,
// not by the indices the engine gave them (Kubernetes does not say which
// GPUs a pod got; the device plugin picks the devices): a rebuild packs
// them, gangs' and other pods' alike, onto the node's lowest indices, so a
// node that loses a GPU (one marked unhealthy) takes its new count as soon
// as what its pods hold fits it, whichever indices they had. A waiting
// gang's plan (a reservation or a hold) on a GPU index the node no longer
// has does not keep it at its former count either: the plan is dropped and
// the gang planned again. Nor does a waiting gang that the new count leaves
// no room for anywhere (the engine refuses a cluster that a waiting gang
// can never fit): the gangs that can never fit it are withdrawn (every
// waiting gang, should the engine refuse it still), the node takes its new
// count, and they are submitted again once their pod shapes are measured
// again (as after any node change: the shapes the node could serve), a
// gang that can never fit waiting with
// that reason (and tried again after Args.AllowedTTLSeconds, or once a
// node that could serve it joins or changes); the other
// waiting gangs keep their place in the queue. When a rebuild fails for
// another reason, the changed nodes are tried one by one, the others join,
// and the ones that fail are tried again in the next cycle. A deleted node
// stays in the model, down, while a pod is bound there (its gangs ended as
// above); once none is, the next cycle rebuilds the cluster without it (a
// waiting gang's plan on it is dropped and the gang planned again; one
// that the live nodes can never fit is withdrawn and submitted again, as
// above; a rebuild the engine refuses is tried again after a back-off,
// 5 s doubling up to 5 minutes, or at once when the nodes to remove
// change) and the plugin forgets it, so that a cluster autoscaler's churn
// does not grow the model: a node re-created under its name joins as a new
// one. A deleted node outside the model is forgotten at once.
// Stats.Rebuilds counts the rebuilds tried.
//
// # Pods Phalanx did not place
//
// GPUs of bound pods that no running gang of this plugin owns (other
// schedulers, DaemonSets, pods of gangs that ended while they still run,
// running pods of this profile that could not be adopted after a restart)
// are used GPUs for the engine: they enter it as running one-pod gangs. A
// node's foreign GPUs that are held by a gang, or that are on a node that is
// down, are counted once they are free or the node is back; the engine is
// rebuilt only when what it counts differs from that.
//
// # Concurrency
//
// One mutex guards the engine and the plugin's books. The framework's hooks
// and the informer handlers hold it for look-ups and small updates only. The
// engine cycle runs in the plugin's own goroutine, woken by events (batched
// for Args.BatchMilliseconds) and by the engine's next event; it holds the
// lock for one Schedule call, then activates pods, rejects waiting pods,
// deletes pods and writes conditions with the lock released. A pod
// deletion that the API server refuses (other than for a pod already gone
// or replaced) is asked again after a backoff, 5 s doubling up to 5
// minutes, while the pod lives. The framework binds asynchronously:
// Unreserve and PostBind take the same lock.
//
// # Caller duties
//
// Enable the plugin in every extension point (multiPoint). Give the
// scheduler the RBAC of kube-scheduler plus the right to patch pod status,
// delete pods, and list and watch podgroups (deploy/rbac.yaml). Pods opt in
// with the profile's schedulerName.
package plugin
