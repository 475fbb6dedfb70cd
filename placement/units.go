package placement

// fill places need items of phase ph inside domain x (step 4): x's level
// lies above the phase's units, or x is one of them.
func (p *Placer) fill(x, ph, need int) {
	if ph == p.lastPhase() {
		p.fillLeaves(x, need)
		return
	}
	if p.lay.levelOf(x) == p.sc.pl.phases[ph].unit {
		p.fill(x, ph+1, need*p.sc.pl.ratio(ph))
		return
	}
	plan := p.planUnits(x, ph, need)
	for _, ua := range plan {
		p.fill(int(ua.unit), ph+1, int(ua.amount)*p.sc.pl.ratio(ph))
	}
}

// planUnits chooses the units of phase ph (not the last) under x and the
// items each takes: the greedy plan, replaced by an exact search's when
// the greedy one may use more leaves than needed.
func (p *Placer) planUnits(x, ph, need int) []unitAmount {
	sc := &p.sc
	ub := p.greedyUnits(x, ph, need)
	if p.leafLowerBound(x, ph, need) < ub {
		switch found, ok := p.searchUnits(x, ph, need, ub); {
		case !ok:
			sc.approximate = true
			p.greedyUnits(x, ph, need) // the search reused the buffer
		case found:
		default:
			p.greedyUnits(x, ph, need)
		}
	}
	return sc.search.units[ph]
}

// minLeaves returns the fewest leaves that hold need items of phase ph
// inside x, and whether that count is proven (false: the search ran out
// of budget and the count is the greedy one's).
func (p *Placer) minLeaves(x, ph, need int) (int, bool) {
	pl := &p.sc.pl
	switch {
	case ph == p.lastPhase():
		if p.lay.levelOf(x) == p.lay.leaf {
			return 1, true
		}
		return p.leafCover(x, need), true
	case p.lay.levelOf(x) == pl.phases[ph].unit:
		return p.minLeaves(x, ph+1, need*pl.ratio(ph))
	}
	ub := p.greedyUnits(x, ph, need)
	if p.leafLowerBound(x, ph, need) == ub {
		return ub, true
	}
	found, ok := p.searchUnits(x, ph, need, ub)
	if !ok {
		return ub, false
	}
	if found {
		return p.planCost(ph), true
	}
	return ub, true
}

// planCost returns the leaves of the unit plan of phase ph.
func (p *Placer) planCost(ph int) int {
	n := 0
	for _, ua := range p.sc.search.units[ph] {
		n += int(ua.cost)
	}
	return n
}

// leafLowerBound returns the fewest leaves under x holding the request's
// nodes if only the last phase constrained them: no placement of need
// items of phase ph inside x uses fewer.
func (p *Placer) leafLowerBound(x, ph, need int) int {
	pl := &p.sc.pl
	for q := ph; q < p.lastPhase(); q++ {
		need *= pl.ratio(q)
	}
	return p.leafCover(x, need)
}

// greedyUnits is the fallback plan of phase ph under x (into
// search.units[ph]): the fewest units, largest first, the last piece to
// the tightest unit that covers it. It returns the leaves the plan uses,
// each unit filled as tightly as minLeaves can.
func (p *Placer) greedyUnits(x, ph, need int) int {
	sc, ly := &p.sc, p.lay
	pl := &sc.pl
	refs := sc.search.refs[:0]
	uf, ue := ly.descendants(x, pl.phases[ph].unit)
	for u := uf; u < ue; u++ {
		if c := int32(p.phaseCap(ph, u)); c > 0 {
			refs = append(refs, leafRef{cap: c, free: int32(p.domainFree(u)), leaf: int32(u)})
		}
	}
	p.sortLeaves(refs)
	sc.search.refs = refs
	plan := sc.search.units[ph][:0]
	rest := need
	for i, r := range refs {
		if int(r.cap) >= rest {
			// The tightest unit from here on that covers the rest.
			last := i
			for j := i + 1; j < len(refs) && int(refs[j].cap) >= rest; j++ {
				last = j
			}
			plan = append(plan, unitAmount{unit: refs[last].leaf, amount: int32(rest)})
			break
		}
		plan = append(plan, unitAmount{unit: r.leaf, amount: r.cap})
		rest -= int(r.cap)
	}
	sc.search.units[ph] = plan
	leaves := 0
	for i := range plan {
		n, exact := p.minLeaves(int(plan[i].unit), ph+1, int(plan[i].amount)*pl.ratio(ph))
		if !exact {
			sc.approximate = true
		}
		sc.search.units[ph][i].cost = int32(n)
		leaves += n
	}
	return leaves
}

// searchUnits looks for a plan of phase ph under x using fewer than ub
// leaves: a knapsack over the units, each offering the items it holds on
// t leaves. It reports whether it found one (left in search.units[ph],
// costs set, amounts not yet) and whether the search finished within the
// budget.
func (p *Placer) searchUnits(x, ph, need, ub int) (found, ok bool) {
	sc := &p.sc
	ss := &sc.search
	mark := ss.top
	found, ok = p.runUnitSearch(x, ph, need, ub)
	ss.top, ss.npicks = mark, 0
	return found, ok
}

// runUnitSearch is searchUnits without the arena bookkeeping.
func (p *Placer) runUnitSearch(x, ph, need, ub int) (found, ok bool) {
	sc, ly := &p.sc, p.lay
	pl := &sc.pl
	ss := &sc.search
	tmax := ub - 1
	uf, ue := ly.descendants(x, pl.phases[ph].unit)
	plan := ss.units[ph][:0]
	for u := uf; u < ue; u++ {
		if p.phaseCap(ph, u) > 0 {
			plan = append(plan, unitAmount{unit: int32(u)})
		}
	}
	ss.units[ph] = plan
	cmax := 0
	if pl.phases[ph].limited {
		cmax = min(pl.limit, len(plan))
	}
	// At least each unit relaxing every cell once per leaf it may use:
	// give up at once when even that exceeds the budget.
	cells, work := (cmax+1)*(tmax+1), 0
	for _, ua := range plan {
		lo, hi := ly.descendants(int(ua.unit), ly.leaf)
		work += cells * (min(hi-lo, tmax) + 1)
	}
	if work+cells > sc.budget {
		return false, false
	}
	t, ok := p.newTable(cmax, tmax, cmax > 0, true, len(plan))
	if !ok {
		return false, false
	}
	profs := ss.profs[:0]
	for _, ua := range plan {
		prof, ok := p.unitProfile(int(ua.unit), ph, tmax)
		if !ok || !p.add(&t, prof) {
			return false, false
		}
		profs = append(profs, prof)
	}
	ss.profs = profs
	c, cost := t.cheapest(need)
	if cost < 0 {
		return false, true
	}
	costs := ss.sorted[:len(plan)]
	t.costsOf(c, cost, costs)
	ss.units[ph] = assignAmounts(plan, costs, profs, need)
	return true, true
}

// assignAmounts keeps the units of plan the search gave leaves to, each
// with its leaves (costs) and as many of the need items as they hold
// (profs), in plan order, and returns them (in plan's storage).
func assignAmounts(plan []unitAmount, costs []int32, profs [][]int32, need int) []unitAmount {
	rest := int32(need)
	kept := plan[:0]
	for i, ua := range plan {
		if costs[i] == 0 || rest == 0 {
			continue
		}
		ua.cost = costs[i]
		ua.amount = min(profs[i][costs[i]], rest)
		rest -= ua.amount
		kept = append(kept, ua)
	}
	if rest > 0 {
		panic("placement: a searched plan holds fewer items than its search found")
	}
	return kept
}

// unitProfile returns, for unit u of phase ph, the most items of phase ph
// it holds on t leaves, t = 0..tmax (from the arena).
func (p *Placer) unitProfile(u, ph, tmax int) ([]int32, bool) {
	if ph == p.lastPhase() {
		prof, ok := p.sc.search.alloc(2)
		if ok {
			prof[0], prof[1] = 0, int32(p.phaseCap(ph, u))
		}
		return prof, ok
	}
	prof, ok := p.containerProfile(u, ph+1, tmax)
	if !ok {
		return nil, false
	}
	r := int32(p.sc.pl.ratio(ph))
	for t := range prof {
		prof[t] /= r
	}
	return prof, true
}

// containerProfile returns, for domain x above the units of phase ph, the
// most items of phase ph it holds on t leaves, t = 0..tmax.
func (p *Placer) containerProfile(x, ph, tmax int) ([]int32, bool) {
	sc, ly := &p.sc, p.lay
	if ph == p.lastPhase() {
		caps := p.leafCaps(x)
		n := min(len(caps), tmax)
		prof, ok := sc.search.alloc(n + 1)
		if !ok || !sc.spend(len(caps)) {
			return nil, false
		}
		sorted := append(sc.cover.caps[:0], caps...)
		sortDescending(sorted, &sc.cover.count)
		prof[0] = 0
		for t := 1; t <= n; t++ {
			prof[t] = prof[t-1] + sorted[t-1]
		}
		return prof, true
	}
	t, ok := p.newTable(0, tmax, false, false, 0)
	if !ok {
		return nil, false
	}
	uf, ue := ly.descendants(x, sc.pl.phases[ph].unit)
	for u := uf; u < ue; u++ {
		if p.phaseCap(ph, u) == 0 {
			continue
		}
		inner := sc.search.top
		prof, ok := p.unitProfile(u, ph, tmax)
		if !ok || !p.add(&t, prof) {
			return nil, false
		}
		sc.search.top = inner
	}
	// At most t leaves: the best of every smaller cost.
	for i := 1; i <= tmax; i++ {
		t.best[i] = max(t.best[i], t.best[i-1])
	}
	return t.best, true
}
