// Package topology models a GPU cluster: its nodes, the switch tree above
// them, and the mutable free state that placement reads.
//
// A Cluster is immutable once built: nodes with their GPU counts and
// optional intra-node GPU groups, and up to MaxLevels named levels above
// the node (for example core > spine > leaf, or spine > leaf > block where
// a block is a multi-node NVLink domain). Nodes are numbered in topology
// order, so every domain is a contiguous node range [FirstNode, EndNode),
// with its parent and children by index. Domains hold no bitsets: memory is
// linear in nodes plus domains (a million-node cluster builds in well under
// a second), and Cluster.DomainNodes fills a caller's bitset
// (github.com/bits-and-blooms/bitset) with a domain's nodes when one is
// needed.
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
// Clusters come from a ClusterSpec written by hand, from generators (Default2000,
// FatTree, NVL72), or from the loaders in the subpackages: topology/slurm
// (topology.conf, topology.yaml, slurm.conf's node list) and topology/kube
// (Kubernetes node lists). Loaders report every defect of an input at once
// as a *Defects error of Defect values (file, line, sentinel, message).
// Slurm hostlists ("gpu[001-128]") are expanded and compressed by
// topology/hostlist; CompressHostlist is kept here for printing node sets.
//
// # Usage
//
//	c := topology.Default2000()               // or Build, a loader, a generator
//	s := topology.NewState(c)
//	err := s.Allocate([]topology.NodeAlloc{{Node: 3, GPUs: 0x0f}})
//	...
//	err = s.Release(...)                      // when the job ends
//	s.SetStatus(7, topology.Down)             // a node failed
//	first, end := c.DomainRange(2, 5)         // the nodes of leaf 5
//	fmt.Print(c.Describe(), s.Describe())
//
// # Caller duties
//
// Build validates everything: a strict tree, unique names, GPU counts in
// 1..64; on error it returns no cluster and names the node or domain at
// fault. Allocate and Release check every entry before changing anything;
// on error the state is unchanged. Node sets passed to this module must
// have the cluster's length (Cluster.NewNodeSet). Accessors that take a
// level, domain or node index (Cluster.Domain, Cluster.NodeDomain,
// State.DomainFreeGPUs and the like) panic if it is out of range, as a
// slice index does: a bad index is a programming error, and never reads
// another domain's or node's data. The package does no I/O; loaders read
// through the io.Reader or fs.FS their caller passes.
//
// # Concurrency
//
// A Cluster is safe for concurrent use. A State is not: serialise writers,
// or Clone it (CopyInto reuses an existing copy without allocating) for
// readers on other goroutines. Defect and Defects are plain values.
package topology
