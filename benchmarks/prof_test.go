package benchmarks

import (
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

func BenchmarkProfPair(b *testing.B) {
	for _, inv := range inventories() {
		if inv.name != "100k" {
			continue
		}
		pairs := randomPairsOf(inv.c, 1)
		p := placement.New(inv.c, placement.Options{})
		buf := make([]topology.NodeAlloc, 0, inv.c.NumNodes())
		x := pairs[161]
		b.Log(x.req.String())
		for b.Loop() {
			_, _ = p.Place(x.s, &x.req, buf)
		}
	}
}
