// Command topoload measures building and loading a large generated cluster
// in a fresh process, so that its peak resident set size is the cost of
// that one operation (plus its input). It prints one line:
//
//	go run ./benchmarks/cmd/topoload -nodes 1000000 -what build
//	go run ./benchmarks/cmd/topoload -nodes 1000000 -what load
//
// build times topology.Build on the Spec of a fat tree (25 nodes per leaf,
// 1,000 leaves per spine, 8 GPUs per node; the Spec is made first and not
// timed); load times slurm.LoadConf on the same tree written as a
// topology.conf in memory (the text is made first and not timed).
// fattree times topology.FatTree, Spec and Build together.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing/fstest"
	"time"

	"github.com/phalanx-sched/phalanx/internal/cli"
	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/slurm"
)

func main() {
	nodes := flag.Int("nodes", 1_000_000, "nodes of the cluster (a multiple of 25)")
	what := flag.String("what", "build", "build, load or fattree")
	if err := cli.Parse(flag.CommandLine, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "topoload:", err)
		os.Exit(2)
	}
	if err := run(*nodes, *what); err != nil {
		fmt.Fprintln(os.Stderr, "topoload:", err)
		os.Exit(1)
	}
}

// config returns a fat tree of n nodes: 25 per leaf, up to 1,000 leaves
// per spine.
func config(n int) (topology.FatTreeConfig, error) {
	const perLeaf, perSpine = 25, 1000
	leaves := n / perLeaf
	if n%perLeaf != 0 || leaves <= 0 { // a negative count divided by zero spines below
		return topology.FatTreeConfig{}, fmt.Errorf("-nodes %d is not a positive multiple of %d", n, perLeaf)
	}
	spines := (leaves + perSpine - 1) / perSpine
	if leaves%spines != 0 {
		return topology.FatTreeConfig{}, fmt.Errorf("-nodes %d does not split into equal spines", n)
	}
	return topology.FatTreeConfig{Spines: spines, LeavesPerSpine: leaves / spines, NodesPerLeaf: perLeaf, GPUsPerNode: 8}, nil
}

func run(n int, what string) error {
	f, err := config(n)
	if err != nil {
		return err
	}
	var op func() (*topology.Cluster, error)
	switch what {
	case "build":
		spec := f.Spec()
		op = func() (*topology.Cluster, error) { return topology.Build(spec) }
	case "load":
		fsys := fstest.MapFS{"topology.conf": {Data: []byte(testcluster.FatTreeConf(f))}}
		op = func() (*topology.Cluster, error) {
			c, _, err := slurm.LoadConf(fsys, "topology.conf", slurm.Options{})
			return c, err
		}
	case "fattree":
		op = func() (*topology.Cluster, error) { return topology.FatTree(f) }
	default:
		return fmt.Errorf("-what %q: want build, load or fattree", what)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	c, err := op()
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	runtime.ReadMemStats(&after)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	runtime.KeepAlive(c)
	domains := 0
	for l := range c.Depth() {
		domains += c.NumDomains(l)
	}
	fmt.Printf("%s: %d nodes, %d GPUs, %d domains in %.2f s; allocated %d MiB in %d allocations; peak RSS of the process %d MiB\n",
		what, c.NumNodes(), c.TotalGPUs(), domains, elapsed.Seconds(),
		(after.TotalAlloc-before.TotalAlloc)>>20, after.Mallocs-before.Mallocs, ru.Maxrss>>10)
	return nil
}
