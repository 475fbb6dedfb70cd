// Command hybrid compares two policies for the boundary between a
// training partition and a serving pool on one inventory: a 250-node lab
// of 8-GPU nodes (2,000 GPUs), 200 nodes' worth for training and 50 for
// serving.
//
//   - static: the split moves only by configuration. Training runs on
//     its 200 nodes, serving on its 50 (partitions); neither borrows.
//   - dynamic: serving lends the nodes it does not use (all but a floor
//     it never lends) to training. Every 5 minutes the host moves
//     training jobs that have waited 5 minutes into a queue "borrowed"
//     whose jobs run on serving's nodes, may be preempted, and borrow
//     serving's unused quota; when serving's demand rises, its replicas
//     reclaim those GPUs within one cycle and the preemption grace
//     (backfill quotas: guarantees, borrowing, lending limits,
//     reclaim). A borrowed job that waits again goes back to training.
//
// Training is a trace (Philly by default) replayed for a few days at a
// load factor; serving is replicas of one 8-GPU node without time limits
// whose count follows a curve over the day. The program prints, per
// policy, training utilisation and waits, serving demand met within the
// SLO, and GPU-hours preempted, then, for the policy with the higher
// training utilisation that meets the SLO at least as well, the boundary
// hour by hour.
//
//	go run ./examples/hybrid -trace ../shared/data/traces/philly.csv
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/benchmarks/sim"
)

// options are the command's flags.
type options struct {
	trace      string
	skipDays   float64
	days       float64
	load       float64
	slo        time.Duration
	grace      time.Duration
	release    time.Duration
	floorNodes int
	minServe   int
	maxServe   int
	peakHour   float64
}

func main() {
	var o options
	flag.StringVar(&o.trace, "trace", "../shared/data/traces/philly.csv", "training trace (CSV: job_id,user,submit_s,duration_s,gpus)")
	flag.Float64Var(&o.skipDays, "skip", 10, "days of the trace (after the load factor) to skip")
	flag.Float64Var(&o.days, "days", 3, "days to simulate")
	flag.Float64Var(&o.load, "load", 8, "load factor of the trace (divides submit times)")
	flag.DurationVar(&o.slo, "slo", 10*time.Minute, "serving SLO: a replica asked for starts within this")
	flag.DurationVar(&o.grace, "grace", 5*time.Minute, "preemption grace")
	flag.DurationVar(&o.release, "release", 2*time.Minute, "how long a preempted gang takes to release its GPUs (at most the grace)")
	flag.IntVar(&o.floorNodes, "floor", 4, "nodes the serving pool never lends (dynamic)")
	flag.IntVar(&o.minServe, "min", 10, "serving replicas at the quietest hour")
	flag.IntVar(&o.maxServe, "max", 48, "serving replicas at the busiest hour")
	flag.Float64Var(&o.peakHour, "peak", 14, "hour of the day serving peaks")
	flag.Parse()
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "hybrid:", err)
		os.Exit(1)
	}
}

// run simulates both policies and prints the comparison.
func run(w io.Writer, o options) error {
	switch {
	case o.release > o.grace || o.release < 0:
		return fmt.Errorf("-release %v must be within the grace %v", o.release, o.grace)
	case o.minServe < 0 || o.maxServe < o.minServe || o.maxServe > servingNodes:
		return fmt.Errorf("-min %d and -max %d: want 0 <= min <= max <= %d (the serving pool)", o.minServe, o.maxServe, servingNodes)
	case o.floorNodes < 0 || o.floorNodes > servingNodes:
		return fmt.Errorf("-floor %d: want 0 to %d", o.floorNodes, servingNodes)
	case o.days <= 0 || o.skipDays < 0 || o.load <= 0:
		return fmt.Errorf("-days %v, -skip %v, -load %v: want positive days and load", o.days, o.skipDays, o.load)
	}
	jobs, err := loadTrace(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "hybrid: %d nodes x 8 GPUs (%d GPUs): training %d nodes, serving %d; training: %s, %.1f days from day %.1f at load factor %g (%d jobs);\n",
		labNodes, labNodes*8, labNodes-servingNodes, servingNodes, o.trace, o.days, o.skipDays, o.load, len(jobs))
	fmt.Fprintf(w, "serving: %d to %d replicas of 8 GPUs (peak at %02.0f:00), SLO %v; grace %v, victims released after %v\n\n",
		o.minServe, o.maxServe, o.peakHour, o.slo, o.grace, o.release)
	var outs []*outcome
	for _, p := range policies(o) {
		out, err := simulate(o, p, jobs)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		outs = append(outs, out)
	}
	printTable(w, o, outs)
	best := outs[0]
	for _, x := range outs[1:] {
		if x.trainUtil() > best.trainUtil() && x.servedShare() >= best.servedShare() {
			best = x
		}
	}
	fmt.Fprintf(w, "\nthe boundary over a day under %s (hourly averages over %.1f days, GPUs):\n", best.name, o.days)
	printBoundary(w, best)
	return nil
}

// loadTrace reads the training trace and keeps the jobs submitted in the
// window, with submit times relative to its start.
func loadTrace(o options) ([]sim.TraceJob, error) {
	f, err := os.Open(o.trace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, _, err := sim.ReadTrace(f, sim.TraceOptions{LoadFactor: o.load, Seed: 1, MaxGPUs: (labNodes - servingNodes) * 8, Source: o.trace})
	if err != nil {
		return nil, err
	}
	from := time.Duration(o.skipDays * 24 * float64(time.Hour))
	to := from + time.Duration(o.days*24*float64(time.Hour))
	var jobs []sim.TraceJob
	for _, j := range all {
		if j.Submit >= from && j.Submit < to {
			j.Submit -= from
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: no job submitted in days [%v, %v) at load factor %g", o.trace, o.skipDays, o.skipDays+o.days, o.load)
	}
	return jobs, nil
}

// policy is one way to manage the boundary: the engine's queues, and
// whether serving lends its nodes to training.
type policy struct {
	name   string
	quotas backfill.QuotaConfig
	lend   bool
}

const (
	labNodes     = 250
	servingNodes = 50
)

// policies returns the static split and dynamic lending.
func policies(o options) []policy {
	train, serve := (labNodes-servingNodes)*8, servingNodes*8
	// Node pools: training's nodes come first in topology order.
	trainNodes := fmt.Sprintf("node[00000-%05d]", labNodes-servingNodes-1)
	serveNodes := fmt.Sprintf("node[%05d-%05d]", labNodes-servingNodes, labNodes-1)
	q := func(name string, g, borrow, lend int) backfill.QueueSpec {
		nodes := serveNodes
		if name == "training" {
			nodes = trainNodes
		}
		return backfill.QueueSpec{Name: name, Guarantee: g, BorrowingLimit: borrow, LendingLimit: lend, Maximum: backfill.Unlimited, Nodes: nodes}
	}
	return []policy{
		{"static", backfill.QuotaConfig{Queues: []backfill.QueueSpec{
			q("training", train, 0, 0), q("serving", serve, 0, 0), q("borrowed", 0, 0, 0)}}, false},
		{"dynamic", backfill.QuotaConfig{Queues: []backfill.QueueSpec{
			q("training", train, 0, 0), q("serving", serve, 0, serve-8*o.floorNodes), q("borrowed", 0, backfill.Unlimited, 0),
		}}, true},
	}
}
