package preempt

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/phalanx-sched/phalanx/topology"
)

// Node mode: the units are nodes. See scope.go.

// nodeUnits builds the node-mode units of every scope level: it finds, per
// node, whether it already has the GPUs a pod needs, or which pool gangs
// must go for it to have them and at what cost, then emits one unit per
// freeable node and level.
func (s *Searcher) nodeUnits() {
	sc := &s.sc
	s.groupOccupants()
	sc.order = sc.order[:0]
	for n := range s.c.NumNodes() {
		if s.nodeVictims(n) {
			sc.order = append(sc.order, int32(n))
		}
	}
	for _, l := range sc.levels {
		for _, n := range sc.order {
			d := 0
			if l >= 0 {
				d = s.c.NodeDomain(topology.NodeID(n), l)
			}
			c := sc.nodeCost[n]
			sc.units = append(sc.units, unit{cost: c, bound: c, amount: 1, first: sc.nodeFirst[n], end: sc.nodeEnd[n], scope: s.scopeID(l, d), tie: n})
		}
	}
}

// groupOccupants lists the pool's GPUs per schedulable node (a counting
// sort by node into occSorted, nodeStart[n] the first of node n).
func (s *Searcher) groupOccupants() {
	sc := &s.sc
	sc.occ = sc.occ[:0]
	for _, v := range s.elig[:s.pool] {
		for _, e := range s.live(v) {
			if s.st.Schedulable(e.Node) {
				sc.occ = append(sc.occ, occ{node: int32(e.Node), cand: v, gpus: int32(bits.OnesCount64(e.GPUs))})
			}
		}
	}
	clear(sc.nodeStart)
	for _, o := range sc.occ {
		sc.nodeStart[o.node+1]++
	}
	for i := 1; i < len(sc.nodeStart); i++ {
		sc.nodeStart[i] += sc.nodeStart[i-1]
	}
	sc.occSorted = slices.Grow(sc.occSorted[:0], len(sc.occ))[:len(sc.occ)]
	for _, o := range sc.occ {
		sc.occSorted[sc.nodeStart[o.node]] = o
		sc.nodeStart[o.node]++
	}
	// nodeStart[n] is now the end of node n's entries; shift to starts.
	copy(sc.nodeStart[1:], sc.nodeStart[:len(sc.nodeStart)-1])
	sc.nodeStart[0] = 0
}

// nodeVictims decides node n: it marks it satisfied when it already has
// the GPUs a pod needs, and otherwise, when the pool's gangs on it can
// free them, lists those gangs (cheapest per GPU first, as many as
// needed) in uv with the node's cost, and reports true. The cost spreads
// each gang's cost over its GPUs and takes a fraction of the last gang,
// so that summing node costs bounds any victim set's cost from below.
func (s *Searcher) nodeVictims(n int) bool {
	sc := &s.sc
	sc.sat[n] = false
	if !s.st.Schedulable(topology.NodeID(n)) {
		return false
	}
	want := s.perPod
	if want == 0 {
		want = s.c.NodeGPUs(topology.NodeID(n))
	}
	free := s.st.FreeCount(topology.NodeID(n))
	if want > s.c.NodeGPUs(topology.NodeID(n)) {
		return false
	}
	if free >= want {
		sc.sat[n] = true
		return false
	}
	occs := sc.occSorted[sc.nodeStart[n]:sc.nodeStart[n+1]]
	sum := free
	for _, o := range occs {
		sum += int(o.gpus)
	}
	if sum < want {
		return false // gangs outside the pool hold too much of it
	}
	slices.SortFunc(occs, func(a, b occ) int {
		ca, cb := s.perGPU(a.cand), s.perGPU(b.cand)
		if c := cmp.Compare(ca, cb); c != 0 {
			return c
		}
		return cmp.Compare(a.cand, b.cand)
	})
	deficit, cost := want-free, 0.0
	sc.nodeFirst[n] = int32(len(sc.uv))
	for _, o := range occs {
		if deficit <= 0 {
			break
		}
		sc.uv = append(sc.uv, o.cand)
		cost += s.perGPU(o.cand) * float64(min(int(o.gpus), deficit))
		deficit -= int(o.gpus)
	}
	sc.nodeEnd[n] = int32(len(sc.uv))
	sc.nodeCost[n] = cost
	return true
}

// perGPU is candidate v's cost per schedulable GPU.
func (s *Searcher) perGPU(v int32) float64 {
	return float64(s.cands[v].Cost) / float64(s.gpus[v])
}

// satIn counts the satisfied nodes of domain d of level l (the cluster
// for l < 0).
func (s *Searcher) satIn(l, d int) int32 {
	first, end := 0, s.c.NumNodes()
	if l >= 0 {
		f, e := s.c.DomainRange(l, d)
		first, end = int(f), int(e)
	}
	n := int32(0)
	for _, ok := range s.sc.sat[first:end] {
		if ok {
			n++
		}
	}
	return n
}
