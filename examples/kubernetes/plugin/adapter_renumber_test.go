package plugin

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestAddNodesRenumbersPodChanges: a pod of a running gang moved to
// another node (engineAdapter.replacePod, as the cycle does after a failed
// bind) leaves a pod change that the engine reports in its next plan and
// that names its nodes by number. A node that joins in the same cycle,
// before that plan (syncNodes runs again for the nodes kept at their
// former GPU count, after the pods were moved), or one relabelled, can
// shift the numbers of the cluster rebuilt by addNodes: the pod change
// must still name the nodes the pod moved from and to.
func TestAddNodesRenumbersPodChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(nodes []*v1.Node) []*v1.Node
	}{
		{name: "node joins ahead of the pod's nodes", change: func([]*v1.Node) []*v1.Node {
			n := testNodes(1)[0]
			n.Name = "a000"
			n.Labels["cloud.google.com/gce-topology-host"] = "host-a000"
			return []*v1.Node{n}
		}},
		{name: "node relabelled into another leaf", change: func(nodes []*v1.Node) []*v1.Node {
			n := nodes[0].DeepCopy()
			n.Labels["cloud.google.com/gce-topology-subblock"] = "leaf99"
			n.Labels["cloud.google.com/gce-topology-block"] = "spine9"
			return []*v1.Node{n}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := Args{}
			if err := args.Validate(); err != nil {
				t.Fatal(err)
			}
			nodes := testNodes(3)
			// n003 alone in leaf 99 (the pod starts there, the best fit,
			// and moves to leaf 00), where the relabelled case moves n000.
			extra := testNodes(4)[3]
			extra.Labels["cloud.google.com/gce-topology-subblock"] = "leaf99"
			extra.Labels["cloud.google.com/gce-topology-block"] = "spine9"
			nodes = append(nodes, extra)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			a, err := newEngineAdapter(nodes, &args, now)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.submit(gangRequest{ID: "g", Account: "ns", Submit: now, Members: []memberRequest{
				{Name: "w", Pods: 1, GPUsPerPod: 8}}}, now); err != nil {
				t.Fatal(err)
			}
			res, err := a.schedule(now.Add(time.Second))
			if err != nil || len(res.Starts) != 1 {
				t.Fatalf("one 8-GPU pod on four idle nodes: %+v %v", res, err)
			}
			if err := a.started("g", now.Add(2*time.Second)); err != nil {
				t.Fatal(err)
			}
			from := res.Starts[0].Members["w"][0]
			to, reason, err := a.replacePod("g", "w", 0, now.Add(3*time.Second))
			if err != nil || to == "" {
				t.Fatalf("replacePod: node %q, reason %q, err %v", to, reason, err)
			}
			if _, err := a.addNodes(tc.change(nodes)); err != nil {
				t.Fatal(err)
			}
			snap := a.eng.Snapshot()
			if len(snap.PodChanges) != 1 || len(snap.PodChanges[0].Pods) != 1 || len(snap.PodChanges[0].Old) != 1 {
				t.Fatalf("pod changes after the rebuild: %+v, want the one replacement", snap.PodChanges)
			}
			pc := snap.PodChanges[0]
			got := fmt.Sprintf("%s -> %s", a.cluster.NodeName(pc.Old[0].Node), a.cluster.NodeName(pc.Pods[0].Node))
			if want := from + " -> " + to; got != want {
				t.Fatalf("the pending pod change names %s on the rebuilt cluster, want %s", got, want)
			}
			if err := a.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
