package backfill

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestSubmitSegmentsNeverFits: a gang with a member asking for segments
// that no packing fits on the empty cluster is refused with ErrNeverFits.
// The cluster has two spines of one leaf each, an 8-GPU and a 4-GPU node
// per leaf. m0 (2 nodes x 4 GPUs, one segment of 2 inside a leaf) takes
// half of an 8-GPU node whichever leaf it uses, so m1 (2 nodes x 8 GPUs)
// never finds both 8-GPU nodes free. The admitter gave a member with
// segments only the placer's answer and never proved such a refusal:
// Submit accepted the job, which waited forever. A gang that fits is
// still accepted.
func TestSubmitSegmentsNeverFits(t *testing.T) {
	spec := topology.ClusterSpec{Levels: []string{"spine", "leaf"}}
	for i, n := range []struct {
		gpus        int
		spine, leaf string
	}{{8, "s0", "l0"}, {4, "s0", "l0"}, {8, "s1", "l1"}, {4, "s1", "l1"}} {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%02d", i), GPUs: n.gpus, Path: []string{n.spine, n.leaf}})
	}
	c, err := topology.Build(spec)
	require.NoError(t, err)
	segs := placement.NodesOf(2, 4)
	segs.SegmentSize = 2
	gangOf := func(reqs ...placement.Request) gang.Spec {
		var g gang.Spec
		for i, r := range reqs {
			g.Members = append(g.Members, gang.Member{Name: fmt.Sprintf("m%d", i), Request: r})
		}
		return g
	}
	tests := []struct {
		name string
		gang gang.Spec
		want error // nil: accepted
	}{
		{"segments leave no two 8-GPU nodes", gangOf(segs, placement.NodesOf(2, 8)), ErrNeverFits},
		{"segments and one 8-GPU node fit", gangOf(segs, placement.NodesOf(1, 8)), nil},
	}
	cfg := DefaultConfig()
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := Job{ID: fmt.Sprintf("j%d", i), Account: "a", TimeLimit: time.Hour, Gang: tt.gang}
			err := e.Submit(j, epoch)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Submit = %v; want %v", err, tt.want)
			}
		})
	}
}
