package plugin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// actions is what a cycle asks for once the lock is released.
type actions struct {
	activate map[string]*v1.Pod
	reject   []rejection
	evict    []*podState
	status   []statusUpdate
	warnings []nodeWarning
	podWarns []podWarning
}

// podWarning is a Warning event to record on a pod.
type podWarning struct {
	pod *v1.Pod
	msg string
}

// nodeWarning is a Warning event to record on a node.
type nodeWarning struct {
	node *v1.Node
	msg  string
}

type rejection struct{ uid, msg string }

func (a *actions) activatePod(p *podState) {
	if p.pod == nil {
		return
	}
	if a.activate == nil {
		a.activate = map[string]*v1.Pod{}
	}
	a.activate[p.ns+"/"+p.name] = p.pod
}

func (a *actions) apply(act actor, sw *statusWriter) {
	for _, r := range a.reject {
		act.reject(r.uid, r.msg)
	}
	for _, p := range a.evict {
		act.evict(p.ns, p.name, p.uid)
	}
	if len(a.activate) > 0 {
		act.activate(a.activate)
	}
	for _, w := range a.warnings {
		act.nodeWarning(w.node, w.msg)
	}
	for _, w := range a.podWarns {
		act.podWarning(w.pod, w.msg)
	}
	if sw != nil {
		sw.enqueue(a.status)
	}
}

// idle is how long the loop sleeps when nothing is due.
const idle = time.Minute

// cycle brings the engine up to date with everything observed since the last
// one, runs Schedule, and returns what to do outside the lock and when to
// run again.
func (c *controller) cycle(logger klog.Logger) (actions, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var acts actions
	now := c.now()
	if c.eng == nil && !c.start(logger, now, &acts) {
		c.warnLeftOut(&acts)
		return acts, time.Second
	}
	c.stats.Cycles++
	if c.err != "" {
		logger.Error(nil, "Phalanx: engine call failed", "err", c.err)
		c.err = ""
	}
	kept := c.syncNodes(logger, now, &acts, nil)
	c.warnLeftOut(&acts)
	for _, p := range c.evictLater {
		logger.Info("Phalanx: deleting a pod that bound after its gang was torn down", "pod", p.ns+"/"+p.name)
		acts.evict = append(acts.evict, p)
		c.stats.Evictions++
	}
	c.evictLater = c.evictLater[:0]
	retryAt := c.retryEvictions(logger, now, &acts)
	for _, g := range c.sortedGroups() {
		switch inc := g.inc; {
		case inc == nil:
		case inc.running && inc.allGone():
			c.finish(logger, g, now)
		case inc.broken != "":
			logger.Info("Phalanx: tearing a gang down", "job", inc.job, "reason", inc.broken)
			c.teardown(g, now, &acts)
		case len(inc.replace) > 0:
			c.replacePods(logger, g, now, &acts)
		}
	}
	var partialAt time.Time
	if c.active {
		partialAt = c.settlePartials(logger, now, &acts)
	} else {
		c.leaderProbe(&acts)
	}
	deadAt := c.adoptRunning(logger, now, &acts)
	if err := c.eng.setForeign(c.foreignUsage(), now); err != nil {
		logger.Error(err, "Phalanx: counting GPUs of pods it did not place")
	}
	if kept {
		// The gangs that finished or were torn down above, and the
		// foreign pods gone, freed GPUs of the nodes kept at their former
		// count: those that fit their new count now take it before
		// Schedule could offer GPUs the kubelet no longer has. Only
		// they are looked at again: a node whose rebuild failed above is
		// tried again in the next cycle, not twice in this one.
		c.syncNodes(logger, now, &acts, maps.Clone(c.shrunk))
	}
	if len(c.staleNodes) > 0 {
		c.remeasure()
		clear(c.staleNodes)
	}
	for _, g := range c.sortedGroups() {
		c.prepare(g, now, &acts)
		g.dropExpiredScouts(now, c.args.scoutTimeout())
	}
	res, err := c.eng.schedule(now)
	if err != nil {
		logger.Error(err, "Phalanx: engine cycle")
		return acts, time.Second
	}
	c.applyPlan(res, &acts)
	if c.active {
		c.collectStatus(&acts) // a standby writes no pod condition
	}
	next := idle
	if !res.Next.IsZero() {
		next = max(res.Next.Sub(now), 10*time.Millisecond)
	}
	if due, ok := c.scoutDue(now); ok {
		next = min(next, max(due.Sub(now), 10*time.Millisecond))
	}
	if due, ok := c.nextMeasurement(now); ok {
		next = min(next, max(due.Sub(now), 10*time.Millisecond))
	}
	var removeAt time.Time
	if len(c.removeFailed) > 0 {
		removeAt = c.removeDue
	}
	for _, at := range []time.Time{retryAt, partialAt, deadAt, removeAt} {
		if !at.IsZero() {
			next = min(next, max(at.Sub(now), 10*time.Millisecond))
		}
	}
	return acts, next
}

// start builds the engine once the informers have synced and GPU nodes exist.
// A node that cannot enter the cluster model (nodeDefect) is left out, with
// a warning, and the engine starts on the others.
func (c *controller) start(logger klog.Logger, now time.Time, acts *actions) bool {
	if c.synced != nil && !c.synced() {
		return false
	}
	var gpuNodes []*v1.Node
	leftOut := 0
	for _, name := range sortedNodeNames(c.nodes) {
		n := c.nodes[name]
		if c.deleted[name] || !hasGPUs(n, c.args.GPUResource) {
			continue
		}
		c.nodeGen[name] = nodeGeneration(n, c.modelLabels, c.args.GPUResource)
		if _, err := nodeDefect(&c.args, n); err != nil {
			c.leaveOut(logger, n, err, acts)
			leftOut++
			continue
		}
		gpuNodes = append(gpuNodes, n)
		delete(c.leftOut, name)
	}
	if len(gpuNodes) == 0 {
		c.err = "no node has " + c.args.GPUResource
		if leftOut > 0 {
			c.err = fmt.Sprintf("every node with %s (%d) is left out of the cluster model: see the nodes' PhalanxNodeLeftOut events", c.args.GPUResource, leftOut)
		}
		return false
	}
	eng, err := newEngineAdapter(gpuNodes, &c.args, now)
	if err != nil {
		c.err = err.Error()
		logger.Error(err, "Phalanx: building the cluster from node labels")
		return false
	}
	c.eng, c.err = eng, ""
	logger.Info("Phalanx: engine started", "nodes", len(gpuNodes), "gpus", eng.totalGPUs())
	return true
}

// remeasure marks stale the allowed node sets of the pod shapes that a
// node of staleNodes (joined, or changed in labels, taints, cordon or
// allocatable resources) could serve, so that they are measured again (one
// scout per shape, a scheduling cycle of every Filter plugin on every
// node): the node is in the engine's cluster model (not left out) and has
// at least the shape's GPUs per pod (a shape of no GPUs takes a whole
// node: any node serves it). A node that serves none of a shape's pods is
// never where the engine puts them, whatever the Filter plugins say of it.
// A gang that could never fit is tried again once a shape of it is
// measured again, not after Args.AllowedTTLSeconds: the node may take it
// now. Each such shape, measured or not yet, records when the latest
// node that could serve it changed (allowedSet.changed): a scout whose
// scheduling cycle began before that measured on a snapshot without the
// change, and its measurement, however late it lands, does not count
// (scouted). A gang waiting in the engine loses such a node from the
// allowed sets of the shapes it could serve at once (prepare changes its
// sets in the engine, updateAllowed, in the same cycle, before Schedule):
// the Filter plugins may reject it now, and GPUs freed elsewhere could
// let the engine admit the gang there before the measurement lands. Its
// sets only shrink until then (allowedFor): the measurement puts the node
// back if it still passes. The gang keeps its job and what the engine
// planned for it where the new sets allow it (a hold moves off the node),
// so a node changing every few seconds does not keep a held gang from
// collecting its GPUs. An admitted gang keeps its nodes.
func (c *controller) remeasure() {
	type stale struct {
		name string
		gpus int
		at   time.Time
	}
	var nodes []stale
	for name, at := range c.staleNodes {
		if c.deleted[name] {
			continue
		}
		if gpus, _, _, ok := c.eng.nodeStatus(name); ok {
			nodes = append(nodes, stale{name, gpus, at})
		}
	}
	if len(nodes) == 0 {
		return
	}
	// changedFor returns when the latest stale node that serves a pod of
	// gpus GPUs changed (zero when none serves it).
	changedFor := func(gpus int) time.Time {
		var last time.Time
		for _, n := range nodes {
			if n.gpus >= gpus && n.at.After(last) {
				last = n.at
			}
		}
		return last
	}
	for _, g := range c.groups {
		need := make(map[string]int, len(g.allowed))
		for _, p := range g.pods {
			need[p.shape] = p.gpus
		}
		unmeasured := len(g.allowed) == 0
		served := false
		// A waiting gang loses the node at once (prepare updates its
		// sets in the engine, which keeps its plan where they allow it).
		shrink := g.inc != nil && !g.inc.admitted
		for shape, a := range g.allowed {
			gpus := need[shape] // a shape no pod has any more: any node
			at := changedFor(gpus)
			if at.IsZero() {
				continue
			}
			a.at, a.changed = time.Time{}, latest(a.changed, at)
			if shrink {
				a.nodes = slices.DeleteFunc(slices.Clone(a.nodes), func(name string) bool {
					return slices.ContainsFunc(nodes, func(n stale) bool { return n.name == name && n.gpus >= gpus })
				})
			}
			// A node that changed again is no longer the one the
			// snapshot differed on (scouted's once only): should the
			// next snapshot lag on this change, it is measured again.
			a.missed = slices.DeleteFunc(slices.Clone(a.missed), func(name string) bool {
				_, ok := c.staleNodes[name]
				return ok
			})
			g.allowed[shape] = a
			served = true
		}
		// A shape not measured yet may have a scout out whose cycle
		// began before the change.
		for shape, gpus := range need {
			if _, ok := g.allowed[shape]; ok {
				continue
			}
			if at := changedFor(gpus); !at.IsZero() {
				g.allowed[shape] = allowedSet{changed: at}
			}
		}
		if served || unmeasured {
			g.neverFits = false
		}
	}
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// nodeGeneration summarises what of a node shapes the cluster model: its
// GPU capacity and allocatable count (kube.Load counts the allocatable
// GPUs, and reports a node with none allocatable Down) and its values of
// labels, the label keys the model reads (modelLabels), each quoted or "-"
// when the node does not carry it (kube.Load tells a missing label from an
// empty one). A change of another label (one a monitoring agent rewrites
// every second) leaves it as it was: the model is not rebuilt for it,
// though the node is measured again for the other Filter plugins
// (filterFieldsDiffer), which may read any label.
func nodeGeneration(n *v1.Node, labels []string, resource string) string {
	q := n.Status.Capacity[v1.ResourceName(resource)]
	a, ok := n.Status.Allocatable[v1.ResourceName(resource)]
	alloc := "-"
	if ok {
		alloc = a.String()
	}
	var b strings.Builder
	b.WriteString(q.String() + "/" + alloc)
	for _, k := range labels {
		b.WriteByte('|')
		if v, ok := n.Labels[k]; ok {
			b.WriteString(strconv.Quote(v))
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// syncNodes adds new and resized GPU nodes, and those with new values of
// the labels the model reads (nodeGeneration), to the cluster and applies
// readiness, cordons and GPU health; a node failure ends the gangs on it.
// A node that cannot enter the cluster model (nodeDefect) is left out
// with a warning (a node already in it keeps its former labels and GPUs)
// and looked at again when what the model reads of it changes. A node
// that shrank below the number of GPUs that pods hold on it (the engine would refuse the rebuilt
// cluster; addNodes packs what is held onto the lowest indices)
// keeps its former GPUs, with a warning, without a rebuild: it is looked at
// again in every cycle, and rebuilt once the GPUs held there fit. When the
// rebuild fails as a whole all the same, each node is tried alone: the
// others join, and the ones that fail are tried again in the next cycle.
// It reports whether a node was kept at its former count for the GPUs held
// there: cycle calls it again once the gangs that ended and the foreign
// pods gone have freed theirs, before Schedule, with only those nodes
// (only; nil looks at every node) to be rebuilt: a node whose rebuild
// failed is tried once per cycle.
func (c *controller) syncNodes(logger klog.Logger, now time.Time, acts *actions, only map[string]bool) (kept bool) {
	if only == nil {
		c.forgetDeleted(logger, now)
	}
	var changed []*v1.Node
	gens := map[string]string{}
	shrunk := map[string]int{} // known nodes whose GPU count drops -> the new count
	for _, name := range sortedNodeNames(c.nodes) {
		n := c.nodes[name]
		if c.deleted[name] || !hasGPUs(n, c.args.GPUResource) || (only != nil && !only[name]) {
			continue
		}
		gen := nodeGeneration(n, c.modelLabels, c.args.GPUResource)
		if gen == c.nodeGen[name] {
			if c.shrunk[name] {
				// Back to what the engine counts (its GPU healthy
				// again): a later shrink is a new one, warned again.
				delete(c.shrunk, name)
				delete(c.leftOut, name)
			}
			continue
		}
		gpus, err := nodeDefect(&c.args, n)
		if err != nil {
			c.nodeGen[name] = gen // looked at again when what the model reads changes
			c.leaveOut(logger, n, err, acts)
			continue
		}
		if have, _, _, ok := c.eng.nodeStatus(name); ok && gpus < have {
			shrunk[name] = gpus
		} else {
			delete(c.shrunk, name) // not kept for the GPUs held: not drained for it
		}
		changed = append(changed, n)
		gens[name] = gen
	}
	if len(shrunk) > 0 {
		held := c.eng.heldGPUs(slices.Sorted(maps.Keys(shrunk)))
		fit := changed[:0]
		for _, n := range changed {
			gpus, ok := shrunk[n.Name]
			if !ok || held[n.Name] <= gpus {
				fit = append(fit, n)
				continue
			}
			kept, c.shrunk[n.Name] = true, true
			have, _, _, _ := c.eng.nodeStatus(n.Name)
			// Not the number held (it changes as pods come and go): one
			// warning for one drop.
			c.leaveOut(logger, n, fmt.Errorf("it now has %d %s, fewer than the %d Phalanx counts, and pods hold more than that there: the new count is taken once they fit",
				gpus, c.args.GPUResource, have), acts)
		}
		changed = fit
	}
	joined := func(n *v1.Node) {
		c.nodeGen[n.Name] = gens[n.Name]
		delete(c.leftOut, n.Name)
		delete(c.shrunk, n.Name)
	}
	if len(changed) > 0 {
		c.stats.Rebuilds++
		withdrawn, err := c.eng.addNodes(changed)
		switch {
		case err == nil:
			for _, n := range changed {
				joined(n)
			}
		case len(changed) == 1:
			c.leaveOut(logger, changed[0], err, acts)
		default:
			for _, n := range changed {
				c.stats.Rebuilds++
				w, err := c.eng.addNodes([]*v1.Node{n})
				if err != nil {
					c.leaveOut(logger, n, err, acts)
				} else {
					joined(n)
				}
				withdrawn = append(withdrawn, w...)
			}
		}
		c.withdrawn(logger, withdrawn)
	}
	for _, name := range sortedNodeNames(c.nodes) {
		n := c.nodes[name]
		if !c.eng.knows(name) {
			continue
		}
		// A node the engine knows that no longer has the GPU resource at
		// all (capacity and allocatable 0 or missing) is down too: the
		// engine keeps its former GPU count, which no pod can use.
		noGPUs := !c.deleted[name] && !hasGPUs(n, c.args.GPUResource)
		down := c.deleted[name] || !nodeReady(n) || noGPUs
		// A node kept at its former count has no GPU for a new pod: the
		// pods there hold more than the kubelet has. It is drained until
		// it takes its new count (its gangs run on).
		ended, err := c.eng.setNode(name, down, n.Spec.Unschedulable || c.shrunk[name], now)
		if err != nil {
			logger.Error(err, "Phalanx: node state", "node", name)
		}
		c.nodeFailed(name, ended)
	}
	return kept
}

// forgetDeleted forgets the nodes deleted from the API on which no bound
// pod is left (a cluster autoscaler adds and deletes nodes with fresh names
// all day: the books and the engine's cluster must not grow with them). A
// node the engine knows goes once the engine holds it down (syncNodes took
// it down in an earlier cycle, ending the gangs there as a node failure
// does) and no active job holds GPUs there: the cluster is rebuilt without
// it (engineAdapter.removeNodes; the waiting gangs it leaves no room for
// are withdrawn and submitted again). One the engine does not know (no
// GPUs, or left out of the model) is forgotten at once. A node that comes
// back under its name later is a new node. When the rebuild fails, the
// nodes stay, down, and are tried again after a back-off (removeRetryMin,
// doubling up to removeRetryMax; the failure is logged once), or at once
// when the set of nodes to remove changes.
func (c *controller) forgetDeleted(logger klog.Logger, now time.Time) {
	if len(c.deleted) == 0 {
		c.removeFailed, c.removeFails = nil, 0
		return // most cycles: nothing to read
	}
	podsOn := map[string]bool{}
	for _, b := range c.bound {
		podsOn[b.node] = true
	}
	for _, g := range c.groups {
		for _, p := range g.pods {
			if p.node != "" {
				podsOn[p.node] = true
			}
		}
	}
	var gone []string
	for _, name := range sortedNodeNames(c.nodes) {
		if !c.deleted[name] || podsOn[name] {
			continue
		}
		if !c.eng.knows(name) {
			c.forgetNode(name)
			continue
		}
		if _, down, _, _ := c.eng.nodeStatus(name); down {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return
	}
	held := c.eng.heldGPUs(gone)
	gone = slices.DeleteFunc(gone, func(n string) bool { return held[n] > 0 })
	if len(gone) == 0 {
		c.removeFailed, c.removeFails = nil, 0
		return
	}
	again := slices.Equal(gone, c.removeFailed)
	if again && now.Before(c.removeDue) {
		return
	}
	c.stats.Rebuilds++
	withdrawn, err := c.eng.removeNodes(gone)
	if err != nil {
		if !again {
			c.removeFailed, c.removeFails = gone, 0
			logger.Error(err, "Phalanx: removing deleted nodes from the cluster model (tried again later)", "nodes", gone)
		} else {
			logger.V(4).Info("Phalanx: removing deleted nodes from the cluster model failed again", "nodes", gone, "err", err)
		}
		delay := removeRetryMax
		if c.removeFails < 6 {
			delay = min(removeRetryMin<<c.removeFails, removeRetryMax)
		}
		c.removeFails++
		c.removeDue = now.Add(delay)
		return
	}
	c.removeFailed, c.removeFails = nil, 0
	for _, name := range gone {
		c.forgetNode(name)
	}
	c.withdrawn(logger, withdrawn)
}

// forgetNode drops node name from the controller's node books.
func (c *controller) forgetNode(name string) {
	delete(c.nodes, name)
	delete(c.deleted, name)
	delete(c.nodeGen, name)
	delete(c.leftOut, name)
	delete(c.unwarned, name)
	delete(c.shrunk, name)
}

// withdrawn forgets the waiting gangs of jobs, which a rebuild of the
// cluster withdrew from the engine (addNodes: the rebuilt cluster did not
// take them), so that prepare submits their groups again (once their
// shapes are measured again): those that can never fit the cluster now
// wait as such (errNeverFits).
func (c *controller) withdrawn(logger klog.Logger, jobs []string) {
	for _, job := range jobs {
		g := c.jobs[job]
		delete(c.jobs, job)
		if g == nil || g.inc == nil || g.inc.job != job {
			continue
		}
		logger.Info("Phalanx: a waiting gang was withdrawn by a cluster rebuild; it is submitted again", "job", job)
		g.inc = nil
	}
}

// nodeFailed marks the gangs of jobs, which a failure of node name ended
// in the engine, broken, naming the node and why it is down: the cycle
// tears them down (teardown). syncNodes calls it for a node that fails
// under running gangs, adoptRunning for the gangs it adopts on a node
// already down.
func (c *controller) nodeFailed(name string, jobs []string) {
	if len(jobs) == 0 {
		return
	}
	n := c.nodes[name]
	why := "is not ready"
	switch {
	case n == nil:
		why = "is down"
	case c.deleted[name]:
		why = "was deleted"
	case !hasGPUs(n, c.args.GPUResource):
		why = "has no " + c.args.GPUResource + " any more (capacity and allocatable 0)"
	case nodeReady(n):
		why = "serves no " + c.args.GPUResource + " (none allocatable)"
	}
	for _, job := range jobs {
		if g := c.jobs[job]; g != nil && g.inc != nil {
			g.inc.broken = "node " + name + " " + why
		}
	}
}

// leaveOut records that node n is left out of the engine's cluster (or, when
// the engine knows it, kept as it was) because of err: logged, and a
// Warning event on the node, once per distinct reason.
func (c *controller) leaveOut(logger klog.Logger, n *v1.Node, err error, acts *actions) {
	msg := "Phalanx leaves this node out of its cluster model: " + err.Error()
	if c.eng != nil && c.eng.knows(n.Name) {
		msg = "Phalanx keeps its former view of this node (labels, GPUs): " + err.Error()
	}
	if c.leftOut[n.Name] == msg {
		return
	}
	c.leftOut[n.Name] = msg
	logger.Error(err, "Phalanx: a node cannot enter the cluster model", "node", n.Name)
	if !c.active {
		c.unwarned[n.Name] = true // recorded once this replica schedules
		return
	}
	delete(c.unwarned, n.Name)
	acts.warnings = append(acts.warnings, nodeWarning{node: n, msg: msg})
}

// warnLeftOut records the Warning events that leaveOut held back while
// this replica stood by, for the nodes still left out (or kept at their
// former view) for the reason last logged, once it schedules.
func (c *controller) warnLeftOut(acts *actions) {
	if !c.active {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(c.unwarned)) {
		delete(c.unwarned, name)
		if msg, n := c.leftOut[name], c.nodes[name]; msg != "" && n != nil && !c.deleted[name] {
			acts.warnings = append(acts.warnings, nodeWarning{node: n, msg: msg})
		}
	}
}

func sortedNodeNames(m map[string]*v1.Node) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (c *controller) sortedGroups() []*groupState {
	out := make([]*groupState, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// foreignUsage sums, per node, the GPUs of bound pods that no active gang of
// this plugin owns: pods of other schedulers, DaemonSets, and pods of gangs
// that ended while they still run.
func (c *controller) foreignUsage() map[string]int {
	out := map[string]int{}
	for uid, b := range c.bound {
		if g := c.groups[c.podKey[uid]]; g != nil && g.inc != nil && g.inc.admitted && g.inc.pods[uid] != nil {
			continue
		}
		out[b.node] += b.gpus
	}
	return out
}

// finish reports a running gang whose pods are all gone (deleted or
// terminated) as finished: its GPUs return to the engine.
func (c *controller) finish(logger klog.Logger, g *groupState, now time.Time) {
	if err := c.eng.finished(g.inc.job, now); err != nil {
		logger.Error(err, "Phalanx: reporting a gang finished", "job", g.inc.job)
	}
	delete(c.jobs, g.inc.job)
	g.inc = nil
	c.stats.Finished++
	if len(g.pods) == 0 {
		delete(c.groups, g.key)
	}
}

// teardown ends a broken gang: the engine forgets it (cancelled when nothing
// is bound, failed otherwise), pods waiting at Permit are rejected, and bound
// pods are deleted when the gang cannot run whole (a node failure, a bind
// that kept failing). Pods not yet bound stay and form the next gang.
//
// A standby (!c.active: its jobs are gangs it adopted as the leader bound
// them, torn down by a node failure) deletes no pod: the leader does, if it
// lives. The group is left without a job, its bound pods examined in every
// cycle as after a restart: adopted again once whole on live nodes
// (adoptRunning), else their GPUs counted as used by pods Phalanx did not
// place, and never deleted by settlePartials (they were seen running whole).
func (c *controller) teardown(g *groupState, now time.Time, acts *actions) {
	inc := g.inc
	if c.eng.held(inc.job) {
		var err error
		if inc.boundCount() == 0 {
			err = c.eng.cancel(inc.job, now)
		} else {
			err = c.eng.failed(inc.job, now)
		}
		if err != nil {
			c.err = err.Error()
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(inc.pods)) { // pods in one order: deletions too
		if inc.reserved[uid] || inc.passed[uid] {
			acts.reject = append(acts.reject, rejection{uid, "phalanx: gang torn down: " + inc.broken})
		}
		if !c.active {
			continue // a standby deletes no pod
		}
		if inc.bound[uid] && !inc.gone[uid] {
			c.evict(inc.pods[uid], acts)
		} else if ps := inc.pods[uid]; inc.passed[uid] && !inc.gone[uid] && ps != nil {
			ps.orphan = true // its bind is in flight: deleted if it binds
		}
	}
	g.reason = "gang " + inc.job + " was torn down (" + inc.broken + "); waiting to be placed again"
	delete(c.jobs, inc.job)
	g.inc = nil
	g.allowed = map[string]allowedSet{} // measure again: the cluster changed
	c.stats.Teardowns++
}

// partialSettle is how long the bound pods of a half-bound group must stay
// the same, once this replica schedules, before settlePartials deletes
// them: binds that the previous leader had sent may still land after the
// takeover, within the API server's default request timeout (60 s).
const partialSettle = 60 * time.Second

// partialGroup is a half-bound group settlePartials watches: the sorted
// UIDs of its bound pods, and since when they have been those.
type partialGroup struct {
	uids  []string
	since time.Time
}

// settlePartials deletes the partial gangs that no scheduler is binding any
// more, once this replica schedules (c.active): a group half-bound
// (halfBound) at its first engine cycle after its first PreFilter, or that
// becomes half-bound within partialSettle of it (a bind from the previous
// leader landing after the takeover), has its bound pods deleted
// (deletePartial) once they have stayed the same for partialSettle. A bind
// landing meanwhile restarts the wait; a group that becomes whole (then
// adopted), loses its pending pods or its bound pods leaves the watch. A
// group this replica saw running whole (groupState.seenWhole: a gang it
// could not adopt, whose Indexed Job then created its next index), or that
// has bound pods and no pending pod at the first active cycle (lostPods,
// then marked seenWhole: a running gang that lost a pod, whose replacement
// comes later), is not a partial gang and is never deleted by this rule,
// nor is a group first half-bound later than partialSettle after
// activation (only this replica binds then, and its gangs have jobs). A
// standby deletes nothing: the leader may be binding. It returns when the
// next deletion is due (zero when none is watched).
func (c *controller) settlePartials(logger klog.Logger, now time.Time, acts *actions) time.Time {
	if c.activeSince.IsZero() {
		c.activeSince = now
		for _, g := range c.groups {
			if lostPods(g) {
				g.seenWhole = true
			}
		}
	}
	open := now.Before(c.activeSince.Add(partialSettle))
	var next time.Time
	for key := range c.partial {
		if c.groups[key] == nil {
			delete(c.partial, key)
		}
	}
	for _, g := range c.sortedGroups() {
		uids, ok := halfBoundUIDs(g)
		p, watched := c.partial[g.key]
		switch {
		case !ok || g.seenWhole:
			delete(c.partial, g.key)
			continue
		case !watched && !open:
			continue
		case !watched || !slices.Equal(p.uids, uids):
			p = partialGroup{uids: uids, since: now}
			c.partial[g.key] = p
		}
		if due := p.since.Add(partialSettle); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		delete(c.partial, g.key)
		c.deletePartial(logger, g, acts)
	}
	return next
}

// lostPods reports whether group g has no job, bound pods (not being
// deleted, as halfBound counts them) fewer than its minMember, and no
// pending pod: a running gang that lost pods (or a gang whose unbound pods
// went), not a gang being bound, whose unbound pods are pending. At the
// first active cycle such a group is marked seenWhole (settlePartials), so
// that a replacement created later, which makes it half-bound, does not
// get its running pods deleted.
func lostPods(g *groupState) bool {
	if g.inc != nil || g.minMember == 0 {
		return false
	}
	bound := 0
	for _, p := range g.pods {
		switch {
		case p.pending():
			return false
		case p.node != "" && !p.evicting && !p.terminating():
			bound++
		}
	}
	return bound > 0 && bound < g.minMember
}

// halfBoundUIDs returns the sorted UIDs of the bound pods of group g when it
// is half-bound.
func halfBoundUIDs(g *groupState) ([]string, bool) {
	bound, ok := halfBound(g)
	if !ok {
		return nil, false
	}
	uids := make([]string, len(bound))
	for i, p := range bound {
		uids[i] = p.uid
	}
	slices.Sort(uids)
	return uids, true
}

// deletePartial deletes the bound pods of a half-bound group that stayed
// the same for partialSettle once this replica scheduled (settlePartials).
// A group is half-bound when it has no job, fewer bound pods than its
// minMember and a pending pod: a gang that was binding when the scheduler
// that placed it stopped, which the plugin cannot complete (it submits
// pending pods only). As after a teardown, no part of a gang runs without
// the rest; the pending pods and the pods recreated for the deleted ones
// form the next gang.
func (c *controller) deletePartial(logger klog.Logger, g *groupState, acts *actions) {
	if g == nil {
		return
	}
	bound, ok := halfBound(g)
	if !ok {
		return
	}
	orderPods(bound)
	logger.Info("Phalanx: deleting the bound pods of a partial gang that no scheduler is binding", "group", g.key,
		"bound", len(bound), "minMember", g.minMember)
	for _, p := range bound {
		c.evict(p, acts)
	}
}

// evict marks pod p as being deleted by the plugin and queues its
// deletion (counted in Stats.Evictions).
func (c *controller) evict(p *podState, acts *actions) {
	p.evicting = true
	acts.evict = append(acts.evict, p)
	c.stats.Evictions++
}

// halfBound returns the bound pods of group g (not being deleted, by the
// plugin or by anyone: podState.terminating) when the group has no job,
// fewer such bound pods than its minMember and a pending pod
// (podState.pending, as groupState.pending counts them: a gated or
// terminating pod is not pending, so bound pods beside such pods only are
// no gang being bound). Terminating bound pods are going anyway: they are
// neither counted nor deleted.
func halfBound(g *groupState) ([]*podState, bool) {
	if g.inc != nil || g.minMember == 0 {
		return nil, false
	}
	var bound []*podState
	pending := false
	for _, p := range g.pods {
		switch {
		case p.node == "":
			pending = pending || p.pending()
		case !p.evicting && !p.terminating():
			bound = append(bound, p)
		}
	}
	if !pending || len(bound) == 0 || len(bound) >= g.minMember {
		return nil, false
	}
	return bound, true
}

// leaderProbe activates one pending pod of this profile (pending: neither
// gated nor terminating) until this replica runs a PreFilter; PreEnqueue
// lets that pod through meanwhile. A leader's scheduling cycle then calls
// PreFilter for it (which refuses it like any pod without a slot) even when
// nothing else is to be scheduled, so the deletion of partial gangs
// (settlePartials) and pod conditions are not held back; a standby's queue
// is not served and the pod stays in it. Each cycle moves on to the next pending pod (groups
// in key order, pods in rank order, round the list), so that a pod that
// never reaches this plugin's PreFilter (another plugin's PreEnqueue or
// PreFilter rejects it) does not hold the replica back.
func (c *controller) leaderProbe(acts *actions) {
	var first, next *podState
	seen := false
	for _, g := range c.sortedGroups() {
		for _, p := range g.pending() {
			if first == nil {
				first = p
			}
			if seen && next == nil {
				next = p
			}
			if p.uid == c.probe {
				seen = true
			}
		}
		if next != nil {
			break
		}
	}
	if next == nil {
		next = first
	}
	c.probe = ""
	if next != nil {
		c.probe = next.uid
		acts.activatePod(next)
	}
}

// prepare moves a group towards a job: it waits for min-member pods, sends
// one scout per pod shape whose allowed nodes are unknown or stale, and
// submits the gang once every shape is measured. A waiting gang whose pods
// changed, or that has fewer pods than a raised minMember, is withdrawn and
// submitted again with its original submit time; one whose allowed sets
// changed (allowedChanged) gets its new sets in the engine at once, even
// while a shape is measured again (its sets shrunk: allowedFor), keeping
// its job and the engine's plan for it (updateAllowed), or, when the
// engine refuses that, is withdrawn and submitted again. Pods created
// after the group's gang was submitted wait until every pod of that gang
// is gone: a group has one gang at a time. A group watched as half-bound
// (settlePartials) submits no gang until its bound pods are deleted or
// bound whole.
func (c *controller) prepare(g *groupState, now time.Time, acts *actions) {
	// prev is the allowed sets of a waiting gang withdrawn above whose pods
	// are the same: only its allowed sets changed, and the engine refused
	// to change them in place (updateAllowed).
	var prev map[string][]string
	if inc := g.inc; inc != nil {
		if inc.admitted {
			switch {
			case !hasLatePods(g):
			case inc.adopted:
				// Its pods were not submitted: those it has not are
				// not late, but they still wait for it.
				g.reason = "pods not among those of the group's gang " + inc.job + ", found running and adopted, wait until every pod of that gang is gone (a group runs one gang at a time)"
			default:
				g.reason = "pods created after the group's gang " + inc.job + " was submitted wait until every pod of that gang is gone (a group runs one gang at a time)"
			}
			return
		}
		same := !c.podsChanged(g) && len(inc.pods) >= g.minMember
		if same && (!c.allowedChanged(g, now) || c.updateAllowed(g, now)) {
			c.refreshScouts(g, now, acts)
			return
		}
		if err := c.eng.cancel(inc.job, now); err != nil {
			c.err = err.Error()
		}
		delete(c.jobs, inc.job)
		g.inc = nil
		if same {
			prev = inc.allowed
		}
	}
	if _, watched := c.partial[g.key]; watched {
		// Half-bound (settlePartials): its bound pods are a partial
		// gang that the previous scheduler was binding. A gang of its
		// pending pods now would leave them running beside it for
		// good (a group with a job is not half-bound), and a bind of
		// that scheduler landing late would put a pod of the new gang
		// on a node the engine did not give it.
		g.reason = fmt.Sprintf("waiting until the bound pods of a partial gang that no scheduler is binding any more are deleted (once they stay the same for %v) or bound whole", partialSettle)
		return
	}
	pending := g.pending()
	switch {
	case g.minMember == 0:
		g.reason = "waiting for the PodGroup " + g.key + " (its minMember is unknown)"
		return
	case len(pending) < g.minMember:
		g.reason = fmt.Sprintf("waiting for pods: %d of the group's minimum %d are pending", len(pending), g.minMember)
		return
	}
	shapes := map[string][]*podState{}
	for _, p := range pending {
		shapes[p.shape] = append(shapes[p.shape], p)
	}
	measuring := c.needScouts(g, shapes, now, acts)
	switch {
	case measuring && prev != nil:
		// Its allowed sets shrank (a node changed, or a measurement on a
		// lagging snapshot rejects a node) while a shape is measured
		// again: back to the engine at once with the nodes left
		// (allowedFor), rather than out of the queue until the
		// measurement lands.
		c.submit(g, shapes, now, prev)
	case measuring || (g.neverFits && now.Before(g.retry)):
	default:
		c.submit(g, shapes, now, nil)
	}
}

// hasLatePods reports whether group g has pending pods that its admitted
// gang does not hold.
func hasLatePods(g *groupState) bool {
	for _, p := range g.pending() {
		if g.inc.pods[p.uid] == nil {
			return true
		}
	}
	return false
}

// podsChanged reports whether a waiting gang's pods are no longer the
// group's pending pods.
func (c *controller) podsChanged(g *groupState) bool {
	pending := g.pending()
	if len(pending) != len(g.inc.pods) {
		return true
	}
	for _, p := range pending {
		if g.inc.pods[p.uid] == nil {
			return true
		}
	}
	return false
}

// allowedChanged reports whether the allowed nodes of a shape of a waiting
// gang are no longer the ones submitted (allowedFor): the shape was
// measured again with another result, or a node it could serve changed
// (remeasure took the node out).
func (c *controller) allowedChanged(g *groupState, now time.Time) bool {
	for shape, nodes := range g.inc.allowed {
		if _, ok := g.allowed[shape]; ok && !slices.Equal(c.allowedFor(g, shape, g.inc.allowed, now), nodes) {
			return true
		}
	}
	return false
}

// allowedFor returns the allowed nodes of group g's shape to submit, the
// gang having been submitted before with prev (nil for a gang submitted
// afresh: its shapes are all measured). A set measured within
// Args.AllowedTTLSeconds (and not made stale since by a node change or a
// lagging snapshot: allowedSet.at zero) is taken as it is. One being
// measured again is not trusted to add a node: only the nodes of it that
// prev holds too are, so that a waiting gang's set only shrinks until a
// measurement counts (a node that changed, which remeasure takes out, is
// put back by the measurement if it still passes; one that a measurement
// on a lagging snapshot accepts is not added).
func (c *controller) allowedFor(g *groupState, shape string, prev map[string][]string, now time.Time) []string {
	a := g.allowed[shape]
	was, ok := prev[shape]
	if !ok || (!a.at.IsZero() && now.Sub(a.at) < c.args.allowedTTL()) {
		return a.nodes
	}
	return slices.DeleteFunc(slices.Clone(a.nodes), func(n string) bool { return !slices.Contains(was, n) })
}

// refreshScouts measures the shapes of a waiting gang again once their
// allowed sets are older than Args.AllowedTTLSeconds (the other Filter
// plugins' answers change as pods come and go).
func (c *controller) refreshScouts(g *groupState, now time.Time, acts *actions) {
	shapes := map[string][]*podState{}
	for shape, uids := range g.inc.shapes {
		for _, uid := range uids {
			if p := g.pods[uid]; p != nil {
				shapes[shape] = append(shapes[shape], p)
			}
		}
		orderPods(shapes[shape])
	}
	reason := g.reason
	c.needScouts(g, shapes, now, acts)
	g.reason = reason // the engine's reason still holds
}

// needScouts sends a scout for every shape without a fresh allowed set and
// reports whether any is still out. A scout that has not measured within
// the scout timeout is given up and the next pod of its shape (in pod
// order, wrapping round) is sent: the plugin cannot tell a scout that
// another plugin's PreEnqueue holds back for good from one still queued,
// and sending the same pod again would leave such a shape unmeasured.
func (c *controller) needScouts(g *groupState, shapes map[string][]*podState, now time.Time, acts *actions) bool {
	waiting := false
	for shape, pods := range shapes {
		if a, ok := g.allowed[shape]; ok && now.Sub(a.at) < c.args.allowedTTL() {
			continue
		}
		waiting = true
		uid := g.scout[shape]
		if g.pods[uid] != nil && g.isScout(uid, shape, now, c.args.scoutTimeout()) {
			continue
		}
		scout := nextScout(pods, uid)
		g.scout[shape], g.scoutSince[shape] = scout.uid, now
		acts.activatePod(scout)
		c.stats.Scouts++
	}
	if waiting {
		g.reason = "measuring which nodes the group's pods fit (other Filter plugins)"
	}
	return waiting
}

// nextScout returns the pod of pods (one shape's, in pod order) that
// follows last, the scout given up, wrapping round; the first when last
// is not among them.
func nextScout(pods []*podState, last string) *podState {
	for i, p := range pods {
		if p.uid == last {
			return pods[(i+1)%len(pods)]
		}
	}
	return pods[0]
}

// submit queues the group's pending pods as one gang, one member per
// shape, with the allowed nodes of allowedFor (prev: the sets of the
// waiting gang it replaces while its shapes are measured again, else nil).
// Such a gang that the shrunk sets leave no room for waits for the
// measurement, not as a gang that never fits.
func (c *controller) submit(g *groupState, shapes map[string][]*podState, now time.Time, prev map[string][]string) {
	g.gen++
	inc := newIncarnation(fmt.Sprintf("%s#%d", g.key, g.gen))
	for s, pods := range shapes {
		for _, p := range pods {
			inc.pods[p.uid] = p
			inc.shapes[s] = append(inc.shapes[s], p.uid)
		}
	}
	req, allowed := c.request(g, inc.job, shapes, now, prev)
	inc.allowed = allowed
	err := c.eng.submit(req, now)
	switch {
	case errors.Is(err, errNeverFits) && prev != nil:
		// The nodes a change took out leave no room: it waits for the
		// measurement under way (needScouts' reason stands).
		return
	case errors.Is(err, errNeverFits):
		// Try again (measuring the shapes again) after the TTL.
		g.reason, g.neverFits, g.retry = err.Error(), true, now.Add(c.args.allowedTTL())
		return
	case err != nil:
		g.reason = "phalanx could not queue the gang: " + err.Error()
		return
	}
	g.inc, g.neverFits = inc, false
	c.jobs[inc.job] = g
	c.stats.Submits++
}

// updateAllowed gives waiting gang g.inc, whose pods are the ones
// submitted and whose allowed sets changed (allowedChanged), its new sets
// (allowedFor, with the sets submitted as prev) in the engine: it keeps
// its job, its submit time and what the engine planned for it where the
// new sets allow it (a hold, its GPUs held on nodes still allowed and
// its budget running on; a reservation). It reports whether it did;
// when not (the new sets leave no room for the gang; the engine started
// the job, or does not know it), nothing changed, and the caller
// withdraws the gang and submits it again as before Engine.Update.
func (c *controller) updateAllowed(g *groupState, now time.Time) bool {
	inc := g.inc
	shapes := make(map[string][]*podState, len(inc.shapes))
	for s, uids := range inc.shapes {
		for _, uid := range uids {
			shapes[s] = append(shapes[s], inc.pods[uid])
		}
	}
	req, allowed := c.request(g, inc.job, shapes, now, inc.allowed)
	err := c.eng.updateAllowed(req, now)
	switch {
	case err == nil:
		inc.allowed = allowed
		return true
	case errors.Is(err, errNeverFits), errors.Is(err, errNotWaiting):
	default:
		// A field other than the sets differs, or the new spec is bad:
		// the plugin's mistake, logged; submitted again as before.
		c.err = err.Error()
	}
	return false
}

// request builds the gang of job (group g's pending pods of shapes), one
// member per shape in name order, with the allowed nodes of allowedFor
// (prev as there), which it also returns by shape.
func (c *controller) request(g *groupState, job string, shapes map[string][]*podState, now time.Time, prev map[string][]string) (gangRequest, map[string][]string) {
	req := gangRequest{ID: job, Account: g.ns, Submit: g.submit}
	allowed := make(map[string][]string, len(shapes))
	names := make([]string, 0, len(shapes))
	for s := range shapes {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		pods := shapes[s]
		a := c.allowedFor(g, s, prev, now)
		allowed[s] = a
		req.Members = append(req.Members, memberRequest{Name: s, Pods: len(pods),
			GPUsPerPod: pods[0].gpus, Allowed: nonNil(a)})
	}
	return req, allowed
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// applyPlan records the engine's starts (slots for every pod, which are then
// activated) and the reasons of the waiting gangs.
func (c *controller) applyPlan(res cycleResult, acts *actions) {
	for _, ad := range res.Starts {
		g := c.jobs[ad.Job]
		if g == nil || g.inc == nil {
			continue
		}
		inc := g.inc
		inc.admitted = true
		for shape, uids := range inc.shapes {
			pods := make([]*podState, 0, len(uids))
			for _, uid := range uids {
				pods = append(pods, inc.pods[uid])
			}
			rank := make(map[string]int, len(ad.Members[shape]))
			for r, node := range ad.Members[shape] {
				rank[node] = r // each pod of a member has its own node
			}
			for uid, node := range assignSlots(pods, ad.Members[shape]) {
				inc.slots[uid], inc.ranks[uid] = node, rank[node]
			}
		}
		for _, p := range inc.pods {
			acts.activatePod(p)
		}
		g.reason = ""
		c.stats.Admissions++
	}
	for _, w := range res.Waiting {
		if g := c.jobs[w.Job]; g != nil {
			g.reason = w.Message
		}
	}
}

// nextMeasurement returns when the first allowed set of a waiting gang (or
// the retry of a gang that never fits) is due to be measured again, after
// now. One due at now or before is already being measured again: this
// cycle's prepare sent its scout (a shape that a node change made stale
// has no measurement time at all), whose timeout wakes the loop
// (scoutDue) and whose measurement pokes it; or its group waits for
// something else (pods, its PodGroup), which pokes the loop when it
// comes. Counting it would wake the loop at once, every cycle, until the
// measurement lands.
func (c *controller) nextMeasurement(now time.Time) (time.Time, bool) {
	var due time.Time
	earliest := func(t time.Time) {
		if t.After(now) && (due.IsZero() || t.Before(due)) {
			due = t
		}
	}
	for _, g := range c.groups {
		if g.neverFits {
			earliest(g.retry)
		}
		if g.inc == nil || g.inc.admitted {
			continue
		}
		for shape := range g.inc.shapes {
			earliest(g.allowed[shape].at.Add(c.args.allowedTTL()))
		}
	}
	return due, !due.IsZero()
}

// scoutDue returns when the first scout still within the scout timeout
// reaches it: needScouts then sends another if its group still needs the
// shape measured. A scout past its timeout wakes the loop no more (its
// group may never need it again: its minMember raised above its pending
// pods, its gang admitted), so a stale entry costs no wake-up every scout
// timeout for as long as its group lives.
func (c *controller) scoutDue(now time.Time) (time.Time, bool) {
	var due time.Time
	for _, g := range c.groups {
		for shape := range g.scout {
			t := g.scoutSince[shape].Add(c.args.scoutTimeout())
			if t.After(now) && (due.IsZero() || t.Before(due)) {
				due = t
			}
		}
	}
	return due, !due.IsZero()
}

// podCondition returns the message of a pod's PodScheduled condition.
func podCondition(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

// collectStatus queues condition updates for pending pods whose condition
// (as the informer last saw it) does not carry their reason: the
// framework's failure handler may have written its own message since.
func (c *controller) collectStatus(acts *actions) {
	for _, g := range c.groups {
		msg := g.reason
		if msg == "" {
			continue
		}
		for _, p := range g.pods {
			if p.node != "" || (g.inc != nil && g.inc.slots[p.uid] != "") || p.pod == nil || podCondition(p.pod) == "phalanx: "+msg {
				continue
			}
			acts.status = append(acts.status, statusUpdate{ns: p.ns, name: p.name, uid: p.uid, msg: "phalanx: " + msg})
		}
	}
}

// replacePods has the engine move the pods of g whose bind failed again
// (Unreserve marked them), each keeping its member and rank, and activates
// them towards their new node; when no node fits, the pod retries on its own.
func (c *controller) replacePods(logger klog.Logger, g *groupState, now time.Time, acts *actions) {
	inc := g.inc
	for uid := range inc.replace {
		delete(inc.replace, uid)
		p := inc.pods[uid]
		if p == nil || inc.bound[uid] || inc.gone[uid] {
			continue
		}
		node, reason, err := c.eng.replacePod(inc.job, p.shape, inc.ranks[uid], now)
		switch {
		case err != nil:
			c.err = err.Error()
		case node == "":
			c.stats.Kept++
			logger.Info("Phalanx: no other node for a pod whose bind failed", "job", inc.job, "pod", p.name, "reason", reason)
		default:
			c.stats.Replaced++
			logger.Info("Phalanx: pod moved after a failed bind", "job", inc.job, "pod", p.name, "from", inc.slots[uid], "to", node)
			inc.slots[uid] = node
		}
		acts.activatePod(p)
	}
}
