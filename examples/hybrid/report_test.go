package main

import (
	"testing"
	"time"
)

// TestPercentileNearestRank: the p95 the table prints is the nearest-rank
// one the simulator's tables use (the ceil(0.95 n)-th smallest wait):
// of 20 waits of 1 to 20 minutes, the 19th, where the index p n read the
// 20th (the largest) whenever 0.95 n was a whole number.
func TestPercentileNearestRank(t *testing.T) {
	waits := func(n int) []time.Duration {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[n-1-i] = time.Duration(i+1) * time.Minute // unsorted on purpose
		}
		return ds
	}
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 0.95, 0},
		{"one", waits(1), 0.95, time.Minute},
		{"p95 of 20 is the 19th", waits(20), 0.95, 19 * time.Minute},
		{"p95 of 21 is the 20th", waits(21), 0.95, 20 * time.Minute},
		{"p95 of 100 is the 95th", waits(100), 0.95, 95 * time.Minute},
		{"p100 is the largest", waits(7), 1, 7 * time.Minute},
		{"p0 is the smallest", waits(7), 0, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.ds, tc.p); got != tc.want {
				t.Fatalf("percentile(%d waits, %g) = %v; want %v", len(tc.ds), tc.p, got, tc.want)
			}
		})
	}
}
