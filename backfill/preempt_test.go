package backfill

import (
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestPreemptionAllocates: a cycle in which a waiting job looks for victims
// (and finds none it may stop) allocates no more than the same cycle with
// preemption off: the victim search and its candidates reuse the engine's
// buffers.
func TestPreemptionAllocates(t *testing.T) {
	var allocs [2]float64
	for k, on := range []bool{false, true} {
		c := opsCluster(t)
		cfg := DefaultConfig()
		cfg.Hold.Enabled = false
		cfg.Preemption.Enabled = on
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.NumNodes() {
			// Protected: the search fails the same way every cycle.
			if err := e.Submit(Job{ID: fmt.Sprintf("run%d", i), Account: "a", Gang: member(placement.NodesOf(1, 8))}, epoch); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Schedule(epoch); err != nil {
			t.Fatal(err)
		}
		for i := range c.NumNodes() {
			if err := e.Started(fmt.Sprintf("run%d", i), epoch); err != nil {
				t.Fatal(err)
			}
		}
		urgent := Job{ID: "urgent", Account: "a", Class: 1, Gang: member(placement.NodesOf(4, 8))}
		if err := e.Submit(urgent, epoch); err != nil {
			t.Fatal(err)
		}
		plan := &Plan{}
		now := epoch.Add(time.Hour)
		if err := e.ScheduleInto(now, plan); err != nil {
			t.Fatal(err)
		}
		if w := plan.Waiting[0]; w.PreemptTried != on || on && w.Preempt.Code != preempt.NotPreemptible {
			t.Fatalf("preemption %v: %+v", on, w)
		}
		allocs[k] = testing.AllocsPerRun(20, func() {
			if err := e.ScheduleInto(now, plan); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("allocations per cycle: %v without preemption, %v with a victim search", allocs[0], allocs[1])
	if allocs[1] > allocs[0] {
		t.Errorf("a cycle with a victim search allocates %v times, %v without", allocs[1], allocs[0])
	}
}
