package plugin

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/klog/v2"
)

// adoptNote is why a group's running pods were not adopted, and whether a
// Warning event said so.
type adoptNote struct {
	msg    string
	warned bool
}

// runningUnowned returns the bound pods of group g (not being deleted, by
// the plugin or by anyone: podState.terminating) in rank order when g has
// no job and at least minMember of them: a gang that runs without a job in
// the engine, bound before this scheduler started (or, on a standby, by
// the leader). A group with fewer bound pods is not one (halfBound handles
// those with a pending pod). Terminating pods are not adopted: their GPUs
// count as used by pods Phalanx did not place until they are gone.
func runningUnowned(g *groupState) ([]*podState, bool) {
	if g.inc != nil || g.minMember == 0 {
		return nil, false
	}
	bound := liveBound(g)
	if len(bound) == 0 || len(bound) < g.minMember {
		return nil, false
	}
	return bound, true
}

// liveBound returns the bound pods of group g that are not being deleted
// (by the plugin or by anyone) nor orphans, in rank order.
func liveBound(g *groupState) []*podState {
	var bound []*podState
	for _, p := range g.pods {
		if p.node != "" && !p.evicting && !p.orphan && !p.terminating() {
			bound = append(bound, p)
		}
	}
	orderPods(bound)
	return bound
}

// hasBound reports whether group g has a bound pod.
func hasBound(g *groupState) bool {
	for _, p := range g.pods {
		if p.node != "" {
			return true
		}
	}
	return false
}

// adoptRunning enters every running gang without a job (runningUnowned)
// into the engine as a running job on its pods' nodes, which the plugin
// then books as any gang it started: it holds the group (pods created
// later wait until every pod of it is gone), counts towards its
// namespace's fair share, is NodeDown's to end, and finishes when all its
// pods are gone. It runs in every cycle: at the first one (a restart, or
// a standby whose informers synced), and for gangs the leader binds while
// this replica stands by. A gang with a pod on a node that is down is
// adopted once this replica schedules and at once ended by that node's
// failure, as a gang running when the node failed is (see the comment in
// the body); a standby leaves it as it is. A gang with a pod on a node
// outside the cluster model that serves no GPUs (deleted, or without the
// GPU resource: deadNode) has its pods deleted once this replica has
// scheduled for partialSettle (deadGang); a standby leaves it as it is.
// A gang the engine
// cannot take (a node left out of the cluster model for a defect of its
// own, or down on a standby, two pods of one shape on one node, more GPUs
// than its nodes have free of other gangs) stays as it was, its GPUs counted as used by pods Phalanx did not
// place; a log line says why and, once this replica schedules, a Warning
// event (PhalanxNotAdopted) on the gang's first pod, once per reason.
// Either way the group is marked seenWhole until it has no bound pod.
// It returns when a deletion held back by deadGang is due (zero when none
// is).
func (c *controller) adoptRunning(logger klog.Logger, now time.Time, acts *actions) (deadAt time.Time) {
	var reqs []adoptRequest
	var groups []*groupState
	var pods [][]*podState
	seen := map[string]bool{}
	for _, g := range c.sortedGroups() {
		bound, ok := runningUnowned(g)
		if !ok {
			if !hasBound(g) {
				g.seenWhole = false
			}
			// A gang deadGang held back that lost pods since (the pod on
			// the deleted node, which PodGC force-deletes sooner than
			// partialSettle) still cannot run whole: its other bound pods
			// are deleted all the same when due.
			d, held := c.dead[g.key]
			if !held || g.inc != nil {
				delete(c.dead, g.key)
				continue
			}
			node, bound := d.node, slices.DeleteFunc(liveBound(g), func(p *podState) bool { return !d.uids[p.uid] })
			why := c.deadWhy(node)
			if why == "" || len(bound) == 0 {
				delete(c.dead, g.key)
				continue
			}
			seen[g.key] = true
			if due := c.deadGang(logger, g, bound, node, why, now, acts); !due.IsZero() && (deadAt.IsZero() || due.Before(deadAt)) {
				deadAt = due
			}
			continue
		}
		g.seenWhole = true
		seen[g.key] = true
		if node, why := c.deadNode(bound); node != "" {
			if due := c.deadGang(logger, g, bound, node, why, now, acts); !due.IsZero() && (deadAt.IsZero() || due.Before(deadAt)) {
				deadAt = due
			}
			continue
		}
		delete(c.dead, g.key)
		req := adoptRequest{ID: fmt.Sprintf("%s#%d", g.key, g.gen+1), Account: g.ns, Submit: g.submit}
		byShape := map[string]int{}
		for _, p := range bound {
			if st := podStart(p); !st.IsZero() && (req.Start.IsZero() || st.Before(req.Start)) {
				req.Start = st
			}
			i, ok := byShape[p.shape]
			if !ok {
				i = len(req.Members)
				byShape[p.shape] = i
				req.Members = append(req.Members, adoptMember{Name: p.shape, GPUsPerPod: p.gpus})
			}
			req.Members[i].Nodes = append(req.Members[i].Nodes, p.node)
		}
		reqs, groups, pods = append(reqs, req), append(groups, g), append(pods, bound)
	}
	for key := range c.notAdopted {
		if !seen[key] {
			delete(c.notAdopted, key)
		}
	}
	for key := range c.dead {
		if !seen[key] {
			delete(c.dead, key)
		}
	}
	if len(reqs) == 0 {
		return deadAt
	}
	// A gang with a pod on a node that is down (not Ready, deleted,
	// serving no GPUs: syncNodes has applied that to the engine) is
	// adopted like any other once this replica schedules, and the node's
	// failure is then applied to it as to a gang that was running when
	// the node failed (engineAdapter.adopt with downOK takes the node down
	// again under it): the engine ends it per its OnNodeFailure policy,
	// and it is torn down here and now, its pods deleted as syncNodes and
	// teardown delete them. Left out, such a gang would stay GPUs held
	// outside the engine until its node came back, never requeued nor
	// failed. A standby (!c.active) does not adopt it: its teardown would
	// delete no pod, and the group, left without a job, would be adopted
	// and torn down again in every cycle; not adopting it leaves the same
	// state at once (no job, its pods' GPUs counted as used by pods
	// Phalanx did not place), as a standby's live node failure does, and
	// the replica adopts and ends it at its first cycle once it schedules.
	errs, failed, err := c.eng.adopt(reqs, c.foreignUsage(), now, c.active)
	if err != nil {
		// The gangs on the node are not adopted (errs): tried again in
		// the next cycle. The engine still holds the node down.
		c.err = err.Error()
	}
	for i, g := range groups {
		if err := errs[i]; err != nil {
			c.notAdopted[g.key] = c.noteNotAdopted(logger, g, pods[i], err, true, acts)
			continue
		}
		delete(c.notAdopted, g.key)
		c.adopted(logger, g, reqs[i].ID, pods[i])
	}
	for _, g := range groups {
		node, ok := "", false
		if g.inc != nil {
			node, ok = failed[g.inc.job]
		}
		if !ok {
			continue
		}
		c.nodeFailed(node, []string{g.inc.job})
		logger.Info("Phalanx: tearing a gang down", "job", g.inc.job, "reason", g.inc.broken+" (found running on it and adopted)")
		c.teardown(g, now, acts)
	}
	return deadAt
}

// deadNode returns the first node, in rank order, of the bound pods of a
// group that is outside the engine's cluster model because it serves no
// GPUs at all: deleted (no Node object, or its deletion seen) or without
// the GPU resource (capacity and allocatable 0 or missing), and why. A
// node the engine knows is not one (down there, syncNodes and adopt with
// downOK end its gangs), nor is a node left out of the model for a defect
// of its own (a bad topology label or GPU count): its pods may run.
func (c *controller) deadNode(bound []*podState) (node, why string) {
	for _, p := range bound {
		if why := c.deadWhy(p.node); why != "" {
			return p.node, why
		}
	}
	return "", ""
}

// deadWhy returns why node is outside the engine's cluster model serving
// no GPUs (deadNode), or "" when it is not.
func (c *controller) deadWhy(node string) string {
	if c.eng.knows(node) {
		return ""
	}
	switch n := c.nodes[node]; {
	case n == nil || c.deleted[node]:
		return "does not exist (deleted)"
	case !hasGPUs(n, c.args.GPUResource):
		return "has no " + c.args.GPUResource + " (capacity and allocatable 0 or missing)"
	}
	return ""
}

// deadGang handles group g, running without a job with a pod on node,
// which deadNode found serving no GPUs (why): the gang cannot run whole,
// and the engine, which does not know the node, cannot adopt it and end
// it as it ends a gang on a down node. Once this replica schedules, its
// bound pods are deleted, as deletePartial deletes a partial gang's (no
// part of a gang runs without the rest), so that the GPUs its pods hold
// on live nodes return to the pool once they are gone: a log line and a
// Warning event (PhalanxNotAdopted) on its first pod say why. A standby
// deletes nothing (the leader may be binding or deleting): the gang stays
// as it is, its GPUs counted as used by pods Phalanx did not place, noted
// as not adopted (logged), until the replica schedules. Nor does a replica
// in its first partialSettle of scheduling: a node the previous leader
// bound onto just before the takeover may reach this replica's node
// informer later than its pods; deadGang logs when the deletion is due
// (no event: the deletion records the gang's one Warning) and returns it
// (zero once done, or on a standby). A gang held back is remembered
// (controller.dead): if it loses pods meanwhile (PodGC force-deletes the
// pods of a deleted node after some 40 s), its other bound pods are still
// deleted when due, as long as the node stays outside the model.
func (c *controller) deadGang(logger klog.Logger, g *groupState, bound []*podState, node, why string, now time.Time, acts *actions) time.Time {
	if d, ok := c.dead[g.key]; !ok || d.node != node {
		d = deadGroup{node: node, uids: map[string]bool{}}
		for _, p := range bound {
			d.uids[p.uid] = true
		}
		c.dead[g.key] = d
	}
	if !c.active {
		c.notAdopted[g.key] = c.noteNotAdopted(logger, g, bound,
			fmt.Errorf("node %s %s, outside Phalanx's cluster model: its pods are deleted once this replica schedules", node, why), false, acts)
		return time.Time{}
	}
	if due := c.activeSince.Add(partialSettle); now.Before(due) {
		c.notAdopted[g.key] = c.noteNotAdopted(logger, g, bound,
			fmt.Errorf("node %s %s, outside Phalanx's cluster model: its pods are deleted at %s unless the node serves GPUs by then", node, why, due.UTC().Format(time.RFC3339)), false, acts)
		return due
	}
	delete(c.notAdopted, g.key)
	delete(c.dead, g.key)
	msg := fmt.Sprintf("Phalanx deletes the %d running pods of group %s: node %s, where one of them is bound, %s, so the gang cannot run whole and Phalanx cannot adopt it; their GPUs return to the pool once they are gone",
		len(bound), g.key, node, why)
	logger.Info("Phalanx: deleting the pods of a running gang with a pod on a node outside the cluster model", "group", g.key,
		"node", node, "reason", why, "pods", len(bound))
	warned := false
	for _, p := range bound {
		if p.pod != nil && !warned {
			acts.podWarns = append(acts.podWarns, podWarning{pod: p.pod, msg: msg})
			warned = true
		}
		c.evict(p, acts)
	}
	return time.Time{}
}

// deadGroup is a gang deadGang holds back: the node outside the model
// that it runs on, and the UIDs of its bound pods then.
type deadGroup struct {
	node string
	uids map[string]bool
}

// noteNotAdopted logs why group g's running pods were not adopted when the
// reason is new, and, with warn, queues a Warning event on its first pod
// once this replica schedules (a standby writes nothing to the API).
// deadGang asks for no event while it holds a gang's deletion back: the
// deletion records the gang's one event, and a gang whose node appears
// meanwhile is adopted with none.
func (c *controller) noteNotAdopted(logger klog.Logger, g *groupState, bound []*podState, err error, warn bool, acts *actions) adoptNote {
	msg := fmt.Sprintf("Phalanx does not adopt the %d running pods of group %s as a gang (their GPUs stay counted as used by pods it did not place): %v",
		len(bound), g.key, err)
	note := c.notAdopted[g.key]
	if note.msg != msg {
		logger.Error(err, "Phalanx: a running gang cannot enter the engine", "group", g.key, "pods", len(bound))
		note = adoptNote{msg: msg}
	}
	if warn && !note.warned && c.active {
		for _, p := range bound {
			if p.pod != nil {
				acts.podWarns = append(acts.podWarns, podWarning{pod: p.pod, msg: msg})
				note.warned = true
				break
			}
		}
	}
	return note
}

// adopted books group g's running pods as the engine's running job id.
func (c *controller) adopted(logger klog.Logger, g *groupState, id string, bound []*podState) {
	inc := newIncarnation(id)
	inc.admitted, inc.running, inc.adopted = true, true, true
	for _, p := range bound {
		inc.pods[p.uid] = p
		inc.shapes[p.shape] = append(inc.shapes[p.shape], p.uid)
		inc.bound[p.uid] = true
		inc.slots[p.uid] = p.node
	}
	nodes := c.eng.memberNodes(id)
	for shape, uids := range inc.shapes {
		for r, uid := range uids {
			if r < len(nodes[shape]) && nodes[shape][r] == inc.slots[uid] {
				inc.ranks[uid] = r
			}
		}
	}
	g.gen++
	g.inc, g.reason = inc, ""
	g.scout, g.scoutSince = map[string]string{}, map[string]time.Time{}
	c.jobs[id] = g
	c.stats.Adopted++
	logger.Info("Phalanx: adopted a running gang found bound", "job", id, "pods", len(bound))
}

// podStart returns when pod p started running (the kubelet's
// status.startTime), zero when it does not say.
func podStart(p *podState) time.Time {
	if p.pod == nil || p.pod.Status.StartTime == nil {
		return time.Time{}
	}
	return p.pod.Status.StartTime.Time
}
