package plugin

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestNodeChangeRemeasuresServedShapes: a node that joins or changes had
// every waiting gang measure every one of its pod shapes again (a scout,
// a scheduling cycle of every Filter plugin on every node, per shape),
// including shapes the node could never serve. Two one-pod gangs wait on
// three full 8-GPU nodes: "big" (8 GPUs per pod) and "small" (2). Only the
// shapes that the joining node could serve (in the cluster model, with at
// least their GPUs per pod) are measured again.
func TestNodeChangeRemeasuresServedShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		node   func(n *v1.Node)
		scouts []string // groups measured again
	}{
		{name: "8-GPU node joins", node: func(*v1.Node) {}, scouts: []string{"ns/big", "ns/small"}},
		{name: "4-GPU node joins", node: func(n *v1.Node) {
			n.Status.Capacity, n.Status.Allocatable = gpuList("4"), gpuList("4")
		}, scouts: []string{"ns/small"}},
		{name: "node left out of the model joins", node: func(n *v1.Node) {
			delete(n.Labels, "cloud.google.com/gce-topology-subblock")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(4)
			h.addNodes(nodes[:3]...)
			for _, n := range nodes[:3] {
				h.c.onPod(foreignPod("fill-"+n.Name, n.Name, 8))
			}
			h.c.onPod(groupPod("big", "big-0", 8, 1))
			h.c.onPod(groupPod("small", "small-0", 2, 1))
			h.cycle()
			h.answerScouts()
			h.cycle()
			h.c.mu.Lock()
			for _, key := range []string{"ns/big", "ns/small"} {
				if g := h.c.groups[key]; g == nil || g.inc == nil || g.inc.admitted {
					h.c.mu.Unlock()
					t.Fatalf("group %s is not a waiting gang", key)
				}
			}
			h.c.mu.Unlock()
			n := nodes[3].DeepCopy()
			tc.node(n)
			h.addNodes(n)
			h.cycle()
			h.c.mu.Lock()
			var scouted []string
			for key, g := range h.c.groups {
				if len(g.scout) > 0 {
					scouted = append(scouted, key)
				}
			}
			h.c.mu.Unlock()
			slices.Sort(scouted)
			if !slices.Equal(scouted, tc.scouts) {
				t.Fatalf("groups measured again after %s: %v, want %v", tc.name, scouted, tc.scouts)
			}
			h.answerScouts()
			h.cycle()
			checkBooks(t, h)
		})
	}
}
