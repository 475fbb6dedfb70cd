package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestStreamSeeds: -seeds below 1 is an error naming it, not an empty
// table.
func TestStreamSeeds(t *testing.T) {
	for _, seeds := range []int{0, -3} {
		t.Run(fmt.Sprint(seeds), func(t *testing.T) {
			var b strings.Builder
			err := stream(&b, seeds)
			if want := fmt.Sprintf("-seeds %d: want at least 1", seeds); err == nil || err.Error() != want {
				t.Fatalf("stream = %v, want %q; output %q", err, want, b.String())
			}
		})
	}
}
