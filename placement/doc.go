// Package placement decides where one request fits best: which nodes and
// which GPUs, or precisely why nothing fits.
//
// A Request asks for n nodes with g GPUs each (whole nodes when g is the
// node's size or zero), or for a total of G GPUs on as few nodes as
// possible, with optional constraints: a required level (all inside one
// domain), a preferred level, at most k domains of a level, segments of s
// nodes each inside one domain of a level, and allowed or excluded nodes.
//
// The algorithm is leaf packing (see Placer.Place for its pipeline): the
// request goes inside the lowest domain that can hold it, on the fewest
// lowest-level domains possible, into the fullest domains that fit, so
// large empty domains stay whole for large jobs. It never crosses a higher
// switch when a lower one can hold the request. Every step is word
// operations over the free-state indexes of package topology; a decision
// allocates nothing and takes microseconds on thousands of nodes.
//
// Two topology-blind baselines, FirstFit and Random, exist for comparison
// (Placer.SetStrategy).
//
// # Usage
//
//	p := placement.New(cluster)               // once per cluster
//	buf := make([]topology.NodeAlloc, 0, 64)  // reused between calls
//	req := placement.Request{Nodes: 8, GPUsPerNode: 8, Required: "leaf"}
//	res, err := p.Place(state, &req, buf)
//	switch {
//	case err != nil:   // malformed request (ErrBadRequest)
//	case !res.Placed:  // res.Reason says why, in a user's words
//	default:           // state.Allocate(res.Assignment) to take it
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
