package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// budgetScene builds, on mixedCluster, gang g of one whole node allowed
// on n0 (8 GPUs) and n2 (4 GPUs): it counts 8 GPUs (its largest usable
// node), and with jobs without a time limit on both, its hold targets n2,
// estimated to free first. r2a leaves half of n2 at 31 minutes: the hold
// holds 2 GPUs from then on. The last cycle run is at 32 minutes. Each
// hold's budget is budget.
func budgetScene(t *testing.T, budget time.Duration) *Engine {
	t.Helper()
	c := mixedCluster(t)
	cfg := DefaultConfig()
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 8, MaxShare: 1, Budget: budget, Hysteresis: 20 * time.Minute, MaxHolds: 1}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	at := func(m int) time.Time { return epoch.Add(time.Duration(m) * time.Minute) }
	submit := func(id string, r placement.Request, m int) {
		require.NoError(t, e.Submit(Job{ID: id, Account: "a", Gang: member(r)}, at(m)))
	}
	submit("r2a", onNodes(c, placement.NodesOf(1, 2), 2), 0)
	require.Len(t, startAll(t, e, at(0)).Starts, 1)
	submit("r2b", onNodes(c, placement.NodesOf(1, 2), 2), 20)
	require.Len(t, startAll(t, e, at(20)).Starts, 1)
	submit("r0", onNodes(c, placement.NodesOf(1, 8), 0), 25)
	require.Len(t, startAll(t, e, at(25)).Starts, 1)
	submit("g", onNodes(c, placement.WholeNodes(1), 0, 2), 26)
	st, _ := e.Job("g")
	require.Equal(t, 8, st.GPUs, "GPUs counted for g: its largest usable node")
	p := startAll(t, e, at(30))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	require.Equal(t, "n2", p.Holds[0].Nodes, p.Describe(c, epoch))
	require.Equal(t, 4, p.Holds[0].Target, p.Describe(c, epoch))
	require.NoError(t, e.Finished("r2a", at(31)))
	p = startAll(t, e, at(32))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	require.Equal(t, 2, p.Holds[0].GPUs, "r2a's GPUs held: %s", p.Describe(c, epoch))
	return e
}

// TestHoldBudgetFollowsTarget: a hold's budget is Hold.Budget times the
// GPUs it targets. g, one whole node counted at 8 GPUs, holds n2 (4
// GPUs): its budget is 4 x 5 minutes (20 GPU-minutes), spent by holding
// r2a's 2 GPUs from 32 to 42 minutes. It was 8 x 5 minutes: the hold read
// "0.0 of 0.7 GPU-hours" and went on to 52 minutes, keeping GPUs idle
// for twice its budget. Restored from a snapshot taken at 35 minutes, the
// hold ends with the same cycle as the one kept on: Restore counts the
// budget on the target restored (it counted the gang's 8 GPUs too).
func TestHoldBudgetFollowsTarget(t *testing.T) {
	at := func(m int) time.Time { return epoch.Add(time.Duration(m) * time.Minute) }
	tests := []struct {
		name    string
		restore bool
	}{
		{name: "kept on"},
		{name: "restored at 35 minutes", restore: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := budgetScene(t, 5*time.Minute)
			ref := budgetScene(t, 5*time.Minute) // never restored: what e must do
			var ended time.Time
			for m := 33; m <= 45; m++ {
				if tt.restore && m == 36 {
					r, err := Restore(e.c, e.cfg, snapshotCopy(t, e.Snapshot()))
					require.NoError(t, err)
					r.checkEach = true
					require.NoError(t, r.check())
					e = r
				}
				p, want := startAll(t, e, at(m)), startAll(t, ref, at(m))
				desc := p.Describe(e.c, epoch)
				require.Equal(t, want.HoldEnds, p.HoldEnds, "at %d minutes: %s", m, desc)
				require.Equal(t, len(want.Holds), len(p.Holds), "at %d minutes: %s", m, desc)
				for i, h := range p.Holds {
					require.InDelta(t, 4*5.0/60, h.BudgetGPUHours, 1e-9, "at %d minutes: the budget of the 4 GPUs targeted: %s", m, desc)
					require.InDelta(t, want.Holds[i].SpentGPUHours, h.SpentGPUHours, 1e-9, "at %d minutes: %s", m, desc)
				}
				for _, he := range p.HoldEnds {
					if he.Job == "g" {
						require.Equal(t, HoldBudgetSpent, he.Cause, desc)
						require.Equal(t, 2, he.Held, desc)
						ended = at(m)
					}
				}
				if !ended.IsZero() {
					break
				}
			}
			require.Equal(t, at(42), ended, "g's hold ends once it has held 2 GPUs for 10 minutes")
			st, _ := e.Job("g")
			require.Equal(t, StatePending, st.State)
		})
	}
}

// TestHoldBudgetFollowsRetarget: a hold moved to another target takes
// that target's budget. With an hour's budget g's hold on n2 (4 GPUs,
// 4 GPU-hours) moves to n0 (8 GPUs) at 52 minutes, once r2b, past the one run time
// observed (r2a's 31 minutes), is estimated to end after r0: its budget
// is then 8 GPU-hours, and a snapshot taken after the move restores it
// so.
func TestHoldBudgetFollowsRetarget(t *testing.T) {
	e := budgetScene(t, time.Hour)
	moved := false
	for m := 33; m <= 60 && !moved; m++ {
		now := epoch.Add(time.Duration(m) * time.Minute)
		p := startAll(t, e, now)
		desc := p.Describe(e.c, epoch)
		require.Len(t, p.Holds, 1, "at %d minutes: %s", m, desc)
		h := p.Holds[0]
		switch h.Nodes {
		case "n2":
			require.InDelta(t, 4.0, h.BudgetGPUHours, 1e-9, "at %d minutes: %s", m, desc)
		case "n0":
			require.InDelta(t, 8.0, h.BudgetGPUHours, 1e-9, "at %d minutes: %s", m, desc)
			moved = true
		default:
			t.Fatalf("at %d minutes: hold on %s: %s", m, h.Nodes, desc)
		}
	}
	require.True(t, moved, "g's hold moved to n0")
	r, err := Restore(e.c, e.cfg, snapshotCopy(t, e.Snapshot()))
	require.NoError(t, err)
	require.NoError(t, r.check())
	hs := r.Snapshot().Holds
	require.Len(t, hs, 1)
	require.InDelta(t, 8*time.Hour.Seconds(), hs[0].BudgetGPUs, 1e-6, "the restored hold's budget, on n0")
}
