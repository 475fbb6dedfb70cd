// Command phalanxrun is the Phalanx side of the Slurm comparison in
// benchmarks/peers/slurm (run.sh drives both sides; see the README there).
//
//	phalanxrun gen -out stream.tsv [-seed 1 -pending 300 ...]
//	phalanxrun compare -stream stream.tsv -topology topology.conf [-slurm DIR] [-json out.json]
//
// gen writes the seeded job stream that run.sh submits to slurmctld.
// compare replays the same stream through the Phalanx backfill engine on
// the cluster read from the same topology.conf, reads what Slurm did from
// run.sh's output folder (when -slurm is given), and prints a Markdown
// table comparing the two.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/slurm"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "compare":
		err = compare(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "phalanxrun:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: phalanxrun gen -out FILE [flags] | phalanxrun compare -stream FILE -topology FILE [-slurm DIR] [-json FILE]")
	os.Exit(2)
}

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	out := fs.String("out", "", "stream file to write (default stdout)")
	g := GenConfig{}
	fs.Uint64Var(&g.Seed, "seed", 1, "random seed")
	fs.IntVar(&g.Nodes, "nodes", 256, "cluster size in nodes")
	fs.IntVar(&g.Churn, "churn", 2, "cancel+refill rounds after the first fill")
	fs.Float64Var(&g.ChurnShare, "churn-share", 0.3, "share of running jobs cancelled per churn round")
	fs.IntVar(&g.Gap, "gap", 12, "nodes left free after the last refill")
	fs.IntVar(&g.Pending, "pending", 300, "jobs queued behind the full cluster")
	fs.IntVar(&g.MaxNodes, "max-nodes", 32, "largest job, in nodes")
	_ = fs.Parse(args)
	if g.Nodes < 1 || g.Pending < 0 || g.MaxNodes < 1 || g.Gap < 0 || g.Churn < 0 {
		return fmt.Errorf("gen: bad flags %+v", g)
	}
	w := os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	return WriteStream(w, g, Generate(g))
}

func compare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	streamPath := fs.String("stream", "", "job stream (from gen)")
	topoPath := fs.String("topology", "", "Slurm topology.conf of the cluster")
	slurmDir := fs.String("slurm", "", "run.sh output folder with Slurm's results (omit for Phalanx only)")
	jsonPath := fs.String("json", "", "also write the summaries as JSON to this file")
	dumpPath := fs.String("dump", "", "also write every running and planned placement as TSV to this file")
	runs := fs.Int("runs", 5, "Phalanx replays; the median first-cycle time is reported")
	steady := fs.Int("steady", 5, "Schedule calls after the first one of the backfill phase")
	phalanxOnly := fs.String("only", "", "replay only this Phalanx config: conservative or default")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the Phalanx replays to this file")
	_ = fs.Parse(args)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *streamPath == "" || *topoPath == "" {
		return fmt.Errorf("compare: -stream and -topology are required")
	}
	sf, err := os.Open(*streamPath)
	if err != nil {
		return err
	}
	ev, err := ReadStream(sf)
	sf.Close()
	if err != nil {
		return err
	}
	c, _, err := slurm.LoadConf(os.DirFS(filepath.Dir(*topoPath)), filepath.Base(*topoPath), slurm.Options{})
	if err != nil {
		return err
	}
	g, err := newGeometry(c)
	if err != nil {
		return err
	}
	var outs []*Outcome
	if *slurmDir != "" {
		o, err := ReadSlurm(*slurmDir, c)
		if err != nil {
			return fmt.Errorf("slurm results: %w", err)
		}
		outs = append(outs, o)
	}
	for _, rc := range []ReplayConfig{
		{Key: "conservative", Name: "Phalanx conservative", Depth: backfill.Conservative, Steady: *steady},
		{Key: "default", Name: fmt.Sprintf("Phalanx depth %d (default)", backfill.DefaultConfig().ReservationDepth), Depth: backfill.DefaultConfig().ReservationDepth, Steady: *steady},
	} {
		if *phalanxOnly != "" && *phalanxOnly != rc.Key {
			continue
		}
		o, err := Replay(c, ev, rc, *runs)
		if err != nil {
			return err
		}
		outs = append(outs, o)
	}
	if len(outs) > 1 && *slurmDir != "" {
		outs[0].Notes = append(outs[0].Notes, sameJobs(outs[0], outs[1]))
	}
	queue := pendingIDs(ev)
	var cols []Summary
	for _, o := range outs {
		cols = append(cols, Summarize(g, o, queue))
	}
	host, _ := os.Hostname()
	fmt.Printf("Cluster: %d nodes, %d leaves of %d, %d spines, from %s. Stream: %s, %d jobs, %d in the pending stream.\n",
		c.NumNodes(), c.NumDomains(g.leaf), g.leafSize, spines(c, g), *topoPath, *streamPath, len(jobSizes(ev)), len(queue))
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	fmt.Printf("Machine: %s, %d CPUs, load average %s (timings are only comparable on an idle machine), %s, %s.\n\n",
		host, runtime.NumCPU(), load, runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	WriteTable(os.Stdout, g, cols)
	fmt.Println()
	for _, o := range outs {
		fmt.Println("- " + strings.Join(o.Notes, "\n- "))
	}
	if *dumpPath != "" {
		if err := dump(*dumpPath, g, outs); err != nil {
			return err
		}
	}
	if *jsonPath != "" {
		data, err := json.MarshalIndent(cols, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonPath, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func spines(c *topology.Cluster, g *Geometry) int {
	if g.spine < 0 {
		return 0
	}
	return c.NumDomains(g.spine)
}

// sameJobs says whether two outcomes run the same jobs: the stream is the
// same, but a job the two place differently could change what backfills.
func sameJobs(a, b *Outcome) string {
	differ := 0
	for id := range a.Running {
		if _, ok := b.Running[id]; !ok {
			differ++
		}
	}
	for id := range b.Running {
		if _, ok := a.Running[id]; !ok {
			differ++
		}
	}
	if differ == 0 {
		return fmt.Sprintf("%s and %s run the same %d jobs at the end", a.Name, b.Name, len(a.Running))
	}
	return fmt.Sprintf("%s and %s differ on %d running jobs", a.Name, b.Name, differ)
}

// dump writes one line per running or planned job of every outcome.
func dump(path string, g *Geometry, outs []*Outcome) error {
	var b strings.Builder
	b.WriteString("scheduler\tkind\tjob\tnodes\tleaves\tspines\tstart_h\thostlist\n")
	line := func(o *Outcome, kind string, set map[string][]string) {
		for _, id := range slices.Sorted(maps.Keys(set)) {
			nodes := set[id]
			spines := 0
			if g.spine >= 0 {
				spines = g.domains(nodes, g.spine)
			}
			start := ""
			if d, ok := o.PlannedStart[id]; ok && kind == "planned" {
				start = fmt.Sprintf("%.2f", d.Hours())
			}
			fmt.Fprintf(&b, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", o.Name, kind, id, len(nodes),
				g.domains(nodes, g.leaf), spines, start, topology.CompressHostlist(slices.Sorted(slices.Values(nodes))))
		}
	}
	for _, o := range outs {
		line(o, "running", o.Running)
		line(o, "planned", o.Planned)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
