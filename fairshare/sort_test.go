package fairshare

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortRankedOracle checks the in-place introsort against
// slices.SortFunc on random queues with many ties in priority, submit time
// and ID, including already sorted, reversed and tiny inputs, and with the
// heapsort fallback forced.
func TestSortRankedOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 300 {
		n := rng.IntN(400)
		if trial < 20 {
			n = trial
		}
		r := make([]Ranked, n)
		spread := 1 + rng.IntN(20)
		for i := range r {
			r[i] = Ranked{
				Index:    i,
				ID:       fmt.Sprintf("j%d", rng.IntN(spread)),
				Priority: uint64(rng.IntN(spread)),
				submit:   int64(rng.IntN(spread)),
			}
		}
		switch trial % 5 {
		case 1:
			slices.SortFunc(r, func(a, b Ranked) int { return compareRanked(&a, &b) })
		case 2:
			slices.SortFunc(r, func(a, b Ranked) int { return compareRanked(&b, &a) })
		case 3:
			// Nearly sorted: a few elements moved, as when a scheduler
			// passes its previous ranking (the insertion pass finishes).
			slices.SortFunc(r, func(a, b Ranked) int { return compareRanked(&a, &b) })
			for range 1 + rng.IntN(4) {
				if n > 1 {
					i, j := rng.IntN(n), rng.IntN(n)
					r[i], r[j] = r[j], r[i]
				}
			}
		}
		want := slices.Clone(r)
		slices.SortFunc(want, func(a, b Ranked) int { return compareRanked(&a, &b) })
		got := slices.Clone(r)
		sortRanked(got)
		heap := slices.Clone(r)
		heapRanked(heap)
		ins := slices.Clone(r)
		if !insertRanked(ins, n*n, n) {
			t.Fatalf("trial %d (n=%d): insertion gave up with a budget of n*n moves", trial, n)
		}
		// A pass that gives up leaves a permutation for the introsort.
		partial := slices.Clone(r)
		if !insertRanked(partial, n/4, 16) {
			quickRanked(partial, 2*bits.Len(uint(n)))
		}
		for name, res := range map[string][]Ranked{"introsort": got, "heapsort": heap, "insertion": ins, "insertion then introsort": partial} {
			if !slices.EqualFunc(res, want, func(a, b Ranked) bool { return a.Index == b.Index }) {
				t.Fatalf("trial %d (n=%d): %s order differs from slices.SortFunc", trial, n, name)
			}
		}
	}
}
