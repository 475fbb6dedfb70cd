package topology

import (
	"errors"
	"strings"
	"testing"
)

// TestGeneratorLimits checks that FatTreeConfig.Validate and NVL72 refuse
// shapes whose node count is above MaxGeneratedNodes, however large the
// factors (their product may overflow an int), with an error naming the
// fields, and that FatTree then returns that error instead of panicking.
func TestGeneratorLimits(t *testing.T) {
	tests := []struct {
		name string
		f    FatTreeConfig
		err  error  // nil: valid
		want string // fragment of the error
	}{
		{"product overflows", FatTreeConfig{Spines: 1 << 62, LeavesPerSpine: 2, NodesPerLeaf: 1, GPUsPerNode: 8}, ErrInvalidSpec, "Spines x LeavesPerSpine x NodesPerLeaf"},
		{"product wraps to a small number", FatTreeConfig{Spines: 1 << 32, LeavesPerSpine: 1 << 32, NodesPerLeaf: 1, GPUsPerNode: 8}, ErrInvalidSpec, "Spines x LeavesPerSpine x NodesPerLeaf"},
		{"one factor too large", FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: MaxGeneratedNodes + 1, GPUsPerNode: 8}, ErrInvalidSpec, "16777217 nodes, more than MaxGeneratedNodes (16777216)"},
		{"just too many", FatTreeConfig{Spines: 1 << 12, LeavesPerSpine: 1 << 12, NodesPerLeaf: 2, GPUsPerNode: 8}, ErrInvalidSpec, "33554432 nodes"},
		{"at the limit", FatTreeConfig{Spines: 1 << 12, LeavesPerSpine: 1 << 12, NodesPerLeaf: 1, GPUsPerNode: 64}, nil, ""},
		{"zero count", FatTreeConfig{Spines: 0, LeavesPerSpine: 2, NodesPerLeaf: 1, GPUsPerNode: 8}, ErrInvalidSpec, "counts must be positive"},
		{"bad GPUs", FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 1, GPUsPerNode: 65}, ErrGPUCount, "GPUsPerNode 65"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Validate()
			if tt.err == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v, want %v containing %q", err, tt.err, tt.want)
			}
			c, err2 := FatTree(tt.f)
			if c != nil || err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("FatTree: %v, %v; want the error of Validate", c, err2)
			}
		})
	}
	for _, tt := range []struct {
		name string
		n    NVL72Config
	}{
		{"product overflows", NVL72Config{Racks: 1 << 62, NodesPerRack: 4, GPUsPerNode: 4, RacksPerSpine: 1}},
		{"just too many", NVL72Config{Racks: MaxGeneratedNodes/18 + 1, NodesPerRack: 18, GPUsPerNode: 4, RacksPerSpine: 4}},
	} {
		t.Run("NVL72 "+tt.name, func(t *testing.T) {
			c, err := NVL72(tt.n)
			if c != nil || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "Racks x NodesPerRack") {
				t.Fatalf("NVL72: %v, %v", c, err)
			}
		})
	}
}
