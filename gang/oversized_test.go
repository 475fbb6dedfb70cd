package gang

import (
	"math"
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestOversizedGangGPUs checks that the GPU counts of a valid gang asking
// for more GPUs than an int holds saturate at math.MaxInt instead of
// wrapping around to a negative count, and that a required co-location
// then refuses it on the co-location's own count.
func TestOversizedGangGPUs(t *testing.T) {
	huge := math.MaxInt/8 + 1 // huge x 8 GPUs wraps around
	cases := []struct {
		name    string
		members []Member
	}{
		{"nodes x GPUs", []Member{{Name: "w", Request: placement.NodesOf(huge, 8)}}},
		{"whole nodes", []Member{{Name: "w", Request: placement.WholeNodes(huge)}}},
		{"elastic at a huge minimum", []Member{{Name: "w", Request: placement.NodesOf(huge+1, 8), Min: huge}}},
		{"members summing past an int", []Member{
			{Name: "a", Request: placement.TotalGPUs(math.MaxInt)},
			{Name: "b", Request: placement.NodesOf(1, 8)},
		}},
	}
	c := topology.Default2000()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := &Spec{ID: "big", Members: tc.members, Colocate: Colocation{Level: "leaf", Required: true}}
			if err := g.Validate(c); err != nil {
				t.Fatalf("Validate: %v (want a valid spec)", err)
			}
			if got := g.GPUs(c); got != math.MaxInt {
				t.Errorf("GPUs = %d, want math.MaxInt", got)
			}
			if got := g.MinGPUs(c); got != math.MaxInt {
				t.Errorf("MinGPUs = %d, want math.MaxInt", got)
			}
			l := NewLedger(c, Options{})
			res, err := l.Admit(g)
			if err != nil {
				t.Fatal(err)
			}
			if res.Admitted || res.ColocationNeed != math.MaxInt || res.ColocationLevel != "leaf" {
				t.Errorf("admission %+v; want a refused co-location needing math.MaxInt GPUs under a leaf", res)
			}
		})
	}
}
