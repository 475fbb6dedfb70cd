package benchmarks

import (
	"math/rand/v2"
	"testing"

	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

func BenchmarkKueueCases(b *testing.B) {
	c := topology.Default2000()
	frag := topology.NewState(c)
	testcluster.Fragment(frag, rand.New(rand.NewPCG(42, 1)), 0.25)
	for _, st := range []*topology.State{topology.NewState(c), frag} {
		for _, req := range []placement.Request{{GPUs: 1200, Preferred: "spine"}, {Nodes: 150, GPUsPerNode: 8}, {GPUs: 512}, {Nodes: 64, GPUsPerNode: 8}} {
			b.Run(req.String(), func(b *testing.B) {
				p := placement.New(c, placement.Options{})
				buf := make([]topology.NodeAlloc, 0, 300)
				for b.Loop() {
					_, _ = p.Place(st, &req, buf)
				}
			})
		}
	}
}
