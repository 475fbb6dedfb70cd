package gang

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bits-and-blooms/bitset"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

func workers(id string, pods, gpus int) *Spec {
	return &Spec{ID: id, Members: []Member{{Name: "worker", Request: placement.NodesOf(pods, gpus)}}}
}

// TestSeedCase is the deadlock gang admission prevents: two 1,200-GPU jobs
// (150 pods x 8 GPUs) arrive interleaved on the default 2,000-GPU cluster.
// The pod-by-pod side, which deadlocks, is internal/baseline's
// TestPodByPodDeadlock.
func TestSeedCase(t *testing.T) {
	c := topology.Default2000()
	t.Run("gang", func(t *testing.T) {
		l := NewLedger(c, Options{})
		ra, err := l.Admit(workers("A", 150, 8))
		if err != nil || !ra.Admitted {
			t.Fatalf("A: %v %s", err, ra)
		}
		rb, err := l.Admit(workers("B", 150, 8))
		require.NoError(t, err)
		if rb.Admitted {
			t.Fatal("B admitted on a cluster with 800 free GPUs")
		}
		if want := "member worker: needs 150 nodes with 8 free GPUs; the cluster has 100 (150 nodes left out: 150 short of free GPUs)"; rb.String() != want {
			t.Errorf("B's reason %q, want %q", rb, want)
		}
		a, _ := l.Get("A")
		if a.GPUs() != 1200 {
			t.Errorf("A holds %d GPUs", a.GPUs())
		}
		if _, ok := l.Get("B"); ok {
			t.Error("B holds an allocation")
		}
		if l.State().FreeGPUs() != 800 {
			t.Errorf("%d GPUs free, want 800", l.State().FreeGPUs())
		}
		require.NoError(t, l.check())
	})
}

func TestHeterogeneousAndOrders(t *testing.T) {
	c := topology.Default2000()
	l := NewLedger(c, Options{})
	het := &Spec{ID: "het", Members: []Member{
		{Name: "launcher", Request: placement.NodesOf(1, 1)},
		{Name: "workers", Request: placement.Request{Nodes: 16, GPUsPerNode: 8, Required: "leaf"}},
		{Name: "ps", Request: placement.NodesOf(4, 4)},
	}}
	res, err := l.Admit(het)
	if err != nil || !res.Admitted {
		t.Fatalf("%v %s", err, res)
	}
	a, _ := l.Get("het")
	if a.Members[1].Pods != 16 || a.GPUs() != 1+128+16 {
		t.Fatalf("allocation %+v", a)
	}
	// The required-leaf member went first, so it got a whole leaf.
	lf := c.NodeDomain(topology.NodeID(a.Members[1].Assignment[0].Node), 2)
	for _, x := range a.Members[1].Assignment {
		if c.NodeDomain(x.Node, 2) != lf {
			t.Fatal("workers span leaves")
		}
	}
	if _, err := l.Admit(het); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("second admission of het: %v", err)
	}
	require.NoError(t, l.check())
}

// TestOtherOrder: the most-constrained-first order fails, and moving the
// failing member first succeeds.
func TestOtherOrder(t *testing.T) {
	// Leaf a: 2 idle nodes; leaf b: 3 idle nodes.
	spec := topology.ClusterSpec{Levels: []string{"leaf"}}
	for i := range 5 {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 8, Path: []string{[]string{"a", "b"}[min(i/2, 1)]}})
	}
	c, err := topology.Build(spec)
	require.NoError(t, err)
	onlyA, _ := c.NodeSet("n0", "n1")
	g := &Spec{ID: "g", Members: []Member{
		// x goes first (required level) and best-fits into leaf a ...
		{Name: "x", Request: placement.Request{Nodes: 2, GPUsPerNode: 8, Required: "leaf"}},
		// ... which is the only leaf y may use.
		{Name: "y", Request: placement.Request{Nodes: 2, GPUsPerNode: 8, Allowed: onlyA}},
	}}
	l := NewLedger(c, Options{})
	res, err := l.Admit(g)
	if err != nil || !res.Admitted {
		t.Fatalf("%v %s", err, res)
	}
	if res.Orders != 2 {
		t.Errorf("admitted after %d orders, want 2", res.Orders)
	}
	a, _ := l.Get("g")
	if x := a.Members[0].Assignment; c.NodeDomain(topology.NodeID(x[0].Node), 0) != 1 {
		t.Errorf("x on leaf %d, want b", c.NodeDomain(topology.NodeID(x[0].Node), 0))
	}
	require.NoError(t, l.check())
	// With y needing 3 nodes of leaf a, no order works; nothing changes.
	l2 := NewLedger(c, Options{})
	g.Members[1].Request.Nodes = 3
	before := l2.State().Clone()
	res, _ = l2.Admit(g)
	if res.Admitted || res.Member != "y" || !l2.State().Equal(before) || l2.Len() != 0 {
		t.Fatalf("impossible gang: %s (orders %d), state changed %v", res, res.Orders, !l2.State().Equal(before))
	}
}

func TestElasticMinimum(t *testing.T) {
	c := topology.Default2000()
	l := NewLedger(c, Options{})
	if r, _ := l.Admit(workers("big", 200, 8)); !r.Admitted {
		t.Fatal(r)
	}
	// 50 idle nodes left: an elastic member of 64 with minimum 32 gets 50.
	g := &Spec{ID: "el", Members: []Member{{Name: "w", Request: placement.NodesOf(64, 8), Min: 32}}}
	res, err := l.Admit(g)
	if err != nil || !res.Admitted {
		t.Fatalf("%v %s", err, res)
	}
	a, _ := l.Get("el")
	if a.Members[0].Pods != 50 || len(a.Members[0].Assignment) != 50 {
		t.Fatalf("elastic member got %d pods", a.Members[0].Pods)
	}
	// Below the minimum: nothing.
	g2 := &Spec{ID: "el2", Members: []Member{{Name: "w", Request: placement.NodesOf(64, 8), Min: 1}}}
	res, _ = l.Admit(g2)
	if res.Admitted || !strings.Contains(res.String(), "needs 1 node with 8 free GPUs; the cluster has 0") {
		t.Fatalf("el2: %s", res)
	}
	require.NoError(t, l.check())
}

func TestColocation(t *testing.T) {
	c := topology.Default2000()
	l := NewLedger(c, Options{})
	// Fill spine0 except 8 nodes, and spine1 except 40.
	if r, _ := l.Admit(&Spec{ID: "fill", Members: []Member{
		{Name: "s0", Request: placement.Request{Nodes: 56, GPUsPerNode: 8, Required: "spine"}},
		{Name: "s1", Request: placement.Request{Nodes: 24, GPUsPerNode: 8, Required: "spine"}},
	}}); !r.Admitted {
		t.Fatal(r)
	}
	g := &Spec{ID: "co", Colocate: Colocation{Level: "spine", Required: true}, Members: []Member{
		{Name: "a", Request: placement.NodesOf(20, 8)},
		{Name: "b", Request: placement.NodesOf(16, 8)},
	}}
	res, err := l.Admit(g)
	if err != nil || !res.Admitted || !res.Colocated {
		t.Fatalf("%v %s colocated=%v", err, res, res.Colocated)
	}
	a, _ := l.Get("co")
	sp := -1
	for _, m := range a.Members {
		for _, x := range m.Assignment {
			d := c.NodeDomain(x.Node, 1)
			if sp >= 0 && d != sp {
				t.Fatal("co-located gang spans spines")
			}
			sp = d
		}
	}
	// 100 nodes under one spine cannot exist (64 per spine): required
	// fails with a gang-level reason, preferred falls back.
	huge := &Spec{ID: "huge", Colocate: Colocation{Level: "spine", Required: true}, Members: []Member{{Name: "w", Request: placement.NodesOf(100, 8)}}}
	res, _ = l.Admit(huge)
	if res.Admitted || !strings.Contains(res.String(), "GPUs under one spine") {
		t.Fatalf("huge required: %s", res)
	}
	huge.Colocate.Required = false
	res, _ = l.Admit(huge)
	if !res.Admitted || res.Colocated {
		t.Fatalf("huge preferred: %s colocated=%v", res, res.Colocated)
	}
	require.NoError(t, l.check())
}

// TestColocationReasonNamesTheDomain: a required co-location that fails
// in every domain tried reports the last member's reason inside the last
// domain: its count is that domain's ("the leaf tried has 0", not "the
// cluster has"), and the nodes outside it are named as such, not as
// outside the member's Allowed (or its caller's AllowedLabel: a queue's
// pool).
func TestColocationReasonNamesTheDomain(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 3, GPUsPerNode: 8})
	require.NoError(t, err)
	nodes := func(ids ...int) *bitset.BitSet {
		s := c.NewNodeSet()
		for _, id := range ids {
			s.Set(uint(id))
		}
		return s
	}
	l := NewLedger(c, Options{})
	// The second leaf full; the first with one idle node and two half used.
	for _, f := range []Spec{
		{ID: "leaf1", Members: []Member{{Name: "w", Request: placement.Request{Nodes: 3, GPUsPerNode: 8, Allowed: nodes(3, 4, 5)}}}},
		{ID: "halves", Members: []Member{{Name: "w", Request: placement.Request{Nodes: 2, GPUsPerNode: 4, Allowed: nodes(1, 2)}}}},
	} {
		if r, _ := l.Admit(&f); !r.Admitted {
			t.Fatal(r)
		}
	}
	for _, tc := range []struct {
		name    string
		allowed *bitset.BitSet
		label   string
		want    string
	}{
		{"no Allowed", nil, "", "needs 1 node with 8 free GPUs; the leaf tried has 0 (6 nodes left out: 3 outside the leaf tried, 3 short of free GPUs)"},
		{"Allowed", nodes(0, 1, 2, 3, 4), "", "needs 1 node with 8 free GPUs; the leaf tried has 0 (6 nodes left out: 3 outside the leaf tried or outside Allowed, 3 short of free GPUs)"},
		{"a pool's Allowed", nodes(0, 1, 2, 3, 4, 5), "outside queue q's pool", "needs 1 node with 8 free GPUs; the leaf tried has 0 (6 nodes left out: 3 outside the leaf tried or outside queue q's pool, 3 short of free GPUs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			member := func(name string) Member {
				return Member{Name: name, Request: placement.Request{Nodes: 1, GPUsPerNode: 8, Allowed: tc.allowed, AllowedLabel: tc.label}}
			}
			g := &Spec{ID: "co", Colocate: Colocation{Level: "leaf", Required: true}, Members: []Member{member("a"), member("b")}}
			for range 2 { // the second time from the label cache
				res, err := l.Admit(g)
				require.NoError(t, err)
				if why := res.String(); res.Admitted || !strings.Contains(why, tc.want) || strings.Contains(why, "even with every GPU free") {
					t.Fatalf("two idle nodes wanted in one leaf, one idle: %s; want it to contain %q, and no verdict", why, tc.want)
				}
			}
		})
	}
	require.NoError(t, l.check())

	// The last domain tried (the idle first leaf) can never hold two
	// nodes of the member's Allowed, but the second leaf can, once its
	// half-used nodes free up: the reason gives no never-fits verdict.
	l = NewLedger(c, Options{})
	if r, _ := l.Admit(&Spec{ID: "halves", Members: []Member{{Name: "w", Request: placement.Request{Nodes: 2, GPUsPerNode: 4, Allowed: nodes(3, 4)}}}}); !r.Admitted {
		t.Fatal(r)
	}
	g := &Spec{ID: "co", Colocate: Colocation{Level: "leaf", Required: true}, Members: []Member{
		{Name: "m", Request: placement.Request{Nodes: 2, GPUsPerNode: 8, Allowed: nodes(0, 3, 4, 5)}}}}
	res, err := l.Admit(g)
	require.NoError(t, err)
	if why := res.String(); res.Admitted || !strings.Contains(why, "needs 2 nodes with 8 free GPUs; the leaf tried has 1 (5 nodes left out: 5 outside the leaf tried or outside Allowed)") || strings.Contains(why, "even with every GPU free") {
		t.Fatalf("two nodes of one leaf, the second leaf half used: %s; want the first leaf's reason without a verdict", why)
	}
	require.NoError(t, l.check())
}

func TestValidate(t *testing.T) {
	c := topology.Default2000()
	tests := []struct {
		name string
		g    Spec
		msg  string
	}{
		{"no id", Spec{Members: []Member{{Name: "a", Request: placement.NodesOf(1, 1)}}}, "no ID"},
		{"no members", Spec{ID: "g"}, "gang g has no members"},
		{"dup member", Spec{ID: "g", Members: []Member{{Name: "a", Request: placement.NodesOf(1, 1)}, {Name: "a", Request: placement.NodesOf(1, 1)}}}, `two members named "a"`},
		{"bad request", Spec{ID: "g", Members: []Member{{Name: "a", Request: placement.Request{Nodes: 1, Required: "rack"}}}}, `member a: placement: bad request`},
		{"bad min", Spec{ID: "g", Members: []Member{{Name: "a", Request: placement.Request{Nodes: 8, GPUsPerNode: 8, SegmentSize: 4}, Min: 3}}}, "not a multiple of segment size 4"},
		{"bad level", Spec{ID: "g", Colocate: Colocation{Level: "rack"}, Members: []Member{{Name: "a", Request: placement.NodesOf(1, 1)}}}, `co-location level "rack"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.g.Validate(c)
			if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Validate = %v, want ErrBadSpec mentioning %q", err, tt.msg)
			}
		})
	}
}

func TestNodeDownReleasesWholeGangs(t *testing.T) {
	c := topology.Default2000()
	l := NewLedger(c, Options{})
	for i, n := range []int{16, 16, 4} {
		if r, _ := l.Admit(workers(fmt.Sprintf("g%d", i), n, 8)); !r.Admitted {
			t.Fatal(r)
		}
	}
	a, _ := l.Get("g1")
	victim := int(a.Members[0].Assignment[3].Node)
	dead, err := l.NodeDown(topology.NodeID(victim))
	if err != nil || !slices.Equal(dead, []string{"g1"}) {
		t.Fatalf("NodeDown = %v, %v", dead, err)
	}
	if _, ok := l.Get("g1"); ok || l.State().Avail(0).Test(uint(victim)) {
		t.Fatal("dead gang kept or down node offered")
	}
	if l.State().UsedGPUs() != (16+4)*8 {
		t.Fatalf("used %d GPUs", l.State().UsedGPUs())
	}
	// Drain: the running gang stays, no new work lands.
	b, _ := l.Get("g0")
	dn := int(b.Members[0].Assignment[0].Node)
	require.NoError(t, l.Drain(topology.NodeID(dn)))
	if _, ok := l.Get("g0"); !ok || !slices.Equal(l.GangsOn(topology.NodeID(dn)), []string{"g0"}) {
		t.Fatal("drain removed the gang")
	}
	require.NoError(t, l.check())
}

func TestRestore(t *testing.T) {
	c := topology.Default2000()
	l := NewLedger(c, Options{})
	_, _ = l.Admit(workers("a", 8, 8))
	_, _ = l.Admit(&Spec{ID: "b", Members: []Member{{Name: "l", Request: placement.NodesOf(1, 2)}, {Name: "w", Request: placement.NodesOf(4, 4)}}})
	_ = l.Drain(200)
	_, _ = l.NodeDown(201)
	snap := l.Snapshot()
	data, err := json.Marshal(snap)
	require.NoError(t, err)
	t.Run("round trip", func(t *testing.T) {
		var back Snapshot
		require.NoError(t, json.Unmarshal(data, &back))
		r, err := Restore(c, back, Options{})
		require.NoError(t, err)
		if diff := cmp.Diff(snap, r.Snapshot()); diff != "" || !r.State().Equal(l.State()) {
			t.Fatalf("restored ledger differs (-saved +restored):\n%s\n%s\n%s", diff, r.Describe(), l.Describe())
		}
		require.NoError(t, r.check())
	})
	t.Run("conflict", func(t *testing.T) {
		bad := l.Snapshot()
		bad.Gangs[1].Members[1].Pods[0] = bad.Gangs[0].Members[0].Pods[2]
		r, err := Restore(c, bad, Options{})
		if r != nil || !errors.Is(err, ErrRestore) {
			t.Fatalf("Restore = %v, %v", r, err)
		}
		node := bad.Gangs[0].Members[0].Pods[2].Node
		for _, want := range []string{"node " + node + " GPU 0 claimed by gang a (member worker) and gang b (member w)"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("unknown node", func(t *testing.T) {
		bad := l.Snapshot()
		bad.Gangs[0].Members[0].Pods[0].Node = "n999"
		if _, err := Restore(c, bad, Options{}); !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), `gang a: unknown node "n999"`) {
			t.Fatalf("Restore: %v", err)
		}
	})
	t.Run("not whole", func(t *testing.T) {
		bad := l.Snapshot()
		bad.Gangs[1].Members[1].Pods = bad.Gangs[1].Members[1].Pods[:3]
		if _, err := Restore(c, bad, Options{}); !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), "gang b member w is not whole: 3 of 4 pods") {
			t.Fatalf("Restore: %v", err)
		}
	})
	// Records that contradict themselves: each is refused, naming the
	// gang and member (or node), where before some were taken as they
	// were and left the books inconsistent.
	for _, tc := range []struct {
		name string
		edit func(s *Snapshot)
		want string
	}{
		{"more pods than asked", func(s *Snapshot) { s.Gangs[1].Members[1].Want = 3 },
			"gang b member w: 4 pods, above the 3 it asked for"},
		{"negative size", func(s *Snapshot) { s.Gangs[1].Members[1].Want = -3 },
			"gang b member w: asks for -3 pods"},
		{"pods and a total", func(s *Snapshot) { s.Gangs[1].Members[1].GPUs = 16 },
			"gang b member w: asks for 4 pods (minimum 0) and 16 GPUs"},
		{"minimum without pods", func(s *Snapshot) {
			s.Gangs[1].Members[1].Want, s.Gangs[1].Members[1].Min, s.Gangs[1].Members[1].GPUs = 0, 2, 16
		},
			"gang b member w: asks for 0 pods (minimum 2) and 16 GPUs"},
		{"no member name", func(s *Snapshot) { s.Gangs[1].Members[0].Name = "" },
			"gang b: a member has no name"},
		{"pods of several sizes", func(s *Snapshot) { s.Gangs[1].Members[1].Pods[0].GPUs = []int{0, 1} },
			"gang b member w: its pods hold 2 to 4 GPUs, and not each its whole node"},
		{"a total beyond its GPUs", func(s *Snapshot) {
			m := &s.Gangs[1].Members[1]
			m.Want, m.GPUs = 0, 12
		}, "gang b member w: holds 16 GPUs, more than the 12 it asked for, not on whole nodes"},
		{"down and drained", func(s *Snapshot) { s.Drained = append(s.Drained, s.Down[0]) },
			"node " + c.NodeName(201) + " listed both down and drained"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := snapshotClone(l.Snapshot())
			tc.edit(&bad)
			r, err := Restore(c, bad, Options{})
			if r != nil || !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore = %v, %v; want ErrRestore saying %q", r, err, tc.want)
			}
		})
	}
}

// snapshotClone returns a deep copy of s, for tests that edit one.
func snapshotClone(s Snapshot) Snapshot {
	out := Snapshot{Down: slices.Clone(s.Down), Drained: slices.Clone(s.Drained)}
	for _, g := range s.Gangs {
		gr := GangRecord{ID: g.ID}
		for _, m := range g.Members {
			mr := m
			mr.Pods = nil
			for _, p := range m.Pods {
				mr.Pods = append(mr.Pods, PodRecord{Node: p.Node, GPUs: slices.Clone(p.GPUs)})
			}
			gr.Members = append(gr.Members, mr)
		}
		out.Gangs = append(out.Gangs, gr)
	}
	return out
}

// TestRestoreWholeNodes: gangs on whole nodes that the old checks
// refused or rebuilt wrongly round-trip through a snapshot and take their
// spec back: an exclusive GPU total (more GPUs than it asked for, on
// whole nodes) and whole-node pods on nodes of several sizes. An
// exclusive total with a node beyond its need is refused.
func TestRestoreWholeNodes(t *testing.T) {
	spec := topology.ClusterSpec{Levels: []string{"rack"}}
	for i, g := range []int{4, 4, 8, 8, 8, 8} {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: g, Path: []string{fmt.Sprintf("r%d", i/2)}})
	}
	c, err := topology.Build(spec)
	require.NoError(t, err)
	gangs := []*Spec{
		{ID: "x", Members: []Member{{Name: "w", Request: placement.Request{GPUs: 6, Exclusive: true}}}},
		{ID: "whole", Members: []Member{{Name: "w", Request: placement.Request{Nodes: 3}}}},
	}
	l := NewLedger(c, Options{})
	for _, g := range gangs {
		res, err := l.Admit(g)
		require.NoError(t, err)
		require.True(t, res.Admitted, "%s: %s", g.ID, res)
	}
	for _, g := range gangs {
		rec := l.record(g.ID)
		require.NoError(t, g.CheckRecord(c, &rec), g.ID)
	}
	x, _ := l.Get("x")
	w, _ := l.Get("whole")
	if x.GPUs() != 8 || w.GPUs() != 16 {
		t.Fatalf("x holds %d GPUs, whole %d; want 8 (one whole 8-GPU node for 6) and 16 (whole nodes, the smallest first: 4, 4 and 8)\n%s", x.GPUs(), w.GPUs(), l.Describe())
	}
	r, err := Restore(c, l.Snapshot(), Options{})
	require.NoError(t, err)
	for _, g := range gangs {
		require.NoError(t, r.SetSpec(g), g.ID)
	}
	require.NoError(t, r.check())
	if diff := cmp.Diff(l.Snapshot(), r.Snapshot()); diff != "" {
		t.Fatalf("restored ledger differs:\n%s", diff)
	}
	t.Run("a pod replaced on a larger node", func(t *testing.T) {
		// Nodes of 4, 4, 4 and 8 GPUs; with the 8-GPU node taken, an
		// exclusive total of 10 lands on the three 4-GPU nodes; once it
		// is free, a pod replaced there leaves the gang 16 GPUs, one node
		// to spare. The ledger made that state: it restores, and the
		// gang's spec still matches it.
		spec := topology.ClusterSpec{Levels: []string{"rack"}}
		for i, g := range []int{4, 4, 4, 8} {
			spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("m%d", i), GPUs: g, Path: []string{"r0"}})
		}
		c, err := topology.Build(spec)
		require.NoError(t, err)
		l := NewLedger(c, Options{})
		block := &Spec{ID: "block", Members: []Member{{Name: "w", Request: placement.Request{Nodes: 1, GPUsPerNode: 8}}}}
		ten := &Spec{ID: "ten", Members: []Member{{Name: "w", Request: placement.Request{GPUs: 10, Exclusive: true}}}}
		for _, g := range []*Spec{block, ten} {
			res, err := l.Admit(g)
			require.NoError(t, err)
			require.True(t, res.Admitted, "%s: %s", g.ID, res)
		}
		require.NoError(t, l.Release("block"))
		rep, err := l.ReplacePod("ten", "w", 0, nil)
		require.NoError(t, err)
		a, _ := l.Get("ten")
		if !rep.Replaced || a.GPUs() != 16 {
			t.Fatalf("replacement %+v: the gang holds %d GPUs, want 16 (4+4+8)\n%s", rep, a.GPUs(), l.Describe())
		}
		rec := l.record("ten")
		require.NoError(t, ten.CheckRecord(c, &rec))
		r, err := Restore(c, l.Snapshot(), Options{})
		require.NoError(t, err)
		require.NoError(t, r.SetSpec(ten))
		require.NoError(t, r.check())
		var small []PodRecord // the two 4-GPU pods
		for _, p := range rec.Members[0].Pods {
			if len(p.GPUs) == 4 {
				small = append(small, p)
			}
		}
		short := GangRecord{ID: "ten", Members: []MemberRecord{{Name: "w", GPUs: 10, Pods: small}}}
		if err := ten.CheckRecord(c, &short); err == nil || !strings.Contains(err.Error(), "8 GPUs recorded on 2 whole nodes, the spec asks for 10") {
			t.Fatalf("CheckRecord of two whole nodes for 10 GPUs: %v", err)
		}
	})
}

// TestRandomOperations is a seeded metamorphic test: admit / release /
// node down / node up / drain / snapshot-restore sequences, with the ledger
// and topology checkers after every step.
func TestRandomOperations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     *topology.Cluster
		steps int
	}{
		{"nodes=250", topology.Default2000(), 2000},
		{"nodes=12500", topology.FatTree100k(), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := tc.steps
			if testing.Short() {
				steps /= 8
			}
			runRandomLedger(t, tc.c, steps, rand.New(rand.NewPCG(3, uint64(tc.c.NumNodes()))))
		})
	}
}

func randomGang(r *rand.Rand, c *topology.Cluster, id string) *Spec {
	g := &Spec{ID: id}
	levels := c.Levels()
	for k := range 1 + r.IntN(3) {
		m := Member{Name: fmt.Sprintf("m%d", k)}
		switch r.IntN(4) {
		case 0:
			m.Request = placement.TotalGPUs(1 + r.IntN(40))
		default:
			m.Request = placement.NodesOf(1+r.IntN(c.NumNodes()/8), []int{1, 2, 4, 8, 0}[r.IntN(5)])
		}
		if r.IntN(3) == 0 {
			m.Request.Required = levels[r.IntN(len(levels))]
		}
		if m.Request.Nodes > 2 && r.IntN(4) == 0 {
			m.Min = 1 + r.IntN(m.Request.Nodes-1)
			if n := m.Request.Nodes; n >= 4 && n%2 == 0 && r.IntN(2) == 0 {
				m.Step, m.Min = 2, 2*(1+r.IntN(n/2-1))
			}
		}
		g.Members = append(g.Members, m)
	}
	if r.IntN(5) == 0 {
		g.Colocate = Colocation{Level: levels[r.IntN(len(levels))], Required: r.IntN(2) == 0}
	}
	return g
}

func runRandomLedger(t *testing.T, c *topology.Cluster, steps int, r *rand.Rand) {
	l := NewLedger(c, Options{})
	next := 0
	admitted, refused := 0, 0
	for step := range steps {
		var op string
		switch k := r.IntN(20); {
		case k < 9:
			g := randomGang(r, c, fmt.Sprintf("g%d", next))
			next++
			before := l.State().Clone()
			res, err := l.Admit(g)
			op = "admit " + g.ID
			if err != nil {
				t.Fatalf("step %d: %s: %v", step, op, err)
			}
			if res.Admitted {
				admitted++
				a, _ := l.Get(g.ID)
				if l.State().UsedGPUs()-before.UsedGPUs() != a.GPUs() {
					t.Fatalf("step %d: %s: state and allocation disagree", step, op)
				}
			} else {
				refused++
				if !l.State().Equal(before) {
					t.Fatalf("step %d: refused %s changed the state", step, op)
				}
				if res.String() == "" {
					t.Fatalf("step %d: refusal without reason", step)
				}
			}
		case k < 14 && l.Len() > 0:
			ids := l.IDs()
			id := ids[r.IntN(len(ids))]
			op = "release " + id
			require.NoError(t, l.Release(id))
		case k < 16:
			n := r.IntN(c.NumNodes())
			op = fmt.Sprintf("down %d", n)
			on := l.GangsOn(topology.NodeID(n))
			dead, err := l.NodeDown(topology.NodeID(n))
			if err != nil || !slices.Equal(dead, on) {
				t.Fatalf("step %d: %s: dead %v, want %v (%v)", step, op, dead, on, err)
			}
			for _, id := range dead {
				if _, ok := l.Get(id); ok {
					t.Fatalf("step %d: dead gang %s still present", step, id)
				}
			}
		case k < 18:
			n := r.IntN(c.NumNodes())
			op = fmt.Sprintf("up %d", n)
			require.NoError(t, l.NodeUp(topology.NodeID(n)))
		case k < 19:
			n := r.IntN(c.NumNodes())
			op = fmt.Sprintf("drain %d", n)
			require.NoError(t, l.Drain(topology.NodeID(n)))
		default:
			op = "snapshot-restore"
			snap := l.Snapshot()
			data, _ := json.Marshal(snap)
			var back Snapshot
			require.NoError(t, json.Unmarshal(data, &back))
			l2, err := Restore(c, back, Options{})
			if err != nil {
				t.Fatalf("step %d: restore: %v", step, err)
			}
			if diff := cmp.Diff(snap, l2.Snapshot()); diff != "" || !l2.State().Equal(l.State()) {
				t.Fatalf("step %d: restored ledger differs (-saved +restored):\n%s", step, diff)
			}
			l = l2
		}
		if err := l.check(); err != nil {
			t.Fatalf("step %d after %s: %v", step, op, err)
		}
	}
	if admitted == 0 || refused == 0 {
		t.Errorf("%d admitted, %d refused: the generator should produce both", admitted, refused)
	}
	t.Logf("%d admitted, %d refused", admitted, refused)
}
