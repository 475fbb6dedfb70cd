package fairshare

import (
	"errors"
	"math"
	"testing"
	"time"
)

// TestBadTimeBoundaries: the instants accepted are exactly those int64
// nanoseconds since 1970 hold, as ErrBadTime's doc states:
// 1677-09-21 00:12:43.145224192 UTC and 2262-04-11 23:47:16.854775807
// UTC are accepted, a nanosecond beyond either is refused. (The doc
// said "the years 1678 to 2262", though most of 1677-09-21 on is
// accepted and most of 2262 is not.)
func TestBadTimeBoundaries(t *testing.T) {
	earliest := time.Date(1677, 9, 21, 0, 12, 43, 145224192, time.UTC)
	latest := time.Date(2262, 4, 11, 23, 47, 16, 854775807, time.UTC)
	if !earliest.Equal(time.Unix(0, math.MinInt64)) || !latest.Equal(time.Unix(0, math.MaxInt64)) {
		t.Fatalf("documented bounds %v, %v are not int64 nanoseconds' %v, %v",
			earliest, latest, time.Unix(0, math.MinInt64).UTC(), time.Unix(0, math.MaxInt64).UTC())
	}
	for _, tc := range []struct {
		name string
		at   time.Time
		ok   bool
	}{
		{"earliest", earliest, true},
		{"a nanosecond before the earliest", earliest.Add(-1), false},
		{"1677-12-31", time.Date(1677, 12, 31, 0, 0, 0, 0, time.UTC), true},
		{"latest", latest, true},
		{"a nanosecond after the latest", latest.Add(1), false},
		{"2262-12-31", time.Date(2262, 12, 31, 0, 0, 0, 0, time.UTC), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := flatTree(t, DefaultConfig())
			err := tr.Charge("a", 1, tc.at)
			if tc.ok && err != nil {
				t.Errorf("Charge at %v: %v, want accepted", tc.at, err)
			}
			if !tc.ok && !errors.Is(err, ErrBadTime) {
				t.Errorf("Charge at %v: err = %v, want ErrBadTime", tc.at, err)
			}
			_, err = tr.View(tc.at, nil)
			if tc.ok && err != nil {
				t.Errorf("View at %v: %v, want accepted", tc.at, err)
			}
			if !tc.ok && !errors.Is(err, ErrBadTime) {
				t.Errorf("View at %v: err = %v, want ErrBadTime", tc.at, err)
			}
		})
	}
}
