package gang

import (
	"fmt"
	"math/bits"
	"testing"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// missedNode is one node of a pinned cluster: its GPUs, spine and leaf,
// and the GPUs in use on it.
type missedNode struct {
	gpus        int
	spine, leaf string
	used        uint64
}

func missedCluster(t *testing.T, nodes []missedNode) (*topology.Cluster, *topology.State) {
	t.Helper()
	spec := topology.ClusterSpec{Levels: []string{"spine", "leaf"}}
	for i, n := range nodes {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%02d", i), GPUs: n.gpus, Path: []string{n.spine, n.leaf}})
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	s := topology.NewState(c)
	for i, n := range nodes {
		if n.used != 0 {
			if err := s.Allocate([]topology.NodeAlloc{{Node: topology.NodeID(i), GPUs: n.used}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c, s
}

func nodeSet(n int, ids ...uint) *bitset.BitSet {
	s := bitset.New(uint(n))
	for _, i := range ids {
		s.Set(i)
	}
	return s
}

func withMin(m Member, n int) Member { m.Min = n; return m }

// missedCase is one gang the admitter missed: a cluster and its used
// GPUs, and the gang (given the cluster's node count).
type missedCase struct {
	name  string
	nodes []missedNode
	g     func(n int) *Spec
}

// missedCases returns the pinned cases of TestAdmitMissed.
func missedCases() []missedCase {
	gpus := func(n int) placement.Request { return placement.Request{GPUs: n} }
	return []missedCase{
		{
			// Seed 1 case 898: m1 and m0 at their minimum leave a leaf
			// for m2; the search placed m1 (a domain limit) at 2 nodes.
			name: "elastic_domain_limit_at_minimum",
			nodes: []missedNode{
				{8, "s0", "l0", 0}, {8, "s0", "l0", 0}, {8, "s0", "l1", 0}, {8, "s0", "l1", 0},
			},
			g: func(int) *Spec {
				m0 := placement.NodesOf(3, 2)
				m0.Required = "spine"
				m1 := placement.NodesOf(2, 8)
				m1.MaxDomains = 1
				m2 := gpus(11)
				m2.Exclusive, m2.Required = true, "leaf"
				return &Spec{ID: "g", Members: []Member{
					withMin(Member{Name: "m0", Request: m0}, 1),
					withMin(Member{Name: "m1", Request: m1}, 1),
					{Name: "m2", Request: m2},
				}}
			},
		},
		{
			// Seed 1 case 2960: m1's 5 GPUs must split 4+1 over n02 and
			// n03 so that m2 finds two nodes with 4 free in s0; the
			// placer puts them on one node.
			name: "gpu_total_split",
			nodes: []missedNode{
				{4, "s0", "l0", 0}, {4, "s0", "l0", 0}, {8, "s0", "l1", 0}, {8, "s0", "l1", 0}, {8, "s1", "l2", 0},
			},
			g: func(n int) *Spec {
				m1 := gpus(5)
				m1.Allowed = nodeSet(n, 0, 1, 2, 3)
				m2 := placement.NodesOf(2, 4)
				m2.Required = "spine"
				return &Spec{ID: "g", Members: []Member{
					{Name: "m0", Request: placement.NodesOf(3, 0)},
					{Name: "m1", Request: m1},
					{Name: "m2", Request: m2},
				}}
			},
		},
		{
			// Seed 1 case 2416: m1's 9 GPUs split 8+1 over n02 and n01,
			// m0 at its minimum on n01, m2 on the other nodes whole.
			name: "gpu_total_split_and_elastic_limit",
			nodes: []missedNode{
				{4, "s0", "l0", 0}, {8, "s0", "l1", 0}, {8, "s1", "l2", 0}, {8, "s1", "l3", 0}, {4, "s2", "l4", 0},
			},
			g: func(n int) *Spec {
				m0 := placement.NodesOf(3, 4)
				m0.MaxDomains, m0.Allowed = 2, nodeSet(n, 0, 1, 3, 4)
				m1 := gpus(9)
				m1.Allowed = nodeSet(n, 0, 1, 2, 4)
				return &Spec{ID: "g", Members: []Member{
					withMin(Member{Name: "m0", Request: m0}, 1),
					{Name: "m1", Request: m1},
					{Name: "m2", Request: placement.NodesOf(3, 0)},
				}}
			},
		},
		{
			// Seed 2 case 206, partly used: m1's 12 GPUs must split over
			// n03 and n00 with m0 at its minimum.
			name: "partly_used_gpu_total",
			nodes: []missedNode{
				{8, "s0", "l0", 0}, {4, "s0", "l0", 0}, {4, "s0", "l1", 0xf}, {8, "s1", "l2", 0},
			},
			g: func(n int) *Spec {
				m0 := placement.NodesOf(3, 4)
				m0.Allowed = nodeSet(n, 0, 1, 2)
				m2 := placement.NodesOf(1, 4)
				m2.Required, m2.MaxDomains = "spine", 2
				return &Spec{ID: "g", Members: []Member{
					withMin(Member{Name: "m0", Request: m0}, 1),
					{Name: "m1", Request: gpus(12)},
					{Name: "m2", Request: m2},
				}}
			},
		},
		{
			// Seed 2 case 3288, co-located in a spine: m1 (whole nodes,
			// a domain limit) and m2 at their minimum.
			name: "colocated_elastic_domain_limit",
			nodes: []missedNode{
				{8, "s0", "l0", 0}, {8, "s0", "l0", 0}, {8, "s0", "l1", 0}, {4, "s0", "l1", 0},
			},
			g: func(n int) *Spec {
				m0 := gpus(10)
				m0.Required = "spine"
				m1 := placement.NodesOf(2, 0)
				m1.MaxDomains, m1.Allowed = 2, nodeSet(n, 1, 2, 3)
				m2 := placement.NodesOf(3, 8)
				m2.Allowed = nodeSet(n, 1, 2, 3)
				return &Spec{ID: "g", Colocate: Colocation{Level: "spine", Required: true}, Members: []Member{
					{Name: "m0", Request: m0},
					withMin(Member{Name: "m1", Request: m1}, 1),
					withMin(Member{Name: "m2", Request: m2}, 1),
				}}
			},
		},
		{
			// Members with segments are placed by the placer alone; the
			// search, at the members' minimum, placed them at the largest
			// size that fitted instead: m0 took 4 nodes, leaving m1 and
			// m2 no two nodes of one leaf. At their minimum all three fit.
			name: "elastic_segments_at_minimum",
			nodes: []missedNode{
				{8, "s0", "l0", 0}, {8, "s0", "l0", 0}, {8, "s0", "l0", 0}, {8, "s0", "l1", 0}, {4, "s0", "l1", 0}, {8, "s0", "l1", 0},
			},
			g: func(int) *Spec {
				seg := func(r placement.Request) placement.Request { r.SegmentSize = 2; return r }
				m2 := seg(placement.NodesOf(4, 2))
				m2.Required = "spine"
				return &Spec{ID: "g", Members: []Member{
					withMin(Member{Name: "m0", Request: seg(placement.NodesOf(4, 4))}, 2),
					withMin(Member{Name: "m1", Request: seg(placement.NodesOf(6, 0))}, 2),
					withMin(Member{Name: "m2", Request: m2}, 2),
				}}
			},
		},
		{
			// A member with segments got the placer's one answer per
			// domain: m0 at its minimum (one segment of 2 nodes x 4 GPUs
			// inside one leaf) must take n00 and n01 (l0), so that m1's
			// 9 GPUs (n00, n02, n03 allowed) find 4+4+1 and m2
			// (exclusive) the idle n04; the placer put the segment on
			// l1, the tighter leaf, leaving m1 only n00's 8.
			name: "segments_domain_choice",
			nodes: []missedNode{
				{8, "s0", "l0", 0}, {4, "s0", "l0", 0}, {4, "s0", "l1", 0}, {4, "s0", "l1", 0}, {4, "s1", "l2", 0},
			},
			g: func(n int) *Spec {
				m0 := placement.NodesOf(4, 4)
				m0.SegmentSize, m0.MaxDomains, m0.MaxDomainsLevel = 2, 1, "spine"
				m1 := gpus(9)
				m1.Allowed = nodeSet(n, 0, 2, 3)
				m2 := gpus(3)
				m2.Exclusive = true
				return &Spec{ID: "g", Members: []Member{
					withMin(Member{Name: "m0", Request: m0}, 2),
					{Name: "m1", Request: m1},
					{Name: "m2", Request: m2},
				}}
			},
		},
	}
}

// missedCaseNamed returns the cluster, state and gang of the pinned case name.
func missedCaseNamed(t *testing.T, name string) (*topology.Cluster, *topology.State, *Spec) {
	t.Helper()
	for _, tt := range missedCases() {
		if tt.name == name {
			c, s := missedCluster(t, tt.nodes)
			return c, s, tt.g(c.NumNodes())
		}
	}
	t.Fatalf("no case %s", name)
	return nil, nil, nil
}

// TestAdmitMissed pins gangs that TestProvenFailure's brute force packs
// but that the admitter refused without SearchCut: the greedy pass and
// the search took the placer's one answer per domain for members asking
// for GPU totals, a domain limit or segments (an elastic one at the
// largest size that fitted even when searched at its minimum), so a
// packing that needs such a member placed differently was missed, and
// the gang, which fits the empty cluster, would wait forever.
func TestAdmitMissed(t *testing.T) {
	for _, tt := range missedCases() {
		t.Run(tt.name, func(t *testing.T) {
			c, s := missedCluster(t, tt.nodes)
			g := tt.g(c.NumNodes())
			b := &bruteG{c: c, g: g, memo: map[string]bool{}}
			for i := range c.NumNodes() {
				b.free = append(b.free, s.FreeCount(topology.NodeID(i)))
			}
			if !b.fit(0, 0, c.NumNodes()) {
				t.Fatal("the brute force finds no packing: the case is wrong")
			}
			before := s.FreeGPUs()
			var out Allocation
			res, err := NewAdmitter(c, Options{}).Admit(s, g, &out)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Admitted {
				t.Fatalf("refused (%s; searched %v, %d steps, cut %v, proven %v), but a packing exists", res, res.Searched, res.SearchSteps, res.SearchCut, res.Proven)
			}
			if res.Proven {
				t.Fatal("admitted with Proven set")
			}
			if got := before - s.FreeGPUs(); got != out.GPUs() {
				t.Fatalf("the state lost %d GPUs, the allocation holds %d", got, out.GPUs())
			}
			checkDomains(t, c, tt.name, g, &out)
			for mi := range g.Members {
				m, ma := &g.Members[mi], &out.Members[mi]
				r := &m.Request
				gpus := 0
				for _, x := range ma.Assignment {
					if !usable(r, int(x.Node)) {
						t.Fatalf("member %s on node %d outside its Allowed set", m.Name, x.Node)
					}
					n := bits.OnesCount64(x.GPUs)
					gpus += n
					switch {
					case r.GPUs == 0 && r.GPUsPerNode > 0 && !r.Exclusive && n != r.GPUsPerNode:
						t.Fatalf("member %s: %d GPUs on node %d, wants %d", m.Name, n, x.Node, r.GPUsPerNode)
					case (r.Exclusive || r.GPUs == 0 && r.GPUsPerNode == 0) && n != c.NodeGPUs(x.Node):
						t.Fatalf("member %s: %d GPUs on node %d, not the whole node", m.Name, n, x.Node)
					}
				}
				switch {
				case r.GPUs > 0 && (gpus < r.GPUs || !r.Exclusive && gpus != r.GPUs):
					t.Fatalf("member %s: %d GPUs, asks for %d", m.Name, gpus, r.GPUs)
				case r.GPUs > 0 && ma.Pods != len(ma.Assignment):
					t.Fatalf("member %s: %d pods on %d nodes", m.Name, ma.Pods, len(ma.Assignment))
				case r.GPUs == 0 && (ma.Pods != len(ma.Assignment) || ma.Pods < max(m.Min, 1) || ma.Pods > r.Nodes):
					t.Fatalf("member %s: %d pods on %d nodes, wants %d to %d", m.Name, ma.Pods, len(ma.Assignment), m.Min, r.Nodes)
				}
			}
		})
	}
}

// TestAdmitProvesGPUTotals: the search tries every layout of GPU-total
// members and domain-limited node members, so a refusal of a gang of
// such members that it covered without stopping at its bound is proven
// (backfill refuses it for good on the empty cluster); it was left
// unproven, the job accepted to wait forever.
func TestAdmitProvesGPUTotals(t *testing.T) {
	for _, tt := range []struct {
		name  string
		nodes []missedNode
		g     *Spec
	}{
		{
			// 9 + 8 GPUs on 16.
			name:  "gpu_totals_beyond_the_free_gpus",
			nodes: []missedNode{{8, "s0", "l0", 0}, {8, "s0", "l0", 0}},
			g: &Spec{ID: "g", Members: []Member{
				{Name: "m0", Request: placement.Request{GPUs: 9}},
				{Name: "m1", Request: placement.Request{GPUs: 8}},
			}},
		},
		{
			// m0 must take 6 GPUs on both nodes of l0, m1 the node of
			// l1: m2's 8 GPUs find 4 free.
			name:  "domain_limit_and_gpu_total",
			nodes: []missedNode{{8, "s0", "l0", 0}, {8, "s0", "l0", 0}, {8, "s0", "l1", 0}},
			g: &Spec{ID: "g", Members: []Member{
				{Name: "m0", Request: placement.Request{Nodes: 2, GPUsPerNode: 6, MaxDomains: 1}},
				{Name: "m1", Request: placement.Request{Nodes: 1, GPUsPerNode: 8, Required: "leaf"}},
				{Name: "m2", Request: placement.Request{GPUs: 8}},
			}},
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
			var out Allocation
			res, err := NewAdmitter(c, Options{}).Check(s, tt.g, &out)
			if err != nil {
				t.Fatal(err)
			}
			if res.Admitted || !res.Proven || res.SearchCut {
				t.Fatalf("admitted %v, proven %v, cut %v (%s); want a proven refusal", res.Admitted, res.Proven, res.SearchCut, res)
			}
		})
	}
}

// TestAdmitSplitZeroAllocs: an admission found by splitting a GPU total,
// by placing an elastic member with segments at its minimum, or by
// enumerating the domains of a member's segments allocates nothing in
// the steady state.
func TestAdmitSplitZeroAllocs(t *testing.T) {
	for _, name := range []string{"gpu_total_split", "elastic_segments_at_minimum", "segments_domain_choice"} {
		t.Run(name, func(t *testing.T) {
			c, s, g := missedCaseNamed(t, name)
			a := NewAdmitter(c, Options{})
			var out Allocation
			admit := func() {
				res, _ := a.Admit(s, g, &out)
				if !res.Admitted || !res.Searched {
					t.Fatalf("admitted %v, searched %v: %s", res.Admitted, res.Searched, res)
				}
				for i := range out.Members {
					if err := s.Release(out.Members[i].Assignment); err != nil {
						t.Fatal(err)
					}
				}
			}
			admit()
			if n := testing.AllocsPerRun(20, admit); n != 0 {
				t.Errorf("%v allocations per admission", n)
			}
		})
	}
}
