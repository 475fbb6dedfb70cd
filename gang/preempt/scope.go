package preempt

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// A scope is a topology domain the preemptor could sit in (or the whole
// cluster). The scope stage builds, per scope, the pool's candidates that
// hold GPUs in it, cheapest per GPU first, and a lower bound of the cost
// of any victim set that makes room there; it then evaluates the scopes in
// order of that bound until the bound exceeds the best cost found or the
// budget runs out.

// item is one candidate's share of one scope.
type item struct {
	eff   float64 // cost per GPU it frees in the scope
	cost  int64
	cand  int32
	gpus  int32 // GPUs it frees in the scope (on schedulable nodes)
	scope int32
}

// scope is one evaluated scope: its bound and its items in s.sc.sorted.
type scope struct {
	lb         float64
	level, dom int32 // level -1: the whole cluster
	start, end int32
}

type scopeScratch struct {
	base    []int32 // per level: first scope id; base[depth]: the whole cluster
	acc     []int32 // per domain of one level: GPUs of the current candidate
	touched []int32
	items   []item
	sorted  []item
	start   []int32 // per scope id: count, then first item (counting sort)
	scopes  []scope
	levels  []int
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
	sc.start = make([]int32, total+2)
	sc.levels = make([]int, 0, c.Depth()+1)
}

// scopeLevels lists the levels whose domains are scopes: the required
// level alone; otherwise every level from the deepest whose largest
// domain has the GPUs up to the top, and the whole cluster when the top
// level has several domains.
func (s *Searcher) scopeLevels() []int {
	lv := s.sc.levels[:0]
	if s.reqLevel >= 0 {
		return append(lv, s.reqLevel)
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

// addItems appends candidate v's items at level l.
func (s *Searcher) addItems(l int, v int32) {
	sc := &s.sc
	c := &s.cands[v]
	if l < 0 {
		if g := s.gpus[v]; g > 0 {
			sc.items = append(sc.items, item{eff: float64(c.Cost) / float64(g), cost: c.Cost, cand: v, gpus: g, scope: s.scopeID(-1, 0)})
		}
		return
	}
	sc.touched = sc.touched[:0]
	for m := range c.Alloc.Members {
		for _, e := range c.Alloc.Members[m].Assignment {
			if !s.st.Schedulable(int(e.Node)) {
				continue
			}
			d := s.c.NodeDomain(int(e.Node), l)
			if sc.acc[d] == 0 {
				sc.touched = append(sc.touched, int32(d))
			}
			sc.acc[d] += int32(bits.OnesCount64(e.GPUs))
		}
	}
	for _, d := range sc.touched {
		g := sc.acc[d]
		sc.acc[d] = 0
		sc.items = append(sc.items, item{eff: float64(c.Cost) / float64(g), cost: c.Cost, cand: v, gpus: g, scope: s.scopeID(l, int(d))})
	}
}

// buildScopes collects the items of every scope level, groups them by
// scope, orders each scope's items and computes its bound.
func (s *Searcher) buildScopes() {
	sc := &s.sc
	sc.items = sc.items[:0]
	sc.levels = s.scopeLevels()
	for _, l := range sc.levels {
		for _, v := range s.elig[:s.pool] {
			s.addItems(l, v)
		}
	}
	// Counting sort by scope id.
	clear(sc.start)
	for _, it := range sc.items {
		sc.start[it.scope+1]++
	}
	for i := 1; i < len(sc.start); i++ {
		sc.start[i] += sc.start[i-1]
	}
	sc.sorted = slices.Grow(sc.sorted[:0], len(sc.items))[:len(sc.items)]
	for _, it := range sc.items {
		sc.sorted[sc.start[it.scope]] = it
		sc.start[it.scope]++
	}
	// start[id] is now the end of scope id's items.
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

// addScope orders the items of scope (l, d) and keeps the scope when its
// victims could make room in it.
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
	items := sc.sorted[start:end]
	slices.SortFunc(items, func(a, b item) int {
		if c := cmp.Compare(a.eff, b.eff); c != 0 {
			return c
		}
		if c := cmp.Compare(a.cost, b.cost); c != 0 {
			return c
		}
		return cmp.Compare(a.cand, b.cand)
	})
	free := s.st.FreeGPUs()
	if l >= 0 {
		free = s.st.DomainFreeGPUs(l, d)
	}
	lb, ok := lowerBound(items, s.need-free)
	if ok {
		sc.scopes = append(sc.scopes, scope{lb: lb, level: int32(l), dom: int32(d), start: start, end: end})
	}
}

// lowerBound is the fractional-knapsack bound: the least cost of freeing
// deficit GPUs from items ordered by cost per GPU, taking a fraction of
// the last one. No victim set that makes room in the scope costs less. It
// reports false when all items together free too little.
func lowerBound(items []item, deficit int) (float64, bool) {
	lb := 0.0
	for _, it := range items {
		if deficit <= 0 {
			break
		}
		g := int(it.gpus)
		if g >= deficit {
			return lb + float64(it.cost)*float64(deficit)/float64(g), true
		}
		lb += float64(it.cost)
		deficit -= g
	}
	return lb, deficit <= 0
}

// searchScopes evaluates the scopes by increasing bound while the budget
// lasts and the bound does not exceed the best cost found.
func (s *Searcher) searchScopes() {
	if s.budget <= 0 {
		return
	}
	s.buildScopes()
	for k := range s.sc.scopes {
		sc := &s.sc.scopes[k]
		if s.budget <= 0 || s.best.ok && sc.lb-0.5 > float64(s.best.key.cost) {
			return
		}
		s.evalScope(sc)
	}
}

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

// greedyPrefix releases the scope's items in order into s.cur until the
// scope has the GPUs, then tries g (the preemptor restricted to the
// scope), releasing 1, 2, 4... more items after each failure. It reports
// whether g fitted; its placement is then in s.trial.
func (s *Searcher) greedyPrefix(sc *scope, g *gang.Spec) bool {
	s.mustApply(nil)
	items := s.sc.sorted[sc.start:sc.end]
	s.cur = s.cur[:0]
	i := 0
	for ; i < len(items) && !s.scopeBound(sc); i++ {
		s.cur = append(s.cur, items[i].cand)
		s.mustRelease(items[i].cand)
	}
	for step := 1; ; step *= 2 {
		if s.scopeBound(sc) {
			if !s.spend() {
				return false
			}
			if s.admit(g) {
				return true
			}
		}
		if i == len(items) {
			return false
		}
		for k := 0; k < step && i < len(items); k++ {
			s.cur = append(s.cur, items[i].cand)
			s.mustRelease(items[i].cand)
			i++
		}
	}
}

// scopeBound reports whether the scope has at least the GPUs the
// preemptor needs on the work state.
func (s *Searcher) scopeBound(sc *scope) bool {
	if sc.level < 0 {
		return s.ws.FreeGPUs() >= s.need
	}
	return s.ws.DomainFreeGPUs(int(sc.level), int(sc.dom)) >= s.need
}

// scopeSpec returns the preemptor restricted to the scope's nodes (its
// own spec for the whole cluster).
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
		b := s.c.DomainNodes(int(sc.level), int(sc.dom), s.allow[m])
		if orig := g.Members[m].Request.Allowed; orig != nil {
			b.InPlaceIntersection(orig)
		}
		s.rspec.Members[m].Request.Allowed = b
	}
	return &s.rspec
}
