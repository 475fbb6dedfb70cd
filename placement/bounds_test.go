package placement

import (
	"errors"
	"strings"
	"testing"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestHugeCounts: counts far beyond the cluster (2^31 and more) are
// refused cleanly, never a panic or an overflow: larger than the cluster
// is not placed for lack of capacity; a segment larger than the cluster or
// a node set of the wrong length is a bad request.
func TestHugeCounts(t *testing.T) {
	c := topology.Default2000()
	p := New(c, Options{})
	s := topology.NewState(c)
	tests := []struct {
		name    string
		req     Request
		bad     bool
		message string
	}{
		{"nodes 2^31", NodesOf(1<<31, 8), false, "needs 2147483648 nodes with 8 free GPUs; the cluster has 250"},
		{"whole nodes 2^40", WholeNodes(1 << 40), false, "the cluster has 250"},
		{"gpus 2^31", TotalGPUs(1 << 31), false, "needs 2147483648 free GPUs; the cluster has 2000"},
		{"gpus 2^62", TotalGPUs(1 << 62), false, "the cluster has 2000"},
		{"one more node than the cluster", NodesOf(251, 8), false, "the cluster has 250"},
		{"segment 2^32", Request{Nodes: 1 << 33, GPUsPerNode: 8, SegmentSize: 1 << 32}, true, "segments of 4294967296 nodes"},
		{"allowed too short", Request{Nodes: 1, GPUsPerNode: 8, Allowed: bitset.New(10)}, true, "Allowed node set has length 10"},
		{"excluded too long", Request{Nodes: 1, GPUsPerNode: 8, Excluded: bitset.New(251)}, true, "Excluded node set has length 251"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := p.Place(s, &tt.req, nil)
			switch {
			case tt.bad && !errors.Is(err, ErrBadRequest):
				t.Fatalf("Place = %v, %v; want ErrBadRequest", res, err)
			case tt.bad:
				if !strings.Contains(err.Error(), tt.message) {
					t.Fatalf("error %q lacks %q", err, tt.message)
				}
			case err != nil || res.Placed:
				t.Fatalf("Place = %+v, %v; want not placed", res, err)
			case !strings.Contains(res.Reason.String(), tt.message):
				t.Fatalf("reason %q lacks %q", res.Reason, tt.message)
			}
		})
	}
}
