package placement

import (
	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology"
)

// spanScratch marks the domains an assignment uses.
type spanScratch struct {
	usedAt []uint32 // usedAt[x] == epoch: domain x is used
	epoch  uint32
}

func (ss *spanScratch) init(ly *layout) { ss.usedAt = make([]uint32, ly.numDomains()) }

func (ss *spanScratch) begin() {
	if ss.epoch++; ss.epoch == 0 {
		clear(ss.usedAt)
		ss.epoch = 1
	}
}

// tally accumulates, while nodes are picked, what measure reports: the
// GPUs given, the free GPUs of the nodes and domains used, the spans.
type tally struct {
	on    bool // the picking kept the tally (leaf packing)
	gpus  int
	free  int
	spans [topology.MaxLevels]int
}

// measure fills a placed Result from the assignment: counts, spans, the
// level it stays within, stranded capacity.
func (p *Placer) measure(res *Result) {
	sc, ly := &p.sc, p.lay
	res.Placed = true
	res.Assignment = sc.out
	res.Nodes = len(sc.out)
	free := sc.tally.free
	res.GPUs, res.Spans = sc.tally.gpus, sc.tally.spans
	if !sc.tally.on {
		for _, a := range sc.out {
			n := int(a.Node)
			res.GPUs += bits.PopCount(a.GPUs)
			free += sc.s.FreeCount(topology.NodeID(n))
			free += p.markPath(ly.leafID(ly.leafOfNode(n)), &res.Spans)
		}
	}
	res.Within = -1
	for l := range ly.depth {
		if res.Spans[l] == 1 {
			res.Within = l
		}
	}
	res.Stranded = free - (ly.depth+1)*sc.pl.requestGPUs(res.GPUs)
	res.Approximate = sc.approximate
	res.PreferenceMet = sc.pl.preferred == noLevel || level(res.Within) >= sc.pl.preferred
}

// markPath counts in spans the leaf x and its ancestors not yet counted
// in this decision, and returns the free GPUs of the domains it counted.
func (p *Placer) markPath(x int, spans *[topology.MaxLevels]int) int {
	ss, ly := &p.sc.spans, p.lay
	free := 0
	for ; x > 0; x = int(ly.parent[x]) {
		if ss.usedAt[x] == ss.epoch {
			return free // its ancestors are counted too
		}
		ss.usedAt[x] = ss.epoch
		spans[ly.levelOf(x)]++
		free += p.domainFree(x)
	}
	return free
}
