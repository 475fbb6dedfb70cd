package topology

import (
	"fmt"
	"math/big"
)

// Default cluster shape, used by every example, test and benchmark that
// says "the default cluster": 250 nodes x 8 GPUs = 2,000 GPUs, 16 nodes per
// leaf (16 leaves, the last holding 10), 4 leaves per spine (4 spines, the
// last holding 4 leaves of which one is short), one core.
const (
	DefaultNodes          = 250
	DefaultGPUsPerNode    = 8
	DefaultNodesPerLeaf   = 16
	DefaultLeavesPerSpine = 4
)

// Default2000 returns the built-in default cluster: 250 nodes of 8 GPUs
// (2,000 GPUs) named n000..n249, levels core > spine > leaf, 16 nodes per
// leaf (leaf00..leaf15, the last holding 10 nodes), 4 leaves per spine
// (spine0..spine3), one core. Each node's GPUs form two NUMA halves (0-3,
// 4-7) and four PCIe pairs.
func Default2000() *Cluster {
	c, err := Build(DefaultSpec())
	if err != nil {
		panic(err) // the built-in spec is valid by construction
	}
	return c
}

// DefaultSpec returns the ClusterSpec of Default2000.
func DefaultSpec() ClusterSpec {
	s := ClusterSpec{Levels: []string{"core", "spine", "leaf"}}
	for i := range DefaultNodes {
		leaf := i / DefaultNodesPerLeaf
		spine := leaf / DefaultLeavesPerSpine
		s.Nodes = append(s.Nodes, NodeSpec{
			Name:   fmt.Sprintf("n%03d", i),
			GPUs:   DefaultGPUsPerNode,
			Groups: []uint64{0x03, 0x0c, 0x30, 0xc0, 0x0f, 0xf0},
			Path:   []string{"core", fmt.Sprintf("spine%d", spine), fmt.Sprintf("leaf%02d", leaf)},
		})
	}
	return s
}

// FatTreeConfig describes a generated fat tree: one core, Spines spines,
// LeavesPerSpine leaves under each, NodesPerLeaf nodes under each leaf,
// GPUsPerNode GPUs per node.
type FatTreeConfig struct {
	Spines, LeavesPerSpine, NodesPerLeaf, GPUsPerNode int
}

// MaxGeneratedNodes bounds the node count of a generated cluster (FatTree,
// NVL72): 16,777,216 nodes, so that a node ID and every per-domain GPU
// counter (int32, at 64 GPUs a node) fit with room to spare, and so that a
// mistyped count is refused before anything is allocated.
const MaxGeneratedNodes = 1 << 24

// Validate reports whether every count is positive, GPUsPerNode is at
// most 64 and the node count Spines x LeavesPerSpine x NodesPerLeaf is at
// most MaxGeneratedNodes.
func (f *FatTreeConfig) Validate() error {
	if f.Spines < 1 || f.LeavesPerSpine < 1 || f.NodesPerLeaf < 1 {
		return fmt.Errorf("%w: fat tree %+v: counts must be positive", ErrInvalidSpec, f)
	}
	if f.GPUsPerNode < 1 || f.GPUsPerNode > MaxGPUsPerNode {
		return fmt.Errorf("%w: fat tree GPUsPerNode %d", ErrGPUCount, f.GPUsPerNode)
	}
	if !nodesWithin(f.Spines, f.LeavesPerSpine, f.NodesPerLeaf) {
		return fmt.Errorf("%w: fat tree Spines x LeavesPerSpine x NodesPerLeaf = %d x %d x %d is %s nodes, more than MaxGeneratedNodes (%d)",
			ErrInvalidSpec, f.Spines, f.LeavesPerSpine, f.NodesPerLeaf, productText(f.Spines, f.LeavesPerSpine, f.NodesPerLeaf), MaxGeneratedNodes)
	}
	return nil
}

// nodesWithin reports whether the product of the positive counts is at
// most MaxGeneratedNodes, without overflowing.
func nodesWithin(counts ...int) bool {
	n := 1
	for _, k := range counts {
		if k > MaxGeneratedNodes/n {
			return false
		}
		n *= k
	}
	return true
}

// productText renders the product of positive counts exactly.
func productText(counts ...int) string {
	p := big.NewInt(1)
	for _, k := range counts {
		p.Mul(p, big.NewInt(int64(k)))
	}
	return p.String()
}

// FatTree builds the fat tree f: levels core > spine > leaf, nodes named
// node00000..., leaves leaf0000..., spines spine000....
func FatTree(f FatTreeConfig) (*Cluster, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return Build(f.Spec())
}

// Spec returns the ClusterSpec of the fat tree f (f must be valid). The nodes of
// one leaf share one Path slice.
func (f FatTreeConfig) Spec() ClusterSpec {
	s := ClusterSpec{Levels: []string{"core", "spine", "leaf"}, Nodes: make([]NodeSpec, 0, f.Spines*f.LeavesPerSpine*f.NodesPerLeaf)}
	n := 0
	for sp := range f.Spines {
		spine := fmt.Sprintf("spine%03d", sp)
		for lf := range f.LeavesPerSpine {
			path := []string{"core", spine, fmt.Sprintf("leaf%04d", sp*f.LeavesPerSpine+lf)}
			for range f.NodesPerLeaf {
				s.Nodes = append(s.Nodes, NodeSpec{Name: fmt.Sprintf("node%05d", n), GPUs: f.GPUsPerNode, Path: path})
				n++
			}
		}
	}
	return s
}

// FatTree100k returns the 100,000-GPU fat tree used by the benchmarks:
// 12,500 nodes x 8 GPUs, 25 nodes per leaf, 20 leaves per spine, 25 spines.
func FatTree100k() *Cluster {
	c, err := FatTree(FatTreeConfig{Spines: 25, LeavesPerSpine: 20, NodesPerLeaf: 25, GPUsPerNode: 8})
	if err != nil {
		panic(err)
	}
	return c
}

// NVL72Config describes a generated GB200 NVL72-style layout: racks of
// NodesPerRack nodes x GPUsPerNode GPUs, each rack one NVLink block under
// its own leaf switch, RacksPerSpine leaves under each spine, one core.
type NVL72Config struct {
	Racks, NodesPerRack, GPUsPerNode, RacksPerSpine int
}

// NVL72 builds the layout n: levels core > spine > leaf > block, one block
// per leaf, nodes named rack<r>-n<k>. Counts must be positive,
// GPUsPerNode at most 64 and Racks x NodesPerRack at most
// MaxGeneratedNodes.
func NVL72(n NVL72Config) (*Cluster, error) {
	if n.Racks < 1 || n.NodesPerRack < 1 || n.RacksPerSpine < 1 {
		return nil, fmt.Errorf("%w: NVL72 %+v: counts must be positive", ErrInvalidSpec, n)
	}
	if n.GPUsPerNode < 1 || n.GPUsPerNode > MaxGPUsPerNode {
		return nil, fmt.Errorf("%w: NVL72 GPUsPerNode %d", ErrGPUCount, n.GPUsPerNode)
	}
	if !nodesWithin(n.Racks, n.NodesPerRack) {
		return nil, fmt.Errorf("%w: NVL72 Racks x NodesPerRack = %d x %d is %s nodes, more than MaxGeneratedNodes (%d)",
			ErrInvalidSpec, n.Racks, n.NodesPerRack, productText(n.Racks, n.NodesPerRack), MaxGeneratedNodes)
	}
	s := ClusterSpec{Levels: []string{"core", "spine", "leaf", "block"}}
	for r := range n.Racks {
		sp := r / n.RacksPerSpine
		for k := range n.NodesPerRack {
			s.Nodes = append(s.Nodes, NodeSpec{
				Name: fmt.Sprintf("rack%02d-n%02d", r, k),
				GPUs: n.GPUsPerNode,
				Path: []string{"core", fmt.Sprintf("spine%d", sp), fmt.Sprintf("leaf%02d", r), fmt.Sprintf("nvl%02d", r)},
			})
		}
	}
	return Build(s)
}

// NVL72Default returns the 2,016-GPU NVL72 layout used by tests and
// benchmarks: 28 racks x 18 nodes x 4 GPUs, 4 racks per spine.
func NVL72Default() *Cluster {
	c, err := NVL72(NVL72Config{Racks: 28, NodesPerRack: 18, GPUsPerNode: 4, RacksPerSpine: 4})
	if err != nil {
		panic(err)
	}
	return c
}
