// Command frontier runs the candidate default policies over the traces of
// benchmarks/README.md and prints, per trace, the frontier table:
// utilisation over the active window and before its final drain
// (sim.Result.UtilisationBeforeDrain), GPU-hours idle while jobs queue
// (absolute and as a share of the capacity over the active window), the
// large jobs' p95 and max wait, the longest wait, the mean wait and
// bounded slowdown, the account share gap while contended, and the
// GPU-hours kept idle by hold mode and free on reservations' planned GPUs
// (sim.Result.ReservedFreeGPUSeconds). Every column is a mean over the
// seeds (the large-job waits and the longest wait: the worst seed's)
// except cpu, the wall-clock time of the policy's cycles summed over the
// seeds. Waits leave out jobs the
// simulator rejected (they never queued); a job that never started
// counts up to the end of its run (sim.Result.End).
//
//	go run ./benchmarks/cmd/frontier [-traces synthetic,philly3,philly4,itp] [-seeds 6] [-trace-seeds 1] [-first-seed 1] [-no-limits 0] [-policies a,b] [-per-seed] [-criteria] [-data ../shared/data]
//
// -no-limits 1 takes every job's time limit away (hold mode's case: a
// Kubernetes cluster); fifo (strict gang FIFO) is a policy for that
// comparison. -per-seed prints each seed's row (policy/seed) before the
// policy's row over the seeds. -first-seed N runs seeds N, N+1, ... of
// every workload instead of 1, 2, ... (a held-out check). A policy named by key=value pairs is the
// default with those fields set (selectPolicies). -criteria prints, under
// each trace, the acceptance criterion its rows are read against, figure
// by figure: issue 18's with every job limited (it needs the greedy,
// easy-age and default rows), issue 13's without limits (fifo, greedy,
// default); see criteria. With several seeds and the default's and
// easy-age's rows (fifo's without limits), a last line counts the seeds
// on which the default's large-job waits (and share gap, with limits) are
// lower than, higher than or equal to the other's on the same seed
// (pairedLine): the verdict on a wait compares each policy's worst seed.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/benchmarks/sim"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/internal/cli"
	"github.com/phalanx-sched/phalanx/topology"
)

// policy is one candidate: a name and the engine config (nil: a sim
// policy's own).
type policy struct {
	name string
	sim  sim.Policy
	cfg  func() backfill.Config
}

func ageOrder(c *backfill.Config) {
	c.FairShare.Weights = fairshare.Weights{Age: 1000}
	c.FairShare.MaxAge = 365 * 24 * time.Hour
}

var policies = []policy{
	{"fifo", sim.GangFIFO, nil},
	{"greedy", sim.GangBackfill, nil},
	{"easy", sim.Phalanx, func() backfill.Config { return fairShareDepth(1) }},
	{"easy-age", sim.Phalanx, func() backfill.Config { c := backfill.DefaultConfig(); c.ReservationDepth = 1; ageOrder(&c); return c }},
	{"conservative", sim.Phalanx, func() backfill.Config { return fairShareDepth(backfill.Conservative) }},
	{"old-default", sim.Phalanx, func() backfill.Config { return fairShareDepth(16) }}, // before issue 18
	{"default", sim.Phalanx, func() backfill.Config { return backfill.DefaultConfig() }},
	// The candidates the default was chosen from (-policies all): EASY or
	// a few reservations, with fair share and an age term.
	{"easy-fs-age24", sim.Phalanx, func() backfill.Config { return easyFairAge(24 * time.Hour) }},
	{"easy-fs-age6", sim.Phalanx, func() backfill.Config { return easyFairAge(6 * time.Hour) }},
	{"easy-fs-age2", sim.Phalanx, func() backfill.Config { return easyFairAge(2 * time.Hour) }},
	{"depth2-age", sim.Phalanx, func() backfill.Config { return depthAge(2) }},
	{"depth4-age", sim.Phalanx, func() backfill.Config { return depthAge(4) }},
	{"depth8-age", sim.Phalanx, func() backfill.Config { return depthAge(8) }},
	{"d4-fs-age2", sim.Phalanx, func() backfill.Config { return depthFairAge(4, 2*time.Hour) }},
	{"d4-fs-age6", sim.Phalanx, func() backfill.Config { return depthFairAge(4, 6*time.Hour) }},
	{"d4-fs-age24", sim.Phalanx, func() backfill.Config { return depthFairAge(4, 24*time.Hour) }},
	{"depth3-age", sim.Phalanx, func() backfill.Config { return depthAge(3) }},
	{"depth6-age", sim.Phalanx, func() backfill.Config { return depthAge(6) }},
	{"depth4-agefs300", sim.Phalanx, func() backfill.Config {
		c := depthAge(4)
		c.FairShare.Weights = fairshare.Weights{Age: 10000, FairShare: 300, QOS: 1000, Partition: 1000}
		c.FairShare.MaxAge = 24 * time.Hour
		return c
	}},
	// The first default with age capped after a week instead of a day
	// (it lengthened the synthetic workload's large waits).
	{"default-age7d", sim.Phalanx, func() backfill.Config {
		c := backfill.DefaultConfig()
		c.FairShare.MaxAge = 7 * 24 * time.Hour
		return c
	}},
	// The default as first chosen in issue 18: its age term capped after
	// a day (10,000), which left fair share alone to order jobs that had
	// waited longer (Philly at load 4).
	{"default-24h", sim.Phalanx, func() backfill.Config {
		c := backfill.DefaultConfig()
		c.FairShare.Weights.Age = 10000
		c.FairShare.MaxAge = 24 * time.Hour
		return c
	}},
	// The default with several holds at once (it had 4 before the
	// synthetic workload without limits showed them keeping more GPUs
	// idle and large jobs waiting longer).
	{"default-2holds", sim.Phalanx, func() backfill.Config { return holds(2) }},
	{"default-4holds", sim.Phalanx, func() backfill.Config { return holds(4) }},
	// The default with smaller gangs eligible for a hold (it takes gangs
	// of a leaf's worth, 128 GPUs on the default cluster): on the ITP
	// traces without limits no gang is that large.
	{"hold-min17", sim.Phalanx, func() backfill.Config { return holdMin(17) }},
	{"hold-min64", sim.Phalanx, func() backfill.Config { return holdMin(64) }},
	{"depth4-agefs", sim.Phalanx, func() backfill.Config {
		c := depthAge(4)
		c.FairShare.Weights = fairshare.Weights{Age: 10000, FairShare: 1000, QOS: 1000, Partition: 1000}
		c.FairShare.MaxAge = 24 * time.Hour
		return c
	}},
}

// holds is the default with up to n holds at once.
func holds(n int) backfill.Config {
	c := backfill.DefaultConfig()
	c.Hold.MaxHolds = n
	return c
}

// holdMin is the default with gangs of at least n GPUs eligible for a
// hold.
func holdMin(n int) backfill.Config {
	c := backfill.DefaultConfig()
	c.Hold.MinGPUs = n
	return c
}

// depthFairAge reserves for the first depth jobs in fair-share order with
// an age term as heavy as the whole fair-share range after maxAge.
func depthFairAge(depth int, maxAge time.Duration) backfill.Config {
	c := easyFairAge(maxAge)
	c.ReservationDepth = depth
	return c
}

// depthAge reserves for the first depth jobs in age order.
func depthAge(depth int) backfill.Config {
	c := fairShareDepth(depth)
	ageOrder(&c)
	return c
}

// fairShareDepth reserves for the first depth jobs in the order of
// fairshare.DefaultConfig (Slurm's multifactor priority: fair share
// first).
func fairShareDepth(depth int) backfill.Config {
	c := backfill.DefaultConfig()
	c.ReservationDepth = depth
	c.ReservationMinGPUs = 0
	c.FairShare = fairshare.DefaultConfig()
	return c
}

// easyFairAge is EASY backfill with fair share, plus an age term as heavy
// as the whole fair-share range once a job has waited maxAge.
func easyFairAge(maxAge time.Duration) backfill.Config {
	c := fairShareDepth(1)
	c.ReservationDepth = 1
	c.FairShare.Weights.Age = c.FairShare.Weights.FairShare
	c.FairShare.MaxAge = maxAge
	return c
}

type trace struct {
	name  string
	jobs  func(seed uint64) ([]sim.TraceJob, error)
	seeds int
	large int // "large job" threshold in GPUs
}

func main() {
	names := flag.String("traces", "synthetic,philly3,itp", "comma-separated: synthetic, philly3, philly4, itp")
	seeds := flag.Int("seeds", 6, "seeds of the synthetic workload")
	data := flag.String("data", "../shared/data", "the shared data folder")
	only := flag.String("policies", "greedy,easy,easy-age,conservative,old-default,default", "comma-separated policy names, or all (with the candidates the default was chosen from)")
	traceSeeds := flag.Int("trace-seeds", 1, "seeds of the real traces (a seed draws the time limits and the no-limit jobs)")
	noLimits := flag.Float64("no-limits", 0, "share of jobs without a time limit (1: none, as on Kubernetes)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.BoolVar(&perSeed, "per-seed", false, "also print each seed's row (named policy/seed)")
	flag.Uint64Var(&firstSeed, "first-seed", 1, "the first seed of every workload: seeds run from it on, so that -first-seed 4 -trace-seeds 3 is a check held out from the default seeds 1 to 3")
	check := flag.Bool("criteria", false, "under each trace, the acceptance criterion of issue 18 (with -no-limits 0) or 13 (with -no-limits 1), figure by figure, when the rows it reads were run, and the seeds on which the default's waits are lower, higher or equal to easy-age's (fifo's)")
	if err := cli.Parse(flag.CommandLine, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "frontier:", err)
		os.Exit(2)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "frontier:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *seeds < 1 || *traceSeeds < 1 || firstSeed < 1 {
		fmt.Fprintln(os.Stderr, "frontier: -seeds, -trace-seeds and -first-seed want at least 1")
		os.Exit(2)
	}
	if !(*noLimits >= 0 && *noLimits <= 1) {
		fmt.Fprintln(os.Stderr, "frontier: -no-limits wants a share in [0, 1]")
		os.Exit(2)
	}
	ts, err := traces(strings.Split(*names, ","), *seeds, *traceSeeds, *data, *noLimits)
	if err == nil {
		_, err = selectPolicies(*only) // before the first trace's runs
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "frontier:", err)
		os.Exit(2)
	}
	for _, t := range ts {
		if err := frontier(os.Stdout, t, *only, *check, *noLimits); err != nil {
			fmt.Fprintln(os.Stderr, "frontier:", err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
	}
}

func readTrace(path string, load, noLimits float64) func(uint64) ([]sim.TraceJob, error) {
	return func(seed uint64) ([]sim.TraceJob, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		jobs, _, err := sim.ReadTrace(f, sim.TraceOptions{LoadFactor: load, Seed: seed, NoLimits: noLimits, Source: filepath.Base(path)})
		return jobs, err
	}
}

func traces(names []string, seeds, traceSeeds int, data string, noLimits float64) ([]trace, error) {
	var out []trace
	for _, n := range names {
		switch n {
		case "synthetic":
			out = append(out, trace{"synthetic", func(seed uint64) ([]sim.TraceJob, error) {
				jobs := sim.Synthetic(seed, 1000, 24*time.Hour, 8)
				if noLimits > 0 {
					jobs = sim.DropLimits(jobs, noLimits, seed)
				}
				return jobs, nil
			}, seeds, 64})
		case "philly3", "philly4":
			load := map[string]float64{"philly3": 3, "philly4": 4}[n]
			out = append(out, trace{n, readTrace(filepath.Join(data, "traces/philly.csv"), load, noLimits), traceSeeds, 16})
		case "itp":
			// ITP's demand is a few hundred GPUs: compressed to load the
			// 2,000-GPU cluster (factors chosen for about 1.2 times its
			// capacity at the busiest).
			for i, load := range []float64{20, 10, 15, 8} {
				p := filepath.Join(data, fmt.Sprintf("traces/itp/itp_cluster0%d.csv", i+1))
				out = append(out, trace{fmt.Sprintf("itp%d@%g", i+1, load), readTrace(p, load, noLimits), traceSeeds, 16})
			}
		default:
			return nil, fmt.Errorf("-traces: unknown trace %q (known: synthetic, philly3, philly4, itp)", n)
		}
	}
	return out, nil
}

func frontier(w io.Writer, t trace, only string, check bool, noLimits float64) error {
	c := topology.Default2000()
	fmt.Fprintf(w, "%s (%d seed(s)), default-2k; large jobs: more than %d GPUs\n", t.name, t.seeds, t.large)
	fmt.Fprintf(w, "%-13s %7s %9s %12s %7s %11s %11s %9s %9s %6s %7s %10s %10s %8s\n", "policy", "util", "pre-drain", "idleQ GPU-h", "idleQ%", "large p95", "large max", "longest", "mean wait", "bsld", "share", "held GPU-h", "resv GPU-h", "cpu")
	chosen, err := selectPolicies(only)
	if err != nil {
		return err
	}
	rows := map[string]*agg{}
	for _, p := range chosen {
		sum := &agg{}
		rows[p.name] = sum
		for seed := firstSeed; seed < firstSeed+uint64(t.seeds); seed++ {
			jobs, err := t.jobs(seed)
			if err != nil {
				return err
			}
			cfg := sim.Config{Cluster: c, ClusterName: "default-2k", Trace: t.name, Policy: p.sim, Seed: seed}
			if p.cfg != nil {
				e := p.cfg()
				cfg.Engine = &e
			}
			r, err := sim.Run(cfg, jobs)
			if err != nil {
				return err
			}
			sum.add(r, t.large)
			if perSeed {
				var one agg
				one.add(r, t.large)
				one.print(w, fmt.Sprintf("%s/%d", p.name, seed), 1)
			}
		}
		sum.print(w, p.name, t.seeds)
	}
	if check {
		printCriteria(w, rows, t.seeds, noLimits)
	}
	fmt.Fprintln(w)
	return nil
}

// perSeed makes frontier print a row per seed before each policy's row.
var perSeed bool

// firstSeed is the first seed of every workload (-first-seed).
var firstSeed uint64 = 1

// agg sums one policy's runs over seeds (means, and the worst for waits).
type agg struct {
	util, idle, idlePct, share float64
	preDrain                   float64 // utilisation before the final drain
	held                       float64 // GPU-hours kept idle by hold mode
	resvFree                   float64 // GPU-hours free on reservations' planned GPUs
	p95, max, longest          time.Duration
	meanWait                   time.Duration // mean wait of every job, summed over seeds
	bsld                       float64       // mean bounded slowdown, summed over seeds
	p95Over64, maxOver64       time.Duration // waits of jobs over 64 GPUs (issue 13's criterion)
	over64                     int           // jobs over 64 GPUs (the simulator's size classes), summed over seeds
	cpu                        time.Duration
	// perSeed keeps each seed's figures that the criteria also compare
	// seed by seed (pairedLine), in seed order.
	perSeed []seedFigures
}

// seedFigures are one seed's figures that the criteria compare seed by
// seed: the large-job waits (over the trace's size and over 64 GPUs) and
// the share gap.
type seedFigures struct {
	p95, max, p95Over64, maxOver64 time.Duration
	share                          float64
}

func (a *agg) add(r *sim.Result, large int) {
	a.util += r.Utilisation
	a.preDrain += r.UtilisationBeforeDrain
	a.idle += r.IdleWhileQueuedGPUSeconds / 3600
	if r.ActiveWindow > 0 {
		a.idlePct += r.IdleWhileQueuedGPUSeconds / (float64(r.ClusterGPUs) * r.ActiveWindow.Seconds())
	}
	a.share += r.WorstShare
	a.held += r.HeldForHoldGPUSeconds / 3600
	a.resvFree += r.ReservedFreeGPUSeconds / 3600
	p95, mx := largeWaits(r, large)
	a.meanWait += meanWait(r)
	a.bsld += r.MeanBoundedSlowdown
	a.p95 = max(a.p95, p95)
	a.max = max(a.max, mx)
	a.longest = max(a.longest, r.LongestWait)
	a.p95Over64, a.maxOver64 = max(a.p95Over64, r.LargeWaitP95), max(a.maxOver64, r.LargeWaitMax)
	a.perSeed = append(a.perSeed, seedFigures{p95: p95, max: mx, p95Over64: r.LargeWaitP95, maxOver64: r.LargeWaitMax, share: r.WorstShare})
	for i, c := range sim.SizeClasses {
		if c.Min > 64 && i < len(r.Waits) {
			a.over64 += r.Waits[i].Jobs
		}
	}
	a.cpu += r.CycleTotal
}

func (a *agg) print(w io.Writer, name string, n int) {
	f := float64(n)
	fmt.Fprintf(w, "%-13s %6.1f%% %8.1f%% %12.0f %6.2f%% %11s %11s %9s %9s %6.1f %7.4f %10.0f %10.0f %8s\n", name, 100*a.util/f, 100*a.preDrain/f, a.idle/f, 100*a.idlePct/f,
		a.p95.Round(time.Minute), a.max.Round(time.Minute), a.longest.Round(time.Minute), (a.meanWait / time.Duration(n)).Round(time.Minute), a.bsld/f,
		a.share/f, a.held/f, a.resvFree/f, a.cpu.Round(time.Second))
}

// meanWait returns the mean wait of every job of r, a job that never
// started counting up to the end of the run (as largeWaits does). On the
// loaded traces nearly every job fits on one node (99.6% of Philly's,
// 97.2% of ITP cluster 4's), so it shows what the reservations kept for
// gangs cost the others.
func meanWait(r *sim.Result) time.Duration {
	if len(r.Outcomes) == 0 {
		return 0
	}
	sum, n := 0.0, 0 // seconds: a Duration (292 years) overflows at 82,000 waits of 1.3 days on average
	for _, o := range r.Outcomes {
		if !o.Rejected && o.Submit <= r.End {
			sum += jobWait(&o, r.End).Seconds()
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return time.Duration(sum / float64(n) * float64(time.Second))
}

// jobWait is a job's wait: to its start, or to end when it never
// started.
func jobWait(o *sim.Outcome, end time.Duration) time.Duration {
	if o.Started || o.Finished {
		return o.Start - o.Submit
	}
	return end - o.Submit
}

// largeWaits returns the p95 and max wait of jobs of more than large GPUs.
func largeWaits(r *sim.Result, large int) (time.Duration, time.Duration) {
	var waits []time.Duration
	for _, o := range r.Outcomes {
		if o.GPUs <= large || o.Rejected || o.Submit > r.End {
			continue
		}
		waits = append(waits, jobWait(&o, r.End))
	}
	return sim.Quantiles(waits)
}

// selectPolicies returns the named policies in table order, then each
// name that sets fields of the default, in the order given: key=value
// pairs joined by "+", with keys fs (fair-share weight), age (age weight
// per day), depth (reservation depth), rmin (ReservationMinGPUs), holds
// (hold mode off with 0), holdmin (Hold.MinGPUs), holdshare
// (Hold.MaxShare), backlogfree (BacklogFreeShare), and the durations rwait (ReservationAnyAfter),
// backlog (BacklogAfter), holdwait, capwait, budget, hysteresis and starve (the fair-share
// starvation bound). For example
// fs=500+rmin=9+rwait=24h.
func selectPolicies(only string) ([]policy, error) {
	var out []policy
	for _, p := range policies {
		if only == "all" || strings.Contains(","+only+",", ","+p.name+",") {
			out = append(out, p)
		}
	}
	for _, name := range strings.Split(only, ",") {
		if !strings.Contains(name, "=") {
			if name != "all" && !slices.ContainsFunc(policies, func(p policy) bool { return p.name == name }) {
				return nil, fmt.Errorf("-policies: unknown policy %q", name)
			}
			continue
		}
		c := backfill.DefaultConfig()
		for _, kv := range strings.Split(name, "+") {
			k, v, _ := strings.Cut(kv, "=")
			if err := setField(&c, k, v); err != nil {
				return nil, fmt.Errorf("policy %s: %w", name, err)
			}
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("policy %s: %w", name, err)
		}
		out = append(out, policy{name, sim.Phalanx, func() backfill.Config { return c }})
	}
	return out, nil
}

// setField sets the field of c that key names to value.
func setField(c *backfill.Config, key, value string) error {
	switch key {
	case "holdshare", "backlogfree":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return err
		}
		if key == "backlogfree" {
			c.BacklogFreeShare = f
		} else {
			c.Hold.MaxShare = f
		}
		return nil
	case "fs", "age", "depth", "holds", "rmin", "holdmin":
		n, err := strconv.ParseUint(value, 10, 32)
		if err != nil {
			return err
		}
		switch key {
		case "fs":
			c.FairShare.Weights.FairShare = uint32(n)
		case "age":
			if n > math.MaxUint32/365 { // the weight would wrap around
				return fmt.Errorf("age %d per day: over %d", n, math.MaxUint32/365)
			}
			c.FairShare.Weights.Age = uint32(n) * 365
		case "depth":
			c.ReservationDepth = int(n)
		case "rmin":
			c.ReservationMinGPUs = int(n)
		case "holdmin":
			c.Hold.MinGPUs = int(n)
		case "holds":
			c.Hold.MaxHolds = int(n)
			c.Hold.Enabled = n > 0
			if n == 0 {
				c.Hold.MaxHolds = 1
			}
		}
		return nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return err
	}
	switch key {
	case "rwait":
		c.ReservationAnyAfter = d
	case "backlog":
		c.BacklogAfter = d
	case "holdwait":
		c.Hold.MinWait = d
	case "capwait":
		c.Hold.CapWait = d
	case "budget":
		c.Hold.Budget = d
	case "hysteresis":
		c.Hold.Hysteresis = d
	case "starve":
		c.FairShare.StarvationBound = d
	default:
		return fmt.Errorf("unknown key %q", key)
	}
	return nil
}
