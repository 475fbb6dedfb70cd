package slurm_test

import (
	"errors"
	"fmt"
	"testing/fstest"

	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/slurm"
)

// A topology.conf with an Include, checked against slurm.conf's nodes.
func ExampleLoadConf() {
	fsys := fstest.MapFS{
		"slurm.conf":    {Data: []byte("NodeName=gpu[01-08] Gres=gpu:h100:8\nNodeName=login1\n")},
		"topology.conf": {Data: []byte("SwitchName=spine Switches=leaf[0-1]\nInclude leaves.conf\n")},
		"leaves.conf":   {Data: []byte("SwitchName=leaf0 Nodes=\"gpu[01-04]\"\nSwitchName=leaf1 \\\n  Nodes=gpu[05-08]\n")},
	}
	nodes, err := slurm.ReadSlurmConfNodes(fsys, "slurm.conf")
	if err != nil {
		fmt.Println(err)
		return
	}
	c, warnings, err := slurm.LoadConf(fsys, "topology.conf", slurm.Options{Nodes: nodes.Nodes, NodeGPUs: nodes.GPUs})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(c.Describe())
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// cluster: 8 nodes, 64 GPUs, levels spine > leaf
	//   spine spine: 8 nodes, 64 GPUs
	//     leaf leaf0: 4 nodes, 32 GPUs, gpu[01-04] x8 GPUs
	//     leaf leaf1: 4 nodes, 32 GPUs, gpu[05-08] x8 GPUs
	// warning: topology.conf: topology: unknown node: 1 node(s) of slurm.conf (Options.Nodes) are under no switch or block and are left out: login1
}

// Every defect of a file comes back in one error.
func ExampleParseConf_defects() {
	fsys := fstest.MapFS{"topology.conf": {Data: []byte(
		"SwitchName=s0 Nodes=n[1-4] Speed=100\nSwitchName=s1 Nodes=n[4-6]\nSwitchName=top Switches=s[0-2]\n")}}
	_, _, err := slurm.ParseConf(fsys, "topology.conf", slurm.Options{})
	var ds *topology.Defects
	if errors.As(err, &ds) {
		for _, d := range ds.List {
			fmt.Println(d)
		}
	}
	// Output:
	// topology.conf:1: topology: syntax error: unknown key Speed= in a SwitchName= line (want Switches=, Nodes= or LinkSpeed=)
	// topology.conf:2: topology: not a tree: node(s) n4 under switch "s0" (topology.conf:1) and switch "s1" (topology.conf:2)
	// topology.conf:3: topology: invalid cluster: switch "top" lists switch(es) s2, which are not defined
}

// LoadDir picks the file Slurm would: topology.yaml when the directory has
// one (its default topology, here a block topology), else topology.conf.
func ExampleLoadDir() {
	fsys := fstest.MapFS{
		"topology.conf": {Data: []byte("SwitchName=s0 Nodes=gpu[01-04]\n")},
		"topology.yaml": {Data: []byte(`- topology: nvl72
  cluster_default: true
  block:
    block_sizes: [2]
    blocks:
      - block: b1
        nodes: gpu[01-02]
      - block: b2
        nodes: gpu[03-04]
`)},
	}
	c, _, err := slurm.LoadDir(fsys, slurm.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(c.Describe())
	// Output:
	// cluster: 4 nodes, 32 GPUs, levels block
	//   block b1: 2 nodes, 16 GPUs, gpu[01-02] x8 GPUs
	//   block b2: 2 nodes, 16 GPUs, gpu[03-04] x8 GPUs
}
