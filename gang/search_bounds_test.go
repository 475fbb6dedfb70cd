package gang

import (
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestSearchBoundsProve pins refusals that TestProvenFailure left
// unproven: the search ran out of SearchWork on gangs that cannot fit,
// because its check of the free GPUs counted an exclusive GPU total at
// its GPUs and a whole-node pod at one GPU. An exclusive total takes
// whole nodes, a multiple of the GPUs every node size divides (11 GPUs
// on nodes of 4 and 8 take at least 12), and k whole nodes take at least
// the GPUs of the k smallest nodes: with these bounds the search proves
// the refusals within its bound.
func TestSearchBoundsProve(t *testing.T) {
	gpus := func(n int) placement.Request { return placement.Request{GPUs: n} }
	for _, tt := range []struct {
		name  string
		nodes []missedNode
		g     *Spec
	}{
		{
			// TestProvenFailure empty cluster case 3595: 9 + 12 + 12
			// (11 exclusive) GPUs on 32.
			name: "exclusive_total_rounds_up",
			nodes: []missedNode{
				{8, "s0", "l0", 0}, {4, "s0", "l0", 0}, {4, "s0", "l1", 0}, {8, "s1", "l2", 0}, {8, "s1", "l3", 0},
			},
			g: func() *Spec {
				m1 := gpus(12)
				m1.MaxDomains = 2
				m2 := gpus(11)
				m2.Exclusive, m2.MaxDomains = true, 2
				return &Spec{ID: "g", Members: []Member{
					{Name: "m0", Request: gpus(9)},
					{Name: "m1", Request: m1},
					{Name: "m2", Request: m2},
				}}
			}(),
		},
		{
			// Case 4009: 3 whole nodes take at least 4+4+8 GPUs; with
			// 7 and 11 more, 34 on 32.
			name: "whole_nodes_take_the_smallest_nodes",
			nodes: []missedNode{
				{8, "s0", "l0", 0}, {4, "s0", "l0", 0}, {4, "s0", "l0", 0}, {8, "s0", "l1", 0}, {8, "s0", "l1", 0},
			},
			g: func() *Spec {
				m1 := gpus(7)
				m1.MaxDomains = 2
				m2 := gpus(11)
				m2.Required, m2.MaxDomains = "spine", 1
				return &Spec{ID: "g", Members: []Member{
					{Name: "m0", Request: placement.NodesOf(3, 0)},
					{Name: "m1", Request: m1},
					{Name: "m2", Request: m2},
				}}
			}(),
		},
		{
			// Partly used case 1272: the exclusive 7 takes at least 8;
			// 11 + 8 + 8 on 26 free.
			name: "partly_used_exclusive_total",
			nodes: []missedNode{
				{8, "s0", "l0", 0}, {4, "s0", "l0", 0}, {8, "s0", "l0", 0x3}, {4, "s0", "l1", 0}, {4, "s0", "l1", 0},
			},
			g: func() *Spec {
				m0 := gpus(11)
				m0.MaxDomains = 2
				m1 := gpus(7)
				m1.Exclusive, m1.Required = true, "leaf"
				m2 := gpus(8)
				m2.Required = "leaf"
				return &Spec{ID: "g", Members: []Member{
					{Name: "m0", Request: m0},
					{Name: "m1", Request: m1},
					{Name: "m2", Request: m2},
				}}
			}(),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, s := missedCluster(t, tt.nodes)
			b := &bruteG{c: c, g: tt.g, memo: map[string]bool{}}
			for i := range c.NumNodes() {
				b.free = append(b.free, s.FreeCount(topology.NodeID(i)))
			}
			if b.fit(0, 0, c.NumNodes()) {
				t.Fatal("the brute force packs the gang: the case is wrong")
			}
			before := s.FreeGPUs()
			var out Allocation
			res, err := NewAdmitter(c, Options{}).Admit(s, tt.g, &out)
			if err != nil {
				t.Fatal(err)
			}
			if res.Admitted || !res.Proven || res.SearchCut {
				t.Fatalf("admitted %v, proven %v, cut %v after %d steps (%s); want a proven refusal", res.Admitted, res.Proven, res.SearchCut, res.SearchSteps, res)
			}
			if s.FreeGPUs() != before {
				t.Fatalf("the refusal changed the state: %d free GPUs, %d before", s.FreeGPUs(), before)
			}
		})
	}
}

// TestSearchCountsOwnNodes: pods that need a node of their own (whole
// nodes, or more than half a node's GPUs) are counted against the nodes
// that can hold them before the search enumerates anything. On the
// default cluster with 42 idle nodes spread over every leaf (the others
// with one GPU in use, so the free GPUs are plenty), three members of 15
// whole nodes cannot fit; the greedy pass places two, and the search,
// which checked only the free GPUs, tried the ways of taking 15 of the
// idle nodes leaf by leaf until it stopped at SearchWork, unproven. The
// same with 8 pods of 8 GPUs and 7 of 6 (no two share a node) when 14
// nodes are idle and the others have 4 GPUs free.
func TestSearchCountsOwnNodes(t *testing.T) {
	c := topology.Default2000()
	for _, tt := range []struct {
		name  string
		every int    // node i is idle when i%every == 0
		used  uint64 // the GPUs in use on the others
		g     *Spec
	}{
		{"whole_nodes", 6, 0x1, &Spec{ID: "g", Members: []Member{
			{Name: "m0", Request: placement.NodesOf(15, 0)},
			{Name: "m1", Request: placement.NodesOf(15, 0)},
			{Name: "m2", Request: placement.NodesOf(15, 0)},
		}}},
		{"big_pods", 18, 0xf, &Spec{ID: "g", Members: []Member{
			{Name: "m0", Request: placement.NodesOf(8, 8)},
			{Name: "m1", Request: placement.NodesOf(7, 6)},
		}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := topology.NewState(c)
			for i := range c.NumNodes() {
				if i%tt.every != 0 {
					if err := s.Allocate([]topology.NodeAlloc{{Node: topology.NodeID(i), GPUs: tt.used}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			before := s.Clone()
			var out Allocation
			res, err := NewAdmitter(c, Options{}).Admit(s, tt.g, &out)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Searched || res.Admitted || !res.Proven || res.SearchCut {
				t.Fatalf("searched %v, admitted %v, proven %v, cut %v after %d steps (%s); want a proven refusal", res.Searched, res.Admitted, res.Proven, res.SearchCut, res.SearchSteps, res)
			}
			if !s.Equal(before) {
				t.Fatal("the refusal changed the state")
			}
		})
	}
}
