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
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.String(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
