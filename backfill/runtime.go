package backfill

import (
	"math"
	"time"
)

// runtimeBins is the bin count of a run-time histogram: bin 0 holds runs
// under a minute, bin k in [1, runtimeBins-1) runs of [2^((k-1)/2),
// 2^(k/2)) minutes (half-octave bins, about 40% wide), and the last bin
// every longer run (from about 1.4 years).
const runtimeBins = 42

// runtimes is a histogram of observed run times (of finished jobs), from
// which hold mode estimates when a job without a time limit ends, given
// how long it has run. It keeps no samples, so its size is fixed.
type runtimes struct {
	counts [runtimeBins]uint32
	n      uint32
}

// binOf returns the bin of run time d.
func binOf(d time.Duration) int {
	m := d.Minutes()
	if m < 1 {
		return 0
	}
	k := 1 + int(math.Floor(2*math.Log2(m)))
	return min(k, runtimeBins-1)
}

// binBounds returns bin k's run times [lo, hi), in minutes (hi of the last
// bin: its low bound times 2).
func binBounds(k int) (lo, hi float64) {
	if k == 0 {
		return 0, 1
	}
	lo = math.Exp2(float64(k-1) / 2)
	if k == runtimeBins-1 {
		return lo, 2 * lo
	}
	return lo, math.Exp2(float64(k) / 2)
}

func (h *runtimes) add(d time.Duration) {
	h.counts[binOf(d)]++
	h.n++
}

// residual returns the median remaining run time of a job that has run
// for age, from the runs observed longer than age (mass inside a bin taken
// as spread log-uniformly), or false when none was observed longer.
func (h *runtimes) residual(age time.Duration) (time.Duration, bool) {
	a := age.Minutes()
	k0 := binOf(age)
	lo, hi := binBounds(k0)
	above := func(k int) float64 { // mass of bin k above the age
		if k > k0 {
			return float64(h.counts[k])
		}
		return float64(h.counts[k]) * fractionAbove(a, lo, hi)
	}
	total := 0.0
	for k := k0; k < runtimeBins; k++ {
		total += above(k)
	}
	if total <= 0 {
		return 0, false
	}
	half := total / 2
	for k := k0; k < runtimeBins; k++ {
		m := above(k)
		if m < half {
			half -= m
			continue
		}
		blo, bhi := binBounds(k)
		if k == k0 {
			blo = max(blo, a)
		}
		v := interpolate(blo, bhi, half/m)
		return max(time.Minute, time.Duration((v-a)*float64(time.Minute))), true
	}
	return 0, false // unreachable: the walk covers the whole mass
}

// fractionAbove is the share of [lo, hi) above a, log-uniformly (linearly
// for the first bin, which starts at 0).
func fractionAbove(a, lo, hi float64) float64 {
	switch {
	case a <= lo:
		return 1
	case a >= hi:
		return 0
	case lo <= 0:
		return (hi - a) / hi
	}
	return math.Log(hi/a) / math.Log(hi/lo)
}

// interpolate returns the point of [lo, hi) at fraction f, log-uniformly
// (linearly when lo is 0).
func interpolate(lo, hi, f float64) float64 {
	if lo <= 0 {
		return hi * f
	}
	return lo * math.Pow(hi/lo, f)
}
