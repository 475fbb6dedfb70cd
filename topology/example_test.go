package topology_test

import (
	"fmt"
	"strings"

	"github.com/phalanx-sched/phalanx/topology"
)

// The built-in default cluster: 250 nodes x 8 GPUs, 16 nodes per leaf,
// 4 leaves per spine, one core.
func ExampleDefault2000() {
	c := topology.Default2000()
	fmt.Print(c.Describe())
	s := topology.NewState(c)
	if err := s.Allocate([]topology.NodeAlloc{{Node: 0, GPUs: 0xff}, {Node: 1, GPUs: 0x0f}}); err != nil {
		panic(err)
	}
	fmt.Println(strings.Split(s.Describe(), "\n")[1])
	// Output:
	// cluster: 250 nodes, 2000 GPUs, levels core > spine > leaf
	//   core core: 250 nodes, 2000 GPUs
	//     spine spine0: 64 nodes, 512 GPUs
	//       leaf leaf00: 16 nodes, 128 GPUs, n[000-015] x8 GPUs
	//       leaf leaf01: 16 nodes, 128 GPUs, n[016-031] x8 GPUs
	//       leaf leaf02: 16 nodes, 128 GPUs, n[032-047] x8 GPUs
	//       leaf leaf03: 16 nodes, 128 GPUs, n[048-063] x8 GPUs
	//     spine spine1: 64 nodes, 512 GPUs
	//       leaf leaf04: 16 nodes, 128 GPUs, n[064-079] x8 GPUs
	//       leaf leaf05: 16 nodes, 128 GPUs, n[080-095] x8 GPUs
	//       leaf leaf06: 16 nodes, 128 GPUs, n[096-111] x8 GPUs
	//       leaf leaf07: 16 nodes, 128 GPUs, n[112-127] x8 GPUs
	//     spine spine2: 64 nodes, 512 GPUs
	//       leaf leaf08: 16 nodes, 128 GPUs, n[128-143] x8 GPUs
	//       leaf leaf09: 16 nodes, 128 GPUs, n[144-159] x8 GPUs
	//       leaf leaf10: 16 nodes, 128 GPUs, n[160-175] x8 GPUs
	//       leaf leaf11: 16 nodes, 128 GPUs, n[176-191] x8 GPUs
	//     spine spine3: 58 nodes, 464 GPUs
	//       leaf leaf12: 16 nodes, 128 GPUs, n[192-207] x8 GPUs
	//       leaf leaf13: 16 nodes, 128 GPUs, n[208-223] x8 GPUs
	//       leaf leaf14: 16 nodes, 128 GPUs, n[224-239] x8 GPUs
	//       leaf leaf15: 10 nodes, 80 GPUs, n[240-249] x8 GPUs
	// leaf00       #4..............
}
