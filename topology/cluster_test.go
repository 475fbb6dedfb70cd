package topology

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// referenceOrder is the plain definition of topology order: number the
// domains of each level by first appearance (by path from the top when
// names are local), then sort the nodes stably by those numbers, top level
// first.
func referenceOrder(spec ClusterSpec) []string {
	depth := len(spec.Levels)
	ids := make([]map[string]int, depth)
	for l := range ids {
		ids[l] = map[string]int{}
	}
	chain := make([][]int, len(spec.Nodes))
	for i, n := range spec.Nodes {
		for l := range depth {
			key := n.Path[l]
			if spec.LocalDomainNames {
				key = strings.Join(n.Path[:l+1], "\x00")
			}
			if _, ok := ids[l][key]; !ok {
				ids[l][key] = len(ids[l])
			}
			chain[i] = append(chain[i], ids[l][key])
		}
	}
	idx := make([]int, len(spec.Nodes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return slices.Compare(chain[a], chain[b]) })
	var names []string
	for _, i := range idx {
		names = append(names, spec.Nodes[i].Name)
	}
	return names
}

// randomTreeSpec returns a valid spec of up to 40 nodes listed in random
// order under a random tree of 0 to 3 levels.
func randomTreeSpec(r *rand.Rand) ClusterSpec {
	depth := r.IntN(4)
	spec := ClusterSpec{LocalDomainNames: r.IntN(2) == 0}
	for l := range depth {
		spec.Levels = append(spec.Levels, fmt.Sprintf("L%d", l))
	}
	for i := range 1 + r.IntN(40) {
		path := make([]string, depth)
		for l := range depth {
			if spec.LocalDomainNames {
				path[l] = fmt.Sprintf("d%d", r.IntN(3)) // same names under different parents
			} else if l == 0 {
				path[l] = fmt.Sprintf("d%d", r.IntN(3))
			} else {
				path[l] = fmt.Sprintf("%s.%d", path[l-1], r.IntN(3)) // unique per parent
			}
		}
		spec.Nodes = append(spec.Nodes, NodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 1 + r.IntN(8), Path: path})
	}
	return spec
}

func TestBuildOrderMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := range 2000 {
		spec := randomTreeSpec(r)
		c, err := Build(spec)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if got, want := c.NodeNames(0, NodeID(c.NumNodes())), referenceOrder(spec); !slices.Equal(got, want) {
			t.Fatalf("trial %d: order %q, want %q", trial, got, want)
		}
		checkDomainRanges(t, c)
	}
}

// checkDomainRanges checks every domain against its nodes: ranges cover
// the nodes exactly, NodeDomain agrees, children lie inside the parent,
// GPU totals add up and every name maps back to its index.
func checkDomainRanges(t *testing.T, c *Cluster) {
	t.Helper()
	for i := range NodeID(c.NumNodes()) {
		if j, ok := c.LookupNode(c.NodeName(i)); !ok || j != i {
			t.Fatalf("LookupNode(%q) = %d, %v; want %d", c.NodeName(i), j, ok, i)
		}
	}
	for l := range c.Depth() {
		next := NodeID(0)
		for d := range c.NumDomains(l) {
			dom := c.Domain(l, d)
			if dom.FirstNode != next || dom.EndNode <= dom.FirstNode {
				t.Fatalf("level %d domain %d: range [%d,%d), want to start at %d", l, d, dom.FirstNode, dom.EndNode, next)
			}
			next = dom.EndNode
			gpus := 0
			for i := dom.FirstNode; i < dom.EndNode; i++ {
				gpus += c.NodeGPUs(i)
				if c.NodeDomain(i, l) != d {
					t.Fatalf("node %d: NodeDomain %d, want %d", i, c.NodeDomain(i, l), d)
				}
			}
			if gpus != dom.GPUs {
				t.Fatalf("level %d domain %d: %d GPUs, want %d", l, d, dom.GPUs, gpus)
			}
			for ch := dom.FirstChild; ch < dom.EndChild; ch++ {
				if c.DomainParent(l+1, ch) != d {
					t.Fatalf("level %d domain %d: child %d has parent %d", l, d, ch, c.DomainParent(l+1, ch))
				}
			}
		}
		if int(next) != c.NumNodes() {
			t.Fatalf("level %d covers %d of %d nodes", l, next, c.NumNodes())
		}
	}
}

func TestDomainNodes(t *testing.T) {
	c := Default2000()
	dst := c.NewNodeSet()
	for l := range c.Depth() {
		for d := range c.NumDomains(l) {
			first, end := c.DomainRange(l, d)
			got := c.DomainNodes(l, d, dst)
			if got != dst || got.Count() != uint(end-first) {
				t.Fatalf("level %d domain %d: %d nodes, want %d", l, d, got.Count(), end-first)
			}
			for i, ok := got.NextSet(0); ok; i, ok = got.NextSet(i + 1) {
				if NodeID(i) < first || NodeID(i) >= end {
					t.Fatalf("level %d domain %d: node %d outside [%d,%d)", l, d, i, first, end)
				}
			}
			if fresh := c.DomainNodes(l, d, nil); !fresh.Equal(dst) {
				t.Fatalf("level %d domain %d: nil dst gives another set", l, d)
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() { c.DomainNodes(2, 3, dst) }); a != 0 {
		t.Errorf("DomainNodes with a sized dst: %v allocations, want 0", a)
	}
	// A shorter set is grown, not written past its end.
	short := c.DomainNodes(2, 15, c.NewNodeSet().Shrink(3))
	if short.Count() != 10 {
		t.Errorf("short dst: %d nodes, want 10", short.Count())
	}
}
