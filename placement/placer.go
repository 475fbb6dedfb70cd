package placement

import (
	mathbits "math/bits"
	"math/rand/v2"
	"slices"

	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology"
)

// Result is the outcome of one placement.
type Result struct {
	// Placed reports whether the request was placed. When false, Reason
	// says why and Assignment is empty.
	Placed bool
	// Reason explains a failure (Code is Placed on success).
	Reason Reason
	// Assignment lists the chosen nodes and GPUs. It aliases the buffer
	// passed to Place.
	Assignment []topology.NodeAlloc
	// Nodes and GPUs count the assignment.
	Nodes, GPUs int
	// Spans counts the domains used at each cluster level (index 0 is the
	// top level).
	Spans [topology.MaxLevels]int
	// Within is the lowest cluster level at which one domain holds the
	// whole assignment, or -1 when it spans several top-level domains.
	Within int
	// PreferenceMet reports whether the assignment lies inside one domain
	// of the request's Preferred level (true when none was given).
	PreferenceMet bool
}

// HighestCrossed returns the highest level at which the assignment spans
// more than one domain, or -1 when it sits inside one lowest-level domain.
func (r *Result) HighestCrossed(c *topology.Cluster) int {
	if r.Within+1 >= c.Depth() {
		return -1
	}
	return r.Within + 1
}

// Leaves returns the number of lowest-level domains the assignment spans
// (1 for a flat cluster).
func (r *Result) Leaves(c *topology.Cluster) int {
	if c.Depth() == 0 {
		return 1
	}
	return r.Spans[c.Depth()-1]
}

// Placer places requests on the states of one cluster. It holds scratch
// space sized for the cluster, so that Place allocates nothing. A Placer is
// not safe for concurrent use; give each goroutine its own (they are cheap:
// a few slices the size of the cluster's domain count).
type Placer struct {
	c      *topology.Cluster
	n      int
	words  int
	leafLi int
	maxG   int
	// off[li] is the offset of internal level li in the flat per-domain
	// arrays; level 0 is a virtual root holding every node.
	off        []int
	first, end []int32
	cfirst     []int32
	cend       []int32
	free       []int32 // scratch: free GPUs per domain for the current state

	// Per-request scratch.
	s       *topology.State
	pl      plan
	cand    []uint64
	tmp     []uint64
	capNode []int32
	capSeg  []int32
	sortBuf []int32
	units   []unitRef
	cur     []unitRef // split: the chosen units, largest first (top m)
	cur2    []unitRef
	kids    []kidRef
	amt     [][]int32 // per internal level: amounts per child
	stamp   []uint32
	epoch   uint32
	geCnt   []int32  // GPU mode, per lowest-level domain: candidates with >= k free GPUs
	marks   []uint32 // per domain: taken by the current split
	mark    uint32

	// Quality counted while picking (leaf-packing path).
	spansDone bool
	qSpans    [topology.MaxLevels]int

	strategy Strategy
	rng      *rand.Rand
	order    []int32
	out      []topology.NodeAlloc
}

type unitRef struct {
	cap   int32
	unit  int32
	child int32 // rank of the unit's child in the chosen set
}

type kidRef struct {
	child  int32
	cap    int32
	lo, hi int32 // its units in the flat buffer
	rank   int32 // order in which it was added to the cover (0: not)
}

// New returns a Placer for cluster c.
func New(c *topology.Cluster) *Placer {
	depth := c.Depth()
	p := &Placer{c: c, n: c.NumNodes(), words: c.Words(), leafLi: depth, maxG: c.MaxNodeGPUs()}
	p.off = make([]int, depth+2)
	p.off[1] = 1
	for li := 1; li <= depth; li++ {
		p.off[li+1] = p.off[li] + c.NumDomains(li-1)
	}
	total := p.off[depth+1]
	p.first = make([]int32, total)
	p.end = make([]int32, total)
	p.cfirst = make([]int32, total)
	p.cend = make([]int32, total)
	p.end[0] = int32(p.n)
	if depth > 0 {
		p.cend[0] = int32(c.NumDomains(0))
	}
	maxKids := int(p.cend[0])
	for li := 1; li <= depth; li++ {
		for d := range c.NumDomains(li - 1) {
			i := p.off[li] + d
			f, e := c.DomainRange(li-1, d)
			p.first[i], p.end[i] = int32(f), int32(e)
			cf, ce := c.DomainChildren(li-1, d)
			p.cfirst[i], p.cend[i] = int32(cf), int32(ce)
			maxKids = max(maxKids, ce-cf)
		}
	}
	p.free = make([]int32, total)
	p.cand = make([]uint64, p.words)
	p.tmp = make([]uint64, p.words)
	p.capNode = make([]int32, total)
	p.capSeg = make([]int32, total)
	p.sortBuf = make([]int32, 0, total)
	p.units = make([]unitRef, 0, total)
	p.cur = make([]unitRef, 0, total)
	p.cur2 = make([]unitRef, 0, total)
	p.kids = make([]kidRef, 0, maxKids)
	p.amt = make([][]int32, depth+1)
	for li := range p.amt {
		p.amt[li] = make([]int32, maxKids)
	}
	p.stamp = make([]uint32, total)
	p.marks = make([]uint32, total)
	p.geCnt = make([]int32, (p.off[depth+1]-p.off[depth])*(p.maxG+2))
	return p
}

// Cluster returns the placer's cluster.
func (p *Placer) Cluster() *topology.Cluster { return p.c }

// Place chooses nodes and GPUs for r on state s, which it does not change
// (the caller allocates the assignment if it wants it). The assignment is
// appended to buf[:0]; with a buffer whose capacity covers the nodes
// placed, Place allocates nothing.
//
// A malformed request is an ErrBadRequest error. A request that does not
// fit returns a Result with Placed false and a Reason.
//
// The pipeline, top to bottom:
//
//  1. Candidates: schedulable nodes with enough free GPUs (idle ones for
//     exclusive requests), intersected with Allowed and minus Excluded,
//     as one word operation per 64 nodes.
//  2. Capacities: per lowest-level domain a popcount of its node range,
//     summed up the tree (in segments at and above the segment level).
//  3. Level search: from the unit level up (to the Required level at
//     most), the lowest level where one domain holds the request. Among
//     its domains take the one needing the fewest unit domains, then the
//     best fit (least spare capacity, then fewer free GPUs, then lower
//     index): large empty domains stay whole for large jobs.
//  4. Descent: inside the chosen domain, keep the request in one child
//     when a child can hold it with no more unit domains; otherwise cover
//     it with the fewest children, largest first, and give the last piece
//     to the smallest unit domain that covers it. The number of unit
//     domains used is the minimum possible.
//  5. Phases: with MaxDomains above the segment or lowest level, and with
//     segments, steps 3-4 run first with those levels as units, then
//     again inside each chosen domain.
//  6. Nodes: in each lowest-level domain, nodes with the fewest free GPUs
//     that fit first (fill fragments); GPUs from the smallest intra-node
//     group that holds them. A single-node request takes the node with
//     the fewest free GPUs that fit, in the fullest lowest-level domain.
func (p *Placer) Place(s *topology.State, r *Request, buf []topology.NodeAlloc) (Result, error) {
	if s.Cluster() != p.c {
		return Result{}, topology.ErrOtherCluster
	}
	if err := p.pl.resolve(p.c, r); err != nil {
		return Result{}, err
	}
	p.s = s
	p.out = buf[:0]
	if p.epoch++; p.epoch == 0 {
		clear(p.stamp)
		p.epoch = 1
	}
	res := Result{}
	p.spansDone, p.qSpans = false, [topology.MaxLevels]int{}
	p.candidates(r)
	if p.strategy != LeafPack {
		if !p.placeBlind() {
			res.Reason = p.blindFailure()
			p.s = nil
			return res, nil
		}
	} else if p.largerThanCluster() || !p.placeSingle() {
		p.capacities()
		if p.largerThanCluster() || !p.placeDeep() && !p.placePhase(0, 0, 0, p.pl.need, max(p.pl.reqLi, 0)) {
			res.Reason = p.failure()
			p.s = nil
			return res, nil
		}
		p.spansDone = true
	}
	res.Placed = true
	res.Assignment = p.out
	p.quality(&res)
	p.s, p.out = nil, nil
	return res, nil
}

// largerThanCluster reports whether the request asks for more nodes or
// GPUs than the whole cluster has (it then fails on capacity, whatever
// its size, without a search).
func (p *Placer) largerThanCluster() bool {
	if p.pl.mode == modeGPUs {
		return p.pl.need > p.c.TotalGPUs()
	}
	return p.pl.nodes > p.c.NumNodes()
}

// candidates computes step 1 into p.cand.
func (p *Placer) candidates(r *Request) {
	pl := &p.pl
	switch {
	case pl.mode == modeGPUs && pl.excl:
		copy(p.cand, p.s.IdleWords())
	case pl.mode == modeGPUs:
		copy(p.cand, p.s.AvailWords(1))
	case pl.g > p.maxG:
		bits.Zero(p.cand)
	case pl.excl:
		bits.And(p.cand, p.s.IdleWords(), p.s.AvailWords(pl.g))
	default:
		copy(p.cand, p.s.AvailWords(pl.g))
	}
	if r.Allowed != nil {
		w := r.Allowed.Words()
		for i := range p.cand {
			if i < len(w) {
				p.cand[i] &= w[i]
			} else {
				p.cand[i] = 0
			}
		}
	}
	if r.Excluded != nil {
		w := r.Excluded.Words()
		for i := 0; i < len(p.cand) && i < len(w); i++ {
			p.cand[i] &^= w[i]
		}
	}
}

// Internal level helpers: li 0 is the virtual root, li = l+1 is cluster
// level l.

func (p *Placer) domOf(node, li int) int {
	if li == 0 {
		return 0
	}
	return p.c.NodeDomain(node, li-1)
}

// domains returns the domains of level li inside the internal domain
// (sli, sd), as an index range.
func (p *Placer) domains(li, sli, sd int) (int, int) {
	i := p.off[sli] + sd
	return p.domOf(int(p.first[i]), li), p.domOf(int(p.end[i])-1, li) + 1
}

func (p *Placer) domFree(li, d int) int32 {
	if li == 0 {
		return int32(p.s.FreeGPUs())
	}
	return int32(p.s.DomainFreeGPUs(li-1, d))
}

func (p *Placer) caps(ph int) []int32 {
	if p.pl.phases[ph].seg {
		return p.capSeg
	}
	return p.capNode
}

// capacities computes step 2.
func (p *Placer) capacities() {
	pl := &p.pl
	leaf := p.leafLi
	lo := p.off[leaf]
	nd := p.off[leaf+1] - lo
	for d := range nd {
		f, e := int(p.first[lo+d]), int(p.end[lo+d])
		if pl.mode == modeGPUs {
			// ge[k]: candidates with at least k free GPUs; their sum over k
			// is the free GPUs.
			ge := p.geCnt[d*(p.maxG+2) : (d+1)*(p.maxG+2)]
			n := 0
			if w := f >> 6; w == (e-1)>>6 {
				// The domain sits in one word: mask it once.
				m := p.cand[w] & bits.RangeMask(w, f, e)
				for k := 1; k <= p.maxG; k++ {
					c := mathbits.OnesCount64(p.s.AvailWords(k)[w] & m)
					ge[k] = int32(c)
					n += c
				}
			} else {
				for k := 1; k <= p.maxG; k++ {
					c := bits.AndCount(p.s.AvailWords(k), p.cand, f, e)
					ge[k] = int32(c)
					n += c
				}
			}
			ge[p.maxG+1] = 0
			p.capNode[lo+d] = int32(n)
		} else {
			p.capNode[lo+d] = int32(bits.Count(p.cand, f, e))
		}
	}
	p.sumUp(p.capNode, leaf)
	if pl.seg > 1 {
		so := p.off[pl.segLi]
		for i := so; i < p.off[pl.segLi+1]; i++ {
			p.capSeg[i] = p.capNode[i] / int32(pl.seg)
		}
		p.sumUp(p.capSeg, pl.segLi)
	}
}

// sumUp fills the levels above li with the sums of their children.
func (p *Placer) sumUp(caps []int32, li int) {
	for l := li - 1; l >= 0; l-- {
		next := p.off[l+1]
		for i := p.off[l]; i < p.off[l+1]; i++ {
			var sum int32
			for ch := p.cfirst[i]; ch < p.cend[i]; ch++ {
				sum += caps[next+int(ch)]
			}
			caps[i] = sum
		}
	}
}

// minUnits returns the fewest unit domains (of level unitLi) of domain
// (li, d) whose capacities sum to need, or a large number when they
// cannot.
func (p *Placer) minUnits(caps []int32, li, d, need, unitLi int) int {
	if caps[p.off[li]+d] < int32(need) {
		return 1 << 30
	}
	if li == unitLi {
		return 1
	}
	uf, ue := p.domains(unitLi, li, d)
	buf := p.sortBuf[:0]
	uo := p.off[unitLi]
	for u := uf; u < ue; u++ {
		if c := caps[uo+u]; c > 0 {
			buf = append(buf, c)
		}
	}
	slices.Sort(buf)
	sum, m := int32(0), 0
	for i := len(buf) - 1; i >= 0; i-- {
		sum += buf[i]
		m++
		if sum >= int32(need) {
			break
		}
	}
	return m
}

// better reports whether candidate domain a beats b for a need: fewer
// units, then least spare capacity, then fewer free GPUs, then lower index.
func (p *Placer) better(caps []int32, li, a, ma, b, mb, need int) bool {
	if ma != mb {
		return ma < mb
	}
	if p.pl.mode == modeGPUs && li == p.leafLi {
		// GPU mode: among lowest-level domains, the one that needs the
		// fewest nodes first (whole free nodes keep NVLink groups whole).
		na, nb := p.minNodes(a, need), p.minNodes(b, need)
		if na != nb {
			return na < nb
		}
	}
	ca, cb := caps[p.off[li]+a], caps[p.off[li]+b]
	if ca != cb {
		return ca < cb
	}
	return p.fuller(li, a, b)
}

// minNodes returns the fewest candidate nodes of lowest-level domain d whose
// free GPUs add up to need (GPU mode): the fullest nodes first, from the
// per-class counts of capacities.
func (p *Placer) minNodes(d, need int) int {
	ge := p.geCnt[d*(p.maxG+2) : (d+1)*(p.maxG+2)]
	n := 0
	for k := p.maxG; k >= 1 && need > 0; k-- {
		cnt := int(ge[k] - ge[k+1])
		take := min(cnt, (need+k-1)/k)
		n += take
		need -= take * k
	}
	return n
}

// fuller reports whether domain a of level li should be filled before b:
// fewer free GPUs, then (on ties) a fuller parent, grandparent and so on,
// then the lower index.
func (p *Placer) fuller(li, a, b int) bool {
	for ; li > 0 && a != b; li-- {
		fa, fb := p.domFree(li, a), p.domFree(li, b)
		if fa != fb {
			return fa < fb
		}
		a, b = p.parentOf(li, a), p.parentOf(li, b)
	}
	return a < b
}

// parentOf returns the parent of domain d of internal level li (li >= 1).
func (p *Placer) parentOf(li, d int) int {
	if li == 1 {
		return 0
	}
	return p.c.DomainParent(li-1, d)
}

// placeDeep handles multi-phase requests (segments, MaxDomains above the
// lowest level) that fit whole inside one domain below the outer phase's
// unit level: there every segment and the domain limit are met at once, so
// the last phase alone places them, as tightly as it can.
func (p *Placer) placeDeep() bool {
	pl := &p.pl
	if pl.nphases == 1 {
		return false
	}
	need := pl.need
	if pl.phases[0].seg {
		need *= pl.seg
	}
	return p.placePhase(pl.nphases-1, 0, 0, need, max(pl.reqLi, pl.phases[0].unitLi+1))
}

// placePhase runs steps 3-4 of phase ph inside internal domain (sli, sd),
// trying levels from the phase's unit level up to level top.
func (p *Placer) placePhase(ph, sli, sd, need, top int) bool {
	pl := &p.pl
	u := pl.phases[ph].unitLi
	caps := p.caps(ph)
	top = max(top, sli)
	for li := u; li >= top; li-- {
		df, de := p.domains(li, sli, sd)
		best, bestM := -1, 0
		for d := df; d < de; d++ {
			if caps[p.off[li]+d] < int32(need) {
				continue
			}
			m := p.minUnits(caps, li, d, need, u)
			if ph == 0 && pl.maxK > 0 && m > pl.maxK {
				continue
			}
			if best < 0 || p.better(caps, li, d, m, best, bestM, need) {
				best, bestM = d, m
			}
		}
		if best >= 0 {
			p.fill(ph, li, best, need, bestM)
			return true
		}
	}
	return false
}

// fill spreads need items of domain (li, d) over exactly m units of phase
// ph (step 4), then enters each unit.
func (p *Placer) fill(ph, li, d, need, m int) {
	u := p.pl.phases[ph].unitLi
	if li == u {
		p.enter(ph, d, need)
		return
	}
	caps := p.caps(ph)
	i := p.off[li] + d
	cf, ce := int(p.cfirst[i]), int(p.cend[i])
	// One child, when one holds it with no more units.
	best := -1
	for ch := cf; ch < ce; ch++ {
		if caps[p.off[li+1]+ch] < int32(need) {
			continue
		}
		if p.minUnits(caps, li+1, ch, need, u) != m {
			continue
		}
		if best < 0 || p.better(caps, li+1, ch, m, best, m, need) {
			best = ch
		}
	}
	if best >= 0 {
		p.fill(ph, li+1, best, need, m)
		return
	}
	p.split(ph, li, d, need, m)
}

// split covers need with several children of (li, d): children in order
// of what their m best units hold, added until the m best units of the
// chosen children cover need; the m-1 largest units are taken whole and
// the smallest unit that covers the rest takes the last piece.
func (p *Placer) split(ph, li, d, need, m int) {
	u := p.pl.phases[ph].unitLi
	caps := p.caps(ph)
	i := p.off[li] + d
	cf, ce := int(p.cfirst[i]), int(p.cend[i])
	next := p.off[li+1]
	uo := p.off[u]
	// Each child's units, largest first, in one flat buffer.
	kids := p.kids[:0]
	flat := p.units[:0]
	for ch := cf; ch < ce; ch++ {
		if caps[next+ch] == 0 {
			continue
		}
		lo := len(flat)
		uf, ue := p.domains(u, li+1, ch)
		for x := uf; x < ue; x++ {
			if c := caps[uo+x]; c > 0 {
				flat = append(flat, unitRef{cap: c, unit: int32(x)})
			}
		}
		if len(flat)-lo > 1 {
			slices.SortFunc(flat[lo:], func(a, b unitRef) int {
				if a.cap != b.cap {
					return int(b.cap - a.cap)
				}
				return int(a.unit - b.unit)
			})
		}
		kids = append(kids, kidRef{child: int32(ch), cap: caps[next+ch], lo: int32(lo), hi: int32(len(flat))})
	}
	p.units = flat
	// Greedy cover: add the child that raises the sum of the m largest
	// chosen units the most (ties: more candidates, then lower index),
	// until that sum covers need. Units keep the order in which their
	// children were added on equal capacities.
	units := p.cur[:0]
	for added := int32(1); ; added++ {
		best, bestSum := -1, int32(-1)
		for k := range kids {
			kid := &kids[k]
			if kid.rank > 0 {
				continue
			}
			sum := topMergeSum(units, flat[kid.lo:kid.hi], m)
			if sum > bestSum || sum == bestSum && kid.cap > kids[best].cap {
				best, bestSum = k, sum
			}
		}
		if best < 0 {
			panic("placement: split ran out of children before covering its need")
		}
		kid := &kids[best]
		kid.rank = added
		units = p.mergeUnits(units, flat[kid.lo:kid.hi], added)
		if bestSum >= int32(need) {
			break
		}
	}
	if len(units) < m {
		panic("placement: split found fewer units than its budget")
	}
	amt := p.amt[li][:ce-cf]
	for k := range amt {
		amt[k] = 0
	}
	var sum int32
	for k := 0; k < m-1; k++ {
		sum += units[k].cap
		amt[p.domOf(p.unitNode(u, units[k].unit), li+1)-cf] += units[k].cap
	}
	rest := int32(need) - sum
	if rest <= 0 {
		panic("placement: split's budget was not minimal")
	}
	// The last piece: the smallest unit that covers the rest, preferring
	// one under a child already used (fewer switches crossed), among all
	// the children's units not yet taken.
	if p.mark++; p.mark == 0 {
		clear(p.marks)
		p.mark = 1
	}
	for k := 0; k < m-1; k++ {
		p.marks[uo+int(units[k].unit)] = p.mark
	}
	last, lastCap, lastUsed := -1, int32(0), false
	for k := range amt {
		used := amt[k] > 0
		uf, ue := p.domains(u, li+1, cf+k)
		for x := uf; x < ue; x++ {
			c := caps[uo+x]
			if c < rest || p.marks[uo+x] == p.mark {
				continue
			}
			if last < 0 || used && !lastUsed || used == lastUsed && c < lastCap {
				last, lastCap, lastUsed = x, c, used
			}
		}
	}
	if last < 0 {
		panic("placement: split has no unit for the last piece")
	}
	amt[p.domOf(p.unitNode(u, int32(last)), li+1)-cf] += rest
	for k, a := range amt {
		if a == 0 {
			continue
		}
		ch := cf + k
		p.fill(ph, li+1, ch, int(a), p.minUnits(caps, li+1, ch, int(a), u))
	}
}

// unitNode returns the first node of unit x of internal level u.
func (p *Placer) unitNode(u int, x int32) int { return int(p.first[p.off[u]+int(x)]) }

// enter hands need items of unit d of phase ph to the next phase, or picks
// nodes after the last one.
func (p *Placer) enter(ph, d, need int) {
	cur := p.pl.phases[ph]
	if cur.seg {
		if ph+1 < p.pl.nphases && p.pl.phases[ph+1].seg {
			p.mustPhase(ph+1, cur.unitLi, d, need)
			return
		}
		need *= p.pl.seg
	}
	if ph+1 < p.pl.nphases {
		p.mustPhase(ph+1, cur.unitLi, d, need)
		return
	}
	p.pickNodes(d, need)
}

func (p *Placer) mustPhase(ph, sli, sd, need int) {
	if !p.placePhase(ph, sli, sd, need, sli) {
		panic("placement: inner phase failed although capacities allowed it")
	}
}

// pickNodes takes need nodes (GPUs in GPU mode) from lowest-level domain d
// (step 6).
func (p *Placer) pickNodes(d, need int) {
	i := p.off[p.leafLi] + d
	lo, hi := int(p.first[i]), int(p.end[i])
	if p.leafLi > 0 {
		p.markDomains(d, &p.qSpans)
	}

	if int(p.capNode[i]) == need {
		// The whole domain's candidates are taken (the usual case for the
		// units a large request fills): one pass over its words.
		p.takeAll(lo, hi)
		return
	}
	if p.pl.mode == modeGPUs {
		p.pickGPUMode(d, lo, hi, need)
		return
	}
	if p.pl.excl {
		for n := bits.Next(p.cand, lo, hi); n >= 0 && need > 0; n = bits.Next(p.cand, n+1, hi) {
			p.take(n, p.pl.g)
			need--
		}
	} else {
		for k := p.pl.g; k <= p.maxG && need > 0; k++ {
			need = p.takeExact(lo, hi, k, need)
		}
	}
	if need > 0 {
		panic("placement: a domain held fewer candidates than counted")
	}
}

// exactWords writes into p.tmp, over words of [lo, hi), the candidates
// with exactly k free GPUs, and reports whether there is any (bits of the
// edge words outside [lo, hi) may count).
func (p *Placer) exactWords(lo, hi, k int) bool {
	a := p.s.AvailWords(k)
	var b []uint64
	if k < p.maxG {
		b = p.s.AvailWords(k + 1)
	}
	var any uint64
	for w := lo >> 6; w <= (hi-1)>>6; w++ {
		x := p.cand[w] & a[w]
		if b != nil {
			x &^= b[w]
		}
		p.tmp[w] = x
		any |= x
	}
	return any != 0
}

// takeAll takes every candidate of [lo, hi): all its free GPUs in GPU
// mode, the request's GPUs per node otherwise.
func (p *Placer) takeAll(lo, hi int) {
	g := p.pl.g
	for w := lo >> 6; w <= (hi-1)>>6; w++ {
		x := p.cand[w] & bits.RangeMask(w, lo, hi)
		p.cand[w] &^= x
		whole := p.pl.mode == modeGPUs || p.pl.excl || g >= p.maxG
		for ; x != 0; x &= x - 1 {
			n := w<<6 + mathbits.TrailingZeros64(x)
			var m uint64
			if whole {
				m = p.s.Free(n) // every free GPU of the node
			} else {
				m = p.pickGPUs(n, g)
			}
			p.out = append(p.out, topology.NodeAlloc{Node: int32(n), GPUs: m})
		}
	}
}

// takeExact takes up to need candidates with exactly k free GPUs from
// [lo, hi), in node order, returning what is still needed. It works a word
// at a time.
func (p *Placer) takeExact(lo, hi, k, need int) int {
	if !p.exactWords(lo, hi, k) {
		return need
	}
	for w := lo >> 6; w <= (hi-1)>>6 && need > 0; w++ {
		x := p.tmp[w] & bits.RangeMask(w, lo, hi)
		var taken uint64
		for ; x != 0 && need > 0; need-- {
			b := x & -x
			x &^= b
			taken |= b
			n := w<<6 + mathbits.TrailingZeros64(b)
			p.out = append(p.out, topology.NodeAlloc{Node: int32(n), GPUs: p.pickGPUs(n, p.pl.g)})
		}
		p.cand[w] &^= taken
	}
	return need
}

// pickGPUMode takes need GPUs from [lo, hi) on as few nodes as possible:
// the fullest candidates whole while no single node covers the rest, then
// the node with the fewest free GPUs that covers it. Whole nodes come first
// in the assignment, the partial one last.
func (p *Placer) pickGPUMode(d, lo, hi, need int) {
	var cnt, take [topology.MaxGPUsPerNode + 1]int
	ge := p.geCnt[d*(p.maxG+2) : (d+1)*(p.maxG+2)]
	for k := 1; k <= p.maxG; k++ {
		cnt[k] = int(ge[k] - ge[k+1])
	}
	partK, partN := 0, 0
	top := p.maxG
	for rest := need; rest > 0; {
		for top > 0 && cnt[top] == take[top] {
			top--
		}
		if top == 0 {
			panic("placement: GPU-mode domain held fewer GPUs than counted")
		}
		if top >= rest {
			k := rest
			for cnt[k] == take[k] {
				k++
			}
			partK, partN = k, rest
			break
		}
		take[top]++
		rest -= top
	}
	for k := p.maxG; k >= 1; k-- {
		n := take[k]
		if n == 0 && k != partK {
			continue
		}
		p.exactWords(lo, hi, k)
		for x := bits.Next(p.tmp, lo, hi); x >= 0 && n > 0; x = bits.Next(p.tmp, x+1, hi) {
			p.take(x, k)
			n--
		}
	}
	if partK > 0 {
		p.exactWords(lo, hi, partK) // the wholes taken are no longer candidates
		x := bits.Next(p.tmp, lo, hi)
		if x < 0 {
			panic("placement: GPU-mode partial node vanished")
		}
		p.take(x, partN)
	}
}

// take assigns g GPUs of node n (all of them when exclusive) and removes
// the node from the candidates.
func (p *Placer) take(n, g int) {
	bits.Clear(p.cand, n)
	p.out = append(p.out, topology.NodeAlloc{Node: int32(n), GPUs: p.pickGPUs(n, g)})
}

// pickGPUs chooses g free GPUs of node n: all of a node for exclusive or
// whole-node requests, else from the smallest intra-node group that holds
// g (fewest free GPUs on ties), else the lowest free GPUs.
func (p *Placer) pickGPUs(n, g int) uint64 {
	free := p.s.Free(n)
	if p.pl.excl || g <= 0 {
		return free
	}
	if bits.PopCount(free) <= g {
		return free
	}
	best, bestSize, bestFree := uint64(0), 65, 65
	for _, grp := range p.c.NodeGroups(n) {
		f := bits.PopCount(grp & free)
		if f < g {
			continue
		}
		size := bits.PopCount(grp)
		if size < bestSize || size == bestSize && f < bestFree {
			best, bestSize, bestFree = grp, size, f
		}
	}
	if best != 0 {
		return bits.LowBits(best&free, g)
	}
	return bits.LowBits(free, g)
}

// placeSingle handles requests for one node's worth: a non-exclusive
// single-node request, or a GPU-mode request that one node can hold. It
// takes the node with the fewest free GPUs that fit, in the lowest-level
// domain with the fewest free GPUs, and reports whether it placed.
func (p *Placer) placeSingle() bool {
	pl := &p.pl
	g := pl.g
	switch {
	case pl.mode == modeNodes && pl.nodes == 1 && !pl.excl && pl.seg == 1:
	case pl.mode == modeGPUs && !pl.excl && pl.need <= p.maxG:
		g = pl.need
	default:
		return false
	}
	leaf := p.off[p.leafLi]
	for k := g; k <= p.maxG; k++ {
		if !p.exactWords(0, p.n, k) {
			continue
		}
		// Visit the lowest-level domains holding such a node, jumping
		// from one candidate to the next domain's first candidate.
		best, bestDom := -1, -1
		for n := bits.Next(p.tmp, 0, p.n); n >= 0; {
			d := p.domOf(n, p.leafLi)
			if best < 0 || p.fuller(p.leafLi, d, bestDom) {
				best, bestDom = n, d
			}
			n = bits.Next(p.tmp, int(p.end[leaf+d]), p.n)
		}
		if best >= 0 {
			p.take(best, g)
			return true
		}
	}
	// GPU mode with no single node: fall through to the general path,
	// which spreads over several nodes. Node mode: fail in the general
	// path, which states the reason.
	return false
}

// failure builds the Reason for a request phase 0 could not place.
func (p *Placer) failure() Reason {
	pl := &p.pl
	ph := pl.phases[0]
	caps := p.caps(0)
	r := Reason{Need: pl.need, unit: unitDesc{mode: pl.mode, g: pl.g, excl: pl.excl}}
	if ph.seg {
		r.unit.seg = pl.seg
		r.unit.segName = p.levelName(pl.segLi)
	}
	top := max(pl.reqLi, 0)
	if pl.maxK > 0 {
		// Did a domain hold the items, only spread over too many units?
		best := 1 << 30
		for li := ph.unitLi; li >= top; li-- {
			for d := range p.off[li+1] - p.off[li] {
				if m := p.minUnits(caps, li, d, pl.need, ph.unitLi); m < best {
					best = m
				}
			}
		}
		if best < 1<<30 {
			r.Code, r.Level, r.Need, r.Have = TooManyDomains, p.levelName(pl.maxLi), pl.maxK, best
			return r
		}
	}
	var have int32
	for i := p.off[top]; i < p.off[top+1]; i++ {
		have = max(have, caps[i])
	}
	r.Have = int(have)
	switch {
	case pl.reqLi > 0:
		r.Code, r.Level = RequiredLevel, p.levelName(pl.reqLi)
	case ph.seg:
		r.Code = NoSegments
	default:
		r.Code = NoCapacity
	}
	return r
}

func (p *Placer) levelName(li int) string {
	if li == 0 {
		return ""
	}
	return p.c.LevelName(li - 1)
}

// quality fills the assignment's counts and spans.
func (p *Placer) quality(res *Result) {
	depth := p.leafLi
	res.Nodes = len(res.Assignment)
	if p.spansDone {
		// The leaf-packing path counted the domains as it picked.
		res.Spans = p.qSpans
		for _, a := range res.Assignment {
			res.GPUs += bits.PopCount(a.GPUs)
		}
	} else {
		prevLeaf := -1
		for _, a := range res.Assignment {
			res.GPUs += bits.PopCount(a.GPUs)
			if depth > 0 {
				// Nodes come grouped by lowest-level domain: a node in the
				// same one as the previous adds no new domain.
				leaf := p.c.NodeDomain(int(a.Node), depth-1)
				if leaf == prevLeaf {
					continue
				}
				prevLeaf = leaf
				p.markDomains(leaf, &res.Spans)
			}
		}
	}
	res.Within = -1
	for l := 0; l < depth; l++ {
		if res.Spans[l] == 1 {
			res.Within = l
		}
	}
	res.PreferenceMet = p.pl.prefLi < 0 || res.Within >= p.pl.prefLi-1
}

// markDomains counts in spans the lowest-level domain leaf and its
// ancestors not yet counted in this decision.
func (p *Placer) markDomains(leaf int, spans *[topology.MaxLevels]int) {
	d := leaf
	for li := p.leafLi; li >= 1; li-- {
		x := p.off[li] + d
		if p.stamp[x] == p.epoch {
			return // its ancestors are counted too
		}
		p.stamp[x] = p.epoch
		spans[li-1]++
		d = p.parentOf(li, d)
	}
}

// topMergeSum returns the sum of the m largest capacities of two lists
// sorted largest first.
func topMergeSum(a, b []unitRef, m int) int32 {
	var sum int32
	i, j := 0, 0
	for k := 0; k < m; k++ {
		switch {
		case i < len(a) && (j >= len(b) || a[i].cap >= b[j].cap):
			sum += a[i].cap
			i++
		case j < len(b):
			sum += b[j].cap
			j++
		default:
			return sum
		}
	}
	return sum
}

// mergeUnits merges the child's sorted units b (tagged with the child's
// rank) into the chosen list a, largest first, a's units first on ties. It
// reuses the placer's two buffers.
func (p *Placer) mergeUnits(a, b []unitRef, rank int32) []unitRef {
	out := p.cur2[:0]
	if len(a) > 0 && &a[0] == &p.cur2[:1][0] {
		out = p.cur[:0]
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if i < len(a) && (j >= len(b) || a[i].cap >= b[j].cap) {
			out = append(out, a[i])
			i++
		} else {
			x := b[j]
			x.child = rank
			out = append(out, x)
			j++
		}
	}
	return out
}
