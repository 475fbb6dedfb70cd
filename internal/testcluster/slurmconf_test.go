package testcluster

import (
	"testing"
	"testing/fstest"

	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/slurm"
)

// TestFatTreeConf loads the generated topology.conf and compares it with
// the generator's cluster, across the width changes of the names.
func TestFatTreeConf(t *testing.T) {
	for _, f := range []topology.FatTreeConfig{
		{Spines: 2, LeavesPerSpine: 3, NodesPerLeaf: 4, GPUsPerNode: 8},
		{Spines: 3, LeavesPerSpine: 4000, NodesPerLeaf: 9, GPUsPerNode: 8}, // nodes past 99999, leaves past 9999
	} {
		want, err := topology.FatTree(f)
		if err != nil {
			t.Fatal(err)
		}
		fsys := fstest.MapFS{"topology.conf": {Data: []byte(FatTreeConf(f))}}
		got, warnings, err := slurm.LoadConf(fsys, "topology.conf", slurm.Options{DefaultGPUs: f.GPUsPerNode})
		if err != nil || warnings != nil {
			t.Fatalf("%+v: %v %v", f, err, warnings)
		}
		if got.Describe() != want.Describe() {
			t.Errorf("%+v: the loaded cluster differs from FatTree's", f)
		}
	}
}
