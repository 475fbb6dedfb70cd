package preempt_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/internal/testgang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// preemptors are the preemptor shapes of the large tests and benchmarks
// for a cluster: a whole lowest-level domain (required), whole nodes
// without constraints, a required spine, a GPU total, segments, and a
// two-member gang.
func preemptors(c *topology.Cluster) []struct {
	name string
	g    *gang.Spec
} {
	leafNodes := 0
	first, end := c.DomainRange(c.Depth()-1, 0)
	leafNodes = end - first
	gpn := c.MaxNodeGPUs()
	one := func(r placement.Request) *gang.Spec {
		return &gang.Spec{ID: "urgent", Members: []gang.Member{{Name: "w", Request: r}}}
	}
	return []struct {
		name string
		g    *gang.Spec
	}{
		{fmt.Sprintf("leaf-%dx%d-required", leafNodes, gpn), one(placement.Request{Nodes: leafNodes, GPUsPerNode: gpn, Required: c.LevelName(c.Depth() - 1)})},
		{fmt.Sprintf("4x%d", gpn), one(placement.NodesOf(4, gpn))},
		{fmt.Sprintf("32x%d-required-%s", gpn, c.LevelName(1)), one(placement.Request{Nodes: 32, GPUsPerNode: gpn, Required: c.LevelName(1)})},
		{"gpus=64", one(placement.TotalGPUs(64))},
		{fmt.Sprintf("8x%d-segments-4", gpn), one(placement.Request{Nodes: 8, GPUsPerNode: gpn, SegmentSize: 4})},
		{"two-members", &gang.Spec{ID: "urgent", Members: []gang.Member{
			{Name: "launcher", Request: placement.NodesOf(1, 1)},
			{Name: "workers", Request: placement.Request{Nodes: 8, GPUsPerNode: gpn, Required: c.LevelName(c.Depth() - 1)}},
		}}},
	}
}

// checkResult verifies a found victim set on the ledger's state: every
// victim preemptible, the preemptor admitted once they are released, and
// no victim unneeded.
func checkResult(t *testing.T, w *testgang.Workload, req *preempt.Request, res *preempt.Result) {
	t.Helper()
	if !res.Found {
		t.Fatalf("no victims: %s", res.Reason)
	}
	fits := func(victims []int) bool {
		st := w.Ledger.State().Clone()
		for _, v := range victims {
			for _, m := range w.Cands[v].Alloc.Members {
				if err := st.Release(m.Assignment); err != nil {
					t.Fatal(err)
				}
			}
		}
		var a gang.Allocation
		r, err := gang.NewAdmitter(st.Cluster()).Admit(st, req.Gang, &a)
		if err != nil {
			t.Fatal(err)
		}
		return r.Admitted
	}
	for _, v := range res.Victims {
		if !w.Cands[v].Preemptible(req.Class) {
			t.Fatalf("victim %s is not preemptible", w.Cands[v].ID)
		}
	}
	if !fits(res.Victims) {
		t.Fatalf("victims %v do not make room", res.IDs)
	}
	for k := range res.Victims {
		if fits(slices.Delete(slices.Clone(res.Victims), k, k+1)) {
			t.Fatalf("victim %s is not needed", res.IDs[k])
		}
	}
}

// TestLarge runs the preemptor shapes on the default cluster with 250
// running gangs (several seeds) and checks every answer: found, feasible,
// minimal, within the work bound.
func TestLarge(t *testing.T) {
	c := topology.Default2000()
	for seed := range uint64(5) {
		w := testgang.Build(c, testgang.Config{Gangs: 250, Classes: 4, Seed: seed})
		s, err := preempt.NewSearcher(c, preempt.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range preemptors(c) {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, p.name), func(t *testing.T) {
				req := &preempt.Request{Gang: p.g, Class: 4}
				var res preempt.Result
				if err := s.Find(w.Ledger.State(), req, w.Cands, &res); err != nil {
					t.Fatal(err)
				}
				checkResult(t, w, req, &res)
				t.Logf("%d victims, cost %d, %d domains, work %d", len(res.Victims), res.Cost, res.Domains, res.Work)
			})
		}
	}
}
