package preempt_test

import (
	"fmt"
	"testing"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestPreemptorWithNodeSets: five 8-GPU nodes in one leaf, n4 held by a
// lower-class gang. The preemptor's m0 wants 2 whole nodes among n0-n2 and
// m1 2 nodes x 2 GPUs among n0, n1 and n3: it fits on the idle n0-n3 with
// no victim (m0 on n0 and n2, m1 on n1 and n3). The gang admission's exact
// search took nodes alike for m0 as alike for m1 too, so the search found
// no placement, even with every lower-class gang stopped ("no-victims";
// found by a helper's random oracle).
func TestPreemptorWithNodeSets(t *testing.T) {
	spec := topology.ClusterSpec{Levels: []string{"leaf"}}
	for i := range 5 {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 8, Path: []string{"l0"}})
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	l := gang.NewLedger(c, gang.Options{})
	n4, _ := c.NodeSet("n4")
	if res, err := l.Admit(&gang.Spec{ID: "low", Members: []gang.Member{{Name: "w", Request: placement.Request{Nodes: 1, GPUsPerNode: 8, Allowed: n4}}}}); err != nil || !res.Admitted {
		t.Fatal(err, res)
	}
	low, _ := l.Get("low")
	a0, _ := c.NodeSet("n0", "n1", "n2")
	a1, _ := c.NodeSet("n0", "n1", "n3")
	r0 := placement.WholeNodes(2)
	r0.Allowed = a0
	r1 := placement.NodesOf(2, 2)
	r1.Allowed = a1
	s, err := preempt.NewSearcher(c, preempt.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var v preempt.Verdict
	req := &preempt.Preemptor{Class: 1, Gang: &gang.Spec{ID: "hi", Members: []gang.Member{{Name: "m0", Request: r0}, {Name: "m1", Request: r1}}}}
	cands := []preempt.Candidate{{ID: "low", Alloc: low, Class: 0, Policy: preempt.Requeue, Cost: 1}}
	if err := s.Find(l.State(), req, cands, &v); err != nil {
		t.Fatal(err)
	}
	if !v.Found || len(v.IDs) != 0 {
		t.Fatalf("found %v, victims %v: %s; want found with no victim", v.Found, v.IDs, v.Reason)
	}
}
