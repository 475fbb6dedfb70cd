package fairshare

import (
	"testing"
	"time"
)

// TestDecayedSecondsNonPositiveHalfLife: a half-life of zero or below
// (the negative ones Config.Validate refuses) means no decay: one GPU
// used for d counts d's seconds, never more, and nothing for d <= 0.
// Before, a negative half-life grew the usage exponentially (an hour at
// a half-life of -1h counted 5193.70 seconds, not 3600).
func TestDecayedSecondsNonPositiveHalfLife(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d, hl    time.Duration
		wantSecs float64
	}{
		{"zero half-life", time.Hour, 0, 3600},
		{"half-life -1h", time.Hour, -time.Hour, 3600},
		{"half-life -1ns, a day", 24 * time.Hour, -1, 86400},
		{"half-life -1h, d zero", 0, -time.Hour, 0},
		{"half-life -1h, d negative", -time.Minute, -time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecayedSeconds(tc.d, tc.hl); got != tc.wantSecs {
				t.Errorf("DecayedSeconds(%v, %v) = %v, want %v", tc.d, tc.hl, got, tc.wantSecs)
			}
		})
	}
}
