package plugin

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
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
