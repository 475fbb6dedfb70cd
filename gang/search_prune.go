package gang

import (
	"github.com/phalanx-sched/phalanx/topology"
)

// region holds the counters of a set of nodes the search bounds look at:
// a domain, or the search's scope. full counts the nodes with the
// cluster's largest GPU count free (idle nodes of the largest size).
type region struct {
	free, idleNodes, idleGPUs, avail, full int
}

// regionOf returns the counters of domain d of level lvl, or, when lvl
// is -1, of the search's scope, with avail the nodes with at least k
// free GPUs. The counters cover schedulable nodes only, as placements do.
func (a *Admitter) regionOf(s *topology.State, lvl, d, k int) region {
	if lvl < 0 && a.pack.colo >= 0 {
		lvl, d = a.pack.colo, a.c.NodeDomain(topology.NodeID(a.pack.lo), a.pack.colo)
	}
	maxG := a.c.MaxNodeGPUs()
	k = min(max(k, 1), maxG)
	if lvl >= 0 {
		av := s.DomainAvail(lvl, d)
		return region{
			free: s.DomainFreeGPUs(lvl, d), idleNodes: s.DomainIdleNodes(lvl, d), idleGPUs: s.DomainIdleGPUs(lvl, d),
			avail: int(av[k]), full: int(av[maxG]),
		}
	}
	// The whole cluster: the sum of the top level's domains.
	var r region
	for d := range a.c.NumDomains(0) {
		av := s.DomainAvail(0, d)
		r.free += s.DomainFreeGPUs(0, d)
		r.idleNodes += s.DomainIdleNodes(0, d)
		r.idleGPUs += s.DomainIdleGPUs(0, d)
		r.avail += int(av[k])
		r.full += int(av[maxG])
	}
	return r
}

// searchDomains returns the domains [first, last] of level lvl member m
// may be placed in, as memberDomains, but with lvl -1 (the scope) as a
// single domain.
func (a *Admitter) searchDomains(m *Member) (first, last, lvl int) {
	first, last, lvl = a.memberDomains(m)
	if lvl < 0 {
		return 0, 0, -1
	}
	return first, last, lvl
}

// memberNeed describes what member m asks for in the search: a GPU total
// (gpus > 0), or pods nodes with k free GPUs each (idle ones when whole):
// the size the search enumerates (searchPods), or, for a member with
// segments, the least the placer may give it.
func (a *Admitter) memberNeed(m *Member) (gpus, pods, k int, whole bool) {
	r := &m.Request
	if r.GPUs > 0 {
		return r.GPUs, 0, 0, r.Exclusive
	}
	pods = a.searchPods(m)
	if r.SegmentStep() > 1 && m.Min > 0 && m.Min < pods {
		// The placer's answer, tried first, may shrink an elastic
		// member with segments down to its minimum (placeMemberIn).
		pods = m.Min
	}
	return 0, pods, max(r.GPUsPerNode, 1), r.Exclusive || r.GPUsPerNode == 0
}

// fullNodesFit checks the members a.order[pos:] against the nodes with
// all of the largest node size's GPUs free ("full" nodes) in the scope.
// A member that cannot find its pods (or its GPUs) on the other nodes of
// any domain it may use takes full nodes, at least as many as its best
// domain lacks: a pod on a full node leaves it no longer full. Members
// taking whole nodes (exclusive ones, whole-node pods, pods of the
// largest size) share their full nodes with no one; the pods of another
// member lie on distinct nodes; and the GPUs taken from full nodes fit
// in theirs. Node sets (Allowed, Excluded) are left out: a bound.
func (a *Admitter) fullNodesFit(s *topology.State, g *Spec, pos int) bool {
	if a.c.Depth() == 0 {
		return true
	}
	maxG := a.c.MaxNodeGPUs()
	scope := a.regionOf(s, -1, 0, 1)
	whole, partGPUs, maxPart := 0, 0, 0
	for _, mi := range a.order[pos:] {
		m := &g.Members[mi]
		gpus, pods, k, wholeNodes := a.memberNeed(m)
		segs := m.Request.SegmentStep() > 1
		first, last, lvl := a.searchDomains(m)
		best := -1 // what the member's best domain has outside full nodes
		for d := first; d <= last; d++ {
			reg := a.regionOf(s, lvl, d, k)
			switch {
			case gpus > 0 && wholeNodes:
				if reg.idleGPUs >= gpus {
					best = max(best, reg.idleGPUs-maxG*reg.full)
				}
			case gpus > 0:
				if reg.free >= gpus {
					best = max(best, reg.free-maxG*reg.full)
				}
			default:
				u := reg.avail
				if wholeNodes {
					u = reg.idleNodes
				}
				if u >= pods && (!segs || a.segRoomIn(s, m, k, wholeNodes, lvl, d, -1, 0, 0) >= pods) {
					best = max(best, u-reg.full)
				}
			}
		}
		if best < 0 {
			return false // no domain holds the member
		}
		switch {
		case gpus > 0 && wholeNodes:
			whole += (max(gpus-best, 0) + maxG - 1) / maxG
		case gpus > 0:
			partGPUs += max(gpus-best, 0)
		case wholeNodes || k >= maxG:
			whole += max(pods-best, 0)
		default:
			c := max(pods-best, 0)
			partGPUs += c * k
			maxPart = max(maxPart, c)
		}
	}
	return whole+maxPart <= scope.full && whole*maxG+partGPUs <= scope.full*maxG
}

// laterFitAfter reports whether each member after a.order[pos] may still
// fit when member a.order[pos] is placed inside domain d of level lvl (-1:
// the scope): it takes its GPUs there (at least its pods x GPUs per node,
// or the GPUs of as many of the smallest nodes, for a node-count member),
// inside one domain of its limit's level when it has a limit of one
// domain and a single such domain holds them. The GPUs taken from a
// region X leave the nodes with k free GPUs there fewer: after the free
// GPUs beyond k on such nodes and those on the others (X's slack), each
// k more GPUs taken leave at least one node fewer; idle nodes are lost
// after X's busy free GPUs, at least one per node size taken. A later
// member then needs a domain of its Required level with its pods' nodes
// or its GPUs left. Each later member is checked alone, node sets left
// out: a bound.
func (a *Admitter) laterFitAfter(s *topology.State, g *Spec, pos, lvl, d int) bool {
	if a.c.Depth() == 0 || pos+1 == len(a.order) {
		return true
	}
	m := &g.Members[a.order[pos]]
	gpus, pods, k, wholeNodes := a.memberNeed(m)
	if gpus == 0 {
		gpus = pods * k
		if wholeNodes && pods < len(a.leastNodes) {
			gpus = max(gpus, a.leastNodes[pods])
		}
	}
	dl, dd := lvl, d
	if lim := a.limitLevel(&m.Request); m.Request.GPUs > 0 && m.Request.MaxDomains == 1 && lim > lvl {
		lo, hi := a.pack.lo, a.pack.hi
		if lvl >= 0 {
			f, e := a.c.DomainRange(lvl, d)
			lo, hi = int(f), int(e)
		}
		n := 0
		for x := a.c.NodeDomain(topology.NodeID(lo), lim); x <= a.c.NodeDomain(topology.NodeID(hi-1), lim); x++ {
			reg := a.regionOf(s, lim, x, 1)
			if have := reg.free; !wholeNodes && have >= gpus || wholeNodes && reg.idleGPUs >= gpus {
				dl, dd = lim, x
				n++
			}
		}
		if n == 0 {
			return false // no domain of the limit's level holds it
		}
		if n > 1 {
			dl, dd = lvl, d
		}
	}
	dlo, dhi := a.pack.lo, a.pack.hi
	if dl >= 0 {
		f, e := a.c.DomainRange(dl, dd)
		dlo, dhi = int(f), int(e)
	}
	regD := a.regionOf(s, dl, dd, 1)
	maxG := a.c.MaxNodeGPUs()
	for _, mj := range a.order[pos+1:] {
		o := &g.Members[mj]
		ogpus, opods, ok, owhole := a.memberNeed(o)
		first, last, olvl := a.searchDomains(o)
		fits := false
		for x := first; x <= last && !fits; x++ {
			lo, hi := a.pack.lo, a.pack.hi
			if olvl >= 0 {
				f, e := a.c.DomainRange(olvl, x)
				lo, hi = int(f), int(e)
			}
			reg := a.regionOf(s, olvl, x, ok)
			// X: the nodes of both (the domains nest or are disjoint);
			// t: the GPUs the member takes there at least.
			t, xl, xd := 0, -1, 0
			var regX region
			switch {
			case lo >= dlo && hi <= dhi:
				regX = a.regionOf(s, olvl, x, ok)
				t, xl, xd = gpus-(regD.free-regX.free), olvl, x
			case dlo >= lo && dhi <= hi:
				regX = a.regionOf(s, dl, dd, ok)
				t, xl, xd = gpus, dl, dd
			}
			if ogpus > 0 {
				have := reg.free
				if owhole {
					have = reg.idleGPUs
					t -= regX.free - regX.idleGPUs
				}
				fits = have-max(t, 0) >= ogpus && a.limitRoom(s, o, 1, owhole, true, lo, hi, xl, xd, max(t, 0)) >= ogpus
				continue
			}
			u := reg.avail
			per := ok
			if owhole {
				u, per = reg.idleNodes, maxG
				t -= regX.free - regX.idleGPUs
			} else {
				t -= regX.free - ok*regX.avail
			}
			kill := (max(t, 0) + per - 1) / per
			fits = u-kill >= opods && a.limitRoom(s, o, ok, owhole, false, lo, hi, xl, xd, kill) >= opods
			if fits && o.Request.SegmentStep() > 1 {
				if xl < 0 {
					kill = 0
				}
				fits = a.segRoomIn(s, o, ok, owhole, olvl, x, xl, xd, kill) >= opods
			}
		}
		if !fits {
			return false
		}
	}
	return true
}

// limitRoom returns, for a later member o with a domain limit of a level
// below that of nodes [lo, hi) (a domain of its Required level or the
// scope), the most nodes with k free GPUs (idle ones when whole), or with
// gpus, the most free GPUs (idle ones' when whole), that its allowed
// number of domains of the limit's level there have, less loss in the
// domain holding domain xd of level xl (xl >= 0). Without such a limit
// (or with one of more than maxLimitDomains domains) it returns a count
// above any need.
func (a *Admitter) limitRoom(s *topology.State, o *Member, k int, whole, gpus bool, lo, hi, xl, xd, loss int) int {
	r := &o.Request
	lim := a.limitLevel(r)
	if lim < 0 || r.MaxDomains > maxLimitDomains || a.c.NodeDomain(topology.NodeID(lo), lim) == a.c.NodeDomain(topology.NodeID(hi-1), lim) {
		return 1 << 30
	}
	var top [maxLimitDomains]int // the largest, in decreasing order
	for y := a.c.NodeDomain(topology.NodeID(lo), lim); y <= a.c.NodeDomain(topology.NodeID(hi-1), lim); y++ {
		reg := a.regionOf(s, lim, y, k)
		n := reg.avail
		switch {
		case gpus && whole:
			n = reg.idleGPUs
		case gpus:
			n = reg.free
		case whole:
			n = reg.idleNodes
		}
		if loss > 0 && xl >= lim && a.c.NodeDomain(a.firstNode(xl, xd), lim) == y {
			n -= loss
		}
		for i := range r.MaxDomains {
			if n > top[i] {
				top[i], n = n, top[i]
			}
		}
	}
	sum := 0
	for _, n := range top[:r.MaxDomains] {
		sum += n
	}
	return sum
}

// maxLimitDomains is the largest domain limit limitRoom sums over.
const maxLimitDomains = 8

// segRoom returns the most nodes member m, which has segments, may take
// inside nodes [lo, hi), domain d of level lvl (-1: the scope), when its
// nodes (k free GPUs each, idle ones when whole) are counted in every
// domain of each layer's level and rounded down to multiples of the
// layer's size, the inner layers' multiples summed in the outer layer's
// domains. kill nodes are taken out of domain xd of level xl (when kill
// > 0) in every domain holding it: a domain holds no more than its nodes
// minus those, nor than its inner domains' multiples.
func (a *Admitter) segRoom(s *topology.State, m *Member, k int, whole bool, lvl, d, lo, hi, xl, xd, kill int) int {
	sr := &a.pack.seg
	sr.s, sr.k, sr.whole, sr.xl, sr.xd, sr.kill = s, k, whole, xl, xd, kill
	f := &sr.layers
	a.segmentLayers(&m.Request, f)
	if lvl < 0 && a.pack.colo >= 0 {
		lvl, d = a.pack.colo, a.c.NodeDomain(topology.NodeID(a.pack.lo), a.pack.colo)
	}
	// The layers inside the range's domain, outermost first, from i0.
	i0 := 0
	for i0 < f.nseg && f.segLvl[i0] <= lvl {
		i0++
	}
	total := a.segCount(lvl, d)
	if i0 < f.nseg {
		inner := 0
		for y := a.c.NodeDomain(topology.NodeID(lo), f.segLvl[i0]); y <= a.c.NodeDomain(topology.NodeID(hi-1), f.segLvl[i0]); y++ {
			inner += a.segVal(i0, y)
		}
		total = min(total, inner)
	}
	for i := range i0 {
		total = total / int(f.segSize[i]) * int(f.segSize[i])
	}
	sr.s = nil
	return total
}

// segProbe is segRoom's scratch space.
type segProbe struct {
	s            *topology.State
	k            int
	whole        bool
	xl, xd, kill int
	layers       searchFrame // only the segment layers
}

// segCount returns the nodes segRoom counts in domain x of level l (-1:
// the whole cluster), less the killed ones when the domain holds them.
func (a *Admitter) segCount(l, x int) int {
	sr := &a.pack.seg
	reg := a.regionOf(sr.s, l, x, sr.k)
	n := reg.avail
	if sr.whole {
		n = reg.idleNodes
	}
	if sr.kill > 0 && (l < 0 || sr.xl >= l && a.c.NodeDomain(a.firstNode(sr.xl, sr.xd), l) == x) {
		n -= sr.kill
	}
	return max(n, 0)
}

// segVal returns the most nodes segRoom's member may take in domain x
// of layer i's level: a multiple of the layer's size.
func (a *Admitter) segVal(i, x int) int {
	f := &a.pack.seg.layers
	n := a.segCount(f.segLvl[i], x)
	if i+1 < f.nseg {
		fl, el := a.c.DomainRange(f.segLvl[i], x)
		inner := 0
		for y := a.c.NodeDomain(fl, f.segLvl[i+1]); y <= a.c.NodeDomain(el-1, f.segLvl[i+1]); y++ {
			inner += a.segVal(i+1, y)
		}
		n = min(n, inner)
	}
	return n / int(f.segSize[i]) * int(f.segSize[i])
}

// segRoomIn is segRoom inside domain d of level lvl (-1: the scope).
func (a *Admitter) segRoomIn(s *topology.State, m *Member, k int, whole bool, lvl, d, xl, xd, kill int) int {
	lo, hi := a.pack.lo, a.pack.hi
	if lvl >= 0 {
		f, e := a.c.DomainRange(lvl, d)
		lo, hi = int(f), int(e)
	}
	return a.segRoom(s, m, k, whole, lvl, d, lo, hi, xl, xd, kill)
}

// firstNode returns the first node of domain d of level l.
func (a *Admitter) firstNode(l, d int) topology.NodeID {
	f, _ := a.c.DomainRange(l, d)
	return f
}
