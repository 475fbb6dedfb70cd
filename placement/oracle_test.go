package placement

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// randomCluster builds a small random tree: 2 or 3 levels, up to maxNodes
// nodes, mixed GPU counts when hetero is set.
func randomCluster(r *rand.Rand, maxNodes int, hetero bool) *topology.Cluster {
	depth := 2 + r.IntN(2)
	levels := []string{"spine", "leaf"}
	if depth == 3 {
		levels = []string{"core", "spine", "leaf"}
	}
	n := 2 + r.IntN(maxNodes-1)
	spec := topology.Spec{Levels: levels}
	// Random contiguous group sizes per level.
	tops := 1 + r.IntN(3)
	mids := tops + r.IntN(3)
	leaves := mids + r.IntN(4)
	leaves = min(leaves, n)
	mids = min(mids, leaves)
	tops = min(tops, mids)
	for i := range n {
		leaf := i * leaves / n
		mid := leaf * mids / leaves
		top := mid * tops / mids
		gpus := 8
		if hetero {
			gpus = []int{1, 2, 4, 8}[r.IntN(4)]
		}
		path := []string{fmt.Sprintf("s%d", mid), fmt.Sprintf("l%d", leaf)}
		if depth == 3 {
			path = append([]string{fmt.Sprintf("c%d", top)}, path...)
		}
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%02d", i), GPUs: gpus, Path: path})
	}
	c, err := topology.Build(spec)
	if err != nil {
		panic(err)
	}
	return c
}

func randomState(r *rand.Rand, c *topology.Cluster) *topology.State {
	s := topology.NewState(c)
	for i := range c.NumNodes() {
		g := c.NodeGPUs(i)
		switch r.IntN(4) {
		case 0: // busy part of the node
			m := r.Uint64() & (1<<uint(g) - 1)
			if m != 0 {
				_ = s.Allocate([]topology.NodeAlloc{{Node: int32(i), GPUs: m}})
			}
		case 1:
			if r.IntN(4) == 0 {
				_ = s.SetStatus(i, topology.NodeStatus(1+r.IntN(2)))
			}
		}
	}
	return s
}

func randomRequest(r *rand.Rand, c *topology.Cluster) Request {
	var req Request
	if r.IntN(5) == 0 {
		req.GPUs = 1 + r.IntN(c.TotalGPUs()/2+1)
	} else {
		req.Nodes = 1 + r.IntN(min(c.NumNodes(), 7))
		req.GPUsPerNode = []int{0, 1, 2, 4, 8}[r.IntN(5)]
	}
	req.Exclusive = r.IntN(6) == 0
	depth := c.Depth()
	if r.IntN(3) == 0 {
		req.Required = c.LevelName(r.IntN(depth))
	}
	if r.IntN(4) == 0 {
		req.MaxDomains = 1 + r.IntN(3)
		if r.IntN(2) == 0 {
			req.MaxDomainsLevel = c.LevelName(r.IntN(depth))
		}
	}
	if req.Nodes > 1 && r.IntN(4) == 0 {
		for _, s := range []int{2, 3} {
			if req.Nodes%s == 0 {
				req.SegmentSize = s
				req.SegmentLevel = c.LevelName(r.IntN(depth))
			}
		}
		if req.MaxDomains > 0 && req.SegmentSize > 1 {
			// Keep the combination valid: the limit at or above the
			// segment level.
			sl, _ := c.Level(req.SegmentLevel)
			req.MaxDomainsLevel = c.LevelName(r.IntN(sl + 1))
		}
	}
	if r.IntN(4) == 0 {
		req.Excluded = c.NewNodeSet()
		for i := range c.NumNodes() {
			if r.IntN(5) == 0 {
				req.Excluded.Set(uint(i))
			}
		}
	}
	if r.IntN(5) == 0 {
		req.Allowed = c.NewNodeSet()
		for i := range c.NumNodes() {
			if r.IntN(4) != 0 {
				req.Allowed.Set(uint(i))
			}
		}
	}
	return req
}

// bruteResult is the best placement found by exhaustive search.
type bruteResult struct {
	found  bool
	within int // lowest level with one domain (higher is tighter)
	leaves int
}

// bruteForce enumerates every node subset that could serve req and keeps
// the one with the deepest single containing domain, then the fewest
// lowest-level domains.
func bruteForce(c *topology.Cluster, s *topology.State, req Request) bruteResult {
	n := c.NumNodes()
	depth := c.Depth()
	cand := 0
	for i := range n {
		if candidate(c, s, req, i) {
			cand |= 1 << i
		}
	}
	var best bruteResult
	for set := cand; ; set = (set - 1) & cand {
		if set != 0 && satisfies(c, s, req, set) {
			w, lv := shape(c, set)
			if !best.found || w > best.within || w == best.within && lv < best.leaves {
				best = bruteResult{true, w, lv}
			}
		}
		if set == 0 {
			break
		}
	}
	_ = depth
	return best
}

func candidate(c *topology.Cluster, s *topology.State, req Request, i int) bool {
	if !s.Schedulable(i) {
		return false
	}
	if req.Allowed != nil && !req.Allowed.Test(uint(i)) || req.Excluded != nil && req.Excluded.Test(uint(i)) {
		return false
	}
	free := s.FreeCount(i)
	excl := req.Exclusive || req.GPUs == 0 && req.GPUsPerNode == 0
	if excl && free != c.NodeGPUs(i) {
		return false
	}
	if req.GPUs > 0 {
		return free > 0
	}
	return free >= req.GPUsPerNode
}

func levelOf(c *topology.Cluster, name string) int {
	l, _ := c.Level(name)
	return l
}

func domainsUsed(c *topology.Cluster, set, l int) int {
	seen := map[int]bool{}
	for i := range c.NumNodes() {
		if set&(1<<i) != 0 {
			seen[c.NodeDomain(i, l)] = true
		}
	}
	return len(seen)
}

func satisfies(c *topology.Cluster, s *topology.State, req Request, set int) bool {
	cnt := bits.OnesCount(uint(set))
	if req.GPUs > 0 {
		sum := 0
		for i := range c.NumNodes() {
			if set&(1<<i) != 0 {
				sum += s.FreeCount(i)
			}
		}
		if sum < req.GPUs {
			return false
		}
		// Every node must be needed (no useless extra node): a node
		// whose removal still covers the request is not part of a
		// minimal cover, and placement never takes such a node.
		for i := range c.NumNodes() {
			if set&(1<<i) != 0 && sum-s.FreeCount(i) >= req.GPUs {
				return false
			}
		}
	} else if cnt != req.Nodes {
		return false
	}
	return constraintsOK(c, req, set)
}

// constraintsOK checks the topology constraints of req on a node set.
func constraintsOK(c *topology.Cluster, req Request, set int) bool {
	if req.Required != "" && domainsUsed(c, set, levelOf(c, req.Required)) != 1 {
		return false
	}
	if req.MaxDomains > 0 {
		l := c.Depth() - 1
		if req.MaxDomainsLevel != "" {
			l = levelOf(c, req.MaxDomainsLevel)
		}
		if domainsUsed(c, set, l) > req.MaxDomains {
			return false
		}
	}
	if req.SegmentSize > 1 {
		l := c.Depth() - 1
		if req.SegmentLevel != "" {
			l = levelOf(c, req.SegmentLevel)
		}
		per := map[int]int{}
		for i := range c.NumNodes() {
			if set&(1<<i) != 0 {
				per[c.NodeDomain(i, l)]++
			}
		}
		for _, k := range per {
			if k%req.SegmentSize != 0 {
				return false
			}
		}
	}
	return true
}

func shape(c *topology.Cluster, set int) (within, leaves int) {
	within = -1
	for l := range c.Depth() {
		if domainsUsed(c, set, l) == 1 {
			within = l
		}
	}
	return within, domainsUsed(c, set, c.Depth()-1)
}

// TestOracle compares Place with exhaustive search on thousands of random
// small clusters, states and requests.
func TestOracle(t *testing.T) {
	cases := 4000
	if testing.Short() {
		cases = 800
	}
	r := rand.New(rand.NewPCG(7, 11))
	buf := make([]topology.NodeAlloc, 0, 16)
	placed, failed, multi := 0, 0, 0
	defer func() {
		t.Logf("%d placed (%d spanning several leaves), %d failed", placed, multi, failed)
		// The generator must exercise both outcomes.
		if !t.Failed() && (placed < cases/4 || failed < cases/10 || multi < cases/20) {
			t.Errorf("unbalanced cases: %d placed, %d multi-leaf, %d failed", placed, multi, failed)
		}
	}()
	for k := range cases {
		c := randomCluster(r, 12, k%2 == 1)
		s := randomState(r, c)
		req := randomRequest(r, c)
		name := fmt.Sprintf("case%d", k)
		p := New(c)
		res, err := p.Place(s, &req, buf)
		if err != nil {
			t.Fatalf("%s: %s: %v", name, req.String(), err)
		}
		want := bruteForce(c, s, req)
		ctx := func() string {
			return fmt.Sprintf("%s: request %s\n%s%s", name, req.String(), c.Describe(), s.Describe())
		}
		if res.Placed != want.found {
			t.Fatalf("%s\nplaced=%v (%s), brute force found=%v", ctx(), res.Placed, res.Reason, want.found)
		}
		if !res.Placed {
			failed++
			if res.Reason.Code == Placed || res.Reason.String() == "" {
				t.Fatalf("%s\nfailure without a reason", ctx())
			}
			continue
		}
		placed++
		if res.Leaves(c) > 1 {
			multi++
		}
		checkAssignment(t, ctx, c, s, req, res)
		if res.Within != want.within {
			t.Fatalf("%s\nwithin level %d, brute force %d; assignment %v", ctx(), res.Within, want.within, res.Assignment)
		}
		leafLimited := req.MaxDomains == 0 || req.MaxDomainsLevel == "" || levelOf(c, req.MaxDomainsLevel) == c.Depth()-1
		if req.SegmentSize <= 1 && leafLimited && res.Leaves(c) != want.leaves {
			t.Fatalf("%s\nspans %d leaves, brute force %d; assignment %v", ctx(), res.Leaves(c), want.leaves, res.Assignment)
		}
	}
}

// checkAssignment verifies that an assignment is valid for the request:
// free GPUs, schedulable and allowed nodes, shape and every constraint.
func checkAssignment(t *testing.T, ctx func() string, c *topology.Cluster, s *topology.State, req Request, res Result) {
	t.Helper()
	set := 0
	gpus := 0
	for _, a := range res.Assignment {
		i := int(a.Node)
		if set&(1<<i) != 0 {
			t.Fatalf("%s\nnode %d given twice", ctx(), i)
		}
		set |= 1 << i
		if !candidate(c, s, req, i) {
			t.Fatalf("%s\nnode %s is not a candidate", ctx(), c.NodeName(i))
		}
		if a.GPUs&^s.Free(i) != 0 || a.GPUs == 0 {
			t.Fatalf("%s\nnode %s: GPUs %#x not free (%#x)", ctx(), c.NodeName(i), a.GPUs, s.Free(i))
		}
		excl := req.Exclusive || req.GPUs == 0 && req.GPUsPerNode == 0
		n := bits.OnesCount64(a.GPUs)
		switch {
		case excl && n != c.NodeGPUs(i):
			t.Fatalf("%s\nexclusive node %s got %d of %d GPUs", ctx(), c.NodeName(i), n, c.NodeGPUs(i))
		case !excl && req.GPUs == 0 && n != req.GPUsPerNode:
			t.Fatalf("%s\nnode %s got %d GPUs, want %d", ctx(), c.NodeName(i), n, req.GPUsPerNode)
		}
		gpus += n
	}
	if req.GPUs > 0 {
		excl := req.Exclusive
		if !excl && gpus != req.GPUs || excl && gpus < req.GPUs {
			t.Fatalf("%s\ngot %d GPUs, want %d", ctx(), gpus, req.GPUs)
		}
	}
	if !constraintsOK(c, req, set) {
		t.Fatalf("%s\nassignment %v breaks a constraint", ctx(), res.Assignment)
	}
	if req.GPUs == 0 && len(res.Assignment) != req.Nodes {
		t.Fatalf("%s\n%d nodes, want %d", ctx(), len(res.Assignment), req.Nodes)
	}
}

// TestFlatCluster: a cluster with no levels above the node.
func TestFlatCluster(t *testing.T) {
	spec := topology.Spec{}
	for i := range 6 {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 4})
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	s := topology.NewState(c)
	_ = s.Allocate([]topology.NodeAlloc{{Node: 0, GPUs: 0x7}, {Node: 1, GPUs: 0x1}})
	p := New(c)
	for _, tc := range []struct {
		req   Request
		nodes int
		ok    bool
	}{
		{NodesOf(1, 1), 1, true},
		{NodesOf(4, 4), 4, true},
		{NodesOf(5, 4), 0, false},
		{TotalGPUs(13), 4, true},
		{TotalGPUs(21), 0, false},
		{WholeNodes(4), 4, true},
	} {
		res, err := p.Place(s, &tc.req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Placed != tc.ok || res.Placed && res.Nodes != tc.nodes || res.Placed && res.Leaves(c) != 1 {
			t.Errorf("%s: placed %v on %d nodes (%s), want %v on %d", tc.req.String(), res.Placed, res.Nodes, res.Reason, tc.ok, tc.nodes)
		}
	}
}

// TestIntraNodeGroups: a request smaller than a node gets GPUs inside one
// intra-node group (the default nodes have pairs 0-1, 2-3, 4-5, 6-7 and
// halves 0-3, 4-7), the smallest group that holds it.
func TestIntraNodeGroups(t *testing.T) {
	c := topology.Default2000()
	p := New(c)
	for _, tc := range []struct {
		busy uint64 // busy GPUs on every node
		g    int
		want uint64
	}{
		{0x05, 2, 0x30}, // GPUs 0 and 2 busy: the first whole free pair is 4-5
		{0x01, 2, 0x0c}, // GPU 0 busy: pair 2-3
		{0x11, 3, 0x0e}, // GPUs 0 and 4 busy: both halves hold 3; the first (1-3)
		{0x13, 3, 0xe0}, // GPUs 0, 1 and 4 busy: only the half 4-7 holds 3 (5-7)
		{0x21, 4, 0x00}, // GPUs 0 and 5 busy: no half holds 4; lowest free GPUs
		{0x00, 4, 0x0f}, // idle: the first half
	} {
		s := topology.NewState(c)
		for n := range c.NumNodes() {
			if tc.busy != 0 {
				_ = s.Allocate([]topology.NodeAlloc{{Node: int32(n), GPUs: tc.busy}})
			}
		}
		req := NodesOf(1, tc.g)
		res, err := p.Place(s, &req, nil)
		if err != nil || !res.Placed {
			t.Fatalf("%v %s", err, res.Reason)
		}
		got := res.Assignment[0].GPUs
		want := tc.want
		if want == 0 {
			want = bitsLow(^tc.busy&0xff, tc.g)
		}
		if got != want {
			t.Errorf("busy %#x, %d GPUs: got %s, want %s", tc.busy, tc.g, topology.FormatGPUs(got), topology.FormatGPUs(want))
		}
	}
}

func bitsLow(m uint64, n int) uint64 {
	var out uint64
	for ; n > 0 && m != 0; n-- {
		low := m & -m
		out |= low
		m &^= low
	}
	return out
}
