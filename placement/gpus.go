package placement

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
	if nodes > p.planNodesBound(x) {
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

// runGPUSearch is searchGPULeaves without the arena bookkeeping.
func (p *Placer) runGPUSearch(x, a, m, ub int) (nodes int, found, ok bool) {
	ss, cs := &p.sc.search, &p.sc.cover
	ly := p.lay
	tmax := ub - 1
	if (m+1)*(tmax+1) > p.sc.budget {
		return 0, false, false // the table alone would not fit the budget
	}
	leaves := p.coverLeaves(x, a, m)
	// The work the search would do: each leaf relaxes every cell once per
	// node it may give. Give up at once when it exceeds the budget.
	cells, work := (min(m, len(leaves))+1)*(tmax+1), 0
	for _, la := range leaves {
		// A candidate gives at least one GPU: no more candidates than GPUs.
		l := int(la.unit)
		most := min(int(p.sc.capBase[l]), int(ly.nodeEnd[l]-ly.nodeFirst[l]))
		work += cells * (min(most, tmax) + 1)
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
