package plugin

import (
	"reflect"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/topology"
)

// countRebuilds counts the engine rebuilds (Snapshot and Restore passes)
// from now on.
func countRebuilds(h *hookEnv) *int {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	n := 0
	h.c.eng.restore = func(c *topology.Cluster, cfg backfill.Config, snap *backfill.Snapshot) (*backfill.Engine, error) {
		n++
		return backfill.Restore(c, cfg, snap)
	}
	return &n
}

// TestAdoptionOneRebuild: a gang the leader bound while this replica stood
// by, with pods of other schedulers on other nodes, is adopted with one
// Snapshot and Restore pass. Before, adopt restored the engine without
// the foreign GPUs and the cycle's setForeign restored it again to count
// them. The engine adopted is the one the second pass made: applying the
// foreign GPUs to it again changes nothing.
func TestAdoptionOneRebuild(t *testing.T) {
	for _, tc := range []struct {
		name    string
		foreign map[string]int64 // node -> GPUs of a pod of another scheduler
	}{
		{"no foreign pods", nil},
		{"foreign pods beside the gang", map[string]int64{"n004": 2, "n005": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(8)...)
			for node, gpus := range tc.foreign {
				h.c.onPod(foreignPod("other-"+node, node, gpus))
			}
			h.cycle()
			h.cycle()
			rebuilds := countRebuilds(h)
			h.gangOfFour(4)
			h.cycle()
			if got := activeJobs(h); len(got) != 1 {
				t.Fatalf("active jobs %v, want the gang adopted", got)
			}
			if *rebuilds != 1 {
				t.Fatalf("%d Snapshot and Restore passes to adopt the gang, want 1", *rebuilds)
			}
			h.c.mu.Lock()
			snap := h.c.eng.eng.Snapshot()
			// What the second pass did: the foreign jobs taken out and
			// added again after the adopted gang's (sequence numbers as
			// the first pass left them, without the foreign jobs).
			again := h.c.eng.eng.Snapshot()
			for _, j := range again.Jobs {
				if strings.HasPrefix(j.ID, foreignPrefix) {
					again.Seq--
				}
			}
			h.c.eng.withForeign(again, h.c.foreignUsage())
			settled := h.c.eng.foreignSettled(h.c.foreignUsage())
			h.c.mu.Unlock()
			if !settled {
				t.Fatal("the foreign GPUs are not settled after the adoption")
			}
			if !reflect.DeepEqual(snap.Jobs, again.Jobs) || !reflect.DeepEqual(snap.Gangs, again.Gangs) {
				t.Fatalf("the adopted engine differs from the one with its foreign GPUs applied again:\n jobs %+v\n want %+v\n gangs %+v\n want %+v",
					snap.Jobs, again.Jobs, snap.Gangs, again.Gangs)
			}
			for node, gpus := range tc.foreign {
				h.c.mu.Lock()
				held := h.c.eng.foreignHeld(node)
				h.c.mu.Unlock()
				if held != int(gpus) {
					t.Fatalf("node %s: %d foreign GPUs in the engine, want %d", node, held, gpus)
				}
			}
			if free := h.c.eng.freeGPUCount(); free != 64-32-5 && tc.foreign != nil {
				t.Fatalf("free GPUs %d, want %d", free, 64-32-5)
			}
			h.cycle()
			if *rebuilds != 1 {
				t.Fatalf("%d passes after a quiet cycle, want still 1", *rebuilds)
			}
			checkBooks(t, h)
		})
	}
}
