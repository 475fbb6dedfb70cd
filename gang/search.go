package gang

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// MaxSearchMembers is the largest gang the exact packing search takes on.
const MaxSearchMembers = 8

// SearchWork bounds the work of one exact packing search, in steps: one
// per member placement tried (and per node a GPU total's split visits,
// per node class the composition of a member with segments visits),
// plus one per 64 nodes it sorts into classes.
//
// The search runs when the greedy pass of an admission failed after
// placing some members. It is a depth-first search over the members, most
// constrained first. A member asking for nodes (Nodes x GPUsPerNode, whole
// nodes, exclusive nodes; Required, Allowed, Excluded and a domain limit
// honoured) tries every domain of its Required level and, inside it,
// every way of taking its nodes up to symmetry: nodes of one
// lowest-level domain with the same free GPUs and the same idleness,
// which each later member with an Allowed or Excluded set of its own may
// use both or neither of, are interchangeable for every later member, so
// the search chooses how many to take from each such class, tightest
// classes first, within its domain limit (MaxDomains). Lowest-level
// domains are merged by symmetry too: of two sibling domains (the same
// domain at every level above) with the same classes and the same nodes
// that only later members may use, the second takes no more, class by
// class in order, than the first (its mirror image was tried before).
// A member asking for a GPU total tries the placer's answer inside each domain of its
// Required level, then every other split of the total over the nodes
// there (how many GPUs each gives, all or none for an exclusive member;
// up to the same symmetry; within its domain limit): the placer lays a
// total out on the fewest leaves and nodes, which may be the one layout
// that leaves no room for the rest. A member with segments (SegmentSize,
// or every layer of Segments) tries the placer's answer inside each
// domain of its Required level, then every other way of taking its nodes
// there as above, keeping those where every domain of each layer's level
// holds a multiple of the layer's size (so that the nodes cut into
// segments): the placer's choice of segment domains may be the one that
// leaves no room for the rest; it skips a choice when a domain of a
// layer's level cannot end with a multiple of the size or the domains
// after it cannot give the rest in multiples. Segment domains above the
// lowest level are not merged by symmetry (twin lowest-level domains
// are), nor are the nodes a GPU total's split visits beyond their
// classes. Before going deeper the search checks that every remaining member still has a
// domain with enough candidate nodes, that every remaining GPU-total
// member has a domain of its Required level (and, with a limit of one
// domain, one of the limit's level) with its GPUs free, that the free
// GPUs cover what they take at least (an exclusive GPU total rounded up
// to whole nodes, whole nodes counted at the cluster's smallest nodes),
// and that the pods needing a node of their own (exclusive ones on idle
// nodes, pods of more than half the largest node's GPUs) have as many
// nodes, and that the nodes with every GPU of the largest size free
// hold what cannot go elsewhere (fullNodesFit); a member with segments
// counts its nodes in multiples of each layer's size, inner layers
// inside outer ones. Before trying a member inside a domain, it checks
// that every later member still has a domain with its nodes or GPUs
// (in as many domains as its own limit allows) once the member's GPUs
// are taken there (laterFitAfter), and a GPU total's split stops when
// the domains its limit still allows cannot hold the rest. These checks
// only skip choices under which no packing exists: the search finds the
// same packing as without them, in fewer steps. An elastic member is
// searched at its full size, then, if no packing exists, at its minimum.
//
// Within the bound the search finds a packing whenever one exists for
// gangs of node-count members (with or without segments) and GPU-total
// members (up to MaxSearchMembers), and proves that none exists
// otherwise. The bound is about 10 ms of work on the 250-node default cluster (measured on random
// gangs whose greedy pass failed); beyond it the admission fails with the
// greedy pass's reason and Admission.SearchCut set. A failure the search
// reached is proven (Admission.Proven) exactly when it was not cut.
const SearchWork = 1 << 13

// packSearch is the exact search's scratch space, one frame per member.
type packSearch struct {
	steps  int
	cut    bool
	lo, hi int // the nodes of the co-location domain (or the cluster)
	colo   int // the co-location level (-1: none)
	atMin  bool
	frames [MaxSearchMembers]searchFrame
	keys   []int16 // per node of a leaf being classified
	// sets lists the members after the one being classified that have
	// node sets of their own (Allowed or Excluded): nodes alike for the
	// one classified are interchangeable for them only when each of them
	// may use both or neither.
	sets  [MaxSearchMembers]*placement.Request
	nsets int
	// laterNeed is the fewest free GPUs a node needs for a later member
	// not taking whole nodes to use it; laterExcl reports a later member
	// that takes idle nodes.
	laterNeed int
	laterExcl bool
	// twinKeys holds the keys of two leaves' nodes being compared.
	twinKeys [2][]int32
	// plain turns off the bounds and the symmetry that only prune
	// subtrees without a packing (for tests comparing the two).
	plain bool
	// seg is segRoom's scratch space.
	seg segProbe
}

// searchFrame holds one member's candidate classes: nodes[bins[b].lo:
// bins[b].hi] are the nodes of class b, of which take[b] are taken.
type searchFrame struct {
	bins  []nodeClass
	nodes []int32
	take  []int32
	// tied marks, for a GPU total, the nodes of a class after its first.
	tied []bool
	// mirror[b], for a member asking for nodes, is the class that class b
	// matches in the leaf before b's when the two leaves are twins
	// (twinLeaves), or -1; twinStart[b] marks the first class of a leaf
	// with a twin before it.
	mirror    []int32
	twinStart []bool
	// suffix[b] counts the nodes of classes b..; for a member with
	// segments, segAvail[i][b] those of classes b.. in class b's domain
	// of layer i's level, and segAfter[i][b] the most the domains after
	// it can give in multiples of the layer's size.
	suffix []int32
	// domRest[k], for a GPU total with a domain limit, counts the free
	// GPUs of candidates k.. in candidate k's domain of the limit's
	// level, and domAfter[k] the most free GPUs of the candidates of one
	// such domain after it.
	domRest  []int32
	domAfter []int32
	segAvail [placement.MaxSegmentLayers][]int32
	segAfter [placement.MaxSegmentLayers][]int32
	// A member with segments: nseg layers, layer i asking for a multiple
	// of segSize[i] nodes in every domain of level segLvl[i].
	nseg    int
	segLvl  [placement.MaxSegmentLayers]int
	segSize [placement.MaxSegmentLayers]int32
}

// segCounts holds, per segment layer, the nodes a composition takes in
// the current domain of the layer's level.
type segCounts [placement.MaxSegmentLayers]int32

// nodeClass is one class of a frame: its nodes and its key (see
// classifyLeaf and classifyLeafBySets).
type nodeClass struct{ lo, hi, key int32 }

func (ps *packSearch) init(c *topology.Cluster) {
	n := c.NumNodes()
	ps.keys = make([]int16, n)
	ps.twinKeys = [2][]int32{make([]int32, 0, n), make([]int32, 0, n)}
	for i := range ps.frames {
		f := &ps.frames[i]
		f.bins = make([]nodeClass, 0, n)
		f.nodes = make([]int32, 0, n)
		f.take = make([]int32, n)
		f.tied = make([]bool, n)
		f.mirror = make([]int32, n)
		f.twinStart = make([]bool, n)
		f.suffix = make([]int32, n+1)
		f.domRest = make([]int32, n)
		f.domAfter = make([]int32, n)
		for i := range f.segAvail {
			f.segAvail[i] = make([]int32, n)
			f.segAfter[i] = make([]int32, n)
		}
	}
}

// searchPacking runs the exact search on s, inside domain d of level lvl
// when lvl >= 0, and records its outcome in res. On success the members
// stay allocated on s, as after a successful greedy pass.
func (a *Admitter) searchPacking(s *topology.State, g *Spec, out *Allocation, lvl, d int, res *Admission) {
	ps := &a.pack
	ps.steps, ps.cut, ps.colo = 0, false, lvl
	ps.lo, ps.hi = 0, a.c.NumNodes()
	if lvl >= 0 {
		f, e := a.c.DomainRange(lvl, d)
		ps.lo, ps.hi = int(f), int(e)
	}
	res.Searched = true
	for _, atMin := range [2]bool{false, true} {
		if atMin && (ps.cut || !hasElastic(g)) {
			break
		}
		ps.atMin = atMin
		if a.searchFrom(s, g, out, 0) {
			res.Admitted = true
			res.Member, res.Reason = "", placement.Reason{}
			break
		}
	}
	res.SearchSteps, res.SearchCut = ps.steps, ps.cut
	// The search enumerates every member's placements (up to symmetry):
	// a refusal it did not cut is proven.
	res.Proven = !res.Admitted && !ps.cut
}

func hasElastic(g *Spec) bool {
	for i := range g.Members {
		if m := &g.Members[i]; m.Min > 0 && m.Min < m.Request.Nodes {
			return true
		}
	}
	return false
}

// searchFrom places the members a.order[pos:] and reports whether all
// fit; on failure it leaves them unallocated.
func (a *Admitter) searchFrom(s *topology.State, g *Spec, out *Allocation, pos int) bool {
	ps := &a.pack
	if pos == len(a.order) {
		return true
	}
	if ps.steps >= SearchWork {
		ps.cut = true
		return false
	}
	if !a.mayFit(s, g, pos) {
		return false
	}
	m := &g.Members[a.order[pos]]
	first, last, lvl := a.memberDomains(m)
	for d := first; d <= last; d++ {
		lo, hi := ps.lo, ps.hi
		if lvl >= 0 {
			f, e := a.c.DomainRange(lvl, d)
			lo, hi = int(f), int(e)
		}
		if !ps.plain && !a.laterFitAfter(s, g, pos, lvl, d) {
			continue
		}
		if a.tryDomain(s, g, out, pos, lo, hi) {
			return true
		}
		if ps.cut {
			return false
		}
	}
	return false
}

// memberDomains returns the domains [first, last] of level lvl that m may
// be placed in: those of its Required level inside the search's scope, or
// the scope itself (lvl -1).
func (a *Admitter) memberDomains(m *Member) (first, last, lvl int) {
	ps := &a.pack
	if m.Request.Required == "" {
		return 0, 0, -1
	}
	r, _ := a.c.Level(m.Request.Required)
	if ps.colo >= 0 && r <= ps.colo {
		return 0, 0, -1
	}
	return a.c.NodeDomain(topology.NodeID(ps.lo), r), a.c.NodeDomain(topology.NodeID(ps.hi-1), r), r
}

// tryDomain tries member a.order[pos] inside nodes [lo, hi), then the
// members after it.
func (a *Admitter) tryDomain(s *topology.State, g *Spec, out *Allocation, pos, lo, hi int) bool {
	mi := a.order[pos]
	m, ma := &g.Members[mi], &out.Members[mi]
	if m.Request.GPUs == 0 && m.Request.SegmentStep() == 1 {
		return a.enumerate(s, g, out, pos, lo, hi)
	}
	a.pack.steps++
	pm := m
	var atMin Member
	if a.pack.atMin && m.Min > 0 && m.Min < m.Request.Nodes {
		// Searched at its minimum: placed at it, not at the largest
		// size that fits (which may leave no room for the rest).
		atMin = *m
		atMin.Request.Nodes, atMin.Min = m.Min, 0
		pm = &atMin
	}
	if ok, _ := a.placeMemberIn(s, pm, ma, lo, hi, ""); ok { // the reason is not used
		if a.allocateAndGo(s, g, out, pos) {
			return true
		}
	}
	if a.pack.cut {
		return false
	}
	if m.Request.GPUs == 0 {
		// Segments: the placer's choice of segment domains may not be
		// the one a packing needs; try every other.
		return a.enumerate(s, g, out, pos, lo, hi)
	}
	// A GPU total: the placer's layout (fewest leaves, then nodes) may
	// not be the one a packing needs; try every other split.
	return a.enumerateGPUs(s, g, out, pos, lo, hi)
}

// enumerateGPUs tries every way of laying member a.order[pos]'s GPU total
// out on the candidates in [lo, hi): how many GPUs each node gives (all
// or none for an exclusive member), within its domain limit.
func (a *Admitter) enumerateGPUs(s *topology.State, g *Spec, out *Allocation, pos, lo, hi int) bool {
	r := &g.Members[a.order[pos]].Request
	f := &a.pack.frames[pos]
	a.setLaterSets(g, pos)
	// The candidates are the nodes with a free GPU (idle ones for an
	// exclusive member), in classes of nodes alike for every later
	// member (see classify): within a class, the search gives no node
	// more GPUs than the one before it.
	a.req = *r
	a.req.GPUs, a.req.GPUsPerNode = 0, 1
	a.classify(s, &a.req, f, lo, hi, false)
	for _, b := range f.bins {
		f.tied[b.lo] = false
		for k := b.lo + 1; k < b.hi; k++ {
			f.tied[k] = true
		}
	}
	// f.take[k] counts the GPUs candidate k gives.
	capacity := 0
	for _, n := range f.nodes {
		capacity += s.FreeCount(topology.NodeID(n))
	}
	if capacity < r.GPUs {
		return false
	}
	if lim := a.limitLevel(r); lim >= 0 && !a.pack.plain {
		a.domainCapacities(s, f, lim)
	}
	return a.splitGPUs(s, g, out, pos, 0, r.GPUs, capacity, a.limitLevel(r), -1, 0)
}

// splitGPUs chooses the GPUs candidates k.. of frame pos give, left in
// all (rest: what they have free), the candidates before k spanning
// spans domains of level lim (the last one dom) when lim >= 0.
func (a *Admitter) splitGPUs(s *topology.State, g *Spec, out *Allocation, pos, k, left, rest, lim, dom, spans int) bool {
	ps := &a.pack
	r := &g.Members[a.order[pos]].Request
	f := &ps.frames[pos]
	if left <= 0 {
		a.materializeGPUs(s, g, out, pos, k)
		ps.steps++
		return a.allocateAndGo(s, g, out, pos)
	}
	if rest < left {
		return false
	}
	if ps.steps >= SearchWork {
		ps.cut = true
		return false
	}
	ps.steps++
	n := topology.NodeID(f.nodes[k])
	free := s.FreeCount(n)
	nd, ns := dom, spans
	if lim >= 0 {
		d := a.c.NodeDomain(n, lim)
		if d != dom {
			nd, ns = d, spans+1
		}
		if !ps.plain {
			// The GPUs left come from the rest of the open domain (or
			// candidate k's, when it opens one) and the domains after
			// it, within the limit.
			room := int(f.domAfter[k]) * (r.MaxDomains - spans)
			if d != dom {
				room = max(int(f.domRest[k]), int(f.domAfter[k])) * (r.MaxDomains - spans)
			} else {
				room += int(f.domRest[k])
			}
			if room < left {
				return false
			}
		}
	}
	if ns <= r.MaxDomains || lim < 0 {
		hi, lo := min(free, left), 1
		if r.Exclusive {
			hi, lo = free, free
		}
		if f.tied[k] {
			hi = min(hi, int(f.take[k-1]))
		}
		for t := hi; t >= lo; t-- {
			f.take[k] = int32(t)
			if a.splitGPUs(s, g, out, pos, k+1, left-t, rest-free, lim, nd, ns) {
				return true
			}
			if ps.cut {
				return false
			}
		}
	}
	f.take[k] = 0
	return a.splitGPUs(s, g, out, pos, k+1, left, rest-free, lim, dom, spans)
}

// domainCapacities fills f.domRest and f.domAfter for the candidates of
// a GPU total whose domain limit is at level lim.
func (a *Admitter) domainCapacities(s *topology.State, f *searchFrame, lim int) {
	after, cur, dom := int32(0), int32(0), -1
	for k := len(f.nodes) - 1; k >= 0; k-- {
		n := topology.NodeID(f.nodes[k])
		if d := a.c.NodeDomain(n, lim); d != dom {
			after = max(after, cur)
			cur, dom = 0, d
		}
		cur += int32(s.FreeCount(n))
		f.domRest[k], f.domAfter[k] = cur, after
	}
}

// materializeGPUs writes member a.order[pos]'s assignment from the GPUs
// taken from candidates [0, k) of its frame.
func (a *Admitter) materializeGPUs(s *topology.State, g *Spec, out *Allocation, pos, k int) {
	mi := a.order[pos]
	ma := &out.Members[mi]
	f := &a.pack.frames[pos]
	ma.Assignment, ma.Pods = ma.Assignment[:0], 0
	for j, n := range f.nodes[:k] {
		if t := int(f.take[j]); t > 0 {
			ma.Assignment = append(ma.Assignment, topology.NodeAlloc{Node: topology.NodeID(n), GPUs: bits.LowBits(s.Free(topology.NodeID(n)), t)})
			ma.Pods++
		}
	}
}

// allocateAndGo allocates member a.order[pos]'s assignment, searches the
// rest, and releases it when they do not fit.
func (a *Admitter) allocateAndGo(s *topology.State, g *Spec, out *Allocation, pos int) bool {
	ma := &out.Members[a.order[pos]]
	if err := s.Allocate(ma.Assignment); err != nil {
		panic(fmt.Sprintf("gang: search built an assignment the state refuses: %v", err))
	}
	if a.searchFrom(s, g, out, pos+1) {
		return true
	}
	a.release(s, ma)
	return false
}

// limitLevel returns the level of r's domain limit, or -1 without one.
func (a *Admitter) limitLevel(r *placement.Request) int {
	if r.MaxDomains <= 0 {
		return -1
	}
	if r.MaxDomainsLevel == "" {
		return a.c.Depth() - 1
	}
	l, _ := a.c.Level(r.MaxDomainsLevel)
	return l
}

// searchPods returns the pods the search gives member m.
func (a *Admitter) searchPods(m *Member) int {
	if a.pack.atMin && m.Min > 0 && m.Min < m.Request.Nodes {
		return m.Min
	}
	return m.Request.Nodes
}

// enumerate tries every way, up to symmetry, of taking member
// a.order[pos]'s nodes inside [lo, hi).
func (a *Admitter) enumerate(s *topology.State, g *Spec, out *Allocation, pos, lo, hi int) bool {
	m := &g.Members[a.order[pos]]
	f := &a.pack.frames[pos]
	a.setLaterSets(g, pos)
	a.classify(s, &m.Request, f, lo, hi, !a.pack.plain)
	a.segmentLayers(&m.Request, f)
	a.capacities(f)
	return a.compose(s, g, out, pos, 0, a.searchPods(m), -1, 0, segCounts{}, false)
}

// capacities fills f.suffix and, for a member with segments, f.segAvail
// and f.segAfter.
func (a *Admitter) capacities(f *searchFrame) {
	nb := len(f.bins)
	f.suffix[nb] = 0
	for b := nb - 1; b >= 0; b-- {
		f.suffix[b] = f.suffix[b+1] + f.bins[b].hi - f.bins[b].lo
	}
	for i := range f.nseg {
		size, after, cur, dom := f.segSize[i], int32(0), int32(0), -1
		for b := nb - 1; b >= 0; b-- {
			if d := a.c.NodeDomain(topology.NodeID(f.nodes[f.bins[b].lo]), f.segLvl[i]); d != dom {
				after += cur / size * size
				cur, dom = 0, d
			}
			cur += f.bins[b].hi - f.bins[b].lo
			f.segAvail[i][b], f.segAfter[i][b] = cur, after
		}
	}
}

// segmentLayers records r's segment layers of more than one node in f
// (SegmentSize, or every layer of Segments).
func (a *Admitter) segmentLayers(r *placement.Request, f *searchFrame) {
	f.nseg = 0
	if a.c.Depth() == 0 {
		return // one domain: every segment lies in it
	}
	layers := r.Segments
	if r.SegmentSize > 1 {
		layers = [placement.MaxSegmentLayers]placement.Segment{{Size: r.SegmentSize, Level: r.SegmentLevel}}
	}
	for _, sg := range layers {
		if sg.Size <= 1 {
			continue
		}
		l := a.c.Depth() - 1
		if sg.Level != "" {
			l, _ = a.c.Level(sg.Level)
		}
		f.segLvl[f.nseg], f.segSize[f.nseg] = l, int32(sg.Size)
		f.nseg++
	}
}

// setLaterSets lists in pack.sets the members after a.order[pos] that
// have node sets of their own.
func (a *Admitter) setLaterSets(g *Spec, pos int) {
	ps := &a.pack
	ps.nsets = 0
	ps.laterNeed, ps.laterExcl = topology.MaxGPUsPerNode+1, false
	for _, mi := range a.order[pos+1:] {
		r := &g.Members[mi].Request
		if r.Allowed != nil || r.Excluded != nil {
			ps.sets[ps.nsets] = r
			ps.nsets++
		}
		switch {
		case r.Exclusive || r.GPUs == 0 && r.GPUsPerNode == 0:
			ps.laterExcl = true
		default:
			ps.laterNeed = min(ps.laterNeed, max(r.GPUsPerNode, 1))
		}
	}
}

// classify groups the candidates of r in [lo, hi) by lowest-level domain,
// free GPUs (size, for exclusive requests) and idleness, tightest first,
// and by which of the later members with node sets of their own
// (pack.sets) may use them. With twins, it marks the leaves that are
// twins of the leaf before them with classes (f.mirror, f.twinStart).
func (a *Admitter) classify(s *topology.State, r *placement.Request, f *searchFrame, lo, hi int, twins bool) {
	f.bins, f.nodes = f.bins[:0], f.nodes[:0]
	leafLvl := a.c.Depth() - 1
	prev, prevLo := -1, -1 // the first class and node of the last leaf with classes
	for first := lo; first < hi; {
		end := hi
		if leafLvl >= 0 {
			_, e := a.c.DomainRange(leafLvl, a.c.NodeDomain(topology.NodeID(first), leafLvl))
			end = min(int(e), hi)
		}
		b0 := len(f.bins)
		a.classifyLeaf(s, r, f, first, end)
		if b1 := len(f.bins); twins && b1 > b0 {
			twin := prev >= 0 && a.twinLeaves(s, r, f, prev, b0, b1, prevLo, first)
			for b := b0; b < b1; b++ {
				f.mirror[b], f.twinStart[b] = -1, false
				if twin {
					f.mirror[b] = int32(b - (b0 - prev))
				}
			}
			f.twinStart[b0] = twin
			prev, prevLo = b0, first
		}
		first = end
	}
	a.pack.steps += (hi - lo + 63) / 64
}

// twinLeaves reports whether the leaf of node lo2, whose classes are
// f.bins[b0:b1], is a twin of the leaf of node lo1, whose classes are
// f.bins[prev:b0]: the two are siblings (the same domain at every level
// above), have classes of the same keys and sizes in the same order, and
// the same nodes that only later members may use (keyed by free GPUs,
// idleness and which later members with node sets may use them, counting
// those some later member may use at all). Swapping the two leaves then
// maps the state, the member and every later member onto themselves, so
// a choice and its mirror image have the same packings.
func (a *Admitter) twinLeaves(s *topology.State, r *placement.Request, f *searchFrame, prev, b0, b1, lo1, lo2 int) bool {
	if b1-b0 != b0-prev {
		return false
	}
	leafLvl := a.c.Depth() - 1
	if leafLvl < 0 {
		return false
	}
	if leafLvl > 0 && a.c.NodeDomain(topology.NodeID(lo1), leafLvl-1) != a.c.NodeDomain(topology.NodeID(lo2), leafLvl-1) {
		return false
	}
	for k := range b1 - b0 {
		x, y := f.bins[prev+k], f.bins[b0+k]
		if x.key != y.key || x.hi-x.lo != y.hi-y.lo {
			return false
		}
	}
	ps := &a.pack
	for side, first := range [2]int{lo1, lo2} {
		_, e := a.c.DomainRange(leafLvl, a.c.NodeDomain(topology.NodeID(first), leafLvl))
		keys := ps.twinKeys[side][:0]
		for i := first; i < int(e); i++ {
			n := topology.NodeID(i)
			if s.Status(n) != topology.Up || a.classKey(s, r, i) >= 0 {
				continue // no one's, or a candidate (in the classes)
			}
			free := s.FreeCount(n)
			idle := free == a.c.NodeGPUs(n)
			if free == 0 || free < ps.laterNeed && !(idle && ps.laterExcl) {
				continue // no later member's either
			}
			k := int32(2*free + boolInt(idle))
			for _, o := range ps.sets[:ps.nsets] {
				k <<= 1
				if mayUse(o, i) {
					k++
				}
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		ps.twinKeys[side] = keys
	}
	return slices.Equal(ps.twinKeys[0], ps.twinKeys[1])
}

// classifyLeaf appends the classes of nodes [lo, hi), all in one
// lowest-level domain: a counting sort on the class key (free GPUs, then
// busy before idle), or, when later members have node sets of their own,
// a sort on the key and the later members that may use the node.
func (a *Admitter) classifyLeaf(s *topology.State, r *placement.Request, f *searchFrame, lo, hi int) {
	if a.pack.nsets > 0 {
		a.classifyLeafBySets(s, r, f, lo, hi)
		return
	}
	var count [2 * (topology.MaxGPUsPerNode + 1)]int32
	keys := a.pack.keys[:hi-lo]
	for i := lo; i < hi; i++ {
		keys[i-lo] = a.classKey(s, r, i)
		if keys[i-lo] >= 0 {
			count[keys[i-lo]]++
		}
	}
	base := int32(len(f.nodes))
	var start [2 * (topology.MaxGPUsPerNode + 1)]int32
	next := base
	for k, n := range count {
		start[k] = next
		if n > 0 {
			f.bins = append(f.bins, nodeClass{lo: next, hi: next + n, key: int32(k)})
		}
		next += n
	}
	f.nodes = f.nodes[:next]
	for i := lo; i < hi; i++ {
		if k := keys[i-lo]; k >= 0 {
			f.nodes[start[k]] = int32(i)
			start[k]++
		}
	}
}

// classifyLeafBySets is classifyLeaf when later members have node sets
// of their own: a node's key is its class key shifted by the number of
// such members, plus one bit per member that may use it; the candidates
// are sorted by key (then index) and each run of one key is a class.
func (a *Admitter) classifyLeafBySets(s *topology.State, r *placement.Request, f *searchFrame, lo, hi int) {
	ps := &a.pack
	keys := ps.keys[:hi-lo]
	first := len(f.nodes)
	for i := lo; i < hi; i++ {
		k := a.classKey(s, r, i)
		if k < 0 {
			continue
		}
		// At most 2*65 classes, shifted by at most 7 later members: below
		// 1<<15.
		k <<= ps.nsets
		for b, o := range ps.sets[:ps.nsets] {
			if mayUse(o, i) {
				k += 1 << b
			}
		}
		keys[i-lo] = k
		f.nodes = append(f.nodes, int32(i))
	}
	nodes := f.nodes[first:]
	slices.SortFunc(nodes, func(x, y int32) int {
		return cmp.Or(cmp.Compare(keys[int(x)-lo], keys[int(y)-lo]), cmp.Compare(x, y))
	})
	for i := 0; i < len(nodes); {
		j := i + 1
		for j < len(nodes) && keys[int(nodes[j])-lo] == keys[int(nodes[i])-lo] {
			j++
		}
		f.bins = append(f.bins, nodeClass{lo: int32(first + i), hi: int32(first + j), key: int32(keys[int(nodes[i])-lo])})
		i = j
	}
}

// classKey returns node i's class for request r (2 x free GPUs, plus one
// when idle), or -1 when it is not a candidate.
func (a *Admitter) classKey(s *topology.State, r *placement.Request, i int) int16 {
	if s.Status(topology.NodeID(i)) != topology.Up {
		return -1
	}
	if !mayUse(r, i) {
		return -1
	}
	free := s.FreeCount(topology.NodeID(i))
	idle := free == a.c.NodeGPUs(topology.NodeID(i))
	switch {
	case free < max(r.GPUsPerNode, 1):
		return -1
	case (r.Exclusive || r.GPUsPerNode == 0) && !idle:
		return -1
	}
	return int16(2*free + boolInt(idle))
}

// mayUse reports whether request r may use node i: in its Allowed set
// (when it has one) and not in its Excluded set.
func mayUse(r *placement.Request, i int) bool {
	return (r.Allowed == nil || r.Allowed.Test(uint(i))) && (r.Excluded == nil || !r.Excluded.Test(uint(i)))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compose chooses how many nodes classes b.. of frame pos give, rest
// nodes in all, most from the first classes first; the classes before b
// that give nodes span spans domains of the member's limit level (the
// last one dom), when it has a domain limit. For a member with segments,
// cnt counts, per layer, the nodes taken in the domain of the layer's
// level that class b-1 lies in; every such domain must end with a
// multiple of the layer's size. The classes of a leaf that is a twin of
// the leaf before it (f.mirror) take no more, in the order of the
// classes, than those of that leaf: a choice that takes more is the
// mirror image of one tried before, which had no packing. tight reports
// that the classes of b's leaf before b took as many as their mirrors.
func (a *Admitter) compose(s *topology.State, g *Spec, out *Allocation, pos, b, rest, dom, spans int, cnt segCounts, tight bool) bool {
	f := &a.pack.frames[pos]
	if rest == 0 {
		for i := range f.nseg {
			if cnt[i]%f.segSize[i] != 0 {
				return false
			}
		}
		a.materialize(s, g, out, pos, b)
		a.pack.steps++
		return a.allocateAndGo(s, g, out, pos)
	}
	if b == len(f.bins) {
		return false
	}
	if int(f.suffix[b]) < rest {
		return false
	}
	n := int(f.bins[b].hi - f.bins[b].lo)
	// Classes lie in one lowest-level domain each, in node order, so the
	// classes of one domain of any level come one after another.
	r := &g.Members[a.order[pos]].Request
	nd, ns := dom, spans
	if lim := a.limitLevel(r); lim >= 0 {
		if d := a.c.NodeDomain(topology.NodeID(f.nodes[f.bins[b].lo]), lim); d != dom {
			nd, ns = d, spans+1
		}
		if ns > r.MaxDomains {
			if !a.pack.plain {
				// Class b opens a domain past the limit, and so does
				// every class after it: none may give a node.
				return false
			}
			n = 0 // taking from this class breaks the limit
		}
	}
	// Segments: class b starts a new domain of a layer's level when
	// class b-1 lies in another (that one ended with a multiple of the
	// size), and ends its domain when class b+1 lies in another.
	var last [placement.MaxSegmentLayers]bool
	if f.nseg > 0 {
		ps := &a.pack
		if ps.steps >= SearchWork {
			ps.cut = true
			return false
		}
		ps.steps++
		node := topology.NodeID(f.nodes[f.bins[b].lo])
		for i := range f.nseg {
			l := f.segLvl[i]
			d := a.c.NodeDomain(node, l)
			if b > 0 && a.c.NodeDomain(topology.NodeID(f.nodes[f.bins[b-1].lo]), l) != d {
				cnt[i] = 0
			}
			last[i] = b+1 == len(f.bins) || a.c.NodeDomain(topology.NodeID(f.nodes[f.bins[b+1].lo]), l) != d
			if ps.plain {
				continue
			}
			// The domain of class b can end with a multiple of the size
			// and the rest come in multiples from the domains after it.
			size := f.segSize[i]
			room := (cnt[i]+f.segAvail[i][b])/size*size - cnt[i]
			if room < 0 || int32(rest) > room+f.segAfter[i][b] {
				return false
			}
		}
	}
	top, mirror := min(n, rest), int32(-1)
	if !a.pack.plain && f.mirror[b] >= 0 {
		tight = tight || f.twinStart[b]
		if tight {
			mirror = f.take[f.mirror[b]]
			top = min(top, int(mirror))
		}
	}
	for x := top; x >= 0; x-- {
		next := cnt
		fits := true
		for i := range f.nseg {
			next[i] += int32(x)
			fits = fits && (!last[i] || next[i]%f.segSize[i] == 0)
		}
		if !fits {
			continue
		}
		f.take[b] = int32(x)
		d, sp := nd, ns
		if x == 0 {
			d, sp = dom, spans
		}
		if a.compose(s, g, out, pos, b+1, rest-x, d, sp, next, mirror >= 0 && int32(x) == mirror) {
			return true
		}
		if a.pack.cut {
			return false
		}
	}
	return false
}

// materialize writes member a.order[pos]'s assignment from the counts
// taken from classes [0, b) of its frame.
func (a *Admitter) materialize(s *topology.State, g *Spec, out *Allocation, pos, b int) {
	mi := a.order[pos]
	r := &g.Members[mi].Request
	ma := &out.Members[mi]
	f := &a.pack.frames[pos]
	exclusive := r.Exclusive || r.GPUsPerNode == 0
	ma.Assignment, ma.Pods = ma.Assignment[:0], 0
	for c := range b {
		for _, n := range f.nodes[f.bins[c].lo : f.bins[c].lo+f.take[c]] {
			m := s.Free(topology.NodeID(n))
			if !exclusive {
				m = bits.LowBits(m, r.GPUsPerNode)
			}
			ma.Assignment = append(ma.Assignment, topology.NodeAlloc{Node: topology.NodeID(n), GPUs: m})
			ma.Pods++
		}
	}
}

// mayFit checks conditions every packing of the members a.order[pos:]
// meets: the GPUs they take fit in the free GPUs of the scope, and each
// node-count member has a domain of its Required level with enough nodes
// with its free GPUs (Allowed aside). The GPUs a member takes are bounded
// below: a GPU total its GPUs, rounded up, when exclusive, to a multiple
// of the GPUs every node size divides (it takes whole nodes); a
// node-count member its pods x GPUsPerNode, and, when it takes whole
// nodes, at least the GPUs of the cluster's smallest nodes, as many.
// Each GPU-total member has a domain with its GPUs (someDomainHoldsGPUs),
// and the pods that need a node of their own have as many nodes
// (ownNodesFit).
func (a *Admitter) mayFit(s *topology.State, g *Spec, pos int) bool {
	ps := &a.pack
	free := s.FreeGPUs()
	if ps.colo >= 0 {
		free = s.DomainFreeGPUs(ps.colo, a.c.NodeDomain(topology.NodeID(ps.lo), ps.colo))
	}
	want := 0
	// Pods that need a node of their own: excl on idle nodes, big (more
	// than half the largest node's GPUs each, at least gmin) on nodes
	// with that many free or idle ones.
	excl, big, gmin, maxG := 0, 0, a.c.MaxNodeGPUs(), a.c.MaxNodeGPUs()
	for _, mi := range a.order[pos:] {
		m := &g.Members[mi]
		r := &m.Request
		if r.GPUs > 0 {
			if r.Exclusive && a.sizeGCD > 1 {
				want += (r.GPUs + a.sizeGCD - 1) / a.sizeGCD * a.sizeGCD
			} else {
				want += r.GPUs
			}
			if r.Exclusive {
				excl += (r.GPUs + maxG - 1) / maxG
			}
			if !ps.plain && !a.someDomainHoldsGPUs(s, m) {
				return false
			}
			continue
		}
		pods := a.searchPods(m)
		if m.Min > 0 && m.Min < pods {
			pods = m.Min
		}
		take := pods * max(r.GPUsPerNode, 1)
		if r.Exclusive || r.GPUsPerNode == 0 {
			if pods >= len(a.leastNodes) {
				return false // more nodes than the cluster has
			}
			take = max(take, a.leastNodes[pods])
		}
		want += take
		switch {
		case r.Exclusive || r.GPUsPerNode == 0:
			excl += pods
		case 2*r.GPUsPerNode > maxG:
			big += pods
			gmin = min(gmin, r.GPUsPerNode)
		}
		if !a.someDomainHolds(s, m, pods) {
			return false
		}
	}
	return want <= free && (ps.plain || a.ownNodesFit(s, excl, big, gmin) && a.fullNodesFit(s, g, pos))
}

// someDomainHoldsGPUs reports whether GPU-total member m has a domain
// of its Required level with its GPUs free (idle, for an exclusive
// member) and, when its domain limit is one domain, a domain of the
// limit's level with them.
func (a *Admitter) someDomainHoldsGPUs(s *topology.State, m *Member) bool {
	r := &m.Request
	first, last, lvl := a.memberDomains(m)
	if lvl >= 0 && !a.holdsGPUs(s, r, lvl, first, last) {
		return false
	}
	if lim := a.limitLevel(r); lim >= 0 && r.MaxDomains == 1 {
		ps := &a.pack
		return a.holdsGPUs(s, r, lim, a.c.NodeDomain(topology.NodeID(ps.lo), lim), a.c.NodeDomain(topology.NodeID(ps.hi-1), lim))
	}
	return true
}

// holdsGPUs reports whether a domain in [first, last] of level lvl has
// r.GPUs free (idle, when r is exclusive).
func (a *Admitter) holdsGPUs(s *topology.State, r *placement.Request, lvl, first, last int) bool {
	for d := first; d <= last; d++ {
		have := s.DomainFreeGPUs(lvl, d)
		if r.Exclusive {
			have = s.DomainIdleGPUs(lvl, d)
		}
		if have >= r.GPUs {
			return true
		}
	}
	return false
}

// ownNodesFit checks the nodes of the search's scope against the pods
// that need a node of their own: no two pods of more than half the
// largest node's GPUs share a node, nor such a pod and an exclusive one
// (which takes an idle node). excl pods need idle nodes; they and big
// more pods of at least gmin GPUs need nodes with gmin free GPUs or idle
// ones (Allowed sets aside: a bound).
func (a *Admitter) ownNodesFit(s *topology.State, excl, big, gmin int) bool {
	ps := &a.pack
	if excl == 0 && big == 0 {
		return true
	}
	idle := s.Idle().Words()
	nIdle := bits.Count(idle, ps.lo, ps.hi)
	if excl > nIdle {
		return false
	}
	if big == 0 {
		return true
	}
	avail := s.Avail(gmin).Words()
	return excl+big <= nIdle+bits.Count(avail, ps.lo, ps.hi)-bits.AndCount(avail, idle, ps.lo, ps.hi)
}

// someDomainHolds reports whether a domain m may use has pods nodes with
// the free GPUs it needs per node (idle ones for exclusive members),
// counting every node of the domain, allowed or not.
func (a *Admitter) someDomainHolds(s *topology.State, m *Member, pods int) bool {
	first, last, lvl := a.memberDomains(m)
	if lvl < 0 && a.pack.colo >= 0 {
		first, last, lvl = a.c.NodeDomain(topology.NodeID(a.pack.lo), a.pack.colo), a.c.NodeDomain(topology.NodeID(a.pack.lo), a.pack.colo), a.pack.colo
	}
	if lvl < 0 {
		return true // the whole cluster: left to the enumeration
	}
	r := &m.Request
	for d := first; d <= last; d++ {
		n := int(s.DomainAvail(lvl, d)[min(max(r.GPUsPerNode, 1), a.c.MaxNodeGPUs())])
		if r.Exclusive || r.GPUsPerNode == 0 {
			n = min(n, s.DomainIdleNodes(lvl, d))
		}
		if n >= pods {
			return true
		}
	}
	return false
}
