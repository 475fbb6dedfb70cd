package preempt

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/phalanx-sched/phalanx/topology"
)

// The exact stage runs when at most Options.ExactCandidates gangs are
// preemptible. It computes the key of every subset of them (a table of
// 2^k entries filled incrementally, without admissions), drops the subsets
// that cannot free enough GPUs or are not better than the heuristic's set,
// sorts the rest by key and tries them in that order: the first one the
// preemptor fits with is optimal. When none does, the heuristic's set is.
// No assumption about admission is needed: every subset that could beat
// the answer is tried.

type exactScratch struct {
	cls  []int
	cost []int64
	gpus []int32
	dom  []uint64
	list []uint32
	bit  []uint64 // per eligible candidate: its domains as bits
	slot []int8   // per lowest-level domain: its bit, or -1
	used []int32  // domains given a bit
	set  []int32
}

func (e *exactScratch) init(c *topology.Cluster, k int) {
	if k == 0 {
		return
	}
	n := 1 << k
	e.cls, e.cost, e.gpus, e.dom = make([]int, n), make([]int64, n), make([]int32, n), make([]uint64, n)
	e.list = make([]uint32, 0, n)
	e.bit = make([]uint64, k)
	e.set = make([]int32, 0, k)
	nd := 1
	if c.Depth() > 0 {
		nd = c.NumDomains(c.Depth() - 1)
	}
	e.slot = make([]int8, nd)
	for i := range e.slot {
		e.slot[i] = -1
	}
}

// domainBits gives every lowest-level domain the eligible candidates hold
// GPUs in a bit; it reports false when there are more than 64.
func (s *Searcher) domainBits() bool {
	e := &s.ex
	e.used = e.used[:0]
	ok := true
	for b, v := range s.elig {
		e.bit[b] = 0
		for _, x := range s.all(v) {
			d := 0
			if s.low >= 0 {
				d = s.c.NodeDomain(x.Node, s.low)
			}
			if e.slot[d] < 0 {
				if len(e.used) == 64 {
					ok = false
					continue
				}
				e.slot[d] = int8(len(e.used))
				e.used = append(e.used, int32(d))
			}
			e.bit[b] |= 1 << uint(e.slot[d])
		}
	}
	for _, d := range e.used {
		e.slot[d] = -1
	}
	return ok
}

// exKey is the key of subset m of the eligible candidates.
func (s *Searcher) exKey(m uint32) key {
	e := &s.ex
	return key{class: e.cls[m], cost: e.cost[m], count: bits.OnesCount32(m), domains: bits.OnesCount64(e.dom[m])}
}

// exactSearch tries, in key order, every subset better than the best set
// so far. It reports whether it finished (the best set is then optimal).
func (s *Searcher) exactSearch() bool {
	if !s.domainBits() {
		return false
	}
	s.tabulate()
	e := &s.ex
	slices.SortFunc(e.list, func(a, b uint32) int {
		if ka, kb := s.exKey(a), s.exKey(b); ka != kb {
			if ka.less(kb) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	for _, m := range e.list {
		e.set = e.set[:0]
		for r := m; r != 0; r &= r - 1 {
			e.set = append(e.set, s.elig[bits.TrailingZeros32(r)])
		}
		s.mustApply(e.set)
		if !s.boundOK() {
			continue
		}
		if !s.spend() {
			return false
		}
		if s.admit(s.req.Gang) {
			s.keep(e.set, s.exKey(m))
			return true
		}
	}
	return true
}

// tabulate fills the key table of every subset and lists the subsets that
// free enough GPUs and beat the best set.
func (s *Searcher) tabulate() {
	e := &s.ex
	n := uint32(1) << len(s.elig)
	free0 := s.st.FreeGPUs()
	e.cls[0], e.cost[0], e.gpus[0], e.dom[0] = minInt, 0, 0, 0
	e.list = e.list[:0]
	for m := uint32(1); m < n; m++ {
		b := bits.TrailingZeros32(m)
		p := m & (m - 1)
		v := s.elig[b]
		e.cls[m] = max(e.cls[p], s.cands[v].Class)
		e.cost[m] = e.cost[p] + s.cands[v].Cost
		e.gpus[m] = e.gpus[p] + s.gpus[v]
		e.dom[m] = e.dom[p] | e.bit[b]
		if free0+int(e.gpus[m]) < s.need {
			continue
		}
		if s.best.ok && !s.exKey(m).less(s.best.key) {
			continue
		}
		e.list = append(e.list, m)
	}
}
