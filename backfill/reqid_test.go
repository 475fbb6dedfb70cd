package backfill

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestReqTable checks the request numbering the same-shape failure cache
// relies on: equal numbers only for equal requests, whatever the table
// evicts (far more distinct requests than slots), and the same number for
// a request seen again while it is in the table.
func TestReqTable(t *testing.T) {
	for _, distinct := range []int{10, 300, 5000} {
		t.Run(fmt.Sprintf("distinct=%d", distinct), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(distinct), 3))
			var tab reqTable
			reqOf := map[uint64]placement.Request{} // number -> request
			last := map[placement.Request]uint64{}
			again := 0
			for range 20 * distinct {
				r := placement.NodesOf(1+rng.IntN(distinct), 8)
				if rng.IntN(2) == 0 {
					r.Preferred = "leaf"
				}
				j := Job{Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: r}}}}
				id := tab.id(shapeHash(&j), &r)
				if id == 0 {
					t.Fatal("number 0 given")
				}
				if prev, ok := reqOf[id]; ok && prev != r {
					t.Fatalf("number %d names %v and %v", id, prev, r)
				}
				reqOf[id] = r
				if last[r] == id {
					again++
				}
				last[r] = id
			}
			// With a few requests, one seen again keeps its number; with
			// the table 60% full, nearly always (a full probe window
			// evicts).
			switch repeats := 20*distinct - len(last); {
			case distinct == 10 && again != repeats:
				t.Errorf("%d of %d repeats kept their number", again, repeats)
			case distinct == 300 && again < repeats*99/100:
				t.Errorf("only %d of %d repeats kept their number", again, repeats)
			}
			if distinct > reqTableCap && len(reqOf) <= len(last) {
				t.Errorf("%d numbers for %d requests: nothing was evicted", len(reqOf), len(last))
			}
		})
	}
}
