package plugin

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// controller holds everything the plugin knows, behind one lock (mu). The
// framework's hooks and the informer handlers take it for map look-ups and
// small updates; the engine cycle (run by loop, not by the scheduling
// cycle) holds it for one Schedule call. No API call and no framework call
// that can block is made while it is held.
type controller struct {
	mu      sync.Mutex
	args    Args
	profile string
	eng     *engineAdapter
	groups  map[string]*groupState
	jobs    map[string]*groupState // engine job ID -> group
	podKey  map[string]string      // pod UID -> group key
	bound   map[string]boundPod    // every bound, live GPU pod by UID
	nodes   map[string]*v1.Node
	nodeGen map[string]string // node -> nodeGeneration, to spot changes
	// modelLabels is the node label keys the cluster model reads
	// (modelLabels of args): only their changes rebuild it.
	modelLabels []string
	leftOut     map[string]string // nodes left out of the cluster model -> why
	// unwarned is the nodes of leftOut whose Warning event is held back:
	// only a replica that schedules (active) records events, as the
	// leader; a standby's are recorded once it schedules.
	unwarned map[string]bool
	shrunk   map[string]bool // nodes kept at their former GPU count for the GPUs held there
	deleted  map[string]bool // nodes deleted from the API
	minPG    map[string]int  // PodGroup objects: "ns/name" -> minMember
	changed  bool            // set by an observation that the next cycle must see
	// staleNodes is the nodes that joined or changed in a way the other
	// Filter plugins may answer differently for, each with when the
	// informer reported its latest such change: the allowed node sets of
	// the pod shapes they could serve are measured again (remeasure).
	staleNodes map[string]time.Time
	err        string // the last engine error, shown in reasons
	stats      Stats
	// active is set by the first PreFilter call: this replica's scheduler
	// runs scheduling cycles. Under leader election a standby runs its
	// informers and this plugin's loop (New starts it) but no scheduling
	// cycle, so it never sets it. probe is the pending pod that PreEnqueue
	// lets through while active is unset (leaderProbe), so that a leader
	// with nothing else to schedule calls PreFilter too.
	active bool
	probe  string
	// partial is the half-bound groups (halfBound) this replica means to
	// delete once it schedules, with the UIDs of their bound pods, sorted,
	// and since when they have been those (settlePartials): a group joins
	// it while half-bound within partialSettle of activeSince (the first
	// engine cycle after the first PreFilter), and its bound pods are
	// deleted once they have stayed the same for partialSettle.
	partial     map[string]partialGroup
	activeSince time.Time
	// notAdopted is the groups whose running pods could not be adopted as a
	// gang (adoptRunning), with why; warned is set once a Warning event
	// said so (only once this replica schedules).
	notAdopted map[string]adoptNote
	// dead is the groups whose pods deadGang holds back from deletion (on
	// a standby, or within partialSettle of activeSince), with the node
	// outside the model that they run on and their bound pods: those are
	// deleted when due even if the gang has lost pods meanwhile, while the
	// node stays so.
	dead map[string]deadGroup
	// evictLater is the orphans (podState.orphan) seen bound, to delete in
	// the next cycle.
	evictLater []*podState
	// evictRetry is the pods whose deletion the API server refused (for a
	// reason other than the pod being gone), to ask again when due.
	evictRetry []evictRetry
	// removeFailed is the deleted nodes (sorted) whose removal from the
	// cluster model the engine refused last, removeFails how many times
	// in a row, and removeDue when forgetDeleted tries them again: it
	// backs off (removeRetryMin doubling up to removeRetryMax) and logs
	// the failure once, not in every cycle. Another set of nodes to
	// remove (one more deleted, or one fewer) is tried at once.
	removeFailed []string
	removeFails  int
	removeDue    time.Time
	// podsGone remembers the UIDs of pods deleted or terminated (the last
	// maxGoneUIDs of them, oldest first in goneOrder), so that a hook the
	// framework still calls for such a pod never brings it back.
	podsGone  map[string]bool
	goneOrder []string

	wake   chan struct{}
	synced func() bool
	now    func() time.Time
	status *statusWriter
	acts   actor
}

// actor is what the controller asks of the framework and the API server,
// outside the lock.
type actor interface {
	activate(pods map[string]*v1.Pod)
	reject(uid, msg string)
	evict(ns, name, uid string)
	nodeWarning(n *v1.Node, msg string)
	podWarning(p *v1.Pod, msg string)
}

// Stats counts what the plugin did (for tests, logs and the benchmark).
type Stats struct {
	Cycles, Submits, Admissions, Started, Finished, Teardowns, Evictions, Scouts int
	// Replaced counts pods the engine moved after a failed bind; Kept the
	// moves the engine refused (no node fits), after which the pod retries
	// on its node.
	Replaced, Kept int
	// Rebuilds counts the cluster rebuilds tried for node additions and
	// changes (each moves the engine with Snapshot and Restore).
	Rebuilds int
	// Adopted counts the running gangs found bound (after a restart, or
	// bound by the leader while this replica stood by) and entered into
	// the engine as running jobs.
	Adopted int
}

func newController(args Args, profile string, acts actor, status *statusWriter) *controller {
	return &controller{args: args, modelLabels: modelLabels(&args), profile: profile, groups: map[string]*groupState{},
		jobs: map[string]*groupState{}, podKey: map[string]string{}, bound: map[string]boundPod{},
		nodes: map[string]*v1.Node{}, nodeGen: map[string]string{}, leftOut: map[string]string{}, unwarned: map[string]bool{}, shrunk: map[string]bool{}, deleted: map[string]bool{}, staleNodes: map[string]time.Time{},
		minPG: map[string]int{}, partial: map[string]partialGroup{}, notAdopted: map[string]adoptNote{}, dead: map[string]deadGroup{}, podsGone: map[string]bool{}, wake: make(chan struct{}, 1), now: time.Now, status: status, acts: acts}
}

// poke wakes the loop; it never blocks.
func (c *controller) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// podHandlers returns the informer handlers for pods.
func (c *controller) podHandlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onPod(obj) },
		UpdateFunc: func(_, obj any) { c.onPod(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				c.mu.Lock()
				c.forgetPod(p)
				c.mu.Unlock()
				c.poke()
			}
		},
	}
}

func (c *controller) onPod(obj any) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	c.changed = false
	if terminal(p) {
		c.forgetPod(p)
	} else {
		c.observePod(p, true)
	}
	changed := c.changed
	c.mu.Unlock()
	if changed {
		c.poke()
	}
}

// maxGoneUIDs bounds the deleted or terminated pods remembered: a hook for
// such a pod comes within seconds of its deletion.
const maxGoneUIDs = 16384

// observePod records a live pod: as a GPU user when bound, and as a member of
// its group when this profile schedules it. Idempotent. Only pods from the
// API (fromAPI) say whether a pod is bound: the framework hands its hooks
// the assumed pod, whose nodeName is set before any bind.
//
// A pod already deleted or terminated (forgetPod) is not recorded again:
// for a hook, a pod of a group gets a stand-in group with no slot and no
// state, which every hook refuses.
func (c *controller) observePod(p *v1.Pod, fromAPI bool) *groupState {
	uid := string(p.UID)
	if c.podsGone[uid] {
		if fromAPI || p.Spec.SchedulerName != c.profile {
			return nil
		}
		key := groupKey(p, c.args.GPUResource)
		if key == "" {
			return nil
		}
		return &groupState{key: key, ns: p.Namespace, reason: "the pod was deleted or has terminated"}
	}
	gpus := podGPUs(p, c.args.GPUResource)
	if fromAPI && p.Spec.NodeName != "" && gpus > 0 {
		if _, ok := c.bound[uid]; !ok {
			c.bound[uid] = boundPod{node: p.Spec.NodeName, gpus: gpus}
			c.changed = true
		}
	}
	if p.Spec.SchedulerName != c.profile {
		return nil
	}
	key := groupKey(p, c.args.GPUResource)
	if key == "" {
		return nil
	}
	key = c.regroup(uid, key)
	g := c.groups[key]
	if g == nil {
		g = &groupState{key: key, ns: p.Namespace, pods: map[string]*podState{},
			allowed: map[string]allowedSet{}, scout: map[string]string{}, scoutSince: map[string]time.Time{}}
		c.groups[key] = g
	}
	ps := g.pods[uid]
	if ps == nil {
		ps = &podState{uid: uid, name: p.Name, ns: p.Namespace, rank: podRank(p),
			shape: shapeKey(p, c.args.GPUResource), gpus: gpus}
		g.pods[uid] = ps
		c.podKey[uid] = key
		c.changed = true
		if t := p.CreationTimestamp.Time; !t.IsZero() && (g.submit.IsZero() || t.Before(g.submit)) {
			g.submit = t
		}
	}
	if g.minMember == 0 || c.minPG[key] == 0 {
		g.minMember = c.minMemberOf(key, p)
	}
	if !fromAPI {
		if ps.pod == nil {
			ps.pod = p
		}
		return g
	}
	if was := ps.schedulable(); ps.pod != nil && was != podSchedulable(p) {
		c.changed = true // a gate lifted, or a deletion began: pending() changes
		if was {
			// A scout the scheduler will not try any more (gated, or
			// being deleted) measures nothing: the next cycle sends
			// another pod of its shape at once, not after the scout
			// timeout.
			g.dropScout(uid)
			if inc := g.inc; inc != nil && inc.pods[uid] != nil && inc.admitted && !inc.running && inc.broken == "" {
				// Its gang cannot assemble: torn down at once, as
				// when the pod is deleted (forgetPod), not when the
				// pods waiting at Permit for it time out.
				why := "is being deleted"
				if p.DeletionTimestamp == nil {
					why = "was scheduling-gated"
				}
				inc.broken = "pod " + p.Name + " " + why + " before its gang was bound"
			}
		}
	}
	ps.pod = p
	if p.Spec.NodeName != "" && ps.node == "" {
		c.changed = true
		ps.node = p.Spec.NodeName
		if inc := g.inc; inc != nil && inc.pods[uid] != nil {
			inc.bound[uid] = true
			if slot := inc.slots[uid]; slot != "" && slot != ps.node && !inc.running && inc.broken == "" {
				// Bound by another scheduler (a bind the previous
				// leader sent before a takeover, landing late): the
				// engine's books hold the pod on its slot, not where
				// it runs. Torn down, as a gang that cannot run whole.
				inc.broken = "pod " + p.Name + " was bound to node " + ps.node + ", not to its node " + slot + " (a bind of another scheduler)"
			}
		}
	}
	if p.Spec.NodeName != "" {
		c.evictOrphan(ps)
	}
	return g
}

// regroup returns the group of the pod with uid, whose labels now put it
// in group key. Pod labels can change: a pod that is not bound and not in
// its group's gang leaves its former group for key; one that is bound or
// in its gang stays where it was (a gang's pods are fixed), and its former
// group is returned.
func (c *controller) regroup(uid, key string) string {
	old, ok := c.podKey[uid]
	if !ok || old == key {
		return key
	}
	og := c.groups[old]
	ps := og.podOf(uid)
	if ps == nil {
		return key
	}
	if ps.node != "" || (og.inc != nil && og.inc.pods[uid] != nil) {
		return old
	}
	delete(og.pods, uid)
	og.dropScout(uid)
	delete(c.podKey, uid)
	if len(og.pods) == 0 && og.inc == nil {
		delete(c.groups, old)
	}
	c.changed = true
	return key
}

// podOf returns the state of the pod with uid in group g (nil for a nil
// group).
func (g *groupState) podOf(uid string) *podState {
	if g == nil {
		return nil
	}
	return g.pods[uid]
}

// orphanOf returns pod's state in group g when it is an orphan, else nil.
func (c *controller) orphanOf(g *groupState, pod *v1.Pod) *podState {
	if g == nil {
		return nil
	}
	if ps := g.pods[string(pod.UID)]; ps != nil && ps.orphan {
		return ps
	}
	return nil
}

// evictOrphan queues the deletion of pod ps if it is an orphan (a pod of a
// torn-down gang that bound after the teardown).
func (c *controller) evictOrphan(ps *podState) {
	if !ps.orphan {
		return
	}
	ps.orphan, ps.evicting = false, true
	c.evictLater = append(c.evictLater, ps)
	c.changed = true
}

// minMemberOf returns a group's minimum: its PodGroup object's minMember,
// else the pod's min-member annotation, else 1 for a single-pod group.
func (c *controller) minMemberOf(key string, p *v1.Pod) int {
	if n := c.minPG[key]; n > 0 {
		return n
	}
	if n := atoiPositive(p.Annotations[AnnotationMinMember]); n > 0 {
		return n
	}
	if p.Labels[LabelPodGroup] == "" {
		return 1
	}
	return 0
}

// forgetPod records that a pod is deleted or terminated: its GPUs are free
// once it is gone, and its gang may be finished, broken (admitted, not yet
// running) or, still waiting, to be submitted again without it (prepare).
func (c *controller) forgetPod(p *v1.Pod) {
	uid := string(p.UID)
	if !c.podsGone[uid] {
		c.podsGone[uid] = true
		c.goneOrder = append(c.goneOrder, uid)
		if len(c.goneOrder) > maxGoneUIDs {
			delete(c.podsGone, c.goneOrder[0])
			c.goneOrder = c.goneOrder[1:]
		}
	}
	if _, ok := c.bound[uid]; ok {
		delete(c.bound, uid)
		c.changed = true
	}
	key, ok := c.podKey[uid]
	if !ok {
		return
	}
	delete(c.podKey, uid)
	g := c.groups[key]
	if g == nil {
		return
	}
	delete(g.pods, uid)
	c.changed = true
	// A scout deleted before its measurement came back measures nothing:
	// the next cycle sends another (needScouts), and the loop does not
	// wake for it at the scout timeout.
	g.dropScout(uid)
	if inc := g.inc; inc != nil && inc.pods[uid] != nil {
		inc.gone[uid] = true
		// A gang still waiting in the engine (not admitted) has no pod
		// bound or placed, but may hold the engine's plan for it (a
		// reservation, a hold, a claim on lent GPUs): prepare withdraws
		// it (Cancel drops that plan) and submits its pods again, which
		// the engine plans afresh, keeping the allowed node sets
		// measured for its shapes. An admitted one that is not whole
		// yet is torn down.
		if inc.admitted && !inc.running && inc.broken == "" {
			inc.broken = "pod " + p.Name + " was deleted before its gang was bound"
		}
	}
	if len(g.pods) == 0 && g.inc == nil {
		delete(c.groups, key)
	}
}

// nodeHandlers returns the informer handlers for nodes.
func (c *controller) nodeHandlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onNode(obj, false) },
		UpdateFunc: func(_, obj any) { c.onNode(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.onNode(obj, true)
		},
	}
}

// filterFieldsDiffer reports whether a and b, two copies of one node, differ in
// what the other Filter plugins may answer differently for: labels,
// taints, cordon or allocatable resources.
func filterFieldsDiffer(a, b *v1.Node) bool {
	return a.Spec.Unschedulable != b.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Status.Allocatable, b.Status.Allocatable)
}

func (c *controller) onNode(obj any, deleted bool) {
	n, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	old := c.nodes[n.Name]
	changed := old == nil || deleted != c.deleted[n.Name] || nodeReady(old) != nodeReady(n) ||
		old.Spec.Unschedulable != n.Spec.Unschedulable ||
		nodeGeneration(old, c.modelLabels, c.args.GPUResource) != nodeGeneration(n, c.modelLabels, c.args.GPUResource)
	if old == nil || (c.deleted[n.Name] && !deleted) || filterFieldsDiffer(old, n) {
		// What the other Filter plugins answer may have changed (a node
		// that joins, or is re-created under the name of a deleted one
		// not yet forgotten, was measured by none: the scheduler's
		// snapshot has no deleted node; NodeUnschedulable rejects a
		// cordoned node): measure the pod shapes of waiting gangs that
		// the node could serve again.
		c.staleNodes[n.Name] = c.now()
		changed = true
	}
	c.nodes[n.Name] = n
	c.deleted[n.Name] = deleted
	c.mu.Unlock()
	if changed {
		c.poke()
	}
}

// podGroupHandlers returns the informer handlers for scheduler-plugins
// PodGroup objects (read as unstructured: the module does not depend on
// scheduler-plugins).
func (c *controller) podGroupHandlers() cache.ResourceEventHandlerFuncs {
	set := func(obj any, del bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		key := u.GetNamespace() + "/" + u.GetName()
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "minMember")
		c.mu.Lock()
		if del || n <= 0 {
			delete(c.minPG, key)
		} else {
			c.minPG[key] = int(n)
			if g := c.groups[key]; g != nil {
				g.minMember = int(n)
			}
		}
		c.changed = true
		c.mu.Unlock()
		c.poke()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj, false) },
		UpdateFunc: func(_, obj any) { set(obj, false) },
		DeleteFunc: func(obj any) { set(obj, true) },
	}
}

// run is the engine loop: it runs a cycle when woken (batching events for
// Args.BatchMilliseconds) or when the engine's next event is due, and applies
// the cycle's actions after releasing the lock.
func (c *controller) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-timer.C:
		}
		if b := c.args.batch(); b > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(b):
			}
		}
		acts, next := c.cycle(logger)
		acts.apply(c.acts, c.status)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// evictRetry is a pod whose deletion failed, and when to try again.
type evictRetry struct {
	p   *podState
	due time.Time
}

// Node removals the engine refused (forgetDeleted) back off from
// removeRetryMin, doubling up to removeRetryMax.
const (
	removeRetryMin = 5 * time.Second
	removeRetryMax = 5 * time.Minute
)

// Eviction retries back off from evictRetryMin, doubling up to evictRetryMax.
const (
	evictRetryMin = 5 * time.Second
	evictRetryMax = 5 * time.Minute
)

// evictFailed records that the API server refused to delete a pod the
// plugin evicts (the actor reports it, for any error other than the pod
// being gone or replaced): the deletion is asked again after a backoff,
// while the pod lives.
func (c *controller) evictFailed(uid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.podsGone[uid] {
		return
	}
	g := c.groups[c.podKey[uid]]
	if g == nil || g.pods[uid] == nil {
		return
	}
	p := g.pods[uid]
	delay := evictRetryMax
	if p.evictFails < 6 {
		delay = min(evictRetryMin<<p.evictFails, evictRetryMax)
	}
	p.evictFails++
	c.evictRetry = append(c.evictRetry, evictRetry{p: p, due: c.now().Add(delay)})
	c.poke() // the loop's timer must see the retry
}

// retryEvictions queues the deletions due again, and returns when the next
// one is due (zero when none waits).
func (c *controller) retryEvictions(logger klog.Logger, now time.Time, acts *actions) time.Time {
	var next time.Time
	keep := c.evictRetry[:0]
	for _, r := range c.evictRetry {
		switch {
		case c.podsGone[r.p.uid]:
		case !now.Before(r.due):
			logger.Info("Phalanx: deleting a pod again (its deletion failed)", "pod", r.p.ns+"/"+r.p.name, "attempt", r.p.evictFails+1)
			acts.evict = append(acts.evict, r.p)
			c.stats.Evictions++
		default:
			keep = append(keep, r)
			if next.IsZero() || r.due.Before(next) {
				next = r.due
			}
		}
	}
	c.evictRetry = keep
	return next
}

// Snapshot of counters (for tests and the benchmark).
func (c *controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}
