// Command replay replays a job trace on a cluster under chosen policies and
// prints the metrics table (or JSON).
//
//	go run ./examples/replay -trace ../shared/data/traces/philly.csv -load 3
//	go run ./examples/replay -trace jobs.csv -topology topology.conf -policies phalanx -placements leaf-pack,first-fit,random
//
// The trace is a CSV with header job_id,user,submit_s,duration_s,gpus and
// optional columns time_limit_s, account, nodes, gpus_per_node. The
// topology is a generator (default, nvl72, fattree:S,L,N,G) or a file:
// Slurm topology.conf (.conf), Slurm topology.yaml (.yaml, .yml; its
// default topology), or Kubernetes nodes (.json, with -kube-levels).
//
// With -report DIR it also writes DIR/index.html, a self-contained HTML
// report with plots (GPUs busy over time, waits by job size, leaves per
// multi-node job, per-account share over time) and the tables:
//
//	go run ./examples/replay -trace ../shared/data/traces/philly.csv -load 3 -report out/
//
// With -urgent SHARE a share of the jobs is urgent (class 1) and preempts
// the others (class 0, requeued when preempted) under the gang policies;
// -preempt=false keeps the classes without preempting, the baseline for
// the urgent jobs' waits. A third table lists the victims, the GPU-hours
// they lost and the waits of urgent and other jobs:
//
//	go run ./examples/replay -trace ../shared/data/traces/philly.csv -load 3 -policies phalanx -urgent 0.05
//
// With -node-mtbf nodes fail (and come back after -repair); a table of
// the failures, the whole-gang restarts they caused, the jobs kept running
// with their pods replaced (-on-node-failure replace, restarting from the
// last -checkpoint) and the GPU-hours of work lost follows:
//
//	go run ./examples/replay -trace ../shared/data/traces/philly.csv -load 3 -policies phalanx -node-mtbf 2400h -on-node-failure replace -checkpoint 1h
//
// When stderr is a terminal, a progress bar shows there once a run takes
// more than a second (-quiet turns it off); otherwise nothing is printed
// while the runs go. -cpuprofile FILE writes a CPU profile of the runs
// (`go tool pprof -top FILE`).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/benchmarks/sim"
	"github.com/phalanx-sched/phalanx/examples/replay/internal/report"
	"github.com/phalanx-sched/phalanx/internal/baseline"
	"github.com/phalanx-sched/phalanx/internal/cli"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/kube"
	"github.com/phalanx-sched/phalanx/topology/slurm"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

type options struct {
	trace, topo, policies, placements, kubeLevels, report string
	load                                                  float64
	seed                                                  uint64
	maxJobs, gpusPerNode, parallel                        int
	noLimits, urgent                                      float64
	json, quiet, preempt                                  bool
	mtbf, repair, release, checkpoint                     time.Duration
	onFailure, cpuprofile                                 string
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.trace, "trace", "", "trace CSV file (required)")
	fs.StringVar(&o.topo, "topology", "default", "generator (default, nvl72, fattree:S,L,N,G) or file (.conf, .yaml, .json)")
	fs.StringVar(&o.policies, "policies", "all", "comma-separated policies: pod-by-pod, gang-fifo, gang-backfill, phalanx, or all")
	fs.StringVar(&o.placements, "placements", "leaf-pack", "placements for the phalanx policy: leaf-pack, first-fit, random (comma-separated)")
	fs.StringVar(&o.kubeLevels, "kube-levels", "gke", "label preset for Kubernetes nodes: gke, aws, aws4 (four-layer EC2 types: p6-b200, p6-b300), clique, zone")
	fs.StringVar(&o.report, "report", "", "also write an HTML report with plots to this directory (index.html)")
	fs.Float64Var(&o.load, "load", 1, "load factor: submit times are divided by it")
	fs.Float64Var(&o.noLimits, "no-limits", 0, "share of jobs without a time limit (0: every job has one; 1: none, as on Kubernetes)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed for derived time limits, random placement and failures")
	fs.IntVar(&o.maxJobs, "max-jobs", 0, "replay only the first jobs (0: all)")
	fs.IntVar(&o.gpusPerNode, "gpus-per-node", 8, "GPU count of nodes in a topology.conf or .yaml")
	fs.IntVar(&o.parallel, "parallel", 2, "policies simulated at once")
	fs.BoolVar(&o.json, "json", false, "print JSON instead of the table")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar on a terminal")
	fs.DurationVar(&o.mtbf, "node-mtbf", 0, "mean time between failures of a node (0: none)")
	fs.DurationVar(&o.repair, "repair", 2*time.Hour, "time to repair a failed node")
	fs.StringVar(&o.onFailure, "on-node-failure", "requeue", "what a node failure does to a running gang: requeue (restart from scratch), replace (its pods there move; it restarts from its checkpoint) or shrink (multi-node jobs are elastic down to half their nodes: they give up the pods there and run on, slower, from their checkpoint)")
	fs.DurationVar(&o.checkpoint, "checkpoint", 0, "with -on-node-failure replace or shrink: how often jobs checkpoint (0: never)")
	fs.Float64Var(&o.urgent, "urgent", 0, "share of jobs that are urgent (class 1) and preempt the others (0: no classes)")
	fs.BoolVar(&o.preempt, "preempt", true, "with -urgent: preempt (false: keep the classes only, the baseline)")
	fs.DurationVar(&o.release, "release", 0, "with -urgent: how long a victim takes to release its GPUs (0: the engine's grace)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the simulation to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.trace == "" {
		return o, fmt.Errorf("-trace is required")
	}
	return o, checkFlags(fs, o)
}

// checkFlags refuses values the run would otherwise take silently for
// others: an argument after the flags (flag parsing stops there, so
// "-preempt false -urgent 0.1" dropped -urgent), a load factor that is
// not a positive number (0 ran at load 1), a share outside [0, 1], and a
// negative count or duration (taken as 0).
func checkFlags(fs *flag.FlagSet, o options) error {
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if !(o.load > 0) || math.IsInf(o.load, 0) {
		return fmt.Errorf("-load %v: want a positive factor", o.load)
	}
	for _, f := range []struct {
		name  string
		share float64
	}{{"-no-limits", o.noLimits}, {"-urgent", o.urgent}} {
		if !(f.share >= 0 && f.share <= 1) {
			return fmt.Errorf("%s %v: want a share in [0, 1]", f.name, f.share)
		}
	}
	if o.maxJobs < 0 {
		return fmt.Errorf("-max-jobs %d: want 0 (all) or more", o.maxJobs)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"-node-mtbf", o.mtbf}, {"-repair", o.repair}, {"-checkpoint", o.checkpoint}, {"-release", o.release}} {
		if f.d < 0 {
			return fmt.Errorf("%s %v: want a duration of 0 or more", f.name, f.d)
		}
	}
	return nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	c, clusterName, err := loadTopology(o)
	if err != nil {
		return err
	}
	f, err := os.Open(o.trace)
	if err != nil {
		return err
	}
	defer f.Close()
	traceName := strings.TrimSuffix(filepath.Base(o.trace), filepath.Ext(o.trace))
	jobs, dropped, err := sim.ReadTrace(f, sim.TraceOptions{NodeGPUs: c.MaxNodeGPUs(), LoadFactor: o.load, Seed: o.seed,
		MaxJobs: o.maxJobs, NoLimits: o.noLimits, Source: filepath.Base(o.trace)})
	if err != nil {
		return err
	}
	if dropped > 0 {
		fmt.Fprintf(stderr, "replay: %d jobs dropped\n", dropped)
	}
	configs, err := runConfigs(o)
	if err != nil {
		return err
	}
	for i := range configs {
		configs[i].Cluster, configs[i].ClusterName, configs[i].Trace = c, clusterName, traceName
	}
	if o.cpuprofile != "" {
		pf, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	results, err := simulate(configs, jobs, o, stderr)
	if err != nil {
		return err
	}
	if o.report != "" {
		title := fmt.Sprintf("Replay of %s at load %g on %s", traceName, o.load, clusterName)
		if _, err := report.Write(o.report, report.Input{Title: title, Command: commandLine(args), Results: results}); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "replay: report in %s\n", filepath.Join(o.report, "index.html"))
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	_, err = fmt.Fprint(stdout, sim.Table(results))
	return err
}

// runConfigs returns one config per policy and placement asked for, with
// the options that do not depend on the trace or cluster.
func runConfigs(o options) ([]sim.Config, error) {
	names := strings.Split(o.policies, ",")
	if o.policies == "all" {
		names = nil
		for _, p := range sim.Policies {
			names = append(names, p.String())
		}
	}
	onFailure, ok := backfill.ParseFailurePolicy(o.onFailure)
	if !ok {
		return nil, fmt.Errorf("-on-node-failure %q: want requeue, fail, replace or shrink", o.onFailure)
	}
	base := sim.Config{LoadFactor: o.load, Seed: o.seed, NodeMTBF: o.mtbf, Repair: o.repair, Placement: baseline.LeafPack,
		OnNodeFailure: onFailure, Checkpoint: o.checkpoint}
	if o.report != "" {
		base.UsagePoints = report.UsagePoints
	}
	var placements []baseline.Placement // checked whichever policies run
	for _, pn := range strings.Split(o.placements, ",") {
		pl, ok := baseline.ParsePlacement(strings.TrimSpace(pn))
		if !ok {
			return nil, fmt.Errorf("unknown placement %q", pn)
		}
		placements = append(placements, pl)
	}
	var configs []sim.Config
	for _, n := range names {
		p, err := sim.ParsePolicy(strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		cfg := base
		cfg.Policy = p
		if o.urgent > 0 && p != sim.PodByPod {
			cfg.Preemption = &sim.Preemption{UrgentShare: o.urgent, Release: o.release, Off: !o.preempt}
		}
		if p != sim.Phalanx {
			configs = append(configs, cfg)
			continue
		}
		for _, pl := range placements {
			cfg.Placement = pl
			configs = append(configs, cfg)
		}
	}
	return configs, nil
}

// simulate runs the configs, o.parallel at a time, drawing a progress bar
// on stderr when it is a terminal.
func simulate(configs []sim.Config, jobs []sim.TraceJob, o options, stderr io.Writer) ([]*sim.Result, error) {
	var bar *progressBar
	if !o.quiet && isTerminal(stderr) {
		bar = newProgressBar(stderr, len(configs), time.Now)
		defer bar.finish()
	}
	results := make([]*sim.Result, len(configs))
	errs := make([]error, len(configs))
	sem := make(chan struct{}, max(1, o.parallel))
	var wg sync.WaitGroup
	for i, cfg := range configs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if bar != nil {
				cfg.Progress = func(now time.Duration, done, total int) { bar.update(i, now, done, total) }
				cfg.ProgressEvery = 1024
			}
			results[i], errs[i] = sim.Run(cfg, jobs)
			if bar != nil {
				bar.runDone(i)
			}
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// commandLine renders the command that made a report.
func commandLine(args []string) string {
	parts := []string{"go run ./examples/replay"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// loadTopology returns the cluster named by -topology and a name for it.
func loadTopology(o options) (*topology.Cluster, string, error) {
	switch {
	case o.topo == "default":
		return topology.Default2000(), "default-2k", nil
	case o.topo == "nvl72":
		return topology.NVL72Default(), "nvl72-2016", nil
	case strings.HasPrefix(o.topo, "fattree:"):
		// Four counts and nothing else (Sscanf took "fattree:1,1,2,8,9"
		// or "fattree:1,1,2,8x" for fattree:1,1,2,8).
		var f topology.FatTreeConfig
		counts := strings.Split(strings.TrimPrefix(o.topo, "fattree:"), ",")
		ptrs := []*int{&f.Spines, &f.LeavesPerSpine, &f.NodesPerLeaf, &f.GPUsPerNode}
		for i, c := range counts {
			n, err := strconv.Atoi(c)
			if err != nil || len(counts) != len(ptrs) {
				return nil, "", fmt.Errorf("topology %q: want fattree:spines,leaves,nodes,gpus", o.topo)
			}
			*ptrs[i] = n
		}
		c, err := topology.FatTree(f)
		return c, o.topo, err
	}
	dir, name := filepath.Dir(o.topo), filepath.Base(o.topo)
	opts := slurm.Options{DefaultGPUs: o.gpusPerNode}
	switch strings.ToLower(filepath.Ext(o.topo)) {
	case ".conf":
		c, _, err := slurm.LoadConf(os.DirFS(dir), name, opts)
		return c, name, err
	case ".yaml", ".yml":
		t, err := slurm.ParseYAML(os.DirFS(dir), name, opts)
		if err != nil {
			return nil, "", err
		}
		c, err := t.Cluster("")
		return c, name, err
	case ".json":
		return loadKube(o, name)
	}
	return nil, "", fmt.Errorf("topology %q: unknown file type (want .conf, .yaml, .json or a generator)", o.topo)
}

// loadKube reads a Kubernetes node list (kubectl get nodes -o json) with
// the preset named by -kube-levels.
func loadKube(o options, name string) (*topology.Cluster, string, error) {
	var opts kube.Options
	switch o.kubeLevels {
	case "gke":
		opts = kube.PresetGKE()
	case "aws":
		opts = kube.PresetAWS()
	case "aws4":
		opts = kube.PresetAWSFourLayers()
	case "clique":
		opts = kube.PresetNVLinkClique()
	case "zone":
		opts = kube.PresetZone()
	default:
		return nil, "", fmt.Errorf("unknown -kube-levels %q", o.kubeLevels)
	}
	opts.Source = name
	f, err := os.Open(o.topo)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	c, _, err := kube.Load(f, opts)
	return c, name, err
}
