package plugin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "Phalanx"

// podGroupGVR is the scheduler-plugins PodGroup resource.
var podGroupGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

// Plugin is Phalanx as a scheduler-framework plugin. See doc.go.
type Plugin struct {
	h fwk.Handle
	c *controller
}

var (
	_ fwk.PreEnqueuePlugin  = (*Plugin)(nil)
	_ fwk.EnqueueExtensions = (*Plugin)(nil)
	_ fwk.PreFilterPlugin   = (*Plugin)(nil)
	_ fwk.FilterPlugin      = (*Plugin)(nil)
	_ fwk.PostFilterPlugin  = (*Plugin)(nil)
	_ fwk.ReservePlugin     = (*Plugin)(nil)
	_ fwk.PermitPlugin      = (*Plugin)(nil)
	_ fwk.PostBindPlugin    = (*Plugin)(nil)
	_ fwk.SignPlugin        = (*Plugin)(nil)
)

// New is the plugin factory (app.WithPlugin(plugin.Name, plugin.New)).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	var args Args
	if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
		return nil, fmt.Errorf("phalanx args: %w", err)
	}
	if err := args.Validate(); err != nil {
		return nil, err
	}
	p := &Plugin{h: h}
	status := newStatusWriter(h.ClientSet())
	act := &frameworkActor{h: h, grace: args.EvictionGracePeriodSeconds}
	p.c = newController(args, h.ProfileName(), act, status)
	act.failed = p.c.evictFailed
	f := h.SharedInformerFactory()
	pods, nodes := f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer()
	// The first cycle waits until the plugin's own handlers have been
	// given every object the informers listed (the registrations'
	// HasSynced), not only until the informers have listed them: else it
	// could see part of the pods, nodes or PodGroups (a gang adopted with
	// some of its pods, the rest counted as foreign GPUs).
	rp, err := pods.AddEventHandler(p.c.podHandlers())
	if err != nil {
		return nil, err
	}
	rn, err := nodes.AddEventHandler(p.c.nodeHandlers())
	if err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{rp.HasSynced, rn.HasSynced}
	if pg := p.podGroupInformer(ctx); pg != nil {
		synced = append(synced, pg)
	}
	p.c.synced = func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
	go status.run(ctx)
	go p.c.run(ctx)
	return p, nil
}

// podGroupInformer watches scheduler-plugins PodGroups when the API server
// serves them, and returns when the plugin's handler has been given every
// PodGroup listed (nil without the CRD: groups then take min-member from
// pod annotations).
func (p *Plugin) podGroupInformer(ctx context.Context) cache.InformerSynced {
	logger := klog.FromContext(ctx)
	cfg := p.h.KubeConfig()
	if cfg == nil {
		return nil
	}
	res, err := p.h.ClientSet().Discovery().ServerResourcesForGroupVersion(podGroupGVR.GroupVersion().String())
	if err != nil || res == nil {
		logger.Info("Phalanx: no PodGroup CRD served; min-member comes from the pod annotation", "annotation", AnnotationMinMember, "err", err)
		return nil
	}
	dc, err := dynamicClient(cfg)
	if err != nil {
		logger.Error(err, "Phalanx: PodGroup client")
		return nil
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
	inf := f.ForResource(podGroupGVR).Informer()
	reg, err := inf.AddEventHandler(p.c.podGroupHandlers())
	if err != nil {
		return nil
	}
	f.Start(ctx.Done())
	return reg.HasSynced
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// Stats returns the plugin's counters.
func (p *Plugin) Stats() Stats { return p.c.Stats() }

// SignPod refuses to sign the pods Phalanx places (each has its own node), so
// the framework never reuses another pod's result for them.
func (p *Plugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if groupKey(pod, p.c.args.GPUResource) != "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, "phalanx places this pod itself")
	}
	return nil, nil
}

// EventsToRegister: pods gated or rejected by Phalanx are moved by the
// plugin itself (Activate) when the engine admits their gang, so events only
// need to wake them for a new look; the hint skips them.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	skip := func(klog.Logger, *v1.Pod, any, any) (fwk.QueueingHint, error) { return fwk.QueueSkip, nil }
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: skip},
	}, nil
}

// lookup returns the pod's group and, when the pod's gang is admitted, its
// node; scout reports whether the pod is measuring its shape (its shape's
// scout, sent less than the scout timeout ago: one past it is an ordinary
// pod of its group, held until its gang is admitted).
func (c *controller) lookup(pod *v1.Pod) (g *groupState, node string, scout bool) {
	g = c.observePod(pod, false)
	if g == nil {
		return nil, "", false
	}
	uid := string(pod.UID)
	if g.inc != nil && g.inc.replace[uid] {
		return g, "", false // held until the engine moved it
	}
	if g.inc != nil && g.inc.slots[uid] != "" {
		return g, g.inc.slots[uid], false
	}
	ps := g.pods[uid]
	return g, "", ps != nil && g.isScout(uid, ps.shape, c.now(), c.args.scoutTimeout())
}

func (c *controller) waitStatus(g *groupState) *fwk.Status {
	msg := g.reason
	if c.eng == nil && c.err != "" {
		msg = "not started: " + c.err
	}
	if msg == "" {
		msg = "waiting for the gang to be admitted"
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "phalanx: "+msg)
}

// PreEnqueue holds a group's pods until the engine admits their gang; one
// pod per shape goes through earlier as a scout (see PostFilter), and,
// until this replica's first PreFilter, one pending pod as the leader probe
// (leaderProbe).
func (p *Plugin) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	g, node, scout := p.c.lookup(pod)
	if g == nil || node != "" || scout || (!p.c.active && string(pod.UID) == p.c.probe) {
		return nil
	}
	return p.c.waitStatus(g)
}

// scoutKey marks a scout's cycle state (a scoutMark); probeKey marks the
// probe runs of PostFilter, during which Phalanx's own Filter passes.
const (
	scoutKey fwk.StateKey = Name + "/scout"
	probeKey fwk.StateKey = Name + "/probe"
)

type marker struct{}

func (marker) Clone() fwk.StateData { return marker{} }

// scoutMark is what PreFilter records of a scout's scheduling cycle: the
// shape it measures and when the cycle began. The measurement its
// PostFilter takes counts even when the scout's timeout passed meanwhile
// (scouted): it was the scout when the cycle began. It does not count
// when a node that could serve the shape changed after the cycle began.
type scoutMark struct {
	shape string
	began time.Time
}

func (m scoutMark) Clone() fwk.StateData { return m }

// PreFilter restricts an admitted pod to the node of its rank. Its first
// call tells the plugin that this replica schedules (it leads).
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if !p.c.active {
		p.c.active = true
		p.c.poke()
	}
	g, node, scout := p.c.lookup(pod)
	switch {
	case g == nil:
		return nil, fwk.NewStatus(fwk.Skip)
	case node != "":
		return &fwk.PreFilterResult{NodeNames: sets.New(node)}, nil
	case scout:
		state.Write(scoutKey, scoutMark{shape: g.pods[string(pod.UID)].shape, began: p.c.now()})
		return nil, nil
	}
	return nil, p.c.waitStatus(g)
}

// PreFilterExtensions: none.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter accepts an admitted pod only on its node. A scout is rejected
// everywhere: its PostFilter measures its shape.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if _, err := state.Read(probeKey); err == nil {
		return nil
	}
	if _, err := state.Read(scoutKey); err == nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "phalanx: measuring where the pod group fits")
	}
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	g, node, _ := p.c.lookup(pod)
	if g == nil || ni.Node() == nil || ni.Node().Name == node {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "phalanx: the gang placed this pod on node "+node)
}

// PostFilter, for a scout (a pod its PreFilter marked as one: the scout
// when its cycle began, even if its timeout has passed since), runs the
// profile's Filter plugins on every GPU node (with the GPU count lifted,
// since GPUs are the engine's business) and records the nodes that accept
// the shape: the gang's allowed node set. For an admitted pod whose own
// node rejected it, it tears the gang down so that it is placed again.
func (p *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if d, err := state.Read(scoutKey); err == nil {
		if mark, ok := d.(scoutMark); ok {
			nodes, seen := p.probe(ctx, state, pod)
			p.c.scouted(pod, mark, nodes, seen)
			return nil, fwk.NewStatus(fwk.Unschedulable)
		}
	}
	p.c.mu.Lock()
	g, node, _ := p.c.lookup(pod)
	p.c.mu.Unlock()
	switch {
	case g == nil:
		return nil, fwk.NewStatus(fwk.Unschedulable)
	case node != "":
		why := "it was rejected there"
		if st := m.Get(node); st != nil && st.Message() != "" {
			why = st.Message()
		}
		p.c.mu.Lock()
		if g.inc != nil && g.inc.broken == "" {
			g.inc.broken = fmt.Sprintf("pod %s cannot run on its node %s: %s", pod.Name, node, why)
		}
		p.c.mu.Unlock()
		p.c.poke()
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

// probe evaluates the Filter plugins for pod on every node of the snapshot
// that has GPUs, with the node's GPU count raised so that only the other
// resources and constraints decide. It returns the nodes that accept the
// pod and every node of the snapshot as the snapshot holds it (seen: the
// scheduler's snapshot may lag the plugin's informer, see scouted).
func (p *Plugin) probe(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (fits []string, seen []*v1.Node) {
	infos, err := p.h.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, nil
	}
	gpu := v1.ResourceName(p.c.args.GPUResource)
	state.Delete(scoutKey)
	state.Write(probeKey, marker{})
	defer state.Delete(probeKey)
	ok := make([]bool, len(infos))
	p.h.Parallelizer().Until(ctx, len(infos), func(i int) {
		n := infos[i].Node()
		if n == nil || !hasGPUs(n, string(gpu)) {
			return
		}
		clone := infos[i].Snapshot()
		lifted := n.DeepCopy()
		lifted.Status.Allocatable[gpu] = *resource.NewQuantity(1<<20, resource.DecimalSI)
		clone.SetNode(lifted)
		st := p.h.RunFilterPlugins(ctx, state, pod, clone)
		ok[i] = st.IsSuccess()
		if !ok[i] {
			klog.FromContext(ctx).V(4).Info("Phalanx: a node rejects the pod shape", "pod", klog.KObj(pod), "node", n.Name, "status", st)
		}
	}, Name)
	seen = make([]*v1.Node, 0, len(infos))
	for i, fit := range ok {
		if n := infos[i].Node(); n != nil {
			seen = append(seen, n)
		}
		if fit {
			fits = append(fits, infos[i].Node().Name)
		}
	}
	sort.Strings(fits) // the snapshot's order may change between cycles
	return fits, seen
}

// scouted records a scout's measurement, taken in the scheduling cycle
// that mark describes: nodes accept its shape, and seen is every node the
// scheduler's snapshot held when it measured. It counts when the pod was
// the shape's scout as that cycle began (PreFilter wrote mark), even if
// the scout's timeout has passed since and another pod of the shape was
// sent: the measurement is as good as that pod's would be. It does not
// replace one taken in a cycle that began later (that other scout's, when
// it answered first), nor count for a pod no longer of that shape in a
// group, nor when a node that could serve the shape changed (its labels,
// taints, cordon or allocatable resources: remeasure) after the cycle
// began: the cycle's snapshot, taken as it began, holds the node as it
// was, so the shape is measured again (the pod, when still the shape's
// scout, is given up so that the next cycle sends one). The set is dated
// from the cycle's beginning. That
// snapshot may lag the plugin's informer (the scheduler's cache and this
// plugin hear of a node change each on its own, in no set order): a node
// that just joined (the reason the shape is measured again) may be missing
// from it, and a node whose change the plugin saw before the cycle began
// may be held there as it was before the change. A GPU node the plugin
// knows (not deleted) that the snapshot lacked, or held with other labels,
// taints, cordon or allocatable resources than the plugin's copy, makes
// the set stale, measured again in the next cycle; once only (while the
// same nodes are missing or differ, the set stands until
// Args.AllowedTTLSeconds or the next node change; a node that changes
// again counts as differing anew: remeasure), so that a node the
// scheduler never lists, or always lists otherwise, does not keep the
// gang measuring for ever.
func (c *controller) scouted(pod *v1.Pod, mark scoutMark, nodes []string, seen []*v1.Node) {
	c.mu.Lock()
	g, _, _ := c.lookup(pod)
	var ps *podState
	if g != nil {
		ps = g.pods[string(pod.UID)]
	}
	switch {
	case ps == nil || ps.shape != mark.shape:
	case mark.began.Before(g.allowed[mark.shape].changed):
		// Measured on a snapshot from before a node changed (its labels,
		// taints, cordon, GPUs): the answer may be wrong for that node.
		// The shape is measured again by another scout cycle.
		if g.scout[mark.shape] == string(pod.UID) {
			delete(g.scout, mark.shape)
			delete(g.scoutSince, mark.shape)
		}
	case !g.allowed[mark.shape].at.After(mark.began):
		shape := mark.shape
		missed := c.unseenNodes(seen)
		at := mark.began
		if len(missed) > 0 && !slices.Equal(missed, g.allowed[shape].missed) {
			at = time.Time{} // stale: measured again
		}
		g.allowed[shape] = allowedSet{nodes: nodes, at: at, missed: missed, changed: g.allowed[shape].changed}
		delete(g.scout, shape)
		delete(g.scoutSince, shape)
	}
	c.mu.Unlock()
	c.poke()
}

// unseenNodes returns the GPU nodes the plugin knows (not deleted) that
// are not in seen, or are there with other labels, taints, cordon or
// allocatable resources than the plugin's copy, sorted (nil when none).
func (c *controller) unseenNodes(seen []*v1.Node) []string {
	in := make(map[string]*v1.Node, len(seen))
	for _, n := range seen {
		in[n.Name] = n
	}
	var out []string
	for name, n := range c.nodes {
		if c.deleted[name] || !hasGPUs(n, c.args.GPUResource) {
			continue
		}
		if s := in[name]; s == nil || filterFieldsDiffer(s, n) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Reserve records that a pod holds its node in the scheduler's cache. A pod
// of a group without a slot (its gang was torn down after the pod's
// PreFilter, or the pod is deleted) is refused.
func (p *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	g, node, _ := p.c.lookup(pod)
	switch {
	case g == nil:
		return nil
	case node == "":
		return noSlot(g)
	}
	g.inc.reserved[string(pod.UID)] = true
	return nil
}

// noSlot refuses a pod of a group that reached Reserve or Permit without a
// slot: its gang was torn down (or withdrawn) after the pod's PreFilter, or
// the pod is deleted. Letting it through would bind it alone.
func noSlot(g *groupState) *fwk.Status {
	msg := "phalanx: the pod's gang is not admitted"
	if g.reason != "" {
		msg += ": " + g.reason
	}
	return fwk.NewStatus(fwk.Unschedulable, msg)
}

// Unreserve: a pod of an admitted gang was rejected after Reserve. Before
// Permit let it through, the gang did not assemble (its Permit timed out,
// or it was torn down): tear down. After, its bind failed: the first
// failure retries on the same node (the gang keeps its GPUs); each later one
// has the engine move the pod, keeping its rank (Engine.ReplacePod, in the
// next cycle); at Args.MaxBindAttempts the gang is torn down and its bound
// pods deleted, so no partial gang runs.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	g, slot, _ := p.c.lookup(pod)
	if ps := p.c.orphanOf(g, pod); ps != nil {
		ps.orphan = false // the bind failed: pending again, for the next gang
		p.c.changed = true
		p.c.poke()
		return
	}
	if g == nil || slot == "" {
		return
	}
	inc, uid := g.inc, string(pod.UID)
	inc.reserved[uid] = false
	if inc.passed[uid] {
		inc.passed[uid] = false
		inc.failures[uid]++
		switch {
		case inc.failures[uid] >= p.c.args.MaxBindAttempts && inc.broken == "":
			inc.broken = fmt.Sprintf("pod %s failed to bind %d times (last on node %s)", pod.Name, inc.failures[uid], node)
		case inc.failures[uid] >= 2:
			inc.replace[uid] = true
		}
	} else if inc.broken == "" {
		inc.broken = "the gang did not assemble at Permit in time"
	}
	p.c.poke()
}

// Permit holds each pod of a gang until every pod is reserved, then lets the
// whole gang through to binding at once. A pod of a group without a slot is
// refused, as in Reserve.
func (p *Plugin) Permit(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	p.c.mu.Lock()
	g, slot, _ := p.c.lookup(pod)
	switch {
	case g == nil:
		p.c.mu.Unlock()
		return nil, 0
	case slot == "":
		st := noSlot(g)
		p.c.mu.Unlock()
		return st, 0
	}
	inc := g.inc
	if inc.broken != "" {
		p.c.mu.Unlock()
		return fwk.NewStatus(fwk.Unschedulable, "phalanx: gang torn down: "+inc.broken), 0
	}
	if !inc.ready() {
		p.c.mu.Unlock()
		return fwk.NewStatus(fwk.Wait), p.c.args.permitTimeout()
	}
	var release []types.UID
	for uid := range inc.pods {
		if inc.reserved[uid] && !inc.passed[uid] && !inc.bound[uid] {
			inc.passed[uid] = true
			if uid != string(pod.UID) {
				release = append(release, types.UID(uid))
			}
		}
	}
	p.c.mu.Unlock()
	for _, uid := range release {
		if wp := p.h.GetWaitingPod(uid); wp != nil {
			wp.Allow(Name)
		}
	}
	return nil, 0
}

// PostBind records a bound pod; the last one reports the gang started,
// unless the gang is already broken (to be torn down).
func (p *Plugin) PostBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	g, slot, _ := p.c.lookup(pod)
	if ps := p.c.orphanOf(g, pod); ps != nil {
		ps.node = node
		p.c.evictOrphan(ps)
		p.c.poke()
		return
	}
	if g == nil || slot == "" {
		return
	}
	inc, uid := g.inc, string(pod.UID)
	inc.bound[uid], inc.passed[uid] = true, false
	if ps := inc.pods[uid]; ps != nil {
		ps.node = node
	}
	if inc.allBound() && !inc.running && inc.broken == "" {
		// A broken gang (a pod deleted or gated before the gang was
		// bound, a bind that kept failing) never runs whole, even when
		// its last bind lands: the next cycle tears it down.
		if err := p.c.eng.started(inc.job, p.c.now()); err != nil {
			p.c.err = err.Error()
		}
		inc.running = true
		p.c.stats.Started++
	}
}

// frameworkActor carries out a cycle's actions through the framework handle
// and the API server.
type frameworkActor struct {
	h     fwk.Handle
	grace *int64
	// failed reports a deletion the API server refused, other than for a
	// pod that is gone or was replaced (NotFound, or a Conflict on the UID
	// precondition): the controller asks again later.
	failed func(uid string)
}

func (a *frameworkActor) activate(pods map[string]*v1.Pod) {
	a.h.Activate(klog.Background(), pods)
}

func (a *frameworkActor) reject(uid, msg string) {
	if wp := a.h.GetWaitingPod(types.UID(uid)); wp != nil {
		wp.Reject(Name, msg)
	}
}

func (a *frameworkActor) nodeWarning(n *v1.Node, msg string) {
	if r := a.h.EventRecorder(); r != nil {
		r.Eventf(n, nil, v1.EventTypeWarning, "PhalanxNodeLeftOut", "Scheduling", "%s", msg)
	}
}

func (a *frameworkActor) podWarning(p *v1.Pod, msg string) {
	if r := a.h.EventRecorder(); r != nil {
		r.Eventf(p, nil, v1.EventTypeWarning, "PhalanxNotAdopted", "Scheduling", "%s", msg)
	}
}

func (a *frameworkActor) evict(ns, name, uid string) {
	u := types.UID(uid)
	opts := metav1.DeleteOptions{GracePeriodSeconds: a.grace, Preconditions: &metav1.Preconditions{UID: &u}}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := a.h.ClientSet().CoreV1().Pods(ns).Delete(ctx, name, opts)
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return
		}
		klog.Background().Error(err, "Phalanx: deleting a pod of a gang that cannot run whole (asked again later)", "pod", ns+"/"+name)
		if a.failed != nil {
			a.failed(uid)
		}
	}()
}
