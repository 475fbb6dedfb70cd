// Package access gives the packages of this module the low-level views
// they share without exporting them to importers: the raw words of a
// topology.State for word loops, and the invariant checkers that tests and
// the engine's self-check run. The owning packages fill the variables in
// their init functions, so any package that imports them may use them.
//
// The arguments are typed any to keep this package below the packages it
// serves (it imports none of them); passing anything else panics.
package access

// Words is the raw word layout of a topology.State (read-only: it aliases
// the state and tracks it until the state is reallocated, which only
// NewState and Clone do).
type Words struct {
	// Avail holds MaxNodeGPUs+1 bitsets of Stride words each: bitset g
	// marks the schedulable nodes with at least g free GPUs.
	Avail []uint64
	// Stride is the number of words of one node bitset.
	Stride int
	// Idle marks the schedulable nodes with every GPU free.
	Idle []uint64
	// Free holds every node's free-GPU mask, by node ID.
	Free []uint64
	// DomFree holds the free GPUs on schedulable nodes of every domain,
	// the levels one after the other, top level first (the entries of
	// level l, in order, are the state's LevelFreeGPUs(l)); DomAvail holds
	// the availability counters in the same order, MaxNodeGPUs+1 entries
	// a domain (the state's DomAvail rows).
	DomFree  []int32
	DomAvail []int32
}

// AvailWords returns bitset g of w.Avail.
func (w *Words) AvailWords(g int) []uint64 {
	return w.Avail[g*w.Stride : (g+1)*w.Stride : (g+1)*w.Stride]
}

var (
	// StateWords returns the words of a *topology.State (set by topology).
	StateWords func(s any) Words
	// CheckState recomputes every index of a *topology.State and reports
	// any disagreement (set by topology).
	CheckState func(s any) error
	// StateChanges returns where a *topology.State counts its changes
	// (read-only): a number that grows with every change of its free
	// GPUs or node statuses, so that equal numbers read from one state
	// mean it did not change in between (set by topology).
	StateChanges func(s any) *uint64
	// CheckLedger checks the books of a *gang.Ledger: no GPU given twice,
	// allocations matching the state, the state's own invariants (set by
	// gang).
	CheckLedger func(l any) error
)

// SetPlacerStrategy switches a *placement.Placer to a placement strategy:
// 0 leaf-pack (the default), 1 first-fit, 2 random seeded by seed (set by
// placement; internal/baseline names the strategies).
var SetPlacerStrategy func(p any, strategy uint8, seed uint64)

// PlacerOf returns the *placement.Placer of a *gang.Ledger or a
// *gang.Admitter (set by gang).
var PlacerOf func(x any) any

// EngineAdmitters returns the *gang.Ledger and the *gang.Admitter of a
// *backfill.Engine, every user of placement inside it (set by backfill).
var EngineAdmitters func(e any) (ledger, admitter any)
