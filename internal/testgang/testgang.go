// Package testgang builds seeded workloads of running gangs, with the
// priority classes, policies, exempt flags and costs the victim search
// (package gang/preempt) reads. It is for tests, examples and benchmarks
// of this module only.
package testgang

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Workload is a cluster's running gangs as a ledger and as candidates.
type Workload struct {
	Ledger *gang.Ledger
	Cands  []preempt.Candidate
}

// Config shapes a workload.
type Config struct {
	// Gangs is how many running gangs to admit (fewer when the cluster
	// fills up first).
	Gangs int
	// Busy is the share of the cluster's GPUs the gangs should hold on
	// average; it sets the gang sizes.
	Busy float64
	// Classes is the number of priority classes, 0 to Classes-1, lower
	// classes more common (half the gangs in class 0, then halving).
	Classes int
	// Seed seeds every random choice.
	Seed uint64
}

// Build admits cfg.Gangs gangs on an empty ledger of cluster c with
// topology-aware placement, then churns twice (a fifth of the gangs end
// and new ones take their place), so that the free GPUs are scattered
// over the leaves as on a cluster that has run for a while. Half the
// gangs take 1 to 7 GPUs of one node, half 1 to k whole nodes, k chosen
// so that the gangs hold about cfg.Busy of the GPUs. Every gang gets a
// class, a policy (one in ten Never, else Requeue or Cancel), an exempt
// flag (one in ten) and a cost: its GPUs times 0 to 4 hours since its
// last checkpoint, in GPU-seconds.
func Build(c *topology.Cluster, cfg Config) *Workload {
	b := &builder{
		c: c, cfg: cfg, r: rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b9)),
		w: &Workload{Ledger: gang.NewLedger(c, gang.Options{})},
	}
	mean := float64(c.TotalGPUs()) * cfg.Busy / float64(max(cfg.Gangs, 1))
	b.kmax = max(1, int(math.Round(mean/2-2)))
	b.fill()
	for range 2 {
		for range len(b.w.Cands) / 5 {
			i := b.r.IntN(len(b.w.Cands))
			if err := b.w.Ledger.Release(b.w.Cands[i].ID); err != nil {
				panic(err)
			}
			b.w.Cands[i] = b.w.Cands[len(b.w.Cands)-1]
			b.w.Cands = b.w.Cands[:len(b.w.Cands)-1]
		}
		b.fill()
	}
	return b.w
}

type builder struct {
	c    *topology.Cluster
	cfg  Config
	r    *rand.Rand
	w    *Workload
	kmax int
	next int
}

// fill admits gangs until there are cfg.Gangs or four times as many
// attempts have failed.
func (b *builder) fill() {
	for fails := 0; len(b.w.Cands) < b.cfg.Gangs && fails < 4*b.cfg.Gangs; {
		spec := &gang.Spec{ID: fmt.Sprintf("job%06d", b.next), Members: []gang.Member{{Name: "w", Request: b.shape()}}}
		b.next++
		if res, err := b.w.Ledger.Admit(spec); err != nil || !res.Admitted {
			fails++
			continue
		}
		a, _ := b.w.Ledger.Get(spec.ID)
		b.w.Cands = append(b.w.Cands, preempt.Candidate{
			ID: spec.ID, Alloc: a, Class: b.class(),
			Policy: b.policy(), Exempt: b.r.IntN(10) == 0,
			Cost: int64(a.GPUs()) * int64(b.r.IntN(4*3600)),
		})
	}
}

func (b *builder) shape() placement.Request {
	if b.r.IntN(2) == 0 {
		return placement.NodesOf(1, 1+b.r.IntN(min(7, b.c.MaxNodeGPUs())))
	}
	return placement.WholeNodes(1 + b.r.IntN(b.kmax))
}

func (b *builder) class() int {
	k := 0
	for k < b.cfg.Classes-1 && b.r.IntN(2) == 0 {
		k++
	}
	return k
}

func (b *builder) policy() preempt.Policy {
	if b.r.IntN(10) == 0 {
		return preempt.Never
	}
	return preempt.Policy(1 + b.r.IntN(2))
}

// Preemptor is a named preemptor shape.
type Preemptor struct {
	Name string
	Gang *gang.Spec
}

// Preemptors returns the preemptor shapes of the victim-search tests and
// benchmarks for cluster c (nodes of c.MaxNodeGPUs() GPUs): three
// quarters of a lowest-level domain (required), 4 and 32 whole nodes
// without constraints, 32 nodes inside one domain of the second level
// (required), a total of 256 GPUs or 1% of the cluster's, whichever is more
// (so that it does not fit in the GPUs a full large cluster leaves free),
// 8 nodes in segments of 4, and a two-member gang (a 1-GPU launcher and 8
// nodes inside one lowest-level domain).
func Preemptors(c *topology.Cluster) []Preemptor {
	first, end := c.DomainRange(c.Depth()-1, 0)
	leafNodes := (end - first) * 3 / 4
	gpn := c.MaxNodeGPUs()
	low := c.LevelName(c.Depth() - 1)
	total := max(256, c.TotalGPUs()/100)
	one := func(r placement.Request) *gang.Spec {
		return &gang.Spec{ID: "urgent", Members: []gang.Member{{Name: "w", Request: r}}}
	}
	return []Preemptor{
		{fmt.Sprintf("%dx%d-required-%s", leafNodes, gpn, low), one(placement.Request{Nodes: int(leafNodes), GPUsPerNode: gpn, Required: low})},
		{fmt.Sprintf("4x%d", gpn), one(placement.NodesOf(4, gpn))},
		{fmt.Sprintf("32x%d", gpn), one(placement.NodesOf(32, gpn))},
		{fmt.Sprintf("32x%d-required-%s", gpn, c.LevelName(1)), one(placement.Request{Nodes: 32, GPUsPerNode: gpn, Required: c.LevelName(1)})},
		{fmt.Sprintf("gpus=%d", total), one(placement.TotalGPUs(total))},
		{fmt.Sprintf("8x%d-segments-4", gpn), one(placement.Request{Nodes: 8, GPUsPerNode: gpn, SegmentSize: 4})},
		{"two-members", &gang.Spec{ID: "urgent", Members: []gang.Member{
			{Name: "launcher", Request: placement.NodesOf(1, 1)},
			{Name: "workers", Request: placement.Request{Nodes: 8, GPUsPerNode: gpn, Required: low}},
		}}},
	}
}
