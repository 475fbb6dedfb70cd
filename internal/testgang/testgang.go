// Package testgang builds seeded workloads of running gangs, with the
// priority classes, policies, exempt flags and costs the victim search
// (package gang/preempt) reads. It is for tests, examples and benchmarks
// of this module only.
package testgang

import (
	"fmt"
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
	// Classes is the number of priority classes, 0 to Classes-1, lower
	// classes more common (half the gangs in class 0, then halving).
	Classes int
	// Seed seeds every random choice.
	Seed uint64
}

// Build admits cfg.Gangs gangs on an empty ledger of cluster c, placed at
// random (as churn leaves a real cluster: every leaf partly busy): 55%
// take 1 to 7 GPUs of one node, 40% 1 or 2 whole nodes, 5% 4 to 8 whole
// nodes (about 9.4 GPUs a gang, so that 250 gangs fill the 2,000-GPU
// default cluster and 10,000 gangs most of 100,000 GPUs).
// Every gang gets a class, a policy (one in ten Never, else Requeue or
// Cancel), an exempt flag (one in ten) and a cost: its GPUs times 0 to 4
// hours since its last checkpoint, in GPU-seconds.
func Build(c *topology.Cluster, cfg Config) *Workload {
	r := rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b9))
	w := &Workload{Ledger: gang.NewLedger(c)}
	w.Ledger.Admitter().Placer().SetStrategy(placement.Random, cfg.Seed)
	for g := 0; len(w.Cands) < cfg.Gangs && g < 4*cfg.Gangs; g++ {
		spec := &gang.Spec{ID: fmt.Sprintf("job%05d", g), Members: []gang.Member{{Name: "w", Request: shape(r, c)}}}
		if res, err := w.Ledger.Admit(spec); err != nil || !res.Admitted {
			continue
		}
		a, _ := w.Ledger.Get(spec.ID)
		w.Cands = append(w.Cands, preempt.Candidate{
			ID: spec.ID, Alloc: a, Class: class(r, cfg.Classes),
			Policy: policy(r), Exempt: r.IntN(10) == 0,
			Cost: int64(a.GPUs()) * int64(r.IntN(4*3600)),
		})
	}
	return w
}

func shape(r *rand.Rand, c *topology.Cluster) placement.Request {
	switch p := r.IntN(100); {
	case p < 55:
		return placement.NodesOf(1, 1+r.IntN(min(7, c.MaxNodeGPUs())))
	case p < 95:
		return placement.WholeNodes(1 + r.IntN(2))
	default:
		return placement.WholeNodes(4 + r.IntN(5))
	}
}

func class(r *rand.Rand, n int) int {
	k := 0
	for k < n-1 && r.IntN(2) == 0 {
		k++
	}
	return k
}

func policy(r *rand.Rand) preempt.Policy {
	if r.IntN(10) == 0 {
		return preempt.Never
	}
	return preempt.Policy(1 + r.IntN(2))
}
