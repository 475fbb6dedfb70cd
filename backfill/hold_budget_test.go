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

// TestHoldBudgetSpentOnSmallerTarget: a hold moved onto a smaller target
// whose budget it has already spent ends in that cycle, HoldBudgetSpent.
// g, one whole node allowed on n0 (8 GPUs) and n2 (4 GPUs), holds n0,
// where A and B (4 GPUs each, started at 0) are estimated to end before
// C on n2 (started at 20); the budget is 50 seconds a GPU (400
// GPU-seconds on n0, 200 on n2). A ends at 31 minutes and the hold holds
// its 4 GPUs; by 32 minutes it has spent 240 GPU-seconds, and A's run
// time now estimates C to end first: the hold moves to n2, whose budget
// it has spent. It was kept there with "-0.0 of 0.1 GPU-hours of its
// budget left", holding nothing, while NextEvent asked for no cycle; a
// second cycle at 32 minutes ended it.
func TestHoldBudgetSpentOnSmallerTarget(t *testing.T) {
	c := mixedCluster(t)
	cfg := DefaultConfig()
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 8, MaxShare: 1, Budget: 50 * time.Second, Hysteresis: 20 * time.Minute, MaxHolds: 1}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	at := func(m int) time.Time { return epoch.Add(time.Duration(m) * time.Minute) }
	submit := func(id string, r placement.Request, m int) {
		require.NoError(t, e.Submit(Job{ID: id, Account: "a", Gang: member(r)}, at(m)))
	}
	submit("A", onNodes(c, placement.NodesOf(1, 4), 0), 0)
	submit("B", onNodes(c, placement.NodesOf(1, 4), 0), 0)
	require.Len(t, startAll(t, e, at(0)).Starts, 2)
	submit("C", onNodes(c, placement.NodesOf(1, 4), 2), 20)
	require.Len(t, startAll(t, e, at(20)).Starts, 1)
	submit("g", onNodes(c, placement.WholeNodes(1), 0, 2), 25)
	p := startAll(t, e, at(30))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	require.Equal(t, "n0", p.Holds[0].Nodes, p.Describe(c, epoch))
	require.NoError(t, e.Finished("A", at(31)))
	p = startAll(t, e, at(31))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	require.Equal(t, "n0", p.Holds[0].Nodes, p.Describe(c, epoch))
	require.Equal(t, 4, p.Holds[0].GPUs, "A's GPUs held: %s", p.Describe(c, epoch))

	p = startAll(t, e, at(32))
	desc := p.Describe(c, epoch)
	require.Empty(t, p.Holds, "the hold moved onto n2 has spent n2's budget: %s", desc)
	require.Equal(t, []HoldEnd{{Job: "g", Cause: HoldBudgetSpent, Held: 4}}, p.HoldEnds, desc)
	w := waitingOf(p, "g")
	require.NotNil(t, w, desc)
	require.Equal(t, WaitForHold, w.Code, desc)
	require.Equal(t, "its last hold spent its budget", w.Detail, desc)
	require.Equal(t, at(32).Add(cfg.Hold.Budget), w.Until, desc)
	next, ok := e.NextEvent()
	require.True(t, ok, "NextEvent wakes for g's hold cool-down")
	require.Equal(t, w.Until, next)

	// A second cycle at the same time decides the same.
	again := startAll(t, e, at(32))
	require.Empty(t, again.Holds, again.Describe(c, epoch))
	require.Empty(t, again.HoldEnds, again.Describe(c, epoch))
	w2 := waitingOf(again, "g")
	require.NotNil(t, w2, again.Describe(c, epoch))
	require.Equal(t, *w, *w2, again.Describe(c, epoch))
}
