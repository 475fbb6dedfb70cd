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
// fit on smaller nodes. At Submit (and Restore) such a job is placed on
// the empty cluster, then again with one pod fewer on the largest node
// size taken, and so on (fewerLarge, up to maxSmallerTries placements):
// the fewest GPUs of those placements (jobRec.minQuota) is what Submit
// refuses it by, and what the quota gate lets it through at, so that a
// job accepted has a placement its queue's limits take with nothing else
// in use. Its weighted share, and whether its guarantee covers it, are
// still read at the largest count, which no placement exceeds (unless
// its queue may not go beyond its guarantee at all). The start is checked
// on the GPUs placed, and a start its quota refuses there is placed again
// the same way (startOnSmaller). Such a job gets no hold while its quota
// does not take it at the largest count (a hold's target is chosen for
// when it drains, not for its size). Reservations are not promised their
// quota room as exactly as on a cluster of one node size.

// maxSmallerTries bounds the placements made for one job after the first.
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

// sizeScratch returns the scratch sets for a gang of n members: one per
// member, the nodes excluded so far (out) and a working set.
func (e *Engine) sizeScratch(n int) (per []*bitset.BitSet, out, work *bitset.BitSet) {
	for len(e.sizeNodes) < n+2 {
		e.sizeNodes = append(e.sizeNodes, bitset.New(uint(e.c.NumNodes())))
	}
	return e.sizeNodes[:n], e.sizeNodes[n], e.sizeNodes[n+1]
}

// fewerLarge adds to out, from placement a of spec, the nodes to exclude
// so that one pod fewer of spec's whole-node members lands on the largest
// node size they took: every node of a larger size, and every node of
// that size but those they took, less the last in node order. It reports
// false when they took only nodes of the smallest size (out unchanged).
func (e *Engine) fewerLarge(spec *gang.Spec, a *gang.Allocation, out, keep *bitset.BitSet) bool {
	bigGPUs, last := e.minNodeGPUs, topology.NodeID(-1)
	keep.ClearAll()
	for k := range a.Members {
		ma := &a.Members[k]
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
		return false
	}
	keep.Clear(uint(last))
	k := slices.Index(e.sizes, bigGPUs)
	keep.InPlaceSymmetricDifference(e.sizeSets[k]) // that size's nodes but the kept ones
	out.InPlaceUnion(keep)
	for _, larger := range e.sizeSets[k+1:] {
		out.InPlaceUnion(larger)
	}
	return true
}

// admitExcluding places spec on state with out excluded from its
// whole-node members (their own Excluded sets kept), through Check (the
// state left as it was) or Admit; spec is left as it was.
func (e *Engine) admitExcluding(state *topology.State, spec *gang.Spec, out *bitset.BitSet, per []*bitset.BitSet, check bool) gang.Admission {
	var saved [8]*bitset.BitSet
	for i := range spec.Members {
		m := &spec.Members[i]
		saved[i] = m.Request.Excluded
		if !wholeNode(m) {
			continue
		}
		out.CopyFull(per[i])
		if saved[i] != nil {
			per[i].InPlaceUnion(saved[i])
		}
		m.Request.Excluded = per[i]
	}
	var res gang.Admission
	var err error
	if check {
		res, err = e.adm.Check(state, spec, &e.alloc)
	} else {
		res, err = e.adm.Admit(state, spec, &e.alloc)
	}
	for i := range spec.Members {
		spec.Members[i].Request.Excluded = saved[i]
	}
	if err != nil {
		panic(fmt.Sprintf("backfill: checked gang %s refused with nodes excluded: %v", spec.ID, err))
	}
	return res
}

// minQuotaGPUs returns the GPUs job j's quota is judged at before it is
// placed: gang.Spec.MinGPUs (its whole-node pods at a largest node's
// GPUs), or, for whole-node pods on a cluster of several node sizes, the
// fewest GPUs of the placements of its gang at its minimum size tried on
// the empty cluster (the first, then one pod fewer on the largest size
// taken each time), when fewer.
func (e *Engine) minQuotaGPUs(j *jobRec) int {
	g := j.job.Gang.MinGPUs(e.c)
	spec := &j.job.Gang
	if len(spec.Members) > 8 || !e.wholeOnSizes(spec) {
		return g
	}
	if spec.MinGPUs(e.c) < spec.GPUs(e.c) {
		spec = e.atMinimum(spec)
	}
	res, err := e.adm.Check(e.empty, spec, &e.alloc)
	if err != nil || !res.Admitted {
		return g // never fits: Submit says so
	}
	per, out, keep := e.sizeScratch(len(spec.Members))
	out.ClearAll()
	best := e.alloc.GPUs()
	for range maxSmallerTries {
		if !e.fewerLarge(spec, &e.alloc, out, keep) {
			break
		}
		if !e.admitExcluding(e.empty, spec, out, per, true).Admitted {
			break
		}
		best = min(best, e.alloc.GPUs())
	}
	return min(g, best)
}

// startOnSmaller starts job j, whose placement on e.alloc its queue's
// quota refused (quotaBlocked), with fewer GPUs when spec has whole-node
// members on a cluster of several node sizes: it is placed again with one
// pod fewer on the largest node size taken (fewerLarge), and so on, until
// its quota takes a placement, its pods are on the smallest nodes, it no
// longer fits, or maxSmallerTries placements were made. It reports
// whether j started; when it did not, e.alloc is the placement tried with
// the fewest GPUs (the reason reads it), the quota flag is set again, and
// spec is as it was. It is best effort: the exclusions follow the
// placements, not every combination of nodes.
func (c *cycle) startOnSmaller(j *jobRec, spec *gang.Spec) bool {
	e := c.e
	if len(spec.Members) > 8 || !e.wholeOnSizes(spec) {
		return false
	}
	per, out, keep := e.sizeScratch(len(spec.Members))
	out.ClearAll()
	e.alloc.CopyTo(&e.sizeAlloc)
	placed := c.lastRes
	for range maxSmallerTries {
		if !e.fewerLarge(spec, &e.alloc, out, keep) {
			break // its whole-node pods are on the smallest nodes
		}
		c.smallerTried = true
		res := e.admitExcluding(e.scratch, spec, out, per, false)
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
