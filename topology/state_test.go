package topology

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustFatTree(t testing.TB, f FatTreeConfig) *Cluster {
	t.Helper()
	c, err := FatTree(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDefaultClusterShape(t *testing.T) {
	c := Default2000()
	if c.NumNodes() != 250 || c.TotalGPUs() != 2000 || c.Depth() != 3 {
		t.Fatalf("default: %d nodes %d GPUs depth %d", c.NumNodes(), c.TotalGPUs(), c.Depth())
	}
	wantDomains := []int{1, 4, 16}
	for l, want := range wantDomains {
		if got := c.NumDomains(l); got != want {
			t.Errorf("level %s: %d domains, want %d", c.LevelName(l), got, want)
		}
	}
	last := c.Domain(2, 15)
	if n := last.EndNode - last.FirstNode; n != 10 || last.Name != "leaf15" {
		t.Errorf("last leaf %s has %d nodes, want leaf15 with 10", last.Name, n)
	}
	for d := range 16 {
		dom := c.Domain(2, d)
		if uint(dom.EndNode-dom.FirstNode) != c.DomainNodes(2, d, nil).Count() {
			t.Errorf("leaf %d: bitset and range disagree", d)
		}
		if p := c.Domain(1, dom.Parent); dom.Index < p.FirstChild || dom.Index >= p.EndChild {
			t.Errorf("leaf %d not among its parent's children", d)
		}
	}
}

func TestBuildReordersIntoTopologyOrder(t *testing.T) {
	// Nodes listed interleaved across leaves come out contiguous per leaf.
	spec := ClusterSpec{Levels: []string{"spine", "leaf"}}
	for i := range 6 {
		leaf := []string{"a", "b", "c"}[i%3]
		spine := map[string]string{"a": "s0", "b": "s1", "c": "s0"}[leaf]
		spec.Nodes = append(spec.Nodes, NodeSpec{Name: fmt.Sprintf("x%d", i), GPUs: 4, Path: []string{spine, leaf}})
	}
	c, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range c.NumNodes() {
		got = append(got, c.NodeName(NodeID(i)))
	}
	// s0 first (a then c), then s1 (b).
	if want := "x0 x3 x2 x5 x1 x4"; strings.Join(got, " ") != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	for l := range c.Depth() {
		for d := range c.NumDomains(l) {
			dom := c.Domain(l, d)
			for i := dom.FirstNode; i < dom.EndNode; i++ {
				if c.NodeDomain(i, l) != d {
					t.Errorf("node %d not in domain %s", i, dom.Name)
				}
			}
		}
	}
}

func TestBuildErrors(t *testing.T) {
	node := func(name string, gpus int, path ...string) NodeSpec {
		return NodeSpec{Name: name, GPUs: gpus, Path: path, Source: "line " + name}
	}
	tests := []struct {
		name string
		spec ClusterSpec
		want error
		msg  string
	}{
		{"no nodes", ClusterSpec{}, ErrInvalidSpec, "no nodes"},
		{"too deep", ClusterSpec{Levels: strings.Split("a b c d e f g h i", " "), Nodes: []NodeSpec{node("n", 1)}}, ErrInvalidSpec, "9 levels"},
		{"duplicate level", ClusterSpec{Levels: []string{"x", "x"}, Nodes: []NodeSpec{node("n", 1, "a", "b")}}, ErrDuplicate, `"x"`},
		{"duplicate node", ClusterSpec{Nodes: []NodeSpec{node("n1", 1), node("n1", 2)}}, ErrDuplicate, `"n1"`},
		{"a name with a comma", ClusterSpec{Nodes: []NodeSpec{node("a,b", 1)}}, ErrInvalidSpec, `node name "a,b" holds a character a hostlist cannot`},
		{"a name with brackets", ClusterSpec{Nodes: []NodeSpec{node("n[1]", 1)}}, ErrInvalidSpec, `node name "n[1]"`},
		{"a name with a blank", ClusterSpec{Nodes: []NodeSpec{node("n 1", 1)}}, ErrInvalidSpec, `node name "n 1"`},
		{"zero gpus", ClusterSpec{Nodes: []NodeSpec{node("n1", 0)}}, ErrGPUCount, `"n1" has 0 GPUs`},
		{"65 gpus", ClusterSpec{Nodes: []NodeSpec{node("n1", 65)}}, ErrGPUCount, "65"},
		{"bad group", ClusterSpec{Nodes: []NodeSpec{{Name: "n1", GPUs: 4, Groups: []uint64{0x30}}}}, ErrGPUCount, "0x30"},
		{"short path", ClusterSpec{Levels: []string{"leaf"}, Nodes: []NodeSpec{node("n1", 1)}}, ErrInvalidSpec, `"n1" has 0 topology levels`},
		{"empty domain", ClusterSpec{Levels: []string{"leaf"}, Nodes: []NodeSpec{node("n1", 1, "")}}, ErrInvalidSpec, `"n1" has no leaf`},
		{"two parents", ClusterSpec{Levels: []string{"spine", "leaf"}, Nodes: []NodeSpec{node("n1", 1, "s0", "l0"), node("n2", 1, "s1", "l0")}},
			ErrNotTree, `leaf "l0" is under spine "s0" (node "n1" (line n1)) and under spine "s1" (node "n2" (line n2))`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Build(tt.spec)
			if c != nil || !errors.Is(err, tt.want) {
				t.Fatalf("Build = %v, %v; want %v", c, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
		})
	}
	t.Run("local names allow same leaf name under two spines", func(t *testing.T) {
		spec := ClusterSpec{Levels: []string{"spine", "leaf"}, LocalDomainNames: true,
			Nodes: []NodeSpec{node("n1", 1, "s0", "l0"), node("n2", 1, "s1", "l0")}}
		c, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		if c.NumDomains(1) != 2 {
			t.Fatalf("%d leaves, want 2", c.NumDomains(1))
		}
	})
}

func TestSpecRoundTrip(t *testing.T) {
	c := Default2000()
	c2, err := Build(c.Spec())
	if err != nil {
		t.Fatal(err)
	}
	if c.Describe() != c2.Describe() {
		t.Fatal("rebuilt cluster differs")
	}
}

func TestAllocateReleaseAtomic(t *testing.T) {
	c := Default2000()
	s := NewState(c)
	if err := s.Allocate([]NodeAlloc{{0, 0x0f}, {1, 0xff}}); err != nil {
		t.Fatal(err)
	}
	before := s.Clone()
	tests := []struct {
		name string
		a    []NodeAlloc
		want error
		msg  string
	}{
		{"busy gpus", []NodeAlloc{{2, 0x01}, {0, 0x18}}, ErrConflict, "node n000: GPUs 3 already allocated"},
		{"twice in one", []NodeAlloc{{2, 0x03}, {2, 0x06}}, ErrConflict, "node n002: GPUs 1 named twice"},
		{"beyond node", []NodeAlloc{{3, 0x100}}, ErrBadMask, "node n003: GPUs 8 (node has 8)"},
		{"empty mask", []NodeAlloc{{3, 0}}, ErrBadMask, "n003"},
		{"unknown node", []NodeAlloc{{3, 1}, {250, 1}}, ErrUnknownNode, "250"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Allocate(tt.a)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Allocate = %v, want %v mentioning %q", err, tt.want, tt.msg)
			}
			if !s.Equal(before) {
				t.Fatal("failed Allocate changed the state")
			}
			if err := s.checkInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("release unallocated", func(t *testing.T) {
		err := s.Release([]NodeAlloc{{1, 0xff}, {0, 0x30}})
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "node n000: GPUs 4-5 are not allocated") {
			t.Fatalf("Release = %v", err)
		}
		if !s.Equal(before) {
			t.Fatal("failed Release changed the state")
		}
	})
	t.Run("down node", func(t *testing.T) {
		if err := s.SetStatus(5, Down); err != nil {
			t.Fatal(err)
		}
		defer s.SetStatus(5, Up)
		if err := s.Allocate([]NodeAlloc{{5, 1}}); !errors.Is(err, ErrNodeDown) {
			t.Fatalf("Allocate on down node = %v", err)
		}
	})
}

func TestStatusHidesNodes(t *testing.T) {
	c := Default2000()
	s := NewState(c)
	if got := int(s.DomainAvail(2, 0)[8]); got != 16 {
		t.Fatalf("leaf00 has %d idle nodes, want 16", got)
	}
	_ = s.SetStatus(0, Down)
	_ = s.SetStatus(1, Drained)
	if err := s.Allocate([]NodeAlloc{{1, 0x3}}); err != nil {
		t.Fatalf("allocation on a drained node: %v", err)
	}
	for g := 0; g <= 8; g++ {
		if s.Avail(g).Test(0) || s.Avail(g).Test(1) {
			t.Fatalf("down or drained node offered in Avail(%d)", g)
		}
	}
	if s.Idle().Test(0) || s.Idle().Test(1) {
		t.Fatal("down or drained node idle")
	}
	if got := s.DomainFreeGPUs(2, 0); got != 14*8 {
		t.Fatalf("leaf00 free GPUs %d, want %d", got, 14*8)
	}
	if err := s.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	_ = s.SetStatus(1, Up)
	if !s.Avail(6).Test(1) || s.Avail(7).Test(1) {
		t.Fatal("node 1 back up should show 6 free GPUs")
	}
}

// TestRandomOperations runs thousands of allocate / release / down / up /
// drain steps and checks every index against a recomputation after each.
func TestRandomOperations(t *testing.T) {
	sizes := []struct {
		name string
		c    *Cluster
		// steps is smaller for the big cluster: each check is linear in
		// its size.
		steps int
	}{
		{"nodes=250", Default2000(), 5000},
		{"nodes=12500", FatTree100k(), 2000},
	}
	for _, sz := range sizes {
		t.Run(sz.name, func(t *testing.T) {
			if testing.Short() {
				sz.steps /= 10
			}
			runRandomOps(t, sz.c, sz.steps, rand.New(rand.NewPCG(1, uint64(sz.c.NumNodes()))))
		})
	}
}

func runRandomOps(t *testing.T, c *Cluster, steps int, r *rand.Rand) {
	s := NewState(c)
	var held [][]NodeAlloc
	for step := range steps {
		before := s.Clone()
		changes := s.changes
		var op string
		switch k := r.IntN(10); {
		case k < 4: // allocate a random assignment, sometimes conflicting
			n := 1 + r.IntN(6)
			var a []NodeAlloc
			for range n {
				node := r.IntN(c.NumNodes())
				m := r.Uint64() & onesMask(c.NodeGPUs(NodeID(node)))
				if r.IntN(4) != 0 {
					m &= s.Free(NodeID(node)) // usually valid
				}
				if m == 0 {
					continue
				}
				a = append(a, NodeAlloc{NodeID(node), m})
			}
			op = fmt.Sprintf("allocate %v", a)
			err := s.Allocate(a)
			if err == nil {
				held = append(held, a)
			} else if !s.Equal(before) || s.changes != changes {
				t.Fatalf("step %d: %s failed (%v) but changed the state or its change count", step, op, err)
			}
		case k < 7 && len(held) > 0: // release
			i := r.IntN(len(held))
			op = fmt.Sprintf("release %v", held[i])
			if err := s.Release(held[i]); err != nil {
				t.Fatalf("step %d: %s: %v", step, op, err)
			}
			held = append(held[:i], held[i+1:]...)
		case k < 8 && len(held) > 0: // double release must fail and change nothing
			i := r.IntN(len(held))
			a := held[i]
			if err := s.Release(a); err != nil {
				t.Fatalf("step %d: release: %v", step, err)
			}
			mid := s.Clone()
			op = "double release"
			if err := s.Release(a); err == nil || !s.Equal(mid) {
				t.Fatalf("step %d: double release: err %v, state changed %v", step, err, !s.Equal(mid))
			}
			if err := s.Allocate(a); err != nil {
				// A node of a went down meanwhile: a is released for good.
				held = append(held[:i], held[i+1:]...)
			}
		default:
			node := r.IntN(c.NumNodes())
			st := NodeStatus(r.IntN(3))
			op = fmt.Sprintf("status %d %s", node, st)
			if err := s.SetStatus(NodeID(node), st); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.checkInvariants(); err != nil {
			t.Fatalf("step %d after %s: %v", step, op, err)
		}
		// The change count (access.StateChanges) grows whenever the
		// contents change: an equal count means equal contents.
		if s.changes < changes || !s.Equal(before) && s.changes == changes {
			t.Fatalf("step %d after %s: change count %d, was %d", step, op, s.changes, changes)
		}
	}
}

func TestCloneAndCopyInto(t *testing.T) {
	c := Default2000()
	s := NewState(c)
	_ = s.Allocate([]NodeAlloc{{7, 0x0f}})
	cl := s.Clone()
	_ = cl.Allocate([]NodeAlloc{{8, 0x0f}})
	if s.Free(8) != 0xff {
		t.Fatal("clone shares memory with its source")
	}
	changes := cl.changes
	if err := s.CopyInto(cl); err != nil {
		t.Fatal(err)
	}
	if cl.changes <= changes {
		t.Fatalf("CopyInto left the destination's change count at %d", cl.changes)
	}
	if !cl.Equal(s) || cl.Avail(8).Test(8) != s.Avail(8).Test(8) {
		t.Fatal("CopyInto did not copy")
	}
	if err := cl.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	other := NewState(mustFatTree(t, FatTreeConfig{1, 1, 4, 8}))
	if err := s.CopyInto(other); !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("CopyInto across clusters = %v", err)
	}
}

func TestZeroAllocations(t *testing.T) {
	for _, c := range []*Cluster{Default2000(), FatTree100k()} {
		s := NewState(c)
		dst := NewState(c)
		a := []NodeAlloc{{3, 0x0f}, {NodeID(int32(c.NumNodes() - 1)), 0xff}}
		if n := testing.AllocsPerRun(100, func() {
			if err := s.Allocate(a); err != nil {
				t.Fatal(err)
			}
			if err := s.Release(a); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%d nodes: Allocate+Release allocate %v times", c.NumNodes(), n)
		}
		if n := testing.AllocsPerRun(100, func() { _ = s.CopyInto(dst) }); n != 0 {
			t.Errorf("%d nodes: CopyInto allocates %v times", c.NumNodes(), n)
		}
		if n := testing.AllocsPerRun(100, func() {
			_ = s.SetStatus(5, Drained)
			_ = s.SetStatus(5, Up)
		}); n != 0 {
			t.Errorf("%d nodes: SetStatus allocates %v times", c.NumNodes(), n)
		}
	}
}

func TestDescribeState(t *testing.T) {
	c, err := FatTree(FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	s := NewState(c)
	_ = s.Allocate([]NodeAlloc{{0, 0xff}, {1, 0x0f}})
	_ = s.SetStatus(5, Down)
	_ = s.SetStatus(6, Drained)
	want := "free 36 of 64 GPUs on schedulable nodes, 12 used\n" +
		"leaf0000     #4..\n" +
		"leaf0001     .xd.\n"
	if got := s.Describe(); got != want {
		t.Fatalf("Describe:\n%s\nwant:\n%s", got, want)
	}
}

func TestFormatGPUs(t *testing.T) {
	for m, want := range map[uint64]string{0: "none", 1: "0", 0x0f: "0-3", 0x4b: "0-1,3,6", 1 << 63: "63"} {
		if got := FormatGPUs(m); got != want {
			t.Errorf("FormatGPUs(%#x) = %q, want %q", m, got, want)
		}
	}
}

func BenchmarkState(b *testing.B) {
	for _, inv := range []struct {
		name string
		c    *Cluster
	}{{"nodes=250", Default2000()}, {"nodes=12500", FatTree100k()}} {
		s := NewState(inv.c)
		a := make([]NodeAlloc, 0, 16)
		for i := range 16 {
			a = append(a, NodeAlloc{NodeID(int32(i * inv.c.NumNodes() / 16)), 0xff})
		}
		b.Run(inv.name+"/op=allocate-release-16nodes", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.Allocate(a)
				_ = s.Release(a)
			}
		})
		dst := NewState(inv.c)
		b.Run(inv.name+"/op=copyinto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.CopyInto(dst)
			}
		})
		b.Run(inv.name+"/op=count-avail-all-leaves", func(b *testing.B) {
			b.ReportAllocs()
			low := inv.c.Depth() - 1
			for b.Loop() {
				n := 0
				for d := range inv.c.NumDomains(low) {
					n += int(s.DomainAvail(low, d)[8])
				}
				if n != inv.c.NumNodes() {
					b.Fatal(n)
				}
			}
		})
	}
}

// TestDomainCounters recounts every per-domain counter from the nodes'
// free masks and statuses after each random operation, on a cluster with
// mixed GPU counts, independently of the state's own rebuild.
func TestDomainCounters(t *testing.T) {
	spec := ClusterSpec{Levels: []string{"spine", "leaf"}}
	for i := range 24 {
		spec.Nodes = append(spec.Nodes, NodeSpec{
			Name: fmt.Sprintf("n%02d", i), GPUs: []int{1, 2, 4, 8}[i%4],
			Path: []string{fmt.Sprintf("s%d", i/12), fmt.Sprintf("l%d", i/4)},
		})
	}
	c, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	s := NewState(c)
	r := rand.New(rand.NewPCG(3, 4))
	steps := 3000
	if testing.Short() {
		steps = 300
	}
	for step := range steps {
		node := r.IntN(c.NumNodes())
		switch r.IntN(3) {
		case 0:
			if m := r.Uint64() & s.Free(NodeID(node)); m != 0 && s.Status(NodeID(node)) != Down {
				_ = s.Allocate([]NodeAlloc{{NodeID(node), m}})
			}
		case 1:
			if m := r.Uint64() & onesMask(c.NodeGPUs(NodeID(node))) &^ s.Free(NodeID(node)); m != 0 {
				_ = s.Release([]NodeAlloc{{NodeID(node), m}})
			}
		default:
			_ = s.SetStatus(NodeID(node), NodeStatus(r.IntN(3)))
		}
		down, drained := 0, 0
		for i := range c.NumNodes() {
			switch s.Status(NodeID(i)) {
			case Down:
				down++
			case Drained:
				drained++
			}
		}
		if s.DownNodes() != down || s.DrainedNodes() != drained {
			t.Fatalf("step %d: down %d drained %d, want %d %d", step, s.DownNodes(), s.DrainedNodes(), down, drained)
		}
		for l := range c.Depth() {
			for d := range c.NumDomains(l) {
				checkCounters(t, s, l, d)
			}
		}
	}
}

func checkCounters(t *testing.T, s *State, l, d int) {
	t.Helper()
	c := s.Cluster()
	lo, hi := c.DomainRange(l, d)
	avail := make([]int32, c.MaxNodeGPUs()+1)
	idle, idleGPUs, free := 0, 0, 0
	for i := lo; i < hi; i++ {
		if s.Status(i) != Up {
			continue
		}
		f := s.FreeCount(i)
		free += f
		for k := 0; k <= f; k++ {
			avail[k]++
		}
		if f == c.NodeGPUs(i) {
			idle++
			idleGPUs += f
		}
	}
	got := s.DomainAvail(l, d)
	for k := range avail {
		if got[k] != avail[k] || int(s.DomainAvail(l, d)[k]) != int(avail[k]) {
			t.Fatalf("level %d domain %d: %d nodes with >= %d free, want %d", l, d, got[k], k, avail[k])
		}
	}
	stride := c.MaxNodeGPUs() + 1
	if row := s.LevelAvail(l)[d*stride : (d+1)*stride]; fmt.Sprint(row) != fmt.Sprint(got) {
		t.Fatalf("level %d domain %d: level view %v, domain view %v", l, d, row, got)
	}
	if s.LevelIdleNodes(l)[d] != int32(idle) || s.LevelIdleGPUs(l)[d] != int32(idleGPUs) || s.LevelFreeGPUs(l)[d] != int32(free) {
		t.Fatalf("level %d domain %d: level views disagree", l, d)
	}
	if s.DomainIdleNodes(l, d) != idle || s.DomainIdleGPUs(l, d) != idleGPUs || s.DomainFreeGPUs(l, d) != free {
		t.Fatalf("level %d domain %d: idle %d (%d GPUs) free %d, want %d (%d) %d", l, d,
			s.DomainIdleNodes(l, d), s.DomainIdleGPUs(l, d), s.DomainFreeGPUs(l, d), idle, idleGPUs, free)
	}
}

// panicMessage runs f and returns what it panicked with, or "" if it
// returned.
func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// TestIndexAccessorsPanicOutOfRange checks that the per-domain and
// per-node accessors refuse a level, domain or node index out of range
// with a panic naming it, instead of reading another domain's counters,
// and that in range they read the right domain without allocating.
// Default2000 has 1 core, 4 spines and 16 leaves over 250 nodes.
func TestIndexAccessorsPanicOutOfRange(t *testing.T) {
	c := Default2000()
	s := NewState(c)
	if err := s.Allocate([]NodeAlloc{{Node: 0, GPUs: 0x01}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func()
		want string // fragment of the panic message
	}{
		{"DomainFreeGPUs domain past its level", func() { s.DomainFreeGPUs(0, 1) }, "domain 1 out of range at level 0"},
		{"DomainFreeGPUs negative domain", func() { s.DomainFreeGPUs(1, -1) }, "domain -1 out of range at level 1"},
		{"DomainFreeGPUs level past the bottom", func() { s.DomainFreeGPUs(3, 0) }, "level 3 out of range"},
		{"DomainFreeGPUs negative level", func() { s.DomainFreeGPUs(-1, 0) }, "level -1 out of range"},
		{"DomainAvail domain past its level", func() { s.DomainAvail(1, 4) }, "domain 4 out of range at level 1"},
		{"DomainAvail last level", func() { s.DomainAvail(2, 16) }, "domain 16 out of range at level 2"},
		{"DomainAvail negative domain", func() { s.DomainAvail(2, -1) }, "domain -1 out of range at level 2"},
		{"DomainIdleNodes domain past its level", func() { s.DomainIdleNodes(0, 1) }, "domain 1 out of range at level 0"},
		{"DomainIdleNodes negative level", func() { s.DomainIdleNodes(-1, 0) }, "level -1 out of range"},
		{"DomainIdleGPUs domain past its level", func() { s.DomainIdleGPUs(1, 4) }, "domain 4 out of range at level 1"},
		{"DomainIdleGPUs level past the bottom", func() { s.DomainIdleGPUs(3, 0) }, "level 3 out of range"},
		{"NodeDomain node past the end", func() { c.NodeDomain(250, 0) }, "node 250 out of range"},
		{"NodeDomain negative node", func() { c.NodeDomain(-1, 1) }, "node -1 out of range"},
		{"NodeDomain level past the bottom", func() { c.NodeDomain(0, 3) }, "level 3 out of range"},
		{"NodeDomain negative level", func() { c.NodeDomain(249, -1) }, "level -1 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := panicMessage(tt.call)
			if !strings.HasPrefix(msg, "topology: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("panic %q, want one containing %q", msg, tt.want)
			}
		})
	}
	t.Run("in range", func(t *testing.T) {
		for l := range c.Depth() {
			for d := range c.NumDomains(l) {
				dom := c.Domain(l, d)
				wantFree, wantIdle := dom.GPUs, int(dom.EndNode-dom.FirstNode)
				if d == 0 {
					wantFree, wantIdle = wantFree-1, wantIdle-1 // node 0 has a GPU allocated
				}
				if got := s.DomainFreeGPUs(l, d); got != wantFree {
					t.Errorf("DomainFreeGPUs(%d, %d) = %d, want %d", l, d, got, wantFree)
				}
				if got := s.DomainIdleNodes(l, d); got != wantIdle {
					t.Errorf("DomainIdleNodes(%d, %d) = %d, want %d", l, d, got, wantIdle)
				}
				if got := s.DomainIdleGPUs(l, d); got != 8*wantIdle {
					t.Errorf("DomainIdleGPUs(%d, %d) = %d, want %d", l, d, got, 8*wantIdle)
				}
				if got := s.DomainAvail(l, d)[0]; int(got) != int(dom.EndNode-dom.FirstNode) {
					t.Errorf("DomainAvail(%d, %d)[0] = %d, want %d", l, d, got, dom.EndNode-dom.FirstNode)
				}
			}
		}
		for _, i := range []NodeID{0, 15, 16, 249} {
			if got, want := c.NodeDomain(i, 2), int(i)/DefaultNodesPerLeaf; got != want {
				t.Errorf("NodeDomain(%d, 2) = %d, want %d", i, got, want)
			}
		}
		if n := testing.AllocsPerRun(100, func() {
			_ = s.DomainFreeGPUs(1, 3) + s.DomainIdleNodes(2, 15) + s.DomainIdleGPUs(0, 0) + int(s.DomainAvail(2, 5)[8]) + c.NodeDomain(249, 2)
		}); n != 0 {
			t.Errorf("accessors allocate %v times", n)
		}
	})
}
