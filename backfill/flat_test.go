package backfill

import (
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestFlatCluster: a cluster with no switch levels (nodes only, as a
// Kubernetes cluster without topology labels) is a valid engine input:
// New used to panic on it. Two 8-GPU nodes, jobs of 1, 2, 1 and 2 whole
// nodes in that order: the two one-node jobs start, and the two-node
// jobs get as many reservations as the depth allows, every invariant
// checked after every call.
func TestFlatCluster(t *testing.T) {
	c, err := topology.Build(topology.ClusterSpec{Nodes: []topology.NodeSpec{{Name: "a", GPUs: 8}, {Name: "b", GPUs: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		depth, reserved int
	}{{0, 0}, {1, 1}, {Conservative, 2}} {
		t.Run(fmt.Sprintf("depth=%d", tc.depth), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ReservationDepth = tc.depth
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			e.checkEach = true
			for i, n := range []int{1, 2, 1, 2} {
				j := Job{ID: fmt.Sprintf("j%d", i), Account: "a", Submit: epoch.Add(time.Duration(i) * time.Second), TimeLimit: time.Hour,
					Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(n, 8)}}}}
				if err := e.Submit(j, j.Submit); err != nil {
					t.Fatal(err)
				}
			}
			p, err := e.Schedule(epoch.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			var started []string
			for _, s := range p.Starts {
				started = append(started, s.Job)
			}
			if fmt.Sprint(started) != "[j0 j2]" || len(p.Reservations) != tc.reserved {
				t.Fatalf("started %v with %d reservations, want [j0 j2] with %d", started, len(p.Reservations), tc.reserved)
			}
		})
	}
}
