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
// on the smallest (Engine.leastGPUs), the quota gate lets it through when
// that count fits, and a start its quota refuses on the GPUs placed is
// placed again without the largest node its whole-node pods took, and
// again, up to maxSmallerTries times (startOnSmaller).

// maxSmallerTries bounds startOnSmaller's placements for one start.
const maxSmallerTries = 8

// severalSizes reports whether c's nodes do not all have the same GPUs.
func severalSizes(c *topology.Cluster) bool {
	for n := range c.NumNodes() {
		if c.NodeGPUs(topology.NodeID(n)) != c.MaxNodeGPUs() {
			return true
		}
	}
	return false
}

// wholeNode reports whether member m's pods take whole nodes.
func wholeNode(m *gang.Member) bool { return m.Request.GPUs == 0 && m.Request.GPUsPerNode == 0 }

// startOnSmaller starts job j, whose placement on e.alloc its queue's
// quota refused (quotaBlocked), with fewer GPUs when spec has whole-node
// members on a cluster of several node sizes: the largest node those
// members took (larger than the smallest size; the last such in node
// order) is excluded from them, j placed again, and so on, until its quota
// takes a placement, none is left to exclude, j no longer fits, or
// maxSmallerTries placements were made. It reports whether j started;
// when it did not, e.alloc is the placement tried with the fewest GPUs
// (the reason reads it), the quota flag is set again, and spec is as it
// was. It is best effort: the exclusions follow the placements, not every
// combination of nodes.
func (c *cycle) startOnSmaller(j *jobRec, spec *gang.Spec) bool {
	e := c.e
	if !e.severalSizes || len(spec.Members) > 8 || !slices.ContainsFunc(spec.Members, func(m gang.Member) bool { return wholeNode(&m) }) {
		return false
	}
	var saved [8]*bitset.BitSet
	for len(e.sizeNodes) <= len(spec.Members) {
		e.sizeNodes = append(e.sizeNodes, bitset.New(uint(e.c.NumNodes())))
	}
	out := e.sizeNodes[len(spec.Members)].ClearAll() // the nodes excluded so far
	e.alloc.CopyTo(&e.sizeAlloc)
	placed := c.lastRes
	for range maxSmallerTries {
		big, bigGPUs := topology.NodeID(-1), e.minNodeGPUs
		for k := range e.alloc.Members {
			ma := &e.alloc.Members[k]
			if i := slices.IndexFunc(spec.Members, func(m gang.Member) bool { return m.Name == ma.Name }); i < 0 || !wholeNode(&spec.Members[i]) {
				continue
			}
			for _, x := range ma.Assignment {
				if g := bits.OnesCount64(x.GPUs); g > bigGPUs || g == bigGPUs && big >= 0 && x.Node > big {
					big, bigGPUs = x.Node, g
				}
			}
		}
		if big < 0 {
			break // its whole-node pods are on the smallest nodes
		}
		out.Set(uint(big))
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
