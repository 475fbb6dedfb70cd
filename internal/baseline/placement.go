package baseline

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/placement"
)

// Placement names how nodes are chosen: Phalanx's own topology-aware
// placement, or one of the topology-blind baselines it is compared with.
type Placement uint8

const (
	// LeafPack is Phalanx's placement (package placement), the default.
	LeafPack Placement = iota
	// FirstFit takes the first candidate nodes in node order. It honours
	// a request's shape, Exclusive, Allowed and Excluded, and ignores
	// every topology constraint.
	FirstFit
	// Random draws candidate nodes uniformly from a seeded source; same
	// honours and omissions as FirstFit.
	Random
)

var placementNames = [...]string{"leaf-pack", "first-fit", "random"}

// String returns "leaf-pack", "first-fit" or "random".
func (p Placement) String() string {
	if int(p) < len(placementNames) {
		return placementNames[p]
	}
	return fmt.Sprintf("placement(%d)", uint8(p))
}

// ParsePlacement returns the placement named by String.
func ParsePlacement(name string) (Placement, bool) {
	for i, n := range placementNames {
		if n == name {
			return Placement(i), true
		}
	}
	return 0, false
}

// Use switches every placer inside target (a *placement.Placer, a
// *gang.Admitter, a *gang.Ledger or a *backfill.Engine) to placement p,
// seeding Random with seed. It is set on a built object and not kept in
// snapshots: an engine restored from one places with LeafPack again.
func Use(target any, p Placement, seed uint64) {
	if p > Random {
		panic(fmt.Sprintf("baseline: unknown placement %d", p))
	}
	switch t := target.(type) {
	case *placement.Placer:
		access.SetPlacerStrategy(t, uint8(p), seed)
	case *gang.Admitter, *gang.Ledger:
		access.SetPlacerStrategy(access.PlacerOf(t), uint8(p), seed)
	case *backfill.Engine:
		l, a := access.EngineAdmitters(t)
		access.SetPlacerStrategy(access.PlacerOf(l), uint8(p), seed)
		access.SetPlacerStrategy(access.PlacerOf(a), uint8(p), seed)
	default:
		panic(fmt.Sprintf("baseline: Use on %T", target))
	}
}
