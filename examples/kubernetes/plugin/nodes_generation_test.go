package plugin

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestModelLabels: the label keys the cluster model reads for each preset:
// the level keys, without a trailing kubernetes.io/hostname (it adds no
// level, and topology/kube reads no label for it).
func TestModelLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		args Args
		want []string
	}{
		{name: "gke (default)", want: []string{"cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock", "cloud.google.com/gce-topology-host"}},
		{name: "aws", args: Args{Topology: "aws"}, want: []string{"topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2", "topology.k8s.aws/network-node-layer-3"}},
		{name: "nvlink", args: Args{Topology: "nvlink"}, want: []string{"nvidia.com/gpu.clique"}},
		{name: "zone", args: Args{Topology: "zone"}, want: []string{"topology.kubernetes.io/zone"}},
		{name: "flat", args: Args{Topology: "flat"}, want: []string{}},
		{name: "labels ending in the hostname", args: Args{Topology: "labels", Levels: []string{"example.com/rack", "kubernetes.io/hostname"}},
			want: []string{"example.com/rack"}},
		{name: "labels", args: Args{Topology: "labels", Levels: []string{"example.com/row", "example.com/rack"}},
			want: []string{"example.com/row", "example.com/rack"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.args.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := modelLabels(&tc.args); !slices.Equal(got, tc.want) {
				t.Fatalf("modelLabels = %q, want %q", got, tc.want)
			}
		})
	}
	if got := modelLabels(&Args{Topology: "nonsense"}); got != nil {
		t.Fatalf("modelLabels of args that do not validate = %q, want nil", got)
	}
}

// TestNodeGeneration: nodeGeneration changes with what the cluster model
// reads of a node (the labels of modelLabels, a missing one apart from an
// empty one, the GPU capacity and allocatable count, a missing allocatable
// count apart from "0") and with nothing else: other labels, taints,
// cordon, readiness, other resources.
func TestNodeGeneration(t *testing.T) {
	args := Args{}
	if err := args.Validate(); err != nil {
		t.Fatal(err)
	}
	keys := modelLabels(&args)
	const subblock = "cloud.google.com/gce-topology-subblock"
	for _, tc := range []struct {
		name    string
		base    func(n *v1.Node) // applied to both copies (nil: none)
		change  func(n *v1.Node)
		differs bool
	}{
		{name: "unread label added", change: func(n *v1.Node) { n.Labels["example.com/heartbeat"] = "1" }},
		{name: "unread label rewritten", base: func(n *v1.Node) { n.Labels["example.com/heartbeat"] = "1" },
			change: func(n *v1.Node) { n.Labels["example.com/heartbeat"] = "2" }},
		{name: "unread label removed", base: func(n *v1.Node) { n.Labels["example.com/heartbeat"] = "1" },
			change: func(n *v1.Node) { delete(n.Labels, "example.com/heartbeat") }},
		{name: "hostname label", change: func(n *v1.Node) { n.Labels["kubernetes.io/hostname"] = "h" }},
		{name: "taint", change: func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule}}
		}},
		{name: "cordon", change: func(n *v1.Node) { n.Spec.Unschedulable = true }},
		{name: "not ready", change: func(n *v1.Node) { n.Status.Conditions[0].Status = v1.ConditionFalse }},
		{name: "other resource", change: func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("64") }},
		{name: "level label value", change: func(n *v1.Node) { n.Labels[subblock] = "leaf09" }, differs: true},
		{name: "level label removed", change: func(n *v1.Node) { delete(n.Labels, subblock) }, differs: true},
		{name: "level label emptied", change: func(n *v1.Node) { n.Labels[subblock] = "" }, differs: true},
		{name: "level label missing, then empty", base: func(n *v1.Node) { delete(n.Labels, subblock) },
			change: func(n *v1.Node) { n.Labels[subblock] = "" }, differs: true},
		{name: "level label value with separators", change: func(n *v1.Node) { n.Labels[subblock] = `leaf00"|-` }, differs: true},
		{name: "GPU capacity", change: func(n *v1.Node) { n.Status.Capacity = gpuList("4") }, differs: true},
		{name: "GPU allocatable", change: func(n *v1.Node) { n.Status.Allocatable = gpuList("7") }, differs: true},
		{name: "GPU allocatable missing, then 0", base: func(n *v1.Node) { n.Status.Allocatable = v1.ResourceList{} },
			change: func(n *v1.Node) { n.Status.Allocatable = gpuList("0") }, differs: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := testNodes(1)[0]
			a.Status.Capacity, a.Status.Allocatable = gpuList("8"), gpuList("8")
			if tc.base != nil {
				tc.base(a)
			}
			b := a.DeepCopy()
			tc.change(b)
			ga, gb := nodeGeneration(a, keys, args.GPUResource), nodeGeneration(b, keys, args.GPUResource)
			if (ga != gb) != tc.differs {
				t.Fatalf("generations %q and %q: differ %v, want %v", ga, gb, ga != gb, tc.differs)
			}
		})
	}
}
