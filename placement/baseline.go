package placement

import (
	"math/rand/v2"

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
	// from a source seeded by SetStrategy. Same honours and omissions as
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

// SetStrategy makes the Placer use strategy st from now on; seed seeds
// the Random strategy (the same seed gives the same choices).
func (p *Placer) SetStrategy(st Strategy, seed uint64) {
	p.strategy = st
	if st == Random {
		p.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		if p.order == nil {
			p.order = make([]int32, 0, p.n)
		}
	}
}

// Strategy returns the Placer's strategy.
func (p *Placer) Strategy() Strategy { return p.strategy }

// placeBlind runs the FirstFit or Random baseline on p.cand.
func (p *Placer) placeBlind() bool {
	pl := &p.pl
	var order []int32
	if p.strategy == Random {
		order = p.order[:0]
		for n := bits.Next(p.cand, 0, p.n); n >= 0; n = bits.Next(p.cand, n+1, p.n) {
			order = append(order, int32(n))
		}
		// A partial Fisher-Yates shuffle: only the first picks are drawn.
		picks := len(order)
		if pl.mode == modeNodes {
			picks = min(picks, pl.nodes)
		}
		for i := 0; i < picks; i++ {
			j := i + p.rng.IntN(len(order)-i)
			order[i], order[j] = order[j], order[i]
		}
	}
	next := func(k int, prev int) int {
		if order != nil {
			if k < len(order) {
				return int(order[k])
			}
			return -1
		}
		return bits.Next(p.cand, prev+1, p.n)
	}
	if pl.mode == modeGPUs {
		// Check the capacity first, so that a failure changes nothing.
		total := 0
		for k := 1; k <= p.maxG; k++ {
			total += bits.AndCount(p.s.AvailWords(k), p.cand, 0, p.n)
		}
		if total < pl.need {
			return false
		}
		rest := pl.need
		for k, n := 0, next(0, -1); n >= 0 && rest > 0; k++ {
			f := p.s.FreeCount(n)
			take := min(f, rest)
			p.out = append(p.out, topology.NodeAlloc{Node: int32(n), GPUs: p.pickGPUs(n, take)})
			rest -= take
			n = next(k+1, n)
		}
		return true
	}
	if bits.Count(p.cand, 0, p.n) < pl.nodes {
		return false
	}
	for k, n := 0, next(0, -1); k < pl.nodes; k++ {
		p.out = append(p.out, topology.NodeAlloc{Node: int32(n), GPUs: p.pickGPUs(n, pl.g)})
		n = next(k+1, n)
	}
	return true
}

// blindFailure is the Reason of a baseline that found too few candidates.
func (p *Placer) blindFailure() Reason {
	pl := &p.pl
	r := Reason{Code: NoCapacity, Need: pl.nodes, unit: unitDesc{mode: pl.mode, g: pl.g, excl: pl.excl}}
	if pl.mode == modeGPUs {
		r.Need = pl.need
		for k := 1; k <= p.maxG; k++ {
			r.Have += bits.AndCount(p.s.AvailWords(k), p.cand, 0, p.n)
		}
		return r
	}
	r.Have = bits.Count(p.cand, 0, p.n)
	return r
}
