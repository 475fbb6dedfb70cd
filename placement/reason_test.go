package placement

import "testing"

// TestReasonScope: a NoCapacity or NoSegments reason counts the cluster,
// unless a caller that confined the request to one domain named its level
// (package gang does for co-located members): then it counts the domain
// tried.
func TestReasonScope(t *testing.T) {
	nodes := unitDesc{mode: modeNodes, g: 8}
	segs := unitDesc{mode: modeNodes, g: 8, seg: 4, segName: "leaf"}
	for _, tc := range []struct {
		name string
		r    Reason
		want string
	}{
		{"capacity, cluster", Reason{Code: NoCapacity, Need: 2, Have: 1, unit: nodes}, "needs 2 nodes with 8 free GPUs; the cluster has 1"},
		{"capacity, leaf tried", Reason{Code: NoCapacity, Level: "leaf", Need: 2, Have: 1, unit: nodes}, "needs 2 nodes with 8 free GPUs; the leaf tried has 1"},
		{"segments, cluster", Reason{Code: NoSegments, Need: 2, Have: 1, unit: segs}, "needs 2 segments of 4 nodes with 8 free GPUs inside one leaf; the cluster has room for 1"},
		{"segments, spine tried", Reason{Code: NoSegments, Level: "spine", Need: 2, Have: 1, unit: segs}, "needs 2 segments of 4 nodes with 8 free GPUs inside one leaf; the spine tried has room for 1"},
		{"required level unchanged", Reason{Code: RequiredLevel, Level: "leaf", Need: 2, Have: 1, unit: nodes}, "needs 2 nodes with 8 free GPUs under one leaf; the best leaf has 1"},
		{"one GPU a node", Reason{Code: NoCapacity, Need: 3, Have: 1, unit: unitDesc{mode: modeNodes, g: 1}}, "needs 3 nodes with 1 free GPU; the cluster has 1"},
		{"one GPU a node, exclusive", Reason{Code: NoCapacity, Need: 1, unit: unitDesc{mode: modeNodes, g: 1, excl: true}}, "needs 1 idle node with at least 1 GPU; the cluster has 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.String(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRequestString: a request in a user's words, singular where one.
func TestRequestString(t *testing.T) {
	for _, tc := range []struct {
		r    Request
		want string
	}{
		{TotalGPUs(1), "1 GPU"},
		{TotalGPUs(12), "12 GPUs"},
		{WholeNodes(1), "1 whole node"},
		{Request{Nodes: 2}, "2 whole nodes"},
		{NodesOf(1, 1), "1 node x 1 GPU"},
		{Request{Nodes: 16, GPUsPerNode: 8, Required: "leaf", MaxDomains: 1, MaxDomainsLevel: "rack"}, "16 nodes x 8 GPUs, required leaf, at most 1 rack"},
		{Request{Nodes: 16, GPUsPerNode: 8, MaxDomains: 3, MaxDomainsLevel: "leaf"}, "16 nodes x 8 GPUs, at most 3 leaves"},
		{Request{Nodes: 16, GPUsPerNode: 8, MaxDomains: 2}, "16 nodes x 8 GPUs, at most 2 lowest-level domains"},
		{Request{Nodes: 16, GPUsPerNode: 8, MaxDomains: 1}, "16 nodes x 8 GPUs, at most 1 lowest-level domain"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.r.String(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
