package main

import (
	"slices"
	"strings"
	"testing"
)

// TestParseName: a benchmark's name loses its GOMAXPROCS suffix, and
// only that: go test adds none when GOMAXPROCS is 1, and names hold
// hyphens of their own (leaf-pack, place-8gpus).
func TestParseName(t *testing.T) {
	for _, tt := range []struct {
		name, line, bench string
		parts             []string
	}{
		{"suffix", "BenchmarkFoo/placement=leaf-pack-2 100 5 ns/op", "Foo", []string{"placement=leaf-pack"}},
		{"no suffix", "BenchmarkFoo/placement=leaf-pack 100 5 ns/op", "Foo", []string{"placement=leaf-pack"}},
		{"hyphen before a part, no suffix", "BenchmarkScaling/op=place-8gpus/nodes=250 100 5 ns/op", "Scaling", []string{"op=place-8gpus", "nodes=250"}},
		{"hyphen before a part", "BenchmarkScaling/op=place-8gpus/nodes=250-16 100 5 ns/op", "Scaling", []string{"op=place-8gpus", "nodes=250"}},
		{"top level", "BenchmarkFoo-2 100 5 ns/op", "Foo", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := parse(strings.NewReader(tt.line))
			if err != nil || len(rs) != 1 {
				t.Fatalf("parse = %+v, %v", rs, err)
			}
			if rs[0].bench != tt.bench || !slices.Equal(rs[0].parts, tt.parts) {
				t.Fatalf("parsed %q %q, want %q %q", rs[0].bench, rs[0].parts, tt.bench, tt.parts)
			}
		})
	}
}

// TestPlaceTable: Place lines with fewer name parts than inv, state and
// request (another version of the suite) make rows, not a panic.
func TestPlaceTable(t *testing.T) {
	for _, tt := range []struct {
		name, input, want string
	}{
		{"whole name", "BenchmarkPlace/inv=2k/state=empty/req=8gpus-2 100 300 ns/op 1 leaves/op 1 placed", "| 2k | req=8gpus | 300 ns (1 leaves) |"},
		{"no request", "BenchmarkPlace/inv=2k/state=empty-2 100 300 ns/op 1 leaves/op 1 placed", "| 2k |  | 300 ns (1 leaves) |"},
		{"no parts", "BenchmarkPlace-2 100 300 ns/op", "|  |  | 300 ns (no fit) |"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := parse(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			write(&b, rs)
			if !strings.Contains(b.String(), tt.want) {
				t.Fatalf("table lacks %q:\n%s", tt.want, b.String())
			}
		})
	}
}
