package placement

import (
	mathbits "math/bits"

	"github.com/phalanx-sched/phalanx/internal/bits"
)

// explain builds the Reason of a request the leaf-packing search could
// not place (the capacities are those of the failed search). The code is
// the first that applies: TooManyDomains when a placement exists without
// the domain limit, RequiredLevel, NoSegments, NoCapacity.
func (p *Placer) explain() Reason {
	if p.strategy != leafPack {
		return p.explainBlind()
	}
	pl := &p.sc.pl
	if p.sc.shortRoot && pl.required > 0 {
		// The Required level's capacities, which capacities skipped.
		p.sc.cover.capsChanged()
		p.levelCapacities(pl.required)
	}
	var r Reason
	switch {
	case pl.limit > 0 && p.fitsWithoutLimit():
		r = Reason{Code: TooManyDomains, Level: p.lay.levelName(pl.limitLvl), Need: pl.limit, Have: p.fewestLimitUnits()}
	case pl.required != rootLevel:
		ph := pl.firstPhase(pl.required)
		r = Reason{Code: RequiredLevel, Level: p.lay.levelName(pl.required), Need: pl.need(ph), Have: p.bestCap(pl.required, ph), unit: p.unitOf(ph)}
	default:
		ph := pl.firstPhase(rootLevel)
		r = Reason{Code: NoCapacity, Need: pl.need(ph), Have: p.phaseCap(ph, 0), unit: p.unitOf(ph)}
		if pl.nlayers > 0 {
			r.Code = NoSegments
		}
	}
	r.Excluded, r.allowedLabel = p.exclusions(), p.sc.req.AllowedLabel
	r.Unresolvable = p.unresolvable()
	if (r.Code == NoCapacity || r.Code == RequiredLevel) && !p.sc.masked && pl.nlayers == 0 && pl.limit == 0 {
		// The counts are the counters' (capacities, countedCandidates).
		r.counted, r.lvl, r.minFree = true, pl.required, p.sc.minFree
	}
	return r
}

// verdict remembers whether a request without Allowed or Excluded can
// ever fit the cluster: that depends on the request alone, and callers
// such as a scheduling loop ask again and again.
type verdict struct {
	ok    bool
	never bool
	key   plan
}

// unresolvable reports whether the request cannot fit even with every
// node up and idle, remembering the answer for requests without a mask.
func (p *Placer) unresolvable() bool {
	sc := &p.sc
	if sc.req.Allowed != nil || sc.req.Excluded != nil {
		if pl := &sc.pl; pl.required == rootLevel && pl.limit == 0 && pl.nlayers == 0 {
			// No topology constraint: the cluster's count decides.
			p.idealMask()
			return p.idealMaskedItems(0) < pl.need(0)
		}
		return !p.fitsIdealCluster()
	}
	pl := &sc.pl
	if p.reference {
		return !p.fitsIdealCluster()
	}
	if pl.nlayers == 0 && pl.limit == 0 {
		// Only the item count matters: the best domain of the Required
		// level of the ideal cluster, read from the layout.
		ly := p.lay
		if sc.minFree > ly.maxGPUs {
			return true
		}
		k := sc.minFree
		if pl.mode == modeGPUs {
			k = 0
		}
		return int(ly.idealBest[k*(ly.depth+1)+int(pl.required)+1]) < pl.need(0)
	}
	h := uint64(14695981039346656037)
	for _, x := range [...]int{pl.nodes, pl.gpus, pl.perNode, pl.limit, int(pl.required), pl.nlayers} {
		h = (h ^ uint64(x)) * 1099511628211
	}
	v := &sc.verdicts[(h^h>>32)%uint64(len(sc.verdicts))]
	if !v.ok || v.key != *pl {
		*v = verdict{ok: true, never: !p.fitsIdealCluster(), key: *pl}
	}
	return v.never
}

// explainBlind is explain for the topology-blind baselines, which fail
// only for want of candidates.
func (p *Placer) explainBlind() Reason {
	pl := &p.sc.pl
	r := Reason{Code: NoCapacity, unit: unitDesc{mode: pl.mode, g: pl.perNode, excl: pl.exclusive}}
	r.Need, r.Have = p.blindNeed(), p.blindCapacity()
	r.Excluded, r.allowedLabel = p.exclusions(), p.sc.req.AllowedLabel
	p.idealCapacities()
	r.Unresolvable = int(p.sc.capBase[0]) < r.Need
	return r
}

// unitOf describes the items of phase ph.
func (p *Placer) unitOf(ph int) unitDesc {
	pl := &p.sc.pl
	u := unitDesc{mode: pl.mode, g: pl.perNode, excl: pl.exclusive}
	if s := pl.phases[ph].seg; s >= 0 {
		u.seg, u.segName = pl.layers[s].size, p.lay.levelName(pl.layers[s].lvl)
	}
	return u
}

// bestCap returns the most items of phase ph any domain of level l holds.
func (p *Placer) bestCap(l level, ph int) int {
	best := 0
	for d := range p.lay.count(l) {
		best = max(best, p.phaseCap(ph, p.lay.id(l, d)))
	}
	return best
}

// fitsWithoutLimit reports whether some domain would hold the request if
// it had no domain limit.
func (p *Placer) fitsWithoutLimit() bool {
	pl := &p.sc.pl
	if pl.nlayers == 0 && !p.reference {
		// Every phase counts base items, and a domain holds at least what
		// each of its children holds: the Required level decides.
		return p.bestCap(pl.required, 0) >= pl.need(0)
	}
	limit := pl.limit
	pl.limit = 0
	ok := p.anyDomainHolds()
	pl.limit = limit
	return ok
}

// anyDomainHolds reports whether a domain of a level at or below the
// Required one holds the request, on the current capacities.
func (p *Placer) anyDomainHolds() bool {
	ly, pl := p.lay, &p.sc.pl
	for l := ly.leaf; l >= pl.required; l-- {
		ph := pl.firstPhase(l)
		for d := range ly.count(l) {
			if p.holdsLimited(ly.id(l, d), ph, pl.need(ph)) {
				return true
			}
		}
	}
	return false
}

// holdsLimited is holds, with the domain limit applied only when set.
func (p *Placer) holdsLimited(x, ph, need int) bool {
	if p.sc.pl.limit == 0 {
		return p.phaseCap(ph, x) >= need
	}
	return p.holds(x, ph, need)
}

// fewestLimitUnits returns the fewest domains of the limited level that
// any placement spans: inside the best domain of the Required level (or
// the cluster), the largest such domains first.
func (p *Placer) fewestLimitUnits() int {
	ly, pl := p.lay, &p.sc.pl
	best := 0
	need := pl.need(0)
	for d := range ly.count(pl.required) {
		x := ly.id(pl.required, d)
		if p.phaseCap(0, x) < need {
			continue
		}
		uf, ue := ly.descendants(x, pl.limitLvl)
		v := p.sc.search.sorted[:0]
		for u := uf; u < ue; u++ {
			v = append(v, int32(p.phaseCap(0, u)))
		}
		if n := coverCount(v, need, &p.sc.search.count); best == 0 || n < best {
			best = n
		}
	}
	return best
}

// exclusions counts the nodes that were not candidates, by reason.
func (p *Placer) exclusions() Exclusions {
	sc, ly := &p.sc, p.lay
	s := sc.s
	e := Exclusions{Down: s.DownNodes(), Drained: s.DrainedNodes()}
	if !sc.masked && !p.reference {
		// No node sets, and counters that count the candidates: the
		// schedulable nodes less the candidates, with no node visited.
		e.ShortOfGPUs = ly.numNodes - e.Down - e.Drained - p.countedCandidates()
		return e
	}
	if sc.minFree <= ly.maxGPUs {
		p.candidates()
	} else {
		clear(sc.cand)
	}
	sched := sc.w.AvailWords(0)
	var allowed, excluded []uint64
	if a := sc.req.Allowed; a != nil {
		allowed = a.Words()
	}
	if x := sc.req.Excluded; x != nil {
		excluded = x.Words()
	}
	for w, m := range sched {
		in := m
		if allowed != nil {
			in &= wordAt(allowed, w)
		}
		e.OutsideAllowed += mathbits.OnesCount64(m &^ in)
		out := in & wordAt(excluded, w)
		e.InExcluded += mathbits.OnesCount64(out)
		e.ShortOfGPUs += mathbits.OnesCount64(in&^out) - mathbits.OnesCount64(sc.cand[w])
	}
	return e
}

// countedCandidates returns the number of candidates of a request without
// node sets, from the state's counters of the top level's domains.
func (p *Placer) countedCandidates() int {
	sc, ly := &p.sc, p.lay
	if sc.minFree > ly.maxGPUs {
		return 0
	}
	n := 0
	if sc.pl.exclusive {
		// Uniform sizes (countable): every idle node is large enough.
		for _, c := range sc.s.LevelIdleNodes(0) {
			n += int(c)
		}
		return n
	}
	avail, stride := sc.s.LevelAvail(0), ly.maxGPUs+1
	for d := range ly.count(0) {
		n += int(avail[d*stride+sc.minFree])
	}
	return n
}

func wordAt(v []uint64, w int) uint64 {
	if w < len(v) {
		return v[w]
	}
	return 0
}

// fitsIdealCluster reports whether the request would fit with every node
// up and every GPU free.
func (p *Placer) fitsIdealCluster() bool {
	p.idealCapacities()
	if pl := &p.sc.pl; pl.nlayers == 0 && !p.reference {
		// Holding is inherited upwards (a placement inside a domain is
		// inside its parent, on the same limited domains): the Required
		// level decides.
		ph := pl.firstPhase(pl.required)
		for d := range p.lay.count(pl.required) {
			if p.holdsLimited(p.lay.id(pl.required, d), ph, pl.need(ph)) {
				return true
			}
		}
		return false
	}
	return p.anyDomainHolds()
}

// idealCapacities sets the capacities of the cluster with every node up
// and idle (Allowed and Excluded still applying).
func (p *Placer) idealCapacities() {
	sc, ly := &p.sc, p.lay
	sc.cover.capsChanged()
	masked := sc.req.Allowed != nil || sc.req.Excluded != nil || p.reference
	if masked {
		p.idealMask() // all nodes when no set is given (reference)
	}
	switch {
	case !masked && sc.minFree > ly.maxGPUs:
		clear(sc.capBase)
	case !masked:
		k, n := sc.minFree, ly.numDomains()
		if sc.pl.mode == modeGPUs {
			k = 0
		}
		copy(sc.capBase, ly.idealCaps[k*n:(k+1)*n])
	default:
		for d := range ly.count(ly.leaf) {
			x := ly.leafID(d)
			sc.capBase[x] = int32(p.idealMaskedItems(x))
		}
		p.lay.sumUp(sc.capBase, ly.leaf)
	}
	p.segmentCapacities()
}

// idealMaskedItems returns the base items leaf x holds with every node
// up and idle, within the mask in sc.tmp: its nodes large enough, or their
// GPUs.
func (p *Placer) idealMaskedItems(x int) int {
	sc, ly := &p.sc, p.lay
	f, e := int(ly.nodeFirst[x]), int(ly.nodeEnd[x])
	switch {
	case sc.minFree > ly.maxGPUs:
		return 0
	case sc.pl.mode == modeNodes:
		return bits.AndCount(sc.tmp, ly.sizeWords(sc.minFree), f, e)
	case ly.uniform:
		return ly.maxGPUs * bits.Count(sc.tmp, f, e)
	}
	n := 0
	for k := 1; k <= ly.maxGPUs; k++ {
		n += bits.AndCount(sc.tmp, ly.sizeWords(k), f, e) // a node of size s counts once per k <= s
	}
	return n
}

// idealMask puts Allowed minus Excluded into sc.tmp.
func (p *Placer) idealMask() {
	sc := &p.sc
	for w := range sc.tmp {
		m := ^uint64(0)
		if a := sc.req.Allowed; a != nil {
			m = wordAt(a.Words(), w)
		}
		if x := sc.req.Excluded; x != nil {
			m &^= wordAt(x.Words(), w)
		}
		sc.tmp[w] = m
	}
}
