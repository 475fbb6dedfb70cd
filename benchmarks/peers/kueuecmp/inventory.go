// Package kueuecmp compares Phalanx placement with Kueue's Topology-Aware
// Scheduling (TAS) on identical inventories, free states and requests.
//
// Both libraries are driven in process, without an API server: Phalanx
// through placement.Placer.Place on a topology.State, Kueue through its
// scheduler cache (sigs.k8s.io/kueue/pkg/cache/scheduler), filled with the
// same nodes, topology and used GPUs, and its TASFlavorSnapshot's
// FindTopologyAssignmentsForFlavor. See the module's README for how the
// comparison is kept fair.
package kueuecmp

import (
	"fmt"
	"math/bits"
	"math/rand/v2"

	"github.com/phalanx-sched/phalanx/topology"
)

// Inventory is a named cluster.
type Inventory struct {
	Name    string
	Cluster *topology.Cluster
}

// Inventories returns the inventories by name: "2k" is the default
// 2,000-GPU cluster (topology.Default2000: 250 nodes x 8 GPUs, 16 nodes per
// leaf, 4 leaves per spine), "20k" a 2,500-node fat tree (10 spines x 10
// leaves x 25 nodes x 8 GPUs = 20,000 GPUs).
func Inventories(names ...string) ([]Inventory, error) {
	var out []Inventory
	for _, n := range names {
		switch n {
		case "2k":
			out = append(out, Inventory{Name: n, Cluster: topology.Default2000()})
		case "20k":
			c, err := topology.FatTree(topology.FatTreeConfig{Spines: 10, LeavesPerSpine: 10, NodesPerLeaf: 25, GPUsPerNode: 8})
			if err != nil {
				return nil, err
			}
			out = append(out, Inventory{Name: n, Cluster: c})
		default:
			return nil, fmt.Errorf("unknown inventory %q (want 2k or 20k)", n)
		}
	}
	return out, nil
}

// FreeState is a free state of an inventory and the running jobs that
// produced it. Each job is a list of per-node allocations; Kueue is given
// the same jobs as running pods, one pod per job and node.
type FreeState struct {
	Name string
	Seed uint64  // 0 for the empty state
	Busy float64 // target fraction of GPUs in use
	// Skewed marks a state from FragmentSkewed.
	Skewed bool
	State  *topology.State
	Jobs   [][]topology.NodeAlloc
}

// StateSpec names a free state: Busy 0 is the empty cluster, else a seeded
// fragmentation up to Busy. Skewed states instead give every leaf its own
// random load (FragmentSkewed); Busy is ignored.
type StateSpec struct {
	Name   string
	Busy   float64
	Seed   uint64
	Skewed bool
}

// DefaultStates are the free states of the comparison: empty, 25% busy and
// 50% busy, scattered.
var DefaultStates = []StateSpec{
	{Name: "empty"},
	{Name: "frag25", Busy: 0.25, Seed: 42},
	{Name: "frag50", Busy: 0.50, Seed: 7},
}

// NewFreeState builds the free state spec on cluster c.
func NewFreeState(c *topology.Cluster, sp StateSpec) (*FreeState, error) {
	fs := &FreeState{Name: sp.Name, Seed: sp.Seed, Busy: sp.Busy, Skewed: sp.Skewed, State: topology.NewState(c)}
	if sp.Skewed {
		jobs, err := FragmentSkewed(fs.State, sp.Seed)
		if err != nil {
			return nil, err
		}
		fs.Jobs = jobs
	} else if sp.Busy > 0 {
		jobs, err := Fragment(fs.State, sp.Seed, sp.Busy)
		if err != nil {
			return nil, err
		}
		fs.Jobs = jobs
	}
	return fs, nil
}

// Fragment fills s with seeded random jobs until at least busy (a fraction
// in [0, 1)) of its GPUs are in use, and returns the jobs. Six jobs in ten
// take 1 to 7 GPUs of one random node (the lowest free ones); the others
// take 1 to 16 random idle nodes whole. What remains free is scattered over
// every leaf, as on a long-running shared cluster.
func Fragment(s *topology.State, seed uint64, busy float64) ([][]topology.NodeAlloc, error) {
	if busy < 0 || busy >= 1 {
		return nil, fmt.Errorf("busy fraction %v not in [0, 1)", busy)
	}
	c := s.Cluster()
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	target := int(busy * float64(c.TotalGPUs()))
	var jobs [][]topology.NodeAlloc
	for attempt := 0; s.UsedGPUs() < target; attempt++ {
		if attempt > 1000*c.NumNodes() {
			return nil, fmt.Errorf("fragment: stuck at %d of %d GPUs", s.UsedGPUs(), target)
		}
		var job []topology.NodeAlloc
		if r.IntN(10) < 6 {
			n := r.IntN(c.NumNodes())
			want := 1 + r.IntN(max(c.NodeGPUs(topology.NodeID(n))-1, 1))
			free := s.Free(topology.NodeID(n))
			if bits.OnesCount64(free) < want {
				continue
			}
			var mask uint64
			for range want {
				low := free & -free
				mask |= low
				free &^= low
			}
			job = []topology.NodeAlloc{{Node: topology.NodeID(int32(n)), GPUs: mask}}
		} else {
			k := 1 + r.IntN(16)
			seen := map[int]bool{}
			for range k {
				n := r.IntN(c.NumNodes())
				if seen[n] || !s.Idle().Test(uint(n)) {
					continue
				}
				seen[n] = true
				job = append(job, topology.NodeAlloc{Node: topology.NodeID(int32(n)), GPUs: s.Free(topology.NodeID(n))})
			}
			if len(job) == 0 {
				continue
			}
		}
		if err := s.Allocate(job); err != nil {
			return nil, fmt.Errorf("fragment: %w", err)
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// FragmentSkewed gives every leaf of s its own load: a seeded fraction p in
// [0, 1) per leaf, and each node of the leaf busy with probability p, then
// full or partly used (1 to 7 GPUs) with even odds. Leaves end up with very
// different free capacities, which makes the choice of leaves matter. Each
// node's use is one job.
func FragmentSkewed(s *topology.State, seed uint64) ([][]topology.NodeAlloc, error) {
	c := s.Cluster()
	r := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	low := c.Depth() - 1
	var jobs [][]topology.NodeAlloc
	for d := range c.NumDomains(low) {
		p := r.Float64()
		first, end := c.DomainRange(low, d)
		for n := first; n < end; n++ {
			if r.Float64() >= p {
				continue
			}
			free := s.Free(n)
			mask := free
			if r.IntN(2) == 0 {
				want := 1 + r.IntN(max(c.NodeGPUs(n)-1, 1))
				mask = 0
				for range want {
					low := free & -free
					mask |= low
					free &^= low
				}
			}
			job := []topology.NodeAlloc{{Node: topology.NodeID(int32(n)), GPUs: mask}}
			if err := s.Allocate(job); err != nil {
				return nil, fmt.Errorf("fragment: %w", err)
			}
			jobs = append(jobs, job)
		}
	}
	return jobs, nil
}
