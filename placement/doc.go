// Package placement decides where one request fits best: which nodes and
// which GPUs, or precisely why nothing fits.
//
// A Request asks for n nodes with g GPUs each (whole nodes when g is zero,
// or exclusive nodes), or for a total of G GPUs, with optional
// constraints: a required level (all inside one domain), a preferred
// level, at most k domains of a level (MaxDomains), up to three nested
// layers of segments (s nodes inside one domain of a level, Kueue's
// multi-layer slices), and allowed or excluded nodes.
//
// # What "best" means
//
// Among the placements that meet every constraint, Place looks for the
// best by these criteria, in order (lexicographically):
//
//  1. the lowest level crossed: the request sits inside one domain of
//     the deepest level that can hold it;
//  2. the fewest lowest-level domains (leaves);
//  3. the fewest nodes (GPU totals; a node count is fixed);
//  4. the least stranded capacity (Result.Stranded): the GPUs left free
//     on the nodes used plus, at every level, the GPUs left free in the
//     domains used, GPUs given beyond the request (the rest of an
//     exclusive node) counting as left free. It favours tight nodes,
//     then full leaves, then few and full higher domains, so that large
//     empty domains stay whole for large jobs.
//
// Exactness, as TestOracle checks against an exhaustive search on 10,000
// random clusters of up to 12 nodes and requests of every shape:
//
//   - Always exact, at any cluster size: whether the request is placed,
//     the level crossed, and a failure's code, Need, Have, exclusion
//     counts and Unresolvable verdict. The fewest leaves, when the
//     request has no segment layer and no domain limit above the lowest
//     level (node counts, whole nodes, GPU totals, segments or a limit at
//     the lowest level): the largest leaves first is then optimal.
//   - Exact within the search budget (Options.SearchBudget; Result.Approximate unset): the fewest
//     leaves under segments or a domain limit above the lowest level (a
//     knapsack over the domains of that level, each offering the items
//     it holds on t leaves), and the fewest nodes of a GPU total spread
//     over several leaves. A greedy plan comes first; the searches run
//     only when it misses a lower bound. For a GPU total on m leaves of a
//     domain of at most SearchBudget/128 leaves (8 by default) the fewest
//     nodes are first settled from the leaves' excesses: the t fullest
//     nodes of leaves S hold the least, over classes j, of t*j plus the
//     GPUs S's nodes hold above j, so the m leaves with the most above j
//     rule t out or a set of them holds the GPUs on t nodes
//     (TestSettleGPUNodes: it settles all but about 1% of the greedy's
//     misses on small clusters). What it leaves undecided goes to a
//     knapsack over the leaves, each offering the GPUs of its t fullest
//     nodes. Candidate domains of the chosen level are scored best lower
//     bound first, at most eight in full. Beyond these bounds the greedy
//     plan is returned and Result.Approximate is set (about 2% of the
//     random decisions of BenchmarkPlaceRandom at 2,000 GPUs, 4% at
//     100,000): TestOracleGreedy measures the greedy plan with settling
//     but no search budget against the exhaustive search (leaves under
//     segments and limits matched; so did GPU totals, where without
//     settling they were up to 4 nodes above the minimum).
//   - Best effort, Result.Approximate set when not proven: the nodes of a
//     GPU total under a domain limit above the lowest level (the limited
//     domains are chosen for their leaves, then the nodes inside them).
//   - Best effort: stranded capacity, except for a request of one node,
//     which is exact. The leaf or domain that takes the last piece is the
//     one adding the least free GPUs; nodes are taken tightest first.
//     TestOracle reports the worst gap per request class (up to about 50
//     GPUs on its small clusters, 0.3 on average; 93% to 99% of
//     placements optimal, per class).
//
// Preferred never changes the search, since the lowest fitting level is
// always taken; Result.PreferenceMet reports whether it was met.
//
// # Failures
//
// A request that does not fit gets a Reason: the binding constraint
// (TooManyDomains when a placement exists without the domain limit, else
// RequiredLevel, NoSegments, NoCapacity) with what it needs and the most
// any domain offers; how many nodes were left out and why (down, drained,
// outside Allowed, in Excluded, short of free GPUs; Request.AllowedLabel
// names Allowed in a caller's words); and whether the
// request is Unresolvable: it cannot fit even with every node up and
// every GPU free, so a Kubernetes adapter marks it
// UnschedulableAndUnresolvable instead of retrying.
//
// # Speed
//
// Capacities come from the free state's per-domain counters (free GPUs,
// nodes with at least k free GPUs, idle nodes), kept up to date by
// package topology on every allocation, so a decision reads counters
// instead of counting nodes; Allowed and Excluded subtract the nodes they
// remove. Every step works over domains, bounded searches and word
// operations on node bitsets; a decision allocates nothing. A failure is
// cheap too, as a scheduling loop meets many: a request without segments
// or node sets that the whole cluster cannot hold stops after the top
// level's counters, the nodes short
// of free GPUs are counted from the counters when no node set applies,
// and whether a request without segments or a domain limit can ever fit
// is read from a table of the ideal cluster built by New. The random
// benchmark in package benchmarks (BenchmarkPlaceRandom) gives the
// percentiles.
//
// Two topology-blind baselines, first-fit and random, exist for the
// module's own comparisons (internal/baseline); importers only ever get
// the placement described here.
//
// # Usage
//
//	p := placement.New(cluster, placement.Options{}) // once per cluster
//	buf := make([]topology.NodeAlloc, 0, 64)        // reused between calls
//	req := placement.Request{Nodes: 8, GPUsPerNode: 8, Required: "leaf"}
//	res, err := p.Place(state, &req, buf)
//	switch {
//	case err != nil:               // malformed request (ErrBadRequest)
//	case res.Reason.Unresolvable:  // can never fit this cluster
//	case !res.Placed:              // res.Reason says why, in a user's words
//	default:                       // state.Allocate(res.Assignment) to take it
//	}
//
// # Caller duties
//
// Place reads the state and changes nothing: allocate the assignment
// (topology.State.Allocate) to take it, or use package gang, which admits
// multi-part jobs all or nothing. The assignment aliases the buffer passed
// in; copy it before reusing the buffer.
//
// # Concurrency
//
// A Placer holds scratch space and is not safe for concurrent use; create
// one per goroutine. Place only reads the State, so several Placers may
// read one State concurrently as long as nobody writes it.
package placement
