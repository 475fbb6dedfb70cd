package gang

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Errors of the pod operations.
var (
	// ErrUnknownPod marks a member name or rank the gang does not have.
	ErrUnknownPod = errors.New("gang: unknown pod")
	// ErrBelowMin marks the release of a pod that the member cannot
	// spare: it would leave it below its minimum (or a GPU total short,
	// or a segment incomplete).
	ErrBelowMin = errors.New("gang: pod cannot be released")
	// ErrAboveMax marks growth a member cannot take: above its
	// Request.Nodes, or a member whose size cannot change pod by pod.
	ErrAboveMax = errors.New("gang: member cannot grow")
)

// Replacement is the outcome of ReplacePod.
type Replacement struct {
	// Replaced reports whether a new node was found. When false, nothing
	// changed and Reason says why.
	Replaced bool
	// Old is the pod as it was; New is the pod on its new node, with the
	// same member and rank (when Replaced).
	Old, New Pod
	// Reason says why no node was found (when not Replaced).
	Reason placement.Reason
	// Scope names the level of the domain the replacement had to stay
	// in ("" when it could go anywhere in the cluster) and ScopeDomain
	// that domain's index at the level.
	Scope       string
	ScopeDomain int
}

// lookupPod returns gang id's entry and member index after checking that
// the member has a pod of that rank.
func (l *Ledger) lookupPod(id, member string, rank int) (*entry, int, error) {
	e, ok := l.byID[id]
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s", ErrUnknownGang, id)
	}
	mi := e.alloc.MemberIndex(member)
	if mi < 0 {
		return nil, 0, fmt.Errorf("%w: gang %s has no member %q", ErrUnknownPod, id, member)
	}
	if n := len(e.alloc.Members[mi].Assignment); rank < 0 || rank >= n {
		return nil, 0, fmt.Errorf("%w: gang %s member %s has no pod of rank %d (it has %d pods)", ErrUnknownPod, id, member, rank, n)
	}
	return e, mi, nil
}

// ReleasePod returns the GPUs of one pod of gang id, member member, rank
// rank, and keeps the rest of the gang: an elastic member above its
// minimum gives up a pod (a node that failed, a bind that failed). The
// member's later pods move down one rank. A member that cannot spare the
// pod (at its minimum, a GPU total, segments or a Step of more than one
// node: see ReleasePods) is ErrBelowMin, an unknown gang ErrUnknownGang,
// an unknown member or rank ErrUnknownPod; on an error nothing changes.
// It allocates nothing.
func (l *Ledger) ReleasePod(id, member string, rank int) error {
	return l.ReleasePods(id, member, rank)
}

// ReleasePods returns the GPUs of the pods of ranks ranks (distinct) of
// member member of gang id at once, and keeps the rest of the gang; the
// remaining pods keep their order and are ranked again from 0. The member
// must stay at or above its minimum and, with a Step, give up a multiple
// of it. It sorts ranks (the caller's slice) in place. The errors are
// those of ReleasePod; on an error nothing changes. It allocates nothing.
func (l *Ledger) ReleasePods(id, member string, ranks ...int) error {
	e, ok := l.byID[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownGang, id)
	}
	if e.alloc.MemberIndex(member) < 0 {
		return fmt.Errorf("%w: gang %s has no member %q", ErrUnknownPod, id, member)
	}
	slices.Sort(ranks)
	for i, r := range ranks {
		if _, _, err := l.lookupPod(id, member, r); err != nil {
			return err
		}
		if i > 0 && ranks[i-1] == r {
			return fmt.Errorf("%w: gang %s member %s: pod %d listed twice", ErrUnknownPod, id, member, r)
		}
	}
	if len(ranks) == 0 {
		return nil
	}
	mi := e.alloc.MemberIndex(member)
	if why := canShrink(&e.spec.Members[mi], &e.alloc.Members[mi], len(ranks)); why != "" {
		return fmt.Errorf("%w: gang %s member %s pod %d: %s", ErrBelowMin, id, member, ranks[0], why)
	}
	ma := &e.alloc.Members[mi]
	for k := len(ranks) - 1; k >= 0; k-- {
		r := ranks[k]
		if err := l.s.Release(ma.Assignment[r : r+1]); err != nil {
			panic(fmt.Sprintf("gang: ledger and state disagree on %s: %v", id, err))
		}
		ma.Assignment = append(ma.Assignment[:r], ma.Assignment[r+1:]...)
		ma.Pods--
	}
	return nil
}

// Spare returns how many pods member mi of gang id can give up and stay
// at or above its minimum (0 for a fixed-size member, a GPU total or
// segments of more than one node; a multiple of its Step), and false for
// an unknown gang or member.
func (l *Ledger) Spare(id string, mi int) (int, bool) {
	e, ok := l.byID[id]
	if !ok || mi < 0 || mi >= len(e.alloc.Members) {
		return 0, false
	}
	m, ma := &e.spec.Members[mi], &e.alloc.Members[mi]
	if canShrink(m, ma, m.step()) != "" {
		return 0, true
	}
	return ma.Pods - m.Min, true
}

// canShrink says why member m, allocated as ma, cannot give up n pods
// ("" when it can).
func canShrink(m *Member, ma *MemberAllocation, n int) string {
	switch {
	case m.Request.GPUs > 0:
		return fmt.Sprintf("the member asks for %d GPUs in total", m.Request.GPUs)
	case m.Request.SegmentStep() > 1:
		return fmt.Sprintf("the member comes in segments of %d nodes", m.Request.SegmentStep())
	case m.Min <= 0 || m.Min >= m.Request.Nodes:
		return fmt.Sprintf("the member has a fixed size of %d pods (re-place the pod, or release the gang)", m.Request.Nodes)
	case n%m.step() != 0:
		return fmt.Sprintf("the member comes in steps of %d pods; %d is not a multiple", m.step(), n)
	case ma.Pods-n < m.Min:
		return fmt.Sprintf("%d pods would be left, below the member's minimum of %d", ma.Pods-n, m.Min)
	}
	return ""
}

// ReplacePod moves one pod of gang id (member member, rank rank) to
// another node: a pod whose bind failed, or on a node that is failing.
// The new pod keeps the member and the rank and has the pod's shape (its
// GPUs per node, whole or exclusive nodes). It keeps off the old node,
// the member's other nodes and the nodes in avoid (nil: none), and stays
// inside every domain the gang requires: the member's Required level, the
// gang's required co-location, the level of its innermost segments, and
// the domains of its MaxDomains level it already uses. Inside that scope
// it tries the old node's leaf first, next to its neighbours in rank.
//
// When no node fits, nothing changes and the Replacement says why. The
// errors are ErrUnknownGang, ErrUnknownPod and ErrBadSpec (an avoid set
// of the wrong length). It allocates nothing in the steady state.
func (l *Ledger) ReplacePod(id, member string, rank int, avoid *bitset.BitSet) (Replacement, error) {
	e, mi, err := l.lookupPod(id, member, rank)
	if err != nil {
		return Replacement{}, err
	}
	if avoid != nil && avoid.Len() != uint(l.c.NumNodes()) {
		return Replacement{}, fmt.Errorf("%w: gang %s: avoid set of %d nodes, the cluster has %d", ErrBadSpec, id, avoid.Len(), l.c.NumNodes())
	}
	old, _ := e.alloc.Pod(mi, rank)
	rep := Replacement{Old: old, ScopeDomain: -1}
	m := &e.spec.Members[mi]
	lvl := l.replaceScope(e, mi, old.Node, avoid)
	if lvl >= 0 {
		rep.Scope, rep.ScopeDomain = l.c.LevelName(lvl), l.c.NodeDomain(old.Node, lvl)
	}
	l.req = podRequest(m, old)
	res := l.placeNear(&l.req, old.Node)
	if !res.Placed {
		rep.Reason = res.Reason
		return rep, nil
	}
	x := res.Assignment[0]
	if err := l.s.Allocate(res.Assignment[:1]); err != nil {
		panic(fmt.Sprintf("gang: replacement placed on GPUs the state refuses: %v", err))
	}
	ma := &e.alloc.Members[mi]
	if err := l.s.Release(ma.Assignment[rank : rank+1]); err != nil {
		panic(fmt.Sprintf("gang: ledger and state disagree on %s: %v", id, err))
	}
	ma.Assignment[rank] = x
	rep.Replaced = true
	rep.New, _ = e.alloc.Pod(mi, rank)
	return rep, nil
}

// podRequest returns the request for one pod of member m shaped like pod
// p, limited to the ledger's scope set (filled by replaceScope).
func podRequest(m *Member, p Pod) placement.Request {
	r := &m.Request
	req := placement.Request{Nodes: 1, GPUsPerNode: r.GPUsPerNode, Exclusive: r.Exclusive, Excluded: r.Excluded,
		AllowedLabel: "outside the nodes a replacement may use"}
	if r.GPUs > 0 {
		req.GPUsPerNode = bits.PopCount(p.GPUs)
	}
	return req
}

// placeNear places req inside the ledger's scope set, in the leaf of node
// near first.
func (l *Ledger) placeNear(req *placement.Request, near topology.NodeID) placement.Result {
	if leaf := l.c.Depth() - 1; leaf >= 0 {
		lo, hi := l.c.DomainRange(leaf, l.c.NodeDomain(near, leaf))
		l.near.ClearAll()
		bits.SetRange(l.near.Words(), int(lo), int(hi))
		l.near.InPlaceIntersection(l.scope)
		if l.near.Any() {
			req.Allowed = l.near
			if res, err := l.adm.p.Place(l.s, req, l.adm.buf[:0]); err == nil && res.Placed {
				return res
			}
		}
	}
	req.Allowed = l.scope
	res, err := l.adm.p.Place(l.s, req, l.adm.buf[:0])
	if err != nil {
		panic(fmt.Sprintf("gang: pod request refused: %v", err))
	}
	return res
}

// replaceScope fills l.scope with the nodes a replacement of member mi's
// pod on node old may use, and returns the level of the tightest domain
// it must stay in (-1: none).
func (l *Ledger) replaceScope(e *entry, mi int, old topology.NodeID, avoid *bitset.BitSet) int {
	if l.scope == nil {
		l.scope, l.near = l.c.NewNodeSet(), l.c.NewNodeSet()
	}
	m := &e.spec.Members[mi]
	lvl := -1
	tighten := func(name string, given bool) {
		if !given {
			return
		}
		x := l.c.Depth() - 1 // "" is the lowest level
		if name != "" {
			x, _ = l.c.Level(name)
		}
		lvl = max(lvl, x)
	}
	tighten(m.Request.Required, m.Request.Required != "")
	tighten(e.spec.Colocate.Level, e.spec.Colocate.Required)
	tighten(innermostSegment(&m.Request))
	l.scope.ClearAll()
	lo, hi := 0, l.c.NumNodes()
	if lvl >= 0 {
		f, end := l.c.DomainRange(lvl, l.c.NodeDomain(old, lvl))
		lo, hi = int(f), int(end)
	}
	bits.SetRange(l.scope.Words(), lo, hi)
	if m.Request.Allowed != nil {
		l.scope.InPlaceIntersection(m.Request.Allowed)
	}
	if avoid != nil {
		l.scope.InPlaceDifference(avoid)
	}
	if m.Request.MaxDomains > 0 {
		l.keepDomains(&m.Request, &e.alloc.Members[mi])
	}
	for _, x := range e.alloc.Members[mi].Assignment {
		l.scope.Clear(uint(x.Node)) // one pod per node, the old one included
	}
	return lvl
}

// innermostSegment returns the level name of r's innermost segment layer
// and whether it has segments.
func innermostSegment(r *placement.Request) (string, bool) {
	if r.SegmentSize > 1 {
		return r.SegmentLevel, true
	}
	for k := len(r.Segments) - 1; k >= 0; k-- {
		if r.Segments[k].Size != 0 {
			return r.Segments[k].Level, true
		}
	}
	return "", false
}

// keepDomains limits l.scope to the domains of r's MaxDomains level that
// member allocation ma uses, so that a replacement spans no more.
func (l *Ledger) keepDomains(r *placement.Request, ma *MemberAllocation) {
	lvl := l.c.Depth() - 1
	if r.MaxDomainsLevel != "" {
		lvl, _ = l.c.Level(r.MaxDomainsLevel)
	}
	if lvl < 0 {
		return
	}
	l.near.ClearAll()
	for _, x := range ma.Assignment {
		lo, hi := l.c.DomainRange(lvl, l.c.NodeDomain(x.Node, lvl))
		bits.SetRange(l.near.Words(), int(lo), int(hi))
	}
	l.scope.InPlaceIntersection(l.near)
}

// GrowMember adds up to n pods to elastic member member of running gang
// id, as many as fit (a multiple of its Step), without going above the
// member's Request.Nodes, and returns how many it added. The new pods take the next ranks and have
// the member's shape; they keep off the member's nodes and the nodes in
// avoid (nil: none), and stay inside every domain the gang requires (as
// for ReplacePod). They go next to the member's last pod: the nodes of
// its leaf first, then of the domain above, and so on; within each, nodes
// whose free GPUs the pod fills exactly first, then in node order.
//
// A member that cannot grow by n (fixed size, a GPU total, segments of
// more than one node, n not a multiple of its Step, or above
// Request.Nodes) is ErrAboveMax; an unknown
// gang ErrUnknownGang, an unknown member ErrUnknownPod. It allocates
// nothing in the steady state.
func (l *Ledger) GrowMember(id, member string, n int, avoid *bitset.BitSet) (int, error) {
	e, mi, err := l.lookupPod(id, member, 0)
	if err != nil {
		return 0, err
	}
	m, ma := &e.spec.Members[mi], &e.alloc.Members[mi]
	if why := canGrow(m, ma, n); why != "" {
		return 0, fmt.Errorf("%w: gang %s member %s: %s", ErrAboveMax, id, member, why)
	}
	if avoid != nil && avoid.Len() != uint(l.c.NumNodes()) {
		return 0, fmt.Errorf("%w: gang %s: avoid set of %d nodes, the cluster has %d", ErrBadSpec, id, avoid.Len(), l.c.NumNodes())
	}
	anchor := ma.Assignment[len(ma.Assignment)-1].Node
	l.replaceScope(e, mi, anchor, avoid)
	first := len(ma.Assignment)
	for lvl := l.c.Depth() - 1; lvl >= -1 && len(ma.Assignment)-first < n; lvl-- {
		lo, hi := 0, l.c.NumNodes()
		if lvl >= 0 {
			f, end := l.c.DomainRange(lvl, l.c.NodeDomain(anchor, lvl))
			lo, hi = int(f), int(end)
		}
		start := len(ma.Assignment)
		for _, exact := range [2]bool{true, false} {
			ma.Assignment = l.takeNodes(&m.Request, ma.Assignment, lo, hi, first+n, exact)
		}
		slices.SortFunc(ma.Assignment[start:], byNode)
	}
	step := m.step()
	ma.Assignment = ma.Assignment[:first+(len(ma.Assignment)-first)/step*step]
	added := ma.Assignment[first:]
	if err := l.s.Allocate(added); err != nil {
		panic(fmt.Sprintf("gang: growth chose GPUs the state refuses: %v", err))
	}
	ma.Pods += len(added)
	return len(added), nil
}

// takeNodes appends to pods a pod of request r on each node of l.scope in
// [lo, hi) that fits it (exactly, when exact: no GPU left free on the
// node) until pods has want entries, and takes every node it uses out of
// l.scope.
func (l *Ledger) takeNodes(r *placement.Request, pods []topology.NodeAlloc, lo, hi, want int, exact bool) []topology.NodeAlloc {
	whole := r.Exclusive || r.GPUsPerNode == 0
	for i := lo; i < hi && len(pods) < want; i++ {
		node := topology.NodeID(i)
		if !l.scope.Test(uint(i)) || l.s.Status(node) != topology.Up || r.Excluded != nil && r.Excluded.Test(uint(i)) {
			continue
		}
		free, have := l.s.Free(node), l.s.FreeCount(node)
		idle := have == l.c.NodeGPUs(node)
		switch {
		case whole && !idle, !whole && have < r.GPUsPerNode, exact && !whole && have != r.GPUsPerNode:
			continue
		}
		if !whole {
			free = bits.LowBits(free, r.GPUsPerNode)
		}
		pods = append(pods, topology.NodeAlloc{Node: node, GPUs: free})
		l.scope.Clear(uint(i))
	}
	return pods
}

// canGrow says why member m, allocated as ma, cannot take n more pods
// ("" when it can).
func canGrow(m *Member, ma *MemberAllocation, n int) string {
	switch {
	case n < 0:
		return fmt.Sprintf("cannot grow by %d pods", n)
	case m.Request.GPUs > 0:
		return fmt.Sprintf("the member asks for %d GPUs in total", m.Request.GPUs)
	case m.Request.SegmentStep() > 1:
		return fmt.Sprintf("the member comes in segments of %d nodes", m.Request.SegmentStep())
	case n%m.step() != 0:
		return fmt.Sprintf("the member comes in steps of %d pods; %d is not a multiple", m.step(), n)
	case n > m.Request.Nodes-ma.Pods:
		return fmt.Sprintf("growing by %d would take it above its maximum of %d pods (it has %d)", n, m.Request.Nodes, ma.Pods)
	}
	return ""
}
