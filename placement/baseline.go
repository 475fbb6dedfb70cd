package placement

import (
	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology"
)

// Strategy selects how a Placer chooses nodes.
type Strategy uint8

const (
	// LeafPack is Phalanx's topology-aware placement (the default).
	LeafPack Strategy = iota
	// FirstFit is a topology-blind baseline: the first candidate nodes in
	// node order. It honours the request's shape, Exclusive, Allowed and
	// Excluded, and ignores every topology constraint.
	FirstFit
	// Random is a topology-blind baseline: candidate nodes drawn uniformly
	// from a source seeded by Options.Seed. Same honours and omissions as
	// FirstFit.
	Random
)

var strategyNames = [...]string{"leaf-pack", "first-fit", "random"}

// String returns "leaf-pack", "first-fit" or "random".
func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return "unknown"
}

// ParseStrategy returns the strategy named by String.
func ParseStrategy(name string) (Strategy, bool) {
	for i, n := range strategyNames {
		if n == name {
			return Strategy(i), true
		}
	}
	return 0, false
}

// placeBlind runs the FirstFit or Random baseline on the candidates.
func (p *Placer) placeBlind() bool {
	sc := &p.sc
	sc.minFree = 1
	if sc.pl.mode == modeNodes {
		sc.minFree = max(sc.pl.perNode, 1)
	}
	if sc.minFree > p.lay.maxGPUs {
		return false
	}
	p.candidates()
	if p.blindCapacity() < p.blindNeed() {
		return false
	}
	order := p.blindOrder()
	rest := p.blindNeed()
	for k := 0; rest > 0; k++ {
		n := p.blindNext(order, k)
		g := sc.pl.perNode
		switch {
		case sc.pl.exclusive:
			g = sc.s.FreeCount(topology.NodeID(n))
		case sc.pl.mode == modeGPUs:
			g = min(sc.s.FreeCount(topology.NodeID(n)), rest)
		}
		sc.out = append(sc.out, topology.NodeAlloc{Node: topology.NodeID(n), GPUs: p.pickGPUs(n, g)})
		if sc.pl.mode == modeGPUs {
			rest -= min(sc.s.FreeCount(topology.NodeID(n)), rest)
		} else {
			rest--
		}
	}
	return true
}

// blindNeed returns the nodes (or GPUs) a baseline must find.
func (p *Placer) blindNeed() int {
	if p.sc.pl.mode == modeGPUs {
		return p.sc.pl.gpus
	}
	return p.sc.pl.nodes
}

// blindCapacity returns the candidate nodes (or their GPUs).
func (p *Placer) blindCapacity() int {
	sc, ly := &p.sc, p.lay
	if sc.minFree > ly.maxGPUs {
		return 0
	}
	if sc.pl.mode == modeNodes {
		return bits.Count(sc.cand, 0, ly.numNodes)
	}
	total := 0
	for k := 1; k <= ly.maxGPUs; k++ {
		if sc.pl.exclusive {
			total += bits.AndCount(ly.sizeWords(k), sc.cand, 0, ly.numNodes)
		} else {
			total += bits.AndCount(sc.s.AvailWords(k), sc.cand, 0, ly.numNodes)
		}
	}
	return total
}

// blindOrder returns the Random strategy's shuffled candidates (a partial
// Fisher-Yates shuffle: only the first picks are drawn), or nil for
// FirstFit.
func (p *Placer) blindOrder() []int32 {
	if p.opts.Strategy != Random {
		return nil
	}
	sc, ly := &p.sc, p.lay
	order := p.order[:0]
	for n := bits.Next(sc.cand, 0, ly.numNodes); n >= 0; n = bits.Next(sc.cand, n+1, ly.numNodes) {
		order = append(order, int32(n))
	}
	picks := len(order)
	if sc.pl.mode == modeNodes {
		picks = min(picks, sc.pl.nodes)
	}
	for i := 0; i < picks; i++ {
		j := i + p.rng.IntN(len(order)-i)
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// blindNext returns the k-th node of the baseline's order.
func (p *Placer) blindNext(order []int32, k int) int {
	if order != nil {
		return int(order[k])
	}
	// FirstFit: the k-th candidate; candidates are taken in order, so
	// continue from the last one.
	sc := &p.sc
	from := 0
	if len(sc.out) > 0 {
		from = int(sc.out[len(sc.out)-1].Node) + 1
	}
	return bits.Next(sc.cand, from, p.lay.numNodes)
}
