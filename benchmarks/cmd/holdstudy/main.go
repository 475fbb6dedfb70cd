// Command holdstudy prints the hold-mode study of benchmarks/README.md:
//
//  1. the stream: a 2,000-GPU cluster kept busy by small jobs without time
//     limits and one gang of 512, 1,200 or 1,600 GPUs at t+3h, under strict
//     FIFO and the default engine (hold mode), for several seeds: the
//     gang's wait and the small jobs started meanwhile;
//
//  2. the synthetic workload without time limits, six seeds: the default
//     against strict FIFO's large-job waits and greedy backfill's
//     utilisation (over the active window and before its final drain,
//     pre-drain) and GPU-hours idle while jobs queue.
//
//     go run ./benchmarks/cmd/holdstudy [-seeds 3]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/phalanx-sched/phalanx/benchmarks/sim"
	"github.com/phalanx-sched/phalanx/internal/cli"
	"github.com/phalanx-sched/phalanx/topology"
)

func main() {
	seeds := flag.Int("seeds", 3, "stream seeds")
	if err := cli.Parse(flag.CommandLine, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "holdstudy:", err)
		os.Exit(2)
	}
	if err := stream(os.Stdout, *seeds); err != nil {
		fmt.Fprintln(os.Stderr, "holdstudy:", err)
		os.Exit(1)
	}
	fmt.Println()
	if err := synthetic(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "holdstudy:", err)
		os.Exit(1)
	}
}

func run(p sim.Policy, jobs []sim.TraceJob) (*sim.Result, error) {
	return sim.Run(sim.Config{Cluster: topology.Default2000(), ClusterName: "default-2k", Policy: p}, jobs)
}

func stream(w io.Writer, seeds int) error {
	if seeds < 1 { // no row: an empty table
		return fmt.Errorf("-seeds %d: want at least 1", seeds)
	}
	fmt.Fprintln(w, "stream: 6 small jobs a minute (1-8 GPUs, 1-2 h, no limits) for 12 h, a gang at t+3h; default-2k")
	fmt.Fprintf(w, "%-6s %-5s %12s %12s %8s %12s %12s %8s %10s\n", "gang", "seed", "FIFO wait", "default wait", "ratio", "FIFO smalls", "def. smalls", "ratio", "GPU-h held")
	for _, g := range []int{512, 1200, 1600} {
		for seed := 1; seed <= seeds; seed++ {
			sc := sim.DefaultStream()
			sc.GangGPUs, sc.Seed = g, uint64(seed)
			jobs := sim.Stream(sc)
			fifo, err := run(sim.GangFIFO, jobs)
			if err != nil {
				return err
			}
			def, err := run(sim.Phalanx, jobs)
			if err != nil {
				return err
			}
			fw, fs, _ := sim.StreamOutcome(fifo, sc)
			dw, ds, _ := sim.StreamOutcome(def, sc)
			fmt.Fprintf(w, "%-6d %-5d %12s %12s %7.2fx %12d %12d %7.2fx %10.0f\n", g, seed, fw.Round(time.Minute), dw.Round(time.Minute),
				float64(dw)/float64(fw), fs, ds, float64(ds)/float64(fs), def.HeldForHoldGPUSeconds/3600)
		}
	}
	return nil
}

func synthetic(w io.Writer) error {
	fmt.Fprintln(w, "synthetic workload without time limits (1,000 jobs over 24 h), default-2k")
	fmt.Fprintf(w, "%-5s %-14s %7s %9s %9s %9s %11s %11s %7s\n", "seed", "policy", "util", "pre-drain", "idleQ GPU-h", "held", ">64 p95", ">64 max", "share")
	for seed := uint64(1); seed <= 6; seed++ {
		jobs := sim.DropLimits(sim.Synthetic(seed, 1000, 24*time.Hour, 8), 1, seed)
		for _, p := range []sim.Policy{sim.GangFIFO, sim.GangBackfill, sim.Phalanx} {
			r, err := run(p, jobs)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%-5d %-14s %6.1f%% %8.1f%% %11.0f %9.0f %11s %11s %7.3f\n", seed, p, 100*r.Utilisation, 100*r.UtilisationBeforeDrain, r.IdleWhileQueuedGPUSeconds/3600,
				r.HeldForHoldGPUSeconds/3600, r.LargeWaitP95.Round(time.Minute), r.LargeWaitMax.Round(time.Minute), r.WorstShare)
		}
	}
	return nil
}
