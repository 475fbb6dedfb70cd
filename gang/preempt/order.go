package preempt

import (
	"math/bits"
	"slices"
)

// Units are ordered lazily: a scope's bound needs only its cheapest few
// units, and the greedy rarely goes far beyond them, so a scope keeps its
// units sorted up to a point and extends the sorted prefix on demand (a
// selection of the next smallest, then a sort of those).

func unitCmp(a, b unit) int {
	switch {
	case a.cost != b.cost:
		if a.cost < b.cost {
			return -1
		}
		return 1
	case a.bound != b.bound:
		if a.bound < b.bound {
			return -1
		}
		return 1
	case a.tie != b.tie:
		if a.tie < b.tie {
			return -1
		}
		return 1
	}
	return 0
}

// sortPrefix makes units[:want] the want smallest units in order, given
// that units[:have] already are; it returns the new sorted length.
func sortPrefix(units []unit, have, want int) int {
	want = min(want, len(units))
	if want <= have {
		return have
	}
	rest := units[have:]
	if k := want - have; k < len(rest) {
		selectSmallest(rest, k)
		rest = rest[:k]
	}
	slices.SortFunc(rest, unitCmp)
	return want
}

// selectSmallest moves the k smallest units of u to u[:k], in no order
// (quickselect with a median-of-three pivot; after 2 log2(n) rounds the
// remaining range is sorted instead, bounding the worst case).
func selectSmallest(u []unit, k int) {
	lo, hi := 0, len(u) // the k-th smallest is in u[lo:hi]
	for rounds := 2 * bits.Len(uint(len(u))); hi-lo > 16; rounds-- {
		if rounds == 0 {
			slices.SortFunc(u[lo:hi], unitCmp)
			return
		}
		p := partition(u[lo:hi]) + lo
		switch {
		case p == k || p == k-1:
			return
		case p < k:
			lo = p + 1
		default:
			hi = p
		}
	}
	slices.SortFunc(u[lo:hi], unitCmp)
}

// partition partitions u around a median-of-three pivot and returns the
// pivot's final index: smaller units before it, the others after.
func partition(u []unit) int {
	n := len(u)
	a, b, c := 0, n/2, n-1
	if unitCmp(u[b], u[a]) < 0 {
		a, b = b, a
	}
	if unitCmp(u[c], u[b]) < 0 {
		b = c
		if unitCmp(u[b], u[a]) < 0 {
			b = a
		}
	}
	u[b], u[n-1] = u[n-1], u[b]
	pivot := u[n-1]
	i := 0
	for j := range n - 1 {
		if unitCmp(u[j], pivot) < 0 {
			u[i], u[j] = u[j], u[i]
			i++
		}
	}
	u[i], u[n-1] = u[n-1], u[i]
	return i
}
