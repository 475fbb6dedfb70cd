package gang

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/internal/sat"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Errors of the gang package.
var (
	// ErrBadSpec marks a gang description that can never be admitted as
	// written (no members, duplicate names, a bad request).
	ErrBadSpec = errors.New("gang: bad gang spec")
	// ErrDuplicateID marks an admission of an ID the ledger already holds.
	ErrDuplicateID = errors.New("gang: gang already admitted")
	// ErrUnknownGang marks an ID the ledger does not hold.
	ErrUnknownGang = errors.New("gang: unknown gang")
	// ErrRestore marks a snapshot that cannot be restored.
	ErrRestore = errors.New("gang: cannot restore")
)

// maxOrders bounds how many member orders the first, greedy pass of one
// admission tries: the most-constrained-first order, then, each time a
// member fails after others were placed, the same order with the failing
// member moved first.
const maxOrders = 4

// Options configure an Admitter (and the Ledger that owns one).
type Options struct {
	// Placement configures the placer that places each member (its
	// search budget).
	Placement placement.Options
}

// Member is one role of a gang: Request.Nodes pods (one per node) of
// Request.GPUsPerNode GPUs each, or Request.GPUs GPUs laid out by
// placement, with the request's topology constraints.
type Member struct {
	// Name is unique within the gang (for example "launcher", "worker").
	Name string
	// Request is what the member's pods need.
	Request placement.Request
	// Min, when positive and below Request.Nodes, lets the member start
	// with as few as Min pods (elastic start). The gang is still
	// all-or-nothing at its minimum; admission gives the member as many
	// pods as fit, from Request.Nodes down to Min. It must be a multiple
	// of the segment size when segments are used.
	Min int
	// Step, when above 1, makes the member's pod count move in multiples
	// of Step (a tensor-parallel group of nodes, say): Request.Nodes and
	// Min are multiples of it, and admission, growth (Ledger.GrowMember)
	// and shrinking (Ledger.ReleasePods) keep the count one. With
	// segments it is a multiple of the segment size; without Step the
	// step is the segment size (1 without segments).
	Step int
}

// step returns the multiple m's pod count moves by.
func (m *Member) step() int {
	if m.Step > 1 {
		return m.Step
	}
	return m.Request.SegmentStep()
}

// Colocation optionally keeps the whole gang inside one domain of Level.
type Colocation struct {
	// Level names the level; empty means no co-location.
	Level string
	// Required makes co-location a condition of admission; otherwise it
	// is a preference, dropped when no domain can hold the gang.
	Required bool
}

// Spec describes a gang: an ID and one or more members admitted together.
type Spec struct {
	ID       string
	Members  []Member
	Colocate Colocation
}

// stepProblem says what is wrong with m's step against its size, minimum
// and segments ("" when nothing is).
func (m *Member) stepProblem() string {
	seg := m.Request.SegmentStep()
	switch {
	case m.Step < 0 || m.Step > 1 && m.Request.GPUs > 0:
		return fmt.Sprintf("Step %d (Step goes with Nodes, and is not negative)", m.Step)
	case m.Step > 1 && m.Step%seg != 0:
		return fmt.Sprintf("Step %d is not a multiple of segment size %d", m.Step, seg)
	case m.Step > 1 && m.Request.Nodes%m.Step != 0:
		return fmt.Sprintf("Nodes %d is not a multiple of Step %d", m.Request.Nodes, m.Step)
	case m.Min > 0 && m.Step > 1 && m.Min%m.Step != 0:
		return fmt.Sprintf("Min %d is not a multiple of Step %d", m.Min, m.Step)
	case m.Min > 0 && seg > 1 && m.Min%seg != 0:
		return fmt.Sprintf("Min %d is not a multiple of segment size %d", m.Min, seg)
	}
	return ""
}

// WholeNodeGPUs returns the GPUs of a largest node of c that member m may
// use: one in its Allowed set (any node when Allowed is nil) and not in
// Excluded, 0 when there is none. A whole-node pod of m (GPUsPerNode 0)
// takes at most that many. Without node sets it is c.MaxNodeGPUs();
// otherwise time is linear in the nodes m may use (it stops at a node of
// c.MaxNodeGPUs()). It allocates nothing.
func (m *Member) WholeNodeGPUs(c *topology.Cluster) int {
	r := &m.Request
	top := c.MaxNodeGPUs()
	if r.Allowed == nil && r.Excluded == nil {
		return top
	}
	g := 0
	usable := func(n uint) bool { return r.Excluded == nil || !r.Excluded.Test(n) }
	if r.Allowed != nil {
		for n, ok := r.Allowed.NextSet(0); ok && int(n) < c.NumNodes() && g < top; n, ok = r.Allowed.NextSet(n + 1) {
			if usable(n) {
				g = max(g, c.NodeGPUs(topology.NodeID(n)))
			}
		}
		return g
	}
	for n := 0; n < c.NumNodes() && g < top; n++ {
		if usable(uint(n)) {
			g = max(g, c.NodeGPUs(topology.NodeID(n)))
		}
	}
	return g
}

// GPUs returns the GPUs the gang asks for at full size (whole-node members
// count the GPUs of a largest node each may use: Member.WholeNodeGPUs), or
// math.MaxInt when that is more than an int holds (a valid spec may ask
// for more than any cluster has). Time is linear in the nodes of the
// whole-node members' node sets.
func (g *Spec) GPUs(c *topology.Cluster) int {
	n := 0
	for i := range g.Members {
		m := &g.Members[i]
		r := &m.Request
		switch {
		case r.GPUs > 0:
			n = sat.Add(n, r.GPUs)
		case r.GPUsPerNode == 0:
			n = sat.Add(n, sat.Mul(r.Nodes, m.WholeNodeGPUs(c)))
		default:
			n = sat.Add(n, sat.Mul(r.Nodes, r.GPUsPerNode))
		}
	}
	return n
}

// MinGPUs returns the GPUs the gang needs at its minimum size (whole-node
// members count the GPUs of a largest node each may use:
// Member.WholeNodeGPUs), or math.MaxInt when that is more than an int
// holds. Time is as GPUs's.
func (g *Spec) MinGPUs(c *topology.Cluster) int {
	n := 0
	for i := range g.Members {
		m := &g.Members[i]
		whole := 0
		if m.Request.GPUs == 0 && m.Request.GPUsPerNode == 0 {
			whole = m.WholeNodeGPUs(c)
		}
		n = sat.Add(n, m.minGPUsAt(whole))
	}
	return n
}

// minPods returns m's pods at its minimum size (its Nodes without Min).
func (m *Member) minPods() int {
	pods := m.Request.Nodes
	if m.Min > 0 && m.Min < pods {
		pods = m.Min
	}
	return pods
}

// minGPUsAt returns the GPUs m needs at its minimum size, a whole-node
// pod counted at wholeNode GPUs.
func (m *Member) minGPUsAt(wholeNode int) int {
	r := &m.Request
	switch {
	case r.GPUs > 0:
		return r.GPUs
	case r.GPUsPerNode == 0:
		return sat.Mul(m.minPods(), wholeNode)
	}
	return sat.Mul(m.minPods(), r.GPUsPerNode)
}

// minGPUsAt is MinGPUs with every whole-node pod counted at wholeNode
// GPUs.
func (g *Spec) minGPUsAt(wholeNode int) int {
	n := 0
	for i := range g.Members {
		n = sat.Add(n, g.Members[i].minGPUsAt(wholeNode))
	}
	return n
}

// Validate checks the spec against cluster c: an ID, at least one member,
// unique member names, valid requests and minimums, a known co-location
// level.
func (g *Spec) Validate(c *topology.Cluster) error {
	if g == nil {
		return fmt.Errorf("%w: no spec (nil)", ErrBadSpec)
	}
	if g.ID == "" {
		return fmt.Errorf("%w: no ID", ErrBadSpec)
	}
	if len(g.Members) == 0 {
		return fmt.Errorf("%w: gang %s has no members", ErrBadSpec, g.ID)
	}
	for i := range g.Members {
		m := &g.Members[i]
		if m.Name == "" {
			return fmt.Errorf("%w: gang %s member %d has no name", ErrBadSpec, g.ID, i)
		}
		for j := range i {
			if g.Members[j].Name == m.Name {
				return fmt.Errorf("%w: gang %s has two members named %q", ErrBadSpec, g.ID, m.Name)
			}
		}
		if err := m.Request.Validate(c); err != nil {
			return fmt.Errorf("%w: gang %s member %s: %w", ErrBadSpec, g.ID, m.Name, err)
		}
		if m.Min < 0 || m.Min > 0 && m.Request.GPUs > 0 {
			return fmt.Errorf("%w: gang %s member %s: Min %d (Min goes with Nodes, and is not negative)", ErrBadSpec, g.ID, m.Name, m.Min)
		}
		if why := m.stepProblem(); why != "" {
			return fmt.Errorf("%w: gang %s member %s: %s", ErrBadSpec, g.ID, m.Name, why)
		}
	}
	if g.Colocate.Level != "" {
		if _, ok := c.Level(g.Colocate.Level); !ok {
			return fmt.Errorf("%w: gang %s: %w: co-location level %q", ErrBadSpec, g.ID, topology.ErrUnknownLevel, g.Colocate.Level)
		}
	}
	return nil
}

// Allocation is an admitted gang's placement: per member, the pods placed
// and their nodes and GPUs. Its slices are reused when an Allocation is
// passed back to Admit.
type Allocation struct {
	ID      string
	Members []MemberAllocation
}

// MemberAllocation is one member's share of an Allocation.
type MemberAllocation struct {
	Name string
	// Pods is the number of pods placed (nodes, in node mode), between
	// Min and Request.Nodes.
	Pods int
	// Assignment lists the member's nodes and GPUs.
	Assignment []topology.NodeAlloc
}

// GPUs returns the GPUs held by the allocation.
func (a *Allocation) GPUs() int {
	n := 0
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			n += bits.PopCount(x.GPUs)
		}
	}
	return n
}

// OnNode reports whether the allocation holds GPUs on node n.
func (a *Allocation) OnNode(n topology.NodeID) bool {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if x.Node == n {
				return true
			}
		}
	}
	return false
}

// CopyTo makes dst a deep copy of a, reusing dst's slices.
func (a *Allocation) CopyTo(dst *Allocation) {
	dst.ID = a.ID
	dst.Members = slices.Grow(dst.Members[:0], len(a.Members))[:len(a.Members)]
	for i := range a.Members {
		dst.Members[i].Name = a.Members[i].Name
		dst.Members[i].Pods = a.Members[i].Pods
		dst.Members[i].Assignment = append(dst.Members[i].Assignment[:0], a.Members[i].Assignment...)
	}
}

// Admission is the outcome of one admission.
type Admission struct {
	// Admitted reports whether every member was placed.
	Admitted bool
	// Member names the member that could not be placed (on failure).
	Member string
	// Reason is that member's placement reason (on failure).
	Reason placement.Reason
	// Colocated reports whether the gang was placed inside one domain of
	// its co-location level.
	Colocated bool
	// ColocationLevel, ColocationNeed and ColocationHave explain a
	// required co-location that failed before any member was tried: the
	// gang needs ColocationNeed GPUs under one domain of the level and the
	// best domain has ColocationHave free. ColocationNeed counts the
	// gang at its minimum size, a whole-node pod at the cluster's smallest
	// node: no domain with fewer free GPUs can hold it.
	ColocationLevel                string
	ColocationNeed, ColocationHave int
	// Orders is the number of member orders the greedy pass tried.
	Orders int
	// Searched reports that the greedy pass failed and the exact packing
	// search ran; SearchSteps counts the member placements it tried, and
	// SearchCut reports that it stopped at its work bound (SearchWork)
	// before proving that no packing exists. For a co-located gang they
	// cover every domain tried (Orders too): a gang admitted greedily in
	// its second domain after a search cut in its first reports Searched
	// and SearchCut with the first search's steps.
	Searched    bool
	SearchSteps int
	SearchCut   bool
	// Proven reports, on a failure, that no packing of the gang exists on
	// the state admitted on: a member does not fit it by itself (alone on
	// the state, or on every domain of a required co-location), no domain
	// of a required co-location has the free GPUs, or the exact search
	// (which enumerates every member, segments included: see SearchWork)
	// ran without stopping at its bound. A failure without it may hide a
	// packing that neither the greedy pass nor the search found (gangs of
	// more than MaxSearchMembers members, a search cut at its bound): on
	// an empty cluster, only a proven failure means the gang can never
	// fit.
	Proven bool
}

// String renders a failed admission for users, for example "member worker:
// needs 150 nodes with 8 free GPUs; the cluster has 100".
func (r Admission) String() string {
	if r.Admitted {
		return "admitted"
	}
	if r.ColocationLevel != "" {
		return fmt.Sprintf("needs %d GPUs under one %s; the best %s has %d free", r.ColocationNeed, r.ColocationLevel, r.ColocationLevel, r.ColocationHave)
	}
	return fmt.Sprintf("member %s: %s", r.Member, r.Reason)
}

// Admitter places gangs on any free state of one cluster, all members or
// none. It holds scratch space so that admission allocates nothing in the
// steady state. It is not safe for concurrent use.
type Admitter struct {
	c     *topology.Cluster
	p     *placement.Placer
	order []int
	req   placement.Request
	allow *bitset.BitSet
	doms  []int
	buf   []topology.NodeAlloc
	pack  packSearch
	// dry: tryOrder places a single member without allocating it (Check).
	dry bool
	// smallest is the GPUs of the cluster's smallest node.
	smallest int
	// sizeGCD divides the GPUs of every node; leastNodes[k] is the GPUs
	// of the cluster's k smallest nodes (lower bounds for the search).
	sizeGCD    int
	leastNodes []int
	// tried names, per level, the nodes outside the domain a member was
	// tried in (Request.AllowedLabel) for a member without Allowed;
	// triedOwn caches the labels for members with Allowed, which also
	// name its own words (triedLabel).
	tried    []string
	triedOwn []triedLabel
}

// triedLabel is a cached label: the nodes outside a domain of level lvl
// or outside a member's Allowed, which the member's label own names.
type triedLabel struct {
	lvl      int
	own, out string
}

// NewAdmitter returns an Admitter for cluster c.
func NewAdmitter(c *topology.Cluster, opts Options) *Admitter {
	a := &Admitter{c: c, p: placement.New(c, opts.Placement), allow: c.NewNodeSet(), buf: make([]topology.NodeAlloc, 0, c.NumNodes())}
	a.pack.init(c)
	a.smallest = c.MaxNodeGPUs()
	sizes := make([]int, c.NumNodes())
	for n := range c.NumNodes() {
		sizes[n] = c.NodeGPUs(topology.NodeID(n))
		a.smallest = min(a.smallest, sizes[n])
		a.sizeGCD = gcd(a.sizeGCD, sizes[n])
	}
	slices.Sort(sizes)
	a.leastNodes = make([]int, len(sizes)+1)
	for k, g := range sizes {
		a.leastNodes[k+1] = a.leastNodes[k] + g
	}
	for l := range c.Depth() {
		a.tried = append(a.tried, "outside the "+c.LevelName(l)+" tried")
	}
	return a
}

func gcd(x, y int) int {
	for y != 0 {
		x, y = y, x%y
	}
	return x
}

// triedLabel returns the label of member m's request restricted to a
// domain of level lvl: the domain, and the member's Allowed in its own
// words. The labels of members with Allowed are kept (up to 64), so that
// a caller's few labels, such as its queues' pools, cost no allocation
// after the first.
func (a *Admitter) triedLabel(m *Member, lvl int) string {
	if m.Request.Allowed == nil {
		return a.tried[lvl]
	}
	own := m.Request.AllowedWords()
	for _, t := range a.triedOwn {
		if t.lvl == lvl && t.own == own {
			return t.out
		}
	}
	out := a.tried[lvl] + " or " + own
	if len(a.triedOwn) < 64 {
		a.triedOwn = append(a.triedOwn, triedLabel{lvl: lvl, own: own, out: out})
	}
	return out
}

// colocationNeed returns the fewest free GPUs a domain must have for g to
// fit inside it at its minimum size: Spec.MinGPUs, with a whole-node pod
// counted at the cluster's smallest node (exact when every node has the
// same GPUs).
func (a *Admitter) colocationNeed(g *Spec) int { return g.minGPUsAt(a.smallest) }

// Admit places every member of g on s and allocates them there, or, when
// any member does not fit, leaves s exactly as it was and says which
// member failed and why. The placement goes into out (its slices reused).
// g must be valid (Spec.Validate); an invalid spec returns its error.
//
// A greedy pass places the members most-constrained first: a required
// level first, then the largest GPU count, then the largest per-node
// count. When a member fails after others were placed, the order is
// retried with that member first, up to maxOrders orders in all. When
// every order fails after placing other members, an exact search for a
// packing follows (see SearchWork for what it covers and its bound). With
// co-location, the domains of the co-location level that have enough
// free GPUs are tried from the fullest (best fit); a preferred
// co-location falls back to none.
//
// Each member's pods come out in rank order (see Pod and the package doc).
func (a *Admitter) Admit(s *topology.State, g *Spec, out *Allocation) (Admission, error) {
	res, err := a.admit(s, g, out)
	if res.Admitted {
		rankOrder(out)
	}
	return res, err
}

// Check reports what Admit would on s, the same admission and, when g is
// admitted, the same placement in out, but leaves s unchanged: a what-if
// for a caller that only needs to know whether and where g fits. A gang
// of one member without co-location is placed without touching s (the
// allocation and release Admit then Release would do are most of a
// small gang's admission cost); any other gang is admitted and released.
func (a *Admitter) Check(s *topology.State, g *Spec, out *Allocation) (Admission, error) {
	if len(g.Members) == 1 && g.Colocate.Level == "" {
		a.dry = true
		res, err := a.Admit(s, g, out)
		a.dry = false
		return res, err
	}
	res, err := a.Admit(s, g, out)
	if err == nil && res.Admitted {
		for i := range out.Members {
			if err := s.Release(out.Members[i].Assignment); err != nil {
				panic(fmt.Sprintf("gang: releasing a checked admission failed: %v", err))
			}
		}
	}
	return res, err
}

func (a *Admitter) admit(s *topology.State, g *Spec, out *Allocation) (Admission, error) {
	if s == nil || s.Cluster() != a.c {
		return Admission{}, topology.ErrOtherCluster
	}
	if err := g.Validate(a.c); err != nil {
		return Admission{}, err
	}
	if out == nil {
		return Admission{}, fmt.Errorf("%w: gang %s: no allocation to write (nil)", ErrBadSpec, g.ID)
	}
	a.prepare(g, out)
	if g.Colocate.Level == "" {
		return a.tryOrders(s, g, out, -1, -1), nil
	}
	lvl, _ := a.c.Level(g.Colocate.Level)
	need := a.colocationNeed(g)
	doms := a.doms[:0]
	for d := range a.c.NumDomains(lvl) {
		if s.DomainFreeGPUs(lvl, d) >= need {
			doms = append(doms, d)
		}
	}
	slices.SortFunc(doms, func(x, y int) int {
		if fx, fy := s.DomainFreeGPUs(lvl, x), s.DomainFreeGPUs(lvl, y); fx != fy {
			return fx - fy
		}
		return x - y
	})
	a.doms = doms
	var res, tally Admission
	// proven: no domain holds the gang (those left out lack the free
	// GPUs; each tried one failed with a proof).
	proven := true
	for _, d := range doms {
		res = a.tryOrders(s, g, out, lvl, d)
		tally.addAttempt(res)
		proven = proven && res.Proven
		if res.Admitted {
			res.Colocated = true
			res.takeAttempts(tally)
			return res, nil
		}
	}
	if !g.Colocate.Required {
		res = a.tryOrders(s, g, out, -1, -1)
		tally.addAttempt(res)
		res.takeAttempts(tally)
		// Placed anywhere, it may still lie inside one domain (the
		// attempts inside each domain are greedy for some members).
		res.Colocated = res.Admitted && a.insideOne(out, lvl)
		return res, nil
	}
	if len(doms) == 0 {
		// No domain has the free GPUs, whatever the layout.
		res = Admission{ColocationLevel: g.Colocate.Level, ColocationNeed: need, Proven: true}
		for d := range a.c.NumDomains(lvl) {
			res.ColocationHave = max(res.ColocationHave, s.DomainFreeGPUs(lvl, d))
		}
	}
	res.takeAttempts(tally)
	res.Proven = proven
	return res, nil
}

// addAttempt adds one attempt's greedy orders and search to t, the tally
// of a co-located gang's attempts (one per domain, then anywhere).
func (t *Admission) addAttempt(r Admission) {
	t.Orders += r.Orders
	t.Searched = t.Searched || r.Searched
	t.SearchSteps += r.SearchSteps
	t.SearchCut = t.SearchCut || r.SearchCut
}

// takeAttempts reports on r every attempt tallied in t: the orders tried
// and the searches run in all of them, not only in the last.
func (r *Admission) takeAttempts(t Admission) {
	r.Orders, r.Searched, r.SearchSteps, r.SearchCut = t.Orders, t.Searched, t.SearchSteps, t.SearchCut
}

// insideOne reports whether every pod of out lies inside one domain of
// level lvl.
func (a *Admitter) insideOne(out *Allocation, lvl int) bool {
	dom := -1
	for i := range out.Members {
		for _, x := range out.Members[i].Assignment {
			switch d := a.c.NodeDomain(x.Node, lvl); {
			case dom < 0:
				dom = d
			case d != dom:
				return false
			}
		}
	}
	return true
}

// prepare sizes out for g and computes the most-constrained-first order.
func (a *Admitter) prepare(g *Spec, out *Allocation) {
	out.ID = g.ID
	n := len(g.Members)
	out.Members = slices.Grow(out.Members[:0], n)[:n]
	for i := range out.Members {
		out.Members[i].Name = g.Members[i].Name
		out.Members[i].Pods = 0
		out.Members[i].Assignment = out.Members[i].Assignment[:0]
	}
	a.order = slices.Grow(a.order[:0], n)[:n]
	for i := range a.order {
		a.order[i] = i
	}
	maxG := a.c.MaxNodeGPUs()
	slices.SortStableFunc(a.order, func(x, y int) int {
		rx, ry := &g.Members[x].Request, &g.Members[y].Request
		if bx, by := rx.Required != "", ry.Required != ""; bx != by {
			if bx {
				return -1
			}
			return 1
		}
		if gx, gy := memberGPUs(rx, maxG), memberGPUs(ry, maxG); gx != gy {
			return gy - gx
		}
		return perNode(ry, maxG) - perNode(rx, maxG)
	})
}

func memberGPUs(r *placement.Request, maxG int) int {
	if r.GPUs > 0 {
		return r.GPUs
	}
	return sat.Mul(r.Nodes, perNode(r, maxG))
}

func perNode(r *placement.Request, maxG int) int {
	if r.GPUs > 0 {
		return 0
	}
	if r.GPUsPerNode == 0 {
		return maxG
	}
	return r.GPUsPerNode
}

// tryOrders runs admission in up to maxOrders member orders, restricted to
// domain d of level lvl when lvl >= 0, then the exact search when every
// order failed after placing some members.
func (a *Admitter) tryOrders(s *topology.State, g *Spec, out *Allocation, lvl, d int) Admission {
	var res Admission
	for k := 0; k < maxOrders; k++ {
		res.Orders = k + 1
		failed, placedBefore := a.tryOrder(s, g, out, lvl, d, &res)
		if failed < 0 {
			res.Admitted = true
			res.Member, res.Reason = "", placement.Reason{}
			return res
		}
		if !placedBefore || len(g.Members) == 1 {
			// The failing member does not fit on this slate by itself:
			// no order, and no packing, helps.
			res.Proven = true
			return res
		}
		// Move the failing member to the front and try again.
		pos := slices.Index(a.order, failed)
		copy(a.order[1:pos+1], a.order[:pos])
		a.order[0] = failed
	}
	if len(g.Members) <= MaxSearchMembers {
		a.searchPacking(s, g, out, lvl, d, &res)
	}
	return res
}

// tryOrder places the members in a.order; on failure it releases what it
// allocated and returns the failing member's index and whether another
// member had been placed before it. It returns -1 on success.
func (a *Admitter) tryOrder(s *topology.State, g *Spec, out *Allocation, lvl, d int, res *Admission) (int, bool) {
	for pos, mi := range a.order {
		m := &g.Members[mi]
		ma := &out.Members[mi]
		ok, reason := a.placeMember(s, m, ma, lvl, d)
		if !ok {
			for _, mj := range a.order[:pos] {
				a.release(s, &out.Members[mj])
			}
			res.Member, res.Reason = m.Name, reason
			return mi, pos > 0
		}
		if a.dry {
			continue // Check: a single member, placed, not allocated
		}
		if err := s.Allocate(ma.Assignment); err != nil {
			panic(fmt.Sprintf("gang: placement returned an assignment the state refuses: %v", err))
		}
	}
	return -1, false
}

func (a *Admitter) release(s *topology.State, ma *MemberAllocation) {
	if err := s.Release(ma.Assignment); err != nil {
		panic(fmt.Sprintf("gang: rollback failed: %v", err))
	}
	ma.Assignment = ma.Assignment[:0]
	ma.Pods = 0
}

// placeMember places member m (restricted to domain d of level lvl when
// lvl >= 0) into ma, largest size first down to its minimum.
func (a *Admitter) placeMember(s *topology.State, m *Member, ma *MemberAllocation, lvl, d int) (bool, placement.Reason) {
	if lvl < 0 {
		return a.placeMemberIn(s, m, ma, 0, a.c.NumNodes(), "")
	}
	f, e := a.c.DomainRange(lvl, d)
	ok, why := a.placeMemberIn(s, m, ma, int(f), int(e), a.triedLabel(m, lvl))
	if f > 0 || int(e) < a.c.NumNodes() {
		// Whether the member could ever fit one domain says nothing of
		// the others, nor of the cluster: no verdict. What the reason
		// counts is that domain's, not the cluster's.
		why.Unresolvable = false
		if why.Level == "" && (why.Code == placement.NoCapacity || why.Code == placement.NoSegments) {
			why.Level = a.c.LevelName(lvl)
		}
	}
	return ok, why
}

// placeMemberIn places member m, restricted to nodes [lo, hi), into ma,
// largest size first down to its minimum. A restricted request's reason
// names the nodes outside them as label says (Request.AllowedLabel).
func (a *Admitter) placeMemberIn(s *topology.State, m *Member, ma *MemberAllocation, lo, hi int, label string) (bool, placement.Reason) {
	a.req = m.Request
	if lo > 0 || hi < a.c.NumNodes() {
		a.restrict(m, lo, hi)
		a.req.Allowed, a.req.AllowedLabel = a.allow, label
	}
	res, err := a.p.Place(s, &a.req, ma.Assignment)
	if err != nil {
		panic(fmt.Sprintf("gang: validated request refused: %v", err))
	}
	if res.Placed {
		ma.Assignment, ma.Pods = res.Assignment, podCount(&a.req, res)
		return true, placement.Reason{}
	}
	full := res.Reason
	if m.Min <= 0 || m.Min >= m.Request.Nodes {
		return false, full
	}
	// Elastic: the largest size in [Min, Nodes) that fits. Feasibility is
	// monotone in the size, so binary search; sizes step by the segment.
	step := m.step()
	low, high := m.Min/step, (m.Request.Nodes-1)/step // in steps
	best := -1
	for low <= high {
		mid := (low + high) / 2
		a.req.Nodes = mid * step
		r, _ := a.p.Place(s, &a.req, ma.Assignment)
		if r.Placed {
			best, low = mid, mid+1
		} else {
			high = mid - 1
		}
	}
	if best < 0 {
		a.req.Nodes = m.Min
		r, _ := a.p.Place(s, &a.req, ma.Assignment)
		return false, r.Reason
	}
	a.req.Nodes = best * step
	r, _ := a.p.Place(s, &a.req, ma.Assignment)
	ma.Assignment, ma.Pods = r.Assignment, a.req.Nodes
	return true, placement.Reason{}
}

// restrict sets a.allow to nodes [lo, hi) within m's Allowed set.
func (a *Admitter) restrict(m *Member, lo, hi int) {
	a.allow.ClearAll()
	bits.SetRange(a.allow.Words(), lo, hi)
	if m.Request.Allowed != nil {
		a.allow.InPlaceIntersection(m.Request.Allowed)
	}
}

func podCount(r *placement.Request, res placement.Result) int {
	if r.GPUs > 0 {
		return res.Nodes
	}
	return r.Nodes
}
