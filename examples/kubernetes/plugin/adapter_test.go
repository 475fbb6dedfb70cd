package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testNodes(n int) []*v1.Node {
	out := make([]*v1.Node, n)
	for i := range out {
		res := v1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
		out[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: map[string]string{
			"cloud.google.com/gce-topology-block":    fmt.Sprintf("spine%d", i/64),
			"cloud.google.com/gce-topology-subblock": fmt.Sprintf("leaf%02d", i/16),
			"cloud.google.com/gce-topology-host":     "host-" + nodeName(i)}},
			Status: v1.NodeStatus{Capacity: res, Allocatable: res,
				Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
	}
	return out
}

// TestAdapterForeignAndGrowth: foreign GPUs enter the engine and leave it,
// a gang placed meanwhile keeps its GPUs, and new nodes join the cluster,
// with the engine's books checked after every step (engineAdapter.check).
func TestAdapterForeignAndGrowth(t *testing.T) {
	args := Args{}
	if err := args.Validate(); err != nil {
		t.Fatal(err)
	}
	nodes := testNodes(32)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := newEngineAdapter(nodes[:16], &args, now)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, wantFree int) {
		t.Helper()
		if err := a.check(); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := a.freeGPUCount(); got != wantFree {
			t.Fatalf("%s: free GPUs %d, want %d", step, got, wantFree)
		}
	}
	if err := a.setForeign(map[string]int{"n000": 4, "n001": 8}, now); err != nil {
		t.Fatal(err)
	}
	check("foreign pods", 128-12)
	if err := a.submit(gangRequest{ID: "g", Account: "team", Submit: now, Members: []memberRequest{
		{Name: "w", Pods: 15, GPUsPerPod: 8}}}, now); err != nil {
		t.Fatal(err)
	}
	res, err := a.schedule(now.Add(time.Second))
	if err != nil || len(res.Starts) != 0 || len(res.Waiting) != 1 {
		t.Fatalf("15 whole nodes on 14 idle ones: starts %v waiting %v err %v", res.Starts, res.Waiting, err)
	}
	if err := a.setForeign(map[string]int{"n000": 4}, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	check("one foreign pod gone", 128-4)
	res, err = a.schedule(now.Add(3 * time.Second))
	if err != nil || len(res.Starts) != 1 || len(res.Starts[0].Members["w"]) != 15 {
		t.Fatalf("the gang must start on the 15 idle nodes: %+v %v", res, err)
	}
	for _, n := range res.Starts[0].Members["w"] {
		if n == "n000" {
			t.Fatal("the gang was placed on the node a foreign pod uses")
		}
	}
	check("gang started", 128-4-120)
	if _, err := a.addNodes(nodes[16:]); err != nil {
		t.Fatal(err)
	}
	check("16 nodes added", 256-4-120)
	if err := a.setForeign(map[string]int{"n020": 2}, now.Add(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	check("foreign pod moved", 256-2-120)
	// The books check is not vacuous: a foreign count the engine does not
	// hold is caught.
	a.foreign["n020"] = 3
	if err := a.check(); err == nil {
		t.Fatal("check accepted a foreign count of 3 GPUs on n020 where the engine holds 2")
	}
	a.foreign["n020"] = 2
	if !a.active("g") {
		t.Fatal("the gang must survive restores")
	}
}

// TestAdapterNamesTheFilteredNodes: a member's allowed nodes are those the
// profile's other Filter plugins let its pods use, and the engine's reason
// for a gang those nodes can never hold says so, not "outside Allowed"
// (a field the user never wrote).
func TestAdapterNamesTheFilteredNodes(t *testing.T) {
	args := Args{}
	if err := args.Validate(); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := newEngineAdapter(testNodes(16), &args, now)
	if err != nil {
		t.Fatal(err)
	}
	err = a.submit(gangRequest{ID: "g", Account: "team", Submit: now, Members: []memberRequest{
		{Name: "w", Pods: 4, GPUsPerPod: 8, Allowed: []string{"n000", "n001", "n002"}}}}, now)
	if err == nil || !strings.Contains(err.Error(), "13 rejected by the profile's other filters") || strings.Contains(err.Error(), "Allowed") {
		t.Fatalf("4 pods on 3 allowed nodes of 16: %v", err)
	}
}

// TestAdapterForeignAppliedOnceFree: a foreign pod bound onto GPUs a gang
// holds (another scheduler raced it) gets what is free; once the gang is
// gone, the rest of its GPUs are counted too, with no change in the counts
// asked for.
func TestAdapterForeignAppliedOnceFree(t *testing.T) {
	args := Args{}
	if err := args.Validate(); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := newEngineAdapter(testNodes(1), &args, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.submit(gangRequest{ID: "g", Account: "team", Submit: now, Members: []memberRequest{
		{Name: "w", Pods: 1, GPUsPerPod: 4}}}, now); err != nil {
		t.Fatal(err)
	}
	if res, err := a.schedule(now.Add(time.Second)); err != nil || len(res.Starts) != 1 {
		t.Fatalf("the gang must start: %+v %v", res, err)
	}
	if err := a.setForeign(map[string]int{"n000": 6}, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := a.check(); err != nil {
		t.Fatal(err)
	}
	if got := a.foreign["n000"]; got != 4 {
		t.Fatalf("foreign GPUs applied on n000: %d, want the 4 the gang leaves free", got)
	}
	if err := a.cancel("g", now.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := a.setForeign(map[string]int{"n000": 6}, now.Add(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := a.check(); err != nil {
		t.Fatal(err)
	}
	if free := a.freeGPUCount(); free != 2 || a.foreign["n000"] != 6 {
		t.Fatalf("n000 has 6 GPUs used by a foreign pod: the engine counts %d free, %d foreign; want 2 and 6", free, a.foreign["n000"])
	}
}

// TestAdapterAdoptDownNodeWholeOrNothing: adopt with downOK of a gang g on
// n000 and the down node n001, beside a gang h on n002, installs an engine
// in which n001 is already down: g is ended by the node's failure and the
// cycle that follows places a new gang on n000 and n003 only. When n001
// cannot be taken down again (Engine.NodeDown fails: here the engine's
// clock was moved past the adapter's by calls made on it directly, so
// NodeDown at the adapter's time is refused), nothing of g is installed:
// g is not adopted (its error names n001), h alone is, n001 stays down,
// and the cycle that follows places nothing on n001. Installing the
// candidate engine before taking the node down (the old order) left g
// running on n001 with the node up, for Schedule to use.
func TestAdapterAdoptDownNodeWholeOrNothing(t *testing.T) {
	args := Args{}
	if err := args.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		downFail bool // NodeDown of n001 fails
	}{
		{"node taken down before install", false},
		{"node down fails, nothing of its gangs installed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			a, err := newEngineAdapter(testNodes(4), &args, now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.setNode("n001", true, false, now); err != nil {
				t.Fatal(err)
			}
			later := now.Add(time.Hour)
			if tc.downFail {
				id, _ := a.cluster.LookupNode("n003")
				if err := a.eng.Drain(id, later); err != nil {
					t.Fatal(err)
				}
				if err := a.eng.Resume(id, later); err != nil {
					t.Fatal(err)
				}
			}
			reqs := []adoptRequest{
				{ID: "g", Account: "team", Submit: now, Members: []adoptMember{{Name: "w", GPUsPerPod: 8, Nodes: []string{"n000", "n001"}}}},
				{ID: "h", Account: "team", Submit: now, Members: []adoptMember{{Name: "w", GPUsPerPod: 8, Nodes: []string{"n002"}}}},
			}
			errs, failed, err := a.adopt(reqs, nil, now.Add(time.Second), true)
			if _, down, _, _ := a.nodeStatus("n001"); !down {
				t.Fatal("the installed engine holds n001 up")
			}
			if a.held("g") || !a.active("h") {
				t.Fatalf("the installed engine: g held %v, h active %v; want g gone and h running", a.held("g"), a.active("h"))
			}
			if tc.downFail {
				if err == nil || !strings.Contains(err.Error(), "node n001") || errs[0] == nil || !strings.Contains(errs[0].Error(), "node n001") || errs[1] != nil || len(failed) != 0 {
					t.Fatalf("adopt: errs %v, failed %v, err %v; want g refused naming n001, h adopted, no failure", errs, failed, err)
				}
			} else if err != nil || errs[0] != nil || errs[1] != nil || failed["g"] != "n001" || len(failed) != 1 {
				t.Fatalf("adopt: errs %v, failed %v, err %v; want both adopted and g failed by n001", errs, failed, err)
			}
			if err := a.check(); err != nil {
				t.Fatal(err)
			}
			if err := a.submit(gangRequest{ID: "next", Account: "team", Submit: now, Members: []memberRequest{
				{Name: "w", Pods: 2, GPUsPerPod: 8}}}, later); err != nil {
				t.Fatal(err)
			}
			res, err := a.schedule(later.Add(time.Second))
			if err != nil || len(res.Starts) != 1 {
				t.Fatalf("the next gang must start on n000 and n003: %+v %v", res, err)
			}
			nodes := slices.Sorted(slices.Values(res.Starts[0].Members["w"]))
			if want := []string{"n000", "n003"}; !slices.Equal(nodes, want) {
				t.Fatalf("the next gang placed on %v, want %v (n001 down, n002 held by h)", nodes, want)
			}
		})
	}
}
