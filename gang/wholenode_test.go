package gang

import (
	"fmt"
	"testing"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestWholeNodeGPUsCountUsableNodes: a whole-node pod is counted at the
// largest node its member may use (Allowed, less Excluded), not at the
// cluster's largest node: two whole nodes of a member bound to the
// cluster's 4-GPU nodes ask for 8 GPUs, not 16 (a queue of 8 GPUs on
// those nodes refused such a job as needing 16).
func TestWholeNodeGPUsCountUsableNodes(t *testing.T) {
	spec := topology.ClusterSpec{}
	for i, g := range []int{8, 8, 4, 4, 2} {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: g})
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	set := func(nodes ...uint) *bitset.BitSet {
		s := c.NewNodeSet()
		for _, n := range nodes {
			s.Set(n)
		}
		return s
	}
	tests := []struct {
		name              string
		m                 Member
		whole, gpus, mins int
	}{
		{"no node sets", Member{Request: placement.WholeNodes(2)}, 8, 16, 16},
		{"allowed small nodes", Member{Request: placement.Request{Nodes: 2, Allowed: set(2, 3)}}, 4, 8, 8},
		{"allowed with a large node", Member{Request: placement.Request{Nodes: 2, Allowed: set(0, 2)}}, 8, 16, 16},
		{"large nodes excluded", Member{Request: placement.Request{Nodes: 2, Excluded: set(0, 1)}}, 4, 8, 8},
		{"allowed less excluded", Member{Request: placement.Request{Nodes: 1, Allowed: set(0, 3, 4), Excluded: set(0)}}, 4, 4, 4},
		{"elastic", Member{Request: placement.Request{Nodes: 3, Allowed: set(2, 3, 4)}, Min: 1}, 4, 12, 4},
		{"no usable node", Member{Request: placement.Request{Nodes: 1, Allowed: set(1), Excluded: set(1)}}, 0, 0, 0},
		{"GPUs per node", Member{Request: placement.Request{Nodes: 2, GPUsPerNode: 2, Allowed: set(2, 3)}}, 4, 4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.m.Name = "m"
			g := Spec{ID: "g", Members: []Member{tt.m}}
			if got := tt.m.WholeNodeGPUs(c); got != tt.whole {
				t.Errorf("WholeNodeGPUs = %d; want %d", got, tt.whole)
			}
			if got := g.GPUs(c); got != tt.gpus {
				t.Errorf("GPUs = %d; want %d", got, tt.gpus)
			}
			if got := g.MinGPUs(c); got != tt.mins {
				t.Errorf("MinGPUs = %d; want %d", got, tt.mins)
			}
			if n := testing.AllocsPerRun(10, func() { g.GPUs(c); g.MinGPUs(c) }); n != 0 {
				t.Errorf("GPUs and MinGPUs allocate %v times", n)
			}
		})
	}
	// Two members: each counted at its own nodes.
	two := Spec{ID: "two", Members: []Member{
		{Name: "a", Request: placement.Request{Nodes: 1, Allowed: set(4)}},
		{Name: "b", Request: placement.WholeNodes(1)},
	}}
	if got := two.GPUs(c); got != 2+8 {
		t.Errorf("two members: GPUs = %d; want 10", got)
	}
}
