package placement

import (
	"errors"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestNegativeCountNamesField checks that a request with a negative count
// is refused with an error naming the field and its value, not a
// rendering of the request that hides it ("0 whole nodes" for GPUs -1).
func TestNegativeCountNamesField(t *testing.T) {
	cases := []struct {
		name string
		r    Request
		want string
	}{
		{"Nodes", Request{Nodes: -1, GPUsPerNode: 8}, "Nodes is -1"},
		{"GPUs", Request{GPUs: -1}, "GPUs is -1"},
		{"GPUsPerNode", Request{Nodes: 1, GPUsPerNode: -2}, "GPUsPerNode is -2"},
		{"MaxDomains", Request{Nodes: 2, GPUsPerNode: 8, MaxDomains: -1}, "MaxDomains is -1"},
		{"SegmentSize", Request{Nodes: 4, GPUsPerNode: 8, SegmentSize: -2}, "SegmentSize is -2"},
	}
	c := topology.Default2000()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Validate(c)
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v; want ErrBadRequest naming %q", err, tc.want)
			}
			res, err := New(c, Options{}).Place(topology.NewState(c), &tc.r, nil)
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tc.want) || res.Placed {
				t.Fatalf("Place: placed %v, %v; want ErrBadRequest naming %q", res.Placed, err, tc.want)
			}
		})
	}
}
