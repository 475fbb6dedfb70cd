package testgang

import (
	"testing"

	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestBuild checks that a workload has the gangs asked for, fills the
// cluster about as asked, keeps consistent books, and is the same for the
// same seed.
func TestBuild(t *testing.T) {
	c := topology.Default2000()
	w := Build(c, Config{Gangs: 250, Busy: 1, Classes: 4, Seed: 3})
	if len(w.Cands) != 250 || w.Ledger.Len() != 250 {
		t.Fatalf("%d candidates, %d gangs, want 250", len(w.Cands), w.Ledger.Len())
	}
	if err := access.CheckLedger(w.Ledger); err != nil {
		t.Fatal(err)
	}
	if busy := float64(w.Ledger.State().UsedGPUs()) / float64(c.TotalGPUs()); busy < 0.9 {
		t.Fatalf("%.2f of the GPUs busy, want about all", busy)
	}
	classes := map[int]int{}
	for _, cd := range w.Cands {
		a, ok := w.Ledger.Get(cd.ID)
		if !ok || a != cd.Alloc || cd.Cost < 0 || cd.Class < 0 || cd.Class > 3 {
			t.Fatalf("candidate %+v", cd)
		}
		classes[cd.Class]++
	}
	if classes[0] < classes[3] {
		t.Fatalf("classes %v: class 0 should be the most common", classes)
	}
	again := Build(c, Config{Gangs: 250, Busy: 1, Classes: 4, Seed: 3})
	if !again.Ledger.State().Equal(w.Ledger.State()) {
		t.Fatal("same seed, different workload")
	}
	if len(Preemptors(c)) == 0 {
		t.Fatal("no preemptor shapes")
	}
}
