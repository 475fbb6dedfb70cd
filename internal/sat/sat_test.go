package sat

import (
	"math"
	"testing"
)

func TestSaturates(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"mul", Mul(6, 7), 42},
		{"mul by zero", Mul(math.MaxInt, 0), 0},
		{"mul overflows", Mul(math.MaxInt/8+1, 8), math.MaxInt},
		{"add", Add(40, 2), 42},
		{"add at the bound", Add(math.MaxInt-1, 1), math.MaxInt},
		{"add overflows", Add(math.MaxInt, 1), math.MaxInt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %d, want %d", tc.got, tc.want)
			}
		})
	}
}
