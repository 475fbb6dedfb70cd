package placement_test

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// A 64-GPU job on 8 whole nodes lands inside one leaf of the default
// cluster; a job too large for one leaf, with the leaf required, is refused
// with the reason, which says it can never fit.
func ExamplePlacer_Place() {
	c := topology.Default2000()
	s := topology.NewState(c)
	p := placement.New(c, placement.Options{})

	req := placement.Request{Nodes: 8, GPUsPerNode: 8}
	res, err := p.Place(s, &req, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d nodes, %d leaf, highest level crossed %d\n", req.String(), res.Nodes, res.Leaves(c), res.HighestCrossed(c))

	big := placement.Request{Nodes: 20, GPUsPerNode: 8, Required: "leaf"}
	res, _ = p.Place(s, &big, nil)
	fmt.Printf("%s: placed %v: %s\n", big.String(), res.Placed, res.Reason)
	fmt.Println("unresolvable:", res.Reason.Unresolvable)
	// Output:
	// 8 nodes x 8 GPUs: 8 nodes, 1 leaf, highest level crossed -1
	// 20 nodes x 8 GPUs, required leaf: placed false: needs 20 nodes with 8 free GPUs under one leaf; the best leaf has 16; it cannot fit this cluster even with every GPU free
	// unresolvable: true
}

// Kueue-style multi-layer slices: 96 pods in slices of 48 inside one zone,
// each made of slices of 16 inside one rack. Racks of 18 nodes hold one
// slice of 16 each, so each zone's slice of 48 takes three racks.
func ExampleSegment() {
	spec := topology.ClusterSpec{Levels: []string{"zone", "rack"}, LocalDomainNames: true}
	for z := range 2 {
		for r := range 4 {
			for n := range 18 {
				spec.Nodes = append(spec.Nodes, topology.NodeSpec{
					Name: fmt.Sprintf("z%d-r%d-n%02d", z, r, n), GPUs: 4,
					Path: []string{fmt.Sprintf("z%d", z), fmt.Sprintf("r%d", r)},
				})
			}
		}
	}
	c, err := topology.Build(spec)
	if err != nil {
		panic(err)
	}
	p := placement.New(c, placement.Options{})
	req := placement.Request{Nodes: 96, GPUsPerNode: 4, Segments: [placement.MaxSegmentLayers]placement.Segment{{Size: 48, Level: "zone"}, {Size: 16, Level: "rack"}}}
	res, err := p.Place(topology.NewState(c), &req, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d nodes on %d zones and %d racks\n", req.String(), res.Nodes, res.Spans[0], res.Spans[1])
	// Output:
	// 96 nodes x 4 GPUs, segments of 48 per zone, segments of 16 per rack: 96 nodes on 2 zones and 6 racks
}

// A failure counts the nodes left out, by reason: here one node is down,
// two are drained and the others lack the free GPUs.
func ExampleReason() {
	c := topology.Default2000()
	s := topology.NewState(c)
	_ = s.SetStatus(0, topology.Down)
	_ = s.SetStatus(1, topology.Drained)
	_ = s.SetStatus(2, topology.Drained)
	for n := 3; n < c.NumNodes(); n++ {
		_ = s.Allocate([]topology.NodeAlloc{{Node: topology.NodeID(n), GPUs: 0x0f}})
	}
	p := placement.New(c, placement.Options{})
	req := placement.NodesOf(2, 6)
	res, _ := p.Place(s, &req, nil)
	fmt.Println(res.Reason)
	e := res.Reason.Excluded
	fmt.Printf("down %d, drained %d, short %d, unresolvable %v\n", e.Down, e.Drained, e.ShortOfGPUs, res.Reason.Unresolvable)
	// Output:
	// needs 2 nodes with 6 free GPUs; the cluster has 0 (250 nodes left out: 1 down, 2 drained, 247 short of free GPUs)
	// down 1, drained 2, short 247, unresolvable false
}

// Options tune a Placer when it is built. Here 44 nodes of 8 free GPUs
// must sit on at most 2 spines of a cluster where every third node has a
// GPU busy: which spines, and which of their leaves, is the knapsack the
// search budget bounds. With a budget of 1 the search cannot run, and the
// greedy answer comes back marked approximate; the default budget finds
// one leaf fewer and proves it.
func ExampleOptions() {
	c := topology.Default2000()
	s := topology.NewState(c)
	for i := range topology.NodeID(250) {
		if i%3 == 0 {
			_ = s.Allocate([]topology.NodeAlloc{{Node: i, GPUs: 0b1}}) // 1 GPU busy on every third node
		}
	}
	req := placement.Request{Nodes: 44, GPUsPerNode: 8, MaxDomains: 2, MaxDomainsLevel: "spine"}
	for _, budget := range []int{1, 0} {
		p := placement.New(c, placement.Options{SearchBudget: budget})
		res, _ := p.Place(s, &req, nil)
		fmt.Printf("budget %d: %d nodes, %d leaves, approximate %v\n", budget, res.Nodes, res.Leaves(c), res.Approximate)
	}
	// Output:
	// budget 1: 44 nodes, 5 leaves, approximate true
	// budget 0: 44 nodes, 4 leaves, approximate false
}

// A caller whose Allowed stands for something its users know by another
// name says so: here a partition of the first 32 nodes, as a batch
// system might call it, is too small for 40 nodes.
func ExampleRequest_allowedLabel() {
	c := topology.Default2000()
	p := placement.New(c, placement.Options{})
	partition := c.NewNodeSet()
	for n := range uint(32) {
		partition.Set(n)
	}
	req := placement.Request{Nodes: 40, GPUsPerNode: 8, Allowed: partition, AllowedLabel: "outside partition gpu-a"}
	res, _ := p.Place(topology.NewState(c), &req, nil)
	fmt.Println(res.Reason)
	// Output:
	// needs 40 nodes with 8 free GPUs; the cluster has 32 (218 nodes left out: 218 outside partition gpu-a); it cannot fit this cluster even with every GPU free
}
