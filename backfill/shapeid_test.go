package backfill

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestShapeTable checks the shape numbering the same-shape failure cache
// relies on: equal numbers only for equal shapes, whatever the table
// evicts (far more distinct shapes than slots), and the same number for
// a shape seen again while it is in the table.
func TestShapeTable(t *testing.T) {
	for _, distinct := range []int{10, 100, 5000} {
		t.Run(fmt.Sprintf("distinct=%d", distinct), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(distinct), 3))
			var tab shapeTable
			shapeOf := map[uint64]shapeFields{} // number -> shape
			last := map[shapeFields]uint64{}
			again := 0
			for range 20 * distinct {
				r := placement.NodesOf(1+rng.IntN(distinct), 8)
				if rng.IntN(2) == 0 {
					r.Preferred = "leaf"
				}
				sh := shapeFields{req: r, class: rng.IntN(2)}
				j := Job{Class: sh.class, Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: r}}}}
				id := tab.id(shapeHash(&j), &sh)
				if id == 0 {
					t.Fatal("number 0 given")
				}
				if prev, ok := shapeOf[id]; ok && prev != sh {
					t.Fatalf("number %d names %v and %v", id, prev, sh)
				}
				shapeOf[id] = sh
				if last[sh] == id {
					again++
				}
				last[sh] = id
			}
			// With a few requests, one seen again keeps its number; with
			// the table 40% full, nearly always (a full probe window
			// evicts).
			switch repeats := 20*distinct - len(last); {
			case distinct == 10 && again != repeats:
				t.Errorf("%d of %d repeats kept their number", again, repeats)
			case distinct == 100 && again < repeats*99/100:
				t.Errorf("only %d of %d repeats kept their number", again, repeats)
			}
			if distinct > shapeTableCap && len(shapeOf) <= len(last) {
				t.Errorf("%d numbers for %d shapes: nothing was evicted", len(shapeOf), len(last))
			}
		})
	}
}
