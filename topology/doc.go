// Package topology models a GPU cluster: its nodes, the switch tree above
// them, and the mutable free state that placement reads.
//
// A Cluster is immutable once built: nodes with their GPU counts and
// optional intra-node GPU groups, and up to MaxLevels named levels above
// the node (for example core > spine > leaf, or spine > leaf > block where
// a block is a multi-node NVLink domain). Nodes are numbered in topology
// order, so every domain is a contiguous node range as well as a node
// bitset (github.com/bits-and-blooms/bitset), with its parent and children
// by index.
//
// A State holds each node's free-GPU mask and status (up, down, drained)
// and keeps indexes up to date on every change: per free count, the node
// bitset of schedulable nodes with at least that many free GPUs; the idle
// nodes; and per domain, counters of free GPUs, of nodes with at least k
// free GPUs for every k, and of idle nodes and their GPUs. Placement
// answers "how many nodes under domain D have at least g free GPUs" by
// reading a counter and "which ones" with word operations, never a scan of
// nodes.
//
// Clusters come from a Spec written by hand, from generators (Default2000,
// FatTree, NVL72), or from loaders: Slurm topology.conf in tree and block
// form, Slurm topology.yaml, Kubernetes node lists with topology labels.
// Hostlist expressions are expanded and compressed as Slurm does.
//
// # Usage
//
//	c := topology.Default2000()               // or Build, a loader, a generator
//	s := topology.NewState(c)
//	err := s.Allocate([]topology.NodeAlloc{{Node: 3, GPUs: 0x0f}})
//	...
//	err = s.Release(...)                      // when the job ends
//	s.SetStatus(7, topology.Down)             // a node failed
//	fmt.Print(c.Describe(), s.Describe())
//
// # Caller duties
//
// Build validates everything: a strict tree, unique names, GPU counts in
// 1..64; loaders return errors naming the file position and token, never
// a half-built cluster. Allocate and Release check every entry before
// changing anything; on error the state is unchanged. Node sets passed to
// this module must have the cluster's length (Cluster.NewNodeSet).
//
// # Concurrency
//
// A Cluster is safe for concurrent use. A State is not: serialise writers,
// or Clone it (CopyInto reuses an existing copy without allocating) for
// readers on other goroutines.
package topology
