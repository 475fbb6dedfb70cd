package preempt

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// A scope is a topology domain the preemptor could sit in (or the whole
// cluster). The scope stage splits each scope's victims into units, the
// steps of a greedy, and orders them cheapest first:
//
//   - node mode (a single member asking for Nodes): a unit is one node
//     that does not have the GPUs a pod needs, with the pool's gangs on it
//     whose release gives it them, cheapest per GPU first; its cost is
//     the least cost of freeing those GPUs with each gang's cost spread
//     over its GPUs.
//   - GPU mode (GPU totals, several members): a unit is one gang, costed
//     per GPU it frees in the scope.
//
// Summing the cheapest units that cover the scope's deficit (pods without
// a node, or GPUs) gives a lower bound of the cost of any victim set that
// makes room in the scope. Scopes are evaluated by increasing bound until
// the bound exceeds the best cost found or the budget runs out.

// unit is one greedy step inside one scope.
type unit struct {
	cost       float64 // ordering cost (per GPU in GPU mode)
	bound      float64 // its cost in the bound
	amount     int32   // GPUs (GPU mode) or 1 node it frees in the scope
	first, end int32   // its victims in scopeScratch.uv
	scope      int32
	tie        int32 // candidate (GPU mode) or node: the last tie-breaker
}

// scope is one evaluated scope: its bound and its units in s.sc.sorted.
type scope struct {
	lb         float64
	level, dom int32 // level -1: the whole cluster
	start, end int32
	sorted     int32 // units[start:start+sorted] are the cheapest, in order
	have       int32 // node mode: nodes that already have the GPUs a pod needs
}

// occ is one candidate's GPUs on one node (node mode).
type occ struct {
	node, cand, gpus int32
}

type scopeScratch struct {
	base    []int32 // per level: first scope id; base[depth]: the whole cluster
	acc     []int32 // per domain of one level: GPUs of the current candidate
	touched []int32
	units   []unit
	sorted  []unit
	uv      []int32 // victims of units
	start   []int32 // per scope id: count, then end of its units (counting sort)
	scopes  []scope
	levels  []int
	// Node mode.
	nodeMode  bool
	segCount  []int32 // per domain of the segment level: nodes counted
	segTotal  int     // whole segments counted
	occ       []occ
	occSorted []occ
	nodeStart []int32 // per node: first entry in occSorted
	sat       []bool  // per node: already has the GPUs a pod needs
	order     []int32 // nodes that can be freed, cheapest first
	nodeCost  []float64
	nodeFirst []int32
	nodeEnd   []int32
}

func (sc *scopeScratch) init(c *topology.Cluster) {
	sc.base = make([]int32, c.Depth()+1)
	total, widest := 0, 1
	for l := range c.Depth() {
		sc.base[l] = int32(total)
		total += c.NumDomains(l)
		widest = max(widest, c.NumDomains(l))
	}
	sc.base[c.Depth()] = int32(total)
	sc.acc = make([]int32, widest)
	sc.segCount = make([]int32, widest)
	sc.start = make([]int32, total+2)
	sc.levels = make([]int, 0, c.Depth()+1)
	n := c.NumNodes()
	sc.nodeStart = make([]int32, n+1)
	sc.sat = make([]bool, n)
	sc.nodeCost = make([]float64, n)
	sc.nodeFirst = make([]int32, n)
	sc.nodeEnd = make([]int32, n)
}

// scopeLevels lists the levels whose domains are scopes: the level the
// whole gang must sit in, or else the lead member's required level, or
// else every level from the deepest whose largest domain has the GPUs up
// to the top, and the whole cluster when the top level has several
// domains.
func (s *Searcher) scopeLevels() []int {
	lv := s.sc.levels[:0]
	switch {
	case s.reqLevel >= 0:
		return append(lv, s.reqLevel)
	case s.lead >= 0 && s.podLevel >= 0:
		return append(lv, s.podLevel)
	}
	for l := s.c.Depth() - 1; l >= 0; l-- {
		if s.levelGPUs[l] >= s.need {
			lv = append(lv, l)
		}
	}
	if s.c.Depth() == 0 || s.c.NumDomains(0) > 1 {
		lv = append(lv, -1)
	}
	return lv
}

func (s *Searcher) scopeID(l, d int) int32 {
	if l < 0 {
		return s.sc.base[s.c.Depth()]
	}
	return s.sc.base[l] + int32(d)
}

// setMode chooses node mode when the preemptor has a lead member asking
// for nodes, unless gpuMode is set.
func (s *Searcher) setMode(gpuMode bool) {
	s.sc.nodeMode = !gpuMode && s.lead >= 0
}

// buildScopes builds the units of every scope level, groups them by
// scope, orders each scope's units and computes its bound.
func (s *Searcher) buildScopes(gpuMode bool) {
	sc := &s.sc
	sc.units, sc.uv = sc.units[:0], sc.uv[:0]
	sc.levels = s.scopeLevels()
	s.setMode(gpuMode)
	if sc.nodeMode {
		s.nodeUnits()
	} else {
		for _, l := range sc.levels {
			for _, v := range s.elig[:s.pool] {
				s.gpuUnits(l, v)
			}
		}
	}
	s.groupUnits()
	sc.scopes = sc.scopes[:0]
	for _, l := range sc.levels {
		n := 1
		if l >= 0 {
			n = s.c.NumDomains(l)
		}
		for d := range n {
			s.addScope(l, d)
		}
	}
	slices.SortFunc(sc.scopes, func(a, b scope) int {
		if c := cmp.Compare(a.lb, b.lb); c != 0 {
			return c
		}
		if c := cmp.Compare(b.level, a.level); c != 0 {
			return c
		}
		return cmp.Compare(a.dom, b.dom)
	})
}

// groupUnits sorts the units by scope, keeping their order within a scope
// (a counting sort); afterwards start[id] is the end of scope id's units.
func (s *Searcher) groupUnits() {
	sc := &s.sc
	clear(sc.start)
	for _, u := range sc.units {
		sc.start[u.scope+1]++
	}
	for i := 1; i < len(sc.start); i++ {
		sc.start[i] += sc.start[i-1]
	}
	sc.sorted = slices.Grow(sc.sorted[:0], len(sc.units))[:len(sc.units)]
	for _, u := range sc.units {
		sc.sorted[sc.start[u.scope]] = u
		sc.start[u.scope]++
	}
}

// gpuUnits appends candidate v's units at level l (GPU mode): one per
// domain it holds schedulable GPUs in.
func (s *Searcher) gpuUnits(l int, v int32) {
	sc := &s.sc
	c := &s.cands[v]
	add := func(d int, g int32) {
		sc.units = append(sc.units, unit{
			cost: float64(c.Cost) / float64(g), bound: float64(c.Cost), amount: g,
			first: int32(len(sc.uv)), end: int32(len(sc.uv) + 1), scope: s.scopeID(l, d), tie: v,
		})
		sc.uv = append(sc.uv, v)
	}
	if l < 0 {
		if g := s.gpus[v]; g > 0 {
			add(0, g)
		}
		return
	}
	sc.touched = sc.touched[:0]
	for _, e := range s.live(v) {
		if !s.st.Schedulable(e.Node) {
			continue
		}
		d := s.c.NodeDomain(e.Node, l)
		if sc.acc[d] == 0 {
			sc.touched = append(sc.touched, int32(d))
		}
		sc.acc[d] += int32(bits.OnesCount64(e.GPUs))
	}
	for _, d := range sc.touched {
		g := sc.acc[d]
		sc.acc[d] = 0
		add(int(d), g)
	}
}

// addScope computes the bound of scope (l, d) and keeps the scope when
// its victims could make room in it.
func (s *Searcher) addScope(l, d int) {
	sc := &s.sc
	id := s.scopeID(l, d)
	start := int32(0)
	if id > 0 {
		start = sc.start[id-1]
	}
	end := sc.start[id]
	if start == end {
		return
	}
	var deficit int
	var have int32
	if sc.nodeMode {
		have = s.satIn(l, d)
		deficit = s.pods - int(have)
	} else {
		free := s.st.FreeGPUs()
		if l >= 0 {
			free = s.st.DomainFreeGPUs(l, d)
		}
		deficit = s.need - free
	}
	units := sc.sorted[start:end]
	if sc.nodeMode {
		// Each unit frees one node: the bound sums the deficit cheapest,
		// found by a selection; the units are sorted when evaluated.
		if deficit > len(units) {
			return
		}
		lb := 0.0
		if deficit > 0 {
			if deficit < len(units) {
				selectSmallest(units, deficit)
			}
			for _, u := range units[:deficit] {
				lb += u.bound
			}
		}
		sc.scopes = append(sc.scopes, scope{lb: lb, level: int32(l), dom: int32(d), start: start, end: end, have: have})
		return
	}
	sorted := 0
	for want := 16; ; want *= 4 {
		sorted = sortPrefix(units, sorted, want)
		if lb, ok := lowerBound(units[:sorted], deficit); ok {
			sc.scopes = append(sc.scopes, scope{lb: lb, level: int32(l), dom: int32(d), start: start, end: end, sorted: int32(sorted)})
			return
		}
		if sorted == len(units) {
			return
		}
	}
}

// lowerBound is the fractional-knapsack bound: the least cost of covering
// deficit from units ordered by cost per amount, taking a fraction of the
// last one. It reports false when all units together cover too little.
func lowerBound(units []unit, deficit int) (float64, bool) {
	lb := 0.0
	for _, u := range units {
		if deficit <= 0 {
			break
		}
		a := int(u.amount)
		if a >= deficit {
			return lb + u.bound*float64(deficit)/float64(a), true
		}
		lb += u.bound
		deficit -= a
	}
	return lb, deficit <= 0
}

// searchScopes evaluates the scopes by increasing bound while the budget
// lasts, the bound does not exceed the best cost found and one of the last
// scopePatience scopes improved the best set. When node mode
// finds no set (a pod's node is not all admission checks: a required
// co-location also counts the domain's free GPUs), GPU mode runs too.
func (s *Searcher) searchScopes() {
	s.scopePass(false)
	if !s.best.ok && s.sc.nodeMode {
		s.scopePass(true)
	}
}

func (s *Searcher) scopePass(gpuMode bool) {
	if s.budget <= 0 {
		return
	}
	s.buildScopes(gpuMode)
	stale := 0
	for k := range s.sc.scopes {
		sc := &s.sc.scopes[k]
		if s.budget <= 0 || s.best.ok && sc.lb-0.5 > float64(s.best.key.cost) || stale == scopePatience {
			return
		}
		before := s.best.key
		had := s.best.ok
		s.evalScope(sc)
		if had && !s.best.key.less(before) {
			stale++
		} else {
			stale = 0
		}
	}
}

// scopePatience is how many scopes in a row may be evaluated without
// improving the best set before the scope stage stops (the bound prunes
// the rest only when it is tight).
const scopePatience = 8

// evalScope runs the greedy inside one scope, then keeps only the
// victims the placement it found overlaps and considers them (and the
// whole greedy prefix when those alone do not make room).
func (s *Searcher) evalScope(sc *scope) {
	if !s.greedyPrefix(sc, s.scopeSpec(sc)) {
		return
	}
	s.markAlloc(&s.trial)
	s.trim = s.trim[:0]
	for _, v := range s.cur {
		if s.overlaps(v) {
			s.trim = append(s.trim, v)
		}
	}
	s.unmarkAlloc(&s.trial)
	if !s.consider(s.trim) && len(s.trim) < len(s.cur) {
		s.consider(s.cur)
	}
}

// greedyPrefix releases the scope's units in order (their victims into
// s.cur) until the scope could hold the preemptor, then tries g (the
// preemptor restricted to the scope), releasing 1, 2, 4... more units
// after each failure. It reports whether g fitted; its placement is then
// in s.trial.
func (s *Searcher) greedyPrefix(sc *scope, g *gang.Spec) bool {
	s.mustApply(nil)
	s.segStart(sc)
	defer s.segEnd(sc)
	units := s.sc.sorted[sc.start:sc.end]
	s.cur = s.cur[:0]
	i := 0
	for ; i < len(units) && !s.unitBound(sc, i); i++ {
		s.releaseUnit(s.unitAt(sc, i))
	}
	for step := 1; ; step *= 2 {
		if s.unitBound(sc, i) {
			if !s.spend() {
				return false
			}
			if s.admit(g) {
				return true
			}
		}
		if i == len(units) {
			return false
		}
		for k := 0; k < step && i < len(units); k++ {
			s.releaseUnit(s.unitAt(sc, i))
			i++
		}
	}
}

// unitAt returns the scope's i-th cheapest unit, extending its sorted
// prefix when needed.
func (s *Searcher) unitAt(sc *scope, i int) *unit {
	units := s.sc.sorted[sc.start:sc.end]
	if i >= int(sc.sorted) {
		sc.sorted = int32(sortPrefix(units, int(sc.sorted), 2*i+16))
	}
	return &units[i]
}

// releaseUnit releases the unit's victims not released yet.
func (s *Searcher) releaseUnit(u *unit) {
	for _, v := range s.sc.uv[u.first:u.end] {
		if !s.rel[v] {
			s.cur = append(s.cur, v)
			s.mustRelease(v)
		}
	}
	if s.segmented() {
		s.segAdd(int(u.tie))
	}
}

// unitBound reports whether the scope could hold the preemptor once its
// first done units are released: enough nodes (node mode) or GPUs.
func (s *Searcher) unitBound(sc *scope, done int) bool {
	if s.sc.nodeMode {
		return int(sc.have)+done >= s.pods && s.segmentsOK()
	}
	if sc.level < 0 {
		return s.ws.FreeGPUs() >= s.need
	}
	return s.ws.DomainFreeGPUs(int(sc.level), int(sc.dom)) >= s.need
}

// scopeSpec returns the preemptor restricted to the scope's nodes (its
// own spec for the whole cluster): every member, or in node mode without
// a level for the whole gang only the lead member.
func (s *Searcher) scopeSpec(sc *scope) *gang.Spec {
	g := s.req.Gang
	if sc.level < 0 {
		return g
	}
	s.rspec.ID, s.rspec.Colocate = g.ID, g.Colocate
	s.rspec.Members = append(s.rspec.Members[:0], g.Members...)
	for len(s.allow) < len(g.Members) {
		s.allow = append(s.allow, s.c.NewNodeSet())
	}
	for m := range s.rspec.Members {
		if s.sc.nodeMode && s.reqLevel < 0 && m != s.lead {
			continue
		}
		b := s.c.DomainNodes(int(sc.level), int(sc.dom), s.allow[m])
		if orig := g.Members[m].Request.Allowed; orig != nil {
			b.InPlaceIntersection(orig)
		}
		s.rspec.Members[m].Request.Allowed = b
	}
	return &s.rspec
}
