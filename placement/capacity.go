package placement

import (
	mathbits "math/bits"

	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology"
)

// scratch is the per-request state of a Placer: the resolved plan, the
// candidates and capacities of the state at hand, caches and search
// tables. Everything is sized by init, once per Placer.
type scratch struct {
	lay *layout
	s   *topology.State
	w   access.Words // s's raw words
	// wOf is the state whose words w holds, kept across decisions (a
	// state's words never move), so that a Placer used on one state
	// reads them once; it keeps that state reachable until another is
	// placed on.
	wOf *topology.State
	req *Request
	pl  plan
	out []topology.NodeAlloc

	// masked says the capacities come from cand (Allowed or Excluded
	// given, a flat cluster, or exclusive nodes of mixed sizes) rather
	// than from the state's domain counters. cand is valid when masked.
	masked bool
	cand   []uint64
	tmp    []uint64
	// removed holds the nodes the request's sets took out of the
	// candidates the counters count; countable says those counters count
	// the request's candidates (not exclusive nodes of mixed sizes).
	removed   []uint64
	nremoved  int
	countable bool
	// shortRoot says capacities stopped at the root, which holds too
	// little: only the root's and the top level's capacities are set.
	shortRoot bool
	// minFree is the least usable GPU count of a candidate (the request's
	// GPUs per node, or 1).
	minFree int

	// capBase[x] is the base items (nodes, or GPUs in GPU mode) the
	// candidates of flat domain x hold; capSeg[i][x] the whole segments
	// of layer i (for domains at or above the layer's level).
	capBase []int32
	capSeg  [MaxSegmentLayers][]int32

	// cls and spread are the class plans of pickLeaf and spreadGPUs,
	// pooled and want spreadGPUs' histograms: kept here, so that only
	// their first maxGPUs+1 entries are cleared per use.
	cls, spread  classPlan
	pooled, want [topology.MaxGPUsPerNode + 1]int32

	// hist[x*(maxGPUs+1)+k] is the number of candidates of x with k
	// usable GPUs (free GPUs, or size for exclusive requests), computed
	// on demand (histAt[x] == epoch).
	hist   []int32
	histAt []uint32
	epoch  uint32
	// pathF[x] is x's path free GPUs (see pathFree), valid when
	// pathAt[x] == epoch.
	pathF  []int32
	pathAt []uint32

	budget      int
	approximate bool

	search searchScratch
	cover  coverScratch
	spans  spanScratch
	tally  tally
	// gpuChoice remembers GPU choices inside nodes (a pure function of
	// its key, so it is kept across decisions), verdicts whether requests
	// can ever fit (direct-mapped by a hash of the plan: a scheduling loop
	// asks about its whole queue, hundreds of distinct plans, every cycle).
	gpuChoice [1 << gpuChoiceBits]gpuChoice
	verdicts  [256]verdict
}

func (sc *scratch) init(ly *layout, budget int) {
	sc.lay = ly
	nd := ly.numDomains()
	sc.cand = make([]uint64, ly.words)
	sc.tmp = make([]uint64, ly.words)
	sc.removed = make([]uint64, ly.words)
	sc.capBase = make([]int32, nd)
	for i := range sc.capSeg {
		sc.capSeg[i] = make([]int32, nd)
	}
	sc.hist = make([]int32, nd*(ly.maxGPUs+1))
	sc.histAt = make([]uint32, nd)
	sc.pathF = make([]int32, nd)
	sc.pathAt = make([]uint32, nd)
	sc.search.init(ly, budget)
	sc.cover.init(ly)
	sc.spans.init(ly)
}

func (sc *scratch) begin(s *topology.State, r *Request, buf []topology.NodeAlloc, budget int) {
	sc.s, sc.req, sc.out = s, r, buf[:0]
	if s != sc.wOf {
		sc.w, sc.wOf = access.StateWords(s), s
	}
	sc.budget, sc.approximate = budget, false
	if sc.epoch++; sc.epoch == 0 {
		clear(sc.histAt)
		clear(sc.pathAt)
		sc.epoch = 1
	}
	sc.spans.begin()
	sc.cover.keptFor = -1
	sc.cover.capsChanged()
	sc.tally = tally{}
}

func (sc *scratch) end() { sc.s, sc.req, sc.out = nil, nil, nil }

// spend takes work units from the decision's search budget and reports
// whether they were available.
func (sc *scratch) spend(work int) bool {
	if work > sc.budget {
		return false
	}
	sc.budget -= work
	return true
}

// capacities computes step 1: capBase for every domain, and capSeg for
// every segment layer.
func (p *Placer) capacities() {
	sc, ly := &p.sc, p.lay
	pl := &sc.pl
	sc.minFree = 1
	if pl.mode == modeNodes {
		sc.minFree = max(pl.perNode, 1)
	}
	sc.shortRoot = false
	sc.countable = ly.depth > 0 && !(pl.exclusive && !ly.uniform)
	sc.masked = sc.req.Allowed != nil || sc.req.Excluded != nil || !sc.countable
	switch {
	case sc.minFree > ly.maxGPUs:
		clear(sc.capBase)
	case !sc.countable:
		p.candidates()
		for d := range ly.count(ly.leaf) {
			x := ly.leafID(d)
			sc.capBase[x] = int32(p.maskedCapacity(x))
		}
		p.lay.sumUp(sc.capBase, ly.leaf)
	case !sc.masked && pl.nlayers == 0 && !p.reference:
		if p.rootShort() {
			// Nothing fits anywhere: the lower levels are read only if
			// a failure reason needs them (levelCapacities).
			return
		}
		for l := level(1); l <= ly.leaf; l++ { // rootShort read level 0 and the root
			p.levelCapacities(l)
		}
	case !sc.masked:
		for l := level(0); l <= ly.leaf; l++ {
			p.levelCapacities(l)
		}
		p.lay.sumUp(sc.capBase, 0)
	default:
		for l := level(0); l <= ly.leaf; l++ {
			p.levelCapacities(l)
		}
		p.candidates()
		p.subtractRemovedCapacity()
		p.lay.sumUp(sc.capBase, ly.leaf)
	}
	p.segmentCapacities()
}

// rootShort reads the top level's and the root's capacities from the
// counters and reports whether the root holds fewer items than the request
// needs (for a request without segments, whose phases all count base
// items). It leaves sc.shortRoot set when it does: only those capacities
// are then valid.
func (p *Placer) rootShort() bool {
	sc := &p.sc
	p.levelCapacities(0)
	p.lay.sumUp(sc.capBase, 0)
	sc.shortRoot = int(sc.capBase[0]) < sc.pl.need(0)
	return sc.shortRoot
}

// levelCapacities reads the base items of every domain of level l from
// the counters into capBase.
func (p *Placer) levelCapacities(l level) {
	ly := p.lay
	p.counterCapacities(l, p.sc.capBase[ly.id(l, 0):ly.id(l, 0)+ly.count(l)], 0)
}

// counterCapacities reads the base items of the domains from index from
// on of level l from the state's counters into caps.
func (p *Placer) counterCapacities(l level, caps []int32, from int) {
	sc := &p.sc
	s := sc.s
	switch {
	case sc.pl.mode == modeGPUs && sc.pl.exclusive:
		copy(caps, s.LevelIdleGPUs(int(l))[from:])
	case sc.pl.mode == modeGPUs:
		copy(caps, s.LevelFreeGPUs(int(l))[from:])
	case sc.pl.exclusive:
		copy(caps, s.LevelIdleNodes(int(l))[from:])
	default:
		avail, stride := s.LevelAvail(int(l)), p.lay.maxGPUs+1
		for d := range caps {
			caps[d] = avail[(from+d)*stride+sc.minFree]
		}
	}
}

// candidates computes the candidate bitset: schedulable nodes with enough
// free GPUs (idle ones, large enough, for exclusive requests), within
// Allowed and outside Excluded.
func (p *Placer) candidates() {
	sc, ly := &p.sc, p.lay
	switch {
	case sc.pl.exclusive:
		bits.And(sc.cand, sc.w.Idle, ly.sizeWords(sc.minFree))
	default:
		copy(sc.cand, sc.w.AvailWords(sc.minFree))
	}
	copy(sc.removed, sc.cand)
	if a := sc.req.Allowed; a != nil {
		w := a.Words()
		for i := range sc.cand {
			if i < len(w) {
				sc.cand[i] &= w[i]
			} else {
				sc.cand[i] = 0
			}
		}
	}
	if e := sc.req.Excluded; e != nil {
		w := e.Words()
		for i := 0; i < len(sc.cand) && i < len(w); i++ {
			sc.cand[i] &^= w[i]
		}
	}
	p.setRemoved()
}

// subtractRemovedCapacity takes what Allowed and Excluded removed out of
// the leaves' counter capacities: node by node when they removed few
// nodes, else leaf by leaf (a leaf with no candidate left holds nothing).
func (p *Placer) subtractRemovedCapacity() {
	sc, ly := &p.sc, p.lay
	if sc.nremoved <= ly.count(ly.leaf) {
		for w, m := range sc.removed {
			for ; m != 0; m &= m - 1 {
				n := w<<6 + mathbits.TrailingZeros64(m)
				sc.capBase[ly.leafID(ly.leafOfNode(n))] -= int32(p.removedItems(n))
			}
		}
		return
	}
	for d := range ly.count(ly.leaf) {
		x := ly.leafID(d)
		f, e := int(ly.nodeFirst[x]), int(ly.nodeEnd[x])
		switch {
		case !bits.Any(sc.cand, f, e):
			sc.capBase[x] = 0
		case bits.Any(sc.removed, f, e):
			for w := f >> 6; w <= (e-1)>>6; w++ {
				for m := sc.removed[w] & bits.RangeMask(w, f, e); m != 0; m &= m - 1 {
					sc.capBase[x] -= int32(p.removedItems(w<<6 + mathbits.TrailingZeros64(m)))
				}
			}
		}
	}
}

// setRemoved turns sc.removed, a copy of the candidates before Allowed
// and Excluded, into the nodes they removed.
func (p *Placer) setRemoved() {
	sc := &p.sc
	sc.nremoved = 0
	for w := range sc.removed {
		sc.removed[w] &^= sc.cand[w]
		sc.nremoved += mathbits.OnesCount64(sc.removed[w])
	}
}

// maskedCapacity counts the base items of leaf x from the candidates (for
// clusters whose counters do not count the request's candidates).
func (p *Placer) maskedCapacity(x int) int {
	sc, ly := &p.sc, p.lay
	f, e := int(ly.nodeFirst[x]), int(ly.nodeEnd[x])
	if sc.pl.mode == modeNodes {
		return bits.Count(sc.cand, f, e)
	}
	h := p.histogram(x)
	n := 0
	for k := 1; k <= ly.maxGPUs; k++ {
		n += k * int(h[k])
	}
	return n
}

// usableGPUs returns node n's class: its free GPUs, or its size for
// exclusive requests.
func (p *Placer) usableGPUs(n int) int {
	if p.sc.pl.exclusive {
		return p.lay.c.NodeGPUs(topology.NodeID(n))
	}
	return p.sc.s.FreeCount(topology.NodeID(n))
}

// removedItems returns the base items a removed node would have held.
func (p *Placer) removedItems(n int) int {
	if p.sc.pl.mode == modeNodes {
		return 1
	}
	return p.usableGPUs(n)
}

// segmentCapacities computes capSeg, innermost layer first: at a layer's
// level, the whole segments its nodes (or the next layer's segments) make;
// above it, the sum of the children.
func (p *Placer) segmentCapacities() {
	sc, ly := &p.sc, p.lay
	pl := &sc.pl
	for i := pl.nlayers - 1; i >= 0; i-- {
		inner, per := sc.capBase, int32(pl.layers[i].size)
		if i+1 < pl.nlayers {
			inner, per = sc.capSeg[i+1], int32(pl.layers[i].size/pl.layers[i+1].size)
		}
		lvl := pl.layers[i].lvl
		caps := sc.capSeg[i]
		for d := range ly.count(lvl) {
			x := ly.id(lvl, d)
			caps[x] = inner[x] / per
		}
		p.lay.sumUp(caps, lvl)
	}
}

// phaseCap returns the items of phase ph that domain x holds (x at or
// above the phase's unit level).
func (p *Placer) phaseCap(ph, x int) int {
	if s := p.sc.pl.phases[ph].seg; s >= 0 {
		return int(p.sc.capSeg[s][x])
	}
	return int(p.sc.capBase[x])
}

// histogram returns, for domain x, the number of candidates with k usable
// GPUs for every k (free GPUs, or the node's size for exclusive
// requests); entries below the request's minimum are zero.
func (p *Placer) histogram(x int) []int32 {
	sc, ly := &p.sc, p.lay
	stride := ly.maxGPUs + 1
	h := sc.hist[x*stride : (x+1)*stride : (x+1)*stride]
	if sc.histAt[x] == sc.epoch {
		return h
	}
	sc.histAt[x] = sc.epoch
	if !sc.masked && !sc.pl.exclusive && x != 0 && sc.minFree <= ly.maxGPUs {
		// The counters give every class from minFree up.
		for k := range sc.minFree {
			h[k] = 0
		}
		p.counterHistogram(x, h)
		return h
	}
	clear(h)
	switch {
	case sc.minFree > ly.maxGPUs:
	case ly.levelOf(x) != ly.leaf && (sc.masked || x == 0):
		cf, ce := ly.children(x)
		for ch := cf; ch < ce; ch++ {
			for k, n := range p.histogram(ch) {
				h[k] += n
			}
		}
	case !sc.masked:
		p.counterHistogram(x, h)
	case sc.countable:
		p.counterHistogram(x, h)
		p.subtractRemoved(x, h)
	default:
		p.maskedHistogram(x, h)
	}
	return h
}

// subtractRemoved takes the nodes the mask removed from leaf x out of its
// histogram.
func (p *Placer) subtractRemoved(x int, h []int32) {
	sc, ly := &p.sc, p.lay
	f, e := int(ly.nodeFirst[x]), int(ly.nodeEnd[x])
	for w := f >> 6; w <= (e-1)>>6; w++ {
		for m := sc.removed[w] & bits.RangeMask(w, f, e); m != 0; m &= m - 1 {
			h[p.usableGPUs(w<<6+mathbits.TrailingZeros64(m))]--
		}
	}
}

// counterHistogram reads domain x's histogram from the state's counters.
func (p *Placer) counterHistogram(x int, h []int32) {
	sc, ly := &p.sc, p.lay
	if sc.pl.exclusive {
		// Uniform sizes (else the capacities are masked).
		h[ly.maxGPUs] = int32(sc.s.DomainIdleNodes(int(ly.levelOf(x)), ly.index(x)))
		return
	}
	g := ly.maxGPUs
	row := p.counterRow(x)[sc.minFree : g+1]
	out := h[sc.minFree:g]
	atLeast, above := row[:len(out)], row[1:len(out)+1] // bounds checked once
	for i := range out {
		out[i] = atLeast[i] - above[i]
	}
	h[g] = row[len(out)]
}

// maskedHistogram counts leaf x's candidates per class of usable GPUs:
// the candidates with at least k, for every k, then the differences.
func (p *Placer) maskedHistogram(x int, h []int32) {
	sc, ly := &p.sc, p.lay
	f, e := int(ly.nodeFirst[x]), int(ly.nodeEnd[x])
	for k := sc.minFree; k <= ly.maxGPUs; k++ {
		at := sc.w.AvailWords(k)
		if sc.pl.exclusive {
			at = ly.sizeWords(k)
		}
		h[k] = int32(bits.AndCount(sc.cand, at, f, e))
	}
	for k := sc.minFree; k < ly.maxGPUs; k++ {
		h[k] -= h[k+1]
	}
}

// domainFree returns the free GPUs on schedulable nodes of domain x (the
// state's counter; the whole cluster for the root).
func (p *Placer) domainFree(x int) int {
	if x == 0 {
		return p.sc.s.FreeGPUs()
	}
	return int(p.sc.w.DomFree[x-1])
}

// counterRow returns the availability counters of domain x, not the root
// (the state's DomAvail row): the state numbers every level's domains one
// after the other, top level first, as the layout does after the root, so
// that domain x is the state's entry x-1.
func (p *Placer) counterRow(x int) []int32 {
	stride := p.lay.maxGPUs + 1
	return p.sc.w.DomAvail[(x-1)*stride : x*stride : x*stride]
}

// pathFree returns the free GPUs of x and of each of its ancestors below
// the root: the stranded-capacity term a domain adds when used.
func (p *Placer) pathFree(x int) int {
	sc := &p.sc
	if x == 0 {
		return 0
	}
	if sc.pathAt[x] != sc.epoch {
		sc.pathF[x] = int32(p.domainFree(x) + p.pathFree(int(p.lay.parent[x])))
		sc.pathAt[x] = sc.epoch
	}
	return int(sc.pathF[x])
}

// classAtLeast returns the fewest usable GPUs, at least k, of a
// candidate of leaf x, or 0 when none has k.
func (p *Placer) classAtLeast(x, k int) int {
	sc, ly := &p.sc, p.lay
	if !sc.masked && !sc.pl.exclusive {
		row := p.counterRow(x)
		if row[k] == 0 {
			return 0
		}
		for k < ly.maxGPUs && row[k] == row[k+1] {
			k++
		}
		return k
	}
	h := p.histogram(x)
	for ; k <= ly.maxGPUs; k++ {
		if h[k] > 0 {
			return k
		}
	}
	return 0
}

// minClass returns the fewest usable GPUs of a candidate of leaf x (0 when
// it has none).
func (p *Placer) minClass(x int) int {
	sc, ly := &p.sc, p.lay
	if sc.minFree > ly.maxGPUs {
		return 0
	}
	if sc.masked || sc.pl.exclusive {
		f, e := int(ly.nodeFirst[x]), int(ly.nodeEnd[x])
		for k := sc.minFree; k <= ly.maxGPUs; k++ {
			if p.anyOfClass(k, f, e) {
				return k
			}
		}
		return 0
	}
	return p.classAtLeast(x, sc.minFree)
}

// anyOfClass reports whether nodes [f, e) hold a candidate with exactly k
// usable GPUs.
func (p *Placer) anyOfClass(k, f, e int) bool {
	for w := f >> 6; w <= (e-1)>>6; w++ {
		if p.candWord(w)&p.classWord(k, w)&bits.RangeMask(w, f, e) != 0 {
			return true
		}
	}
	return false
}
