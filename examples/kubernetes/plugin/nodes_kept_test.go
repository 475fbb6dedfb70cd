package plugin

import (
	"testing"
)

// TestKeptNodeOffersNoGPU: a node of 8 GPUs loses two (allocatable 8 -> 6)
// while a pod holds 7 of them: the engine keeps it at 8 (the 7 held do not
// fit 6). The kubelet has no GPU left to give there (7 held of 6), but the
// engine, counting 8, has one free: a 1-GPU pod must not be admitted on
// it (the other node is full).
func TestKeptNodeOffersNoGPU(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(2)
	h.addNodes(nodes...)
	h.c.onPod(foreignPod("other", "n001", 8))
	h.c.onPod(foreignPod("holder", "n000", 7))
	h.cycle()
	h.setAllocatable(nodes[0], "6")
	h.cycle()
	if gpus, _, _ := h.engineNode("n000"); gpus != 8 {
		t.Fatalf("n000 under 7 held GPUs: %d GPUs in the engine, want 8 (its former count)", gpus)
	}
	one := groupPod("", "one", 1, 0)
	h.c.onPod(one)
	for i := 0; i < 3; i++ {
		h.cycle()
		h.answerScouts()
	}
	if slot := admittedOn(h, one); slot != "" {
		t.Fatalf("a 1-GPU pod admitted on %s, whose kubelet has 6 GPUs with 7 held", slot)
	}
	checkBooks(t, h)
}

// TestKeptNodeWarnedOnce: a node loses five GPUs (allocatable 8 -> 3)
// under three foreign pods of 2 GPUs each (6 held): kept at 8, with a
// warning. One pod ends (4 held, still more than 3): the same episode,
// the same reason, no second warning.
func TestKeptNodeWarnedOnce(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.lead() // only the leader records events
	nodes := testNodes(1)
	h.addNodes(nodes...)
	a := foreignPod("a", "n000", 2)
	h.c.onPod(a)
	h.c.onPod(foreignPod("b", "n000", 2))
	h.c.onPod(foreignPod("c", "n000", 2))
	h.cycle()
	h.setAllocatable(nodes[0], "3")
	h.cycle()
	if len(h.a.warnings) != 1 {
		t.Fatalf("warnings %q, want one for the shrink", h.a.warnings)
	}
	h.c.podHandlers().DeleteFunc(a)
	h.cycle()
	h.cycle()
	if gpus, _, _ := h.engineNode("n000"); gpus != 8 {
		t.Fatalf("n000 under 4 held GPUs of 3: %d GPUs in the engine, want 8", gpus)
	}
	if len(h.a.warnings) != 1 {
		t.Fatalf("warnings %q: one shrink warned about again as a pod ended", h.a.warnings)
	}
}

// TestShrunkWithdrawsOnlyWhatNeverFits: two gangs wait on two nodes of 8
// GPUs (n000 with a 4-GPU pod of another scheduler, n001 full): one of
// an 8-GPU pod, one of two 8-GPU pods. n000 loses a GPU (8 -> 7, 4 held):
// the gang of two can never fit now (Restore refuses it), the 8-GPU pod
// still fits n001. Only the gang that can never fit is to leave the
// engine's queue: the other keeps its place, its job and its plan there
// (as TestShrunkUnderHeldPlan asks of a gang whose plan alone is gone).
func TestShrunkWithdrawsOnlyWhatNeverFits(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(2)
	h.addNodes(nodes...)
	h.c.onPod(foreignPod("four", "n000", 4))
	h.c.onPod(foreignPod("other", "n001", 8))
	h.cycle()
	one := groupPod("", "one", 8, 0)
	h.c.onPod(one)
	h.groupPods(2, 8)
	h.cycle()
	h.answerScouts()
	h.cycle()
	held := func(job string) bool {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		return h.c.eng.held(job)
	}
	if !held("ns/pod:one#1") {
		t.Fatal("the 8-GPU pod's gang ns/pod:one#1 is not queued: the test sets up nothing")
	}
	h.setAllocatable(nodes[0], "7")
	h.cycle()
	if gpus, _, _ := h.engineNode("n000"); gpus != 7 {
		t.Fatalf("n000 with 7 allocatable GPUs, 4 held: %d GPUs in the engine, want 7", gpus)
	}
	if !held("ns/pod:one#1") {
		t.Fatal("the 8-GPU pod's gang ns/pod:one#1, which still fits n001, was withdrawn from the engine's queue")
	}
	checkBooks(t, h)
}
