package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Synthetic returns a seeded mixed workload of n jobs submitted uniformly
// over span, for nodes of nodeGPUs GPUs: 55% single-GPU jobs, 20% of 2 to
// 8 GPUs on one node, 15% of 2 to 8 whole nodes, 8% of 16 to 32 whole
// nodes and 2% of 64 whole nodes; durations log-uniform from 5 minutes to
// 8 hours; time limits by DeriveLimit; six users of equal share. About 1,000
// jobs over a day load the default 2,000-GPU cluster at 1.2 times its
// capacity.
func Synthetic(seed uint64, n int, span time.Duration, nodeGPUs int) []TraceJob {
	r := rand.New(rand.NewPCG(seed, 0x5e))
	jobs := make([]TraceJob, 0, n)
	for i := range n {
		var nodes, gpn int
		switch k := r.Float64(); {
		case k < 0.55:
			nodes, gpn = 1, 1
		case k < 0.75:
			nodes, gpn = 1, min(2+r.IntN(7), nodeGPUs)
		case k < 0.90:
			nodes, gpn = 2+r.IntN(7), nodeGPUs
		case k < 0.98:
			nodes, gpn = 16+r.IntN(17), nodeGPUs
		default:
			nodes, gpn = 64, nodeGPUs
		}
		lo, hi := math.Log(300), math.Log(8*3600)
		d := time.Duration(math.Exp(lo+r.Float64()*(hi-lo))) * time.Second
		user := fmt.Sprint(r.IntN(6))
		j := TraceJob{
			ID: fmt.Sprintf("s%05d", i), User: user, Account: "u" + user,
			Submit:   time.Duration(r.Int64N(int64(span))),
			Duration: d, GPUs: nodes * gpn, Nodes: nodes, GPUsPerNode: gpn,
			TimeLimit: DeriveLimit(d, seed, i, 1.2, 3),
		}
		jobs = append(jobs, j)
	}
	sortBySubmit(jobs)
	return jobs
}
