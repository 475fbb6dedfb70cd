package placement

import (
	"slices"

	"github.com/phalanx-sched/phalanx/topology"
)

// leafAmount is one leaf of a plan and the items it takes (items of the
// last phase: nodes, GPUs, or segments of a layer at the lowest level).
type leafAmount struct {
	leaf   int32 // flat index
	amount int32
}

// leafRef is a leaf (or a unit) with its capacity and free GPUs, for
// sorting.
type leafRef struct {
	cap  int32
	free int32
	leaf int32 // flat index
}

// kid is one child of a domain being split, with its leaves (largest
// first) in coverScratch.leaves[lo:hi].
type kid struct {
	child  int32
	cap    int32
	lo, hi int32
	chosen bool
}

// coverScratch holds the leaf-phase buffers.
type coverScratch struct {
	caps   []int32 // leaf capacities being sorted
	count  []int32 // histogram for sortDescending
	sel    []leafAmount
	leaves []leafRef
	merged []leafRef
	kids   []kid
	// takenAt[x] == mark marks leaf x as taken whole by the current split.
	takenAt []uint32
	mark    uint32
	// kept is the plan scoring computed for domain keptFor (-1: none).
	kept    []leafAmount
	keptFor int
	// leafCover's answers: for domain x, memoLeaves[x] leaves hold
	// memoNeed[x] items, valid when memoAt[x] == memoEpoch.
	memoAt     []uint32
	memoNeed   []int32
	memoLeaves []int32
	memoEpoch  uint32
}

func (cs *coverScratch) init(ly *layout) {
	nl := ly.count(ly.leaf)
	cs.caps = make([]int32, 0, nl)
	cs.count = make([]int32, 0, 4*ly.numDomains()+2)
	cs.sel = make([]leafAmount, 0, nl)
	cs.leaves = make([]leafRef, 0, nl)
	cs.merged = make([]leafRef, 0, nl)
	cs.kids = make([]kid, 0, ly.numDomains())
	cs.takenAt = make([]uint32, ly.numDomains())
	cs.kept = make([]leafAmount, 0, nl)
	nd := ly.numDomains()
	cs.memoAt = make([]uint32, nd)
	cs.memoNeed = make([]int32, nd)
	cs.memoLeaves = make([]int32, nd)
	cs.memoEpoch = 1
}

// lastPhase returns the index of the innermost phase, whose units are the
// lowest-level domains.
func (p *Placer) lastPhase() int { return p.sc.pl.nphases - 1 }

// leafCaps returns the last-phase capacities of the leaves under x, in
// leaf order (a view of the capacity arrays: do not modify).
func (p *Placer) leafCaps(x int) []int32 {
	ly := p.lay
	lf, le := ly.leafID(int(ly.leafFirst[x])), ly.leafID(int(ly.leafEnd[x]))
	if s := p.sc.pl.phases[p.lastPhase()].seg; s >= 0 {
		return p.sc.capSeg[s][lf:le]
	}
	return p.sc.capBase[lf:le]
}

// leafCover returns the fewest leaves under x that hold a last-phase
// items (exact: any leaves may be combined at the last phase). A decision
// asks it of one domain several times (a bound, a score, a fill): the
// last answer per domain is kept until the capacities change.
func (p *Placer) leafCover(x, a int) int {
	cs := &p.sc.cover
	if cs.memoAt[x] == cs.memoEpoch && cs.memoNeed[x] == int32(a) {
		return int(cs.memoLeaves[x])
	}
	cs.caps = append(cs.caps[:0], p.leafCaps(x)...)
	m := coverCount(cs.caps, a, &cs.count)
	cs.memoAt[x], cs.memoNeed[x], cs.memoLeaves[x] = cs.memoEpoch, int32(a), int32(m)
	return m
}

// capsChanged forgets leafCover's answers: the capacities were (or are
// about to be) recomputed.
func (cs *coverScratch) capsChanged() {
	if cs.memoEpoch++; cs.memoEpoch == 0 {
		clear(cs.memoAt)
		cs.memoEpoch = 1
	}
}

// fillLeaves places a last-phase items inside x: the planned leaves, then
// nodes in each.
func (p *Placer) fillLeaves(x, a int) {
	if p.lay.levelOf(x) == p.lay.leaf {
		p.pickLeaf(x, a)
		return
	}
	cs := &p.sc.cover
	plan := cs.kept
	if cs.keptFor != x {
		p.planLeaves(x, a)
		plan = cs.sel
	}
	for _, la := range plan {
		p.pickLeaf(int(la.leaf), int(la.amount))
	}
}

// planLeaves fills cover.sel with the leaves under x (above the lowest
// level) that take a items: the fewest leaves, and for GPU totals the
// fewest nodes the search proves within its budget. It returns the
// leaves and, for GPU totals, the nodes of the plan.
func (p *Placer) planLeaves(x, a int) (leaves, nodes int) {
	cs := &p.sc.cover
	m := p.leafCover(x, a)
	cs.sel = cs.sel[:0]
	p.descend(x, a, m)
	if p.sc.pl.mode != modeGPUs {
		return m, 0
	}
	if len(cs.sel) > 1 {
		nodes = p.spreadGPUs(a)
	} else {
		nodes = p.selNodes()
	}
	if lb := p.planNodesBound(x, a); nodes > lb {
		if proven, ok := p.settleGPUNodes(x, a, m, lb, nodes); ok {
			nodes = proven
		} else if better, ok := p.searchGPULeaves(x, a, m, nodes); ok {
			nodes = better
		}
	}
	return m, nodes
}

// planNodesBound returns the nodes lower bound a plan of gpus GPUs under x
// is checked against: the exact one, unless a mask makes it cost a
// histogram of many leaves, then the one that counts the removed nodes
// too.
func (p *Placer) planNodesBound(x, gpus int) int {
	ly := p.lay
	if p.sc.masked && ly.leafEnd[x]-ly.leafFirst[x] > 64 {
		return p.quickNodesLowerBound(x, gpus)
	}
	return p.nodesLowerBound(x, gpus)
}

// selNodes returns the nodes the plan in cover.sel takes.
func (p *Placer) selNodes() int {
	n := 0
	for _, la := range p.sc.cover.sel {
		n += p.leafTake(int(la.leaf), int(la.amount)).nodes
	}
	return n
}

// spreadGPUs re-divides a GPUs among the leaves of cover.sel as their
// nodes, pooled, would give them fullest first (the tightest node taking
// the last piece): the fewest nodes those leaves allow, which it returns.
func (p *Placer) spreadGPUs(a int) int {
	sc := &p.sc
	maxG := p.lay.maxGPUs
	pooled := sc.pooled[:maxG+1]
	clear(pooled)
	counters := p.countersAreHistograms()
	if counters {
		p.poolCounterRows(pooled)
	} else {
		for _, la := range sc.cover.sel {
			h := p.histogram(int(la.leaf))
			h = h[:len(pooled)] // bounds checked once
			for k, n := range h {
				pooled[k] += n
			}
		}
	}
	cp := &sc.spread
	cp.reset(maxG)
	p.planGPUClasses(pooled, a, cp)
	want, nodes := sc.want[:maxG+1], 0
	copy(want, cp.whole[:maxG+1])
	for _, n := range want {
		nodes += int(n)
	}
	if p.divideWant(pooled, want, cp, counters) {
		nodes++
	}
	return nodes
}

// countersAreHistograms reports whether a leaf's histogram is the
// difference of its state counters (histogram's counter path): no mask,
// not exclusive, and a minimum some node can meet.
func (p *Placer) countersAreHistograms() bool {
	sc := &p.sc
	return !sc.masked && !sc.pl.exclusive && sc.minFree <= p.lay.maxGPUs && p.lay.leaf != rootLevel
}

// poolCounterRows writes to pooled the histogram of the leaves of
// cover.sel taken together, from their state counters (candidates with
// at least k free GPUs, for k from minFree up), without their own
// histograms.
func (p *Placer) poolCounterRows(pooled []int32) {
	sc := &p.sc
	g, lo := p.lay.maxGPUs, sc.minFree
	for _, la := range sc.cover.sel {
		row := p.counterRow(int(la.leaf))[lo : g+1]
		dst := pooled[lo : g+1]
		dst = dst[:len(row)] // bounds checked once
		for k, n := range row {
			dst[k] += n
		}
	}
	for k := lo; k < g; k++ { // at least k, less at least k+1
		pooled[k] -= pooled[k+1]
	}
}

// divideWant sets the amounts of cover.sel's leaves: in order, each takes
// of every class the nodes it holds that want still asks for; the first
// leaf with a node of cp's partial class left over takes the partial
// piece too. It reports whether there is a partial piece. counters says
// the leaves' classes are read from the state counters (as
// countersAreHistograms), not from their histograms.
func (p *Placer) divideWant(pooled, want []int32, cp *classPlan, counters bool) bool {
	if counters {
		return p.divideWantCounters(pooled, want, cp)
	}
	sel, maxG := p.sc.cover.sel, p.lay.maxGPUs
	// The classes the pooled leaves hold, largest first: no leaf holds a
	// node of another, which would give it nothing.
	var classes [topology.MaxGPUsPerNode]int8
	nc := 0
	for k := maxG; k >= 1; k-- {
		if pooled[k] > 0 {
			classes[nc] = int8(k)
			nc++
		}
	}
	part := -1 // the leaf that takes the partial node
	for i := range sel {
		h := p.histogram(int(sel[i].leaf))
		amount := 0
		for _, k8 := range classes[:nc] {
			k := int(k8)
			t := min(h[k], want[k])
			amount += int(t) * k
			want[k] -= t
			if k == cp.partClass && part < 0 && h[k] > t {
				part = i
			}
		}
		sel[i].amount = int32(amount)
	}
	return p.givePartial(part, cp)
}

// divideWantCounters is divideWant on the leaves' state counters (row[k]:
// the leaf's candidates with at least k free GPUs). The pooled plan takes
// whole every class above stop, the highest class it does not (that is
// how planGPUClasses goes, fullest first), so each leaf gives all its
// nodes of those classes: (stop+1)*row[stop+1] plus row[k] for every k
// above stop+1, their free GPUs. Of class stop it gives what want still
// asks for; below stop only the partial node, of class partClass (at most
// stop: a class above has no node left).
func (p *Placer) divideWantCounters(pooled, want []int32, cp *classPlan) bool {
	sel, g := p.sc.cover.sel, p.lay.maxGPUs
	stop := 0
	for k := g; k >= 1; k-- {
		if pooled[k] > want[k] {
			stop = k
			break
		}
	}
	part := -1 // the leaf that takes the partial node
	for i := range sel {
		row := p.counterRow(int(sel[i].leaf))
		amount := 0
		if stop < g {
			amount = (stop + 1) * int(row[stop+1])
			for _, n := range row[stop+2 : g+1] {
				amount += int(n)
			}
		}
		if stop > 0 {
			h := classCount(row, stop, g)
			t := min(h, want[stop])
			amount += int(t) * stop
			want[stop] -= t
			if stop == cp.partClass && part < 0 && h > t {
				part = i
			}
		}
		if j := cp.partClass; j > 0 && j < stop && part < 0 && classCount(row, j, g) > 0 {
			part = i
		}
		sel[i].amount = int32(amount)
	}
	return p.givePartial(part, cp)
}

// classCount returns the candidates of class k (exactly k usable GPUs)
// from a counter row, for nodes of at most g GPUs.
func classCount(row []int32, k, g int) int32 {
	if k == g {
		return row[g]
	}
	return row[k] - row[k+1]
}

// givePartial adds cp's partial piece, if any, to leaf part of cover.sel
// and reports whether there is one.
func (p *Placer) givePartial(part int, cp *classPlan) bool {
	if cp.partClass == 0 {
		return false
	}
	p.sc.cover.sel[part].amount += int32(cp.partGPUs)
	return true
}

// descend keeps a items (needing m leaves) inside one child of y while a
// child holds them on m leaves, the fullest such child (fewest free GPUs,
// then least capacity) first; otherwise
// it splits them over several children.
func (p *Placer) descend(y, a, m int) {
	ly := p.lay
	for ly.levelOf(y) != ly.leaf {
		cf, ce := ly.children(y)
		best, bestFree, bestCap := -1, 0, 0
		for z := cf; z < ce; z++ {
			c := int(p.phaseCap(p.lastPhase(), z))
			if c < a {
				continue
			}
			f := p.domainFree(z)
			if best >= 0 && (f > bestFree || f == bestFree && c >= bestCap) {
				continue
			}
			if p.leafCover(z, a) == m {
				best, bestFree, bestCap = z, f, c
			}
		}
		if best < 0 {
			p.split(y, a, m)
			return
		}
		y = best
	}
	p.sc.cover.sel = append(p.sc.cover.sel, leafAmount{leaf: int32(y), amount: int32(a)})
}

// split covers a items with m leaves from several children of y: children
// are added, the one raising the sum of the m largest chosen leaves most
// first, until that sum covers a; the m-1 largest chosen leaves are taken
// whole and the tightest leaf that covers the rest takes it (under a chosen
// child when one has such a leaf).
func (p *Placer) split(y, a, m int) {
	cs := &p.sc.cover
	if p.lay.levelOf(y)+1 == p.lay.leaf {
		p.splitLeaves(y, a, m)
		return
	}
	p.gatherKids(y)
	chosen := p.chooseKids(a, m)
	rest := a
	for _, l := range chosen[:m-1] {
		cs.sel = append(cs.sel, leafAmount{leaf: l.leaf, amount: l.cap})
		rest -= int(l.cap)
	}
	if rest <= 0 {
		panic("placement: split's leaf count was not minimal")
	}
	if cs.mark++; cs.mark == 0 {
		clear(cs.takenAt)
		cs.mark = 1
	}
	for _, l := range chosen[:m-1] {
		cs.takenAt[l.leaf] = cs.mark
	}
	last := p.lastPiece(rest)
	cs.sel = append(cs.sel, leafAmount{leaf: int32(last), amount: int32(rest)})
}

// splitLeaves is split for a domain whose children are leaves: the m-1
// largest leaves whole, and the rest on the remaining leaf that covers it
// with the fewest free GPUs (then the smallest, then the lowest index).
func (p *Placer) splitLeaves(y, a, m int) {
	ly, cs := p.lay, &p.sc.cover
	last := p.lastPhase()
	leaves := cs.leaves[:0]
	cf, ce := ly.children(y)
	free, first := p.leavesFree(), ly.leafID(0)
	for l := cf; l < ce; l++ {
		if c := int32(p.phaseCap(last, l)); c > 0 {
			leaves = append(leaves, leafRef{cap: c, free: free[l-first], leaf: int32(l)})
		}
	}
	p.sortLeaves(leaves)
	cs.leaves = leaves
	rest := a
	for _, l := range leaves[:m-1] {
		cs.sel = append(cs.sel, leafAmount{leaf: l.leaf, amount: l.cap})
		rest -= int(l.cap)
	}
	best := -1
	for i, l := range leaves[m-1:] {
		if int(l.cap) < rest {
			break // sorted largest first: none further covers it
		}
		if b := leaves[m-1+max(best, 0)]; best < 0 || l.free < b.free || l.free == b.free && l.cap < b.cap {
			best = i
		}
	}
	if best < 0 || rest <= 0 {
		panic("placement: split's leaf count was not minimal")
	}
	cs.sel = append(cs.sel, leafAmount{leaf: leaves[m-1+best].leaf, amount: int32(rest)})
}

// gatherKids lists y's children with capacity, each with its leaves
// sorted largest first (ties: fuller leaf, then lower index).
func (p *Placer) gatherKids(y int) {
	ly, cs := p.lay, &p.sc.cover
	cs.kids, cs.leaves = cs.kids[:0], cs.leaves[:0]
	cf, ce := ly.children(y)
	last := p.lastPhase()
	free := p.leavesFree()
	// The leaves' capacities under y, by leaf number from y's first.
	caps, base, first := p.leafCaps(y), int(ly.leafFirst[y]), ly.leafID(0)
	for z := cf; z < ce; z++ {
		c := int32(p.phaseCap(last, z))
		if c == 0 {
			continue
		}
		lo := len(cs.leaves)
		d, de := int(ly.leafFirst[z]), int(ly.leafEnd[z])
		if de-d > 32 {
			leaves := cs.leaves
			for ; d < de; d++ {
				if lc := caps[d-base]; lc > 0 {
					leaves = append(leaves, leafRef{cap: lc, free: free[d], leaf: int32(first + d)})
				}
			}
			cs.leaves = leaves
			p.sortLeaves(cs.leaves[lo:])
		} else {
			cs.leaves = insertLeaves(cs.leaves, caps[d-base:de-base], free[d:de], int32(first+d))
		}
		cs.kids = append(cs.kids, kid{child: int32(z), cap: c, lo: int32(lo), hi: int32(len(cs.leaves))})
	}
}

// insertLeaves appends the leaves with capacity of one child to v, in
// sortLeaves's order, each inserted in place as it is read (few leaves):
// caps and free are the child's leaves' capacities and free GPUs, the
// first of them leaf first.
func insertLeaves(v []leafRef, caps, free []int32, first int32) []leafRef {
	lo := len(v)
	free = free[:len(caps)] // bounds checked once
	for i, lc := range caps {
		if lc <= 0 {
			continue
		}
		x := leafRef{cap: lc, free: free[i], leaf: first + int32(i)}
		v = append(v, x)
		j := len(v) - 1
		for ; j > lo && leafBefore(x, v[j-1]); j-- {
			v[j] = v[j-1]
		}
		v[j] = x
	}
	return v
}

// sortLeaves orders leaves largest first, then fuller, then by index.
func (p *Placer) sortLeaves(v []leafRef) {
	if len(v) > 32 {
		slices.SortFunc(v, func(a, b leafRef) int {
			if leafBefore(a, b) {
				return -1
			}
			if leafBefore(b, a) {
				return 1
			}
			return 0
		})
		return
	}
	for i := 1; i < len(v); i++ {
		x := v[i]
		j := i
		for ; j > 0 && leafBefore(x, v[j-1]); j-- {
			v[j] = v[j-1]
		}
		v[j] = x
	}
}

// leafBefore reports whether leaf a sorts before b: larger, then fewer
// free GPUs, then lower index.
func leafBefore(a, b leafRef) bool {
	if a.cap != b.cap {
		return a.cap > b.cap
	}
	if a.free != b.free {
		return a.free < b.free
	}
	return a.leaf < b.leaf
}

// chooseKids adds children until the m largest leaves of the chosen ones
// cover a, and returns those m leaves, largest first.
func (p *Placer) chooseKids(a, m int) []leafRef {
	cs := &p.sc.cover
	merged := cs.merged[:0]
	top := 0 // the sum of the m largest merged leaves
	for {
		best, bestSum := -1, -1
		for k := range cs.kids {
			kd := &cs.kids[k]
			if kd.chosen {
				continue
			}
			sum := top + int(kd.cap) // every leaf fits in the places left
			if n := int(kd.hi - kd.lo); m-min(m, len(merged)) < n {
				sum = topMergeSum(merged, top, cs.leaves[kd.lo:kd.hi], m)
			}
			if sum > bestSum || sum == bestSum && kd.cap > cs.kids[best].cap {
				best, bestSum = k, sum
			}
		}
		if best < 0 {
			panic("placement: split ran out of children before covering its need")
		}
		kd := &cs.kids[best]
		kd.chosen = true
		merged = p.mergeLeaves(merged, cs.leaves[kd.lo:kd.hi], m)
		top = bestSum
		if bestSum >= a {
			return merged
		}
	}
}

// topMergeSum returns the sum of the m largest capacities of two lists
// sorted largest first, given top, the sum of a's m largest: b's leaves
// replace a's smallest kept ones while they are larger (or fill the places
// a leaves empty).
func topMergeSum(a []leafRef, top int, b []leafRef, m int) int {
	sum := top
	kept := min(m, len(a)) // a's leaves in the top: a[:kept]
	empty := m - kept      // places a leaves free
	for _, x := range b {
		switch {
		case empty > 0:
			sum += int(x.cap)
			empty--
		case kept > 0 && x.cap > a[kept-1].cap:
			sum += int(x.cap - a[kept-1].cap)
			kept--
		default:
			return sum
		}
	}
	return sum
}

// mergeLeaves merges b into a (both largest first), a's leaves first on
// ties, keeping the m largest. It merges in place, from the back, in a's
// buffer (the scratch's merge buffer, with room for every leaf): a's
// leaves larger than all of b's stay where they are.
func (p *Placer) mergeLeaves(a, b []leafRef, m int) []leafRef {
	n := min(m, len(a)+len(b))
	i, j := len(a)-1, len(b)-1
	for drop := len(a) + len(b) - n; drop > 0; drop-- {
		// The last in merged order goes: b's on ties.
		if j >= 0 && (i < 0 || b[j].cap <= a[i].cap) {
			j--
		} else {
			i--
		}
	}
	out := a[:n]
	for k := n - 1; j >= 0; k-- { // out[:i+1] is a[:i+1], in place
		if i >= 0 && a[i].cap < b[j].cap {
			out[k] = a[i]
			i--
		} else {
			out[k] = b[j]
			j--
		}
	}
	p.sc.cover.merged = out
	return out
}

// lastPiece returns the leaf that takes the rest: among the leaves not
// taken that cover it, the one adding the least free GPUs to the domains
// used (its own, plus its child of the split domain when no leaf of that
// child is used yet), then the smallest, then the lowest index.
func (p *Placer) lastPiece(rest int) int {
	cs := &p.sc.cover
	best, bestCost, bestCap := -1, 0, int32(0)
	for _, kd := range cs.kids {
		extra := 0
		if !kd.chosen && p.lay.levelOf(int(kd.child)) != p.lay.leaf {
			extra = p.domainFree(int(kd.child))
		}
		for _, l := range cs.leaves[kd.lo:kd.hi] {
			if int(l.cap) < rest || cs.takenAt[l.leaf] == cs.mark {
				continue
			}
			cost := extra + int(l.free)
			if best < 0 || cost < bestCost || cost == bestCost && l.cap < bestCap {
				best, bestCost, bestCap = int(l.leaf), cost, l.cap
			}
		}
	}
	if best < 0 {
		panic("placement: split has no leaf for the last piece")
	}
	return best
}
