package main

import (
	"strings"
	"testing"
)

// TestConfig: -nodes gives a valid fat tree or an error naming it, never a
// panic (a negative count divided by zero spines, or made a slice of
// negative capacity).
func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		name   string
		nodes  int
		spines int
		err    string
	}{
		{"one leaf", 25, 1, ""},
		{"a thousand leaves", 25_000, 1, ""},
		{"two spines", 50_000, 2, ""},
		{"zero", 0, 0, "-nodes 0 is not a positive multiple of 25"},
		{"not a multiple", 30, 0, "-nodes 30 is not a positive multiple of 25"},
		{"minus one leaf", -25, 0, "-nodes -25 is not a positive multiple of 25"},
		{"minus a thousand leaves", -25_000, 0, "-nodes -25000 is not a positive multiple of 25"},
		{"minus two thousand leaves", -50_000, 0, "-nodes -50000 is not a positive multiple of 25"},
		{"unequal spines", 25 * 1001, 0, "does not split into equal spines"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config(tt.nodes)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("config(%d) = %+v, %v; want an error with %q", tt.nodes, f, err, tt.err)
				}
				return
			}
			if err != nil || f.Spines != tt.spines || f.Spines*f.LeavesPerSpine*f.NodesPerLeaf != tt.nodes || f.Validate() != nil {
				t.Fatalf("config(%d) = %+v, %v; want %d spines", tt.nodes, f, err, tt.spines)
			}
		})
	}
}
