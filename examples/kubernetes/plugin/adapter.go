package plugin

// This file is the only one that imports the Phalanx core. Everything else in
// the module speaks in Kubernetes terms (node names, pod counts, messages), so
// a rename in the core (a node ID type, the names of gang or placement types)
// is followed here and nowhere else.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
	"github.com/phalanx-sched/phalanx/topology/kube"
)

// foreignPrefix marks the engine jobs that stand for GPUs used by pods
// Phalanx did not place (other schedulers, DaemonSets, pods of a gang that
// ended while they still run). They are never scheduled: they enter the
// engine as running gangs through Snapshot and Restore.
const foreignPrefix = "~foreign/"

// foreignAccount is the fair-share account charged for foreign GPUs.
const foreignAccount = "foreign-pods"

// gangRequest is a gang in the module's terms: members of identical pods.
type gangRequest struct {
	ID      string
	Account string
	Submit  time.Time
	Members []memberRequest
}

// memberRequest is one member: Pods pods of GPUsPerPod GPUs each, each pod on
// its own node, limited to Allowed (node names; nil means every node).
type memberRequest struct {
	Name       string
	Pods       int
	GPUsPerPod int
	Allowed    []string
}

// admission is a job the engine started: for each member, one node name per
// pod, indexed by the pod's rank in the member (gang.Pod.Rank).
type admission struct {
	Job     string
	Members map[string][]string
}

// waitReason is why a job waits, in the engine's words.
type waitReason struct {
	Job     string
	Message string
}

// cycleResult is one engine cycle as the plugin needs it.
type cycleResult struct {
	Starts  []admission
	Waiting []waitReason
	// Next is when the plan can change without an event (zero: never).
	Next time.Time
}

// engineAdapter wraps the backfill engine. It is not safe for concurrent
// use: the plugin calls it under its one lock.
type engineAdapter struct {
	opts     kube.Options
	cfg      backfill.Config
	cluster  *topology.Cluster
	eng      *backfill.Engine
	nodes    map[string]*v1.Node // every GPU node ever seen, by name
	accounts map[string]bool
	foreign  map[string]int // applied foreign GPUs per node
	// degraded is the nodes kube.Load reported Down for their GPUs alone
	// (allocatable GPUs missing or zero while the capacity has some: the
	// device plugin is not serving them); setNode keeps them drained, not
	// down: a device plugin that restarts (a DaemonSet rollout) sets its
	// node's allocatable GPUs to 0 for a moment, and the pods running
	// there keep their GPUs (the kubelet kills none of them).
	degraded map[string]bool
	last     time.Time
	// restore rebuilds the engine (addNodes, setForeign, adopt):
	// backfill.Restore; a test replaces it to count or fail rebuilds.
	restore func(*topology.Cluster, backfill.Config, *backfill.Snapshot) (*backfill.Engine, error)
}

// topologyOptions returns the topology/kube options for the args' preset.
func topologyOptions(a *Args) (kube.Options, error) {
	var o kube.Options
	switch a.Topology {
	case "gke":
		o = kube.PresetGKE()
	case "aws":
		o = kube.PresetAWS()
	case "aws4":
		o = kube.PresetAWSFourLayers()
	case "nvlink":
		o = kube.PresetNVLinkClique()
	case "zone":
		o = kube.PresetZone()
	case "labels":
		if len(a.Levels) == 0 {
			return o, fmt.Errorf("phalanx args: topology \"labels\" needs levels")
		}
		o.Levels = a.Levels
	case "flat":
	default:
		return o, fmt.Errorf("phalanx args: unknown topology %q (gke, aws, aws4, nvlink, zone, labels, flat)", a.Topology)
	}
	o.GPUResource = a.GPUResource
	return o, o.Validate()
}

// modelLabels returns the node label keys that the cluster model reads for
// the args' preset: kube.Load (loadNodes, for buildCluster and nodeDefect)
// reads a node's value of each level key, telling a missing label from an
// empty one (either leaves the node out), and of each NodeSelector key
// (the presets set none). A trailing kube.LabelHostname in Args.Levels
// names the node itself and adds no level: kube.Load reads no label for
// it, so it is not returned. The loader reads no other label; of the rest
// of a node it reads the name, the GPU resource's capacity and
// allocatable count, and the readiness and cordon, which loadCopy sets
// (the controller applies those itself: setNode). nodeGeneration keys a
// node's rebuilds on these labels. It returns nil for args that do not
// validate (no engine starts on them).
func modelLabels(a *Args) []string {
	opts, err := topologyOptions(a)
	if err != nil {
		return nil
	}
	keys := slices.Clone(opts.Levels)
	if n := len(keys); n > 0 && keys[n-1] == kube.LabelHostname {
		keys = keys[:n-1]
	}
	for _, k := range slices.Sorted(maps.Keys(opts.NodeSelector)) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// newEngineAdapter builds the cluster from nodes (through the topology/kube
// preset in opts) and an empty engine on it.
func newEngineAdapter(nodes []*v1.Node, args *Args, now time.Time) (*engineAdapter, error) {
	opts, err := topologyOptions(args)
	if err != nil {
		return nil, err
	}
	cfg := backfill.DefaultConfig()
	cfg.KeepEnded = 0
	// The plugin does not signal victims or report their release
	// (Engine.Preempted), so preemption must stay off (it is by default).
	cfg.Preemption.Enabled = false
	a := &engineAdapter{opts: opts, cfg: cfg, nodes: map[string]*v1.Node{},
		accounts: map[string]bool{}, foreign: map[string]int{}, restore: backfill.Restore}
	for _, n := range nodes {
		a.nodes[n.Name] = n
	}
	c, degraded, err := a.buildCluster()
	if err != nil {
		return nil, err
	}
	a.degraded = degraded
	tree, err := fairshare.BuildTree(fairshare.TreeSpec{Accounts: []fairshare.AccountSpec{
		{Name: foreignAccount, Shares: 1}}}, cfg.FairShare)
	if err != nil {
		return nil, err
	}
	e, err := backfill.New(c, cfg, tree)
	if err != nil {
		return nil, err
	}
	a.cluster, a.eng, a.last = c, e, now
	a.accounts[foreignAccount] = true
	return a, nil
}

// buildCluster loads the known GPU nodes through topology/kube, in name order
// so that the same nodes always give the same cluster. It also returns the
// nodes kube.Load reports Down for their GPUs (allocatable missing or zero,
// capacity not): the nodes are loaded as Ready and uncordoned, since the
// controller applies readiness and cordons itself (setNode) and a node's
// copy here is only as recent as its last change of what the model reads
// (nodeGeneration: its GPU counts and the labels of modelLabels; a change
// of another label costs no rebuild, and the copy keeps the former value).
func (a *engineAdapter) buildCluster() (*topology.Cluster, map[string]bool, error) {
	names := make([]string, 0, len(a.nodes))
	for n := range a.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	list := v1.NodeList{TypeMeta: metaList()}
	for _, n := range names {
		list.Items = append(list.Items, loadCopy(a.nodes[n]))
	}
	c, st, err := loadNodes(&list, a.opts)
	if err != nil {
		return nil, nil, err
	}
	degraded := map[string]bool{}
	for _, n := range st.Down {
		degraded[n] = true
	}
	return c, degraded, nil
}

// loadCopy returns node n as buildCluster loads it: Ready and not cordoned.
func loadCopy(n *v1.Node) v1.Node {
	cp := *n
	cp.Spec.Unschedulable = false
	cp.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	return cp
}

// loadNodes runs kube.Load on a node list.
func loadNodes(list *v1.NodeList, opts kube.Options) (*topology.Cluster, kube.Status, error) {
	data, err := json.Marshal(list)
	if err != nil {
		return nil, kube.Status{}, err
	}
	opts.SkipNodesWithoutGPUs = true
	opts.Source = "kubernetes nodes"
	return kube.Load(bytes.NewReader(data), opts)
}

// nodeDefect returns why node n cannot enter the cluster model on its own
// (a missing or empty topology label, a bad GPU count), or nil, and the GPUs
// the model gives it: topology/kube reads it alone, as buildCluster reads
// every node.
func nodeDefect(args *Args, n *v1.Node) (gpus int, err error) {
	opts, err := topologyOptions(args)
	if err != nil {
		return 0, err
	}
	list := v1.NodeList{TypeMeta: metaList(), Items: []v1.Node{loadCopy(n)}}
	c, _, err := loadNodes(&list, opts)
	if err != nil {
		return 0, err
	}
	if id, ok := c.LookupNode(n.Name); ok {
		gpus = c.NodeGPUs(id)
	}
	return gpus, nil
}

// heldGPUs returns, for each of nodes that the engine knows, the number of
// GPUs that its active jobs (gangs and foreign pods) hold there. A rebuilt
// cluster holds them on the node's lowest indices (addNodes packs them), so
// a node that now has at least that many GPUs can take its new count.
func (a *engineAdapter) heldGPUs(nodes []string) map[string]int {
	ids := map[topology.NodeID]string{}
	for _, n := range nodes {
		if id, ok := a.cluster.LookupNode(n); ok {
			ids[id] = n
		}
	}
	out := map[string]int{}
	if len(ids) == 0 {
		return out
	}
	gangs, foreign := a.activeGPUs(ids)
	for name, mask := range gangs {
		out[name] += bits.OnesCount64(mask)
	}
	for name, n := range foreign {
		out[name] += n
	}
	return out
}

// lowestFree returns the n lowest GPU indices not in used.
func lowestFree(used uint64, n int) []int {
	var out []int
	for free := ^used; free != 0 && len(out) < n; free &^= 1 << uint(bits.TrailingZeros64(free)) {
		out = append(out, bits.TrailingZeros64(free))
	}
	return out
}

// packGPUs moves the GPUs that the pods of snap hold on nodes onto the
// nodes' lowest indices, keeping each pod's count: the gangs' first, in
// the snapshot's order, then the foreign pods'. Which GPUs a pod holds is
// the engine's pick (the placement's, adoption's or setForeign's), not
// Kubernetes' word (the device plugin chooses the devices), so the indices
// can be renumbered; packed, the pods on a node that lost GPUs do not keep
// it at its former size once what they hold fits its new count (heldGPUs
// counts them so).
func packGPUs(snap *backfill.Snapshot, nodes map[string]bool) {
	used := map[string]uint64{}
	for _, foreign := range []bool{false, true} {
		for gi := range snap.Gangs {
			g := &snap.Gangs[gi]
			if strings.HasPrefix(g.ID, foreignPrefix) != foreign {
				continue
			}
			for mi := range g.Members {
				for pi := range g.Members[mi].Pods {
					p := &g.Members[mi].Pods[pi]
					if !nodes[p.Node] {
						continue
					}
					gpus := lowestFree(used[p.Node], len(p.GPUs))
					for _, k := range gpus {
						used[p.Node] |= 1 << uint(k)
					}
					p.GPUs = gpus
				}
			}
		}
	}
}

// dropPlansPast drops from snap the reservations, holds and claims of
// waiting jobs that name a GPU that cluster c does not have (a node that
// lost GPUs: Restore refuses such a plan, and the rebuild with it), and
// records their jobs as plain waiting ones: the next cycle plans them
// again on the GPUs there are.
func dropPlansPast(snap *backfill.Snapshot, c *topology.Cluster) {
	dropPlans(snap, func(p *gang.PodRecord) bool {
		id, ok := c.LookupNode(p.Node)
		return ok && slices.ContainsFunc(p.GPUs, func(k int) bool { return k >= c.NodeGPUs(id) })
	})
}

// dropPlans drops from snap the reservations, holds and claims of waiting
// jobs with a pod that bad reports, and records their jobs as plain
// waiting ones: the next cycle plans them again.
func dropPlans(snap *backfill.Snapshot, bad func(*gang.PodRecord) bool) {
	past := func(g *gang.GangRecord) bool {
		for _, m := range g.Members {
			for i := range m.Pods {
				if bad(&m.Pods[i]) {
					return true
				}
			}
		}
		return false
	}
	dropped := map[string]bool{}
	snap.Reservations = slices.DeleteFunc(snap.Reservations, func(r backfill.ReservationRecord) bool {
		dropped[r.Job] = dropped[r.Job] || past(&r.Placement)
		return past(&r.Placement)
	})
	snap.Holds = slices.DeleteFunc(snap.Holds, func(h backfill.HoldRecord) bool {
		dropped[h.Job] = dropped[h.Job] || past(&h.Target)
		return past(&h.Target)
	})
	snap.Claims = slices.DeleteFunc(snap.Claims, func(cl backfill.ClaimRecord) bool {
		return past(&cl.Placement) // preemption is off: there are none
	})
	for i := range snap.Jobs {
		if j := &snap.Jobs[i]; dropped[j.ID] && (j.State == backfill.StateReserved || j.State == backfill.StateHeld) {
			j.State = backfill.StatePending
			if j.Requeues > 0 {
				j.State = backfill.StateRequeued
			}
		}
	}
}

// hasGPUs reports whether the node has GPUs the cluster model counts.
func hasGPUs(n *v1.Node, resource string) bool {
	for _, l := range []v1.ResourceList{n.Status.Allocatable, n.Status.Capacity} {
		if q, ok := l[v1.ResourceName(resource)]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}

// knows reports whether node is part of the engine's cluster.
func (a *engineAdapter) knows(node string) bool {
	_, ok := a.cluster.LookupNode(node)
	return ok
}

// addNodes rebuilds the cluster with new or relabelled nodes and moves the
// engine onto it with Snapshot and Restore (which maps nodes by name), the
// GPUs held on those nodes packed onto their lowest indices (packGPUs). A
// deleted node stays, down, until removeNodes takes it out. Pod changes
// not yet reported (a pod moved in this cycle, before syncNodes rebuilt
// the nodes kept at their former count) name nodes by number, which a
// node that joins or is relabelled can shift: they are renumbered onto
// the rebuilt cluster (renumberPodChanges). When Restore refuses the
// rebuilt cluster with the waiting
// jobs (a node that lost GPUs leaves a waiting gang no room anywhere:
// Restore refuses a job that can never fit) and takes it without those
// that a fresh engine on it refuses (refusedBy), or else without any
// waiting job, the jobs left out are withdrawn and returned: the caller
// submits them again (and learns which can never fit).
func (a *engineAdapter) addNodes(nodes []*v1.Node) (withdrawn []string, err error) {
	old := a.nodes
	a.nodes = make(map[string]*v1.Node, len(old)+len(nodes))
	for k, v := range old {
		a.nodes[k] = v
	}
	for _, n := range nodes {
		a.nodes[n.Name] = n
	}
	c, degraded, snap, err := a.rebuiltSnapshot()
	if err != nil {
		a.nodes = old
		return nil, err
	}
	changed := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		changed[n.Name] = true
	}
	packGPUs(snap, changed)
	dropPlansPast(snap, c)
	e, withdrawn, err := a.restoreOnto(c, snap)
	if err != nil {
		a.nodes = old
		return nil, err
	}
	a.cluster, a.eng, a.degraded = c, e, degraded
	return withdrawn, nil
}

// restoreOnto restores snap onto the rebuilt cluster c. When Restore
// refuses it with the waiting jobs, it tries again without those that a
// fresh engine on c refuses (refusedBy), then without any waiting job,
// and returns the jobs left out (withdrawn).
func (a *engineAdapter) restoreOnto(c *topology.Cluster, snap *backfill.Snapshot) (e *backfill.Engine, withdrawn []string, err error) {
	e, err = a.restore(c, a.cfg, snap)
	if err != nil {
		// First only the waiting jobs that the rebuilt cluster cannot
		// take (those a fresh engine on it refuses): the others keep
		// their place in the queue and their plans. Then all of them.
		var w []string
		if nf := a.refusedBy(c, snap); len(nf) > 0 {
			w = dropWaiting(snap, func(id string) bool { return nf[id] })
			if e2, err2 := a.restore(c, a.cfg, snap); err2 == nil {
				e, err, withdrawn = e2, nil, w
			}
		}
		if err != nil {
			if rest := dropWaiting(snap, func(string) bool { return true }); len(rest) > 0 {
				if e2, err2 := a.restore(c, a.cfg, snap); err2 == nil {
					e, err, withdrawn = e2, nil, append(w, rest...)
				}
			}
		}
	}
	if err != nil {
		// The cluster's totals, which change with every node that joins,
		// would make the plugin warn about the same node again.
		return nil, nil, errors.New(clusterDiff.ReplaceAllString(err.Error(), ""))
	}
	return e, withdrawn, nil
}

// removeNodes rebuilds the cluster without gone, nodes deleted from the
// API that no active job holds GPUs on (the caller checks it: the engine
// took them down, ending the gangs there, and no bound pod is left on
// them), and moves the engine onto it with Snapshot and Restore, so that
// the cluster is the live nodes' and does not grow with every node a
// cluster autoscaler ever made. The snapshot's records that name those
// nodes go with them: the down and drained lists, the nodes of the
// members' allowed and excluded sets (the nodes are gone), and the plans
// (reservations, holds) of waiting jobs on them, which are planned again
// in the next cycle, as after a node failure. Pod changes not yet
// reported name nodes by number: they are renumbered onto the rebuilt
// cluster, and a node one of them names is not removed (err). The waiting
// jobs that cannot fit the smaller cluster are withdrawn and returned, as
// addNodes does. Nothing changes when err is not nil.
func (a *engineAdapter) removeNodes(gone []string) (withdrawn []string, err error) {
	drop := make(map[string]bool, len(gone))
	for _, n := range gone {
		drop[n] = true
	}
	old := a.nodes
	a.nodes = make(map[string]*v1.Node, len(old))
	for k, v := range old {
		if !drop[k] {
			a.nodes[k] = v
		}
	}
	if len(a.nodes) == 0 {
		a.nodes = old
		return nil, errors.New("removing the deleted nodes would leave no node")
	}
	c, degraded, snap, err := a.rebuiltSnapshot()
	if err != nil {
		a.nodes = old
		return nil, err
	}
	notGone := func(n string) bool { return drop[n] }
	snap.Down = slices.DeleteFunc(snap.Down, notGone)
	snap.Drained = slices.DeleteFunc(snap.Drained, notGone)
	dropPlans(snap, func(p *gang.PodRecord) bool { return drop[p.Node] })
	for i := range snap.Jobs {
		for mi := range snap.Jobs[i].Gang.Members {
			r := &snap.Jobs[i].Gang.Members[mi].Request
			if r.Allowed, err = withoutNodes(r.Allowed, drop); err == nil {
				r.Excluded, err = withoutNodes(r.Excluded, drop)
			}
			if err != nil {
				a.nodes = old
				return nil, fmt.Errorf("job %s: %w", snap.Jobs[i].ID, err)
			}
		}
	}
	e, withdrawn, err := a.restoreOnto(c, snap)
	if err != nil {
		a.nodes = old
		return nil, err
	}
	// a.foreign keeps its entries: setForeign drops a foreign job that is
	// not wanted any more.
	a.cluster, a.eng, a.degraded = c, e, degraded
	return withdrawn, nil
}

// rebuiltSnapshot builds the cluster of a.nodes and returns it with the
// engine's snapshot, its pod changes not yet reported renumbered onto it
// (renumberPodChanges), for Restore there. The caller puts a.nodes back
// when err is not nil.
func (a *engineAdapter) rebuiltSnapshot() (c *topology.Cluster, degraded map[string]bool, snap *backfill.Snapshot, err error) {
	if c, degraded, err = a.buildCluster(); err != nil {
		return nil, nil, nil, err
	}
	snap = a.eng.Snapshot()
	if err := renumberPodChanges(snap, a.cluster, c); err != nil {
		return nil, nil, nil, err
	}
	return c, degraded, snap, nil
}

// renumberPodChanges moves the node numbers of snap's pod changes, which
// Restore keeps as they are, from cluster from onto cluster to, by name.
// It fails, changing nothing, when a node they name is not in to.
func renumberPodChanges(snap *backfill.Snapshot, from, to *topology.Cluster) error {
	ids := map[topology.NodeID]topology.NodeID{}
	for _, pc := range snap.PodChanges {
		for _, p := range slices.Concat(pc.Pods, pc.Old) {
			if _, done := ids[p.Node]; done || int(p.Node) < 0 || int(p.Node) >= from.NumNodes() {
				continue
			}
			name := from.NodeName(p.Node)
			id, ok := to.LookupNode(name)
			if !ok {
				return fmt.Errorf("node %s: a change to the pods of job %s not yet reported names it", name, pc.Job)
			}
			ids[p.Node] = id
		}
	}
	for i := range snap.PodChanges {
		pc := &snap.PodChanges[i]
		pc.Pods, pc.Old = slices.Clone(pc.Pods), slices.Clone(pc.Old)
		for _, pods := range [][]gang.Pod{pc.Pods, pc.Old} {
			for k := range pods {
				if id, ok := ids[pods[k].Node]; ok {
					pods[k].Node = id
				}
			}
		}
	}
	return nil
}

// withoutNodes returns the hostlist h without the nodes of drop (nil for
// nil: no such set).
func withoutNodes(h *string, drop map[string]bool) (*string, error) {
	if h == nil || *h == "" {
		return h, nil
	}
	names, err := hostlist.Expand(*h)
	if err != nil {
		return nil, err
	}
	kept := slices.DeleteFunc(names, func(n string) bool { return drop[n] })
	out := hostlist.Compress(kept)
	return &out, nil
}

// refusedBy returns the waiting jobs of snap that a fresh engine on
// cluster c refuses (one that can never fit c), or nil when that cannot be
// told.
func (a *engineAdapter) refusedBy(c *topology.Cluster, snap *backfill.Snapshot) map[string]bool {
	cfg := a.cfg
	if cfg.FairShare.ClusterGPUs == 0 {
		cfg.FairShare.ClusterGPUs = c.TotalGPUs() // as Restore reads it
	}
	tree, err := fairshare.BuildTree(snap.Accounts, cfg.FairShare)
	if err != nil {
		return nil
	}
	probe, err := backfill.New(c, a.cfg, tree)
	if err != nil {
		return nil
	}
	now := snap.Time
	for _, j := range snap.Jobs {
		if j.State.Waiting() && j.Submit.After(now) {
			now = j.Submit
		}
	}
	out := map[string]bool{}
	for _, j := range snap.Jobs {
		if !j.State.Waiting() {
			continue
		}
		spec, err := j.Gang.Spec(c, j.ID)
		if err == nil {
			err = probe.Submit(backfill.Job{ID: j.ID, Account: j.Account, Gang: spec, Submit: j.Submit, OnNodeFailure: backfill.Fail}, now)
		}
		if err != nil {
			out[j.ID] = true
		}
	}
	return out
}

// dropWaiting removes the waiting jobs that drop names from snap, with
// their plans and unreported hold ends, and returns their IDs in the
// engine's order.
func dropWaiting(snap *backfill.Snapshot, drop func(id string) bool) []string {
	var ids []string
	waiting := map[string]bool{}
	snap.Jobs = slices.DeleteFunc(snap.Jobs, func(j backfill.JobRecord) bool {
		if j.State.Waiting() && drop(j.ID) {
			ids = append(ids, j.ID)
			waiting[j.ID] = true
		}
		return waiting[j.ID]
	})
	snap.Reservations = slices.DeleteFunc(snap.Reservations, func(r backfill.ReservationRecord) bool { return waiting[r.Job] })
	snap.Holds = slices.DeleteFunc(snap.Holds, func(h backfill.HoldRecord) bool { return waiting[h.Job] })
	snap.HoldEnds = slices.DeleteFunc(snap.HoldEnds, func(h backfill.HoldEnd) bool { return waiting[h.Job] })
	snap.Claims = slices.DeleteFunc(snap.Claims, func(cl backfill.ClaimRecord) bool { return waiting[cl.Job] })
	return ids
}

// clusterDiff is the line of a Restore error that compares the clusters'
// sizes (backfill.Fingerprint.Diff).
var clusterDiff = regexp.MustCompile(`the cluster differs from the snapshot's: [^\n]*\n?`)

// clock returns now, or the latest time the engine saw if the wall clock went
// back: the engine refuses times that go backwards.
func (a *engineAdapter) clock(now time.Time) time.Time {
	if now.Before(a.last) {
		return a.last
	}
	a.last = now
	return now
}

// submit queues a gang. A gang that can never fit the cluster (one with
// more pods in a member than the cluster has nodes included, which the
// engine refuses as a bad job) returns an error wrapping errNeverFits with
// the reason.
func (a *engineAdapter) submit(g gangRequest, now time.Time) error {
	now = a.clock(now)
	if !a.accounts[g.Account] {
		if err := a.eng.AddAccount("", g.Account, 1); err != nil && !errors.Is(err, fairshare.ErrDuplicateAccount) {
			return err
		}
		a.accounts[g.Account] = true
	}
	j, err := a.job(g)
	if err != nil {
		return err
	}
	if j.Submit.After(now) || j.Submit.Before(backfill.MinTime) {
		j.Submit = now
	}
	return neverFits(a.eng.Submit(j, now))
}

// updateAllowed gives waiting job g.ID the allowed node sets of g's
// members (Engine.Update), g being the gang as submit built it but for
// its members' Allowed: the job keeps its ID, its submit time and what
// the engine planned for it where the new sets allow it (a hold, a
// reservation). A gang that the new sets leave no room for returns an
// error wrapping errNeverFits, as submit does, and the job keeps its old
// sets. A job that no longer waits (backfill.ErrTransition: it started)
// or that the engine does not know (backfill.ErrUnknownJob) returns an
// error wrapping errNotWaiting: nothing changed, and the caller
// withdraws the job and submits it again.
func (a *engineAdapter) updateAllowed(g gangRequest, now time.Time) error {
	j, err := a.job(g)
	if err != nil {
		return err
	}
	// The job's own submit time (submit may have moved g.Submit to the
	// time it queued the gang).
	j.Submit = time.Time{}
	err = a.eng.Update(j, a.clock(now))
	if errors.Is(err, backfill.ErrTransition) || errors.Is(err, backfill.ErrUnknownJob) {
		return fmt.Errorf("%w: %w", errNotWaiting, err)
	}
	return neverFits(err)
}

// errNotWaiting marks a job that the engine no longer has waiting (it
// started, or ended), so that its sets cannot change in place.
var errNotWaiting = errors.New("the job no longer waits in the engine")

// job builds the engine's job of gang g, with g.Submit as its submit
// time: one member per memberRequest, each pod on its own node of the
// member's allowed nodes. A member with more pods than the cluster has
// nodes returns an error wrapping errNeverFits.
func (a *engineAdapter) job(g gangRequest) (backfill.Job, error) {
	spec := gang.Spec{ID: g.ID}
	for _, m := range g.Members {
		if n := a.cluster.NumNodes(); m.Pods > n {
			// The engine refuses it as a bad job: it is a gang that
			// waits for nodes (a cluster autoscaler's), not a malformed one.
			return backfill.Job{}, fmt.Errorf("%w: job %s: member %s: needs %d nodes (one per pod); the cluster has %d",
				errNeverFits, g.ID, m.Name, m.Pods, n)
		}
		req := placement.NodesOf(m.Pods, m.GPUsPerPod)
		if m.Allowed != nil {
			set := a.cluster.NewNodeSet()
			for _, n := range m.Allowed {
				if id, ok := a.cluster.LookupNode(n); ok {
					set.Set(uint(id))
				}
			}
			// The set is what the profile's other Filter plugins let the
			// member's pods use (a scout pod measures it): reasons say so.
			req.Allowed, req.AllowedLabel = set, "rejected by the profile's other filters"
		}
		spec.Members = append(spec.Members, gang.Member{Name: m.Name, Request: req})
	}
	return backfill.Job{ID: g.ID, Account: g.Account, Gang: spec, Submit: g.Submit, OnNodeFailure: backfill.Fail}, nil
}

// neverFits returns err of Engine.Submit or Engine.Update, with
// backfill.ErrNeverFits made errNeverFits (the reason kept).
func neverFits(err error) error {
	if errors.Is(err, backfill.ErrNeverFits) {
		return fmt.Errorf("%w: %s", errNeverFits, strings.TrimPrefix(err.Error(), backfill.ErrNeverFits.Error()+": "))
	}
	return err
}

// errNeverFits marks a gang that cannot run on this cluster even when empty.
var errNeverFits = errors.New("the pod group can never fit this cluster")

// cancel withdraws a job in any waiting or active state.
func (a *engineAdapter) cancel(id string, now time.Time) error {
	return a.eng.Cancel(id, a.clock(now))
}

// started confirms that every pod of a job is bound.
func (a *engineAdapter) started(id string, now time.Time) error {
	return a.eng.Started(id, a.clock(now))
}

// finished reports that a job's pods are all gone.
func (a *engineAdapter) finished(id string, now time.Time) error {
	return a.eng.Finished(id, a.clock(now))
}

// replacePod asks the engine to move the pod of rank rank in member of job
// id to another node (Engine.ReplacePod: inside the domains the gang
// requires and the member's allowed nodes, off GPUs promised to others). It
// returns the new node, or "" and the engine's reason when no node fits
// (nothing moved).
func (a *engineAdapter) replacePod(id, member string, rank int, now time.Time) (node, reason string, err error) {
	r, err := a.eng.ReplacePod(id, member, rank, a.clock(now))
	if err != nil {
		return "", "", err
	}
	if !r.Replaced {
		return "", r.Reason.String(), nil
	}
	return a.cluster.NodeName(r.New.Node), "", nil
}

// failed ends a job that cannot go on (a bind that kept failing, a pod lost
// before the gang was whole).
func (a *engineAdapter) failed(id string, now time.Time) error {
	return a.eng.Failed(id, a.clock(now), false)
}

// active reports whether the engine holds GPUs for job id.
func (a *engineAdapter) active(id string) bool {
	st, ok := a.eng.Job(id)
	return ok && st.State.Active()
}

// held reports whether the engine knows job id at all (waiting or active).
func (a *engineAdapter) held(id string) bool {
	st, ok := a.eng.Job(id)
	return ok && !st.State.Ended()
}

// setNode brings the engine's view of a node in line with Kubernetes: down
// when not Ready (or deleted), drained when cordoned or serving no GPUs
// while it has some (degraded: new gangs cannot get them, the gangs
// running there go on). It returns the jobs a node failure ended.
func (a *engineAdapter) setNode(name string, down, drained bool, now time.Time) ([]string, error) {
	id, ok := a.cluster.LookupNode(name)
	if !ok {
		return nil, nil
	}
	drained = drained || a.degraded[name]
	st, _ := a.eng.NodeState(id)
	now = a.clock(now)
	isDown, isDrained := downDrained(st)
	var ended []string
	if down && !isDown {
		evs, err := a.eng.NodeDown(id, now)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			ended = append(ended, ev.Job)
		}
	}
	if !down && isDown {
		if err := a.eng.NodeUp(id, now); err != nil {
			return ended, err
		}
	}
	if drained && !isDrained {
		if err := a.eng.Drain(id, now); err != nil {
			return ended, err
		}
	}
	if !drained && isDrained {
		if err := a.eng.Resume(id, now); err != nil {
			return ended, err
		}
	}
	return ended, nil
}

// schedule runs one engine cycle.
func (a *engineAdapter) schedule(now time.Time) (cycleResult, error) {
	plan, err := a.eng.Schedule(a.clock(now))
	if err != nil {
		return cycleResult{}, err
	}
	var r cycleResult
	for i := range plan.Starts {
		s := &plan.Starts[i]
		ad := admission{Job: s.Job, Members: map[string][]string{}}
		for _, m := range s.Allocation.Members {
			ad.Members[m.Name] = make([]string, len(m.Assignment))
		}
		for pod := range s.Allocation.Pods() {
			ad.Members[pod.Member][pod.Rank] = a.cluster.NodeName(pod.Node)
		}
		r.Starts = append(r.Starts, ad)
	}
	for i := range plan.Waiting {
		w := &plan.Waiting[i]
		r.Waiting = append(r.Waiting, waitReason{Job: w.Job, Message: w.Message(time.Time{})})
	}
	if next, ok := a.eng.NextEvent(); ok {
		r.Next = next
	}
	return r, nil
}

// setForeign makes the engine count foreign GPUs per node (node name to GPU
// count; nodes not listed have none). The engine has no call for GPUs it did
// not place, so they enter as running one-pod gangs through Snapshot and
// Restore. A node whose foreign count exceeds its free GPUs gets what is
// free (the rest is already booked for a gang, whose pod there will fail its
// Filter and re-place the gang), and a node that is down gets none; the
// engine is rebuilt only when what it would count now differs from what it
// counts (foreignSettled), so a count that cannot be applied costs nothing
// until GPUs free up or the node comes back.
func (a *engineAdapter) setForeign(want map[string]int, now time.Time) error {
	if a.foreignSettled(want) {
		return nil
	}
	now = a.clock(now)
	snap := a.eng.Snapshot()
	if now.After(snap.Time) {
		snap.Time = now // the engine may not have seen a time yet
	}
	applied := a.withForeign(snap, want)
	e, err := a.restore(a.cluster, a.cfg, snap)
	if err != nil {
		return err
	}
	a.eng, a.foreign = e, applied
	return nil
}

// withForeign replaces the foreign jobs of snap with those of want (as
// setForeign applies it: on each node, what is free of the gangs of snap,
// none on a node the engine does not know or holds down), sorts its gangs
// as Restore wants them, and returns what it applied per node.
func (a *engineAdapter) withForeign(snap *backfill.Snapshot, want map[string]int) map[string]int {
	jobs := snap.Jobs[:0]
	for _, j := range snap.Jobs {
		if !strings.HasPrefix(j.ID, foreignPrefix) {
			jobs = append(jobs, j)
		}
	}
	gangs := snap.Gangs[:0]
	used := map[string]uint64{}
	for _, g := range snap.Gangs {
		if strings.HasPrefix(g.ID, foreignPrefix) {
			continue
		}
		gangs = append(gangs, g)
		for _, m := range g.Members {
			for _, p := range m.Pods {
				for _, k := range p.GPUs {
					used[p.Node] |= 1 << uint(k)
				}
			}
		}
	}
	snap.Jobs, snap.Gangs = jobs, gangs
	applied := map[string]int{}
	for _, node := range sortedKeys(want) {
		gpus := a.freeGPUs(node, used[node], want[node])
		if len(gpus) == 0 {
			continue
		}
		id := foreignPrefix + node
		snap.Seq++
		snap.Jobs = append(snap.Jobs, backfill.JobRecord{ID: id, Account: foreignAccount,
			State: backfill.StateRunning, Seq: snap.Seq, Submit: snap.Time, Start: snap.Time, LastCharge: snap.Time, Promised: snap.Time,
			// Ended by a failure of its node, never requeued: the engine
			// would start it on another node, where no pod runs.
			OnNodeFailure: backfill.Fail.String(),
			Gang: gang.SpecRecord{Members: []gang.MemberSpecRecord{{Name: "pods",
				Request: placement.RequestRecord{Nodes: 1, GPUsPerNode: len(gpus)}}}}})
		snap.Gangs = append(snap.Gangs, gang.GangRecord{ID: id, Members: []gang.MemberRecord{
			{Name: "pods", Want: 1, Pods: []gang.PodRecord{{Node: node, GPUs: gpus}}}}})
		applied[node] = len(gpus)
	}
	sort.Slice(snap.Gangs, func(i, j int) bool { return snap.Gangs[i].ID < snap.Gangs[j].ID })
	return applied
}

// foreignSettled reports whether the engine already counts, on every node,
// what setForeign would apply for want: the count asked for, or what is
// free of other gangs when that is less, and nothing on a node that is down.
func (a *engineAdapter) foreignSettled(want map[string]int) bool {
	var s *topology.State
	for node, n := range want {
		if n <= 0 {
			continue
		}
		have := a.foreignHeld(node)
		if have == n {
			continue
		}
		id, ok := a.cluster.LookupNode(node)
		if !ok {
			continue // a node the engine does not know: nothing to apply
		}
		if st, _ := a.eng.NodeState(id); nodeIsDown(st) {
			if have != 0 {
				return false
			}
			continue
		}
		if s == nil {
			s = a.copyState()
		}
		if min(n, have+s.FreeCount(id)) != have {
			return false
		}
	}
	for node := range a.foreign {
		if want[node] <= 0 && a.foreignHeld(node) > 0 {
			return false
		}
	}
	return true
}

// foreignHeld returns the GPUs the engine's foreign job on node holds (0 when
// it is not active, for example ended by a NodeDown).
func (a *engineAdapter) foreignHeld(node string) int {
	id := foreignPrefix + node
	if !a.active(id) {
		return 0
	}
	alloc, ok := a.eng.Allocation(id)
	if !ok {
		return 0
	}
	return alloc.GPUs()
}

// freeGPUs picks up to n GPU indices of node that no gang holds; none on a
// node the engine does not know or that is down.
func (a *engineAdapter) freeGPUs(node string, used uint64, n int) []int {
	id, ok := a.cluster.LookupNode(node)
	if !ok || n <= 0 {
		return nil
	}
	if st, _ := a.eng.NodeState(id); nodeIsDown(st) {
		return nil
	}
	return a.pickGPUs(id, used, n)
}

// pickGPUs picks up to n GPU indices of node id that are not in used,
// whether the node is up or down.
func (a *engineAdapter) pickGPUs(id topology.NodeID, used uint64, n int) []int {
	if n <= 0 {
		return nil
	}
	if total := a.cluster.NodeGPUs(id); total < 64 {
		used |= ^uint64(0) << uint(total) // indices past the node's GPUs
	}
	return lowestFree(used, n)
}

// freeGPUCount returns the free GPUs on the engine's schedulable nodes (for
// tests and logs), read from a copy of the engine's state.
func (a *engineAdapter) freeGPUCount() int {
	return a.copyState().FreeGPUs()
}

// copyState returns a copy of the engine's free state.
func (a *engineAdapter) copyState() *topology.State {
	s := topology.NewState(a.cluster)
	if err := a.eng.CopyState(s); err != nil {
		panic(fmt.Sprintf("phalanx: the engine's state does not fit its own cluster: %v", err))
	}
	return s
}

// jobNodes returns the nodes of active job id's allocation, by name (for
// tests).
func (a *engineAdapter) jobNodes(id string) []string {
	alloc, ok := a.eng.Allocation(id)
	if !ok {
		return nil
	}
	var out []string
	for pod := range alloc.Pods() {
		out = append(out, a.cluster.NodeName(pod.Node))
	}
	return out
}

// nodeStatus returns the engine's GPU count of node name and whether it is
// down or drained; ok is false for a node outside the cluster (for tests).
func (a *engineAdapter) nodeStatus(name string) (gpus int, down, drained, ok bool) {
	id, ok := a.cluster.LookupNode(name)
	if !ok {
		return 0, false, false, false
	}
	st, _ := a.eng.NodeState(id)
	down, drained = downDrained(st)
	return a.cluster.NodeGPUs(id), down, drained, true
}

// nodeIsDown says whether a node in engine state st is down.
func nodeIsDown(st backfill.NodeState) bool { d, _ := downDrained(st); return d }

// downDrained says whether a node in engine state st is down, and drained.
func downDrained(st backfill.NodeState) (down, drained bool) {
	return st == backfill.NodeDown || st == backfill.NodeDownDrained, st == backfill.NodeDrained || st == backfill.NodeDownDrained
}

// totalGPUs returns the cluster's GPUs.
func (a *engineAdapter) totalGPUs() int { return a.cluster.TotalGPUs() }

// check verifies the engine's books through its public calls (for tests):
// every GPU of the cluster is either free in the engine's state or held by
// exactly one active job's allocation, never both; each active job holds the
// GPUs its status says it holds; the engine's used count is the allocations' sum; and
// every foreign count applied is held by its foreign job.
func (a *engineAdapter) check() error {
	s := a.copyState()
	held := make([]uint64, a.cluster.NumNodes())
	used := 0
	for _, st := range a.eng.Jobs() {
		if !st.State.Active() {
			continue
		}
		n, err := a.addHeld(st.ID, held)
		if err != nil {
			return err
		}
		if n != st.GPUs {
			return fmt.Errorf("job %q holds %d GPUs, its status says %d", st.ID, n, st.GPUs)
		}
		if strings.HasPrefix(st.ID, foreignPrefix) && n != a.foreign[strings.TrimPrefix(st.ID, foreignPrefix)] {
			return fmt.Errorf("foreign job %q holds %d GPUs, %d applied", st.ID, n, a.foreign[strings.TrimPrefix(st.ID, foreignPrefix)])
		}
		used += n
	}
	if used != a.eng.UsedGPUs() || used != s.UsedGPUs() {
		return fmt.Errorf("active jobs hold %d GPUs; the engine counts %d, its state %d", used, a.eng.UsedGPUs(), s.UsedGPUs())
	}
	for i := range held {
		id := topology.NodeID(i)
		all := uint64(1)<<uint(a.cluster.NodeGPUs(id)) - 1
		if free := s.Free(id); free&held[i] != 0 || free|held[i] != all {
			return fmt.Errorf("node %s: free GPUs %b and held GPUs %b do not split its %d GPUs",
				a.cluster.NodeName(id), free, held[i], a.cluster.NodeGPUs(id))
		}
	}
	return nil
}

// addHeld adds the GPUs of active job id's allocation to held (one mask per
// node) and returns how many they are; a GPU held twice is an error.
func (a *engineAdapter) addHeld(id string, held []uint64) (int, error) {
	alloc, ok := a.eng.Allocation(id)
	if !ok {
		return 0, fmt.Errorf("active job %q has no allocation", id)
	}
	n := 0
	for _, m := range alloc.Members {
		for _, na := range m.Assignment {
			if held[na.Node]&na.GPUs != 0 {
				return 0, fmt.Errorf("node %s: GPUs %b held twice (job %q)", a.cluster.NodeName(na.Node), held[na.Node]&na.GPUs, id)
			}
			held[na.Node] |= na.GPUs
			n += bits.OnesCount64(na.GPUs)
		}
	}
	return n, nil
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if v > 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// adoptRequest is a gang that runs without a job in the engine: its pods
// were bound before this scheduler started (by the process it replaces).
// Each member's nodes are its pods' nodes in rank order. Start is when its
// first pod started running (the kubelet's status.startTime; zero when no
// pod reports one): the engine's job starts then, not at the adoption, so
// that what it reads of the job's run so far (the work a preemption would
// lose, the run time it learns when the job ends, when the job is
// estimated to end) is the gang's.
type adoptRequest struct {
	ID      string
	Account string
	Submit  time.Time
	Start   time.Time
	Members []adoptMember
}

// adoptMember is one member of an adoptRequest: one pod per node.
type adoptMember struct {
	Name       string
	GPUsPerPod int
	Nodes      []string
}

// adopt enters running gangs into the engine as running jobs on their
// pods' nodes (the engine has no call for a job it did not start, so they
// enter through Snapshot and Restore, as foreign GPUs do). Each gang gets,
// on each of its nodes, GPU indices that no other gang holds (Kubernetes
// does not say which GPUs a pod got; the engine only needs them to be
// distinct). It returns, for each request, nil when adopted or why not: a
// node outside the cluster model, a node down (unless downOK), two pods
// of one member on one node, or more GPUs than the node has free of other
// gangs. foreign is the foreign GPUs per node before the adoption (the
// adopted pods among them): the engine is restored, in the same pass,
// with those that are not the adopted gangs' pods, as setForeign would
// apply them, so that the next setForeign has nothing to change.
//
// With downOK, a gang with pods on nodes the engine holds down is adopted
// all the same, and the node failure is then applied to the engine as
// setNode applies a live one: the engine cannot hold a running job on a
// down node (Restore refuses it), so those nodes are restored up with the
// adopted gangs on them and taken down again at once (Engine.NodeDown),
// before any Schedule could use them. The engine then ends or keeps each
// such gang per its OnNodeFailure policy, as for a gang that was running
// when the node failed; failed returns, for each job a node failure hit,
// the node (the first in name order when several). The nodes are taken
// down on the restored engine before it replaces the adapter's (takeDown),
// so that the change is whole or nothing: when a node cannot be taken
// down again, err says so, the gangs on down nodes are not adopted (their
// errs say why) and only the others are, or, when they cannot be either,
// the engine is left as it was; the nodes stay down in it either way.
func (a *engineAdapter) adopt(reqs []adoptRequest, foreign map[string]int, now time.Time, downOK bool) (errs []error, failed map[string]string, err error) {
	errs = make([]error, len(reqs))
	if len(reqs) == 0 {
		return errs, nil, nil
	}
	now = a.clock(now)
	for _, r := range reqs {
		if !a.accounts[r.Account] {
			if err := a.eng.AddAccount("", r.Account, 1); err != nil && !errors.Is(err, fairshare.ErrDuplicateAccount) {
				for i := range errs {
					errs[i] = err
				}
				return errs, nil, nil
			}
			a.accounts[r.Account] = true
		}
	}
	used, _ := a.activeGPUs(nil)
	type adopted struct {
		job  backfill.JobRecord
		gang gang.GangRecord
		down []string // its nodes that the engine holds down
	}
	var ok []int
	recs := make([]adopted, len(reqs))
	for i, r := range reqs {
		job, g, down, err := a.adoptRecords(r, used, now, downOK)
		if err != nil {
			errs[i] = err
			continue
		}
		recs[i] = adopted{job, g, down}
		ok = append(ok, i)
	}
	if len(ok) == 0 {
		return errs, nil, nil
	}
	base := a.eng.Snapshot()
	if now.After(base.Time) {
		base.Time = now
	}
	a.withForeign(base, nil) // the foreign jobs are added again for each try
	// downOf returns the down nodes that the gangs idx run on, sorted.
	downOf := func(idx []int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, recs[i].down...)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	// restore restores base with the gangs idx adopted and the foreign
	// GPUs that are not theirs, and returns the foreign GPUs it applied.
	restore := func(idx []int) (*backfill.Engine, map[string]int, error) {
		snap := *base
		snap.Jobs = append([]backfill.JobRecord(nil), base.Jobs...)
		snap.Gangs = append([]gang.GangRecord(nil), base.Gangs...)
		if up := downOf(idx); len(up) > 0 {
			// Restored up, with the gangs on them: taken down again below.
			snap.Down = slices.DeleteFunc(slices.Clone(base.Down), func(n string) bool {
				_, found := slices.BinarySearch(up, n)
				return found
			})
		}
		for _, i := range idx {
			snap.Seq++
			job := recs[i].job
			job.Seq = snap.Seq
			snap.Jobs = append(snap.Jobs, job)
			snap.Gangs = append(snap.Gangs, recs[i].gang)
		}
		want := make(map[string]int, len(foreign))
		maps.Copy(want, foreign)
		for _, i := range idx {
			for _, m := range reqs[i].Members {
				for _, node := range m.Nodes {
					want[node] -= m.GPUsPerPod
				}
			}
		}
		applied := a.withForeign(&snap, want)
		e, err := a.restore(a.cluster, a.cfg, &snap)
		return e, applied, err
	}
	accepted := ok
	e, applied, rerr := restore(ok)
	if rerr != nil {
		// One gang the engine refuses must not keep the others out: try
		// them one at a time, each on top of those accepted before it.
		accepted, e = nil, nil
		for _, i := range ok {
			next, nextApplied, err := restore(append(accepted, i))
			if err != nil {
				errs[i] = errors.New(clusterDiff.ReplaceAllString(err.Error(), ""))
				continue
			}
			accepted, e, applied = append(accepted, i), next, nextApplied
		}
		if e == nil {
			return errs, nil, nil
		}
	}
	// The down nodes are taken down again on the candidate engine, before
	// it is installed, so that the engine installed never holds them up:
	// a Schedule would place gangs there. If one cannot be, the gangs on
	// down nodes are not adopted and the others are restored alone (on
	// none of them); failing that, nothing changes.
	failed, err = a.takeDown(e, downOf(accepted), now)
	if err != nil {
		var rest []int
		for _, i := range accepted {
			if len(recs[i].down) > 0 {
				errs[i] = err
			} else {
				rest = append(rest, i)
			}
		}
		if len(rest) == 0 {
			return errs, nil, err
		}
		if e, applied, rerr = restore(rest); rerr != nil {
			for _, i := range rest {
				errs[i] = errors.New(clusterDiff.ReplaceAllString(rerr.Error(), ""))
			}
			return errs, nil, err
		}
		failed = nil
	}
	a.eng, a.foreign = e, applied
	return errs, failed, err
}

// takeDown takes nodes down on engine e, a candidate not yet installed
// (adopt), at now, and returns, for each job a node failure ended, the
// node (the first of nodes, in their order, when several). It stops at the
// first node that cannot be taken down, with an error naming it.
func (a *engineAdapter) takeDown(e *backfill.Engine, nodes []string, now time.Time) (map[string]string, error) {
	var failed map[string]string
	for _, node := range nodes {
		id, ok := a.cluster.LookupNode(node)
		if !ok {
			return nil, fmt.Errorf("node %s: taking it down again after adopting the gangs on it: not in the cluster model", node)
		}
		evs, err := e.NodeDown(id, now)
		if err != nil {
			return nil, fmt.Errorf("node %s: taking it down again after adopting the gangs on it: %w", node, err)
		}
		for _, ev := range evs {
			if failed == nil {
				failed = map[string]string{}
			}
			if _, seen := failed[ev.Job]; !seen {
				failed[ev.Job] = node
			}
		}
	}
	return failed, nil
}

// activeGPUs returns, per node name (of the nodes in only; every node when
// only is nil), the GPUs that the engine's active gangs hold there, as a
// mask of GPU indices, and the number that foreign GPUs hold.
func (a *engineAdapter) activeGPUs(only map[topology.NodeID]string) (map[string]uint64, map[string]int) {
	gangs, foreign := map[string]uint64{}, map[string]int{}
	for _, st := range a.eng.Jobs() {
		if !st.State.Active() {
			continue
		}
		alloc, ok := a.eng.Allocation(st.ID)
		if !ok {
			continue
		}
		for pod := range alloc.Pods() {
			name, ok := only[pod.Node]
			switch {
			case only == nil:
				name = a.cluster.NodeName(pod.Node)
			case !ok:
				continue
			}
			if strings.HasPrefix(st.ID, foreignPrefix) {
				foreign[name] += bits.OnesCount64(pod.GPUs)
			} else {
				gangs[name] |= pod.GPUs
			}
		}
	}
	return gangs, foreign
}

// adoptRecords checks an adoptRequest against the engine (nodes known and
// up, or down when downOK, one pod of a member per node, GPUs free of the
// gangs in used) and returns its job and gang records and the nodes of it
// that the engine holds down, sorted, taking its GPUs in used.
func (a *engineAdapter) adoptRecords(r adoptRequest, used map[string]uint64, now time.Time, downOK bool) (backfill.JobRecord, gang.GangRecord, []string, error) {
	spec := gang.Spec{ID: r.ID}
	g := gang.GangRecord{ID: r.ID}
	take := map[string]uint64{}
	var down []string
	for _, m := range r.Members {
		if m.GPUsPerPod <= 0 {
			return backfill.JobRecord{}, g, nil, fmt.Errorf("its pods of shape %s ask for no GPUs", m.Name)
		}
		mr := gang.MemberRecord{Name: m.Name, Want: len(m.Nodes)}
		seen := map[string]bool{}
		for _, node := range m.Nodes {
			id, ok := a.cluster.LookupNode(node)
			if !ok {
				return backfill.JobRecord{}, g, nil, fmt.Errorf("node %s is not in Phalanx's cluster model", node)
			}
			if st, _ := a.eng.NodeState(id); nodeIsDown(st) {
				if !downOK {
					return backfill.JobRecord{}, g, nil, fmt.Errorf("node %s is down", node)
				}
				down = append(down, node)
			}
			if seen[node] {
				return backfill.JobRecord{}, g, nil, fmt.Errorf("two of its pods of one shape run on node %s (Phalanx places each on its own node)", node)
			}
			seen[node] = true
			held := used[node] | take[node]
			gpus := a.pickGPUs(id, held, m.GPUsPerPod) // on a down node too: no active gang holds its GPUs
			if len(gpus) < m.GPUsPerPod {
				return backfill.JobRecord{}, g, nil, fmt.Errorf("node %s has %d %s, %d of them held by other gangs or its other pods there: its pod there asks for %d more",
					node, a.cluster.NodeGPUs(id), a.opts.GPUResource, bits.OnesCount64(held), m.GPUsPerPod)
			}
			for _, k := range gpus {
				take[node] |= 1 << uint(k)
			}
			mr.Pods = append(mr.Pods, gang.PodRecord{Node: node, GPUs: gpus})
		}
		g.Members = append(g.Members, mr)
		spec.Members = append(spec.Members, gang.Member{Name: m.Name, Request: placement.NodesOf(len(m.Nodes), m.GPUsPerPod)})
	}
	for node, m := range take {
		used[node] |= m
	}
	submit := r.Submit
	if submit.After(now) || submit.Before(backfill.MinTime) {
		submit = now
	}
	// The gang's start, within [submit, now] (a clock skewed against the
	// pods' creation times moves it to the nearer end). Its usage is
	// charged from the adoption: what it used before was the previous
	// scheduler's to charge.
	start := r.Start
	if start.IsZero() || start.After(now) {
		start = now
	}
	if start.Before(submit) {
		start = submit
	}
	job := backfill.JobRecord{ID: r.ID, Account: r.Account, State: backfill.StateRunning,
		Submit: submit, Start: start, LastCharge: now, Promised: start,
		OnNodeFailure: backfill.Fail.String(), Gang: spec.Record(a.cluster)}
	slices.Sort(down)
	return job, g, slices.Compact(down), nil
}

// memberNodes returns, for active job id, each member's nodes by rank.
func (a *engineAdapter) memberNodes(id string) map[string][]string {
	alloc, ok := a.eng.Allocation(id)
	if !ok {
		return nil
	}
	out := map[string][]string{}
	for pod := range alloc.Pods() {
		out[pod.Member] = append(out[pod.Member], a.cluster.NodeName(pod.Node))
	}
	return out
}
