package placement

import (
	"slices"

	"github.com/phalanx-sched/phalanx/topology"
)

// minNodes returns the nodes of the plan that places need items of phase
// ph inside x (GPU totals): the leaves' plans, each with the fewest nodes
// the search proves. Under a domain limit above the lowest level the
// plan's units are chosen for their leaves alone, so the nodes are proven
// only when they meet the lower bound; otherwise the decision is marked
// approximate.
func (p *Placer) minNodes(x, ph, need int) int {
	pl := &p.sc.pl
	switch {
	case ph == p.lastPhase() && p.lay.levelOf(x) == p.lay.leaf:
		return p.leafTake(x, need).nodes
	case ph == p.lastPhase():
		_, nodes := p.planLeaves(x, need)
		return nodes
	case p.lay.levelOf(x) == pl.phases[ph].unit:
		return p.minNodes(x, ph+1, need*pl.ratio(ph))
	}
	nodes := 0
	for _, ua := range p.planUnits(x, ph, need) {
		nodes += p.minNodes(int(ua.unit), ph+1, int(ua.amount)*pl.ratio(ph))
	}
	if nodes > p.planNodesBound(x, need) { // GPU totals: the items are GPUs
		// The units were chosen for their leaves and their amounts as
		// their leaves hold them: fewer nodes may exist, unproven.
		p.sc.approximate = true
	}
	return nodes
}

// searchGPULeaves looks for a plan of a GPUs under x on at most m leaves
// and fewer than ub nodes: a knapsack over the leaves, each offering the
// GPUs of its t fullest candidates. When it finds one it replaces
// cover.sel and returns its nodes. It reports false when it found none
// (or ran out of budget, which it marks as approximate).
func (p *Placer) searchGPULeaves(x, a, m, ub int) (int, bool) {
	ss := &p.sc.search
	mark := ss.top
	nodes, found, ok := p.runGPUSearch(x, a, m, ub)
	ss.top, ss.npicks = mark, 0
	if !ok {
		p.sc.approximate = true
	}
	return nodes, found
}

// settleCellsPerLeaf is the search budget settleGPUNodes takes per leaf
// of the domain it settles: it runs on domains of at most budget/128
// leaves (8 with the default budget). Its cost grows with the leaves (an
// excess row each, a few passes over them): on the root of a
// 2,000-GPU cluster (16 leaves) it added about 1 µs to the slowest
// decisions of BenchmarkPlaceRandom, past the 2 µs goal, where domains
// of up to 8 leaves left its percentiles unchanged.
const settleCellsPerLeaf = 128

// settleGPUNodes tries to settle the fewest nodes of a GPUs under x on m
// leaves without the search, given lb, a lower bound, and ub, the nodes of
// the greedy plan in cover.sel. It rests on an identity: the t fullest
// candidates of a set of leaves S hold
//
//	min over j = 0..maxGPUs of t*j + E(S, j)
//
// GPUs, where E(S, j), the excess over j, sums max(0, g-j) over S's
// candidates of g usable GPUs (each of the t nodes holds j plus at most
// its excess; the minimum is met at the class of the t-th fullest). So t
// nodes of m leaves S hold a GPUs exactly when E(S, j) >= a - t*j for
// every j, and no m leaves do on t nodes while, for some j, the m largest
// E(leaf, j) sum to less than a - t*j.
//
// From t = lb it tries a candidate: the m leaves of largest excess over a
// class (at first the class of x's t-th fullest candidate), those under
// the children of x the greedy plan used first (fewer or fuller higher
// domains strand less). When the candidate holds a on t nodes, that is
// the plan. Otherwise only the classes where it falls short can rule t
// out (elsewhere its own sums meet the need); their m largest excesses
// raise t to the least they allow, and the candidate of the class that
// then exceeds its need the least is tried on it. It stops when t reaches
// ub (the greedy plan is the fewest) or is not raised (undecided).
//
// It returns the fewest nodes and true when the greedy plan stands or a
// plan was found (cover.sel becomes it); false, with cover.sel unchanged,
// when undecided (the search decides).
func (p *Placer) settleGPUNodes(x, a, m, lb, ub int) (int, bool) {
	ly := p.lay
	if int(ly.leafEnd[x]-ly.leafFirst[x]) > p.settleLeaves {
		return 0, false // beyond the bound the search budget sets
	}
	j := nthClass(p.histogram(x), lb)
	if j == 0 {
		return 0, false
	}
	kids := p.selKids(x)
	all := p.excessRefs(x, kids)
	if len(kids) == int(ly.childEnd[x]-ly.childFirst[x]) {
		kids = kids[:0] // every child: no preference
	}
	var top [topology.MaxGPUsPerNode + 1]int // -1: not computed
	for i := range top[:ly.maxGPUs+1] {
		top[i] = -1
	}
	for t := lb; ; {
		best, ok := p.excessOn(all, kids, m, t, a, j)
		if ok {
			return p.excessPlan(best, a, t), true
		}
		next := t
		for i := 1; i <= ly.maxGPUs && a-t*i > 0; i++ {
			if top[i] < 0 && p.sumExcess(best, i) < a-t*i {
				top[i] = p.topExcess(all, m, i)
			}
			if top[i] >= 0 {
				next = max(next, (a-top[i]+i-1)/i)
			}
		}
		switch {
		case next >= ub:
			return ub, true
		case next == t:
			return 0, false
		}
		t, j = next, 0
		for i := 1; i <= ly.maxGPUs && a-t*i > 0; i++ {
			if top[i] >= 0 && (j == 0 || top[i]-(a-t*i) < top[j]-(a-t*j)) {
				j = i
			}
		}
		if j == 0 {
			return 0, false
		}
	}
}

// sumExcess returns the excess over class j of the leaves of s.
func (p *Placer) sumExcess(s []excessRef, j int) int {
	sum := 0
	for _, r := range s {
		sum += int(p.sc.search.excess[int(r.at)+j])
	}
	return sum
}

// excessOf writes leaf l's excess over every class j to e[j]: E(j) is
// E(j+1) plus the candidates fuller than j, read from the state's
// counters when no mask or exclusive request changes them.
func (p *Placer) excessOf(l int, e []int32) {
	sc, g := &p.sc, p.lay.maxGPUs
	e[g] = 0
	sum := int32(0)
	if !sc.masked && !sc.pl.exclusive && sc.minFree <= g {
		row := p.counterRow(l)
		for j := g - 1; j >= 0; j-- {
			sum += row[max(j+1, sc.minFree)] // candidates with more than j
			e[j] = sum
		}
		return
	}
	h, above := p.histogram(l), int32(0)
	for j := g - 1; j >= 0; j-- {
		above += h[j+1]
		sum += above
		e[j] = sum
	}
}

// excessOn returns the m leaves of largest excess over j (under the
// children the greedy plan used first, when kids names some, then under
// any) when their t fullest candidates hold a GPUs.
func (p *Placer) excessOn(all []excessRef, kids []int32, m, t, a, j int) ([]excessRef, bool) {
	if len(kids) > 0 {
		if best := p.bestExcess(all, true, m, j); p.holdsOn(best, m, t, a) {
			return best, true
		}
	}
	best := p.bestExcess(all, false, m, j)
	return best, p.holdsOn(best, m, t, a)
}

// nthClass returns the class (usable GPUs) of the t-th fullest candidate
// of histogram h, 0 when it has fewer than t.
func nthClass(h []int32, t int) int {
	for k := len(h) - 1; k >= 1; k-- {
		if t -= int(h[k]); t <= 0 {
			return k
		}
	}
	return 0
}

// excessPlan makes the leaves of best cover.sel's plan for a GPUs on t
// nodes, and returns t.
func (p *Placer) excessPlan(best []excessRef, a, t int) int {
	cs := &p.sc.cover
	cs.sel = cs.sel[:0]
	for _, r := range best {
		cs.sel = append(cs.sel, leafAmount{leaf: r.leaf})
	}
	if n := p.spreadGPUs(a); n != t {
		panic("placement: a plan proven on t nodes spreads over another number")
	}
	return t
}

// excessRef is a leaf for settleGPUNodes: its excess over every class j
// at search.excess[at+j], and its free GPUs.
type excessRef struct {
	leaf, free, at int32
	inKids         bool // under a child of x that the greedy plan used
}

// excessRefs lists the leaves with capacity under x with their excesses,
// marking those under the children of x in kids.
func (p *Placer) excessRefs(x int, kids []int32) []excessRef {
	ly, ss := p.lay, &p.sc.search
	refs, ex := ss.refsEx[:0], ss.excess[:0]
	free, last := p.leavesFree(), p.lastPhase()
	g := ly.maxGPUs
	cf, ce := ly.children(x)
	for z := cf; z < ce; z++ {
		if p.phaseCap(last, z) == 0 {
			continue
		}
		_, in := slices.BinarySearch(kids, int32(z))
		for d := int(ly.leafFirst[z]); d < int(ly.leafEnd[z]); d++ {
			l := ly.leafID(d)
			if p.phaseCap(last, l) == 0 {
				continue
			}
			refs = append(refs, excessRef{leaf: int32(l), free: int32(freeOf(free, d)), at: int32(len(ex)), inKids: in})
			n := len(ex)
			ex = ex[:n+g+1]
			p.excessOf(l, ex[n:n+g+1])
		}
	}
	ss.refsEx, ss.excess = refs, ex
	return refs
}

// bestExcess returns the m leaves of all (only those marked inKids, when
// kidsOnly) of largest excess over j; ties go to the larger excess over
// j-1 (more candidates of j GPUs or more), then to fewer free GPUs (a
// fuller leaf strands less), then to the lower index.
func (p *Placer) bestExcess(all []excessRef, kidsOnly bool, m, j int) []excessRef {
	ss := &p.sc.search
	ex := ss.excess
	keys := ss.keys[:0]
	for i, r := range all {
		if kidsOnly && !r.inKids {
			continue
		}
		hi := uint64(ex[int(r.at)+j]) << 32
		if j > 0 {
			hi |= uint64(ex[int(r.at)+j-1])
		}
		k := excessKey{hi: hi, lo: uint64(r.free)<<32 | uint64(r.leaf), ref: int32(i)}
		if len(keys) == m && !k.before(keys[m-1]) {
			continue
		}
		if len(keys) < m {
			keys = append(keys, k)
		}
		n := len(keys) - 1
		for ; n > 0 && k.before(keys[n-1]); n-- {
			keys[n] = keys[n-1]
		}
		keys[n] = k
	}
	best := ss.best[:0]
	for _, k := range keys {
		best = append(best, all[k.ref])
	}
	ss.keys, ss.best = keys, best
	return best
}

// excessKey is a leaf's rank in bestExcess: hi (larger first), then lo
// (smaller first).
type excessKey struct {
	hi, lo uint64
	ref    int32
}

func (a excessKey) before(b excessKey) bool {
	return a.hi > b.hi || a.hi == b.hi && a.lo < b.lo
}

// holdsOn reports whether the t fullest candidates of the m leaves in s
// hold a GPUs: E(s, j) >= a - t*j for every class j.
func (p *Placer) holdsOn(s []excessRef, m, t, a int) bool {
	if len(s) < m {
		return false
	}
	for j := 0; j <= p.lay.maxGPUs && a-t*j > 0; j++ {
		if p.sumExcess(s, j) < a-t*j {
			return false
		}
	}
	return true
}

// topExcess returns the sum of the m largest excesses over class j among
// the leaves of all: the total less the len(all)-m smallest, or the m
// largest, whichever list is shorter.
func (p *Placer) topExcess(all []excessRef, m, j int) int {
	ss := &p.sc.search
	if m >= len(all) {
		return p.sumExcess(all, j)
	}
	v, total := ss.sorted[:0], 0
	if n := len(all) - m; n < m {
		for _, r := range all { // keep the n smallest, smallest first
			e := ss.excess[int(r.at)+j]
			total += int(e)
			if len(v) == n && e >= v[n-1] {
				continue
			}
			if len(v) < n {
				v = append(v, e)
			}
			i := len(v) - 1
			for ; i > 0 && e < v[i-1]; i-- {
				v[i] = v[i-1]
			}
			v[i] = e
		}
		ss.sorted = v
		for _, e := range v {
			total -= int(e)
		}
		return total
	}
	for _, r := range all { // keep the m largest, largest first
		e := ss.excess[int(r.at)+j]
		if len(v) == m && e <= v[m-1] {
			continue
		}
		if len(v) < m {
			v = append(v, e)
		}
		i := len(v) - 1
		for ; i > 0 && e > v[i-1]; i-- {
			v[i] = v[i-1]
		}
		v[i] = e
	}
	ss.sorted = v
	for _, e := range v {
		total += int(e)
	}
	return total
}

// selKids returns the children of x under which the plan in cover.sel
// takes leaves, in child order.
func (p *Placer) selKids(x int) []int32 {
	ly, ss := p.lay, &p.sc.search
	kids := ss.kids[:0]
	for _, la := range p.sc.cover.sel {
		z := int(la.leaf)
		for int(ly.parent[z]) != x {
			z = int(ly.parent[z])
		}
		if i, found := slices.BinarySearch(kids, int32(z)); !found {
			kids = slices.Insert(kids, i, int32(z))
		}
	}
	ss.kids = kids
	return kids
}

// runGPUSearch is searchGPULeaves without the arena bookkeeping.
func (p *Placer) runGPUSearch(x, a, m, ub int) (nodes int, found, ok bool) {
	ss, cs := &p.sc.search, &p.sc.cover
	tmax := ub - 1
	if (m+1)*(tmax+1) > p.sc.budget {
		return 0, false, false // the table alone would not fit the budget
	}
	if !p.reference && p.selWork(m, tmax) > p.sc.budget {
		p.earlySkips++
		return 0, false, false // the greedy plan's leaves alone would not fit
	}
	leaves := p.coverLeaves(x, a, m)
	// The work the search would do: each leaf relaxes every cell once per
	// node it may give. Give up at once when it exceeds the budget.
	cells, work := (min(m, len(leaves))+1)*(tmax+1), 0
	for _, la := range leaves {
		work += p.leafWork(int(la.unit), tmax, cells)
	}
	if p.reference && p.selWork(m, tmax) > work+cells {
		panic("placement: selWork's bound exceeds the search's work")
	}
	if work+cells > p.sc.budget {
		return 0, false, false
	}
	t, ok := p.newTable(min(m, len(leaves)), tmax, true, true, len(leaves))
	if !ok {
		return 0, false, false
	}
	profs := ss.profs[:0]
	for _, la := range leaves {
		prof, ok := p.nodeProfile(int(la.unit), tmax)
		if !ok || !p.add(&t, prof) {
			return 0, false, false
		}
		profs = append(profs, prof)
	}
	c, cost := t.cheapest(a)
	if cost < 0 {
		return 0, false, true
	}
	costs := ss.sorted[:len(leaves)]
	t.costsOf(c, cost, costs)
	cs.sel = cs.sel[:0]
	rest := int32(a)
	for i, la := range leaves {
		if costs[i] == 0 || rest == 0 {
			continue
		}
		amt := min(profs[i][costs[i]], rest)
		rest -= amt
		cs.sel = append(cs.sel, leafAmount{leaf: la.unit, amount: amt})
		nodes += p.leafTake(int(la.unit), int(amt)).nodes
	}
	return nodes, true, true
}

// selWork returns a lower bound on the work runGPUSearch would count
// (table cells included) for m leaves and up to tmax nodes, from the
// leaves of the greedy plan in cover.sel alone. Each of them is among the
// leaves coverLeaves lists (it and the plan's other leaves reach the
// need, so it and the largest others do), and the table has at least as
// many rows as they make: when the bound exceeds the budget, so does the
// search, which can give up without listing the leaves.
func (p *Placer) selWork(m, tmax int) int {
	sel := p.sc.cover.sel
	cells, work := (min(m, len(sel))+1)*(tmax+1), 0
	for _, la := range sel {
		work += p.leafWork(int(la.leaf), tmax, cells)
	}
	return work + cells
}

// leafWork returns the work the search counts for leaf l: it relaxes
// every cell once per node it may give, at most tmax (a candidate gives
// at least one GPU: no more candidates than GPUs).
func (p *Placer) leafWork(l, tmax, cells int) int {
	ly := p.lay
	most := min(int(p.sc.capBase[l]), int(ly.nodeEnd[l]-ly.nodeFirst[l]))
	return cells * (min(most, tmax) + 1)
}

// coverLeaves lists, in search.leaves, the leaves under x that some cover
// of a GPUs by m leaves may use: with the m-1 largest other leaves, they
// reach a.
func (p *Placer) coverLeaves(x, a, m int) []unitAmount {
	ly, ss := p.lay, &p.sc.search
	leaves := ss.leaves[:0]
	lf, le := ly.leafID(int(ly.leafFirst[x])), ly.leafID(int(ly.leafEnd[x]))
	top, top1 := p.topCaps(x, m)
	for l := lf; l < le; l++ {
		v := int(p.sc.capBase[l])
		others := top1
		if m > 1 && v >= int(p.sc.cover.caps[m-2]) {
			others = top - v
		}
		if v > 0 && v+others >= a {
			leaves = append(leaves, unitAmount{unit: int32(l)})
		}
	}
	ss.leaves = leaves
	return leaves
}

// topCaps returns the sums of the m and the m-1 largest leaf capacities
// under x, leaving the capacities sorted in cover.caps.
func (p *Placer) topCaps(x, m int) (top, top1 int) {
	cs := &p.sc.cover
	cs.caps = append(cs.caps[:0], p.leafCaps(x)...)
	sortDescending(cs.caps, &cs.count)
	for i := 0; i < m && i < len(cs.caps); i++ {
		top += int(cs.caps[i])
		if i < m-1 {
			top1 += int(cs.caps[i])
		}
	}
	return top, top1
}

// candidateNodes returns the candidates of leaf x.
func (p *Placer) candidateNodes(x int) int {
	n := 0
	for _, c := range p.histogram(x) {
		n += int(c)
	}
	return n
}

// nodeProfile returns, for leaf x, the usable GPUs of its t fullest
// candidates, t = 0..tmax (fewer when the leaf has fewer candidates).
func (p *Placer) nodeProfile(x, tmax int) ([]int32, bool) {
	h := p.histogram(x)
	n := min(p.candidateNodes(x), tmax)
	prof, ok := p.sc.search.alloc(n + 1)
	if !ok {
		return nil, false
	}
	prof[0] = 0
	t := 1
	for k := p.lay.maxGPUs; k >= 1 && t <= n; k-- {
		for range h[k] {
			if t > n {
				break
			}
			prof[t] = prof[t-1] + int32(k)
			t++
		}
	}
	return prof, true
}
