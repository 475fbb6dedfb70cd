package placement

// The exact searches of a decision are knapsacks over groups (the units of
// a phase, or the leaves of a domain): group i offers a value prof[t] for
// a cost t (leaves, or nodes), and the search looks for the smallest cost
// whose best total value reaches the need. A counted search also limits
// how many groups take a nonzero cost (a domain limit, or the fewest
// leaves of a GPU total). Tables live in preallocated arenas; every cell
// computed is charged to the decision's budget.

// unreachable marks a table cell no combination reaches.
const unreachable = -1

// searchScratch holds the search arenas and buffers.
type searchScratch struct {
	arena  []int32 // profiles and tables, used as a stack
	top    int
	picks  []int16 // per group and cell: the cost the group takes
	npicks int
	// units[ph] is the unit plan of phase ph being filled.
	units  [MaxSegmentLayers + 2][]unitAmount
	sorted []int32
	count  []int32
	refs   []leafRef
	profs  [][]int32
	leaves []unitAmount
	cands  []choice
	// settleGPUNodes' leaves, their excesses, a candidate set and the
	// children of the domain the greedy plan used.
	refsEx []excessRef
	excess []int32
	best   []excessRef
	keys   []excessKey
	kids   []int32
}

// unitAmount is a unit of a phase and what it takes: items (amount) and,
// from a search, the leaves (or nodes) it may use.
type unitAmount struct {
	unit   int32
	amount int32
	cost   int32
}

func (ss *searchScratch) init(ly *layout, budget int) {
	nd := ly.numDomains()
	ss.arena = make([]int32, 4*budget+16*nd)
	ss.picks = make([]int16, 2*budget)
	for i := range ss.units {
		ss.units[i] = make([]unitAmount, 0, nd)
	}
	ss.sorted = make([]int32, 0, nd)
	ss.count = make([]int32, 0, 4*nd+2)
	ss.refs = make([]leafRef, 0, nd)
	ss.profs = make([][]int32, 0, nd)
	ss.leaves = make([]unitAmount, 0, nd)
	ss.cands = make([]choice, 0, nd)
	nl := ly.count(ly.leaf)
	ss.refsEx = make([]excessRef, 0, nl)
	ss.excess = make([]int32, 0, nl*(ly.maxGPUs+1))
	ss.best = make([]excessRef, 0, nl)
	ss.keys = make([]excessKey, 0, nl)
	ss.kids = make([]int32, 0, nd)
}

// alloc takes n cells from the arena, or reports false when it is full.
func (ss *searchScratch) alloc(n int) ([]int32, bool) {
	if ss.top+n > len(ss.arena) {
		return nil, false
	}
	v := ss.arena[ss.top : ss.top+n : ss.top+n]
	ss.top += n
	return v, true
}

// table is one knapsack: best[c*(tmax+1)+t] is the largest value of the
// groups added so far with total cost t, c of them used (c is always 0
// when the search is not counted). With picks, pickAt(g, c, t) is the
// cost group g took in the best combination ending in (c, t).
type table struct {
	cmax, tmax int
	counted    bool
	best       []int32
	picks      []int16 // nil: no reconstruction
	groups     int
}

// newTable allocates a table from the arenas, charging its cells to the
// budget; it reports false when the budget or an arena runs out.
func (p *Placer) newTable(cmax, tmax int, counted, withPicks bool, maxGroups int) (table, bool) {
	sc := &p.sc
	ss := &sc.search
	cells := (cmax + 1) * (tmax + 1)
	t := table{cmax: cmax, tmax: tmax, counted: counted}
	best, ok := ss.alloc(cells)
	if !ok || !sc.spend(cells) {
		return t, false
	}
	for i := range best {
		best[i] = unreachable
	}
	best[0] = 0
	t.best = best
	if withPicks {
		if ss.npicks+cells*maxGroups > len(ss.picks) {
			return t, false
		}
		t.picks = ss.picks[ss.npicks : ss.npicks+cells*maxGroups]
		ss.npicks += cells * maxGroups
	}
	return t, true
}

// add combines one group with profile prof (prof[0] is 0) into the table,
// charging the work; it reports false when the budget runs out.
func (p *Placer) add(t *table, prof []int32) bool {
	width := t.tmax + 1
	cells := (t.cmax + 1) * width
	if !p.sc.spend(cells * len(prof)) {
		return false
	}
	var pick []int16
	if t.picks != nil {
		pick = t.picks[t.groups*cells : (t.groups+1)*cells]
		clear(pick)
	}
	dc := boolInt(t.counted)
	for c := t.cmax; c >= 0; c-- {
		from := c - dc
		if from < 0 {
			continue
		}
		for tt := t.tmax; tt >= 1; tt-- {
			p.relax(t, pick, prof, c, from, tt)
		}
	}
	t.groups++
	return true
}

// relax improves cell (c, tt) with the group taking a cost u >= 1 on top
// of cell (from, tt-u).
func (p *Placer) relax(t *table, pick []int16, prof []int32, c, from, tt int) {
	width := t.tmax + 1
	cur := &t.best[c*width+tt]
	for u := 1; u < len(prof) && u <= tt; u++ {
		base := t.best[from*width+tt-u]
		if base == unreachable {
			continue
		}
		if v := base + prof[u]; v > *cur {
			*cur = v
			if pick != nil {
				pick[c*width+tt] = int16(u)
			}
		}
	}
}

// cheapest returns the smallest cost t (and its count c) whose best value
// reaches need, or -1.
func (t *table) cheapest(need int) (c, cost int) {
	width := t.tmax + 1
	for tt := 0; tt <= t.tmax; tt++ {
		for c := 0; c <= t.cmax; c++ {
			if int(t.best[c*width+tt]) >= need {
				return c, tt
			}
		}
	}
	return -1, -1
}

// costOf walks the picks back from cell (c, cost) and returns the cost
// group g took, for every g, into costs.
func (t *table) costsOf(c, cost int, costs []int32) {
	width := t.tmax + 1
	cells := (t.cmax + 1) * width
	for g := t.groups - 1; g >= 0; g-- {
		u := int(t.picks[g*cells+c*width+cost])
		costs[g] = int32(u)
		if u > 0 {
			cost -= u
			c -= boolInt(t.counted)
		}
	}
}
