package placement

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
	for l := p.lay.leaf; l >= sc.pl.required; l-- {
		if x, ok := p.bestDomainAt(l); ok {
			// The fill gets its own search budget.
			sc.budget = p.budget
			return x, true
		}
	}
	return -1, false
}

// bestDomainAt returns the best domain of level l that holds the request.
func (p *Placer) bestDomainAt(l level) (int, bool) {
	ly, pl := p.lay, &p.sc.pl
	ph := pl.firstPhase(l)
	need := pl.need(ph)
	best := choice{domain: -1}
	for d := range ly.count(l) {
		x := ly.id(l, d)
		if !p.holds(x, ph, need) {
			continue
		}
		c, ok := p.score(x, ph, need, best)
		if ok && (best.domain < 0 || c.better(best)) {
			best = c
		}
	}
	return best.domain, best.domain >= 0
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
	return p.topUnitsSum(x, ph, pl.limit) >= need
}

// topUnitsSum returns the items of phase ph that the k largest units of
// phase ph under x hold.
func (p *Placer) topUnitsSum(x, ph, k int) int {
	uf, ue := p.lay.descendants(x, p.sc.pl.phases[ph].unit)
	buf := p.sc.search.sorted[:0]
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
	return sum
}

// score computes x's choice. It reports false when a lower bound already
// shows x cannot beat best (then the choice is not filled in).
func (p *Placer) score(x, ph, need int, best choice) (choice, bool) {
	ly, sc := p.lay, &p.sc
	c := choice{domain: x}
	if ly.levelOf(x) == ly.leaf {
		c.leaves = 1
		st := p.leafTake(x, need) // ph is the last phase
		c.nodes = st.nodes * boolInt(sc.pl.mode == modeGPUs)
		c.stranded = st.free + p.pathFree(x) - (ly.depth+1)*sc.pl.requestGPUs(st.taken)
		return c, true
	}
	if best.domain >= 0 && p.leafLowerBound(x, ph, need) > best.leaves {
		return c, false
	}
	var exact bool
	c.leaves, exact = p.minLeaves(x, ph, need)
	if !exact {
		sc.approximate = true
	}
	if sc.pl.mode == modeGPUs {
		if best.domain >= 0 && c.leaves == best.leaves && p.nodesLowerBound(x) > best.nodes {
			return c, false
		}
		c.nodes = p.minNodes(x, ph, need)
	}
	c.stranded = p.pathFree(x)
	return c, true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
