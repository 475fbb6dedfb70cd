package placement

import "github.com/phalanx-sched/phalanx/internal/bits"

// choice scores one candidate domain for the request: the criteria in
// order, then the domain's index for a stable answer.
type choice struct {
	leaves   int
	nodes    int // GPU totals only; 0 otherwise
	stranded int // exact for a single leaf; the domain's path free GPUs above it
	domain   int
}

// better reports whether a beats b.
func (a choice) better(b choice) bool {
	switch {
	case a.leaves != b.leaves:
		return a.leaves < b.leaves
	case a.nodes != b.nodes:
		return a.nodes < b.nodes
	case a.stranded != b.stranded:
		return a.stranded < b.stranded
	}
	return a.domain < b.domain
}

// chooseDomain runs steps 2 and 3: the lowest level, from the lowest-level
// domains up to the Required level, where a domain holds the request, and
// the best such domain.
func (p *Placer) chooseDomain() (int, bool) {
	sc := &p.sc
	if !p.someDomainHolds(sc.pl.required) {
		// Holding is inherited upwards: nothing lower holds it either.
		return -1, false
	}
	for l := p.lowestHolding(); l >= sc.pl.required; l-- {
		if x, ok := p.bestDomainAt(l); ok {
			// The fill gets its own search budget.
			sc.budget = p.budget
			return x, true
		}
	}
	return -1, false
}

// lowestHolding returns the level chooseDomain starts from: the lowest
// one, going down from the Required level, whose every level above holds
// the request in some domain. Holding is inherited upwards, so no domain
// below it holds the request either: a request that only the cluster
// holds skips the leaves (and their scoring) after one look at the level
// under the root. The reference placer starts at the lowest level.
func (p *Placer) lowestHolding() level {
	ly := p.lay
	if p.reference {
		return ly.leaf
	}
	l := p.sc.pl.required
	for l < ly.leaf && p.someDomainHolds(l+1) {
		l++
	}
	return l
}

// someDomainHolds reports whether a domain of level l holds the request.
func (p *Placer) someDomainHolds(l level) bool {
	ly, pl := p.lay, &p.sc.pl
	ph := pl.firstPhase(l)
	need := pl.need(ph)
	for d := range ly.count(l) {
		if p.holds(ly.id(l, d), ph, need) {
			return true
		}
	}
	return false
}

// bestDomainAt returns the best domain of level l that holds the request.
func (p *Placer) bestDomainAt(l level) (int, bool) {
	ly, pl := p.lay, &p.sc.pl
	ph := pl.firstPhase(l)
	need := pl.need(ph)
	if l == ly.leaf {
		return p.bestLeaf(need)
	}
	cands := p.sc.search.cands[:0]
	for d := range ly.count(l) {
		if x := ly.id(l, d); p.holds(x, ph, need) {
			cands = append(cands, choice{domain: x})
		}
	}
	p.sc.search.cands = cands
	if len(cands) <= 1 {
		if len(cands) == 0 {
			return -1, false
		}
		return cands[0].domain, true // nothing to choose from: no bound needed
	}
	for i := range cands {
		cands[i] = p.domainBound(cands[i].domain, ph, need)
	}
	sortChoices(cands)
	best := choice{domain: -1}
	for i, lb := range cands {
		if best.domain >= 0 && !lb.better(best) {
			break // sorted: no later bound wins either
		}
		if i == maxScored {
			// Nodes bounds too weak to rule out more candidates: stop,
			// unproven.
			p.sc.approximate = true
			break
		}
		if c := p.score(lb.domain, ph, need); best.domain < 0 || c.better(best) {
			best = c
			p.keepPlan(lb.domain, ph)
		}
	}
	return best.domain, true
}

// maxScored bounds the candidate domains of one level that a decision
// scores in full (each costs a leaf plan), in the order of their lower
// bounds. It binds only when the bounds are weak (the nodes of GPU totals,
// the leaves under segments or limits above the lowest level); the
// decision is then marked approximate.
const maxScored = 8

// domainBound returns a choice no better than domain x's: the leaves with
// only the last phase's constraint, the fewest nodes whatever the leaves,
// and x's exact stranded-capacity term.
func (p *Placer) domainBound(x, ph, need int) choice {
	c := choice{domain: x, leaves: p.leafLowerBound(x, ph, need), stranded: p.pathFree(x)}
	if p.sc.pl.mode == modeGPUs {
		c.nodes = p.quickNodesLowerBound(x, p.sc.pl.gpus)
	}
	return c
}

// sortChoices sorts choices best first (an insertion sort: a level's
// candidate domains are few).
func sortChoices(v []choice) {
	for i := 1; i < len(v); i++ {
		x := v[i]
		j := i
		for ; j > 0 && x.better(v[j-1]); j-- {
			v[j] = v[j-1]
		}
		v[j] = x
	}
}

// keepPlan keeps the leaf plan that scoring x computed (GPU totals at the
// last phase), so that filling x reuses it instead of searching again.
func (p *Placer) keepPlan(x, ph int) {
	cs := &p.sc.cover
	cs.keptFor = -1
	if p.sc.pl.mode == modeGPUs && ph == p.lastPhase() {
		cs.kept = append(cs.kept[:0], cs.sel...)
		cs.keptFor = x
	}
}

// bestLeaf returns the best leaf that holds need last-phase items: the
// fewest nodes (GPU totals), then the least stranded capacity, scored
// exactly. It scores the leaf with the fewest free GPUs on its path first,
// then visits the leaves parent by parent (the free GPUs above them summed
// once per parent), skipping a parent, then a leaf, whose lower bounds (a
// cheap one, then a tighter one) cannot win.
func (p *Placer) bestLeaf(need int) (int, bool) {
	if k, ok := p.singleNodeClass(need); ok {
		if x := p.bestSingleNodeLeaf(k); x >= 0 {
			return x, true
		}
	}
	ly := p.lay
	caps := p.leafCaps(0)
	x, path := p.fullestLeaf(need)
	if x < 0 {
		return -1, false
	}
	best := p.leafChoice(x, need, path)
	free := p.leavesFree()
	// The cheap bound is the same for every leaf but for its path's free
	// GPUs, which it adds: computed once, for a path of none.
	cheap := p.leafBound(-1, need, 0, false)
	first := ly.leafID(0)
	for d, n := 0, ly.count(ly.leaf); d < n; {
		parent := max(int(ly.parent[first+d]), 0) // a flat cluster's leaf is the root
		above := p.pathFree(parent)
		end := n
		if parent > 0 {
			end = int(ly.leafEnd[parent])
		}
		lb := cheap
		lb.stranded += above
		if !lb.better(best) {
			d = end // no leaf under parent can win
			continue
		}
		for ; d < end; d++ {
			if int(caps[d]) < need {
				continue
			}
			path := above + freeOf(free, d)
			lb.stranded, lb.domain = cheap.stranded+path, first+d
			if !lb.better(best) {
				continue // the cheap bound of boundedLeafChoice
			}
			if c, ok := p.boundedLeafChoice(first+d, need, path, best); ok && c.better(best) {
				best = c
			}
		}
	}
	return best.domain, true
}

// singleNodeClass reports whether the request takes one node, of at least
// k free GPUs, and can be scored from the state's counters alone (no
// Allowed or Excluded, not exclusive).
func (p *Placer) singleNodeClass(need int) (int, bool) {
	pl, maxG := &p.sc.pl, p.lay.maxGPUs
	switch {
	case !p.sc.countable:
		return 0, false
	case pl.exclusive && pl.mode == modeNodes && pl.perNode == 0:
		return 0, false // whole nodes score by size, not stranding
	case pl.exclusive:
		// Idle nodes, all of maxGPUs (countable): the class is the size.
		single := pl.mode == modeGPUs && pl.gpus <= maxG || pl.mode == modeNodes && need*pl.itemNodes(p.lastPhase()) == 1 && p.sc.minFree <= maxG
		return maxG, single
	case pl.mode == modeGPUs:
		return pl.gpus, pl.gpus <= maxG
	}
	return p.sc.minFree, need*pl.itemNodes(p.lastPhase()) == 1 && p.sc.minFree <= maxG
}

// bestSingleNodeLeaf returns the leaf whose tightest node of at least k
// free GPUs, plus the free GPUs of the leaf and of the domains above it,
// is least (the stranded capacity of taking that node), the lowest index
// on ties; -1 when no node has k free GPUs. One pass over the counters.
func (p *Placer) bestSingleNodeLeaf(k int) int {
	ly, s := p.lay, p.sc.s
	free, avail := s.LevelFreeGPUs(int(ly.leaf)), s.LevelAvail(int(ly.leaf))
	stride := ly.maxGPUs + 1
	best, bestScore := -1, 0
	for d, n := 0, len(free); d < n; {
		parent := int(ly.parent[ly.leafID(d)])
		above, end := p.pathFree(parent), int(ly.leafEnd[parent])
		// No node under parent is tighter than the parent's tightest.
		least := p.tightestUnder(parent, k)
		if least == 0 {
			d = end
			continue
		}
		for ; d < end; d++ {
			base := above + int(free[d])
			if best >= 0 && base+least >= bestScore {
				continue
			}
			c := p.tightestIn(d, k, avail[d*stride:(d+1)*stride])
			if c == 0 {
				continue
			}
			if score := base + c; best < 0 || score < bestScore {
				best, bestScore = d, score
			}
		}
	}
	if best < 0 {
		return -1
	}
	return ly.leafID(best)
}

// tightestIn returns the fewest free GPUs, at least k, of a candidate of
// leaf number d (row is its counters), or 0 when none has k: from the
// counters, unless Allowed or Excluded removed some of its nodes.
func (p *Placer) tightestIn(d, k int, row []int32) int {
	sc, ly := &p.sc, p.lay
	if sc.masked {
		x := ly.leafID(d)
		if sc.capBase[x] == 0 {
			return 0
		}
		if bits.Any(sc.removed, int(ly.nodeFirst[x]), int(ly.nodeEnd[x])) {
			return p.classAtLeast(x, k)
		}
	}
	if sc.pl.exclusive {
		if sc.capBase[ly.leafID(d)] == 0 {
			return 0
		}
		return ly.maxGPUs // every candidate is an idle node of maxGPUs
	}
	if row[k] == 0 {
		return 0
	}
	for k < ly.maxGPUs && row[k] == row[k+1] {
		k++
	}
	return k
}

// tightestUnder returns the fewest free GPUs, at least k, of a schedulable
// node under domain x (k itself for the root, which has no counters; 0
// when no node has k).
func (p *Placer) tightestUnder(x, k int) int {
	ly := p.lay
	if x == 0 || p.sc.pl.exclusive {
		return k
	}
	row := p.counterRow(x)
	if row[k] == 0 {
		return 0
	}
	for k < ly.maxGPUs && row[k] == row[k+1] {
		k++
	}
	return k
}

// boundedLeafChoice scores leaf x (path is pathFree(x)) unless a bound shows
// it cannot beat best; it reports whether it scored it.
func (p *Placer) boundedLeafChoice(x, need, path int, best choice) (choice, bool) {
	if !p.leafBound(x, need, path, false).better(best) {
		return choice{}, false
	}
	c := p.leafBound(x, need, path, true)
	if !c.better(best) {
		return choice{}, false
	}
	if p.boundIsExact(need) && (p.sc.pl.mode != modeGPUs || c.nodes == 1) {
		return c, true
	}
	return p.leafChoice(x, need, path), true
}

// fullestLeaf returns a leaf holding need items with the fewest free GPUs
// on its path, and that path's free GPUs (-1 when no leaf holds them).
func (p *Placer) fullestLeaf(need int) (int, int) {
	ly := p.lay
	caps, free := p.leafCaps(0), p.leavesFree()
	best, bestPath := -1, 0
	for d, n := 0, len(caps); d < n; {
		parent := max(int(ly.parent[ly.leafID(d)]), 0)
		above, end := -1, n // above: the parent's path, once a leaf holds need
		if parent > 0 {
			end = int(ly.leafEnd[parent])
		}
		for ; d < end; d++ {
			if int(caps[d]) < need {
				continue
			}
			if above < 0 {
				above = p.pathFree(parent)
			}
			if path := above + freeOf(free, d); best < 0 || path < bestPath {
				best, bestPath = ly.leafID(d), path
			}
		}
	}
	return best, bestPath
}

// leavesFree returns the free GPUs of every leaf, by leaf number (nil for
// a flat cluster, whose leaf is the root and adds nothing: see freeOf).
func (p *Placer) leavesFree() []int32 {
	if p.lay.leaf == rootLevel {
		return nil
	}
	return p.sc.s.LevelFreeGPUs(int(p.lay.leaf))
}

// freeOf returns entry d of leavesFree's answer v (0 when v is nil).
func freeOf(v []int32, d int) int {
	if v == nil {
		return 0
	}
	return int(v[d])
}

// boundIsExact reports whether the tight leaf bound is the exact score:
// requests that take one node of known class (GPU totals: when the bound
// found a node that holds them).
func (p *Placer) boundIsExact(need int) bool {
	pl := &p.sc.pl
	switch {
	case pl.mode == modeGPUs:
		return pl.gpus <= p.lay.maxGPUs && !pl.exclusive
	case pl.exclusive && pl.perNode == 0:
		return false
	}
	return need*pl.itemNodes(p.lastPhase()) == 1
}

// leafChoice scores leaf x for need last-phase items exactly; path is
// pathFree(x).
func (p *Placer) leafChoice(x, need, path int) choice {
	pl := &p.sc.pl
	st := p.leafTake(x, need)
	c := choice{domain: x, leaves: 1}
	if pl.mode == modeGPUs {
		c.nodes = st.nodes
	}
	c.stranded = st.free + path - (p.lay.depth+1)*pl.requestGPUs(st.taken)
	return c
}

// leafBound returns a choice no better than leaf x's (path is
// pathFree(x)). The cheap bound
// assumes every node taken has the request's minimum of usable GPUs and a
// GPU total needs as few nodes as the largest nodes allow; the tight one
// (tight set) looks at x's nodes: their fewest usable GPUs, and whether
// one of them holds a GPU total alone.
func (p *Placer) leafBound(x, need, path int, tight bool) choice {
	pl, maxG := &p.sc.pl, p.lay.maxGPUs
	c := choice{domain: x, leaves: 1}
	depth := p.lay.depth
	if pl.mode == modeGPUs {
		c.nodes = (pl.gpus + maxG - 1) / maxG
		// The free GPUs of the nodes taken cover the request at least.
		c.stranded = path - depth*pl.gpus
		if tight && x >= 0 && pl.gpus <= maxG {
			if k := p.classAtLeast(x, pl.gpus); k > 0 {
				c.stranded += k - pl.gpus // one node: the tightest
			} else {
				c.nodes = 2
			}
		}
		return c
	}
	n := need * pl.itemNodes(p.lastPhase())
	if x < 0 {
		tight = false // a bound for every leaf of a parent
	}
	if pl.exclusive && pl.perNode == 0 {
		// Whole nodes: what is given is what was asked, at most maxG each.
		c.stranded = path - depth*n*maxG
		return c
	}
	least := p.sc.minFree
	if tight {
		least = p.minClass(x)
	}
	c.stranded = n*least + path - (depth+1)*n*pl.perNode
	return c
}

// holds reports whether domain x can hold need items of phase ph, the
// first phase below x's level: enough items, and within the domain limit.
func (p *Placer) holds(x, ph, need int) bool {
	if p.phaseCap(ph, x) < need {
		return false
	}
	pl := &p.sc.pl
	if !pl.phases[ph].limited || pl.phases[ph].unit == p.lay.levelOf(x) {
		return true
	}
	return p.topUnitsReach(x, ph, pl.limit, need)
}

// topUnitsReach reports whether the k largest units of phase ph under x
// hold need items of the phase. For small k it keeps the k largest seen
// so far (and stops once they reach need); otherwise it sorts.
func (p *Placer) topUnitsReach(x, ph, k, need int) bool {
	uf, ue := p.lay.descendants(x, p.sc.pl.phases[ph].unit)
	buf := p.sc.search.sorted[:0]
	if k > maxTopUnits || p.reference {
		for u := uf; u < ue; u++ {
			if c := int32(p.phaseCap(ph, u)); c > 0 {
				buf = append(buf, c)
			}
		}
		sortDescending(buf, &p.sc.search.count)
		sum := 0
		for i := 0; i < k && i < len(buf); i++ {
			sum += int(buf[i])
		}
		return sum >= need
	}
	sum := 0
	for u := uf; u < ue; u++ {
		c := int32(p.phaseCap(ph, u))
		switch {
		case c <= 0:
			continue
		case len(buf) < k:
			buf = append(buf, c)
		case c > buf[k-1]:
			sum -= int(buf[k-1])
			buf[k-1] = c
		default:
			continue
		}
		sum += int(c)
		if sum >= need {
			return true
		}
		// Keep buf sorted largest first: move the new value up.
		for i := len(buf) - 1; i > 0 && buf[i] > buf[i-1]; i-- {
			buf[i], buf[i-1] = buf[i-1], buf[i]
		}
	}
	return false
}

// maxTopUnits is the largest domain limit topUnitsReach keeps a running
// top list for; larger limits sort the units.
const maxTopUnits = 16

// score computes domain x's choice (x above the lowest level): its
// fewest leaves (marking the decision approximate when the search could
// not prove them), for GPU totals its fewest nodes, and its path's free
// GPUs, the stranded capacity its use adds.
func (p *Placer) score(x, ph, need int) choice {
	sc := &p.sc
	c := choice{domain: x, stranded: p.pathFree(x)}
	var exact bool
	c.leaves, exact = p.minLeaves(x, ph, need)
	if !exact {
		sc.approximate = true
	}
	if sc.pl.mode == modeGPUs {
		c.nodes = p.minNodes(x, ph, need)
	}
	return c
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
