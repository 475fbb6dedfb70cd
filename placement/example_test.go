package placement_test

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// A 64-GPU job on 8 whole nodes lands inside one leaf of the default
// cluster; a job too large for one leaf, with the leaf required, is refused
// with the reason.
func ExamplePlacer_Place() {
	c := topology.Default2000()
	s := topology.NewState(c)
	p := placement.New(c)

	req := placement.Request{Nodes: 8, GPUsPerNode: 8}
	res, err := p.Place(s, &req, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d nodes, %d leaf, highest level crossed %d\n", req.String(), res.Nodes, res.Leaves(c), res.HighestCrossed(c))

	big := placement.Request{Nodes: 20, GPUsPerNode: 8, Required: "leaf"}
	res, _ = p.Place(s, &big, nil)
	fmt.Printf("%s: placed %v: %s\n", big.String(), res.Placed, res.Reason)
	// Output:
	// 8 nodes x 8 GPUs: 8 nodes, 1 leaf, highest level crossed -1
	// 20 nodes x 8 GPUs, required leaf: placed false: needs 20 nodes with 8 free GPUs under one leaf; the best leaf has 16
}
