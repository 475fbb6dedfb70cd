package plugin

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// This file drives the controller without a cluster: the informer handlers
// are called directly, the engine cycle runs on demand with a fake clock,
// and the plugin's hooks are called as the framework would call them. It
// is for races and restarts that the scenarios on a real API server cannot
// time.

// recordingActor records what the cycles asked of the framework and the
// API server.
type recordingActor struct {
	activated map[string]int // "ns/name" -> times activated
	rejected  []string       // "uid: message"
	evicted   []string       // "ns/name"
	warnings  []string       // "node: message"
	podWarns  []string       // "ns/name: message"
}

func (a *recordingActor) activate(p map[string]*v1.Pod) {
	for k := range p {
		a.activated[k]++
	}
}
func (a *recordingActor) reject(uid, msg string)     { a.rejected = append(a.rejected, uid+": "+msg) }
func (a *recordingActor) evict(ns, name, uid string) { a.evicted = append(a.evicted, ns+"/"+name) }
func (a *recordingActor) nodeWarning(n *v1.Node, msg string) {
	a.warnings = append(a.warnings, n.Name+": "+msg)
}
func (a *recordingActor) podWarning(p *v1.Pod, msg string) {
	a.podWarns = append(a.podWarns, p.Namespace+"/"+p.Name+": "+msg)
}

// allowAllPod is a waiting pod whose Allow does nothing.
type allowAllPod struct{ fwk.WaitingPod }

func (allowAllPod) Allow(string) {}

// waitingHandle is a framework handle that only knows waiting pods.
type waitingHandle struct{ fwk.Handle }

func (waitingHandle) GetWaitingPod(types.UID) fwk.WaitingPod { return allowAllPod{} }

// hookEnv is a controller and its plugin on a fake clock.
type hookEnv struct {
	t   *testing.T
	c   *controller
	p   *Plugin
	a   *recordingActor
	now time.Time
}

func newHookEnv(t *testing.T, args Args) *hookEnv {
	t.Helper()
	if err := args.Validate(); err != nil {
		t.Fatal(err)
	}
	a := &recordingActor{activated: map[string]int{}}
	c := newController(args, "phalanx-scheduler", a, nil)
	h := &hookEnv{t: t, c: c, a: a, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c.now = func() time.Time { return h.now }
	h.p = &Plugin{h: waitingHandle{}, c: c}
	return h
}

// addNodes delivers node add events.
func (h *hookEnv) addNodes(nodes ...*v1.Node) {
	for _, n := range nodes {
		h.c.onNode(n, false)
	}
}

// groupPod is a pending pod of this profile in group group (none when ""),
// with the min-member annotation when min > 0; its UID is "uid-"+name.
func groupPod(group string, name string, gpus int64, min int) *v1.Pod {
	p := pod(name, map[string]string{}, map[string]string{}, gpus)
	if group != "" {
		p.Labels[LabelPodGroup] = group
	}
	if min > 0 {
		p.Annotations[AnnotationMinMember] = fmt.Sprint(min)
	}
	p.UID = types.UID("uid-" + name)
	p.Spec.SchedulerName = "phalanx-scheduler"
	p.CreationTimestamp = metav1.NewTime(time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC))
	return p
}

// gangOfFour adds to the controller the four pods w-0 .. w-3 of group g
// (8 GPUs each, minMember 4), the first bound of them on nodes n000, n001
// ..., the others pending, and returns them.
func (h *hookEnv) gangOfFour(bound int) []*v1.Pod {
	ps := make([]*v1.Pod, 4)
	for i := range ps {
		ps[i] = groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
		if i < bound {
			ps[i].Spec.NodeName = nodeName(i)
		}
		h.c.onPod(ps[i])
	}
	return ps
}

// nextIndex ends pod done (succeeded) and adds the Indexed Job's next pod
// of group g, w-4, pending, as a Job with more completions than
// parallelism does; it returns w-4.
func (h *hookEnv) nextIndex(done *v1.Pod) *v1.Pod {
	ended := done.DeepCopy()
	ended.Status.Phase = v1.PodSucceeded
	h.c.onPod(ended)
	next := groupPod("g", "w-4", 8, 4)
	h.c.onPod(next)
	return next
}

// foreignPod is a pod of the default scheduler bound to node.
func foreignPod(name, node string, gpus int64) *v1.Pod {
	p := groupPod("", name, gpus, 0)
	p.Spec.SchedulerName = "default-scheduler"
	p.Spec.NodeName = node
	return p
}

// groupPods creates n pods w-0... of group g (minMember n) and delivers
// their add events.
func (h *hookEnv) groupPods(n int, gpus int64) []*v1.Pod {
	ps := make([]*v1.Pod, n)
	for i := range ps {
		ps[i] = groupPod("g", fmt.Sprintf("w-%d", i), gpus, n)
		h.c.onPod(ps[i])
	}
	return ps
}

// cycle advances the clock by a second, runs one engine cycle and applies
// its actions.
func (h *hookEnv) cycle() actions {
	h.now = h.now.Add(time.Second)
	acts, _ := h.c.cycle(klog.Background())
	acts.apply(h.a, nil)
	return acts
}

// answerScouts answers every scout in flight with all known, undeleted
// nodes (no other Filter plugin rejects anything).
func (h *hookEnv) answerScouts() {
	names := h.knownNodes()
	h.answerScoutsAs(names, names)
}

// answerScoutsAs answers every scout in flight as a scheduler whose
// snapshot held the nodes seen (each as the controller knows it, or a
// bare node of that name when it knows none), of which fits accept the
// scout's shape; it returns how many scouts it answered.
func (h *hookEnv) answerScoutsAs(fits, seen []string) int {
	h.c.mu.Lock()
	snap := make([]*v1.Node, 0, len(seen))
	for _, name := range seen {
		n := h.c.nodes[name]
		if n == nil {
			n = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		snap = append(snap, n)
	}
	var todo []*v1.Pod
	var marks []scoutMark
	for _, g := range h.c.groups {
		for shape, uid := range g.scout {
			if ps := g.pods[uid]; ps != nil && ps.pod != nil && g.isScout(uid, shape, h.now, h.c.args.scoutTimeout()) {
				todo = append(todo, ps.pod)
				marks = append(marks, scoutMark{shape: shape, began: h.now})
			}
		}
	}
	h.c.mu.Unlock()
	for i, p := range todo {
		h.c.scouted(p, marks[i], fits, snap)
	}
	return len(todo)
}

// knownNodes returns the nodes the controller knows and that are not
// deleted: what the scheduler's snapshot holds once it caught up with the
// informer.
func (h *hookEnv) knownNodes() []string {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	var names []string
	for n := range h.c.nodes {
		if !h.c.deleted[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// admit runs the cycles that take group pods from pending to admitted
// (scouts answered), and fails the test unless every pod has a slot.
func (h *hookEnv) admit(pods []*v1.Pod) map[string]string {
	h.t.Helper()
	h.cycle()
	h.answerScouts()
	h.cycle()
	slots := map[string]string{}
	for _, p := range pods {
		s := h.slot(p)
		if s == "" {
			h.c.mu.Lock()
			reason := h.c.groups[groupKey(p, h.c.args.GPUResource)].reason
			h.c.mu.Unlock()
			h.t.Fatalf("pod %s not admitted: %s", p.Name, reason)
		}
		slots[p.Name] = s
	}
	return slots
}

// slot returns the node PreFilter restricts the pod to ("" when none).
func (h *hookEnv) slot(p *v1.Pod) string {
	r, st := h.p.PreFilter(context.Background(), nil, p, nil)
	if !st.IsSuccess() || r == nil {
		return ""
	}
	for n := range r.NodeNames {
		return n
	}
	return ""
}

// leads runs PreFilter for p, as this replica's first scheduling cycle
// does once it leads (the plugin learns that it schedules), and reports
// the status.
func (h *hookEnv) leads(p *v1.Pod) *fwk.Status {
	_, st := h.p.PreFilter(context.Background(), framework.NewCycleState(), p, nil)
	return st
}

// reserveAndPermit runs Reserve and Permit for each pod on its slot.
func (h *hookEnv) reserveAndPermit(pods []*v1.Pod) {
	h.t.Helper()
	for _, p := range pods {
		n := h.slot(p)
		if n == "" {
			h.t.Fatalf("pod %s has no slot", p.Name)
		}
		h.p.Reserve(context.Background(), nil, p, n)
		h.p.Permit(context.Background(), nil, p, n)
	}
}

// bind runs PostBind and delivers the bound pod's update event.
func (h *hookEnv) bind(p *v1.Pod, node string) *v1.Pod {
	b := p.DeepCopy()
	b.Spec.NodeName = node
	h.p.PostBind(context.Background(), nil, p, node)
	h.c.onPod(b)
	return b
}

// setAllocatable reports node n with its allocatable GPUs set to gpus (a
// GPU lost or back, the capacity unchanged) to the controller.
func (h *hookEnv) setAllocatable(n *v1.Node, gpus string) {
	c := n.DeepCopy()
	c.Status.Allocatable = gpuList(gpus)
	h.c.onNode(c, false)
}
