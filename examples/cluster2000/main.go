// Command cluster2000 is the main demonstration of Phalanx, with no flags
// and no files. On the built-in 2,000-GPU cluster (250 nodes x 8 GPUs, 16
// nodes per leaf, 4 leaves per spine) it runs, side by side:
//
//  1. two 1,200-GPU jobs under pod-by-pod binding and under gang admission;
//
//  2. a 64-GPU job on a fragmented cluster, leaf-packed and first-fit;
//
//  3. a 512-GPU job on a busy cluster with and without reservations;
//
//  4. the same question without time limits (as on Kubernetes): hold mode
//     against strict FIFO and greedy backfill;
//
//  5. a synthetic mixed workload replayed under every policy (-no-limits
//     replays it with no time limits);
//
//  6. an urgent 256-GPU gang on a full cluster: the batch gangs it
//     preempts, next to what a topology-blind victim choice would evict.
//
//     go run ./examples/cluster2000 [-no-limits]
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/benchmarks/sim"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/baseline"
	"github.com/phalanx-sched/phalanx/internal/cli"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

func main() {
	noLimits := flag.Bool("no-limits", false, "replay the synthetic workload with no time limits (as on Kubernetes)")
	if err := cli.Parse(flag.CommandLine, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster2000:", err)
		os.Exit(2)
	}
	if err := run(os.Stdout, 1000, *noLimits); err != nil {
		fmt.Fprintln(os.Stderr, "cluster2000:", err)
		os.Exit(1)
	}
}

// run prints the demonstrations; jobs sizes the synthetic workload, which
// runs without time limits when noLimits is set.
func run(w io.Writer, jobs int, noLimits bool) error {
	c := topology.Default2000()
	fmt.Fprintf(w, "Phalanx on the built-in cluster: %d nodes x %d GPUs = %d GPUs, %d leaves of %d nodes, %d spines\n\n",
		c.NumNodes(), c.MaxNodeGPUs(), c.TotalGPUs(), c.NumDomains(2), topology.DefaultNodesPerLeaf, c.NumDomains(1))
	for _, step := range []func(io.Writer, *topology.Cluster) error{deadlock, packing, reservations, holds} {
		if err := step(w, c); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if err := workload(w, c, jobs, noLimits); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return preemption(w, c)
}

// deadlock: two 150-pod x 8-GPU jobs whose pods arrive interleaved.
func deadlock(w io.Writer, c *topology.Cluster) error {
	fmt.Fprintln(w, "1. Two 1,200-GPU jobs (150 pods x 8 GPUs each), pods arriving interleaved")
	fmt.Fprintf(w, "   %-12s %-22s %-22s %12s %11s\n", "policy", "job A", "job B", "useful GPUs", "held idle")

	s := topology.NewState(c)
	pods := baseline.NewPodByPod(s)
	for _, id := range []string{"A", "B"} {
		if err := pods.Add(id, 150, 8); err != nil {
			return err
		}
	}
	pods.BindInterleaved("A", "B")
	useful, held := 0, 0
	desc := func(id string) string {
		if pods.Complete(id) {
			useful += pods.HeldGPUs(id)
			return fmt.Sprintf("runs on %d GPUs", pods.HeldGPUs(id))
		}
		held += pods.HeldGPUs(id)
		return fmt.Sprintf("%d/150 pods, stuck", pods.Bound(id))
	}
	a, b := desc("A"), desc("B")
	fmt.Fprintf(w, "   %-12s %-22s %-22s %12d %11d\n", "pod-by-pod", a, b, useful, held)

	l := gang.NewLedger(c, gang.Options{})
	var res [2]gang.Admission
	for i, id := range []string{"A", "B"} {
		r, err := l.Admit(&gang.Spec{ID: id, Members: []gang.Member{{Name: "worker", Request: placement.NodesOf(150, 8)}}})
		if err != nil {
			return err
		}
		res[i] = r
	}
	state := func(r gang.Admission, id string) string {
		if r.Admitted {
			a, _ := l.Get(id)
			return fmt.Sprintf("runs on %d GPUs", a.GPUs())
		}
		return "waits, holds nothing"
	}
	fmt.Fprintf(w, "   %-12s %-22s %-22s %12d %11d\n", "gang", state(res[0], "A"), state(res[1], "B"), l.State().UsedGPUs(), 0)
	fmt.Fprintf(w, "   gang admission leaves %d GPUs free for other work; B waits: %s\n", l.State().FreeGPUs(), res[1])
	return nil
}

// packing: a 64-GPU job (--gpus=64) on a cluster where every node has a
// random number of GPUs busy; its ranks, in node order, form
// tensor-parallel groups of 8.
func packing(w io.Writer, c *topology.Cluster) error {
	fmt.Fprintln(w, "2. A 64-GPU job (--gpus=64, ranks in assignment order, groups of 8) on a fragmented cluster (0-8 busy GPUs per node, seeded)")
	s := topology.NewState(c)
	r := rand.New(rand.NewPCG(7, 7))
	for n := range c.NumNodes() {
		if busy := r.IntN(9); busy > 0 {
			if err := s.Allocate([]topology.NodeAlloc{{Node: topology.NodeID(n), GPUs: 1<<uint(busy) - 1}}); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(w, "   %d of %d GPUs busy\n", s.UsedGPUs(), c.TotalGPUs())
	fmt.Fprintf(w, "   %-10s %6s %7s %27s %28s\n", "placement", "nodes", "leaves", "8-GPU groups across nodes", "8-GPU groups across leaves")
	for _, st := range []baseline.Placement{baseline.LeafPack, baseline.FirstFit, baseline.Random} {
		p := placement.New(c, placement.Options{})
		baseline.Use(p, st, 1)
		req := placement.TotalGPUs(64)
		res, err := p.Place(s, &req, nil)
		if err != nil {
			return err
		}
		if !res.Placed {
			return fmt.Errorf("%s: %s", st, res.Reason)
		}
		nodesX, leavesX := groupsCrossing(c, res.Assignment)
		fmt.Fprintf(w, "   %-10s %6d %7d %27d %28d\n", st, res.Nodes, res.Leaves(c), nodesX, leavesX)
	}
	return nil
}

// groupsCrossing lays the job's GPUs out as ranks in the order of the
// assignment (the order a launcher receives) and counts the groups of 8
// consecutive ranks that span several nodes or leaves.
func groupsCrossing(c *topology.Cluster, a []topology.NodeAlloc) (nodes, leaves int) {
	type gpu struct{ node, leaf int }
	var ranks []gpu
	for _, x := range a {
		for range popcount(x.GPUs) {
			ranks = append(ranks, gpu{int(x.Node), c.NodeDomain(x.Node, c.Depth()-1)})
		}
	}
	for g := 0; g+8 <= len(ranks); g += 8 {
		grp := ranks[g : g+8]
		if grp[0].node != grp[7].node {
			nodes++
		}
		if grp[0].leaf != grp[7].leaf {
			leaves++
		}
	}
	return nodes, leaves
}

// reservations: a 512-GPU job joins a cluster kept full by a stream of
// small jobs (three 1-node jobs a minute, each 1 to 2 hours).
func reservations(w io.Writer, c *topology.Cluster) error {
	fmt.Fprintln(w, "3. A 512-GPU job (64 nodes, 2 h) submitted at t+3h into a stream of 1-node jobs (3 a minute, 1-2 h each) for 10 h")
	fmt.Fprintf(w, "   %-22s %18s %26s\n", "policy", "512-GPU job starts", "small jobs started meanwhile")
	r := rand.New(rand.NewPCG(3, 3))
	var jobs []sim.TraceJob
	for m := 0; m < 10*60; m++ {
		for k := range 3 {
			d := time.Duration(60+r.IntN(61)) * time.Minute
			jobs = append(jobs, sim.TraceJob{ID: fmt.Sprintf("s%03d-%d", m, k), Account: "team", Submit: time.Duration(m) * time.Minute,
				Duration: d, TimeLimit: d, Nodes: 1, GPUsPerNode: 8, GPUs: 8})
		}
	}
	jobs = append(jobs, sim.TraceJob{ID: "big", Account: "team", Submit: 3 * time.Hour, Duration: 2 * time.Hour, TimeLimit: 2 * time.Hour, Nodes: 64, GPUsPerNode: 8, GPUs: 512})
	slices.SortStableFunc(jobs, func(a, b sim.TraceJob) int { return int(a.Submit - b.Submit) })
	for _, depth := range []int{1, 0} {
		cfg := backfill.DefaultConfig()
		cfg.ReservationDepth = depth
		cfg.FairShare.Weights = fairshare.Weights{Age: 1000} // first come, first served
		cfg.FairShare.MaxAge = 7 * 24 * time.Hour
		res, err := sim.Run(sim.Config{Cluster: c, ClusterName: "default-2k", Trace: "stream", Policy: sim.Phalanx, Engine: &cfg}, jobs)
		if err != nil {
			return err
		}
		var big sim.Outcome
		for _, o := range res.Outcomes {
			if o.ID == "big" {
				big = o
			}
		}
		during := 0
		for _, o := range res.Outcomes {
			if o.ID != "big" && o.Started && o.Start >= big.Submit && (!big.Started || o.Start < big.Start) {
				during++
			}
		}
		name := "reservations (EASY)"
		if depth == 0 {
			name = "no reservations"
		}
		start := "never"
		if big.Started {
			start = fmt.Sprintf("t+%s", big.Start)
		}
		fmt.Fprintf(w, "   %-22s %18s %26d\n", name, start, during)
	}
	fmt.Fprintln(w, "   With a reservation, small jobs backfill only where they end before it starts or use other nodes.")
	return nil
}

// holds: the reservations question when no job has a time limit (as on
// Kubernetes): a 512-GPU gang in a stream of small jobs.
func holds(w io.Writer, c *topology.Cluster) error {
	sc := sim.DefaultStream()
	fmt.Fprintln(w, "4. The same question with no time limits (as on Kubernetes): a 512-GPU gang at t+3h into a stream of")
	fmt.Fprintln(w, "   1-8 GPU jobs (6 a minute, 1-2 h each) for 12 h; no reservation can be planned, hold mode keeps GPUs for it")
	fmt.Fprintf(w, "   %-22s %14s %26s %12s\n", "policy", "gang waits", "small jobs started meanwhile", "GPU-h held")
	jobs := sim.Stream(sc)
	for _, p := range []sim.Policy{sim.GangFIFO, sim.GangBackfill, sim.Phalanx} {
		res, err := sim.Run(sim.Config{Cluster: c, ClusterName: "default-2k", Trace: "stream", Policy: p}, jobs)
		if err != nil {
			return err
		}
		wait, smalls, started := sim.StreamOutcome(res, sc)
		waits := wait.Round(time.Minute).String()
		if !started {
			waits = "never"
		}
		name := map[sim.Policy]string{sim.GangFIFO: "strict FIFO", sim.GangBackfill: "greedy backfill", sim.Phalanx: "phalanx (hold mode)"}[p]
		fmt.Fprintf(w, "   %-22s %14s %26d %12.0f\n", name, waits, smalls, res.HeldForHoldGPUSeconds/3600)
	}
	fmt.Fprintln(w, "   The hold keeps the GPUs of the nodes estimated to free up soonest; small jobs run everywhere else.")
	return nil
}

// workload replays a synthetic mixed workload under every policy.
func workload(w io.Writer, c *topology.Cluster, n int, noLimits bool) error {
	kind := ""
	jobs := sim.Synthetic(1, n, 24*time.Hour, c.MaxNodeGPUs())
	if noLimits {
		kind = ", no time limits"
		sim.DropLimits(jobs, 1, 1)
	}
	fmt.Fprintf(w, "5. A synthetic mixed workload (%d jobs over 24 h, 1 to 512 GPUs, seed 1%s) under every policy\n", n, kind)
	var results []*sim.Result
	runs := []struct {
		p  sim.Policy
		pl baseline.Placement
	}{
		{sim.PodByPod, baseline.FirstFit}, {sim.GangFIFO, baseline.LeafPack}, {sim.GangBackfill, baseline.LeafPack},
		{sim.Phalanx, baseline.LeafPack}, {sim.Phalanx, baseline.FirstFit}, {sim.Phalanx, baseline.Random},
	}
	for _, r := range runs {
		res, err := sim.Run(sim.Config{Cluster: c, ClusterName: "default-2k", Trace: "synthetic", LoadFactor: 1,
			Policy: r.p, Placement: r.pl, Seed: 1}, jobs)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	fmt.Fprint(w, sim.Table(results))
	return nil
}

func popcount(m uint64) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n++
	}
	return n
}
