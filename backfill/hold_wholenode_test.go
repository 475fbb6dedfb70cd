package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestHoldWholeNodesOnSmallNodes: a hold is sized by what the gang can
// hold. A gang of two whole nodes bound to the two 4-GPU nodes of
// mixedCluster needs 8 GPUs; hold mode counted it at the cluster's 8-GPU
// nodes (16): it was eligible under Hold.MinGPUs 12, and its budget was
// 16 GPU-hours for an hour's Budget, twice the 8 GPUs it ever holds.
func TestHoldWholeNodesOnSmallNodes(t *testing.T) {
	tests := []struct {
		name    string
		minGPUs int
		held    bool    // a hold is made
		budget  float64 // its GPU-hours
	}{
		{name: "budget of the GPUs it can hold", minGPUs: 8, held: true, budget: 8},
		{name: "below MinGPUs on its nodes", minGPUs: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mixedCluster(t)
			cfg := DefaultConfig()
			cfg.Hold = HoldConfig{Enabled: true, MinGPUs: tt.minGPUs, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			on := func(r placement.Request, nodes ...uint) placement.Request {
				r.Allowed = c.NewNodeSet()
				for _, n := range nodes {
					r.Allowed.Set(n)
				}
				return r
			}
			// Jobs without a time limit on n2 and n3: no planned start.
			require.NoError(t, e.Submit(Job{ID: "r2", Account: "a", Gang: member(on(placement.NodesOf(1, 4), 2))}, epoch))
			require.NoError(t, e.Submit(Job{ID: "r3", Account: "a", Gang: member(on(placement.NodesOf(1, 4), 3))}, epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 2)
			require.NoError(t, e.Submit(Job{ID: "g", Account: "a", Gang: member(on(placement.WholeNodes(2), 2, 3))}, epoch))
			st, _ := e.Job("g")
			require.Equal(t, 8, st.GPUs, "GPUs counted for g")
			startAll(t, e, epoch.Add(time.Minute))
			require.NoError(t, e.Finished("r2", epoch.Add(2*time.Minute)))
			p := startAll(t, e, epoch.Add(3*time.Minute))
			if !tt.held {
				require.Empty(t, p.Holds, p.Describe(c, epoch))
				return
			}
			require.Len(t, p.Holds, 1, p.Describe(c, epoch))
			h := p.Holds[0]
			require.Equal(t, 4, h.GPUs, "n2's GPUs held")
			require.Equal(t, 8, h.Target, "of the two small nodes'")
			require.InDelta(t, tt.budget, h.BudgetGPUHours, 1e-9)
		})
	}
}
