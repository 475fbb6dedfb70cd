package plugin

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestShrunkNodeFreedInOneCycle: a node loses a GPU (allocatable 8 -> 7)
// while one pod holds all 8 of its GPUs, so the engine keeps it at 8. The
// pod ends (a gang's, or a foreign pod's) while an 8-GPU pod waits and the
// other node is full. The cycle that sees the pod gone must not offer the
// waiting pod the node's 8 GPUs: the kubelet has 7.
func TestShrunkNodeFreedInOneCycle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		foreign bool // the pod holding the node is another scheduler's
	}{
		{name: "gang pod ends"},
		{name: "foreign pod ends", foreign: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(2)
			h.addNodes(nodes...)
			h.c.onPod(foreignPod("other", "n001", 8))
			var holder *v1.Pod
			if tc.foreign {
				holder = foreignPod("holder", "n000", 8)
				h.c.onPod(holder)
				h.cycle()
			} else {
				holder = groupPod("", "holder", 8, 0)
				h.c.onPod(holder)
				if got := h.admit([]*v1.Pod{holder})["holder"]; got != "n000" {
					t.Fatalf("holder admitted on %q, want n000", got)
				}
				h.reserveAndPermit([]*v1.Pod{holder})
				holder = h.bind(holder, "n000")
				h.cycle()
			}
			shrunk := nodes[0].DeepCopy()
			shrunk.Status.Allocatable = gpuList("7")
			h.c.onNode(shrunk, false)
			h.cycle()
			if gpus, _, _ := h.engineNode("n000"); gpus != 8 {
				t.Fatalf("n000 under 8 held GPUs: %d GPUs in the engine, want 8 (its former count)", gpus)
			}
			waiting := groupPod("", "waiting", 8, 0)
			h.c.onPod(waiting)
			h.cycle()
			h.answerScouts()
			h.cycle()
			if slot := admittedOn(h, waiting); slot != "" {
				t.Fatalf("the 8-GPU pod admitted on %s while both nodes are full", slot)
			}
			h.c.podHandlers().DeleteFunc(holder)
			h.cycle()
			if slot := admittedOn(h, waiting); slot != "" {
				gpus, _, _ := h.engineNode("n000")
				t.Fatalf("the 8-GPU pod admitted on %s, whose allocatable GPUs are 7 (the engine counts %d)", slot, gpus)
			}
			h.cycle()
			if gpus, _, _ := h.engineNode("n000"); gpus != 7 {
				t.Fatalf("n000 with nothing held: %d GPUs in the engine, want 7", gpus)
			}
			checkBooks(t, h)
		})
	}
}

// TestShrunkUnderHeldPlan: a node of 8 GPUs runs a 4-GPU pod and an 8-GPU
// pod waits for it (the other node is cordoned): the engine plans the waiting
// pod onto all 8 GPUs of the node (a hold or a reservation). The node
// loses a GPU (allocatable 8 -> 7); the 4 GPUs held fit the 7 left, so
// the node takes its new count. The plan on GPU index 7 must not keep it
// at 8 (Restore refuses a plan on a GPU the node no longer has): the
// engine would start the waiting pod there once the 4-GPU pod ends, and
// the kubelet has 7.
func TestShrunkUnderHeldPlan(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(2)
	nodes[1].Spec.Unschedulable = true
	h.addNodes(nodes...)
	small := groupPod("", "small", 4, 0)
	h.c.onPod(small)
	if got := h.admit([]*v1.Pod{small})["small"]; got != "n000" {
		t.Fatalf("small admitted on %q, want n000", got)
	}
	h.reserveAndPermit([]*v1.Pod{small})
	small = h.bind(small, "n000")
	waiting := groupPod("", "waiting", 8, 0)
	h.c.onPod(waiting)
	h.cycle()
	h.answerScouts()
	h.cycle()
	h.c.mu.Lock()
	snap := h.c.eng.eng.Snapshot()
	h.c.mu.Unlock()
	if len(snap.Holds)+len(snap.Reservations) == 0 {
		t.Fatal("no hold or reservation for the waiting pod: the test sets up nothing")
	}
	shrunk := nodes[0].DeepCopy()
	shrunk.Status.Allocatable = gpuList("7")
	h.c.onNode(shrunk, false)
	h.cycle()
	h.cycle()
	if gpus, _, _ := h.engineNode("n000"); gpus != 7 {
		t.Fatalf("n000 with 7 allocatable GPUs, 4 held: %d GPUs in the engine, want 7", gpus)
	}
	checkBooks(t, h)
	rebuilds := h.c.Stats().Rebuilds
	h.cycle()
	if n := h.c.Stats().Rebuilds - rebuilds; n != 0 {
		t.Fatalf("%d cluster rebuilds in a cycle with no node change, want 0", n)
	}
	h.c.podHandlers().DeleteFunc(small)
	h.cycle()
	h.cycle()
	if slot := admittedOn(h, waiting); slot != "" {
		t.Fatalf("the 8-GPU pod admitted on %s, whose allocatable GPUs are 7", slot)
	}
	checkBooks(t, h)
}

// admittedOn returns the node the engine gave pod p ("" when none),
// without running PreFilter (which a scout's cycle needs a state for).
func admittedOn(h *hookEnv, p *v1.Pod) string {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	_, node, _ := h.c.lookup(p)
	return node
}
