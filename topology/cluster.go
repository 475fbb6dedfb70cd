package topology

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// MaxLevels is the deepest topology above the node that a cluster may have.
const MaxLevels = 8

// MaxGPUsPerNode is the largest GPU count of one node; a node's GPUs are
// the bits of a uint64 mask.
const MaxGPUsPerNode = 64

// Sentinel errors. Errors returned by Build and by the loaders wrap one of
// these and name the node, domain, file position or token at fault.
var (
	// ErrInvalidSpec marks a cluster description that cannot be built.
	ErrInvalidSpec = errors.New("topology: invalid cluster")
	// ErrDuplicate marks a node or domain defined twice.
	ErrDuplicate = errors.New("topology: duplicate name")
	// ErrNotTree marks a node or domain with two parents, or a cycle.
	ErrNotTree = errors.New("topology: not a tree")
	// ErrGPUCount marks a GPU count outside 1..64 or a bad GPU group.
	ErrGPUCount = errors.New("topology: GPU count out of range")
	// ErrSyntax marks malformed loader input.
	ErrSyntax = errors.New("topology: syntax error")
	// ErrUnknownNode marks a node name or index that the cluster does not have.
	ErrUnknownNode = errors.New("topology: unknown node")
	// ErrUnknownLevel marks a level name the cluster does not have.
	ErrUnknownLevel = errors.New("topology: unknown level")
)

// ClusterSpec is the description a Cluster is built from: what loaders and
// generators produce and what a program can write by hand.
type ClusterSpec struct {
	// Levels names the levels above the node, top to bottom, for example
	// {"spine", "leaf"} or {"spine", "leaf", "block"}. Zero levels is a
	// flat cluster. At most MaxLevels.
	Levels []string
	// Nodes lists every node once.
	Nodes []NodeSpec
	// LocalDomainNames makes a domain's identity its path from the top
	// (the domain "r1" under "b1" differs from "r1" under "b2"), as with
	// Kubernetes topology labels. When false (Slurm), a domain name is
	// unique within its level and a name found under two parents is an
	// ErrNotTree error.
	LocalDomainNames bool
}

// NodeSpec describes one node of a ClusterSpec.
type NodeSpec struct {
	// Name is unique in the cluster.
	Name string
	// GPUs is the node's GPU count, 1 to 64.
	GPUs int
	// Groups optionally lists intra-node GPU groups as masks over the
	// node's GPUs (bit i is GPU i), for example {0x03, 0x0c, 0x30, 0xc0}
	// for pairs under one PCIe switch, or {0x0f, 0xf0} for NUMA halves.
	// Groups of several sizes may be listed (pairs and halves); placement
	// gives a small request the smallest group that holds it.
	Groups []uint64
	// Path names the node's domain at each level, top to bottom; its
	// length equals len(ClusterSpec.Levels).
	Path []string
	// Source optionally says where the node was defined (for example
	// "topology.conf:12"); errors about the node quote it.
	Source string
}

// NodeID identifies a node of a Cluster: its position in topology order,
// from 0 to NumNodes()-1. Every package names nodes by NodeID; names are
// for people and files (Cluster.NodeName, Cluster.LookupNode).
type NodeID int32

// Node is a read-only view of one node of a Cluster.
type Node struct {
	// ID is the node's identity: its position in the cluster (topology
	// order).
	ID NodeID
	// Name is the node's name.
	Name string
	// GPUs is the node's GPU count.
	GPUs int
	// Groups are the intra-node GPU groups (shared; do not modify).
	Groups []uint64
}

// Domain is a read-only view of one domain (a switch, a block, a rack) of a
// Cluster. Its nodes are the contiguous index range [FirstNode, EndNode);
// its children are the domains [FirstChild, EndChild) of the level below
// (none at the lowest level). A domain holds no node bitset: use
// Cluster.DomainNodes to fill one when a caller needs it.
type Domain struct {
	// Level is the index of the domain's level (0 is the top).
	Level int
	// Index is the domain's position within its level.
	Index int
	// Name is the domain's name.
	Name string
	// Parent is the index of the parent domain in level Level-1, or -1 at
	// the top level.
	Parent int
	// FirstChild and EndChild bound the children in level Level+1.
	FirstChild, EndChild int
	// FirstNode and EndNode bound the nodes under the domain.
	FirstNode, EndNode NodeID
	// GPUs is the total GPU count under the domain.
	GPUs int
}

type domainInfo struct {
	name                 string
	parent               int32
	firstChild, endChild int32
	firstNode, endNode   int32
	gpus                 int32
}

type nodeInfo struct {
	name   string
	gpus   int
	groups []uint64
}

// Cluster is an immutable cluster: nodes, their GPUs and the switch tree
// above them. Nodes are numbered in topology order, so every domain's nodes
// form one contiguous index range. Memory is linear in nodes plus domains
// (no per-domain bitsets). A Cluster is safe for concurrent use.
type Cluster struct {
	levelNames []string
	levels     [][]domainInfo
	nodes      []nodeInfo
	nodeByName map[string]int32
	// nodeDom[l*len(nodes)+n] is node n's domain at level l.
	nodeDom   []int32
	totalGPUs int
	maxGPUs   int
	words     int
}

// Build validates spec and builds the Cluster. Nodes are reordered into
// topology order: domains in the order they first appear in spec, nodes
// within their lowest domain in spec order. On error no cluster is built
// and the error names the offending node or domain. Build keeps no
// reference to spec's slices; names are shared. Time and memory are linear
// in the nodes (plus a sort of the lowest-level domains).
func Build(spec ClusterSpec) (*Cluster, error) {
	if err := checkLevels(spec.Levels); err != nil {
		return nil, err
	}
	byName, err := checkNodes(&spec)
	if err != nil {
		return nil, err
	}
	tmpDom, err := identifyDomains(&spec)
	if err != nil {
		return nil, err
	}
	order := topologyOrder(tmpDom, len(spec.Levels), len(spec.Nodes))
	c := &Cluster{
		levelNames: slices.Clone(spec.Levels),
		levels:     make([][]domainInfo, len(spec.Levels)),
		nodeByName: byName,
		words:      (len(spec.Nodes) + 63) / 64,
	}
	c.placeNodes(&spec, order)
	c.placeDomains(&spec, order, tmpDom)
	return c, nil
}

// checkLevels validates the level names.
func checkLevels(levels []string) error {
	if len(levels) > MaxLevels {
		return fmt.Errorf("%w: %d levels, at most %d", ErrInvalidSpec, len(levels), MaxLevels)
	}
	for i, name := range levels {
		if name == "" {
			return fmt.Errorf("%w: level %d has no name", ErrInvalidSpec, i)
		}
		if slices.Index(levels[:i], name) >= 0 {
			return fmt.Errorf("%w: level %q named twice", ErrDuplicate, name)
		}
	}
	return nil
}

// specWhere quotes a node's Source for error messages.
func specWhere(n *NodeSpec) string {
	if n.Source != "" {
		return " (" + n.Source + ")"
	}
	return ""
}

// checkNodes validates every node and returns the index of each name in
// spec order.
func checkNodes(spec *ClusterSpec) (map[string]int32, error) {
	if len(spec.Nodes) == 0 {
		return nil, fmt.Errorf("%w: no nodes", ErrInvalidSpec)
	}
	depth := len(spec.Levels)
	byName := make(map[string]int32, len(spec.Nodes))
	for i := range spec.Nodes {
		n := &spec.Nodes[i]
		if n.Name == "" {
			return nil, fmt.Errorf("%w: node %d has no name%s", ErrInvalidSpec, i, specWhere(n))
		}
		if !hostlist.Writable(n.Name) {
			// Node sets are written as hostlists (snapshots, reasons).
			return nil, fmt.Errorf("%w: node name %q holds a character a hostlist cannot (',', '[', ']', white space or a control character)%s", ErrInvalidSpec, n.Name, specWhere(n))
		}
		if j, dup := byName[n.Name]; dup {
			return nil, fmt.Errorf("%w: node %q defined twice%s%s", ErrDuplicate, n.Name, specWhere(&spec.Nodes[j]), specWhere(n))
		}
		byName[n.Name] = int32(i)
		if n.GPUs < 1 || n.GPUs > MaxGPUsPerNode {
			return nil, fmt.Errorf("%w: node %q has %d GPUs, want 1 to %d%s", ErrGPUCount, n.Name, n.GPUs, MaxGPUsPerNode, specWhere(n))
		}
		all := onesMask(n.GPUs)
		for _, g := range n.Groups {
			if g == 0 || g&^all != 0 {
				return nil, fmt.Errorf("%w: node %q GPU group %#x is empty or outside its %d GPUs%s", ErrGPUCount, n.Name, g, n.GPUs, specWhere(n))
			}
		}
		if len(n.Path) != depth {
			return nil, fmt.Errorf("%w: node %q has %d topology levels, want %d (%s)%s", ErrInvalidSpec, n.Name, len(n.Path), depth, strings.Join(spec.Levels, ", "), specWhere(n))
		}
		for l, d := range n.Path {
			if d == "" {
				return nil, fmt.Errorf("%w: node %q has no %s%s", ErrInvalidSpec, n.Name, spec.Levels[l], specWhere(n))
			}
		}
	}
	return byName, nil
}

// domainKey identifies a domain within its level while Build numbers them:
// by name, and by parent too when names are local to their parent.
type domainKey struct {
	parent int32
	name   string
}

type domainSeen struct {
	idx, parent int32
	node        int32 // first node seen under it, in spec order
}

// identifyDomains numbers the domains of every level in order of first
// appearance in spec and returns tmp, where tmp[l*len(spec.Nodes)+i] is
// node i's domain at level l. A domain found under two parents (when names
// are not local) is an ErrNotTree error.
func identifyDomains(spec *ClusterSpec) ([]int32, error) {
	nn := len(spec.Nodes)
	tmp := make([]int32, len(spec.Levels)*nn)
	for l := range spec.Levels {
		ids := make(map[domainKey]domainSeen)
		var last domainKey
		lastIdx, lastParent := int32(-1), int32(-1)
		for i := range spec.Nodes {
			n := &spec.Nodes[i]
			parent := int32(-1)
			if l > 0 {
				parent = tmp[(l-1)*nn+i]
			}
			key := domainKey{name: n.Path[l]}
			if spec.LocalDomainNames {
				key.parent = parent
			}
			if lastIdx >= 0 && key == last && parent == lastParent {
				tmp[l*nn+i] = lastIdx // same domain as the node before: the common case
				continue
			}
			s, ok := ids[key]
			if !ok {
				s = domainSeen{idx: int32(len(ids)), parent: parent, node: int32(i)}
				ids[key] = s
			} else if s.parent != parent {
				first := &spec.Nodes[s.node]
				return nil, fmt.Errorf("%w: %s %q is under %s %q (node %q%s) and under %s %q (node %q%s)",
					ErrNotTree, spec.Levels[l], n.Path[l],
					spec.Levels[l-1], first.Path[l-1], first.Name, specWhere(first),
					spec.Levels[l-1], n.Path[l-1], n.Name, specWhere(n))
			}
			tmp[l*nn+i] = s.idx
			last, lastIdx, lastParent = key, s.idx, parent
		}
	}
	return tmp, nil
}

// topologyOrder returns the spec indices of the nodes in topology order:
// by their domain at every level (in order of first appearance), then in
// spec order. A lowest-level domain determines every domain above it, so
// the lowest-level domains are sorted by their chains and the nodes are
// then placed by a stable counting sort, linear in the nodes.
func topologyOrder(tmp []int32, depth, nn int) []int32 {
	order := make([]int32, nn)
	if depth == 0 {
		for i := range order {
			order[i] = int32(i)
		}
		return order
	}
	low := tmp[(depth-1)*nn : depth*nn]
	numLow := int(slices.Max(low)) + 1
	firstNode := make([]int32, numLow)
	for i := range firstNode {
		firstNode[i] = -1
	}
	for i, d := range low {
		if firstNode[d] < 0 {
			firstNode[d] = int32(i)
		}
	}
	byChain := make([]int32, numLow)
	for d := range byChain {
		byChain[d] = int32(d)
	}
	slices.SortFunc(byChain, func(a, b int32) int {
		na, nb := int(firstNode[a]), int(firstNode[b])
		for l := 0; l < depth; l++ {
			if c := cmp.Compare(tmp[l*nn+na], tmp[l*nn+nb]); c != 0 {
				return c
			}
		}
		return 0
	})
	// start[r] is where the nodes of the domain ranked r begin.
	start := make([]int32, numLow+1)
	rank := firstNode // reuse: rank of each lowest domain
	for r, d := range byChain {
		rank[d] = int32(r)
	}
	for _, d := range low {
		start[rank[d]+1]++
	}
	for r := 1; r <= numLow; r++ {
		start[r] += start[r-1]
	}
	for i, d := range low {
		r := rank[d]
		order[start[r]] = int32(i)
		start[r]++
	}
	return order
}

// placeNodes fills the node table in topology order.
func (c *Cluster) placeNodes(spec *ClusterSpec, order []int32) {
	c.nodes = make([]nodeInfo, len(order))
	var lastGroups, lastClone []uint64
	for newIdx, old := range order {
		n := &spec.Nodes[old]
		groups := lastClone
		if !slices.Equal(n.Groups, lastGroups) || (n.Groups == nil) != (lastGroups == nil) {
			groups = slices.Clone(n.Groups) // shared by runs of nodes with equal groups
			lastGroups, lastClone = n.Groups, groups
		}
		c.nodes[newIdx] = nodeInfo{name: n.Name, gpus: n.GPUs, groups: groups}
		c.nodeByName[n.Name] = int32(newIdx)
		c.totalGPUs += n.GPUs
		c.maxGPUs = max(c.maxGPUs, n.GPUs)
	}
}

// placeDomains numbers the domains of every level in node order and
// records their node and child ranges. Domains are contiguous in topology
// order, so a new domain starts wherever a node's domain differs from the
// node's before it.
func (c *Cluster) placeDomains(spec *ClusterSpec, order, tmp []int32) {
	nn := len(order)
	depth := len(spec.Levels)
	c.nodeDom = make([]int32, depth*nn)
	for l := 0; l < depth; l++ {
		var doms []domainInfo
		prev := int32(-1)
		for newIdx, old := range order {
			if od := tmp[l*nn+int(old)]; newIdx == 0 || od != prev {
				parent := int32(-1)
				if l > 0 {
					parent = c.nodeDom[(l-1)*nn+newIdx]
				}
				doms = append(doms, domainInfo{name: spec.Nodes[old].Path[l], parent: parent, firstNode: int32(newIdx)})
				prev = od
			}
			d := len(doms) - 1
			doms[d].endNode = int32(newIdx) + 1
			doms[d].gpus += int32(c.nodes[newIdx].gpus)
			c.nodeDom[l*nn+newIdx] = int32(d)
		}
		c.levels[l] = slices.Clip(doms)
	}
	for l := 0; l < depth-1; l++ {
		for d := range c.levels[l] {
			dom := &c.levels[l][d]
			dom.firstChild = c.nodeDom[(l+1)*nn+int(dom.firstNode)]
			dom.endChild = c.nodeDom[(l+1)*nn+int(dom.endNode)-1] + 1
		}
	}
}

func onesMask(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(n) - 1
}

// NumNodes returns the number of nodes.
func (c *Cluster) NumNodes() int { return len(c.nodes) }

// TotalGPUs returns the number of GPUs in the cluster.
func (c *Cluster) TotalGPUs() int { return c.totalGPUs }

// MaxNodeGPUs returns the largest GPU count of any node.
func (c *Cluster) MaxNodeGPUs() int { return c.maxGPUs }

// Depth returns the number of levels above the node (0 for a flat cluster).
func (c *Cluster) Depth() int { return len(c.levelNames) }

// LevelName returns the name of level l (0 is the top).
func (c *Cluster) LevelName(l int) string { return c.levelNames[l] }

// Levels returns the level names, top to bottom (a copy).
func (c *Cluster) Levels() []string { return slices.Clone(c.levelNames) }

// Level returns the index of the level called name.
func (c *Cluster) Level(name string) (int, bool) {
	for i, n := range c.levelNames {
		if n == name {
			return i, true
		}
	}
	return -1, false
}

// NumDomains returns the number of domains at level l.
func (c *Cluster) NumDomains(l int) int { return len(c.levels[l]) }

// Domain returns domain d of level l. It panics if l or d is out of range.
func (c *Cluster) Domain(l, d int) Domain {
	di := &c.levels[l][d]
	return Domain{
		Level: l, Index: d, Name: di.name, Parent: int(di.parent),
		FirstChild: int(di.firstChild), EndChild: int(di.endChild),
		FirstNode: NodeID(di.firstNode), EndNode: NodeID(di.endNode),
		GPUs: int(di.gpus),
	}
}

// DomainNodes sets dst to exactly the nodes of domain d of level l and
// returns it. A nil dst gets a new set of the cluster's length; a dst of
// the cluster's length (Cluster.NewNodeSet) is filled without allocating.
// It panics if l or d is out of range.
func (c *Cluster) DomainNodes(l, d int, dst *bitset.BitSet) *bitset.BitSet {
	if dst == nil {
		dst = c.NewNodeSet()
	} else {
		dst.ClearAll()
	}
	first, end := c.DomainRange(l, d)
	if words := dst.Words(); len(words) == c.words && dst.Len() == uint(len(c.nodes)) {
		bits.SetRange(words, int(first), int(end))
	} else {
		dst.FlipRange(uint(first), uint(end))
	}
	return dst
}

// DomainRange returns the node range [first, end) of domain d of level l,
// without building a Domain view. It panics if l or d is out of range.
func (c *Cluster) DomainRange(l, d int) (first, end NodeID) {
	di := &c.levels[l][d]
	return NodeID(di.firstNode), NodeID(di.endNode)
}

// DomainChildren returns the child range [first, end) of domain d of level
// l in level l+1 (empty at the lowest level). It panics if l or d is out
// of range.
func (c *Cluster) DomainChildren(l, d int) (first, end int) {
	di := &c.levels[l][d]
	return int(di.firstChild), int(di.endChild)
}

// DomainParent returns the parent of domain d of level l, or -1 at the top.
// It panics if l or d is out of range.
func (c *Cluster) DomainParent(l, d int) int { return int(c.levels[l][d].parent) }

// DomainName returns the name of domain d of level l. It panics if l or d
// is out of range.
func (c *Cluster) DomainName(l, d int) string { return c.levels[l][d].name }

// DomainIndex returns the index of the domain called name at level l (the
// first one, when names are local to their parent).
func (c *Cluster) DomainIndex(l int, name string) (int, bool) {
	for i := range c.levels[l] {
		if c.levels[l][i].name == name {
			return i, true
		}
	}
	return -1, false
}

// Node returns node i.
func (c *Cluster) Node(i NodeID) Node {
	n := &c.nodes[i]
	return Node{ID: i, Name: n.name, GPUs: n.gpus, Groups: n.groups}
}

// NodeName returns the name of node i.
func (c *Cluster) NodeName(i NodeID) string { return c.nodes[i].name }

// NodeGPUs returns the GPU count of node i.
func (c *Cluster) NodeGPUs(i NodeID) int { return c.nodes[i].gpus }

// NodeGroups returns the GPU groups of node i (shared; do not modify).
func (c *Cluster) NodeGroups(i NodeID) []uint64 { return c.nodes[i].groups }

// LookupNode returns the ID of the node called name, and whether the
// cluster has one.
func (c *Cluster) LookupNode(name string) (NodeID, bool) {
	i, ok := c.nodeByName[name]
	return NodeID(i), ok
}

// NodeDomain returns the index of node i's domain at level l. It panics
// if i or l is out of range.
func (c *Cluster) NodeDomain(i NodeID, l int) int {
	if uint(i) >= uint(len(c.nodes)) || uint(l) >= uint(len(c.levels)) {
		panic(indexError{c: c, level: l, index: int(i), node: true})
	}
	return int(c.nodeDom[l*len(c.nodes)+int(i)])
}

// indexError is what an accessor panics with when given a level, domain
// or node index out of range. It holds the indexes and works out which
// one is wrong when printed, so that an accessor's check costs a
// comparison or two and builds nothing until it fails.
type indexError struct {
	c     *Cluster
	level int
	index int  // a domain index of level, or a node index if node is set
	node  bool // index is a node index
}

func (e indexError) Error() string {
	c := e.c
	switch {
	case e.node && (e.index < 0 || e.index >= len(c.nodes)):
		return fmt.Sprintf("topology: node %d out of range (the cluster has %d nodes)", e.index, len(c.nodes))
	case e.level < 0 || e.level >= len(c.levels):
		return fmt.Sprintf("topology: level %d out of range (the cluster has %d levels)", e.level, len(c.levels))
	}
	return fmt.Sprintf("topology: domain %d out of range at level %d (%d domains)", e.index, e.level, len(c.levels[e.level]))
}

// NewNodeSet returns an empty node bitset sized for this cluster. Every
// node set passed to Phalanx must have this length.
func (c *Cluster) NewNodeSet() *bitset.BitSet { return bitset.New(uint(len(c.nodes))) }

// NodeSet returns a node bitset holding the named nodes; an unknown name is
// an ErrUnknownNode error naming it.
func (c *Cluster) NodeSet(names ...string) (*bitset.BitSet, error) {
	s := c.NewNodeSet()
	for _, n := range names {
		i, ok := c.nodeByName[n]
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownNode, n)
		}
		s.Set(uint(i))
	}
	return s, nil
}

// Spec returns a ClusterSpec that builds an identical cluster (nodes in topology
// order).
func (c *Cluster) Spec() ClusterSpec {
	s := ClusterSpec{Levels: slices.Clone(c.levelNames), Nodes: make([]NodeSpec, len(c.nodes))}
	for i, n := range c.nodes {
		path := make([]string, len(c.levelNames))
		for l := range path {
			path[l] = c.levels[l][c.NodeDomain(NodeID(i), l)].name
		}
		s.Nodes[i] = NodeSpec{Name: n.name, GPUs: n.gpus, Groups: slices.Clone(n.groups), Path: path}
	}
	// Domain names need not be unique per level if they were built local.
	for l := range c.levels {
		names := make(map[string]bool, len(c.levels[l]))
		for _, d := range c.levels[l] {
			if names[d.name] {
				s.LocalDomainNames = true
			}
			names[d.name] = true
		}
	}
	return s
}

// NodeNames returns the names of the nodes in [first, end), in order.
func (c *Cluster) NodeNames(first, end NodeID) []string {
	out := make([]string, 0, end-first)
	for i := first; i < end; i++ {
		out = append(out, c.nodes[i].name)
	}
	return out
}

// Describe returns a text dump of the cluster: one line per domain,
// indented by level, with node counts, GPU counts and, at the lowest
// level, the nodes as a Slurm hostlist.
func (c *Cluster) Describe() string {
	var b strings.Builder
	levels := "flat"
	if len(c.levelNames) > 0 {
		levels = strings.Join(c.levelNames, " > ")
	}
	fmt.Fprintf(&b, "cluster: %d nodes, %d GPUs, levels %s\n", len(c.nodes), c.totalGPUs, levels)
	if len(c.levels) == 0 {
		fmt.Fprintf(&b, "  nodes %s\n", c.describeNodes(0, len(c.nodes)))
		return b.String()
	}
	var walk func(l, d int)
	walk = func(l, d int) {
		di := &c.levels[l][d]
		fmt.Fprintf(&b, "%s%s %s: %d nodes, %d GPUs", strings.Repeat("  ", l+1), c.levelNames[l], di.name, di.endNode-di.firstNode, di.gpus)
		if l == len(c.levels)-1 {
			fmt.Fprintf(&b, ", %s\n", c.describeNodes(int(di.firstNode), int(di.endNode)))
			return
		}
		b.WriteByte('\n')
		for ch := di.firstChild; ch < di.endChild; ch++ {
			walk(l+1, int(ch))
		}
	}
	for d := range c.levels[0] {
		walk(0, d)
	}
	return b.String()
}

// describeNodes renders nodes [first, end) as hostlists, one per run of
// nodes with equal GPU counts.
func (c *Cluster) describeNodes(first, end int) string {
	var parts []string
	for i := first; i < end; {
		j := i
		for j < end && c.nodes[j].gpus == c.nodes[i].gpus {
			j++
		}
		parts = append(parts, fmt.Sprintf("%s x%d GPUs", hostlist.Compress(c.NodeNames(NodeID(i), NodeID(j))), c.nodes[i].gpus))
		i = j
	}
	return strings.Join(parts, ", ")
}

// CompressHostlist writes node names as a Slurm hostlist expression, as
// Describe does; it is hostlist.Compress, kept here for the packages that
// print node sets.
func CompressHostlist(names []string) string { return hostlist.Compress(names) }
