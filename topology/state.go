package topology

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/internal/bits"
)

// Errors of the free state.
var (
	// ErrConflict marks an allocation of GPUs that are not free, or a
	// release of GPUs that are not allocated.
	ErrConflict = errors.New("topology: GPU conflict")
	// ErrNodeDown marks an allocation on a node that is down.
	ErrNodeDown = errors.New("topology: node down")
	// ErrBadMask marks a GPU mask naming GPUs the node does not have, or an
	// empty mask.
	ErrBadMask = errors.New("topology: bad GPU mask")
	// ErrOtherCluster marks two states of different clusters.
	ErrOtherCluster = errors.New("topology: states of different clusters")
)

// NodeStatus is a node's schedulability.
type NodeStatus uint8

const (
	// Up nodes are offered to placement.
	Up NodeStatus = iota
	// Down nodes have failed: never offered, and nothing may be
	// allocated on them.
	Down
	// Drained nodes take no new work; what runs on them stays.
	Drained
)

// String returns "up", "down" or "drained".
func (s NodeStatus) String() string {
	switch s {
	case Up:
		return "up"
	case Down:
		return "down"
	case Drained:
		return "drained"
	}
	return fmt.Sprintf("NodeStatus(%d)", uint8(s))
}

// NodeAlloc is part of an assignment: the GPUs given on one node (bit i of
// GPUs is GPU i of the node).
type NodeAlloc struct {
	Node NodeID
	GPUs uint64
}

// State is the mutable free state of a Cluster: each node's free-GPU mask
// and status, plus indexes kept up to date on every change so that
// placement answers "which nodes under domain D have at least g free GPUs"
// with word operations:
//
//   - Avail(g), for g >= 1: the schedulable (up, not drained) nodes with at
//     least g free GPUs; Avail(0) is every schedulable node.
//   - Idle(): the schedulable nodes with every GPU free.
//   - Per-domain counters, so that placement reads a domain's capacity
//     instead of recounting its nodes: free GPUs (DomainFreeGPUs), nodes
//     with at least k free GPUs for every k (DomainAvail), idle nodes and
//     their GPUs (DomainIdleNodes, DomainIdleGPUs).
//   - Cluster-wide counts of down and drained nodes.
//
// Allocate and Release are atomic: everything is checked, then applied.
// Allocate, Release, status changes and CopyInto allocate nothing; an
// allocation or release updates each counter along the node's path to the
// top, so its cost grows with the levels and the change in free GPUs, not
// with the cluster.
//
// A State is not safe for concurrent use; Clone it for concurrent readers.
type State struct {
	c      *Cluster
	words  int
	free   []uint64
	status []NodeStatus
	// avail holds (maxGPUs+1) bitsets of words each: avail[k] = schedulable
	// nodes with >= k free GPUs.
	avail []uint64
	idle  []uint64
	// domFree[levelOff[l]+d] is the free GPUs on schedulable nodes of
	// domain d at level l.
	domFree  []int32
	levelOff []int
	// domAvail[(levelOff[l]+d)*(maxGPUs+1)+k] is the number of schedulable
	// nodes of domain d at level l with at least k free GPUs (k = 0 counts
	// every schedulable node).
	domAvail []int32
	// domIdle and domIdleGPUs count, per domain, the schedulable nodes
	// with every GPU free and their GPUs.
	domIdle     []int32
	domIdleGPUs []int32
	// down and drained count the nodes of each status.
	down, drained int
	// pending is per-node scratch for duplicate detection in Allocate and
	// Release; all zero between calls.
	pending  []uint64
	freeGPUs int // free GPUs on schedulable nodes
	usedGPUs int // allocated GPUs on every node
	// changes grows with every change of the free masks or statuses
	// (Allocate, Release, SetStatus, a copy into the state): two equal
	// values read from one state mean it did not change in between
	// (access.StateChanges).
	changes uint64

	availViews []*bitset.BitSet
	idleView   *bitset.BitSet
}

// NewState returns the state of cluster c with every node up and every GPU
// free.
func NewState(c *Cluster) *State {
	s := newEmptyState(c)
	for i := range c.nodes {
		s.free[i] = onesMask(c.nodes[i].gpus)
	}
	s.rebuild()
	return s
}

func newEmptyState(c *Cluster) *State {
	n := len(c.nodes)
	w := c.words
	s := &State{
		c:        c,
		words:    w,
		free:     make([]uint64, n),
		status:   make([]NodeStatus, n),
		avail:    make([]uint64, (c.maxGPUs+1)*w),
		idle:     make([]uint64, w),
		levelOff: make([]int, len(c.levels)+1),
		pending:  make([]uint64, n),
	}
	for l := range c.levels {
		s.levelOff[l+1] = s.levelOff[l] + len(c.levels[l])
	}
	nd := s.levelOff[len(c.levels)]
	s.domFree = make([]int32, nd)
	s.domAvail = make([]int32, nd*(c.maxGPUs+1))
	s.domIdle = make([]int32, nd)
	s.domIdleGPUs = make([]int32, nd)
	s.availViews = make([]*bitset.BitSet, c.maxGPUs+1)
	for k := range s.availViews {
		s.availViews[k] = bitset.FromWithLength(uint(n), s.avail[k*w:(k+1)*w:(k+1)*w])
	}
	s.idleView = bitset.FromWithLength(uint(n), s.idle)
	return s
}

// rebuild recomputes every index from free and status.
func (s *State) rebuild() {
	bits.Zero(s.avail)
	bits.Zero(s.idle)
	clear(s.domFree)
	clear(s.domAvail)
	clear(s.domIdle)
	clear(s.domIdleGPUs)
	s.freeGPUs, s.usedGPUs, s.down, s.drained = 0, 0, 0, 0
	for i := range s.c.nodes {
		f := bits.PopCount(s.free[i])
		s.usedGPUs += s.c.nodes[i].gpus - f
		switch s.status[i] {
		case Up:
			s.addNode(i, f)
		case Down:
			s.down++
		case Drained:
			s.drained++
		}
	}
}

// addNode enters schedulable node i with f free GPUs into the indexes.
func (s *State) addNode(i, f int) {
	w := s.words
	for k := 0; k <= f; k++ {
		bits.Set(s.avail[k*w:], i)
	}
	if f == s.c.nodes[i].gpus {
		bits.Set(s.idle, i)
		s.addDomainIdle(i, 1)
	}
	s.addDomainFree(i, f)
	s.addDomainAvail(i, 0, f, 1)
}

// removeNode takes schedulable node i with f free GPUs out of the indexes.
func (s *State) removeNode(i, f int) {
	w := s.words
	for k := 0; k <= f; k++ {
		bits.Clear(s.avail[k*w:], i)
	}
	if f == s.c.nodes[i].gpus {
		bits.Clear(s.idle, i)
		s.addDomainIdle(i, -1)
	}
	s.addDomainFree(i, -f)
	s.addDomainAvail(i, 0, f, -1)
}

// addDomainFree adds delta free GPUs to node i's domains and the total.
func (s *State) addDomainFree(i, delta int) {
	n := len(s.c.nodes)
	for l := range s.c.levels {
		s.domFree[s.levelOff[l]+int(s.c.nodeDom[l*n+i])] += int32(delta)
	}
	s.freeGPUs += delta
}

// addDomainAvail adds delta to the counters k = lo..hi of node i's
// domains (the node entered or left the classes "at least k free").
func (s *State) addDomainAvail(i, lo, hi, delta int) {
	n := len(s.c.nodes)
	stride := s.c.maxGPUs + 1
	for l := range s.c.levels {
		row := s.domAvail[(s.levelOff[l]+int(s.c.nodeDom[l*n+i]))*stride:]
		for k := lo; k <= hi; k++ {
			row[k] += int32(delta)
		}
	}
}

// addDomainIdle adds delta idle nodes (and their GPUs) to node i's domains.
func (s *State) addDomainIdle(i, delta int) {
	n := len(s.c.nodes)
	g := int32(delta * s.c.nodes[i].gpus)
	for l := range s.c.levels {
		x := s.levelOff[l] + int(s.c.nodeDom[l*n+i])
		s.domIdle[x] += int32(delta)
		s.domIdleGPUs[x] += g
	}
}

// setFree changes node i's free mask and updates the indexes.
func (s *State) setFree(i int, mask uint64) {
	old := bits.PopCount(s.free[i])
	nw := bits.PopCount(mask)
	s.free[i] = mask
	s.usedGPUs += old - nw
	if s.status[i] != Up || old == nw {
		return
	}
	w := s.words
	if nw > old {
		for k := old + 1; k <= nw; k++ {
			bits.Set(s.avail[k*w:], i)
		}
		s.addDomainAvail(i, old+1, nw, 1)
	} else {
		for k := nw + 1; k <= old; k++ {
			bits.Clear(s.avail[k*w:], i)
		}
		s.addDomainAvail(i, nw+1, old, -1)
	}
	all := s.c.nodes[i].gpus
	switch {
	case nw == all:
		bits.Set(s.idle, i)
		s.addDomainIdle(i, 1)
	case old == all:
		bits.Clear(s.idle, i)
		s.addDomainIdle(i, -1)
	}
	s.addDomainFree(i, nw-old)
}

// Cluster returns the state's cluster.
func (s *State) Cluster() *Cluster { return s.c }

// Free returns node i's free-GPU mask.
func (s *State) Free(i NodeID) uint64 { return s.free[i] }

// FreeCount returns the number of free GPUs on node i (whatever its status).
func (s *State) FreeCount(i NodeID) int { return bits.PopCount(s.free[i]) }

// Status returns node i's status.
func (s *State) Status(i NodeID) NodeStatus { return s.status[i] }

// Schedulable reports whether node i is up and not drained.
func (s *State) Schedulable(i NodeID) bool { return s.status[i] == Up }

// FreeGPUs returns the free GPUs on schedulable nodes.
func (s *State) FreeGPUs() int { return s.freeGPUs }

// UsedGPUs returns the allocated GPUs on every node, whatever its status.
func (s *State) UsedGPUs() int { return s.usedGPUs }

// DomainFreeGPUs returns the free GPUs on schedulable nodes of domain d of
// level l. It panics if l or d is out of range.
func (s *State) DomainFreeGPUs(l, d int) int { return int(s.domFree[s.domIndex(l, d)]) }

// DomainAvail returns the availability counters of domain d of level l:
// element k (0 to MaxNodeGPUs) is the number of schedulable nodes of the
// domain with at least k free GPUs, so element 0 counts its schedulable
// nodes. The slice is a read-only view that tracks the state. It panics
// if l or d is out of range.
func (s *State) DomainAvail(l, d int) []int32 {
	stride := s.c.maxGPUs + 1
	x := s.domIndex(l, d) * stride
	return s.domAvail[x : x+stride : x+stride]
}

// domIndex returns the position of domain d of level l in the per-domain
// counters. The counters of all levels share one slice, so an index out
// of range could read another domain's: domIndex panics instead.
func (s *State) domIndex(l, d int) int {
	if uint(l) >= uint(len(s.levelOff)-1) || uint(d) >= uint(s.levelOff[l+1]-s.levelOff[l]) {
		panic(indexError{c: s.c, level: l, index: d})
	}
	return s.levelOff[l] + d
}

// LevelFreeGPUs returns the free GPUs on schedulable nodes of every domain
// of level l, indexed by domain: a read-only view that tracks the state,
// for loops over a level.
func (s *State) LevelFreeGPUs(l int) []int32 {
	return s.domFree[s.levelOff[l]:s.levelOff[l+1]:s.levelOff[l+1]]
}

// LevelAvail returns the availability counters of every domain of level
// l: entries [d*(MaxNodeGPUs+1), (d+1)*(MaxNodeGPUs+1)) are
// DomainAvail(l, d). A read-only view that tracks the state.
func (s *State) LevelAvail(l int) []int32 {
	stride := s.c.maxGPUs + 1
	lo, hi := s.levelOff[l]*stride, s.levelOff[l+1]*stride
	return s.domAvail[lo:hi:hi]
}

// LevelIdleNodes returns DomainIdleNodes for every domain of level l, and
// LevelIdleGPUs DomainIdleGPUs (read-only views that track the state).
func (s *State) LevelIdleNodes(l int) []int32 {
	return s.domIdle[s.levelOff[l]:s.levelOff[l+1]:s.levelOff[l+1]]
}

// LevelIdleGPUs: see LevelIdleNodes.
func (s *State) LevelIdleGPUs(l int) []int32 {
	return s.domIdleGPUs[s.levelOff[l]:s.levelOff[l+1]:s.levelOff[l+1]]
}

// DomainIdleNodes returns the number of schedulable nodes of domain d of
// level l with every GPU free. It panics if l or d is out of range.
func (s *State) DomainIdleNodes(l, d int) int { return int(s.domIdle[s.domIndex(l, d)]) }

// DomainIdleGPUs returns the GPUs of the idle schedulable nodes of domain d
// of level l. It panics if l or d is out of range.
func (s *State) DomainIdleGPUs(l, d int) int { return int(s.domIdleGPUs[s.domIndex(l, d)]) }

// DownNodes returns the number of nodes that are down.
func (s *State) DownNodes() int { return s.down }

// DrainedNodes returns the number of drained nodes.
func (s *State) DrainedNodes() int { return s.drained }

// Avail returns a read-only view of the schedulable nodes with at least g
// free GPUs (g in [0, MaxNodeGPUs]); Avail(0) is every schedulable node.
// The view tracks the state: do not modify it.
func (s *State) Avail(g int) *bitset.BitSet { return s.availViews[g] }

// availWords returns Avail(g) as raw words (read-only), for word loops.
func (s *State) availWords(g int) []uint64 {
	return s.avail[g*s.words : (g+1)*s.words : (g+1)*s.words]
}

func init() {
	access.StateWords = func(x any) access.Words {
		s := x.(*State)
		return access.Words{Avail: s.avail, Stride: s.words, Idle: s.idle, Free: s.free, DomFree: s.domFree, DomAvail: s.domAvail}
	}
	access.CheckState = func(x any) error { return x.(*State).checkInvariants() }
	access.StateChanges = func(x any) *uint64 { return &x.(*State).changes }
}

// Idle returns a read-only view of the schedulable nodes with every GPU
// free. The view tracks the state: do not modify it.
func (s *State) Idle() *bitset.BitSet { return s.idleView }

// conflictErr builds the error for one bad entry of an assignment.
func (s *State) checkEntry(a NodeAlloc, alloc bool) error {
	i := int(a.Node)
	if i < 0 || i >= len(s.c.nodes) {
		return fmt.Errorf("%w: node ID %d (the cluster has %d nodes)", ErrUnknownNode, i, len(s.c.nodes))
	}
	name := s.c.nodes[i].name
	all := onesMask(s.c.nodes[i].gpus)
	if a.GPUs == 0 || a.GPUs&^all != 0 {
		return fmt.Errorf("%w: node %s: GPUs %s (node has %d)", ErrBadMask, name, FormatGPUs(a.GPUs), s.c.nodes[i].gpus)
	}
	if overlap := s.pending[i] & a.GPUs; overlap != 0 {
		return fmt.Errorf("%w: node %s: GPUs %s named twice in one assignment", ErrConflict, name, FormatGPUs(overlap))
	}
	if alloc {
		if s.status[i] == Down {
			return fmt.Errorf("%w: node %s is down", ErrNodeDown, name)
		}
		if busy := a.GPUs &^ s.free[i]; busy != 0 {
			return fmt.Errorf("%w: node %s: GPUs %s already allocated", ErrConflict, name, FormatGPUs(busy))
		}
	} else if idle := a.GPUs & s.free[i]; idle != 0 {
		return fmt.Errorf("%w: node %s: GPUs %s are not allocated", ErrConflict, name, FormatGPUs(idle))
	}
	return nil
}

// check verifies every entry of a, restoring the scratch before returning.
func (s *State) check(a []NodeAlloc, alloc bool) error {
	var err error
	k := 0
	for ; k < len(a); k++ {
		if err = s.checkEntry(a[k], alloc); err != nil {
			break
		}
		s.pending[a[k].Node] |= a[k].GPUs
	}
	for _, e := range a[:k] {
		s.pending[e.Node] = 0
	}
	return err
}

// CanAllocate reports, without changing anything, whether Allocate(a)
// would succeed, with the error it would return.
func (s *State) CanAllocate(a []NodeAlloc) error { return s.check(a, true) }

// Allocate marks the GPUs of assignment a as used. Every entry is checked
// first (the node exists and is not down, the GPUs exist on it, are free
// and are not named twice); on any conflict nothing changes and the error
// names the node and GPUs. Drained nodes accept allocations (placement
// never offers them; restoring running work may need them).
func (s *State) Allocate(a []NodeAlloc) error {
	if err := s.check(a, true); err != nil {
		return err
	}
	for _, e := range a {
		s.setFree(int(e.Node), s.free[e.Node]&^e.GPUs)
	}
	s.changes++
	return nil
}

// Release returns the GPUs of assignment a. Every entry is checked first
// (the GPUs exist and are allocated); on any conflict nothing changes. GPUs
// on down nodes may be released; they become free but are offered to
// placement only once the node is up.
func (s *State) Release(a []NodeAlloc) error {
	if err := s.check(a, false); err != nil {
		return err
	}
	for _, e := range a {
		s.setFree(int(e.Node), s.free[e.Node]|e.GPUs)
	}
	s.changes++
	return nil
}

// SetStatus changes node i's status. A node that goes down or is drained
// keeps its allocations; it is no longer offered to placement.
func (s *State) SetStatus(i NodeID, st NodeStatus) error {
	if i < 0 || int(i) >= len(s.c.nodes) {
		return fmt.Errorf("%w: node ID %d", ErrUnknownNode, i)
	}
	if st > Drained {
		return fmt.Errorf("topology: node %s: invalid status %d", s.c.nodes[i].name, st)
	}
	old := s.status[i]
	if old == st {
		return nil
	}
	f := bits.PopCount(s.free[i])
	s.countStatus(old, -1)
	if old == Up {
		s.removeNode(int(i), f)
	}
	s.status[i] = st
	s.changes++
	s.countStatus(st, 1)
	if st == Up {
		s.addNode(int(i), f)
	}
	return nil
}

// countStatus adds delta to the count of nodes with status st (up nodes
// are counted by the indexes).
func (s *State) countStatus(st NodeStatus, delta int) {
	switch st {
	case Down:
		s.down += delta
	case Drained:
		s.drained += delta
	}
}

// Clone returns an independent copy of the state.
func (s *State) Clone() *State {
	d := newEmptyState(s.c)
	s.copyTo(d)
	return d
}

// CopyInto makes dst an exact copy of s without allocating. dst must be a
// state of the same cluster.
func (s *State) CopyInto(dst *State) error {
	if dst.c != s.c {
		return ErrOtherCluster
	}
	s.copyTo(dst)
	return nil
}

func (s *State) copyTo(d *State) {
	copy(d.free, s.free)
	copy(d.status, s.status)
	copy(d.avail, s.avail)
	copy(d.idle, s.idle)
	copy(d.domFree, s.domFree)
	copy(d.domAvail, s.domAvail)
	copy(d.domIdle, s.domIdle)
	copy(d.domIdleGPUs, s.domIdleGPUs)
	d.freeGPUs, d.usedGPUs = s.freeGPUs, s.usedGPUs
	d.down, d.drained = s.down, s.drained
	d.changes++ // d's own count: its contents changed
}

// Equal reports whether two states of the same cluster hold the same free
// masks and statuses.
func (s *State) Equal(o *State) bool {
	if s.c != o.c {
		return false
	}
	for i := range s.free {
		if s.free[i] != o.free[i] || s.status[i] != o.status[i] {
			return false
		}
	}
	return true
}

// checkInvariants recomputes every index from the free masks and statuses
// and compares it with the incrementally kept one; it also checks that no
// free mask names a GPU the node lacks and that free plus used GPUs equal
// the cluster's total. It is for tests and debugging: it allocates and is
// linear in the cluster size.
func (s *State) checkInvariants() error {
	ref := newEmptyState(s.c)
	copy(ref.free, s.free)
	copy(ref.status, s.status)
	var errs []error
	for i := range s.free {
		if s.free[i]&^onesMask(s.c.nodes[i].gpus) != 0 {
			errs = append(errs, fmt.Errorf("node %s: free mask %#x beyond its %d GPUs", s.c.nodes[i].name, s.free[i], s.c.nodes[i].gpus))
		}
		if s.pending[i] != 0 {
			errs = append(errs, fmt.Errorf("node %s: scratch mask not cleared", s.c.nodes[i].name))
		}
	}
	ref.rebuild()
	for k := 0; k <= s.c.maxGPUs; k++ {
		a, b := s.availWords(k), ref.availWords(k)
		for w := range a {
			if a[w] != b[w] {
				errs = append(errs, fmt.Errorf("avail[%d] word %d: have %#x, want %#x", k, w, a[w], b[w]))
			}
		}
	}
	for w := range s.idle {
		if s.idle[w] != ref.idle[w] {
			errs = append(errs, fmt.Errorf("idle word %d: have %#x, want %#x", w, s.idle[w], ref.idle[w]))
		}
	}
	for l := range s.c.levels {
		for d := range s.c.levels[l] {
			errs = append(errs, s.checkDomain(ref, l, d)...)
		}
	}
	if s.freeGPUs != ref.freeGPUs || s.usedGPUs != ref.usedGPUs {
		errs = append(errs, fmt.Errorf("totals: free %d used %d, want free %d used %d", s.freeGPUs, s.usedGPUs, ref.freeGPUs, ref.usedGPUs))
	}
	if s.down != ref.down || s.drained != ref.drained {
		errs = append(errs, fmt.Errorf("status counts: down %d drained %d, want down %d drained %d", s.down, s.drained, ref.down, ref.drained))
	}
	total := 0
	for i := range s.free {
		total += bits.PopCount(s.free[i])
	}
	if total+s.usedGPUs != s.c.totalGPUs {
		errs = append(errs, fmt.Errorf("free %d + used %d != total %d GPUs", total, s.usedGPUs, s.c.totalGPUs))
	}
	return errors.Join(errs...)
}

// checkDomain compares the counters of domain d of level l with ref's.
func (s *State) checkDomain(ref *State, l, d int) []error {
	var errs []error
	name := s.c.levelNames[l] + " " + s.c.levels[l][d].name
	if a, b := s.DomainFreeGPUs(l, d), ref.DomainFreeGPUs(l, d); a != b {
		errs = append(errs, fmt.Errorf("%s: free GPUs %d, want %d", name, a, b))
	}
	if a, b := s.DomainIdleNodes(l, d), ref.DomainIdleNodes(l, d); a != b {
		errs = append(errs, fmt.Errorf("%s: idle nodes %d, want %d", name, a, b))
	}
	if a, b := s.DomainIdleGPUs(l, d), ref.DomainIdleGPUs(l, d); a != b {
		errs = append(errs, fmt.Errorf("%s: idle GPUs %d, want %d", name, a, b))
	}
	a, b := s.DomainAvail(l, d), ref.DomainAvail(l, d)
	for k := range a {
		if a[k] != b[k] {
			errs = append(errs, fmt.Errorf("%s: nodes with at least %d free GPUs %d, want %d", name, k, a[k], b[k]))
		}
	}
	return errs
}

// FormatGPUs renders a GPU mask as a list of GPU indices with ranges, for
// example "0-3,6".
func FormatGPUs(m uint64) string {
	var b strings.Builder
	for i := 0; i < 64; {
		if m&(1<<uint(i)) == 0 {
			i++
			continue
		}
		j := i
		for j+1 < 64 && m&(1<<uint(j+1)) != 0 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", i, j)
		} else {
			fmt.Fprintf(&b, "%d", i)
		}
		i = j + 1
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// Describe draws the free state, one line per lowest-level domain (or one
// line for a flat cluster), one character per node: '.' every GPU free,
// '#' every GPU used, a digit (or '+' above 9) the free GPUs of a partly
// used node, 'x' down, 'd' drained (drained and down nodes hide their free
// count).
func (s *State) Describe() string {
	var b strings.Builder
	c := s.c
	fmt.Fprintf(&b, "free %d of %d GPUs on schedulable nodes, %d used\n", s.freeGPUs, c.totalGPUs, s.usedGPUs)
	line := func(label string, lo, hi int) {
		fmt.Fprintf(&b, "%-12s ", label)
		for i := lo; i < hi; i++ {
			b.WriteByte(s.nodeChar(i))
		}
		b.WriteByte('\n')
	}
	if len(c.levels) == 0 {
		line("nodes", 0, len(c.nodes))
		return b.String()
	}
	low := len(c.levels) - 1
	for d := range c.levels[low] {
		lo, hi := c.DomainRange(low, d)
		line(c.levels[low][d].name, int(lo), int(hi))
	}
	return b.String()
}

func (s *State) nodeChar(i int) byte {
	switch s.status[i] {
	case Down:
		return 'x'
	case Drained:
		return 'd'
	}
	f := bits.PopCount(s.free[i])
	switch {
	case f == s.c.nodes[i].gpus:
		return '.'
	case f == 0:
		return '#'
	case f <= 9:
		return byte('0' + f)
	}
	return '+'
}
