package placement

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestMergeLeavesMatchesStableSort: mergeLeaves, applied child by child
// as chooseKids does, keeps the same leaves in the same order as a stable
// sort (largest first) of everything merged so far, cut to m: a's leaves
// before b's on ties, the smallest dropped first, the last-merged dropped
// first among equals.
func TestMergeLeavesMatchesStableSort(t *testing.T) {
	p := New(topology.Default2000(), Options{})
	cs := &p.sc.cover
	rng := rand.New(rand.NewPCG(66, 1))
	for trial := range 2000 {
		maxCap := 1 + rng.IntN(6) // few values: many ties
		kids := 1 + rng.IntN(4)
		m := 1 + rng.IntN(cap(cs.merged))
		t.Run(fmt.Sprintf("trial=%d", trial), func(t *testing.T) {
			merged := cs.merged[:0]
			var all []leafRef
			leaf := int32(0)
			for range kids {
				b := make([]leafRef, rng.IntN(6))
				for i := range b {
					b[i] = leafRef{cap: int32(1 + rng.IntN(maxCap)), leaf: leaf}
					leaf++
				}
				slices.SortStableFunc(b, func(x, y leafRef) int { return cmp.Compare(y.cap, x.cap) })
				all = append(all, b...)
				merged = p.mergeLeaves(merged, b, m)
				want := slices.Clone(all)
				slices.SortStableFunc(want, func(x, y leafRef) int { return cmp.Compare(y.cap, x.cap) })
				want = want[:min(m, len(want))]
				if !slices.Equal(merged, want) {
					t.Fatalf("m=%d: merged %v, want %v", m, merged, want)
				}
			}
		})
	}
}
