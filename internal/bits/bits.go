// Package bits holds the word-level bitset helpers shared by Phalanx's
// packages. Every function works on plain []uint64 words (the layout of
// github.com/bits-and-blooms/bitset) over a half-open bit range [lo, hi),
// allocates nothing, and is safe for concurrent use on distinct slices.
//
// It is internal: importers use the topology and placement APIs, which expose
// read-only bitset views.
package bits

import mathbits "math/bits"

// Words returns the number of 64-bit words needed for n bits.
func Words(n int) int { return (n + 63) >> 6 }

// RangeMask returns the mask of the bits of word w that fall in [lo, hi).
func RangeMask(w, lo, hi int) uint64 {
	m := ^uint64(0)
	base := w << 6
	if lo > base {
		m &= ^uint64(0) << uint(lo-base)
	}
	if hi < base+64 {
		m &= ^uint64(0) >> uint(base+64-hi)
	}
	return m
}

// Count returns the number of set bits of a in [lo, hi).
func Count(a []uint64, lo, hi int) int {
	if lo >= hi {
		return 0
	}
	wlo, whi := lo>>6, (hi-1)>>6
	if wlo == whi {
		return mathbits.OnesCount64(a[wlo] & RangeMask(wlo, lo, hi))
	}
	n := mathbits.OnesCount64(a[wlo] & RangeMask(wlo, lo, hi))
	for w := wlo + 1; w < whi; w++ {
		n += mathbits.OnesCount64(a[w])
	}
	return n + mathbits.OnesCount64(a[whi]&RangeMask(whi, lo, hi))
}

// Any reports whether a has a bit set within [lo, hi).
func Any(a []uint64, lo, hi int) bool {
	if lo >= hi {
		return false
	}
	wlo, whi := lo>>6, (hi-1)>>6
	if wlo == whi {
		return a[wlo]&RangeMask(wlo, lo, hi) != 0
	}
	if a[wlo]&RangeMask(wlo, lo, hi) != 0 || a[whi]&RangeMask(whi, lo, hi) != 0 {
		return true
	}
	for w := wlo + 1; w < whi; w++ {
		if a[w] != 0 {
			return true
		}
	}
	return false
}

// AndCount returns the number of bits set in both a and b within [lo, hi).
// A nil b means "all ones".
func AndCount(a, b []uint64, lo, hi int) int {
	if b == nil {
		return Count(a, lo, hi)
	}
	if lo >= hi {
		return 0
	}
	wlo, whi := lo>>6, (hi-1)>>6
	if wlo == whi {
		return mathbits.OnesCount64(a[wlo] & b[wlo] & RangeMask(wlo, lo, hi))
	}
	n := mathbits.OnesCount64(a[wlo] & b[wlo] & RangeMask(wlo, lo, hi))
	for w := wlo + 1; w < whi; w++ {
		n += mathbits.OnesCount64(a[w] & b[w])
	}
	return n + mathbits.OnesCount64(a[whi]&b[whi]&RangeMask(whi, lo, hi))
}

// And writes a AND b into dst for every word (all slices the same length).
// A nil b copies a.
func And(dst, a, b []uint64) {
	if b == nil {
		copy(dst, a)
		return
	}
	for i := range dst {
		dst[i] = a[i] & b[i]
	}
}

// AndNot clears in dst every bit set in b (dst &^= b). A nil b is a no-op.
func AndNot(dst, b []uint64) {
	if b == nil {
		return
	}
	for i := range dst {
		dst[i] &^= b[i]
	}
}

// Next returns the index of the first set bit of a at or after i and before
// hi, or -1 when there is none.
func Next(a []uint64, i, hi int) int {
	if i >= hi {
		return -1
	}
	w := i >> 6
	word := a[w] & (^uint64(0) << uint(i&63))
	last := (hi - 1) >> 6
	for {
		if word != 0 {
			j := w<<6 + mathbits.TrailingZeros64(word)
			if j >= hi {
				return -1
			}
			return j
		}
		w++
		if w > last {
			return -1
		}
		word = a[w]
	}
}

// Test reports whether bit i of a is set.
func Test(a []uint64, i int) bool { return a[i>>6]&(1<<uint(i&63)) != 0 }

// Set sets bit i of a.
func Set(a []uint64, i int) { a[i>>6] |= 1 << uint(i&63) }

// Clear clears bit i of a.
func Clear(a []uint64, i int) { a[i>>6] &^= 1 << uint(i&63) }

// SetRange sets the bits [lo, hi) of a.
func SetRange(a []uint64, lo, hi int) {
	if lo >= hi {
		return
	}
	for w := lo >> 6; w <= (hi-1)>>6; w++ {
		a[w] |= RangeMask(w, lo, hi)
	}
}

// Zero clears every word of a.
func Zero(a []uint64) {
	for i := range a {
		a[i] = 0
	}
}

// Ones returns a mask with the low n bits set (n in [0, 64]).
func Ones(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(n) - 1
}

// LowBits returns the n lowest set bits of m (all of m when it has fewer).
func LowBits(m uint64, n int) uint64 {
	var out uint64
	for ; n > 0 && m != 0; n-- {
		low := m & -m
		out |= low
		m &^= low
	}
	return out
}

// PopCount returns the number of set bits in m.
func PopCount(m uint64) int { return mathbits.OnesCount64(m) }
