package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/topology"
)

type benchInventory struct {
	name string
	c    *topology.Cluster
}

func benchInventories() []benchInventory {
	return []benchInventory{
		{"2k", topology.Default2000()},
		{"100k", topology.FatTree100k()},
	}
}

// benchStates returns the empty state and a seeded fragmented one (25% of
// GPUs busy, scattered, so that even 1,200 GPUs fit on the 2k cluster).
func benchStates(c *topology.Cluster) []struct {
	name string
	s    *topology.State
} {
	frag := topology.NewState(c)
	testcluster.Fragment(frag, rand.New(rand.NewPCG(42, 1)), 0.25)
	return []struct {
		name string
		s    *topology.State
	}{{"empty", topology.NewState(c)}, {"frag25", frag}}
}

// benchRequests are the request sizes of the placement benchmarks:
// 1 and 8 GPUs on one node, then 8-GPU nodes.
var benchRequests = []struct {
	gpus int
	req  Request
}{
	{1, NodesOf(1, 1)},
	{8, NodesOf(1, 8)},
	{64, NodesOf(8, 8)},
	{512, NodesOf(64, 8)},
	{1200, NodesOf(150, 8)},
}

// BenchmarkPlace measures one placement decision (no allocation of the
// result) per inventory, state, request size and strategy, and reports
// the leaves the placement spans.
//
//	go test -run '^$' -bench BenchmarkPlace ./placement
func BenchmarkPlace(b *testing.B) {
	for _, inv := range benchInventories() {
		for _, st := range benchStates(inv.c) {
			for _, rq := range benchRequests {
				for _, strat := range []strategy{leafPack, firstFit, random} {
					name := fmt.Sprintf("inv=%s/state=%s/gpus=%d/algo=%s", inv.name, st.name, rq.gpus, strat)
					b.Run(name, func(b *testing.B) {
						p := newWith(inv.c, strat, 1)
						req := rq.req
						buf := make([]topology.NodeAlloc, 0, 256)
						var res Result
						var err error
						b.ReportAllocs()
						for b.Loop() {
							res, err = p.Place(st.s, &req, buf)
						}
						if err != nil {
							b.Fatal(err)
						}
						if !res.Placed {
							b.Skipf("not placed: %s", res.Reason)
						}
						b.ReportMetric(float64(res.Leaves(inv.c)), "leaves/op")
						b.ReportMetric(float64(res.Nodes), "nodes/op")
					})
				}
			}
		}
	}
}

// TestPlaceZeroAllocs asserts that a placement decision allocates nothing,
// placed or not, for every benchmark case and the constrained requests.
func TestPlaceZeroAllocs(t *testing.T) {
	for _, inv := range benchInventories() {
		for _, st := range benchStates(inv.c) {
			reqs := []Request{
				{Nodes: 16, GPUsPerNode: 8, Required: "leaf"},
				{Nodes: 64, GPUsPerNode: 8, Preferred: "spine"},
				{Nodes: 32, GPUsPerNode: 8, MaxDomains: 2},
				{Nodes: 32, GPUsPerNode: 8, SegmentSize: 8},
				{Nodes: 100000, GPUsPerNode: 8}, // never fits
				{GPUs: 100},
			}
			for _, rq := range benchRequests {
				reqs = append(reqs, rq.req)
			}
			for _, strat := range []strategy{leafPack, firstFit, random} {
				p := newWith(inv.c, strat, 1)
				buf := make([]topology.NodeAlloc, 0, 256)
				for _, req := range reqs {
					n := testing.AllocsPerRun(20, func() {
						if _, err := p.Place(st.s, &req, buf); err != nil {
							t.Fatal(err)
						}
					})
					if n != 0 {
						t.Errorf("inv=%s state=%s %s %s: %v allocations per decision", inv.name, st.name, strat, req.String(), n)
					}
				}
			}
		}
	}
}
