package plugin

import (
	"strings"
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
			h.setAllocatable(nodes[0], "7")
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
// the kubelet has 7. Nor must it take the waiting gang out of the queue
// (withdrawn, as a gang that can no longer fit is): only its plan goes.
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
	h.setAllocatable(nodes[0], "7")
	h.cycle()
	h.cycle()
	if gpus, _, _ := h.engineNode("n000"); gpus != 7 {
		t.Fatalf("n000 with 7 allocatable GPUs, 4 held: %d GPUs in the engine, want 7", gpus)
	}
	h.c.mu.Lock()
	queued := h.c.eng.held("ns/pod:waiting#1")
	h.c.mu.Unlock()
	if !queued {
		t.Fatal("the waiting pod's gang ns/pod:waiting#1 left the engine's queue: only its plan had to go")
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
	h.setAllocatable(nodes[0], "7")
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

// runningGangOfFour binds a gang of four 8-GPU pods (group g) on the
// nodes the engine gives it, with one engine cycle per bind, and returns
// the pods as bound and their nodes.
func runningGangOfFour(h *hookEnv) ([]*v1.Pod, map[string]string) {
	h.t.Helper()
	ps := h.groupPods(4, 8)
	slots := h.admit(ps)
	h.reserveAndPermit(ps)
	for i, p := range ps {
		ps[i] = h.bind(p, slots[p.Name])
	}
	h.cycle()
	if got := activeJobs(h); len(got) != 1 {
		h.t.Fatalf("active jobs %v, want the gang", got)
	}
	return ps, slots
}

// TestNodeChangesUnderRunningGang: node changes that leave a running
// gang's nodes Ready, with their GPUs, keep the gang running (no pod
// deleted), the engine's books whole and its count of each node the
// kubelet's: a node moved to another leaf or spine, cordoned and
// uncordoned, a GPU that comes back (allocatable 7 -> 8).
func TestNodeChangesUnderRunningGang(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(n *v1.Node)
		gpus   int // the engine's count of the node after the change
	}{
		{name: "moved to another leaf", gpus: 8, change: func(n *v1.Node) {
			n.Labels["cloud.google.com/gce-topology-subblock"] = "leaf01"
		}},
		{name: "moved to another spine", gpus: 8, change: func(n *v1.Node) {
			n.Labels["cloud.google.com/gce-topology-block"] = "spine9"
			n.Labels["cloud.google.com/gce-topology-subblock"] = "leaf99"
		}},
		{name: "cordoned", gpus: 8, change: func(n *v1.Node) { n.Spec.Unschedulable = true }},
		{name: "capacity raised", gpus: 8, change: func(n *v1.Node) {
			n.Status.Capacity = gpuList("16")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(32)
			h.addNodes(nodes...)
			_, slots := runningGangOfFour(h)
			node := slots["w-0"]
			var n *v1.Node
			for _, x := range nodes {
				if x.Name == node {
					n = x.DeepCopy()
				}
			}
			tc.change(n)
			h.c.onNode(n, false)
			for i := 0; i < 3; i++ {
				h.cycle()
			}
			if len(h.a.evicted) != 0 || len(activeJobs(h)) != 1 || len(h.a.warnings) != 0 {
				t.Fatalf("evicted %v, active jobs %v, warnings %q; want the gang running, nothing deleted, no warning", h.a.evicted, activeJobs(h), h.a.warnings)
			}
			if gpus, down, _ := h.engineNode(node); gpus != tc.gpus || down {
				t.Fatalf("%s: %d GPUs in the engine (down %v), want %d", node, gpus, down, tc.gpus)
			}
			checkBooks(t, h)
			// A second gang of four is placed whole, on other nodes.
			more := make([]*v1.Pod, 4)
			for i := range more {
				more[i] = groupPod("h", "x-"+string(rune('0'+i)), 8, 4)
				h.c.onPod(more[i])
			}
			for p, got := range h.admit(more) {
				if got == node && n.Spec.Unschedulable {
					t.Fatalf("%s placed on the cordoned %s", p, got)
				}
				for _, s := range slots {
					if s == got {
						t.Fatalf("%s placed on %s, which the running gang holds", p, got)
					}
				}
			}
			checkBooks(t, h)
		})
	}
}

// TestNodeBackWithPodsOnIt: a node runs a one-pod gang of 4 GPUs and a
// foreign pod of 4. It fails (NotReady, or deleted): the gang ends and its
// pod is deleted, which takes a while. It comes back (Ready again, or
// re-created under the same name, maybe with fewer GPUs) before the pod is
// gone: the engine counts both pods' GPUs used there, as the kubelet
// does, and the gang's once its pod is gone.
func TestNodeBackWithPodsOnIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     func(h *hookEnv, n *v1.Node)
		back     func(n *v1.Node) *v1.Node
		gpus     int // the engine's count of the node once back
		freeBack int // its free GPUs while the gang's pod is being deleted
	}{
		{name: "NotReady then Ready", gpus: 8, freeBack: 0,
			fail: func(h *hookEnv, n *v1.Node) {
				nr := n.DeepCopy()
				nr.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
				h.c.onNode(nr, false)
			},
			back: func(n *v1.Node) *v1.Node { return n.DeepCopy() }},
		{name: "deleted and re-created", gpus: 8, freeBack: 0,
			fail: func(h *hookEnv, n *v1.Node) { h.c.nodeHandlers().DeleteFunc(n.DeepCopy()) },
			back: func(n *v1.Node) *v1.Node { return n.DeepCopy() }},
		{name: "deleted and re-created with 6 GPUs", gpus: 6, freeBack: 0,
			fail: func(h *hookEnv, n *v1.Node) { h.c.nodeHandlers().DeleteFunc(n.DeepCopy()) },
			back: func(n *v1.Node) *v1.Node {
				b := n.DeepCopy()
				b.Status.Capacity, b.Status.Allocatable = gpuList("6"), gpuList("6")
				return b
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(2)
			h.addNodes(nodes...)
			h.c.onPod(foreignPod("fill", "n001", 8))
			h.c.onPod(foreignPod("daemon", "n000", 4))
			h.cycle()
			solo := runSoloOnN000(t, h, 4)
			checkBooks(t, h)
			tc.fail(h, nodes[0])
			h.cycle()
			if len(h.a.evicted) != 1 || h.a.evicted[0] != "ns/solo" || len(activeJobs(h)) != 0 {
				t.Fatalf("n000 failed: evicted %v, active jobs %v; want solo deleted, no gang", h.a.evicted, activeJobs(h))
			}
			h.c.onNode(tc.back(nodes[0]), false)
			h.cycle()
			h.cycle()
			if gpus, down, _ := h.engineNode("n000"); gpus != tc.gpus || down {
				t.Fatalf("n000 back: %d GPUs in the engine (down %v), want %d, up", gpus, down, tc.gpus)
			}
			if free := h.c.eng.freeGPUCount(); free != tc.freeBack {
				t.Fatalf("n000 back with solo (4) being deleted and daemon (4): %d free GPUs, want %d", free, tc.freeBack)
			}
			checkBooks(t, h)
			h.c.podHandlers().DeleteFunc(solo)
			h.cycle()
			if free := h.c.eng.freeGPUCount(); free != tc.gpus-4 {
				t.Fatalf("solo gone, daemon (4) left: %d free GPUs, want %d", free, tc.gpus-4)
			}
			checkBooks(t, h)
			if len(h.a.warnings) != 0 {
				t.Fatalf("warnings %q, want none", h.a.warnings)
			}
		})
	}
}

// TestPackedOntoHeldGPUs: a 4-GPU pod runs on GPUs 4-7 of n000 and a gang
// of two 4-GPU pods waits, hold mode keeping n000's idle GPUs 0-3 for it
// (n001 is full). A rebuild for a change of n000 packs the running pod
// onto GPUs 0-3, the hold's target. The engine's books stay whole, and
// once n001 is free the gang starts if n000 has 4 GPUs free (relabelled)
// and waits if it has 3 (a GPU lost: 7 allocatable).
func TestPackedOntoHeldGPUs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(n *v1.Node)
		starts bool
	}{
		{name: "relabelled", starts: true, change: func(n *v1.Node) {
			n.Labels["cloud.google.com/gce-topology-subblock"] = "leaf07"
		}},
		{name: "a GPU lost", change: func(n *v1.Node) { n.Status.Allocatable = gpuList("7") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(2)
			h.addNodes(nodes...)
			full := foreignPod("full", "n001", 8)
			h.c.onPod(full)
			h.cycle()
			var solo []*v1.Pod
			for _, name := range []string{"a", "x"} {
				p := groupPod("", name, 4, 0)
				h.c.onPod(p)
				if got := h.admit([]*v1.Pod{p})[name]; got != "n000" {
					t.Fatalf("%s admitted on %q, want n000", name, got)
				}
				h.reserveAndPermit([]*v1.Pod{p})
				solo = append(solo, h.bind(p, "n000"))
				h.cycle()
			}
			h.c.podHandlers().DeleteFunc(solo[0])
			h.cycle()
			ps := h.groupPods(2, 4)
			h.cycle()
			h.answerScouts()
			h.cycle()
			h.c.mu.Lock()
			holds := len(h.c.eng.eng.Snapshot().Holds)
			h.c.mu.Unlock()
			if holds != 1 {
				t.Fatalf("%d holds, want one for the waiting gang", holds)
			}
			n := nodes[0].DeepCopy()
			tc.change(n)
			h.c.onNode(n, false)
			h.cycle()
			h.cycle()
			checkBooks(t, h)
			h.c.podHandlers().DeleteFunc(full)
			h.cycle()
			h.answerScouts()
			h.cycle()
			for _, p := range ps {
				if node := admittedOn(h, p); (node != "") != tc.starts {
					t.Fatalf("%s admitted on %q; want started %v", p.Name, node, tc.starts)
				}
			}
			checkBooks(t, h)
		})
	}
}

// TestShrunkAgainWarnedAgain: a node loses a GPU (allocatable 8 -> 7)
// under a pod holding all 8, is kept at 8 with a warning, and gets its GPU
// back while the pod runs. Later, under another pod holding 8, it loses a
// GPU again: a new episode, warned again (each cycle after, nothing more).
func TestShrunkAgainWarnedAgain(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(1)
	h.addNodes(nodes...)
	run := func(name string) *v1.Pod {
		p := groupPod("", name, 8, 0)
		h.c.onPod(p)
		h.admit([]*v1.Pod{p})
		h.reserveAndPermit([]*v1.Pod{p})
		p = h.bind(p, "n000")
		h.cycle()
		return p
	}
	a := run("a")
	h.setAllocatable(nodes[0], "7")
	h.cycle()
	if len(h.a.warnings) != 1 {
		t.Fatalf("warnings %q, want one for the first shrink", h.a.warnings)
	}
	h.c.onNode(nodes[0], false)
	h.cycle()
	h.c.podHandlers().DeleteFunc(a)
	h.cycle()
	run("b")
	h.setAllocatable(nodes[0], "7")
	for i := 0; i < 3; i++ {
		h.cycle()
	}
	if len(h.a.warnings) != 2 {
		t.Fatalf("warnings %q, want a second one for the second shrink, and no more", h.a.warnings)
	}
	if gpus, _, _ := h.engineNode("n000"); gpus != 8 {
		t.Fatalf("n000 under a pod holding 8: %d GPUs in the engine, want 8 (its former count)", gpus)
	}
}

// TestAdoptedGangUnderNodeChanges: a gang adopted after a restart (four
// 8-GPU pods on n000 .. n003, GPU indices the engine picked) lives through
// node changes as a gang the plugin placed does: n001 moved to another
// leaf (a rebuild that packs its pods' GPUs) and n000 losing a GPU
// (allocatable 8 -> 7: kept at 8 while the gang holds it). Books whole
// after each step; once the gang's pods are gone, n000 counts 7 at once.
func TestAdoptedGangUnderNodeChanges(t *testing.T) {
	h, ps := restarted(t)
	if got := activeJobs(h); len(got) != 1 {
		t.Fatalf("active jobs %v, want the adopted gang", got)
	}
	nodes := testNodes(8)
	moved := nodes[1].DeepCopy()
	moved.Labels["cloud.google.com/gce-topology-subblock"] = "leaf05"
	h.c.onNode(moved, false)
	h.cycle()
	checkBooks(t, h)
	h.setAllocatable(nodes[0], "7")
	h.cycle()
	if gpus, _, _ := h.engineNode("n000"); gpus != 8 || len(activeJobs(h)) != 1 || len(h.a.evicted) != 0 {
		t.Fatalf("n000 under the adopted gang: %d GPUs, active jobs %v, evicted %v; want 8, the gang running, nothing deleted",
			gpus, activeJobs(h), h.a.evicted)
	}
	checkBooks(t, h)
	for _, p := range ps {
		h.c.podHandlers().DeleteFunc(p)
	}
	h.cycle()
	if gpus, _, _ := h.engineNode("n000"); gpus != 7 || len(activeJobs(h)) != 0 {
		t.Fatalf("the adopted gang gone: n000 %d GPUs, active jobs %v; want 7, none", gpus, activeJobs(h))
	}
	if free := h.c.eng.freeGPUCount(); free != 7*8+7 {
		t.Fatalf("free GPUs %d, want 63", free)
	}
	checkBooks(t, h)
}
