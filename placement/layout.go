package placement

import (
	"encoding/binary"

	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology"
)

// layout is what a Placer knows of its cluster, built once by New and
// read-only afterwards: every domain of every level, and the root (the
// whole cluster), under one flat numbering, with node, child and leaf
// ranges. Flat index 0 is the root; the domains of level l follow in
// order.
type layout struct {
	c        *topology.Cluster
	numNodes int
	words    int
	depth    int
	leaf     level // the lowest level (rootLevel for a flat cluster)
	maxGPUs  int
	// uniform reports that every node has maxGPUs GPUs.
	uniform bool

	// start[l+1] is the flat index of the first domain of level l; start[0]
	// is the root's.
	start []int32
	// Per flat index: the node range, the child range (indices in the
	// level below), the parent's flat index (-1 for the root), and the
	// range of the lowest-level domains (leaves) under it.
	nodeFirst, nodeEnd   []int32
	childFirst, childEnd []int32
	parent               []int32
	leafFirst, leafEnd   []int32
	levels               []level
	maxLeafNodes         int
	minGPUs              int
	// idealAvail[leaf*(maxGPUs+1)+k] counts the nodes of a leaf with at
	// least k GPUs: its capacity with every node up and idle; idealGPUs
	// sums their GPUs.
	idealAvail []int32
	idealGPUs  []int32
	// idealBest[k*(depth+1)+l+1] is the most items one domain of level l
	// (the root for rootLevel) holds with every node up and idle: GPUs for
	// k = 0, nodes with at least k GPUs for k >= 1. It answers whether a
	// request without segments, domain limit or node sets can ever fit.
	idealBest []int32
	// idealCaps[k*numDomains()+x] is what flat domain x holds with every
	// node up and idle, in the items of idealBest's k.
	idealCaps []int32

	// sizeAtLeast[k*words:(k+1)*words] is the set of nodes with at least k
	// GPUs, whatever their state.
	sizeAtLeast []uint64
	// groupKind[n] numbers node n's list of intra-node GPU groups: nodes
	// with equal lists share a number.
	groupKind []int32
}

func newLayout(c *topology.Cluster) *layout {
	depth := c.Depth()
	ly := &layout{c: c, numNodes: c.NumNodes(), words: (c.NumNodes() + 63) / 64, depth: depth, leaf: level(depth - 1), maxGPUs: c.MaxNodeGPUs(), uniform: true}
	ly.start = make([]int32, depth+2)
	ly.start[1] = 1
	for l := range depth {
		ly.start[l+2] = ly.start[l+1] + int32(c.NumDomains(l))
	}
	total := int(ly.start[depth+1])
	for _, p := range []*[]int32{&ly.nodeFirst, &ly.nodeEnd, &ly.childFirst, &ly.childEnd, &ly.parent, &ly.leafFirst, &ly.leafEnd} {
		*p = make([]int32, total)
	}
	ly.levels = make([]level, total)
	ly.levels[0] = rootLevel
	ly.nodeEnd[0], ly.parent[0] = int32(ly.numNodes), -1
	if depth > 0 {
		ly.childEnd[0] = int32(c.NumDomains(0))
	}
	for l := range depth {
		for d := range c.NumDomains(l) {
			x := ly.id(level(l), d)
			f, e := c.DomainRange(l, d)
			ly.nodeFirst[x], ly.nodeEnd[x] = int32(f), int32(e)
			cf, ce := c.DomainChildren(l, d)
			ly.childFirst[x], ly.childEnd[x] = int32(cf), int32(ce)
			ly.parent[x] = int32(ly.id(level(l-1), max(c.DomainParent(l, d), 0)))
			ly.levels[x] = level(l)
		}
	}
	ly.setLeafRanges()
	ly.setSizes()
	ly.setIdealBest()
	ly.setGroupKinds()
	return ly
}

// setGroupKinds numbers the distinct intra-node group lists.
func (ly *layout) setGroupKinds() {
	ly.groupKind = make([]int32, ly.numNodes)
	kinds := map[string]int32{}
	var key []byte
	for n := range ly.numNodes {
		key = key[:0]
		for _, g := range ly.c.NodeGroups(topology.NodeID(n)) {
			key = binary.LittleEndian.AppendUint64(key, g)
		}
		k, ok := kinds[string(key)]
		if !ok {
			k = int32(len(kinds))
			kinds[string(key)] = k
		}
		ly.groupKind[n] = k
	}
}

// setSizes records which nodes have at least k GPUs, per node and per leaf.
func (ly *layout) setSizes() {
	stride := ly.maxGPUs + 1
	ly.sizeAtLeast = make([]uint64, stride*ly.words)
	ly.idealAvail = make([]int32, ly.count(ly.leaf)*stride)
	ly.idealGPUs = make([]int32, ly.count(ly.leaf))
	ly.minGPUs = ly.maxGPUs
	for i := range ly.numNodes {
		g := ly.c.NodeGPUs(topology.NodeID(i))
		ly.uniform = ly.uniform && g == ly.maxGPUs
		ly.minGPUs = min(ly.minGPUs, g)
		leaf := ly.leafOfNode(i)
		ly.idealGPUs[leaf] += int32(g)
		for k := 0; k <= g; k++ {
			bits.Set(ly.sizeAtLeast[k*ly.words:], i)
			ly.idealAvail[leaf*stride+k]++
		}
	}
}

// setIdealBest fills idealBest from the leaves' ideal counts, summed up
// the levels.
func (ly *layout) setIdealBest() {
	stride, rows := ly.maxGPUs+1, ly.depth+1
	ly.idealBest = make([]int32, stride*rows)
	ly.idealCaps = make([]int32, stride*ly.numDomains())
	for k := range stride {
		v := ly.idealCaps[k*ly.numDomains() : (k+1)*ly.numDomains()]
		for d := range ly.count(ly.leaf) {
			if k == 0 {
				v[ly.leafID(d)] = ly.idealGPUs[d]
			} else {
				v[ly.leafID(d)] = ly.idealAvail[d*stride+k]
			}
		}
		ly.sumUp(v, ly.leaf)
		for l := ly.leaf; l >= rootLevel; l-- {
			best := &ly.idealBest[k*rows+int(l)+1]
			for d := range ly.count(l) {
				*best = max(*best, v[ly.id(l, d)])
			}
		}
	}
}

// sumUp sets every domain of caps (indexed by flat index) above level l
// to the sum of its children.
func (ly *layout) sumUp(caps []int32, l level) {
	for up := l - 1; up >= rootLevel; up-- {
		for d := range ly.count(up) {
			x := ly.id(up, d)
			cf, ce := ly.children(x)
			var sum int32
			for _, c := range caps[cf:ce] {
				sum += c
			}
			caps[x] = sum
		}
	}
}

// sizeWords returns the set of nodes with at least k GPUs.
func (ly *layout) sizeWords(k int) []uint64 { return ly.sizeAtLeast[k*ly.words : (k+1)*ly.words] }

// setLeafRanges fills the leaf ranges bottom up.
func (ly *layout) setLeafRanges() {
	for d := range ly.count(ly.leaf) {
		x := ly.id(ly.leaf, d)
		ly.leafFirst[x], ly.leafEnd[x] = int32(d), int32(d+1)
		ly.maxLeafNodes = max(ly.maxLeafNodes, int(ly.nodeEnd[x]-ly.nodeFirst[x]))
	}
	for l := ly.leaf - 1; l >= rootLevel; l-- {
		for d := range ly.count(l) {
			x := ly.id(l, d)
			first := ly.id(l+1, int(ly.childFirst[x]))
			last := ly.id(l+1, int(ly.childEnd[x])-1)
			ly.leafFirst[x], ly.leafEnd[x] = ly.leafFirst[first], ly.leafEnd[last]
		}
	}
}

// id returns the flat index of domain d of level l (the root is level
// rootLevel, domain 0).
func (ly *layout) id(l level, d int) int { return int(ly.start[l+1]) + d }

// count returns the number of domains of level l.
func (ly *layout) count(l level) int { return int(ly.start[l+2] - ly.start[l+1]) }

// numDomains returns the number of flat indices (every domain and the
// root).
func (ly *layout) numDomains() int { return int(ly.start[ly.depth+1]) }

// index returns the position of flat index x within its level.
func (ly *layout) index(x int) int { return x - int(ly.start[ly.levels[x]+1]) }

// levelOf returns the level of flat index x.
func (ly *layout) levelOf(x int) level { return ly.levels[x] }

// leafID returns the flat index of leaf (lowest-level domain) number i.
func (ly *layout) leafID(i int) int { return ly.id(ly.leaf, i) }

// leafOfNode returns the leaf number of node n.
func (ly *layout) leafOfNode(n int) int {
	if ly.leaf == rootLevel {
		return 0
	}
	return ly.c.NodeDomain(topology.NodeID(n), int(ly.leaf))
}

// descendants returns the flat index range of the domains of level l
// under flat index x (l at or below x's level).
func (ly *layout) descendants(x int, l level) (int, int) {
	lx := ly.levelOf(x)
	if l == lx {
		return x, x + 1
	}
	if l == ly.leaf {
		return ly.leafID(int(ly.leafFirst[x])), ly.leafID(int(ly.leafEnd[x]))
	}
	first, last := ly.nodeFirst[x], ly.nodeEnd[x]-1
	return ly.id(l, ly.c.NodeDomain(topology.NodeID(first), int(l))), ly.id(l, ly.c.NodeDomain(topology.NodeID(last), int(l))) + 1
}

// children returns the flat index range of x's children.
func (ly *layout) children(x int) (int, int) {
	l := ly.levelOf(x)
	return ly.id(l+1, int(ly.childFirst[x])), ly.id(l+1, int(ly.childEnd[x]))
}

// levelName returns the name of level l ("" for the root).
func (ly *layout) levelName(l level) string {
	if l == rootLevel {
		return ""
	}
	return ly.c.LevelName(int(l))
}
