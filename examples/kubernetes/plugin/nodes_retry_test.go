package plugin

import (
	"errors"
	"testing"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/topology"
)

// failRebuildsWith makes every engine rebuild whose cluster holds node
// fail (until the returned stop is called), and returns a counter of the
// rebuilds tried with it.
func failRebuildsWith(h *hookEnv, node string) (tries *int, stop func()) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	n, failing := 0, true
	h.c.eng.restore = func(c *topology.Cluster, cfg backfill.Config, snap *backfill.Snapshot) (*backfill.Engine, error) {
		if _, ok := c.LookupNode(node); ok {
			n++
			if failing {
				return nil, errors.New("test: this rebuild fails")
			}
		}
		return backfill.Restore(c, cfg, snap)
	}
	return &n, func() { failing = false }
}

// TestFailedRebuildTriedOncePerCycle: a node that joins but whose rebuild
// fails is tried again in the next cycle, once per cycle. While another
// node is kept at its former GPU count (a 7-GPU pod on a node whose
// allocatable drops 8 -> 6), the cycle's second look at the nodes, meant
// for the kept node once GPUs are freed, tried the failing node a second
// time in the same cycle (two Snapshot/Restore passes for nothing).
func TestFailedRebuildTriedOncePerCycle(t *testing.T) {
	for _, tc := range []struct {
		name string
		kept bool // n000 kept at its former count meanwhile
	}{
		{"no node kept", false},
		{"another node kept", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(4)
			h.addNodes(nodes[:3]...)
			h.c.onPod(foreignPod("holder", "n000", 7))
			h.cycle()
			tries, stop := failRebuildsWith(h, "n003")
			if tc.kept {
				h.setAllocatable(nodes[0], "6")
			}
			h.addNodes(nodes[3])
			for cycle := 1; cycle <= 3; cycle++ {
				h.cycle()
				if *tries != cycle {
					t.Fatalf("after %d cycles the failing node was tried %d times, want once per cycle", cycle, *tries)
				}
				if _, _, known := h.engineNode("n003"); known {
					t.Fatal("n003 joined though its rebuild fails")
				}
			}
			if gpus, _, _ := h.engineNode("n000"); tc.kept && gpus != 8 {
				t.Fatalf("n000 under 7 held GPUs: %d GPUs in the engine, want 8 (kept)", gpus)
			}
			stop()
			h.cycle()
			if _, _, known := h.engineNode("n003"); !known {
				t.Fatal("n003 did not join once its rebuild succeeds")
			}
			checkBooks(t, h)
		})
	}
}
