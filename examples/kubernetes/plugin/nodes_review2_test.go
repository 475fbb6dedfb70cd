package plugin

import (
	"strings"
	"testing"
)

// TestShrunkUnderWaitingGangThatNoLongerFits: a gang of two 8-GPU pods
// waits on a cluster of two 8-GPU nodes (one of them full). One node loses
// a GPU (allocatable 8 -> 7): the gang can never fit the cluster now, and
// Restore refuses a waiting job that can never fit. The node must take its
// new count all the same (one rebuild, no warning), the gang waiting as
// one that can never fit, not admitted once the other node is free; and
// once the node has its 8 GPUs again, the gang is admitted.
func TestShrunkUnderWaitingGangThatNoLongerFits(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(2)
	h.addNodes(nodes...)
	other := foreignPod("other", "n001", 8)
	h.c.onPod(other)
	h.cycle()
	ps := h.groupPods(2, 8)
	h.cycle()
	h.answerScouts()
	h.cycle()
	reason := func() string {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		return h.c.groups[groupKey(ps[0], h.c.args.GPUResource)].reason
	}
	shrunk := nodes[0].DeepCopy()
	shrunk.Status.Allocatable = gpuList("7")
	h.c.onNode(shrunk, false)
	rebuilds := h.c.Stats().Rebuilds
	for i := 0; i < 3; i++ {
		h.cycle()
		h.answerScouts()
	}
	if gpus, _, _ := h.engineNode("n000"); gpus != 7 {
		t.Fatalf("n000 with 7 allocatable GPUs, none held: %d GPUs in the engine, want 7", gpus)
	}
	if n := h.c.Stats().Rebuilds - rebuilds; n != 1 || len(h.a.warnings) != 0 {
		t.Fatalf("%d rebuilds in 3 cycles, warnings %q; want 1 rebuild, no warning", n, h.a.warnings)
	}
	if r := reason(); !strings.Contains(r, "can never fit") {
		t.Fatalf("the gang of two 8-GPU pods on nodes of 7 and 8 GPUs waits for %q, want that it can never fit", r)
	}
	h.c.podHandlers().DeleteFunc(other)
	h.cycle()
	h.cycle()
	for _, p := range ps {
		if node := admittedOn(h, p); node != "" {
			t.Fatalf("%s admitted on %s: n000 has 7 allocatable GPUs", p.Name, node)
		}
	}
	checkBooks(t, h)
	h.c.onNode(nodes[0], false)
	h.now = h.now.Add(h.c.args.allowedTTL())
	for i := 0; i < 3; i++ {
		h.cycle()
		h.answerScouts()
	}
	for _, p := range ps {
		if node := admittedOn(h, p); node == "" {
			t.Fatalf("%s not admitted with both nodes of 8 GPUs free: %q", p.Name, reason())
		}
	}
	checkBooks(t, h)
}
