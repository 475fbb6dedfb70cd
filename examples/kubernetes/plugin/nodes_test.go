package plugin

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func gpuList(n string) v1.ResourceList {
	return v1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
}

// engineNode returns the engine's GPU count of node name, whether the
// engine has it down, and whether it knows the node at all.
func (h *hookEnv) engineNode(name string) (gpus int, down, known bool) {
	gpus, down, _, known = h.engineNodeState(name)
	return gpus, down, known
}

// engineNodeState is engineNode with the node's drained state.
func (h *hookEnv) engineNodeState(name string) (gpus int, down, drained, known bool) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return h.c.eng.nodeStatus(name)
}

// TestDegradedNodeNotUsed: a node whose device plugin serves no GPUs
// (allocatable 0, capacity 8) is drained for the engine (kube.Load reports
// it Down for its GPUs alone), so a gang that fits the other nodes is never
// placed on it (its pod would fail NodeResourcesFit there and tear the
// gang down, again and again).
func TestDegradedNodeNotUsed(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(5)
	nodes[0].Status.Allocatable = gpuList("0")
	h.addNodes(nodes...)
	for pod, node := range h.admit(h.groupPods(4, 8)) {
		if node == "n000" {
			t.Fatalf("pod %s placed on n000, whose allocatable nvidia.com/gpu is 0", pod)
		}
	}
	if _, down, drained, _ := h.engineNodeState("n000"); down || !drained {
		t.Fatalf("n000 down %v, drained %v in the engine; want drained", down, drained)
	}
}

// TestDevicePluginRestartUnderGang: a node's allocatable GPUs drop to 0 and
// come back (its device plugin restarts, as in a DaemonSet rollout; the
// capacity stays and the node stays Ready) under a running gang. The
// node is drained meanwhile, no gang placed there, and the running gang
// goes on, its pods untouched, as the kubelet leaves them; it takes gangs
// again once it serves its GPUs. Before, the node was down for the
// engine: the gang ended and its four pods were deleted.
func TestDevicePluginRestartUnderGang(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(8)
	h.addNodes(nodes...)
	h.leads(groupPod("", "solo", 8, 0))
	ps := h.groupPods(4, 8)
	h.cycle()
	for i := range ps {
		b := ps[i].DeepCopy()
		b.Spec.NodeName = nodeName(i)
		h.c.onPod(b)
		h.cycle()
	}
	if got := activeJobs(h); len(got) != 1 {
		t.Fatalf("active jobs %v, want the gang", got)
	}
	n1 := nodes[1].DeepCopy()
	n1.Status.Allocatable = gpuList("0")
	h.c.onNode(n1, false)
	for i := 0; i < 5; i++ {
		h.cycle()
	}
	if len(h.a.evicted) != 0 || len(activeJobs(h)) != 1 {
		t.Fatalf("device plugin restarting on n001: evicted %v, active jobs %v; want nothing deleted, the gang running", h.a.evicted, activeJobs(h))
	}
	if gpus, down, drained, _ := h.engineNodeState("n001"); down || !drained || gpus != 8 {
		t.Fatalf("n001 without allocatable GPUs: %d GPUs, down %v, drained %v in the engine; want 8, drained", gpus, down, drained)
	}
	h.c.onNode(nodes[1], false)
	h.cycle()
	if gpus, down, drained, _ := h.engineNodeState("n001"); down || drained || gpus != 8 {
		t.Fatalf("n001 serving its GPUs again: %d GPUs, down %v, drained %v in the engine; want 8, up", gpus, down, drained)
	}
	if len(h.a.evicted) != 0 || len(activeJobs(h)) != 1 {
		t.Fatalf("after the restart: evicted %v, active jobs %v; want nothing deleted, the gang running", h.a.evicted, activeJobs(h))
	}
	checkBooks(t, h)
}

// TestAllocatableDropShrinksNode: one GPU of a node goes unhealthy
// (allocatable 8 -> 7, capacity stays 8): the engine counts 7.
func TestAllocatableDropShrinksNode(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(4)
	h.addNodes(nodes...)
	h.cycle()
	n0 := nodes[0].DeepCopy()
	n0.Status.Allocatable = gpuList("7")
	h.c.onNode(n0, false)
	h.cycle()
	if gpus, down, _ := h.engineNode("n000"); gpus != 7 || down {
		t.Fatalf("n000 has 7 allocatable GPUs; the engine counts %d (down %v)", gpus, down)
	}
}

// TestFailedRebuildRetried: a node's GPUs shrink (8 -> 4) under a running
// gang while a new node joins in the same cycle. The engine cannot take the
// smaller node while the gang holds its GPUs, but the new node joins at
// once, and the smaller node is taken once the gang is gone.
func TestFailedRebuildRetried(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(5)
	h.addNodes(nodes[:4]...)
	ps := h.groupPods(4, 8)
	slots := h.admit(ps)
	h.reserveAndPermit(ps)
	for _, p := range ps {
		h.bind(p, slots[p.Name])
	}
	n0 := nodes[0].DeepCopy()
	n0.Status.Capacity, n0.Status.Allocatable = gpuList("4"), gpuList("4")
	h.c.onNode(n0, false)
	h.c.onNode(nodes[4], false)
	h.cycle()
	if _, _, known := h.engineNode("n004"); !known {
		t.Fatal("n004 joined but the engine does not know it")
	}
	if gpus, _, _ := h.engineNode("n000"); gpus != 8 {
		t.Fatalf("n000 under the running gang: %d GPUs in the engine, want 8 until the gang is gone", gpus)
	}
	for _, p := range ps {
		h.c.podHandlers().DeleteFunc(p)
	}
	h.cycle()
	h.cycle()
	if gpus, _, _ := h.engineNode("n000"); gpus != 4 {
		t.Fatalf("n000 after the gang: %d GPUs in the engine, want 4", gpus)
	}
}

// TestUnlabelledNodeLeftOutAtStart: one GPU node without the preset's
// topology labels is left out of the engine's cluster, with a warning
// naming it, and the plugin starts on the other nodes.
func TestUnlabelledNodeLeftOutAtStart(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.lead() // only the leader records events
	nodes := testNodes(5)
	delete(nodes[4].Labels, "cloud.google.com/gce-topology-subblock")
	h.addNodes(nodes...)
	h.cycle()
	if h.c.eng == nil {
		t.Fatalf("engine not started: %q", h.c.err)
	}
	if _, _, known := h.engineNode("n004"); known {
		t.Fatal("the unlabelled n004 is in the engine")
	}
	if len(h.a.warnings) != 1 || !strings.HasPrefix(h.a.warnings[0], "n004: ") || !strings.Contains(h.a.warnings[0], "gce-topology-subblock") {
		t.Fatalf("warnings %q, want one for n004 naming the missing label", h.a.warnings)
	}
	h.cycle()
	if len(h.a.warnings) != 1 {
		t.Fatalf("warnings %q: the same node warned about again with nothing changed", h.a.warnings)
	}
}

// TestUnlabelledNodeLeftOutAtRuntime: a well-labelled node and an
// unlabelled one join in the same cycle: the first joins, the second is left
// out with a warning, and joins once it gets its labels.
func TestUnlabelledNodeLeftOutAtRuntime(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.lead() // only the leader records events
	nodes := testNodes(6)
	h.addNodes(nodes[:4]...)
	h.cycle()
	bad := nodes[5].DeepCopy()
	delete(bad.Labels, "cloud.google.com/gce-topology-subblock")
	h.addNodes(nodes[4], bad)
	h.cycle()
	if _, _, known := h.engineNode("n004"); !known {
		t.Fatal("n004 (well labelled) did not join")
	}
	if _, _, known := h.engineNode("n005"); known || len(h.a.warnings) != 1 || !strings.HasPrefix(h.a.warnings[0], "n005: ") {
		t.Fatalf("n005 known %v, warnings %q; want it left out with one warning", known, h.a.warnings)
	}
	h.c.onNode(nodes[5], false)
	h.cycle()
	if _, _, known := h.engineNode("n005"); !known {
		t.Fatal("n005 got its labels but did not join")
	}
}

// TestGPUResourceRemovedNodeDown: a node the engine knows loses its GPU
// resource in one update (capacity and allocatable both 0, as when its
// device plugin is uninstalled): it is down for the engine, and the gang
// running on it ends (its pods are deleted); when the GPUs come back it is
// up again with its 8 GPUs.
func TestGPUResourceRemovedNodeDown(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(4)
	h.addNodes(nodes...)
	ps := h.groupPods(1, 8)
	slots := h.admit(ps)
	h.reserveAndPermit(ps)
	h.bind(ps[0], slots["w-0"])
	var n *v1.Node
	for _, x := range nodes {
		if x.Name == slots["w-0"] {
			n = x
		}
	}
	gone := n.DeepCopy()
	gone.Status.Capacity, gone.Status.Allocatable = gpuList("0"), gpuList("0")
	h.c.onNode(gone, false)
	h.cycle()
	if gpus, down, _ := h.engineNode(n.Name); !down || gpus != 8 {
		t.Fatalf("%s serves no GPUs (capacity and allocatable 0): %d GPUs, down %v in the engine; want 8, down", n.Name, gpus, down)
	}
	if want := []string{"ns/w-0"}; strings.Join(h.a.evicted, " ") != strings.Join(want, " ") {
		t.Fatalf("evicted %v, want %v (the gang on the node ended)", h.a.evicted, want)
	}
	h.c.onNode(n, false)
	h.cycle()
	if gpus, down, _ := h.engineNode(n.Name); down || gpus != 8 {
		t.Fatalf("%s with its GPUs back: %d GPUs, down %v in the engine; want 8, up", n.Name, gpus, down)
	}
}

// TestShrunkUnderGangNoRebuild: 3 nodes of 16 lose a GPU (allocatable 8 ->
// 7) under the one-pod gangs that hold all 8 of their GPUs. The engine
// cannot take them while the gangs run: the plugin skips them without
// trying a cluster rebuild (neither in that cycle nor in later ones), with
// one warning per node that a later node join does not repeat, and the
// joining node is taken with one rebuild. Once a node's gang is gone, the
// node is taken (one rebuild) with its 7 GPUs; the others keep 8.
func TestShrunkUnderGangNoRebuild(t *testing.T) {
	h := newHookEnv(t, Args{})
	nodes := testNodes(17)
	h.addNodes(nodes[:16]...)
	var ps []*v1.Pod
	for i := 0; i < 3; i++ {
		ps = append(ps, groupPod("", fmt.Sprintf("solo-%d", i), 8, 0))
		h.c.onPod(ps[i])
	}
	slots := h.admit(ps)
	h.reserveAndPermit(ps)
	for _, p := range ps {
		h.bind(p, slots[p.Name])
	}
	h.cycle()
	byName := map[string]*v1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	for _, p := range ps {
		n := byName[slots[p.Name]].DeepCopy()
		n.Status.Allocatable = gpuList("7")
		h.c.onNode(n, false)
	}
	rebuilds := h.c.Stats().Rebuilds
	for i := 0; i < 3; i++ {
		h.cycle()
	}
	if n := h.c.Stats().Rebuilds - rebuilds; n != 0 {
		t.Fatalf("%d cluster rebuilds tried in 3 cycles for nodes that cannot shrink while gangs hold their GPUs, want 0", n)
	}
	if len(h.a.warnings) != 3 {
		t.Fatalf("warnings %q, want one for each of the 3 shrunk nodes", h.a.warnings)
	}
	for _, p := range ps {
		if gpus, _, _ := h.engineNode(slots[p.Name]); gpus != 8 {
			t.Fatalf("%s under its gang: %d GPUs in the engine, want 8", slots[p.Name], gpus)
		}
	}
	rebuilds = h.c.Stats().Rebuilds
	h.c.onNode(nodes[16], false)
	h.cycle()
	h.cycle()
	if n := h.c.Stats().Rebuilds - rebuilds; n != 1 {
		t.Fatalf("%d cluster rebuilds tried for one node joining, want 1", n)
	}
	if _, _, known := h.engineNode(nodes[16].Name); !known {
		t.Fatalf("%s joined but the engine does not know it", nodes[16].Name)
	}
	if len(h.a.warnings) != 3 {
		t.Fatalf("a node join repeated the warnings: %q", h.a.warnings[3:])
	}
	rebuilds = h.c.Stats().Rebuilds
	h.c.podHandlers().DeleteFunc(ps[0])
	h.cycle()
	h.cycle()
	if n := h.c.Stats().Rebuilds - rebuilds; n != 1 {
		t.Fatalf("%d cluster rebuilds tried once a node's gang is gone, want 1", n)
	}
	if gpus, _, _ := h.engineNode(slots[ps[0].Name]); gpus != 7 {
		t.Fatalf("%s after its gang: %d GPUs in the engine, want 7", slots[ps[0].Name], gpus)
	}
	if gpus, _, _ := h.engineNode(slots[ps[1].Name]); gpus != 8 {
		t.Fatalf("%s under its gang: %d GPUs in the engine, want 8", slots[ps[1].Name], gpus)
	}
}

// TestShrunkUnderForeignPodRejoins: a one-pod gang of 6 GPUs and a
// foreign pod of 2 GPUs share a node of 8 (the engine counts the foreign
// GPUs on the indices the gang left free, 6 and 7). The node loses a GPU
// (allocatable 8 -> 7) before or after the gang ends. Once the gang is
// gone the foreign pod's 2 GPUs fit the 7 left, so the node takes its new
// count, the foreign GPUs still counted: which GPUs a pod of another
// scheduler holds is the engine's pick, not Kubernetes' word, so they
// must not keep the node at its former size for as long as the foreign
// pod runs.
func TestShrunkUnderForeignPodRejoins(t *testing.T) {
	for _, tc := range []struct {
		name          string
		shrinkFirst   bool
		wantUnderGang int // the engine's count of the node while the gang runs
	}{
		{name: "shrunk after the gang ended"},
		{name: "shrunk under the gang", shrinkFirst: true, wantUnderGang: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(4)
			h.addNodes(nodes...)
			solo := groupPod("", "solo", 6, 0)
			h.c.onPod(solo)
			node := h.admit([]*v1.Pod{solo})["solo"]
			h.reserveAndPermit([]*v1.Pod{solo})
			h.bind(solo, node)
			h.c.onPod(foreignPod("daemon", node, 2))
			h.cycle()
			h.cycle()
			var n *v1.Node
			for _, x := range nodes {
				if x.Name == node {
					n = x.DeepCopy()
				}
			}
			n.Status.Allocatable = gpuList("7")
			if tc.shrinkFirst {
				h.c.onNode(n, false)
				h.cycle()
				h.cycle()
				if gpus, _, _ := h.engineNode(node); gpus != tc.wantUnderGang {
					t.Fatalf("%s under the gang and the foreign pod (8 GPUs held): %d GPUs in the engine, want %d", node, gpus, tc.wantUnderGang)
				}
			}
			h.c.podHandlers().DeleteFunc(solo)
			h.cycle()
			if !tc.shrinkFirst {
				h.c.onNode(n, false)
			}
			for i := 0; i < 3; i++ {
				h.cycle()
			}
			if gpus, down, _ := h.engineNode(node); gpus != 7 || down {
				t.Fatalf("%s with 7 allocatable GPUs, 2 held by a foreign pod: %d GPUs in the engine (down %v), want 7", node, gpus, down)
			}
			h.c.mu.Lock()
			held := h.c.eng.foreignHeld(node)
			h.c.mu.Unlock()
			if held != 2 {
				t.Fatalf("foreign GPUs counted on %s: %d, want 2", node, held)
			}
			if free := h.c.eng.freeGPUCount(); free != 24+5 {
				t.Fatalf("free GPUs %d, want 29 (3 idle nodes, 5 of 7 on %s)", free, node)
			}
			checkBooks(t, h)
		})
	}
}

// TestShrunkUnderGangHighIndices: two one-pod gangs of 4 GPUs share a node
// of 8, one on GPU indices 0-3 and the other on 4-7 (the engine's pick:
// Kubernetes does not say which GPUs a pod got). The one on the low
// indices ends and the node loses a GPU (allocatable 8 -> 7, a GPU marked
// unhealthy), before or after the gang ends. The 4 GPUs still held fit the
// 7 left, so the engine takes the new count, with 3 free: kept at 8 while
// the other gang runs (its index 7 past the new count), it offered 4 free
// GPUs where the kubelet admits 3, and placed a 4-GPU pod there that the
// kubelet refuses.
func TestShrunkUnderGangHighIndices(t *testing.T) {
	for _, shrinkFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("shrunk before the gang ended %v", shrinkFirst), func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(1)
			h.addNodes(nodes...)
			node := nodes[0].Name
			var ps []*v1.Pod
			for _, name := range []string{"a", "b"} {
				p := groupPod("", name, 4, 0)
				h.c.onPod(p)
				if got := h.admit([]*v1.Pod{p})[name]; got != node {
					t.Fatalf("%s admitted on %q, want %s", name, got, node)
				}
				h.reserveAndPermit([]*v1.Pod{p})
				ps = append(ps, h.bind(p, node))
				h.cycle()
			}
			// The pod whose gang holds index 0 ends; the other holds 7.
			low := -1
			h.c.mu.Lock()
			for _, st := range h.c.eng.eng.Jobs() {
				alloc, ok := h.c.eng.eng.Allocation(st.ID)
				if !ok || !st.State.Active() {
					continue
				}
				for pod := range alloc.Pods() {
					if pod.GPUs&1 != 0 {
						for i, p := range ps {
							if strings.Contains(st.ID, p.Name) {
								low = i
							}
						}
					}
				}
			}
			h.c.mu.Unlock()
			if low < 0 {
				t.Fatal("no gang holds GPU index 0 of the node")
			}
			shrunk := nodes[0].DeepCopy()
			shrunk.Status.Allocatable = gpuList("7")
			if shrinkFirst {
				h.c.onNode(shrunk, false)
				h.cycle()
				if gpus, _, _ := h.engineNode(node); gpus != 8 {
					t.Fatalf("%s under 8 held GPUs: %d GPUs in the engine, want 8 (its former count)", node, gpus)
				}
			}
			h.c.podHandlers().DeleteFunc(ps[low])
			h.cycle()
			if !shrinkFirst {
				h.c.onNode(shrunk, false)
			}
			h.cycle()
			h.cycle()
			if gpus, down, _ := h.engineNode(node); gpus != 7 || down {
				t.Fatalf("%s with 7 allocatable GPUs, 4 held: %d GPUs in the engine (down %v), want 7", node, gpus, down)
			}
			if free := h.c.eng.freeGPUCount(); free != 3 {
				t.Fatalf("free GPUs %d, want 3", free)
			}
			checkBooks(t, h)
			c := groupPod("", "c", 4, 0)
			h.c.onPod(c)
			h.cycle()
			h.answerScouts()
			h.cycle()
			if slot := h.slot(c); slot != "" {
				t.Fatalf("a 4-GPU pod admitted on %s, which has 3 GPUs free", slot)
			}
			h.c.mu.Lock()
			reason := h.c.groups[groupKey(c, h.c.args.GPUResource)].reason
			h.c.mu.Unlock()
			if !strings.Contains(reason, "1 short of free GPUs") {
				t.Fatalf("the 4-GPU pod waits for %q, want its node short of free GPUs", reason)
			}
			checkBooks(t, h)
		})
	}
}
