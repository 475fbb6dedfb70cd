package backfill

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// Whole-node pods on a cluster of several node sizes. A pod that asks for
// whole nodes (neither GPUs nor GPUs per node set) takes every GPU of the
// node it lands on, so its GPUs are known only once it is placed. Quota
// checks before the placement count such pods at a largest node's GPUs
// (gang.Spec.GPUs), which on a cluster of one node size is exact. On a
// cluster of several, a job its queue's quota refuses at that count may
// fit on smaller nodes: Submit refuses it only when it would not fit even
// on the smallest nodes it may use (leastQuotaGPUs), the quota gate lets
// it through when that count fits (its weighted share still read at the
// largest count, which no placement exceeds), and the start is checked on
// the GPUs placed; a start its quota refuses there is placed again
// without the largest nodes its whole-node pods took (startOnSmaller). Such a job, when its quota does
// not take it at the largest count, gets no hold (a hold's target is
// chosen for when it drains, not for its size). Reservations are not
// promised their quota room as exactly as on a cluster of one node size.

// maxSmallerTries bounds startOnSmaller's placements for one start.
const maxSmallerTries = 8

// nodeSizes returns c's node sizes, smallest first, and the nodes of
// each.
func nodeSizes(c *topology.Cluster) ([]int, []*bitset.BitSet) {
	var sizes []int
	for n := range c.NumNodes() {
		if g := c.NodeGPUs(topology.NodeID(n)); !slices.Contains(sizes, g) {
			sizes = append(sizes, g)
		}
	}
	slices.Sort(sizes)
	sets := make([]*bitset.BitSet, len(sizes))
	for i := range sets {
		sets[i] = bitset.New(uint(c.NumNodes()))
	}
	for n := range c.NumNodes() {
		sets[slices.Index(sizes, c.NodeGPUs(topology.NodeID(n)))].Set(uint(n))
	}
	return sizes, sets
}

// wholeNode reports whether member m's pods take whole nodes.
func wholeNode(m *gang.Member) bool { return m.Request.GPUs == 0 && m.Request.GPUsPerNode == 0 }

// wholeOnSizes reports whether spec has whole-node pods on a cluster of
// several node sizes.
func (e *Engine) wholeOnSizes(spec *gang.Spec) bool {
	return e.severalSizes && slices.ContainsFunc(spec.Members, func(m gang.Member) bool { return wholeNode(&m) })
}

// leastQuotaGPUs returns the fewest GPUs spec can take at its minimum
// size: gang.Spec.MinGPUs, but with each whole-node member's pods on the
// smallest nodes it may use (its Allowed set, which holds its queue's
// pool), as many of each size as there are. (Members are counted apart:
// no placement takes fewer.)
func (e *Engine) leastQuotaGPUs(spec *gang.Spec) int {
	n := spec.MinGPUs(e.c)
	if !e.severalSizes {
		return n
	}
	for i := range spec.Members {
		m := &spec.Members[i]
		if !wholeNode(m) {
			continue
		}
		pods := m.Request.Nodes
		if m.Min > 0 && m.Min < pods {
			pods = m.Min
		}
		n -= pods * e.c.MaxNodeGPUs()
		for k, size := range e.sizes {
			have := int(e.sizeSets[k].Count())
			if a := m.Request.Allowed; a != nil {
				have = int(e.sizeSets[k].IntersectionCardinality(a))
			}
			t := min(have, pods)
			n += t * size
			pods -= t
		}
		n += pods * e.c.MaxNodeGPUs() // more pods than nodes: never placed
	}
	return n
}

// startOnSmaller starts job j, whose placement on e.alloc its queue's
// quota refused (quotaBlocked), with fewer GPUs when spec has whole-node
// members on a cluster of several node sizes: of the largest node size
// those members took (larger than the smallest), every node is excluded
// from them but the nodes they took less one, so that one pod fewer lands
// on that size; j is placed again, and so on, until its quota takes a
// placement, its pods are on the smallest nodes, j no longer fits, or
// maxSmallerTries placements were made. It reports whether j started;
// when it did not, e.alloc is the placement tried with the fewest GPUs
// (the reason reads it), the quota flag is set again, and spec is as it
// was. It is best effort: the exclusions follow the placements, not every
// combination of nodes.
func (c *cycle) startOnSmaller(j *jobRec, spec *gang.Spec) bool {
	e := c.e
	if len(spec.Members) > 8 || !e.wholeOnSizes(spec) {
		return false
	}
	var saved [8]*bitset.BitSet
	for len(e.sizeNodes) <= len(spec.Members)+1 {
		e.sizeNodes = append(e.sizeNodes, bitset.New(uint(e.c.NumNodes())))
	}
	out := e.sizeNodes[len(spec.Members)].ClearAll() // the nodes excluded so far
	keep := e.sizeNodes[len(spec.Members)+1]
	e.alloc.CopyTo(&e.sizeAlloc)
	placed := c.lastRes
	for range maxSmallerTries {
		// The largest size its whole-node pods took, above the smallest:
		// every node of that size is excluded but those pods' nodes, less
		// the last (so one pod fewer lands on that size).
		bigGPUs, last := e.minNodeGPUs, topology.NodeID(-1)
		keep.ClearAll()
		for k := range e.alloc.Members {
			ma := &e.alloc.Members[k]
			if i := slices.IndexFunc(spec.Members, func(m gang.Member) bool { return m.Name == ma.Name }); i < 0 || !wholeNode(&spec.Members[i]) {
				continue
			}
			for _, x := range ma.Assignment {
				switch g := bits.OnesCount64(x.GPUs); {
				case g > bigGPUs:
					bigGPUs, last = g, x.Node
					keep.ClearAll().Set(uint(x.Node))
				case g == bigGPUs && last >= 0:
					keep.Set(uint(x.Node))
					last = max(last, x.Node)
				}
			}
		}
		if last < 0 {
			break // its whole-node pods are on the smallest nodes
		}
		keep.Clear(uint(last))
		size := e.sizeSets[slices.Index(e.sizes, bigGPUs)]
		keep.InPlaceSymmetricDifference(size) // size's nodes but the kept ones
		out.InPlaceUnion(keep)
		c.smallerTried = true
		for i := range spec.Members {
			m := &spec.Members[i]
			saved[i] = m.Request.Excluded
			if !wholeNode(m) {
				continue
			}
			ex := e.sizeNodes[i]
			out.CopyFull(ex)
			if saved[i] != nil {
				ex.InPlaceUnion(saved[i])
			}
			m.Request.Excluded = ex
		}
		res, err := e.adm.Admit(e.scratch, spec, &e.alloc)
		for i := range spec.Members {
			spec.Members[i].Request.Excluded = saved[i]
		}
		if err != nil {
			panic(fmt.Sprintf("backfill: checked job %s refused without its largest nodes: %v", j.job.ID, err))
		}
		if !res.Admitted {
			break
		}
		c.lastRes, c.quotaBlocked = res, false
		if c.startChecked(j) {
			c.smallerTried = false
			return true
		}
		if e.alloc.GPUs() < e.sizeAlloc.GPUs() {
			e.alloc.CopyTo(&e.sizeAlloc) // the fewest GPUs, for the reason
			placed = res
		}
	}
	e.sizeAlloc.CopyTo(&e.alloc)
	c.lastRes, c.quotaBlocked = placed, true
	return false
}
