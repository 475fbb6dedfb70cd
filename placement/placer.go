package placement

import (
	"math/rand/v2"

	"github.com/phalanx-sched/phalanx/topology"
)

// Result is the outcome of one placement.
type Result struct {
	// Placed reports whether the request was placed. When false, Reason
	// says why and Assignment is empty.
	Placed bool
	// Reason explains a failure (Code is Placed on success).
	Reason Reason
	// Assignment lists the chosen nodes and GPUs. It aliases the buffer
	// passed to Place.
	Assignment []topology.NodeAlloc
	// Nodes and GPUs count the assignment.
	Nodes, GPUs int
	// Spans counts the domains used at each cluster level (index 0 is the
	// top level).
	Spans [topology.MaxLevels]int
	// Within is the lowest cluster level at which one domain holds the
	// whole assignment, or -1 when it spans several top-level domains.
	Within int
	// Stranded is the capacity the placement strands: the GPUs left free
	// on the nodes it uses plus, at every level, the GPUs left free in
	// the domains it uses, where GPUs given beyond the request (the rest
	// of an exclusive node) count as left free. Placement minimises it
	// after the level, the leaves and the nodes (see the package doc).
	Stranded int
	// Approximate reports that an exact search for the fewest leaves or
	// nodes ran out of its work bound, so that the answer given is the
	// greedy one, which may use more than the minimum.
	Approximate bool
	// PreferenceMet reports whether the assignment lies inside one domain
	// of the request's Preferred level (true when none was given).
	PreferenceMet bool
}

// HighestCrossed returns the highest level at which the assignment spans
// more than one domain, or -1 when it sits inside one lowest-level domain.
func (r *Result) HighestCrossed(c *topology.Cluster) int {
	if r.Within+1 >= c.Depth() {
		return -1
	}
	return r.Within + 1
}

// Leaves returns the number of lowest-level domains the assignment spans
// (1 for a flat cluster).
func (r *Result) Leaves(c *topology.Cluster) int {
	if c.Depth() == 0 {
		return 1
	}
	return r.Spans[c.Depth()-1]
}

// Options configure a Placer. The zero value is the default.
type Options struct {
	// SearchBudget bounds the work of the exact searches of one decision
	// (see DefaultSearchBudget, used when SearchBudget < 1; at most
	// MaxSearchBudget). A larger budget proves more decisions optimal and
	// costs latency and memory (about 20 bytes a cell, allocated by New)
	// on the hardest requests; a smaller one answers greedily sooner.
	SearchBudget int
}

// Placer places requests on the states of one cluster. It keeps the
// cluster's layout, computed once, apart from scratch space for one
// request, sized for the cluster so that Place allocates nothing. A Placer
// is not safe for concurrent use; give each goroutine its own.
type Placer struct {
	lay      *layout
	strategy strategy
	rng      *rand.Rand
	// order is the random strategy's shuffle buffer.
	order []int32
	// budget is the work bound of one decision's exact searches (see
	// Options.SearchBudget).
	budget int
	sc     scratch
	// reference turns every shortcut of the failure path off (tests
	// compare the two): reasons and capacities computed the long way; and
	// the search of a GPU total gives up only once it has listed its
	// leaves (selWork's early bound is skipped, and checked against the
	// work counted); and the domain is sought from the lowest level up,
	// without lowestHolding's skip of the levels where none holds it.
	reference bool
	// earlySkips counts the searches selWork's bound gave up before they
	// listed their leaves (tests check that they compare that path).
	earlySkips int
	// settleLeaves is the most leaves of a domain whose GPU-total plan
	// settleGPUNodes settles (the budget over settleCellsPerLeaf); tests
	// set it to 0 to reach the search it spares.
	settleLeaves int
}

// DefaultSearchBudget bounds the work of the exact searches of one
// decision (the fewest leaves under segments or a domain limit above the
// lowest level, the fewest nodes of a GPU-total request over several
// leaves), counted in table cells, unless Options.SearchBudget says
// otherwise. Beyond it the greedy answer is returned and
// Result.Approximate is set.
const DefaultSearchBudget = 1 << 10

// MaxSearchBudget is the largest Options.SearchBudget New honours; larger
// values are lowered to it.
const MaxSearchBudget = 1 << 20

// New returns a Placer for cluster c.
func New(c *topology.Cluster, opts Options) *Placer {
	p := &Placer{lay: newLayout(c), budget: opts.SearchBudget}
	if p.budget < 1 {
		p.budget = DefaultSearchBudget
	}
	p.budget = min(p.budget, MaxSearchBudget)
	p.settleLeaves = p.budget / settleCellsPerLeaf
	p.sc.init(p.lay, p.budget)
	return p
}

// Cluster returns the placer's cluster.
func (p *Placer) Cluster() *topology.Cluster { return p.lay.c }

// Place chooses nodes and GPUs for r on state s, which it does not change
// (the caller allocates the assignment if it wants it). The assignment is
// appended to buf[:0]; with a buffer whose capacity covers the nodes
// placed, Place allocates nothing.
//
// A malformed request is an ErrBadRequest error. A request that does not
// fit returns a Result with Placed false and a Reason.
//
// The steps:
//
//  1. Capacities: per domain, the request's items (nodes, GPUs or
//     segments) its candidate nodes hold, read from the state's domain
//     counters (or counted over the candidate bitset when Allowed or
//     Excluded restrict the nodes).
//  2. Level: from the lowest level up to the Required one, the first
//     level where one domain can hold the request.
//  3. Domain: among that level's domains that can, the one needing the
//     fewest leaves, then (GPU totals) the fewest nodes, then the least
//     stranded capacity (a single leaf is scored exactly; larger domains
//     by their free GPUs, fullest first).
//  4. Fill: the request's phases (domain limit, segment layers, lowest
//     level) spread their items over their units. The lowest level takes
//     the fewest leaves (largest first, the last piece to the tightest
//     leaf that covers it, keeping to as few higher domains as it can);
//     higher phases choose units by an exact search over the leaves each
//     unit would cost, within SearchBudget.
//  5. Nodes: in each leaf, the candidates with the fewest free GPUs that
//     fit (GPU totals: the fewest nodes, the last one the tightest);
//     GPUs from the smallest intra-node group that holds them.
func (p *Placer) Place(s *topology.State, r *Request, buf []topology.NodeAlloc) (Result, error) {
	if s.Cluster() != p.lay.c {
		return Result{}, topology.ErrOtherCluster
	}
	sc := &p.sc
	if err := sc.pl.resolve(p.lay.c, r); err != nil {
		return Result{}, err
	}
	sc.begin(s, r, buf, p.budget)
	var ok bool
	if p.strategy == leafPack {
		ok = p.placeLeafPack()
	} else {
		ok = p.placeBlind()
	}
	var res Result
	if ok {
		p.measure(&res)
	} else {
		res.Reason = p.explain()
	}
	sc.end()
	return res, nil
}

// placeLeafPack runs steps 1 to 5 and reports whether it placed.
func (p *Placer) placeLeafPack() bool {
	p.capacities()
	if p.sc.shortRoot {
		return false
	}
	x, ok := p.chooseDomain()
	if !ok {
		return false
	}
	sc := &p.sc
	ph := sc.pl.firstPhase(p.lay.levelOf(x))
	sc.tally.on = true
	p.fill(x, ph, sc.pl.need(ph))
	if sc.pl.mode == modeGPUs && ph != p.lastPhase() && len(sc.out) > p.planNodesBound(x, sc.pl.gpus) {
		// Units chosen for their leaves: fewer nodes are not ruled out.
		sc.approximate = true
	}
	return true
}
