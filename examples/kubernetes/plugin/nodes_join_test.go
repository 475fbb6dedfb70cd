package plugin

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// answerScoutsWhere answers every scout in flight with the known, undeleted
// nodes that pass filter (the profile's other Filter plugins as the test
// sees them).
func (h *hookEnv) answerScoutsWhere(filter func(*v1.Node) bool) {
	h.c.mu.Lock()
	var names []string
	for name, n := range h.c.nodes {
		if !h.c.deleted[name] && filter(n) {
			names = append(names, name)
		}
	}
	h.c.mu.Unlock()
	sort.Strings(names)
	h.answerScoutsAs(names, h.knownNodes())
}

// TestJoinedNodesMeasuredForWaitingGang: a gang waits with its pod shape
// measured on the nodes there were (a cluster autoscaler adds nodes because
// it is pending), in the engine's queue or out of it as one that can never
// fit them (tried again only after Args.AllowedTTLSeconds). Nodes join, a
// node's GPUs grow, or a cordoned node is uncordoned (the profile's
// NodeUnschedulable filter rejected it): the gang must be admitted on them
// within two cycles, not once Args.AllowedTTLSeconds (60 s) have passed
// since the measurement. The nodes' first add event carries their GPUs and
// labels whole (no later update marks the measurement stale).
func TestJoinedNodesMeasuredForWaitingGang(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pods    int
		busy    []string // nodes a foreign pod fills
		cordon  string   // node cordoned at the measurement, uncordoned then
		small   string   // node with 4 GPUs (the others have 8)
		grow    string   // node whose GPUs grow from 8 to 16 then
		gpus    int64    // each pod's GPUs (8 when 0)
		initial int      // nodes before
		joined  int      // nodes that join
		want    []string // nodes the gang must run on
	}{
		{name: "gang too big for the cluster", pods: 4, initial: 2, joined: 2,
			want: []string{"n000", "n001", "n002", "n003"}},
		{name: "gang that never fits the nodes there are", pods: 3, small: "n002", initial: 3, joined: 1,
			want: []string{"n000", "n001", "n003"}},
		{name: "node's GPUs grow", pods: 1, gpus: 16, grow: "n001", initial: 2,
			want: []string{"n001"}},
		{name: "gang waiting for busy nodes", pods: 2, busy: []string{"n000", "n001"}, initial: 2, joined: 2,
			want: []string{"n002", "n003"}},
		{name: "cordoned node uncordoned", pods: 2, busy: []string{"n000"}, cordon: "n002", initial: 3,
			want: []string{"n001", "n002"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(tc.initial + tc.joined)
			for _, n := range nodes {
				if n.Name == tc.cordon {
					n.Spec.Unschedulable = true
				}
				if n.Name == tc.small {
					n.Status.Capacity, n.Status.Allocatable = gpuList("4"), gpuList("4")
				}
			}
			h.addNodes(nodes[:tc.initial]...)
			for _, n := range tc.busy {
				h.c.onPod(foreignPod("busy-"+n, n, 8))
			}
			h.cycle()
			gpus := tc.gpus
			if gpus == 0 {
				gpus = 8
			}
			ps := h.groupPods(tc.pods, gpus)
			schedulable := func(n *v1.Node) bool { return !n.Spec.Unschedulable }
			for i := 0; i < 3; i++ {
				h.cycle()
				h.answerScoutsWhere(schedulable)
			}
			for _, p := range ps {
				if node := admittedOn(h, p); node != "" {
					t.Fatalf("%s admitted on %s before the nodes changed: the test sets up nothing", p.Name, node)
				}
			}
			h.addNodes(nodes[tc.initial:]...)
			if tc.cordon != "" {
				for _, n := range nodes {
					if n.Name == tc.cordon {
						up := n.DeepCopy()
						up.Spec.Unschedulable = false
						h.c.onNode(up, false)
					}
				}
			}
			for _, n := range nodes {
				if n.Name == tc.grow {
					up := n.DeepCopy()
					up.Status.Capacity, up.Status.Allocatable = gpuList("16"), gpuList("16")
					h.c.onNode(up, false)
				}
			}
			for i := 0; i < 2; i++ {
				h.cycle()
				h.answerScoutsWhere(schedulable)
			}
			h.cycle()
			got := admittedNodes(t, h, ps, "two cycles after the nodes changed")
			if !equalStrings(got, tc.want) {
				t.Fatalf("the gang admitted on %v, want %v", got, tc.want)
			}
			checkBooks(t, h)
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAutoscaledNodeAdmitsNeverFittingGang runs the cluster autoscaler's
// case on a real API server and scheduler: a gang of three 8-GPU pods
// waits on nodes of 8, 8 and 4 GPUs as one that can never fit them (the
// engine refuses it; the plugin tries it again after Args.AllowedTTLSeconds,
// 60 s). A fourth 8-GPU node joins: the gang must be bound there within
// 30 s (its shape measured again by a scout), not after the TTL.
func TestAutoscaledNodeAdmitsNeverFittingGang(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 3})
	small, err := e.client.CoreV1().Nodes().Get(e.ctx, "n002", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	small.Status.Capacity["nvidia.com/gpu"] = resource.MustParse("4")
	small.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("4")
	if _, err := e.client.CoreV1().Nodes().UpdateStatus(e.ctx, small, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("n002 at 4 GPUs in the engine", patience, func() bool {
		c := e.ctrl()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.eng == nil {
			return false
		}
		gpus, _, _, ok := c.eng.nodeStatus("n002")
		return ok && gpus == 4
	})
	e.createNamespace("team")
	e.createPodGroup("team", "big", 3)
	e.createPods(groupPods(e, "team", "big", 3, 8))
	e.waitFor("the gang waiting as one that can never fit", patience, func() bool {
		c := e.ctrl()
		c.mu.Lock()
		defer c.mu.Unlock()
		g := c.groups["team/big"]
		return g != nil && g.neverFits
	})
	if err := e.createNode(3); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the gang bound once n003 joined", 30*time.Second, func() bool { return e.boundIn("team")["big"] == 3 })
	var got []string
	for _, p := range e.pods("team") {
		got = append(got, p.Spec.NodeName)
	}
	sort.Strings(got)
	if want := []string{"n000", "n001", "n003"}; !equalStrings(got, want) {
		t.Fatalf("the gang bound on %v, want %v", got, want)
	}
}

// TestGangBiggerThanClusterNeverFits: a gang with more pods than the
// cluster has nodes (the engine refuses it as a bad job) waits as one
// that can never fit the cluster, with that reason (not "could not queue
// the gang: bad job", as for a malformed gang), submitted again once its
// shapes are measured again or a node joins, not in every cycle.
func TestGangBiggerThanClusterNeverFits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int
		pods  int
	}{
		{name: "one node short", nodes: 3, pods: 4},
		{name: "twice the cluster", nodes: 2, pods: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(tc.nodes)...)
			h.cycle()
			ps := h.groupPods(tc.pods, 8)
			state := func() (string, int, bool) {
				h.c.mu.Lock()
				defer h.c.mu.Unlock()
				g := h.c.groups[groupKey(ps[0], h.c.args.GPUResource)]
				return g.reason, g.gen, g.neverFits
			}
			h.cycle()
			h.answerScouts()
			h.cycle()
			reason, gen, never := state()
			if !never || !strings.Contains(reason, "can never fit this cluster") {
				t.Fatalf("a gang of %d pods on %d nodes: never fits %v, reason %q; want that it can never fit this cluster", tc.pods, tc.nodes, never, reason)
			}
			for i := 0; i < 3; i++ {
				h.c.onPod(foreignPod(fmt.Sprintf("other-%d", i), "n000", 1)) // an event: a cycle
				h.cycle()
			}
			if _, again, _ := state(); again != gen {
				t.Fatalf("the gang submitted %d more times in 3 cycles with nothing changed for it, want 0", again-gen)
			}
		})
	}
}

// TestRecreatedNodeMeasuredForWaitingGang: a node is deleted while a pod
// is still bound there (the controller keeps it, down, until the pod is
// gone) and re-created under its name (a node repaired by recreating its
// VM) while a gang waits with its shape measured without it (the
// scheduler's snapshot has no deleted node). The gang must be admitted
// there within two cycles, not after Args.AllowedTTLSeconds.
func TestRecreatedNodeMeasuredForWaitingGang(t *testing.T) {
	for _, tc := range []struct {
		name     string
		podFirst bool // the pod on the deleted node goes before the node is back
	}{
		{name: "node back before its pod is gone"},
		{name: "node back after its pod is gone", podFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(3)
			h.addNodes(nodes...)
			h.c.onPod(foreignPod("busy", "n001", 8))
			stuck := foreignPod("stuck", "n002", 8)
			h.c.onPod(stuck)
			h.cycle()
			h.c.onNode(nodes[2], true)
			h.cycle()
			ps := h.groupPods(2, 8)
			for i := 0; i < 3; i++ {
				h.cycle()
				h.answerScouts()
			}
			for _, p := range ps {
				if node := admittedOn(h, p); node != "" {
					t.Fatalf("%s admitted on %s with one node free: the test sets up nothing", p.Name, node)
				}
			}
			if tc.podFirst {
				h.c.podHandlers().DeleteFunc(stuck)
			}
			h.c.onNode(nodes[2].DeepCopy(), false)
			if !tc.podFirst {
				h.c.podHandlers().DeleteFunc(stuck)
			}
			for i := 0; i < 2; i++ {
				h.cycle()
				h.answerScouts()
			}
			h.cycle()
			got := admittedNodes(t, h, ps, "two cycles after n002 was back")
			if want := []string{"n000", "n002"}; !equalStrings(got, want) {
				t.Fatalf("the gang admitted on %v, want %v", got, want)
			}
			checkBooks(t, h)
		})
	}
}

// admittedNodes returns the nodes the pods ps are admitted on, sorted; it
// fails the test, with the gang's reason, for a pod not admitted (when
// says by when it should have been).
func admittedNodes(t *testing.T, h *hookEnv, ps []*v1.Pod, when string) []string {
	t.Helper()
	var got []string
	for _, p := range ps {
		node := admittedOn(h, p)
		if node == "" {
			h.c.mu.Lock()
			reason := h.c.groups[groupKey(p, h.c.args.GPUResource)].reason
			h.c.mu.Unlock()
			t.Fatalf("%s not admitted %s: %q", p.Name, when, reason)
		}
		got = append(got, node)
	}
	sort.Strings(got)
	return got
}
