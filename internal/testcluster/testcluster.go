// Package testcluster builds clusters and free states from the short text
// forms used by scenario files, and draws assignments on a state. It is for
// tests, examples and benchmarks of this module only.
//
// Cluster text (one line per lowest-level domain):
//
//	agg0/leaf0 8          8 nodes of 8 GPUs under agg0 > leaf0
//	agg1/leaf2 6 gpus=4   6 nodes of 4 GPUs
//
// Node names are the path joined by '-', then "-<i>" (i from 0). Generated clusters are named
// instead: default, nvl72, fattree:<spines>,<leaves/spine>,<nodes/leaf>,<gpus>.
//
// State text (one line per lowest-level domain, the characters of
// topology.State.Describe):
//
//	leaf0 ###.....        '#' busy, '.' free, a digit = free GPUs, x down, d drained
package testcluster

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/phalanx-sched/phalanx/topology"
)

// Parse builds a cluster from text with the given level names (top to
// bottom), or from a generator name when gen is not empty.
func Parse(levels []string, gen, text string) (*topology.Cluster, error) {
	if gen != "" {
		return Generate(gen)
	}
	spec := topology.ClusterSpec{Levels: levels, LocalDomainNames: true}
	for ln, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		path := strings.Split(f[0], "/")
		if len(f) < 2 {
			return nil, fmt.Errorf("line %d: want <path> <count> [gpus=N]", ln+1)
		}
		count, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: count %q: %v", ln+1, f[1], err)
		}
		gpus := 8
		for _, opt := range f[2:] {
			k, v, _ := strings.Cut(opt, "=")
			if k != "gpus" {
				return nil, fmt.Errorf("line %d: unknown option %q", ln+1, opt)
			}
			if gpus, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("line %d: gpus %q: %v", ln+1, v, err)
			}
		}
		prefix := strings.Join(path, "-")
		for i := range count {
			spec.Nodes = append(spec.Nodes, topology.NodeSpec{
				Name: fmt.Sprintf("%s-%d", prefix, i), GPUs: gpus, Path: path,
				Source: fmt.Sprintf("line %d", ln+1),
			})
		}
	}
	return topology.Build(spec)
}

// Generate returns a generated cluster by name: default, nvl72, or
// fattree:<spines>,<leaves per spine>,<nodes per leaf>,<gpus per node>.
func Generate(name string) (*topology.Cluster, error) {
	switch {
	case name == "default":
		return topology.Default2000(), nil
	case name == "nvl72":
		return topology.NVL72Default(), nil
	case strings.HasPrefix(name, "fattree:"):
		var f topology.FatTreeConfig
		if _, err := fmt.Sscanf(name, "fattree:%d,%d,%d,%d", &f.Spines, &f.LeavesPerSpine, &f.NodesPerLeaf, &f.GPUsPerNode); err != nil {
			return nil, fmt.Errorf("generator %q: %v", name, err)
		}
		return topology.FatTree(f)
	}
	return nil, fmt.Errorf("unknown generator %q", name)
}

// ApplyState sets the free state of the lowest-level domains named in text.
// Busy GPUs are the highest ones of a node. Lines for domains not named
// keep their state.
func ApplyState(s *topology.State, text string) error {
	c := s.Cluster()
	low := c.Depth() - 1
	for ln, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return fmt.Errorf("state line %d: want <domain> <chars>", ln+1)
		}
		first, end := 0, c.NumNodes()
		if low >= 0 {
			d, ok := c.DomainIndex(low, f[0])
			if !ok {
				return fmt.Errorf("state line %d: unknown domain %q", ln+1, f[0])
			}
			f, e := c.DomainRange(low, d)
			first, end = int(f), int(e)
		}
		if len(f[1]) != end-first {
			return fmt.Errorf("state line %d: %d characters for %d nodes", ln+1, len(f[1]), end-first)
		}
		for k, ch := range []byte(f[1]) {
			i := first + k
			if err := setNode(s, i, ch); err != nil {
				return fmt.Errorf("state line %d: %v", ln+1, err)
			}
		}
	}
	return nil
}

func setNode(s *topology.State, i int, ch byte) error {
	c := s.Cluster()
	gpus := c.NodeGPUs(topology.NodeID(i))
	all := uint64(1)<<uint(gpus) - 1
	if gpus == 64 {
		all = ^uint64(0)
	}
	// Reset the node to up and free.
	if err := s.SetStatus(topology.NodeID(i), topology.Up); err != nil {
		return err
	}
	if used := all &^ s.Free(topology.NodeID(i)); used != 0 {
		if err := s.Release([]topology.NodeAlloc{{Node: topology.NodeID(i), GPUs: used}}); err != nil {
			return err
		}
	}
	free := gpus
	switch {
	case ch == '.':
	case ch == '#':
		free = 0
	case ch >= '0' && ch <= '9':
		free = int(ch - '0')
	case ch == 'x' || ch == 'd':
		st := topology.Down
		if ch == 'd' {
			st = topology.Drained
		}
		return s.SetStatus(topology.NodeID(i), st)
	default:
		return fmt.Errorf("node %s: unknown state %q", c.NodeName(topology.NodeID(i)), ch)
	}
	if free > gpus {
		return fmt.Errorf("node %s: %d free of %d GPUs", c.NodeName(topology.NodeID(i)), free, gpus)
	}
	if busy := all &^ (uint64(1)<<uint(free) - 1); busy != 0 {
		return s.Allocate([]topology.NodeAlloc{{Node: topology.NodeID(i), GPUs: busy}})
	}
	return nil
}

// Draw renders the state as Describe does, with the nodes of assignment
// shown as '@', and only the lowest-level domains that hold assigned nodes
// (all of them when all is set).
func Draw(s *topology.State, assignment []topology.NodeAlloc, all bool) string {
	c := s.Cluster()
	mark := make(map[int]bool, len(assignment))
	for _, a := range assignment {
		mark[int(a.Node)] = true
	}
	desc := strings.Split(strings.TrimRight(s.Describe(), "\n"), "\n")[1:]
	var b strings.Builder
	low := c.Depth() - 1
	for row, line := range desc {
		first, end := 0, c.NumNodes()
		if low >= 0 {
			f, e := c.DomainRange(low, row)
			first, end = int(f), int(e)
		}
		hit := false
		chars := []byte(line[len(line)-(end-first):])
		for k := range chars {
			if mark[first+k] {
				chars[k] = '@'
				hit = true
			}
		}
		if hit || all {
			b.WriteString(line[:len(line)-(end-first)])
			b.Write(chars)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Fragment allocates a seeded random workload on s until at least
// busy (a fraction in [0, 1)) of the schedulable GPUs are used: a mix of
// partial-node jobs (1 to 7 GPUs on one node) and whole-node jobs of 1 to
// 16 nodes on random idle nodes, which leaves the free GPUs scattered.
func Fragment(s *topology.State, r *rand.Rand, busy float64) {
	c := s.Cluster()
	target := int(busy * float64(c.TotalGPUs()))
	for tries := 0; s.UsedGPUs() < target && tries < 100*c.NumNodes(); tries++ {
		if r.IntN(10) < 6 {
			i := r.IntN(c.NumNodes())
			g := 1 + r.IntN(max(c.NodeGPUs(topology.NodeID(i))-1, 1))
			free := s.Free(topology.NodeID(i))
			if bits.OnesCount64(free) < g {
				continue
			}
			var m uint64
			for ; g > 0; g-- {
				low := free & -free
				m |= low
				free &^= low
			}
			_ = s.Allocate([]topology.NodeAlloc{{Node: topology.NodeID(i), GPUs: m}})
			continue
		}
		n := 1 + r.IntN(16)
		var a []topology.NodeAlloc
		for range n {
			i := r.IntN(c.NumNodes())
			if s.Idle().Test(uint(i)) {
				a = append(a, topology.NodeAlloc{Node: topology.NodeID(i), GPUs: s.Free(topology.NodeID(i))})
			}
		}
		_ = s.Allocate(a) // a duplicate node makes it fail: try again
	}
}
