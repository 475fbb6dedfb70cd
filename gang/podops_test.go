package gang

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bits-and-blooms/bitset"
	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// podLedger returns a ledger of the default cluster running "elastic"
// (6 to 8 pods of 8 GPUs, admitted at 8), "fixed" (4 pods of 4 GPUs in
// one leaf) and "total" (a 12-GPU total).
func podLedger(t *testing.T) *Ledger {
	t.Helper()
	l := NewLedger(topology.Default2000(), Options{})
	for _, g := range []*Spec{
		{ID: "elastic", Members: []Member{{Name: "worker", Request: placement.NodesOf(8, 8), Min: 6}}},
		{ID: "fixed", Members: []Member{{Name: "worker", Request: placement.Request{Nodes: 4, GPUsPerNode: 4, Required: "leaf"}}}},
		{ID: "total", Members: []Member{{Name: "worker", Request: placement.TotalGPUs(12)}}},
	} {
		if res, err := l.Admit(g); err != nil || !res.Admitted {
			t.Fatalf("%s: %v %v", g.ID, res, err)
		}
	}
	return l
}

// TestReleasePod: one pod of an elastic member above its minimum goes,
// the rest of the gang stays and the later ranks move down; every refusal
// names the job and the pod and changes nothing.
func TestReleasePod(t *testing.T) {
	for _, tc := range []struct {
		name, id, member string
		rank             int
		err              error
		msg              string
	}{
		{"elastic above min", "elastic", "worker", 2, nil, ""},
		{"fixed size", "fixed", "worker", 0, ErrBelowMin, "gang fixed member worker pod 0: the member has a fixed size of 4 pods"},
		{"GPU total", "total", "worker", 0, ErrBelowMin, "gang total member worker pod 0: the member asks for 12 GPUs in total"},
		{"unknown gang", "nope", "worker", 0, ErrUnknownGang, "nope"},
		{"unknown member", "elastic", "ps", 0, ErrUnknownPod, `gang elastic has no member "ps"`},
		{"unknown rank", "elastic", "worker", 8, ErrUnknownPod, "gang elastic member worker has no pod of rank 8 (it has 8 pods)"},
		{"negative rank", "elastic", "worker", -1, ErrUnknownPod, "no pod of rank -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := podLedger(t)
			before := l.State().Clone()
			var was Allocation
			if a, ok := l.Get(tc.id); ok {
				a.CopyTo(&was)
			}
			err := l.ReleasePod(tc.id, tc.member, tc.rank)
			if cerr := access.CheckLedger(l); cerr != nil {
				t.Fatal(cerr)
			}
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("error %v, want %v with %q", err, tc.err, tc.msg)
				}
				if !l.State().Equal(before) {
					t.Fatal("a refused release changed the state")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, _ := l.Get(tc.id)
			gone := was.Members[0].Assignment[tc.rank]
			if a.Members[0].Pods != 7 || len(a.Members[0].Assignment) != 7 || a.OnNode(gone.Node) {
				t.Fatalf("after release: %+v", a.Members[0])
			}
			for r, x := range a.Members[0].Assignment {
				want := was.Members[0].Assignment[r+boolInt(r >= tc.rank)]
				if x != want {
					t.Errorf("rank %d is %+v, want %+v", r, x, want)
				}
			}
			if before.UsedGPUs()-l.State().UsedGPUs() != 8 || l.State().FreeCount(gone.Node) != 8 {
				t.Errorf("the pod's 8 GPUs did not return")
			}
			// Down to the minimum, not below.
			if err := l.ReleasePod(tc.id, tc.member, 0); err != nil {
				t.Fatal(err)
			}
			err = l.ReleasePod(tc.id, tc.member, 0)
			if !errors.Is(err, ErrBelowMin) || !strings.Contains(err.Error(), "5 pods would be left, below the member's minimum of 6") {
				t.Fatalf("release below min: %v", err)
			}
			checkPods(t, "after release", a, true)
		})
	}
}

// TestReleasePodsNoRanks: with no ranks, ReleasePods still checks the
// gang and the member (an unknown one is an error, as with ranks) and
// changes nothing for a known one.
func TestReleasePodsNoRanks(t *testing.T) {
	for _, tc := range []struct {
		name, id, member string
		err              error
	}{
		{"known member", "elastic", "worker", nil},
		{"unknown member", "elastic", "ps", ErrUnknownPod},
		{"unknown gang", "nope", "worker", ErrUnknownGang},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := podLedger(t)
			before := l.State().Clone()
			err := l.ReleasePods(tc.id, tc.member)
			if !errors.Is(err, tc.err) || err == nil && tc.err != nil {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), tc.id) {
				t.Errorf("error %q does not name the gang", err)
			}
			if !l.State().Equal(before) {
				t.Fatal("a release of no pods changed the state")
			}
		})
	}
}

// TestReplacePod: a pod whose bind failed moves to another node of the
// leaf its gang requires, keeps its rank, and the other pods stay; with no
// spare node in the leaf nothing changes and the reason says why.
func TestReplacePod(t *testing.T) {
	c := topology.Default2000()
	leaf := c.Depth() - 1
	t.Run("spare in the leaf", func(t *testing.T) {
		l := podLedger(t)
		a, _ := l.Get("fixed")
		var was Allocation
		a.CopyTo(&was)
		rep, err := l.ReplacePod("fixed", "worker", 1, nil)
		if err != nil || !rep.Replaced {
			t.Fatalf("%+v %v", rep, err)
		}
		if err := access.CheckLedger(l); err != nil {
			t.Fatal(err)
		}
		old := was.Members[0].Assignment[1]
		if rep.Old.Node != old.Node || rep.New.Rank != 1 || rep.New.Node == old.Node || a.Members[0].Assignment[1] != (topology.NodeAlloc{Node: rep.New.Node, GPUs: rep.New.GPUs}) {
			t.Fatalf("replacement %+v of %+v", rep, old)
		}
		if c.NodeDomain(rep.New.Node, leaf) != c.NodeDomain(old.Node, leaf) || rep.Scope != "leaf" {
			t.Errorf("replacement left the required leaf: %+v", rep)
		}
		for r, x := range a.Members[0].Assignment {
			if r != 1 && x != was.Members[0].Assignment[r] {
				t.Errorf("rank %d moved", r)
			}
		}
		if rep.New.NumGPUs() != 4 || l.State().FreeCount(old.Node) == 0 {
			t.Errorf("replacement holds %d GPUs; old node has %d free", rep.New.NumGPUs(), l.State().FreeCount(old.Node))
		}
	})
	t.Run("no spare", func(t *testing.T) {
		l := podLedger(t)
		a, _ := l.Get("fixed")
		lo, hi := c.DomainRange(leaf, c.NodeDomain(a.Members[0].Assignment[0].Node, leaf))
		avoid := c.NewNodeSet()
		for n := lo; n < hi; n++ {
			avoid.Set(uint(n))
		}
		before := l.State().Clone()
		rep, err := l.ReplacePod("fixed", "worker", 0, avoid)
		if err != nil || rep.Replaced || rep.Reason.String() == "" {
			t.Fatalf("%+v %v", rep, err)
		}
		if why := rep.Reason.String(); !strings.Contains(why, "outside the nodes a replacement may use") || strings.Contains(why, "Allowed") {
			t.Errorf("the reason names the replacement's nodes as a user's Allowed set: %s", why)
		}
		if !l.State().Equal(before) {
			t.Fatal("a failed replacement changed the state")
		}
	})
	t.Run("errors", func(t *testing.T) {
		l := podLedger(t)
		if _, err := l.ReplacePod("fixed", "worker", 4, nil); !errors.Is(err, ErrUnknownPod) || !strings.Contains(err.Error(), "gang fixed member worker has no pod of rank 4") {
			t.Errorf("rank 4: %v", err)
		}
		if _, err := l.ReplacePod("nope", "worker", 0, nil); !errors.Is(err, ErrUnknownGang) {
			t.Errorf("unknown gang: %v", err)
		}
		if _, err := l.ReplacePod("fixed", "worker", 0, topology.Default2000().NewNodeSet()); err != nil {
			t.Errorf("an avoid set of the cluster's size: %v", err)
		}
	})
}

// TestPodOpsProperty runs random admissions, releases, pod releases and
// pod replacements with the ledger's invariants checked after every step:
// no GPU is held twice, every gang is whole (at or above its minimum), a
// replacement keeps the pod's rank and shape and stays inside every
// domain its gang requires (the member's Required level, a required
// co-location, the MaxDomains bound), and the ranks stay whole.
func TestPodOpsProperty(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	c := topology.Default2000()
	replaced, released, grown := 0, 0, 0
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 4))
		l := NewLedger(c, Options{})
		specs := map[string]*Spec{}
		for step := range 60 {
			ctx := fmt.Sprintf("seed %d step %d", seed, step)
			switch k := r.IntN(10); {
			case k < 4 || l.Len() == 0:
				g := randomGang(r, c, fmt.Sprintf("g%d", step))
				if r.IntN(3) == 0 {
					g.Members[0].Request.MaxDomains = 1 + r.IntN(3)
				}
				if res, err := l.Admit(g); err != nil {
					t.Fatalf("%s: %v", ctx, err)
				} else if res.Admitted {
					specs[g.ID] = g
				}
			case k < 5:
				_ = l.Release(l.IDs()[r.IntN(l.Len())])
			default:
				id := l.IDs()[r.IntN(l.Len())]
				a, _ := l.Get(id)
				mi := r.IntN(len(a.Members))
				rank := r.IntN(len(a.Members[mi].Assignment))
				switch {
				case k < 7:
					ranks := []int{rank}
					if g := specs[id].Members[mi]; g.Step > 1 {
						ranks = r.Perm(len(a.Members[mi].Assignment))[:min(g.Step, len(a.Members[mi].Assignment))]
					}
					if l.ReleasePods(id, a.Members[mi].Name, ranks...) == nil {
						released += len(ranks)
					}
				case k < 8:
					grown += checkGrow(t, ctx, l, specs[id], mi, r.IntN(4))
				default:
					if checkReplace(t, ctx, l, specs[id], mi, rank) {
						replaced++
					}
				}
			}
			if err := access.CheckLedger(l); err != nil {
				t.Fatalf("%s: %v", ctx, err)
			}
		}
		for _, id := range l.IDs() {
			a, _ := l.Get(id)
			checkPods(t, fmt.Sprintf("seed %d gang %s", seed, id), a, false)
			checkDomains(t, c, fmt.Sprintf("seed %d gang %s", seed, id), specs[id], a)
		}
	}
	if replaced == 0 || released == 0 || grown == 0 {
		t.Fatalf("%d replaced, %d released, %d grown: the generator should do all", replaced, released, grown)
	}
	t.Logf("%d pods replaced, %d released, %d added by growth", replaced, released, grown)
}

// checkGrow grows member mi of g by up to n pods and checks the result:
// old pods unchanged, new pods after them with the member's shape, at
// most the member's maximum; a member that cannot grow changes nothing.
func checkGrow(t *testing.T, ctx string, l *Ledger, g *Spec, mi, n int) int {
	a, _ := l.Get(g.ID)
	var was Allocation
	a.CopyTo(&was)
	before := l.State().Clone()
	m := &g.Members[mi]
	n *= max(m.Step, 1)
	added, err := l.GrowMember(g.ID, m.Name, n, nil)
	if err != nil {
		if !errors.Is(err, ErrAboveMax) || !l.State().Equal(before) {
			t.Fatalf("%s: grow %s/%s by %d: %v", ctx, g.ID, m.Name, n, err)
		}
		if m.Request.GPUs == 0 && m.Request.SegmentStep() == 1 && was.Members[mi].Pods+n <= m.Request.Nodes {
			t.Fatalf("%s: member %s (%d of %d pods) refused growth by %d: %v", ctx, m.Name, was.Members[mi].Pods, m.Request.Nodes, n, err)
		}
		return 0
	}
	ma := &a.Members[mi]
	if added > n || ma.Pods != was.Members[mi].Pods+added || len(ma.Assignment) != ma.Pods || added%max(m.Step, 1) != 0 {
		t.Fatalf("%s: grew by %d of %d to %d pods", ctx, added, n, ma.Pods)
	}
	for r, x := range was.Members[mi].Assignment {
		if ma.Assignment[r] != x {
			t.Fatalf("%s: growth moved rank %d", ctx, r)
		}
	}
	for _, x := range ma.Assignment[len(was.Members[mi].Assignment):] {
		want := m.Request.GPUsPerNode
		if want == 0 || m.Request.Exclusive {
			want = l.c.NodeGPUs(x.Node)
		}
		if popcount(x.GPUs) != want {
			t.Fatalf("%s: new pod on node %d holds %d GPUs, want %d", ctx, x.Node, popcount(x.GPUs), want)
		}
	}
	if l.State().UsedGPUs()-before.UsedGPUs() != a.GPUs()-was.GPUs() {
		t.Fatalf("%s: growth and state disagree", ctx)
	}
	checkDomains(t, l.c, ctx, g, a)
	return added
}

// checkReplace replaces pod rank of member mi of g and checks the result
// against the pod before; it reports whether the pod moved.
func checkReplace(t *testing.T, ctx string, l *Ledger, g *Spec, mi, rank int) bool {
	a, _ := l.Get(g.ID)
	old, _ := a.Pod(mi, rank)
	before := l.State().Clone()
	rep, err := l.ReplacePod(g.ID, a.Members[mi].Name, rank, nil)
	if err != nil {
		t.Fatalf("%s: %v", ctx, err)
	}
	if !rep.Replaced {
		if !l.State().Equal(before) || rep.Reason.String() == "" {
			t.Fatalf("%s: failed replacement changed the state or gave no reason", ctx)
		}
		return false
	}
	now, _ := a.Pod(mi, rank)
	want := old.NumGPUs()
	if g.Members[mi].Request.GPUsPerNode == 0 && g.Members[mi].Request.GPUs == 0 {
		want = l.c.NodeGPUs(now.Node)
	}
	if now != rep.New || rep.Old != old || now.Node == old.Node || now.NumGPUs() != want {
		t.Fatalf("%s: replaced %+v by %+v (report %+v)", ctx, old, now, rep)
	}
	checkDomains(t, l.c, ctx, g, a)
	return true
}

// checkDomains checks that a's pods meet g's domain requirements.
func checkDomains(t *testing.T, c *topology.Cluster, ctx string, g *Spec, a *Allocation) {
	t.Helper()
	oneDomain := func(level string, nodes func(yield func(topology.NodeID) bool)) {
		lvl, _ := c.Level(level)
		d := -1
		for n := range nodes {
			if d >= 0 && c.NodeDomain(n, lvl) != d {
				t.Fatalf("%s: gang %s spans two %s domains", ctx, g.ID, level)
			}
			d = c.NodeDomain(n, lvl)
		}
	}
	for mi := range g.Members {
		r := &g.Members[mi].Request
		nodes := func(yield func(topology.NodeID) bool) {
			for _, x := range a.Members[mi].Assignment {
				if !yield(x.Node) {
					return
				}
			}
		}
		if r.Required != "" {
			oneDomain(r.Required, nodes)
		}
		if r.MaxDomains > 0 {
			lvl := c.Depth() - 1
			seen := map[int]bool{}
			for n := range nodes {
				seen[c.NodeDomain(n, lvl)] = true
			}
			if len(seen) > r.MaxDomains {
				t.Fatalf("%s: gang %s member %s spans %d leaves, at most %d allowed", ctx, g.ID, g.Members[mi].Name, len(seen), r.MaxDomains)
			}
		}
	}
	if g.Colocate.Required {
		oneDomain(g.Colocate.Level, func(yield func(topology.NodeID) bool) {
			for p := range a.Pods() {
				if !yield(p.Node) {
					return
				}
			}
		})
	}
}

// TestPodOpsZeroAllocs: re-placing a pod, and releasing one, allocate
// nothing in the steady state.
func TestPodOpsZeroAllocs(t *testing.T) {
	l := podLedger(t)
	_, _ = l.ReplacePod("fixed", "worker", 2, nil) // sizes the node sets
	n := testing.AllocsPerRun(50, func() {
		if rep, err := l.ReplacePod("fixed", "worker", 2, nil); err != nil || !rep.Replaced {
			t.Fatalf("%+v %v", rep, err)
		}
	})
	if n != 0 {
		t.Errorf("ReplacePod: %v allocations", n)
	}
	n = testing.AllocsPerRun(1, func() {
		if err := l.ReleasePod("elastic", "worker", 0); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("ReleasePod: %v allocations", n)
	}
}

// TestGrowMember: an elastic member grows next to its last pod: the free
// nodes of its leaf first, then of the switch above, before a free leaf
// elsewhere; new pods take the next ranks; it never goes above its
// maximum.
func TestGrowMember(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger(c, Options{})
	insert := func(id string, m Member, nodes ...topology.NodeID) {
		t.Helper()
		a := Allocation{ID: id, Members: []MemberAllocation{{Name: m.Name, Pods: len(nodes)}}}
		for _, n := range nodes {
			a.Members[0].Assignment = append(a.Members[0].Assignment, topology.NodeAlloc{Node: n, GPUs: 0xff})
		}
		if err := l.Insert(&Spec{ID: id, Members: []Member{m}}, &a); err != nil {
			t.Fatal(err)
		}
	}
	worker := Member{Name: "w", Request: placement.NodesOf(2, 8)}
	insert("busy", worker, 8, 9)
	insert("e", Member{Name: "w", Request: placement.NodesOf(6, 8), Min: 2}, 10, 11)
	require := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	require(l.Release("busy"))
	added, err := l.GrowMember("e", "w", 4, nil)
	require(err)
	require(access.CheckLedger(l))
	a, _ := l.Get("e")
	var got []topology.NodeID
	for p := range a.Pods() {
		got = append(got, p.Node)
	}
	if want := []topology.NodeID{10, 11, 8, 9, 12, 13}; added != 4 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("added %d, pods on %v; want 4 on %v (its leaf, then the other leaf of its spine)", added, got, want)
	}
	if _, err := l.GrowMember("e", "w", 1, nil); !errors.Is(err, ErrAboveMax) || !strings.Contains(err.Error(), "growing by 1 would take it above its maximum of 6 pods (it has 6)") {
		t.Fatalf("growth above the maximum: %v", err)
	}
	if n, err := l.GrowMember("e", "w", math.MaxInt, nil); n != 0 || !errors.Is(err, ErrAboveMax) {
		t.Fatalf("growth by MaxInt (it wrapped): %d, %v", n, err)
	}
	if _, err := l.GrowMember("e", "x", 1, nil); !errors.Is(err, ErrUnknownPod) {
		t.Fatalf("unknown member: %v", err)
	}
	// Shrink back to the minimum, then grow with nodes to avoid.
	for range 4 {
		require(l.ReleasePod("e", "w", 2))
	}
	avoid := c.NewNodeSet()
	for n := 8; n < 16; n++ {
		avoid.Set(uint(n))
	}
	added, err = l.GrowMember("e", "w", 4, avoid)
	require(err)
	got = got[:0]
	for p := range a.Pods() {
		got = append(got, p.Node)
	}
	if want := []topology.NodeID{10, 11, 0, 1, 2, 3}; added != 4 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("added %d, pods on %v; want 4 on %v", added, got, want)
	}
	require(access.CheckLedger(l))
	n := testing.AllocsPerRun(20, func() {
		require(l.ReleasePod("e", "w", 5))
		if k, err := l.GrowMember("e", "w", 1, avoid); err != nil || k != 1 {
			t.Fatalf("%d %v", k, err)
		}
	})
	if n != 0 {
		t.Errorf("ReleasePod and GrowMember: %v allocations", n)
	}
}

// TestStep: a member with a Step is admitted, shrunk and grown in
// multiples of it, and a spec whose sizes are not multiples is refused.
func TestStep(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    Member
		msg  string
	}{
		{"nodes", Member{Name: "w", Request: placement.NodesOf(7, 8), Min: 2, Step: 2}, "Nodes 7 is not a multiple of Step 2"},
		{"min", Member{Name: "w", Request: placement.NodesOf(8, 8), Min: 3, Step: 2}, "Min 3 is not a multiple of Step 2"},
		{"gpus", Member{Name: "w", Request: placement.TotalGPUs(16), Step: 2}, "Step goes with Nodes"},
		{"negative", Member{Name: "w", Request: placement.NodesOf(8, 8), Step: -1}, "Step -1"},
	} {
		t.Run("bad "+tc.name, func(t *testing.T) {
			g := &Spec{ID: "g", Members: []Member{tc.m}}
			if err := g.Validate(c); !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Validate = %v, want %q", err, tc.msg)
			}
		})
	}
	l := NewLedger(c, Options{})
	if res, err := l.Admit(workers("busy", 3, 8)); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	g := &Spec{ID: "e", Members: []Member{{Name: "w", Request: placement.NodesOf(8, 8), Min: 2, Step: 2}}}
	if res, err := l.Admit(g); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	a, _ := l.Get("e")
	if a.Members[0].Pods != 4 {
		t.Fatalf("admitted with %d pods on 5 free nodes, want 4 (a multiple of 2)", a.Members[0].Pods)
	}
	if err := l.ReleasePod("e", "w", 1); !errors.Is(err, ErrBelowMin) || !strings.Contains(err.Error(), "steps of 2 pods") {
		t.Fatalf("release of one pod: %v", err)
	}
	if err := l.ReleasePods("e", "w", 1, 1); !errors.Is(err, ErrUnknownPod) {
		t.Fatalf("a rank twice: %v", err)
	}
	kept := []topology.NodeAlloc{a.Members[0].Assignment[0], a.Members[0].Assignment[2]}
	if err := l.ReleasePods("e", "w", 3, 1); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.Members[0].Assignment) != fmt.Sprint(kept) || a.Members[0].Pods != 2 {
		t.Fatalf("after releasing ranks 1 and 3: %+v, want %+v", a.Members[0].Assignment, kept)
	}
	if _, err := l.GrowMember("e", "w", 3, nil); !errors.Is(err, ErrAboveMax) {
		t.Fatalf("growth by 3: %v", err)
	}
	if n, err := l.GrowMember("e", "w", 6, nil); err != nil || n != 2 {
		t.Fatalf("growth by 6 with 3 free nodes: %d %v, want 2", n, err)
	}
	if err := access.CheckLedger(l); err != nil {
		t.Fatal(err)
	}
	if spare, _ := l.Spare("e", 0); spare != 2 {
		t.Fatalf("spare %d, want 2", spare)
	}
}

// TestSetSpecAfterRestore: a restored ledger keeps only the members'
// sizes, so a replacement may leave the member's required leaf; with the
// gang's spec given back (SetSpec) it stays inside it, as before the
// snapshot. A spec that disagrees with the gang's pods, or an unknown
// gang, is refused and changes nothing.
func TestSetSpecAfterRestore(t *testing.T) {
	c := topology.Default2000()
	leaf := c.Depth() - 1
	orig := podLedger(t)
	spec := &Spec{ID: "fixed", Members: []Member{{Name: "worker", Request: placement.Request{Nodes: 4, GPUsPerNode: 4, Required: "leaf"}}}}
	a, _ := orig.Get("fixed")
	home := c.NodeDomain(a.Members[0].Assignment[0].Node, leaf)
	// Avoid every spare node of the home leaf: the original cannot
	// re-place the pod; a ledger that forgot the required leaf can.
	lo, hi := c.DomainRange(leaf, home)
	avoid := c.NewNodeSet()
	for n := lo; n < hi; n++ {
		avoid.Set(uint(n))
	}
	restored := func(t *testing.T) *Ledger {
		t.Helper()
		r, err := Restore(c, orig.Snapshot(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rep, err := orig.ReplacePod("fixed", "worker", 0, avoid)
	if err != nil || rep.Replaced {
		t.Fatalf("original ledger: %+v %v, want no replacement outside the required leaf", rep, err)
	}
	t.Run("without the spec", func(t *testing.T) {
		r := restored(t)
		rep, err := r.ReplacePod("fixed", "worker", 0, avoid)
		if err != nil || !rep.Replaced || c.NodeDomain(rep.New.Node, leaf) == home {
			t.Fatalf("%+v %v: the restored ledger does not know the required leaf, so it re-places outside it", rep, err)
		}
	})
	t.Run("with the spec", func(t *testing.T) {
		r := restored(t)
		if err := r.SetSpec(spec); err != nil {
			t.Fatal(err)
		}
		rep, err := r.ReplacePod("fixed", "worker", 0, avoid)
		if err != nil || rep.Replaced || rep.Scope != "leaf" {
			t.Fatalf("%+v %v, want the original's answer: no replacement, scope leaf", rep, err)
		}
		rep, err = r.ReplacePod("fixed", "worker", 0, nil)
		if err != nil || !rep.Replaced || c.NodeDomain(rep.New.Node, leaf) != home {
			t.Fatalf("%+v %v, want a replacement inside leaf %d", rep, err, home)
		}
		if err := access.CheckLedger(r); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		r := restored(t)
		before := r.Snapshot()
		for _, tc := range []struct {
			name string
			spec *Spec
			err  error
		}{
			{"unknown gang", &Spec{ID: "nope", Members: spec.Members}, ErrUnknownGang},
			{"other sizes", &Spec{ID: "fixed", Members: []Member{{Name: "worker", Request: placement.Request{Nodes: 4, GPUsPerNode: 8, Required: "leaf"}}}}, ErrBadSpec},
			{"other member", &Spec{ID: "fixed", Members: []Member{{Name: "w", Request: spec.Members[0].Request}}}, ErrBadSpec},
			{"invalid request", &Spec{ID: "fixed", Members: []Member{{Name: "worker", Request: placement.Request{Nodes: 4, GPUsPerNode: 4, Required: "leaf", Excluded: bitset.New(3)}}}}, ErrBadSpec},
		} {
			if err := r.SetSpec(tc.spec); !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.spec.ID) {
				t.Errorf("%s: %v, want %v naming gang %s", tc.name, err, tc.err, tc.spec.ID)
			}
		}
		if diff := cmp.Diff(before, r.Snapshot()); diff != "" {
			t.Errorf("a refused SetSpec changed the ledger:\n%s", diff)
		}
	})
}

// TestInsertRefuses: Insert takes only a valid spec and a whole placement
// of it; anything else is ErrBadSpec (or the state's error) naming the
// gang, and changes nothing, so that the ledger's checker and its own
// snapshot stay sound.
func TestInsertRefuses(t *testing.T) {
	c := topology.Default2000()
	spec := func() *Spec {
		return &Spec{ID: "g", Members: []Member{{Name: "w", Request: placement.NodesOf(3, 4)}}}
	}
	alloc := func() *Allocation {
		return &Allocation{ID: "g", Members: []MemberAllocation{{Name: "w", Pods: 3, Assignment: []topology.NodeAlloc{
			{Node: 10, GPUs: 0x0f}, {Node: 11, GPUs: 0x0f}, {Node: 12, GPUs: 0x0f}}}}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(g *Spec, a *Allocation)
		err   error
		words string
	}{
		{"no ID", func(g *Spec, a *Allocation) { g.ID, a.ID = "", "" }, ErrBadSpec, "no ID"},
		{"invalid request", func(g *Spec, a *Allocation) { g.Members[0].Request.Excluded = bitset.New(3) }, ErrBadSpec, "gang g member w"},
		{"partial gang", func(g *Spec, a *Allocation) {
			a.Members[0].Pods, a.Members[0].Assignment = 1, a.Members[0].Assignment[:1]
		}, ErrBadSpec, "member w: 1 pods recorded, the spec asks for 3 to 3"},
		{"pods and nodes disagree", func(g *Spec, a *Allocation) { a.Members[0].Pods = 2 }, ErrBadSpec, "gang g member w: 2 pods on 3 nodes"},
		{"other member name", func(g *Spec, a *Allocation) { a.Members[0].Name = "ps" }, ErrBadSpec, "member w recorded as ps"},
		{"GPUs per pod", func(g *Spec, a *Allocation) { a.Members[0].Assignment[1].GPUs = 0xff }, ErrBadSpec, "holds 8 GPUs, the spec gives it 4"},
		{"unknown node", func(g *Spec, a *Allocation) { a.Members[0].Assignment[2].Node = 9999 }, topology.ErrUnknownNode, "gang g member w"},
		{"other gang", func(g *Spec, a *Allocation) { a.ID = "h" }, ErrBadSpec, "gang g: allocation h has 1 members, the spec 1"},
		{"two pods on one node", func(g *Spec, a *Allocation) {
			a.Members[0].Assignment[2] = topology.NodeAlloc{Node: 10, GPUs: 0xf0}
		}, ErrBadSpec, "member w: two pods on node"},
		{"two of 40 pods on one node", func(g *Spec, a *Allocation) {
			g.Members[0].Request = placement.NodesOf(40, 4)
			a.Members[0].Pods, a.Members[0].Assignment = 40, nil
			for n := range 40 {
				a.Members[0].Assignment = append(a.Members[0].Assignment, topology.NodeAlloc{Node: topology.NodeID(20 + n), GPUs: 0x0f})
			}
			a.Members[0].Assignment[39] = topology.NodeAlloc{Node: 25, GPUs: 0xf0}
		}, ErrBadSpec, "member w: two pods on node"},
		{"a pod of a GPU total without a GPU", func(g *Spec, a *Allocation) {
			g.Members[0].Request = placement.TotalGPUs(8)
			a.Members[0].Assignment[1].GPUs, a.Members[0].Assignment[2].GPUs = 0xf0, 0
		}, ErrBadSpec, "holds no GPU"},
		{"an elastic member off its step", func(g *Spec, a *Allocation) {
			g.Members[0].Request = placement.NodesOf(4, 4)
			g.Members[0].Min, g.Members[0].Step = 2, 2
		}, ErrBadSpec, "member w: 3 pods recorded, the spec grows and shrinks it in steps of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger(c, Options{})
			before := l.State().Clone()
			g, a := spec(), alloc()
			tc.edit(g, a)
			err := l.Insert(g, a)
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("Insert: %v, want %v saying %q", err, tc.err, tc.words)
			}
			if l.Len() != 0 || !l.State().Equal(before) {
				t.Fatal("a refused Insert changed the ledger")
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		l := NewLedger(c, Options{})
		if err := l.Insert(nil, alloc()); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Insert(nil spec): %v", err)
		}
		if err := l.Insert(spec(), nil); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Insert(nil allocation): %v", err)
		}
		if _, err := l.Admit(nil); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Admit(nil): %v", err)
		}
		if err := l.SetSpec(nil); !errors.Is(err, ErrBadSpec) {
			t.Errorf("SetSpec(nil): %v", err)
		}
		adm := NewAdmitter(c, Options{})
		if _, err := adm.Admit(nil, spec(), &Allocation{}); !errors.Is(err, topology.ErrOtherCluster) {
			t.Errorf("Admitter.Admit on a nil state: %v", err)
		}
		if _, err := adm.Admit(l.State(), spec(), nil); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Admitter.Admit into a nil allocation: %v", err)
		}
		if l.Len() != 0 {
			t.Error("a refused call changed the ledger")
		}
	})
	t.Run("whole", func(t *testing.T) {
		l := NewLedger(c, Options{})
		if err := l.Insert(spec(), alloc()); err != nil {
			t.Fatal(err)
		}
		if err := access.CheckLedger(l); err != nil {
			t.Fatal(err)
		}
		if _, err := Restore(c, l.Snapshot(), Options{}); err != nil {
			t.Fatalf("the ledger's own snapshot: %v", err)
		}
	})
}

// TestLedgerKeepsItsOwnSpec: the ledger keeps its own copy of an admitted
// or inserted gang's spec. A caller that reuses its Spec afterwards (its
// members slice, its node sets) changes nothing: a pod replaced later
// stays inside the nodes the gang was admitted with, and its member keeps
// its minimum. The copy reuses the ledger's buffers: admitting and
// releasing again allocates nothing (TestAdmitReleaseZeroAllocs).
func TestLedgerKeepsItsOwnSpec(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"admit", "insert"} {
		t.Run(how, func(t *testing.T) {
			l := NewLedger(c, Options{})
			allowed := c.NewNodeSet()
			for n := range 3 {
				allowed.Set(uint(n))
			}
			g := Spec{ID: "g", Members: []Member{{Name: "w", Min: 2, Request: placement.Request{Nodes: 2, GPUsPerNode: 8, Allowed: allowed}}}}
			switch how {
			case "admit":
				if res, err := l.Admit(&g); err != nil || !res.Admitted {
					t.Fatalf("%+v %v", res, err)
				}
			case "insert":
				a := Allocation{ID: "g", Members: []MemberAllocation{{Name: "w", Pods: 2, Assignment: []topology.NodeAlloc{{Node: 0, GPUs: 0xff}, {Node: 1, GPUs: 0xff}}}}}
				if err := l.Insert(&g, &a); err != nil {
					t.Fatal(err)
				}
			}
			// The caller reuses its spec: other nodes, no minimum.
			allowed.ClearAll()
			for n := 3; n < c.NumNodes(); n++ {
				allowed.Set(uint(n))
			}
			g.Members[0].Min = 0
			rep, err := l.ReplacePod("g", "w", 0, nil)
			if err != nil || !rep.Replaced || rep.New.Node != 2 {
				t.Fatalf("replacement %+v %v: want node 2, the only other node the gang was admitted on", rep, err)
			}
			if err := l.ReleasePod("g", "w", 1); err == nil {
				t.Error("a pod below the member's minimum of 2 was released")
			}
			if err := access.CheckLedger(l); err != nil {
				t.Fatal(err)
			}
		})
	}
}
