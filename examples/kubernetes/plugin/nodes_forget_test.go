package plugin

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// nodeBooks returns the sizes of the controller's node maps and of the
// engine's cluster and node list.
func (h *hookEnv) nodeBooks() (ctrl, engine int) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	ctrl = max(len(h.c.nodes), len(h.c.deleted), len(h.c.nodeGen), len(h.c.leftOut), len(h.c.shrunk))
	return ctrl, max(h.c.eng.cluster.NumNodes(), len(h.c.eng.nodes))
}

// TestDeletedNodesForgotten: a cluster autoscaler adds and deletes nodes
// with fresh names all day. 200 node names come and go, 8 live at once
// (and, in one case, a non-GPU node beside each): the controller's node
// books and the engine's cluster stay bounded by the live nodes instead
// of keeping every deleted node down forever. A foreign pod on a deleted
// node keeps it (down) until the pod is gone; the engine's books stay
// whole throughout.
func TestDeletedNodesForgotten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cpuToo  bool // a node without GPUs comes and goes with each GPU node
		foreign bool // a foreign pod runs on the first node when it is deleted
	}{
		{name: "GPU nodes"},
		{name: "with non-GPU nodes", cpuToo: true},
		{name: "a pod left on a deleted node", foreign: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const total, live = 200, 8
			h := newHookEnv(t, Args{})
			nodes := testNodes(total)
			cpu := func(n *v1.Node) *v1.Node {
				c := n.DeepCopy()
				c.Name = "cpu-" + n.Name
				c.Status.Capacity, c.Status.Allocatable = nil, nil
				return c
			}
			for _, n := range nodes[:live] {
				h.addNodes(n)
				if tc.cpuToo {
					h.addNodes(cpu(n))
				}
			}
			var stray *v1.Pod
			if tc.foreign {
				stray = foreignPod("stray", nodes[0].Name, 4)
				h.c.onPod(stray)
			}
			h.cycle()
			for i := live; i < total; i++ {
				h.addNodes(nodes[i])
				h.c.nodeHandlers().DeleteFunc(nodes[i-live].DeepCopy())
				if tc.cpuToo {
					h.addNodes(cpu(nodes[i]))
					h.c.nodeHandlers().DeleteFunc(cpu(nodes[i-live]))
				}
				h.cycle()
				h.cycle()
				checkBooks(t, h)
				ctrl, eng := h.nodeBooks()
				limit := live + 1 // the live nodes and, held by its pod, n000
				if tc.cpuToo {
					limit = 2 * live
				}
				if ctrl > limit || eng > live+1 {
					t.Fatalf("after %d nodes came and went: %d nodes in the controller's books, %d in the engine; want at most %d and %d",
						i-live+1, ctrl, eng, limit, live+1)
				}
			}
			if got := h.c.eng.totalGPUs(); got != 8*live+map[bool]int{true: 8}[tc.foreign] {
				t.Fatalf("the engine's cluster has %d GPUs at the end, want the live nodes' %d", got, 8*live)
			}
			if tc.foreign {
				if _, down, known := h.engineNode(nodes[0].Name); !known || !down {
					t.Fatalf("n000, deleted under a pod still bound there: known %v down %v; want kept, down", known, down)
				}
				h.c.podHandlers().DeleteFunc(stray)
				h.cycle()
				if _, _, known := h.engineNode(nodes[0].Name); known {
					t.Fatal("n000 still in the engine's cluster once its last pod is gone")
				}
				checkBooks(t, h)
			}
		})
	}
}

// runSoloOnN000 submits a one-pod gang "solo" of gpus GPUs, checks
// that it is admitted on n000 (the only node with room), binds it there
// and runs a cycle; it returns the bound pod.
func runSoloOnN000(t *testing.T, h *hookEnv, gpus int64) *v1.Pod {
	t.Helper()
	solo := groupPod("", "solo", gpus, 0)
	h.c.onPod(solo)
	if got := h.admit([]*v1.Pod{solo})["solo"]; got != "n000" {
		t.Fatalf("solo admitted on %q, want n000", got)
	}
	h.reserveAndPermit([]*v1.Pod{solo})
	solo = h.bind(solo, "n000")
	h.cycle()
	return solo
}

// TestDeletedNodeUnderGang: a one-pod gang runs on n000, which is then
// deleted. As doc.go says, the gang ends and its pod is deleted; the node
// stays in the model, down, while the pod is bound there, and once the pod
// is gone the node leaves the engine's cluster and the controller's books.
// A node re-created later under the same name joins as a new node.
func TestDeletedNodeUnderGang(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(3)
	h.addNodes(nodes...)
	h.c.onPod(foreignPod("fill1", "n001", 8))
	h.c.onPod(foreignPod("fill2", "n002", 8))
	h.cycle()
	solo := runSoloOnN000(t, h, 8)
	h.c.nodeHandlers().DeleteFunc(nodes[0].DeepCopy())
	h.cycle()
	h.cycle()
	if len(h.a.evicted) != 1 || h.a.evicted[0] != "ns/solo" || len(activeJobs(h)) != 0 {
		t.Fatalf("n000 deleted: evicted %v, active jobs %v; want solo deleted, no gang", h.a.evicted, activeJobs(h))
	}
	if _, down, known := h.engineNode("n000"); !known || !down {
		t.Fatalf("n000 deleted with solo still bound there: known %v down %v; want kept, down", known, down)
	}
	checkBooks(t, h)
	h.c.podHandlers().DeleteFunc(solo)
	h.cycle()
	if _, _, known := h.engineNode("n000"); known {
		t.Fatal("n000 still in the engine's cluster once solo is gone")
	}
	if ctrl, eng := h.nodeBooks(); ctrl != 2 || eng != 2 {
		t.Fatalf("n000 gone: %d nodes in the controller's books, %d in the engine; want 2 and 2", ctrl, eng)
	}
	checkBooks(t, h)
	h.addNodes(nodes[0])
	h.cycle()
	if gpus, down, known := h.engineNode("n000"); !known || down || gpus != 8 {
		t.Fatalf("n000 re-created: known %v down %v gpus %d; want known, up, 8", known, down, gpus)
	}
	again := groupPod("", "again", 8, 0)
	h.c.onPod(again)
	if got := h.admit([]*v1.Pod{again})["again"]; got != "n000" {
		t.Fatalf("again admitted on %q, want n000", got)
	}
	checkBooks(t, h)
}
