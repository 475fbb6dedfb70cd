package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	fwk "k8s.io/kube-scheduler/framework"
)

// TestDeletedPodNotRecreatedByHooks: a pod deleted while it waits at Permit
// (the informer's delete event comes first, then the framework rejects the
// waiting pod and calls Unreserve) stays deleted: the hooks called for it
// afterwards create no state for it, so the gang formed once the Job
// controller recreates the pod (a new UID) holds the new pod and not the
// deleted one, and the deleted pod itself is refused by Reserve and Permit.
func TestDeletedPodNotRecreatedByHooks(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.groupPods(4, 8)
	h.admit(ps)
	h.reserveAndPermit(ps[:3]) // w-0..w-2 wait at Permit
	node := h.slot(ps[2])
	h.c.podHandlers().DeleteFunc(ps[2])
	h.p.Unreserve(context.Background(), nil, ps[2], node)
	if st := h.p.Reserve(context.Background(), nil, ps[2], node); st.IsSuccess() {
		t.Fatal("Reserve accepted a deleted pod")
	}
	if st, _ := h.p.Permit(context.Background(), nil, ps[2], node); st.IsSuccess() || st.Code() == fwk.Wait {
		t.Fatalf("Permit let a deleted pod wait or pass: %v", st)
	}
	h.cycle() // teardown
	if s := h.c.Stats(); s.Teardowns != 1 {
		t.Fatalf("teardowns %d, want 1", s.Teardowns)
	}
	repl := groupPod("g", "w-2", 8, 4)
	repl.UID = "uid-w-2-new"
	h.c.onPod(repl)
	h.admit([]*v1.Pod{ps[0], ps[1], repl, ps[3]})
	g := h.c.groups["ns/g"]
	if g.inc == nil || !g.inc.admitted || len(g.inc.pods) != 4 || g.inc.pods["uid-w-2"] != nil || g.inc.pods["uid-w-2-new"] == nil {
		t.Fatalf("want the new gang to hold w-0, w-1, the new w-2 and w-3; it holds %v", incPods(g))
	}
	if _, ok := g.pods["uid-w-2"]; ok {
		t.Fatal("the deleted pod is back in its group")
	}
}

// TestTornDownBeforeReserveIsUnschedulable: a gang torn down while one of
// its pods is between Filter and Reserve in its scheduling cycle (the
// teardown's reject finds no waiting pod) does not let that pod through:
// Reserve and Permit find no slot for it and refuse it, so no part of the
// torn-down gang binds.
func TestTornDownBeforeReserveIsUnschedulable(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.groupPods(4, 8)
	node := h.admit(ps)["w-1"] // w-1's cycle: PreFilter and Filter pass on its node
	h.c.mu.Lock()
	h.c.groups["ns/g"].inc.broken = "pod w-0 cannot run on its node"
	h.c.mu.Unlock()
	h.cycle()
	if st := h.p.Reserve(context.Background(), nil, ps[1], node); st.IsSuccess() {
		t.Fatal("Reserve accepted a pod of a torn-down gang")
	}
	st, _ := h.p.Permit(context.Background(), nil, ps[1], node)
	if st.Code() != fwk.Unschedulable || !strings.HasPrefix(st.Message(), "phalanx: the pod's gang is not admitted") {
		t.Fatalf("Permit of a pod of a torn-down gang: %v, want Unschedulable: not admitted", st)
	}
}

func incPods(g *groupState) []string {
	if g.inc == nil {
		return nil
	}
	var out []string
	for uid := range g.inc.pods {
		out = append(out, uid)
	}
	return out
}

// TestForeignOnDownNodeNoRebuild: a foreign GPU pod bound to a node that is
// not Ready cannot be counted (the node is down), and the cycle does not
// rebuild the engine (Snapshot and Restore of every job) again and again
// for it while nothing changes.
func TestForeignOnDownNodeNoRebuild(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(4)
	nodes[3].Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown}}
	h.addNodes(nodes...)
	h.c.onPod(foreignPod("stuck", "n003", 8))
	h.cycle()
	first := h.c.eng.eng
	h.cycle()
	h.cycle()
	if h.c.eng.eng != first {
		t.Fatal("nothing changed, yet a cycle rebuilt the engine")
	}
	if free := h.c.eng.freeGPUCount(); free != 24 {
		t.Fatalf("free GPUs %d, want 24 (3 Ready nodes)", free)
	}
}

// TestRestartHalfBoundGangDeleted: the scheduler restarts while a gang was
// half bound (3 of its 4 pods have a node, the 4th is pending). The plugin
// has no job for the group and cannot complete the partial gang. Until the
// replica schedules, it deletes nothing: it activates the pending pod,
// which PreEnqueue lets through, as a leader probe. Once that pod's
// PreFilter has run (refused: it has no slot) and the bound pods have
// stayed the same for partialSettle (binds of the previous process may
// still land), the 3 bound pods are deleted, once, as a teardown does: no
// part of a gang runs without the rest. The pending pod waits with a
// reason.
func TestRestartHalfBoundGangDeleted(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.gangOfFour(3)
	h.cycle()
	h.cycle()
	if len(h.a.evicted) != 0 || h.a.activated["ns/w-3"] == 0 {
		t.Fatalf("before any PreFilter: evicted %v, w-3 activated %d times; want nothing evicted and w-3 activated", h.a.evicted, h.a.activated["ns/w-3"])
	}
	if st := h.p.PreEnqueue(context.Background(), ps[3]); !st.IsSuccess() {
		t.Fatalf("PreEnqueue of the leader probe w-3: %v, want it let through", st)
	}
	if st := h.p.PreEnqueue(context.Background(), ps[3]); !st.IsSuccess() {
		t.Fatalf("PreEnqueue of the leader probe w-3: %v, want it let through", st)
	}
	if st := h.leads(ps[3]); st.IsSuccess() {
		t.Fatal("PreFilter let w-3 through without a slot")
	}
	h.cycle()
	h.now = h.now.Add(partialSettle - 2*time.Second)
	h.cycle()
	if len(h.a.evicted) != 0 {
		t.Fatalf("evicted %v before the bound pods stayed the same for %v since the replica schedules", h.a.evicted, partialSettle)
	}
	for i := 0; i < 4; i++ {
		h.cycle()
		h.answerScouts()
	}
	want := []string{"ns/w-0", "ns/w-1", "ns/w-2"}
	if strings.Join(h.a.evicted, " ") != strings.Join(want, " ") {
		t.Fatalf("evicted %v, want %v once each", h.a.evicted, want)
	}
	if r := h.c.groups["ns/g"].reason; !strings.Contains(r, "waiting for pods") {
		t.Fatalf("the pending pod's reason %q, want it waiting for pods", r)
	}
	if st := h.p.PreEnqueue(context.Background(), ps[3]); st.IsSuccess() {
		t.Fatal("PreEnqueue let w-3 through after the replica scheduled")
	}
}

// TestRestartWholeGangKept: after a restart, a group whose bound pods reach
// its minMember (a running gang) is left alone, even with a pod of the
// group pending (a pod created after the gang started).
func TestRestartWholeGangKept(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	var late *v1.Pod
	for i := 0; i < 5; i++ {
		p := groupPod("g", "w-"+string(rune('0'+i)), 8, 4)
		if i < 4 {
			p.Spec.NodeName = nodeName(i)
		}
		h.c.onPod(p)
		late = p
	}
	h.cycle()
	h.leads(late) // PreFilter of the leader probe
	for i := 0; i < 3; i++ {
		h.cycle()
		h.answerScouts()
		h.now = h.now.Add(partialSettle)
	}
	if len(h.a.evicted) != 0 {
		t.Fatalf("evicted %v from a whole running gang", h.a.evicted)
	}
}

// TestStandbyDeletesNothing: a standby replica under leader election runs
// its informers and the plugin's loop but no scheduling cycle (no
// PreFilter). While the leader binds a 4-pod gang one pod at a time, the
// standby sees the group half-bound and deletes nothing. When it takes
// over (its first PreFilter, for another pod), the gang is whole and is
// left alone.
func TestStandbyDeletesNothing(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.groupPods(4, 8)
	for i := 0; i < 3; i++ {
		h.cycle() // scouts activated on the standby's idle queue: never answered
	}
	for i := range ps {
		b := ps[i].DeepCopy()
		b.Spec.NodeName = nodeName(i) // the leader's bind, seen by the informer
		h.c.onPod(b)
		h.cycle()
		if len(h.a.evicted) != 0 {
			t.Fatalf("with %d of 4 pods bound by the leader, the standby deleted %v", i+1, h.a.evicted)
		}
	}
	other := groupPod("", "solo", 8, 0)
	h.c.onPod(other)
	h.leads(other) // the standby leads: its first PreFilter
	h.cycle()
	h.now = h.now.Add(partialSettle)
	h.cycle()
	if len(h.a.evicted) != 0 {
		t.Fatalf("the new leader deleted %v of a whole gang", h.a.evicted)
	}
}

// TestRestartCheckOnlyOnce: a gang found running whole at a restart stays
// when it becomes half-bound later: an hour after the restart check, one
// pod of the Indexed Job succeeds and the Job creates the next index (3
// pods bound, 1 pending, minMember 4). The running pods are not deleted;
// the new pod waits until the adopted gang is gone, as pods created after
// a gang the plugin started do.
func TestRestartCheckOnlyOnce(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.gangOfFour(4)
	other := groupPod("", "solo", 8, 0)
	h.c.onPod(other)
	h.cycle()
	h.leads(other) // this replica schedules
	for i := 0; i < 3; i++ {
		h.cycle()
		h.answerScouts()
	}
	if len(h.a.evicted) != 0 {
		t.Fatalf("setup: evicted %v", h.a.evicted)
	}
	h.now = h.now.Add(time.Hour)
	h.nextIndex(ps[0])
	h.cycle()
	h.now = h.now.Add(partialSettle)
	h.cycle()
	if len(h.a.evicted) != 0 {
		t.Fatalf("running pods of a gang that was whole at the restart deleted an hour later: %v", h.a.evicted)
	}
	if want := "pods not among those of the group's gang ns/g#1, found running and adopted, wait until every pod of that gang is gone (a group runs one gang at a time)"; h.c.groups["ns/g"].reason != want {
		t.Fatalf("w-4's reason %q, want %q", h.c.groups["ns/g"].reason, want)
	}
}

// TestIdleRestartKeepsWholeGang: a replica starts while a 4-pod Indexed-Job
// gang runs whole (minMember 4) and nothing is pending, so no PreFilter
// runs for an hour. Then one pod succeeds and the Job creates the next
// index, w-4: the replica's first pending pod, activated as the leader
// probe and let through PreEnqueue. Its PreFilter makes the replica active;
// the group is half-bound at that moment (3 bound, 1 pending) but was
// adopted as a running gang (it has a job), so no pod is deleted, even
// after partialSettle, and w-4 waits until that gang is gone.
func TestIdleRestartKeepsWholeGang(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.gangOfFour(4)
	for i := 0; i < 5; i++ {
		h.cycle()
	}
	h.now = h.now.Add(time.Hour)
	next := h.nextIndex(ps[0])
	h.cycle()
	if h.a.activated["ns/w-4"] != 1 {
		t.Fatalf("w-4 activated %d times, want once as the leader probe", h.a.activated["ns/w-4"])
	}
	if st := h.p.PreEnqueue(context.Background(), next); !st.IsSuccess() {
		t.Fatalf("PreEnqueue of the leader probe w-4: %v, want it let through", st)
	}
	if st := h.leads(next); st.IsSuccess() {
		t.Fatal("PreFilter let w-4 through without a slot")
	}
	for i := 0; i < 3; i++ {
		h.cycle()
		h.now = h.now.Add(partialSettle)
	}
	if len(h.a.evicted) != 0 {
		t.Fatalf("pods of a gang that was whole at the replica's start deleted when it began to schedule: %v", h.a.evicted)
	}
	if want := "pods not among those of the group's gang ns/g#1, found running and adopted, wait until every pod of that gang is gone (a group runs one gang at a time)"; h.c.groups["ns/g"].reason != want {
		t.Fatalf("w-4's reason %q, want %q", h.c.groups["ns/g"].reason, want)
	}
}

// TestHalfBoundAtStartHealed: a standby starts while the leader binds a
// 4-pod gang (3 bound, w-3 pending): half-bound at its first engine cycle.
// The leader binds w-3 (the gang is whole: the standby adopts it as a
// running gang), then w-0 succeeds and the Job creates w-4 (half-bound
// again, with other bound pods). When the standby takes over, it deletes
// nothing.
func TestHalfBoundAtStartHealed(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.gangOfFour(3)
	h.cycle()
	b := ps[3].DeepCopy()
	b.Spec.NodeName = nodeName(3) // the leader's bind
	h.c.onPod(b)
	h.cycle()
	if g := h.c.groups["ns/g"]; g.inc == nil || !g.inc.running {
		t.Fatal("the gang is whole, yet not adopted as a running gang")
	}
	next := h.nextIndex(ps[0])
	h.cycle()
	h.leads(next) // the standby takes over
	for i := 0; i < 3; i++ {
		h.cycle()
		h.now = h.now.Add(partialSettle)
	}
	if len(h.a.evicted) != 0 {
		t.Fatalf("deleted %v of a gang that was whole before the replica began to schedule", h.a.evicted)
	}
}

// TestLeaderProbeSkipsAndRotates: until the replica's first PreFilter,
// the leader probe is never a pod the framework will not try (a gated pod,
// a terminating one), and it moves to the next pending pod each cycle, so
// that a pod rejected before this plugin's PreFilter (by another plugin)
// does not hold the replica back. Once the gate is lifted, the pod is
// pending again: the probe includes it and it counts for its group.
func TestLeaderProbeSkipsAndRotates(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	gated := groupPod("a", "gated", 8, 2) // group ns/a sorts first
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
	h.c.onPod(gated)
	term := groupPod("b", "term", 8, 2)
	term.DeletionTimestamp = &metav1.Time{Time: h.now}
	h.c.onPod(term)
	h.c.onPod(groupPod("c", "x", 8, 2)) // rejected by another plugin: never reaches PreFilter
	for i := 0; i < 3; i++ {
		p := groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
		p.Spec.NodeName = nodeName(i)
		h.c.onPod(p)
	}
	h.c.onPod(groupPod("g", "w-3", 8, 4))
	var got []string
	for i := 0; i < 4; i++ {
		acts := h.cycle()
		got = append(got, strings.Join(slices.Sorted(maps.Keys(acts.activate)), ","))
	}
	if want := "ns/x ns/w-3 ns/x ns/w-3"; strings.Join(got, " ") != want {
		t.Fatalf("activated per cycle %q, want %q", got, want)
	}
	ungated := gated.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	h.c.onPod(ungated)
	got = got[:0]
	for i := 0; i < 3; i++ {
		acts := h.cycle()
		got = append(got, strings.Join(slices.Sorted(maps.Keys(acts.activate)), ","))
	}
	if want := "ns/gated ns/x ns/w-3"; strings.Join(got, " ") != want {
		t.Fatalf("after the gate lifted, activated per cycle %q, want %q", got, want)
	}
	if want := "waiting for pods: 1 of the group's minimum 2 are pending"; h.c.groups["ns/a"].reason != want {
		t.Fatalf("ungated pod's reason %q, want %q", h.c.groups["ns/a"].reason, want)
	}
	if want := "waiting for pods: 0 of the group's minimum 2 are pending"; h.c.groups["ns/b"].reason != want {
		t.Fatalf("terminating pod's group reason %q, want %q", h.c.groups["ns/b"].reason, want)
	}
}

// TestMinMemberRaisedWhileWaiting: the PodGroup's minMember rises from 4 to
// 6 while the 4-pod gang waits in the engine: the gang is withdrawn and the
// group waits for 6 pods; it is not admitted with 4 when GPUs free up.
func TestMinMemberRaisedWhileWaiting(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	pg := func(n int64) *unstructured.Unstructured { return podGroupNS("ns", "g", n) }
	handlers := h.c.podGroupHandlers()
	handlers.AddFunc(pg(4))
	var foreign []*v1.Pod
	for i := 0; i < 5; i++ { // n000..n004 busy: the gang waits
		f := foreignPod("foreign-"+string(rune('a'+i)), nodeName(i), 8)
		foreign = append(foreign, f)
		h.c.onPod(f)
	}
	ps := make([]*v1.Pod, 4)
	for i := range ps {
		ps[i] = groupPod("g", "w-"+string(rune('0'+i)), 8, 0)
		h.c.onPod(ps[i])
	}
	h.cycle()
	h.answerScouts()
	h.cycle()
	if g := h.c.groups["ns/g"]; g.inc == nil || g.inc.admitted {
		t.Fatalf("setup: want the gang queued and waiting: %s", g.reason)
	}
	handlers.UpdateFunc(nil, pg(6))
	h.cycle()
	for _, f := range foreign {
		h.c.podHandlers().DeleteFunc(f)
	}
	h.cycle()
	h.answerScouts()
	h.cycle()
	g := h.c.groups["ns/g"]
	if g.inc != nil {
		t.Fatalf("a gang of %d pods is queued (admitted %v) though minMember is now 6", len(g.inc.pods), g.inc.admitted)
	}
	if want := "waiting for pods: 4 of the group's minimum 6 are pending"; g.reason != want {
		t.Fatalf("reason %q, want %q", g.reason, want)
	}
}

// TestLatePodsAboveMinMemberReason: pods of a group created after its gang
// was submitted (minMember 2, 4 pods created in two batches) wait until every
// pod of that gang is gone, and their reason says so.
func TestLatePodsAboveMinMemberReason(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := make([]*v1.Pod, 4)
	for i := range ps {
		ps[i] = groupPod("g", "w-"+string(rune('0'+i)), 8, 2)
	}
	h.c.onPod(ps[0])
	h.c.onPod(ps[1])
	slots := h.admit(ps[:2])
	h.reserveAndPermit(ps[:2])
	for _, p := range ps[:2] {
		h.bind(p, slots[p.Name])
	}
	h.c.onPod(ps[2])
	h.c.onPod(ps[3])
	h.cycle()
	want := "phalanx: pods created after the group's gang ns/g#1 was submitted wait until every pod of that gang is gone (a group runs one gang at a time)"
	st := h.p.PreEnqueue(context.Background(), ps[2])
	if st.IsSuccess() || st.Message() != want {
		t.Fatalf("PreEnqueue of a late pod: %v, want %q", st, want)
	}
	for _, p := range ps[:2] {
		h.c.podHandlers().DeleteFunc(p)
	}
	h.admit(ps[2:])
}

// TestEvictionRetried: the API server refuses the deletion of a pod that a
// teardown evicts (the actor reports it): the plugin asks again once the
// backoff (5 s, then 10 s) has passed, and again after a second refusal,
// and stops once the pod is gone.
func TestEvictionRetried(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.groupPods(2, 8)
	slots := h.admit(ps)
	h.reserveAndPermit(ps)
	for _, p := range ps {
		h.bind(p, slots[p.Name])
	}
	h.c.mu.Lock()
	h.c.groups["ns/g"].inc.broken = "test: node failure"
	h.c.mu.Unlock()
	h.cycle()
	want := []string{"ns/w-0", "ns/w-1"}
	if strings.Join(h.a.evicted, " ") != strings.Join(want, " ") {
		t.Fatalf("evicted %v at the teardown, want %v", h.a.evicted, want)
	}
	h.c.evictFailed("uid-w-1") // the API server refused to delete w-1
	h.cycle()                  // 1 s later: not yet
	if len(h.a.evicted) != 2 {
		t.Fatalf("evicted %v: asked again before the backoff", h.a.evicted)
	}
	h.now = h.now.Add(4 * time.Second)
	h.cycle()
	want = append(want, "ns/w-1")
	if strings.Join(h.a.evicted, " ") != strings.Join(want, " ") {
		t.Fatalf("evicted %v 6 s after the failure, want %v", h.a.evicted, want)
	}
	h.c.evictFailed("uid-w-1") // refused again: 10 s
	h.now = h.now.Add(8 * time.Second)
	h.cycle()
	if len(h.a.evicted) != 3 {
		t.Fatalf("evicted %v: asked again before the second backoff", h.a.evicted)
	}
	h.now = h.now.Add(2 * time.Second)
	h.cycle()
	want = append(want, "ns/w-1")
	if strings.Join(h.a.evicted, " ") != strings.Join(want, " ") {
		t.Fatalf("evicted %v 11 s after the second failure, want %v", h.a.evicted, want)
	}
	h.c.evictFailed("uid-w-1")
	h.c.podHandlers().DeleteFunc(ps[1]) // deleted after all
	h.now = h.now.Add(time.Minute)
	h.cycle()
	if len(h.a.evicted) != 4 {
		t.Fatalf("evicted %v: a pod already gone was deleted again", h.a.evicted)
	}
}

// podGroupNS is PodGroup namespace/name as its informer hands it over,
// with minMember n.
func podGroupNS(namespace, name string, n int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"minMember": n}}}
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}
