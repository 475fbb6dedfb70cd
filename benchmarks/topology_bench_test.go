package benchmarks

import (
	"os"
	"testing"
	"testing/fstest"

	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/slurm"
)

// largeEnv turns on the million-node cases of the topology benchmarks,
// which take seconds and about 1 GB; without it they are skipped, so that
// `go test -bench .` on the suite stays as fast as before.
const largeEnv = "PHALANX_BENCH_LARGE"

// topologySize is one cluster size of the topology benchmarks: a fat tree
// of 8-GPU nodes.
type topologySize struct {
	name  string
	f     topology.FatTreeConfig
	large bool
}

var topologySizes = []topologySize{
	{"gpus=2k", topology.FatTreeConfig{Spines: 4, LeavesPerSpine: 4, NodesPerLeaf: 16, GPUsPerNode: 8}, false},     // 256 nodes, 2,048 GPUs
	{"gpus=100k", topology.FatTreeConfig{Spines: 25, LeavesPerSpine: 20, NodesPerLeaf: 25, GPUsPerNode: 8}, false}, // 12,500 nodes
	{"nodes=1M", topology.FatTreeConfig{Spines: 40, LeavesPerSpine: 1000, NodesPerLeaf: 25, GPUsPerNode: 8}, true}, // 8,000,000 GPUs
}

// skipLarge skips a million-node case unless PHALANX_BENCH_LARGE=1, and
// always in -short mode.
func skipLarge(b *testing.B, sz topologySize) {
	if sz.large && (testing.Short() || os.Getenv(largeEnv) != "1") {
		b.Skipf("set %s=1 to run the million-node case", largeEnv)
	}
}

// reportTopology reports the cluster's size and the time per node.
func reportTopology(b *testing.B, c *topology.Cluster) {
	domains := 0
	for l := range c.Depth() {
		domains += c.NumDomains(l)
	}
	b.ReportMetric(float64(c.NumNodes()), "nodes")
	b.ReportMetric(float64(domains), "domains")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.NumNodes()), "ns/node")
}

// BenchmarkTopologyBuild measures topology.Build on the Spec of a fat
// tree (the Spec is made before the timer starts).
func BenchmarkTopologyBuild(b *testing.B) {
	for _, sz := range topologySizes {
		b.Run(sz.name, func(b *testing.B) {
			skipLarge(b, sz)
			spec := sz.f.Spec()
			b.ReportAllocs()
			var c *topology.Cluster
			for b.Loop() {
				var err error
				if c, err = topology.Build(spec); err != nil {
					b.Fatal(err)
				}
			}
			reportTopology(b, c)
		})
	}
}

// BenchmarkTopologyLoad measures slurm.LoadConf, parsing and building, on
// the same trees written as a topology.conf in memory (about 2 MB at a
// million nodes; the text is made before the timer starts).
func BenchmarkTopologyLoad(b *testing.B) {
	for _, sz := range topologySizes {
		b.Run(sz.name, func(b *testing.B) {
			skipLarge(b, sz)
			fsys := fstest.MapFS{"topology.conf": {Data: []byte(testcluster.FatTreeConf(sz.f))}}
			b.ReportAllocs()
			var c *topology.Cluster
			for b.Loop() {
				var err error
				if c, _, err = slurm.LoadConf(fsys, "topology.conf", slurm.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			reportTopology(b, c)
		})
	}
}
