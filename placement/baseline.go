package placement

import (
	"fmt"
	"math/rand/v2"

	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology"
)

// strategy selects how a Placer chooses nodes: leafPack in production;
// the topology-blind baselines exist for comparisons, chosen through
// internal/baseline (access.SetPlacerStrategy).
type strategy uint8

const (
	// leafPack is Phalanx's topology-aware placement (the default).
	leafPack strategy = iota
	// firstFit takes the first candidate nodes in node order. It honours
	// the request's shape, Exclusive, Allowed and Excluded, and ignores
	// every topology constraint.
	firstFit
	// random draws candidate nodes uniformly from a seeded source; same
	// honours and omissions as firstFit.
	random
)

// setStrategy switches p to strategy st, seeding random's source.
func (p *Placer) setStrategy(st strategy, seed uint64) {
	if st > random {
		panic(fmt.Sprintf("placement: unknown strategy %d", st))
	}
	p.strategy, p.rng, p.order = st, nil, nil
	if st == random {
		p.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		p.order = make([]int32, 0, p.lay.numNodes)
	}
}

func init() {
	access.SetPlacerStrategy = func(x any, st uint8, seed uint64) { x.(*Placer).setStrategy(strategy(st), seed) }
}

// placeBlind runs the firstFit or random baseline on the candidates.
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
			total += bits.AndCount(sc.w.AvailWords(k), sc.cand, 0, ly.numNodes)
		}
	}
	return total
}

// blindOrder returns the random strategy's shuffled candidates (a partial
// Fisher-Yates shuffle: only the first picks are drawn), or nil for
// firstFit.
func (p *Placer) blindOrder() []int32 {
	if p.strategy != random {
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
	// firstFit: the k-th candidate; candidates are taken in order, so
	// continue from the last one.
	sc := &p.sc
	from := 0
	if len(sc.out) > 0 {
		from = int(sc.out[len(sc.out)-1].Node) + 1
	}
	return bits.Next(sc.cand, from, p.lay.numNodes)
}
