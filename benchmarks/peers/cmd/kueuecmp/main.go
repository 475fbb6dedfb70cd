// Command kueuecmp places the same requests with Phalanx and with Kueue
// v0.17.0 Topology-Aware Scheduling on identical inventories and free
// states, and prints a markdown report: time per decision, leaves and
// spines spanned, and every case where Kueue did better.
//
//	cd benchmarks/peers && go run ./cmd/kueuecmp
//	go run ./cmd/kueuecmp -inv 2k,20k -rounds 5 -round 100ms
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/benchmarks/peers/kueuecmp"
)

func main() {
	invFlag := flag.String("inv", "2k,20k", "inventories, comma-separated: 2k (Default2000, 250 nodes), 20k (fat tree, 2,500 nodes)")
	statesFlag := flag.String("states", "empty,frag25,frag50", "free states, comma-separated: empty, frag25, frag50")
	podsFlag := flag.String("pod-gpus", "8,1", "GPUs per pod, comma-separated (8 = whole nodes, 1)")
	totalsFlag := flag.String("gpus", "8,64,512,1200", "request sizes in GPUs, comma-separated")
	rounds := flag.Int("rounds", 5, "timing rounds per measurement (the fastest is reported)")
	round := flag.Duration("round", 60*time.Millisecond, "minimum duration of one timing round")
	sweep := flag.Int("sweep", 0, "instead of the timed table, compare answers only on this many seeds per busy fraction, for request sizes from 1 to 1,200 GPUs (1-16, multiples of 8, and 8k+5 every 40)")
	sweepBusy := flag.String("sweep-busy", "0,0.1,0.25,0.4,0.55,0.7,0.85", "busy fractions of the sweep")
	sweepSkewed := flag.Bool("sweep-skewed", true, "add skewed states (every leaf its own random load) to the sweep")
	flag.Parse()

	if *sweep > 0 {
		if err := runSweep(*invFlag, *sweepBusy, *sweepSkewed, *podsFlag, *sweep); err != nil {
			fmt.Fprintln(os.Stderr, "kueuecmp:", err)
			os.Exit(1)
		}
		return
	}

	if err := run(*invFlag, *statesFlag, *podsFlag, *totalsFlag, kueuecmp.Timer{Rounds: *rounds, RoundTime: *round}); err != nil {
		fmt.Fprintln(os.Stderr, "kueuecmp:", err)
		os.Exit(1)
	}
}

func run(invFlag, statesFlag, podsFlag, totalsFlag string, t kueuecmp.Timer) error {
	invs, err := kueuecmp.Inventories(split(invFlag)...)
	if err != nil {
		return err
	}
	var states []kueuecmp.StateSpec
	for _, name := range split(statesFlag) {
		found := false
		for _, sp := range kueuecmp.DefaultStates {
			if sp.Name == name {
				states, found = append(states, sp), true
			}
		}
		if !found {
			return fmt.Errorf("unknown state %q", name)
		}
	}
	podGPUs, err := ints(podsFlag)
	if err != nil {
		return err
	}
	for _, g := range podGPUs {
		if g != 1 && g != 8 {
			return fmt.Errorf("pod size %d: only 1 and 8 GPUs have an exact Phalanx equivalent", g)
		}
	}
	totals, err := ints(totalsFlag)
	if err != nil {
		return err
	}
	cases := kueuecmp.Cases(podGPUs, totals)

	fmt.Printf("# Phalanx vs Kueue v0.17.0 TAS\n\n")
	fmt.Printf("Command: `%s` (in benchmarks/peers)  \n", command())
	fmt.Printf("Date: %s  \n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("Machine: %s/%s, %d CPUs (GOMAXPROCS %d), %s, %s  \n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), cpuModel(), runtime.Version())
	fmt.Printf("Timing: fastest of %d rounds of at least %s each, per measurement; load average before the run: %s.\n\n", t.Rounds, t.RoundTime, loadAvg())

	var wins []*kueuecmp.Result
	for _, inv := range invs {
		c := inv.Cluster
		fmt.Printf("## Inventory %s: %d nodes, %d GPUs, levels %v, %d leaves, %d spines\n\n",
			inv.Name, c.NumNodes(), c.TotalGPUs(), c.Levels(), c.NumDomains(c.Depth()-1), c.NumDomains(1))
		var results []*kueuecmp.Result
		for _, sp := range states {
			fs, err := kueuecmp.NewFreeState(c, sp)
			if err != nil {
				return err
			}
			rn, err := kueuecmp.NewRunner(inv, fs)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "%s/%s: %d of %d GPUs free, %d running jobs\n", inv.Name, fs.Name, fs.State.FreeGPUs(), c.TotalGPUs(), len(fs.Jobs))
			for _, kc := range cases {
				r, err := rn.Run(kc, &t)
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "  %-42s P %10s  K %10s  K+snap %10s  leaves %s\n", kc, kueuecmp.FormatDuration(r.PhalanxNs),
					kueuecmp.FormatDuration(r.KueueNs), kueuecmp.FormatDuration(r.KueueCycleNs), r.Verdict())
				results = append(results, r)
				if r.KueueWins() {
					wins = append(wins, r)
				}
			}
		}
		fmt.Print(kueuecmp.Table(results))
		fmt.Println()
		fmt.Print(kueuecmp.Summary(results))
		fmt.Println()
		fmt.Printf("Kueue snapshot alone (median over cases) per state: %s\n\n", snapshotMedians(results))
	}
	if len(wins) > 0 {
		fmt.Printf("## !!! Cases where Kueue beat Phalanx (%d)\n\n", len(wins))
		for _, r := range wins {
			fmt.Println(kueuecmp.Details(r))
		}
	} else {
		fmt.Printf("No case where Kueue spans fewer leaves than Phalanx or places what Phalanx does not.\n")
	}
	return nil
}

func runSweep(invFlag, busyFlag string, skewed bool, podsFlag string, seeds int) error {
	invs, err := kueuecmp.Inventories(split(invFlag)...)
	if err != nil {
		return err
	}
	var busy []float64
	for _, f := range split(busyFlag) {
		b, err := strconv.ParseFloat(f, 64)
		if err != nil || b < 0 || b >= 1 {
			return fmt.Errorf("bad busy fraction %q", f)
		}
		busy = append(busy, b)
	}
	podGPUs, err := ints(podsFlag)
	if err != nil {
		return err
	}
	// 1 to 16 GPUs, every multiple of 8 up to 1,200, and odd sizes
	// 8k+5 every 40 GPUs (1-GPU pods only).
	var totals []int
	for g := 1; g <= 1200; g++ {
		if g <= 16 || g%8 == 0 || g%40 == 5 {
			totals = append(totals, g)
		}
	}
	fmt.Printf("# Phalanx vs Kueue v0.17.0 TAS: answer sweep\n\n")
	fmt.Printf("Command: `%s` (in benchmarks/peers)  \n", command())
	fmt.Printf("Date: %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	total := 0
	for _, inv := range invs {
		st, err := kueuecmp.Sweep(inv, seeds, busy, skewed, podGPUs, totals, os.Stderr)
		if err != nil {
			return err
		}
		fmt.Printf("## Inventory %s: %d states (busy %v, skewed %v, seeds 1..%d), %d decisions\n\n", inv.Name, st.States, busy, skewed, seeds, st.Decisions)
		names := make([]string, 0, len(st.Verdicts))
		for v := range st.Verdicts {
			names = append(names, v)
		}
		slices.Sort(names)
		for _, v := range names {
			fmt.Printf("- %s: %d\n", v, st.Verdicts[v])
		}
		fmt.Println()
		fmt.Printf("- Kueue on no more leaves but fewer spines: %d\n\n", len(st.SpineWins))
		for _, r := range st.Wins {
			fmt.Println(kueuecmp.Details(r))
		}
		for i, r := range st.SpineWins {
			if i == 3 {
				fmt.Printf("(%d more with fewer spines for Kueue)\n\n", len(st.SpineWins)-i)
				break
			}
			fmt.Println(kueuecmp.Details(r))
		}
		total += len(st.Wins)
	}
	if total > 0 {
		fmt.Printf("## !!! Kueue beat Phalanx in %d decisions (details above)\n", total)
	} else {
		fmt.Printf("No decision where Kueue spans fewer leaves than Phalanx or places what Phalanx does not.\n")
	}
	return nil
}

func snapshotMedians(results []*kueuecmp.Result) string {
	by := map[string][]float64{}
	var order []string
	for _, r := range results {
		if _, ok := by[r.State.Name]; !ok {
			order = append(order, r.State.Name)
		}
		by[r.State.Name] = append(by[r.State.Name], r.SnapshotNs)
	}
	var parts []string
	for _, name := range order {
		v := by[name]
		slices.Sort(v)
		parts = append(parts, name+" "+kueuecmp.FormatDuration(v[len(v)/2]))
	}
	return strings.Join(parts, ", ")
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// command renders the command line as it would be typed.
func command() string {
	return strings.TrimSpace("go run ./cmd/kueuecmp " + strings.Join(os.Args[1:], " "))
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}
