package plugin

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestForeignPodsOnFailedNodeStayThere: a pod of another scheduler holds
// 4 GPUs of n000, which fails (NotReady, or deleted). The engine must not
// requeue the GPUs it counts for that pod and start them on another node,
// which nothing runs on: the other nodes keep all their GPUs free, and
// once n000 is back (the pod still bound) its 4 GPUs count there again.
func TestForeignPodsOnFailedNodeStayThere(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(h *hookEnv, n *v1.Node)
	}{
		{name: "NotReady", fail: func(h *hookEnv, n *v1.Node) {
			nr := n.DeepCopy()
			nr.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
			h.c.onNode(nr, false)
		}},
		{name: "deleted", fail: func(h *hookEnv, n *v1.Node) { h.c.nodeHandlers().DeleteFunc(n.DeepCopy()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(3)
			h.addNodes(nodes...)
			h.c.onPod(foreignPod("other", "n000", 4))
			h.cycle()
			tc.fail(h, nodes[0])
			h.cycle()
			h.cycle()
			if free := h.c.eng.freeGPUCount(); free != 16 {
				t.Fatalf("n000 down under a foreign pod: %d GPUs free on n001 and n002, want 16 (jobs on nodes: %v)", free, h.c.eng.jobNodes(foreignPrefix+"n000"))
			}
			checkBooks(t, h)
			h.c.onNode(nodes[0], false)
			h.cycle()
			if free := h.c.eng.freeGPUCount(); free != 20 {
				t.Fatalf("n000 back with the foreign pod (4) on it: %d GPUs free, want 20", free)
			}
			checkBooks(t, h)
		})
	}
}
