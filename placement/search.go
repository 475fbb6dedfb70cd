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
	if l == ly.leaf {
		return p.bestLeaf(need)
	}
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

// bestLeaf returns the best leaf that holds need last-phase items: the
// fewest nodes (GPU totals), then the least stranded capacity, scored
// exactly, skipping leaves whose lower bounds (a cheap one, then a
// tighter one) cannot win. Leaves are visited parent by parent, so that
// the free GPUs above them are summed once per parent.
func (p *Placer) bestLeaf(need int) (int, bool) {
	ly := p.lay
	caps := p.leafCaps(0)
	var free []int32
	if ly.leaf != rootLevel {
		free = p.sc.s.LevelFreeGPUs(int(ly.leaf))
	}
	best := choice{domain: -1}
	for d, n := 0, ly.count(ly.leaf); d < n; {
		parent := max(int(ly.parent[ly.leafID(d)]), 0) // a flat cluster's leaf is the root
		above := p.pathFree(parent)
		end := n
		if parent > 0 {
			end = int(ly.leafEnd[parent])
		}
		for ; d < end; d++ {
			if int(caps[d]) < need {
				continue
			}
			x := ly.leafID(d)
			path := above
			if free != nil {
				path += int(free[d])
			}
			if best.domain >= 0 && (!p.leafBound(x, need, path, false).better(best) || !p.leafBound(x, need, path, true).better(best)) {
				continue
			}
			if c := p.leafChoice(x, need, path); best.domain < 0 || c.better(best) {
				best = c
			}
		}
	}
	return best.domain, best.domain >= 0
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
		if tight && pl.gpus <= maxG {
			if k := p.classAtLeast(x, pl.gpus); k > 0 {
				c.stranded += k - pl.gpus // one node: the tightest
			} else {
				c.nodes = 2
			}
		}
		return c
	}
	n := need * pl.itemNodes(p.lastPhase())
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
		return p.leafChoice(x, need, p.pathFree(x)), true // ph is the last phase
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
