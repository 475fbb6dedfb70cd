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

// checkResult verifies a found victim set on the ledger's state: every
// victim preemptible, the preemptor admitted once they are released, and
// no victim unneeded.
func checkResult(t *testing.T, w *testgang.Workload, req *preempt.Preemptor, res *preempt.Verdict) {
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
		r, err := gang.NewAdmitter(st.Cluster(), gang.Options{}).Admit(st, req.Gang, &a)
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
		w := testgang.Build(c, testgang.Config{Gangs: 250, Busy: 1, Classes: 4, Seed: seed})
		s, err := preempt.NewSearcher(c, preempt.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range testgang.Preemptors(c) {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, p.Name), func(t *testing.T) {
				req := &preempt.Preemptor{Gang: p.Gang, Class: 4}
				var res preempt.Verdict
				if err := s.Find(w.Ledger.State(), req, w.Cands, &res); err != nil {
					t.Fatal(err)
				}
				if !res.Found && res.Reason.Code != preempt.SearchBound {
					t.Logf("no victim set: %s", res.Reason)
					return
				}
				checkResult(t, w, req, &res)
				t.Logf("%d victims, cost %d, %d domains, work %d", len(res.Victims), res.Cost, res.Domains, res.Work)
			})
		}
	}
}

// TestFindZeroAllocs guards the hot path: once a searcher and a result
// have seen a search of the same size, Find allocates nothing, whether it
// finds victims, finds that the gang fits, or explains a failure.
func TestFindZeroAllocs(t *testing.T) {
	c := topology.Default2000()
	w := testgang.Build(c, testgang.Config{Gangs: 250, Busy: 1, Classes: 4, Seed: 7})
	s, err := preempt.NewSearcher(c, preempt.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	reqs := map[string]*preempt.Preemptor{"tiny-fits": {Class: 4, Gang: &gang.Spec{ID: "tiny", Members: []gang.Member{{Name: "w", Request: placement.NodesOf(1, 1)}}}}}
	for _, p := range testgang.Preemptors(c) {
		reqs[p.Name] = &preempt.Preemptor{Gang: p.Gang, Class: 4}
	}
	reqs["no-lower-class"] = &preempt.Preemptor{Gang: testgang.Preemptors(c)[1].Gang, Class: 0}
	reqs["class-1"] = &preempt.Preemptor{Gang: testgang.Preemptors(c)[1].Gang, Class: 1} // class-0 victims only
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			var res preempt.Verdict
			if err := s.Find(w.Ledger.State(), req, w.Cands, &res); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(20, func() {
				if err := s.Find(w.Ledger.State(), req, w.Cands, &res); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per search (%s)", allocs, res.Reason)
			}
		})
	}
}
