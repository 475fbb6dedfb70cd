package gang

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// bruteG is an exhaustive packing search for gangs of every member
// shape the admitter takes on clusters of up to 9 nodes: node counts
// (elastic ones at full size or their minimum), GPU totals, exclusive
// members, Required, a domain limit at any level, Allowed sets, segments
// (SegmentSize or Segments layers: every domain of a layer's level holds
// a multiple of its size of the member's nodes).
type bruteG struct {
	c    *topology.Cluster
	g    *Spec
	free []int
	memo map[string]bool
}

// spans returns the domains of level l that set touches.
func (b *bruteG) spans(set uint, l int) int {
	seen := map[int]bool{}
	for i := range b.c.NumNodes() {
		if set&(1<<i) != 0 {
			seen[b.c.NodeDomain(topology.NodeID(i), l)] = true
		}
	}
	return len(seen)
}

// segmentsOK reports whether the nodes of set can be cut into r's
// segments: every domain of each layer's level holds a multiple of the
// layer's size of them.
func (b *bruteG) segmentsOK(r *placement.Request, set uint) bool {
	layers := r.Segments
	if r.SegmentSize > 1 {
		layers = [placement.MaxSegmentLayers]placement.Segment{{Size: r.SegmentSize, Level: r.SegmentLevel}}
	}
	for _, sg := range layers {
		if sg.Size <= 1 {
			continue
		}
		l := b.c.Depth() - 1
		if sg.Level != "" {
			l, _ = b.c.Level(sg.Level)
		}
		count := map[int]int{}
		for i := range b.c.NumNodes() {
			if set&(1<<i) != 0 {
				count[b.c.NodeDomain(topology.NodeID(i), l)]++
			}
		}
		for _, n := range count {
			if n%sg.Size != 0 {
				return false
			}
		}
	}
	return true
}

// fit reports whether members m.. fit on the free GPUs b.free inside
// nodes [lo, hi).
func (b *bruteG) fit(m int, lo, hi int) bool {
	if m == len(b.g.Members) {
		return true
	}
	key := fmt.Sprint(m, lo, hi, b.free)
	if v, ok := b.memo[key]; ok {
		return v
	}
	mem := &b.g.Members[m]
	r := &mem.Request
	c := b.c
	excl := r.Exclusive || r.GPUs == 0 && r.GPUsPerNode == 0
	var cand uint
	for i := lo; i < hi; i++ {
		if !usable(r, i) {
			continue
		}
		f, size := b.free[i], c.NodeGPUs(topology.NodeID(i))
		switch {
		case excl && f != size:
		case r.GPUs > 0 && f == 0:
		case r.GPUs == 0 && f < max(r.GPUsPerNode, 1):
		default:
			cand |= 1 << i
		}
	}
	sizes := []int{r.Nodes}
	if mem.Min > 0 && mem.Min < r.Nodes {
		sizes = append(sizes, mem.Min)
	}
	ok := false
	for set := cand; set != 0 && !ok; set = (set - 1) & cand {
		cnt := bits.OnesCount(set)
		if r.Required != "" {
			l, _ := c.Level(r.Required)
			if b.spans(set, l) != 1 {
				continue
			}
		}
		if r.MaxDomains > 0 {
			l := c.Depth() - 1
			if r.MaxDomainsLevel != "" {
				l, _ = c.Level(r.MaxDomainsLevel)
			}
			if b.spans(set, l) > r.MaxDomains {
				continue
			}
		}
		if r.GPUs == 0 {
			good := false
			for _, n := range sizes {
				good = good || cnt == n
			}
			if !good || !b.segmentsOK(r, set) {
				continue
			}
			var undo []int
			for i := range c.NumNodes() {
				if set&(1<<i) != 0 {
					t := r.GPUsPerNode
					if excl {
						t = b.free[i]
					}
					b.free[i] -= t
					undo = append(undo, i, t)
				}
			}
			ok = b.fit(m+1, lo, hi)
			for k := 0; k < len(undo); k += 2 {
				b.free[undo[k]] += undo[k+1]
			}
			continue
		}
		// GPU total.
		var nodes []int
		sum := 0
		for i := range c.NumNodes() {
			if set&(1<<i) != 0 {
				nodes = append(nodes, i)
				sum += b.free[i]
			}
		}
		if sum < r.GPUs || !excl && cnt > r.GPUs {
			continue
		}
		if excl {
			var undo []int
			for _, i := range nodes {
				undo = append(undo, i, b.free[i])
				b.free[i] = 0
			}
			ok = b.fit(m+1, lo, hi)
			for k := 0; k < len(undo); k += 2 {
				b.free[undo[k]] += undo[k+1]
			}
			continue
		}
		var rec func(k, left int) bool
		rec = func(k, left int) bool {
			if k == len(nodes) {
				return left == 0 && b.fit(m+1, lo, hi)
			}
			i := nodes[k]
			for t := 1; t <= min(b.free[i], left-(len(nodes)-k-1)); t++ {
				b.free[i] -= t
				done := rec(k+1, left-t)
				b.free[i] += t
				if done {
					return true
				}
			}
			return false
		}
		ok = rec(0, r.GPUs)
	}
	b.memo[key] = ok
	return ok
}

// provenGang draws a gang of two or three members of any shape: node
// counts (some elastic), GPU totals, exclusive members, Required, a
// domain limit, an Allowed set, and now and then a required co-location.
func provenGang(r *rand.Rand, c *topology.Cluster) *Spec {
	g := &Spec{ID: "g"}
	for k := range 2 + r.IntN(2) {
		var req placement.Request
		m := Member{Name: fmt.Sprintf("m%d", k)}
		if r.IntN(2) == 0 {
			req.GPUs = 1 + r.IntN(12)
			req.Exclusive = r.IntN(6) == 0
		} else {
			req = placement.NodesOf(1+r.IntN(3), []int{0, 1, 2, 4, 4, 8}[r.IntN(6)])
			req.Exclusive = r.IntN(8) == 0
			if r.IntN(4) == 0 && req.Nodes > 1 {
				m.Min = 1
			}
		}
		if r.IntN(2) == 0 {
			req.Required = []string{"leaf", "spine"}[r.IntN(2)]
		}
		if r.IntN(3) == 0 {
			req.MaxDomains = 1 + r.IntN(2)
			req.MaxDomainsLevel = []string{"", "spine"}[r.IntN(2)]
		}
		if r.IntN(5) == 0 {
			req.Allowed = randomNodeSet(r, c, 0.7)
		}
		m.Request = req
		g.Members = append(g.Members, m)
	}
	if r.IntN(6) == 0 {
		g.Colocate = Colocation{Level: []string{"leaf", "spine"}[r.IntN(2)], Required: true}
	}
	return g
}

// TestProvenFailure: on random clusters of up to 9 nodes, empty or partly
// used, and random gangs of every member shape, an admission that sets
// Proven is one the exhaustive search finds no packing for (backfill
// refuses a job for good on it, on the empty cluster), and every refusal
// of a gang of node-count members is proven. Before Proven, Submit took
// any failure on the empty cluster for "never fits": a gang of GPU-total
// members that the greedy pass and the search miss, but that fits, was
// refused forever.
func TestProvenFailure(t *testing.T) {
	for _, tt := range []struct {
		name string
		used bool // some GPUs in use
		seed uint64
	}{
		{"empty cluster", false, 1},
		{"partly used", true, 2},
	} {
		t.Run(tt.name, func(t *testing.T) { checkProven(t, tt.used, tt.seed, provenGang) })
	}
}

// checkProven admits gen's random gangs on random clusters of up to 9
// nodes (some GPUs used when used is set) and checks each outcome
// against the brute force.
func checkProven(t *testing.T, used bool, seed uint64, gen func(*rand.Rand, *topology.Cluster) *Spec) {
	cases := 2500
	if testing.Short() {
		cases = 500
	}
	r := rand.New(rand.NewPCG(seed, 2))
	var tried, fits, refused, proven, unproven int
	for k := 0; tried < cases; k++ {
		c := packCluster(r)
		if c.NumNodes() > 9 {
			continue
		}
		g := gen(r, c)
		if g.Validate(c) != nil {
			continue
		}
		tried++
		s := topology.NewState(c)
		if used {
			s = packState(r, c)
		}
		b := &bruteG{c: c, g: g, memo: map[string]bool{}}
		for i := range c.NumNodes() {
			b.free = append(b.free, s.FreeCount(topology.NodeID(i)))
		}
		want := false
		if g.Colocate.Level == "" {
			want = b.fit(0, 0, c.NumNodes())
		} else {
			lvl, _ := c.Level(g.Colocate.Level)
			for d := range c.NumDomains(lvl) {
				lo, hi := c.DomainRange(lvl, d)
				want = want || b.fit(0, int(lo), int(hi))
			}
		}
		var out Allocation
		res, err := NewAdmitter(c, Options{}).Check(s, g, &out)
		if err != nil {
			t.Fatalf("case %d: %v", k, err)
		}
		ctx := func() string {
			return fmt.Sprintf("case %d: gang %s co-located %q\n%s%s", k, describeGang(g), g.Colocate.Level, c.Describe(), s.Describe())
		}
		switch {
		case res.Admitted && !want:
			t.Fatalf("%s\nadmitted, brute force finds no packing", ctx())
		case res.Admitted && res.Proven:
			t.Fatalf("%s\nadmitted with Proven set", ctx())
		case res.Proven && want:
			t.Fatalf("%s\nrefused as proven (%s), but a packing exists", ctx(), res)
		case !res.Admitted && !res.Proven && !res.SearchCut:
			t.Fatalf("%s\nrefusal not proven though the search was not cut (%s)", ctx(), res)
		case !res.Admitted && want && !res.SearchCut:
			// A gang that fits the empty cluster but is refused without
			// a cut search would wait forever in backfill.
			t.Fatalf("%s\nrefused (%s) without SearchCut, but a packing exists", ctx(), res)
		}
		if want {
			fits++
		}
		if !res.Admitted {
			refused++
			if res.Proven {
				proven++
			} else if !want {
				unproven++
			}
		}
	}
	t.Logf("%d gangs, %d fit, %d refused: %d proven, %d that cannot fit left unproven, %d that fit missed",
		tried, fits, refused, proven, unproven, refused-proven-unproven)
	// The search covers GPU totals and domain limits: what it leaves
	// unproven is a search cut at its bound (91 and 142 of the 2,500
	// were, when it took the placer's one answer per domain for them; 2
	// and 1 before its free-GPU check rounded exclusive totals and
	// whole nodes up, none since: TestSearchBoundsProve).
	if unproven > tried/100 {
		t.Errorf("%d refusals of gangs that cannot fit left unproven", unproven)
	}
	if fits < tried/4 || proven < tried/10 {
		t.Errorf("unbalanced cases: %d fit, %d proven", fits, proven)
	}
}
