package slurm

import (
	"maps"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestReadSlurmConfNodesDefaults checks that NodeName=DEFAULT lines merge
// as in Slurm: a later DEFAULT line without Gres= keeps the GPU count of
// an earlier one, and one with Gres= replaces it.
func TestReadSlurmConfNodesDefaults(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want map[string]int
	}{
		{"second default without gres keeps the count",
			"NodeName=DEFAULT Gres=gpu:4\nNodeName=DEFAULT CPUs=64\nNodeName=n[1-2]\n",
			map[string]int{"n1": 4, "n2": 4}},
		{"second default with gres replaces the count",
			"NodeName=DEFAULT Gres=gpu:4\nNodeName=n1\nNodeName=DEFAULT Gres=gpu:h100:8\nNodeName=n2\n",
			map[string]int{"n1": 4, "n2": 8}},
		{"default without gpus in its gres clears the count",
			"NodeName=DEFAULT Gres=gpu:4\nNodeName=DEFAULT Gres=shard:2\nNodeName=n1\n",
			map[string]int{}},
		{"a node's own gres wins over the default",
			"NodeName=DEFAULT Gres=gpu:4\nNodeName=DEFAULT CPUs=64\nNodeName=n1 Gres=gpu:2\nNodeName=n2\n",
			map[string]int{"n1": 2, "n2": 4}},
		{"no default", "NodeName=DEFAULT CPUs=64\nNodeName=n1\n", map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadSlurmConfNodes(memFS("slurm.conf", tt.conf), "slurm.conf")
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.GPUs, tt.want) {
				t.Errorf("GPUs %v, want %v", got.GPUs, tt.want)
			}
		})
	}
}

// TestReadSlurmConfNodesGresCounts checks the GPU count of each form of a
// Gres=gpu entry, as Slurm's gres.c counts it: a name alone or a name and
// a type without a count is one GPU.
func TestReadSlurmConfNodesGresCounts(t *testing.T) {
	tests := []struct {
		gres string
		want int // 0: the node has no entry in GPUs
	}{
		{"gpu", 1},
		{"gpu:a100", 1},
		{"gpu:a100(S:0)", 1},
		{"gpu:4", 4},
		{"gpu:a100:4", 4},
		{"gpu:8(S:0-1)", 8},
		{"gpu:a100:4,gpu:h100:4", 8},
		{"gpu:many", 1}, // a type called "many"
		{"gpu,gpu:a100", 2},
		{"gpu:a100,gpu:h100:2", 3},
		{"gpu:0", 0},
		{"shard:8", 0},
		{"gpus:4", 0}, // another GRES name
	}
	for _, tt := range tests {
		t.Run(tt.gres, func(t *testing.T) {
			got, err := ReadSlurmConfNodes(memFS("slurm.conf", "NodeName=n1 Gres="+tt.gres+"\n"), "slurm.conf")
			if err != nil {
				t.Fatal(err)
			}
			if g, ok := got.GPUs["n1"]; g != tt.want || ok != (tt.want > 0) {
				t.Errorf("Gres=%s: n1 has %d GPUs (listed %v), want %d", tt.gres, g, ok, tt.want)
			}
		})
	}
	// A count (a last field starting with a digit) that is not a whole
	// number stays a defect.
	for _, gres := range []string{"gpu:4x", "gpu:a100:1.5", "gpu:99999999999999999999"} {
		t.Run("bad "+gres, func(t *testing.T) {
			_, err := ReadSlurmConfNodes(memFS("slurm.conf", "ClusterName=c\nNodeName=n1 Gres="+gres+"\n"), "slurm.conf")
			checkDefects(t, err, 1, topology.ErrGPUCount, "slurm.conf:2:", "Gres="+gres)
		})
	}
}
