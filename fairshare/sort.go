package fairshare

import (
	"cmp"
	"math/bits"
	"strings"
)

// The queue is sorted in place by a small introsort that compares
// elements through pointers: slices.SortFunc passes its comparator the
// 170-byte Ranked values by copy, which made sorting 10,000 jobs twice as
// slow, and sorting compact keys instead would need scratch space that an
// immutable, shared View cannot hold. The same code sorts View.Rank's
// 40-byte RankEntry values. Both orders are total (Index is unique), so
// there are no equal elements to handle.

// rankKey is an element type the sort takes: Ranked or RankEntry, each
// ordered by a method on pointers (priority high first, then submit time,
// ID, index), called through the type parameter.
type rankKey[T any] interface {
	*T
	before(*T) bool
}

// compareKeys orders by priority (high first), submit time, ID, index.
func compareKeys(ap, bp uint64, as, bs int64, aid, bid string, ai, bi int) int {
	if ap != bp {
		return cmp.Compare(bp, ap)
	}
	if as != bs {
		return cmp.Compare(as, bs)
	}
	if c := strings.Compare(aid, bid); c != 0 {
		return c
	}
	return cmp.Compare(ai, bi)
}

// compareRanked orders Ranked values by compareKeys.
func compareRanked(a, b *Ranked) int {
	return compareKeys(a.Priority, b.Priority, a.submit, b.submit, a.ID, b.ID, a.Index, b.Index)
}

func (a *Ranked) before(b *Ranked) bool { return compareRanked(a, b) < 0 }

// compareEntries orders RankEntry values by compareKeys.
func compareEntries(a, b *RankEntry) int {
	return compareKeys(a.Priority, b.Priority, a.submit, b.submit, a.id, b.id, a.Index, b.Index)
}

// before is compareEntries(a, b) < 0, deciding the common cases (a
// different priority or submit time) itself.
func (a *RankEntry) before(b *RankEntry) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if a.submit != b.submit {
		return a.submit < b.submit
	}
	return compareEntries(a, b) < 0
}

// rankedLess reports whether r[i] goes before r[j].
func rankedLess[T any, P rankKey[T]](r []T, i, j int) bool { return P(&r[i]).before(&r[j]) }

// sortRanked sorts r by its elements' order without allocating, in
// O(n log n) time even in the worst case. Input that is nearly in order
// (a scheduler passing the jobs in its previous ranking, a few new jobs at
// the end and a few moved by changed fair shares) costs O(n + moves): an
// insertion pass runs first and hands over to the introsort once it has
// moved more than about 8n elements, or met more out-of-order elements
// than a nearly sorted input has (more than one in 8 of those seen, past
// the first 16: on a random order it stops within the first few dozen).
func sortRanked[T any, P rankKey[T]](r []T) {
	if insertRanked[T, P](r, 8*len(r)+64, 16) {
		return
	}
	quickRanked[T, P](r, 2*bits.Len(uint(len(r))))
}

// insertRanked insertion-sorts r, finding each out-of-order element's
// place by binary search, and reports whether it finished: it gives up
// past budget element moves, or when the out-of-order elements among the
// first i exceed i/8 + slack. When it gives up, r is a permutation of its
// input.
func insertRanked[T any, P rankKey[T]](r []T, budget, slack int) bool {
	descents := 0
	for i := 1; i < len(r); i++ {
		if !rankedLess[T, P](r, i, i-1) {
			continue
		}
		if descents++; descents > i/8+slack {
			return false
		}
		// r[:i] is sorted and r[i] goes before r[i-1]: find the first
		// element it goes before.
		lo, hi := 0, i-1
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if rankedLess[T, P](r, i, m) {
				hi = m
			} else {
				lo = m + 1
			}
		}
		if budget -= i - lo; budget < 0 {
			return false
		}
		x := r[i]
		copy(r[lo+1:i+1], r[lo:i])
		r[lo] = x
	}
	return true
}

// insertionMax is the length below which insertion sort takes over.
const insertionMax = 12

// quickRanked quicksorts r, recursing into the smaller part and looping on
// the larger, and falls back to heapsort after depth levels.
func quickRanked[T any, P rankKey[T]](r []T, depth int) {
	for len(r) > insertionMax {
		if depth == 0 {
			heapRanked[T, P](r)
			return
		}
		depth--
		p := partitionRanked[T, P](r)
		if p < len(r)-p {
			quickRanked[T, P](r[:p], depth)
			r = r[p+1:]
		} else {
			quickRanked[T, P](r[p+1:], depth)
			r = r[:p]
		}
	}
	insertRanked[T, P](r, len(r)*len(r), len(r)) // limits it cannot reach
}

// partitionRanked puts the median of the first, middle and last elements
// at its final position p, smaller elements before it and larger after,
// and returns p. len(r) > insertionMax.
func partitionRanked[T any, P rankKey[T]](r []T) int {
	n := len(r)
	m := n / 2
	if n >= ninther {
		// Tukey's ninther: the median of the medians of three spread
		// triples goes to r[m]. A queue passed in the last ranking is
		// made of long sorted runs, on which the three-element median
		// alone picks lopsided pivots.
		s := n / 8
		median3[T, P](r, 1, s, 2*s)
		median3[T, P](r, m-s, m, m+s)
		median3[T, P](r, n-1-2*s, n-1-s, n-2)
		median3[T, P](r, s, m, n-1-s)
	}
	// Order r[0] <= r[m] <= r[n-1], then take the median r[m] as the
	// pivot into r[0]; the old r[0] (smaller) and r[n-1] (larger) bound
	// the scans.
	if rankedLess[T, P](r, m, 0) {
		r[0], r[m] = r[m], r[0]
	}
	if rankedLess[T, P](r, n-1, m) {
		r[m], r[n-1] = r[n-1], r[m]
		if rankedLess[T, P](r, m, 0) {
			r[0], r[m] = r[m], r[0]
		}
	}
	r[0], r[m] = r[m], r[0]
	i, j := 1, n-1
	for {
		for i <= j && rankedLess[T, P](r, i, 0) {
			i++
		}
		for i <= j && rankedLess[T, P](r, 0, j) {
			j--
		}
		if i >= j {
			break
		}
		r[i], r[j] = r[j], r[i]
		i++
		j--
	}
	r[0], r[j] = r[j], r[0]
	return j
}

// ninther is the length from which partitionRanked takes the pivot from
// nine elements rather than three.
const ninther = 64

// median3 moves the median of r[a], r[b] and r[c] to r[b].
func median3[T any, P rankKey[T]](r []T, a, b, c int) {
	if rankedLess[T, P](r, b, a) {
		r[a], r[b] = r[b], r[a]
	}
	if rankedLess[T, P](r, c, b) {
		r[b], r[c] = r[c], r[b]
		if rankedLess[T, P](r, b, a) {
			r[a], r[b] = r[b], r[a]
		}
	}
}

// heapRanked heapsorts r.
func heapRanked[T any, P rankKey[T]](r []T) {
	n := len(r)
	for i := n/2 - 1; i >= 0; i-- {
		siftRanked[T, P](r, i, n)
	}
	for end := n - 1; end > 0; end-- {
		r[0], r[end] = r[end], r[0]
		siftRanked[T, P](r, 0, end)
	}
}

// siftRanked restores the max-heap property of r[:n] below index i.
func siftRanked[T any, P rankKey[T]](r []T, i, n int) {
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && rankedLess[T, P](r, c, c+1) {
			c++
		}
		if !rankedLess[T, P](r, i, c) {
			return
		}
		r[i], r[c] = r[c], r[i]
		i = c
	}
}
