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

// StreamConfig describes a cluster kept busy by a stream of small jobs
// into which one large gang is submitted: the case hold mode is for.
type StreamConfig struct {
	Seed uint64
	// PerMinute small jobs arrive every minute for Span, each of MinGPUs
	// to MaxGPUs GPUs on one node, running MinRun to MaxRun (uniform).
	PerMinute        int
	Span             time.Duration
	MinGPUs, MaxGPUs int
	MinRun, MaxRun   time.Duration
	// The gang asks for GangGPUs GPUs in whole nodes of NodeGPUs, arrives
	// at GangAt and runs GangRun.
	GangGPUs, NodeGPUs int
	GangAt, GangRun    time.Duration
	// Limits gives every job its run time as its time limit; without it
	// no job has a limit (as on Kubernetes).
	Limits bool
}

// DefaultStream is the stream of the hold-mode study: 6 small jobs a
// minute of 1 to 8 GPUs, 1 to 2 h each, for 12 h, no time limits, and a
// gang of 512 GPUs (8-GPU nodes) at t+3h running 2 h.
func DefaultStream() StreamConfig {
	return StreamConfig{Seed: 1, PerMinute: 6, Span: 12 * time.Hour, MinGPUs: 1, MaxGPUs: 8, MinRun: time.Hour, MaxRun: 2 * time.Hour,
		GangGPUs: 512, NodeGPUs: 8, GangAt: 3 * time.Hour, GangRun: 2 * time.Hour}
}

// Stream returns the stream's jobs, sorted by submit time: the small jobs
// (IDs s00000..., accounts a0 to a3 in turn) and the gang (ID "gang",
// account "train").
func Stream(c StreamConfig) []TraceJob {
	r := rand.New(rand.NewPCG(c.Seed, 0x57))
	var jobs []TraceJob
	n := 0
	for t := time.Duration(0); t < c.Span; t += time.Minute {
		for range c.PerMinute {
			g := c.MinGPUs + r.IntN(c.MaxGPUs-c.MinGPUs+1)
			d := c.MinRun + time.Duration(r.Int64N(int64(c.MaxRun-c.MinRun)+1))
			j := TraceJob{ID: fmt.Sprintf("s%05d", n), User: fmt.Sprint(n % 4), Account: fmt.Sprintf("a%d", n%4),
				Submit: t + time.Duration(r.Int64N(int64(time.Minute))), Duration: d, GPUs: g, Nodes: 1, GPUsPerNode: g}
			if c.Limits {
				j.TimeLimit = d
			}
			jobs = append(jobs, j)
			n++
		}
	}
	nodes := (c.GangGPUs + c.NodeGPUs - 1) / c.NodeGPUs
	gang := TraceJob{ID: "gang", User: "train", Account: "train", Submit: c.GangAt, Duration: c.GangRun,
		GPUs: nodes * c.NodeGPUs, Nodes: nodes, GPUsPerNode: c.NodeGPUs}
	if c.Limits {
		gang.TimeLimit = c.GangRun
	}
	jobs = append(jobs, gang)
	sortBySubmit(jobs)
	return jobs
}

// StreamOutcome reads a stream run: the gang's wait (to the end of the run
// if it never started) and the small jobs that started while it waited.
func StreamOutcome(res *Result, c StreamConfig) (wait time.Duration, smalls int, started bool) {
	var gang *Outcome
	for i := range res.Outcomes {
		if res.Outcomes[i].ID == "gang" {
			gang = &res.Outcomes[i]
		}
	}
	if gang == nil {
		return 0, 0, false
	}
	end := gang.Start
	if !gang.Started && !gang.Finished {
		end = res.End
	}
	for i := range res.Outcomes {
		o := &res.Outcomes[i]
		if o.ID != "gang" && (o.Started || o.Finished) && o.Start >= c.GangAt && o.Start < end {
			smalls++
		}
	}
	return end - c.GangAt, smalls, gang.Started || gang.Finished
}
