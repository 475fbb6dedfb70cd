package fairshare

import (
	"fmt"
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
		switch trial % 4 {
		case 1:
			slices.SortFunc(r, func(a, b Ranked) int { return compareRanked(&a, &b) })
		case 2:
			slices.SortFunc(r, func(a, b Ranked) int { return compareRanked(&b, &a) })
		}
		want := slices.Clone(r)
		slices.SortFunc(want, func(a, b Ranked) int { return compareRanked(&a, &b) })
		got := slices.Clone(r)
		sortRanked(got)
		heap := slices.Clone(r)
		heapRanked(heap)
		for name, res := range map[string][]Ranked{"introsort": got, "heapsort": heap} {
			if !slices.EqualFunc(res, want, func(a, b Ranked) bool { return a.Index == b.Index }) {
				t.Fatalf("trial %d (n=%d): %s order differs from slices.SortFunc", trial, n, name)
			}
		}
	}
}
