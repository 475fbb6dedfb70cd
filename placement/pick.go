package placement

import (
	mathbits "math/bits"

	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology"
)

// classPlan says which nodes of one leaf a placement takes, by class (the
// nodes' usable GPUs): whole[k] nodes of class k, and in GPU mode one
// partial node of class partClass giving partGPUs.
type classPlan struct {
	whole     [topology.MaxGPUsPerNode + 1]int32
	partClass int
	partGPUs  int
}

// reset clears the plan for nodes of at most maxG GPUs.
func (cp *classPlan) reset(maxG int) {
	clear(cp.whole[:maxG+1])
	cp.partClass, cp.partGPUs = 0, 0
}

// takeStats summarises a leaf's share of a placement.
type takeStats struct {
	nodes int
	free  int // free GPUs of the nodes taken, before the placement
	taken int // GPUs assigned
}

// planClasses chooses the nodes that take a last-phase items of leaf x
// (step 5), from its histogram:
//   - nodes x g: the fewest free GPUs that fit first (fill fragments);
//   - exclusive nodes x g: the smallest nodes first (fewest GPUs given
//     beyond the request); whole nodes: the largest first (least left);
//   - GPU totals: the fewest nodes, the fullest first while none covers
//     the rest, then the tightest node that covers it.
func (p *Placer) planClasses(x, a int, cp *classPlan) {
	pl, maxG := &p.sc.pl, p.lay.maxGPUs
	h := p.histogram(x)
	cp.reset(maxG)
	rest := a * pl.itemNodes(p.lastPhase())
	switch {
	case pl.mode == modeGPUs:
		p.planGPUClasses(h, a, cp)
		return
	case pl.exclusive && pl.perNode == 0:
		for k := maxG; k >= 1 && rest > 0; k-- {
			t := min(int(h[k]), rest)
			cp.whole[k], rest = int32(t), rest-t
		}
	default:
		for k := p.sc.minFree; k <= maxG && rest > 0; k++ {
			t := min(int(h[k]), rest)
			cp.whole[k], rest = int32(t), rest-t
		}
	}
	if rest > 0 {
		panic("placement: a leaf held fewer candidates than counted")
	}
}

// planGPUClasses is planClasses for GPU totals: whole nodes, fullest
// first, while the fullest left does not cover the rest alone; then the
// tightest node that covers it.
func (p *Placer) planGPUClasses(h []int32, gpus int, cp *classPlan) {
	rest := gpus
	for k := p.lay.maxGPUs; k >= 1; k-- {
		c := int(h[k])
		if c == 0 {
			continue
		}
		if k < rest {
			t := min(c, (rest-1)/k)
			cp.whole[k], rest = int32(t), rest-t*k
			if t == c {
				continue
			}
		}
		// A node of class k is left and covers the rest: the tightest
		// class from rest up with a node left.
		j := rest
		for int(h[j]) == int(cp.whole[j]) {
			j++
		}
		cp.partClass, cp.partGPUs = j, rest
		return
	}
	panic("placement: a leaf held fewer GPUs than counted")
}

// leafTake returns the statistics of taking a last-phase items of leaf x
// as planClasses would, computed from the histogram alone.
func (p *Placer) leafTake(x, a int) takeStats {
	pl, maxG := &p.sc.pl, p.lay.maxGPUs
	h := p.histogram(x)
	var st takeStats
	rest := a * pl.itemNodes(p.lastPhase())
	switch {
	case pl.mode == modeGPUs:
		st = gpuTake(h, a, maxG)
	case pl.exclusive && pl.perNode == 0:
		for k := maxG; k >= 1 && rest > 0; k-- {
			t := min(int(h[k]), rest)
			st.nodes, st.free, rest = st.nodes+t, st.free+k*t, rest-t
		}
	default:
		for k := p.sc.minFree; k <= maxG && rest > 0; k++ {
			t := min(int(h[k]), rest)
			st.nodes, st.free, rest = st.nodes+t, st.free+k*t, rest-t
		}
	}
	st.taken = p.givenGPUs(a, st)
	return st
}

// gpuTake is leafTake for GPU totals: planGPUClasses's choice, counted.
func gpuTake(h []int32, gpus, maxG int) takeStats {
	var st takeStats
	rest := gpus
	for k := maxG; k >= 1; k-- {
		c := int(h[k])
		if c == 0 {
			continue
		}
		if k >= rest {
			// The tightest class from rest up with a node left.
			for j := rest; j <= k; j++ {
				left := int(h[j])
				if j == k {
					left = c
				}
				if left > 0 {
					return takeStats{nodes: st.nodes + 1, free: st.free + j}
				}
			}
		}
		t := min(c, (rest-1)/k)
		st.nodes, st.free, rest = st.nodes+t, st.free+k*t, rest-k*t
		if t < c {
			// Nodes of class k are left and now cover the rest.
			return takeStats{nodes: st.nodes + 1, free: st.free + tightest(h, rest, k, c-t)}
		}
	}
	panic("placement: a leaf held fewer GPUs than counted")
}

// tightest returns the smallest class from rest to k with a node left
// (class k has left of them).
func tightest(h []int32, rest, k, left int) int {
	for j := rest; j < k; j++ {
		if h[j] > 0 {
			return j
		}
	}
	if left > 0 {
		return k
	}
	panic("placement: no node covers the rest")
}

// givenGPUs returns the GPUs a placement of a last-phase items gives, from
// its node statistics.
func (p *Placer) givenGPUs(a int, st takeStats) int {
	pl := &p.sc.pl
	switch {
	case pl.exclusive:
		return st.free
	case pl.mode == modeGPUs:
		return a
	}
	return st.nodes * pl.perNode
}

// nodesLowerBound returns the fewest candidates of x whose usable GPUs
// reach gpus (GPU totals), whatever leaves they lie in.
func (p *Placer) nodesLowerBound(x, gpus int) int { return p.fewestNodes(p.histogram(x), gpus) }

// quickNodesLowerBound is nodesLowerBound counting, under a mask, the
// nodes the mask removed too (from the counters, with no node visited):
// no more than nodesLowerBound.
func (p *Placer) quickNodesLowerBound(x, gpus int) int {
	sc, ly := &p.sc, p.lay
	if !sc.masked || !sc.countable || x == 0 {
		return p.nodesLowerBound(x, gpus)
	}
	var h [topology.MaxGPUsPerNode + 1]int32
	p.counterHistogram(x, h[:ly.maxGPUs+1])
	return p.fewestNodes(h[:ly.maxGPUs+1], gpus)
}

// fewestNodes returns the fewest nodes of histogram h whose GPUs reach
// gpus.
func (p *Placer) fewestNodes(h []int32, gpus int) int {
	rest, n := gpus, 0
	for k := p.lay.maxGPUs; k >= 1 && rest > 0; k-- {
		t := min(int(h[k]), (rest+k-1)/k)
		n += t
		rest -= t * k
	}
	return n
}

// pickLeaf assigns the nodes and GPUs that take a last-phase items of
// leaf x, lowest node index first within a class.
func (p *Placer) pickLeaf(x, a int) {
	if p.takesWhole(x, a) {
		p.takeLeaf(x, a)
		return
	}
	cp := &p.sc.cls
	p.planClasses(x, a, cp)
	ly := p.lay
	lo, hi := int(ly.nodeFirst[x]), int(ly.nodeEnd[x])
	p.sc.tally.free += p.markPath(x, &p.sc.tally.spans)
	for k := 1; k <= ly.maxGPUs; k++ {
		n := int(cp.whole[k])
		if k == cp.partClass {
			n++
		}
		if n > 0 {
			p.pickClass(k, lo, hi, int(cp.whole[k]), n, cp.partGPUs)
		}
	}
}

// takesWhole reports whether a last-phase items of leaf x take every
// candidate in it with all its usable GPUs (as a split takes all but one
// of its leaves): GPU totals or whole nodes of leaf capacity a, or nodes
// asking for the largest node's GPUs.
func (p *Placer) takesWhole(x, a int) bool {
	pl := &p.sc.pl
	return pl.nlayers == 0 && a == p.phaseCap(p.lastPhase(), x) &&
		(pl.mode == modeGPUs || pl.exclusive || pl.perNode >= p.lay.maxGPUs)
}

// takeLeaf writes every candidate of leaf x with all its usable GPUs, in
// node order, in one pass; a is the leaf's capacity (takesWhole).
func (p *Placer) takeLeaf(x, a int) {
	sc, ly := &p.sc, p.lay
	lo, hi := int(ly.nodeFirst[x]), int(ly.nodeEnd[x])
	sc.tally.free += p.markPath(x, &sc.tally.spans)
	start := len(sc.out)
	if cap(sc.out)-start >= hi-lo {
		// Room for every node of the leaf: indexed writes, no growth
		// check per node.
		dst, i := sc.out[start:start+hi-lo], 0
		for w := lo >> 6; w <= (hi-1)>>6; w++ {
			in := bits.RangeMask(w, lo, hi)
			if c := p.candWord(w) & in; c == in {
				// Every node of the word's part of the leaf: a run.
				f, e := max(lo, w<<6), min(hi, w<<6+64)
				i += writeRun(dst[i:], sc.w.Free[f:e], f)
			} else {
				i += writeNodes(dst[i:], sc.w.Free, c, w)
			}
		}
		sc.out = sc.out[:start+i]
	} else {
		p.appendLeaf(lo, hi)
	}
	// The GPUs written, known without counting unless the request is
	// exclusive: a GPU total's items are the candidates' free GPUs; nodes
	// taken whole without exclusivity ask for maxGPUs each, so each has
	// exactly that many free.
	pl, gpus := &sc.pl, 0
	switch {
	case p.reference || pl.exclusive:
		gpus = p.countTakenGPUs(a, sc.out[start:])
	case pl.mode == modeGPUs:
		gpus = a
	default:
		gpus = (len(sc.out) - start) * ly.maxGPUs
	}
	sc.tally.gpus += gpus
	sc.tally.free += gpus
}

// writeRun writes nodes first, first+1, ... with all their free GPUs
// (free, from node first on) to dst, and returns how many.
func writeRun(dst []topology.NodeAlloc, free []uint64, first int) int {
	dst = dst[:len(free)]
	for i, f := range free {
		dst[i] = topology.NodeAlloc{Node: topology.NodeID(first + i), GPUs: f}
	}
	return len(free)
}

// writeNodes writes the nodes of word w set in c, with all their free
// GPUs, to dst, and returns how many.
func writeNodes(dst []topology.NodeAlloc, free []uint64, c uint64, w int) int {
	i := 0
	for ; c != 0; c &= c - 1 {
		node := w<<6 + mathbits.TrailingZeros64(c)
		dst[i] = topology.NodeAlloc{Node: topology.NodeID(node), GPUs: free[node]}
		i++
	}
	return i
}

// appendLeaf is takeLeaf's writing for a buffer that may have to grow.
func (p *Placer) appendLeaf(lo, hi int) {
	sc := &p.sc
	free, out := sc.w.Free, sc.out
	for w := lo >> 6; w <= (hi-1)>>6; w++ {
		for c := p.candWord(w) & bits.RangeMask(w, lo, hi); c != 0; c &= c - 1 {
			node := w<<6 + mathbits.TrailingZeros64(c)
			out = append(out, topology.NodeAlloc{Node: topology.NodeID(node), GPUs: free[node]})
		}
	}
	sc.out = out
}

// countTakenGPUs counts the GPUs of the nodes takeLeaf wrote (taken) for
// a last-phase items; the reference placer checks them against what
// takeLeaf assumes for requests that are not exclusive.
func (p *Placer) countTakenGPUs(a int, taken []topology.NodeAlloc) int {
	pl := &p.sc.pl
	gpus := 0
	for _, t := range taken {
		gpus += mathbits.OnesCount64(t.GPUs)
	}
	if !pl.exclusive && (pl.mode == modeGPUs && gpus != a || pl.mode == modeNodes && gpus != len(taken)*p.lay.maxGPUs) {
		panic("placement: a leaf taken whole gave other GPUs than takeLeaf assumes")
	}
	return gpus
}

// pickClass takes the first n nodes of class k in [lo, hi): the first
// whole of them entirely (or with the request's GPUs per node), the last
// one, when n exceeds whole, with partGPUs GPUs.
func (p *Placer) pickClass(k, lo, hi, whole, n, partGPUs int) {
	sc := &p.sc
	// GPUs a fully taken node of class k gives: all k free ones, except
	// for non-exclusive node requests of fewer GPUs per node.
	full := k
	if sc.pl.mode == modeNodes && !sc.pl.exclusive {
		full = sc.pl.perNode
	}
	i := 0
	if full == k {
		// Nodes taken with all their free GPUs: a tight loop.
		if sc.pl.exclusive {
			whole = n
		}
		lo, i = p.takeWhole(k, lo, hi, whole)
	}
	// Nodes of one class often share their free GPUs and group kind: the
	// last choice is reused.
	lastFree, lastKind, lastG, lastMask := uint64(0), int32(-1), -1, uint64(0)
	for w := lo >> 6; lo < hi && w <= (hi-1)>>6 && i < n; w++ {
		x := p.candWord(w) & p.classWord(k, w) & bits.RangeMask(w, lo, hi)
		for ; x != 0 && i < n; x &= x - 1 {
			node := w<<6 + mathbits.TrailingZeros64(x)
			g := full
			if i >= whole && !sc.pl.exclusive {
				g = partGPUs
			}
			m := sc.s.Free(topology.NodeID(node))
			if g < k {
				if kind := p.lay.groupKind[node]; m == lastFree && kind == lastKind && g == lastG {
					m = lastMask
				} else {
					lastFree, lastKind, lastG = m, kind, g
					m = p.pickGPUs(node, g)
					lastMask = m
				}
			}
			sc.out = append(sc.out, topology.NodeAlloc{Node: topology.NodeID(node), GPUs: m})
			sc.tally.gpus += g
			i++
		}
	}
	if i < n {
		panic("placement: a class held fewer nodes than counted")
	}
	sc.tally.free += n * k // the nodes' free GPUs: their class
}

// takeWhole appends the first cnt nodes of class k in [lo, hi) with all
// their free GPUs, and returns the node after the last one taken and the
// nodes taken (fewer than cnt only if the class holds fewer).
func (p *Placer) takeWhole(k, lo, hi, cnt int) (next, taken int) {
	sc := &p.sc
	if cnt <= 0 {
		return lo, 0
	}
	start := len(sc.out)
	if cap(sc.out)-start < cnt {
		return p.appendWhole(k, lo, hi, cnt)
	}
	// Room for cnt nodes: indexed writes, no growth check per node.
	free, dst := sc.w.Free, sc.out[start:start+cnt]
	next = hi
	for w := lo >> 6; w <= (hi-1)>>6 && taken < cnt; w++ {
		x := p.candWord(w) & p.classWord(k, w) & bits.RangeMask(w, lo, hi)
		for ; x != 0 && taken < len(dst); x &= x - 1 {
			node := w<<6 + mathbits.TrailingZeros64(x)
			dst[taken] = topology.NodeAlloc{Node: topology.NodeID(node), GPUs: free[node]}
			taken++
			next = node + 1
		}
	}
	if taken < cnt {
		next = hi
	}
	sc.out = sc.out[:start+taken]
	sc.tally.gpus += taken * k
	return next, taken
}

// appendWhole is takeWhole for a buffer that may have to grow.
func (p *Placer) appendWhole(k, lo, hi, cnt int) (next, taken int) {
	sc := &p.sc
	free := sc.w.Free
	out := sc.out
	for w := lo >> 6; w <= (hi-1)>>6; w++ {
		x := p.candWord(w) & p.classWord(k, w) & bits.RangeMask(w, lo, hi)
		for ; x != 0; x &= x - 1 {
			node := w<<6 + mathbits.TrailingZeros64(x)
			out = append(out, topology.NodeAlloc{Node: topology.NodeID(node), GPUs: free[node]})
			if taken++; taken == cnt {
				sc.out = out
				sc.tally.gpus += taken * k
				return node + 1, taken
			}
		}
	}
	sc.out = out
	sc.tally.gpus += taken * k
	return hi, taken
}

// candWord returns word w of the candidate set.
func (p *Placer) candWord(w int) uint64 {
	sc := &p.sc
	switch {
	case sc.masked:
		return sc.cand[w]
	case sc.pl.exclusive:
		return sc.w.Idle[w] & p.lay.sizeWords(sc.minFree)[w]
	}
	return sc.w.AvailWords(sc.minFree)[w]
}

// classWord returns word w of the nodes with exactly k usable GPUs.
func (p *Placer) classWord(k, w int) uint64 {
	ly, sc := p.lay, &p.sc
	if sc.pl.exclusive {
		x := ly.sizeWords(k)[w]
		if k < ly.maxGPUs {
			x &^= ly.sizeWords(k + 1)[w]
		}
		return x
	}
	x := sc.w.AvailWords(k)[w]
	if k < ly.maxGPUs {
		x &^= sc.w.AvailWords(k + 1)[w]
	}
	return x
}

// pickGPUs chooses g free GPUs of node n: all of them when g covers its
// free GPUs, else from the smallest intra-node group that holds g (fewest
// free GPUs on ties), else the lowest free GPUs.
func (p *Placer) pickGPUs(n, g int) uint64 {
	free := p.sc.s.Free(topology.NodeID(n))
	if bits.PopCount(free) <= g {
		return free
	}
	// The choice depends only on the node's groups, its free GPUs and g:
	// remembered in a small table, as many nodes share all three.
	kind := p.lay.groupKind[n]
	e := &p.sc.gpuChoice[(free*0x9e3779b97f4a7c15^uint64(kind)<<7^uint64(g))>>(64-gpuChoiceBits)]
	if e.ok && e.free == free && e.kind == kind && e.g == uint8(g) {
		return e.mask
	}
	m := p.chooseGPUs(n, free, g)
	*e = gpuChoice{ok: true, free: free, kind: kind, g: uint8(g), mask: m}
	return m
}

// gpuChoiceBits sizes the table of remembered GPU choices (2^bits entries).
const gpuChoiceBits = 8

// gpuChoice is one remembered GPU choice: for nodes of group kind kind
// with free GPUs free, g of them are mask.
type gpuChoice struct {
	ok   bool
	g    uint8
	kind int32
	free uint64
	mask uint64
}

// chooseGPUs is pickGPUs's choice for node n with free GPUs free.
func (p *Placer) chooseGPUs(n int, free uint64, g int) uint64 {
	best, bestSize, bestFree := uint64(0), 65, 65
	for _, grp := range p.lay.c.NodeGroups(topology.NodeID(n)) {
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
