package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// heldPair returns an engine on opsCluster (two leaves of four 8-GPU
// nodes) with hold mode on for gangs of 16 GPUs or more (up to maxHolds
// holds): eight one-node jobs without limits fill the cluster, and two
// gangs of three nodes in one leaf, g1 and g2, wait. A cycle at t+1m
// holds a target for each; r0 (in g1's target) and r4 (in g2's) end at
// t+2m, and a cycle at t+3m holds their 8 GPUs each.
func heldPair(t *testing.T, maxHolds int) *Engine {
	t.Helper()
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.ReservationDepth = 1
	cfg.FairShare.HalfLife = time.Hour
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: maxHolds}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
	require.NoError(t, err)
	e.checkEach = true
	for i := range 8 {
		require.NoError(t, e.Submit(Job{ID: "r" + string(rune('0'+i)), Account: "a", Gang: member(placement.NodesOf(1, 8))}, epoch))
	}
	startAll(t, e, epoch)
	for _, id := range []string{"g1", "g2"} {
		req := placement.NodesOf(3, 8)
		req.Required = "leaf"
		require.NoError(t, e.Submit(Job{ID: id, Account: "b", Gang: member(req)}, epoch))
	}
	startAll(t, e, epoch.Add(time.Minute))
	require.NoError(t, e.Finished("r0", epoch.Add(2*time.Minute)))
	require.NoError(t, e.Finished("r4", epoch.Add(2*time.Minute)))
	p := startAll(t, e, epoch.Add(3*time.Minute))
	require.Len(t, p.Holds, maxHolds, p.Describe(c, epoch))
	for _, h := range p.Holds {
		require.Equal(t, 8, h.GPUs, p.Describe(c, epoch))
	}
	return e
}

// TestHoldEndedByEventIsCharged: a hold that ends by an event between two
// cycles (its gang cancelled, a node of its target down or drained) has
// held its GPUs idle from the last cycle until then; HeldGPUSeconds
// ("the GPU-seconds held idle for held jobs so far") counts that time, as
// it does for a hold that ends in a cycle. It counted nothing of it: the
// event dropped the hold before the next cycle charged it.
func TestHoldEndedByEventIsCharged(t *testing.T) {
	end := epoch.Add(3*time.Minute + time.Hour)
	for _, tc := range []struct {
		name string
		end  func(e *Engine)
	}{
		{"cancelled", func(e *Engine) { require.NoError(t, e.Cancel("g1", end)) }},
		{"node down", func(e *Engine) {
			n, _ := e.c.LookupNode("node00000")
			_, err := e.NodeDown(n, end)
			require.NoError(t, err)
		}},
		{"node drained", func(e *Engine) {
			n, _ := e.c.LookupNode("node00001")
			require.NoError(t, e.Drain(n, end))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := heldPair(t, 1)
			require.Zero(t, e.HeldGPUSeconds())
			tc.end(e)
			// 8 GPUs for the hour since the last cycle.
			require.InDelta(t, 8*3600.0, e.HeldGPUSeconds(), 1e-6)
			p := startAll(t, e, end.Add(time.Minute))
			require.Len(t, p.HoldEnds, 1, p.Describe(e.c, epoch))
			require.InDelta(t, 8*3600.0, p.HeldGPUSeconds, 1e-6, p.Describe(e.c, epoch))
		})
	}
}
