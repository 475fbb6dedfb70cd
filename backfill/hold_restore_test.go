package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestRestoreUnderHoldConfig: a snapshot taken with two holds, restored
// under a config whose hold mode allows fewer (hold mode off, strict
// order, MaxHolds 1, MinGPUs above the gangs' size): the restored engine
// keeps no hold the config does not allow. It kept every one: with hold
// mode off the GPUs stayed idle for gangs no longer held, a small job
// waiting on them, and with MaxHolds 1 two holds went on.
func TestRestoreUnderHoldConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(*Config)
		holds  int
		starts int // small's start on GPUs no longer held (strict order: it waits behind g1)
	}{
		{"hold mode off", func(c *Config) { c.Hold.Enabled = false }, 0, 1},
		{"strict", func(c *Config) { c.Strict = true }, 0, 0},
		{"one hold at most", func(c *Config) { c.Hold.MaxHolds = 1 }, 1, 1},
		{"gangs below MinGPUs", func(c *Config) { c.Hold.MinGPUs = 32 }, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := heldPair(t, 2)
			cfg := e.cfg
			tc.set(&cfg)
			r, err := Restore(e.c, cfg, snapshotCopy(t, e.Snapshot()))
			require.NoError(t, err)
			r.checkEach = true
			require.NoError(t, r.check())
			held := 0
			for _, id := range []string{"g1", "g2"} {
				if st, _ := r.Job(id); st.State == StateHeld {
					held++
				}
			}
			require.Equal(t, tc.holds, held, "held jobs after the restore")
			now := epoch.Add(4 * time.Minute)
			require.NoError(t, r.Submit(Job{ID: "small", Account: "a", Gang: member(placement.NodesOf(1, 8))}, now))
			p := startAll(t, r, now)
			require.Len(t, p.Holds, tc.holds, p.Describe(r.c, epoch))
			require.Len(t, p.Starts, tc.starts, "small on GPUs no longer held:\n%s", p.Describe(r.c, epoch))
		})
	}
}

// TestRestoredHoldTakesTheNewBudget: a hold kept across a restore has the
// budget of the config restored with (Hold.Budget times the GPUs of its
// target, its gang's here), as a hold taken under it would: with the
// budget lowered below what the holds have spent, both end at the next
// cycle (HoldBudgetSpent, told in
// HoldEnds) and their GPUs go to a waiting job; under the config the
// snapshot was taken with, the budgets and holds are as before. It kept
// the snapshot's budget: both holds went on past the new bound.
func TestRestoredHoldTakesTheNewBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget time.Duration // 0: the snapshot's config
		holds  int
	}{
		{"same config", 0, 2},
		{"budget lowered below the spending", time.Minute, 0},
		{"budget raised", 100 * time.Hour, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := heldPair(t, 2)
			now := epoch.Add(time.Hour)
			p := startAll(t, e, now) // an hour of holding spent
			require.Len(t, p.Holds, 2, p.Describe(e.c, epoch))
			cfg := e.cfg
			if tc.budget > 0 {
				cfg.Hold.Budget = tc.budget
			}
			r, err := Restore(e.c, cfg, snapshotCopy(t, e.Snapshot()))
			require.NoError(t, err)
			r.checkEach = true
			require.NoError(t, r.check())
			for _, id := range []string{"g1", "g2"} {
				st, _ := r.Job(id)
				require.Equal(t, StateHeld, st.State, id)
			}
			for _, h := range r.Snapshot().Holds {
				require.InDelta(t, cfg.Hold.Budget.Seconds()*24, h.BudgetGPUs, 1e-6, h.Job)
			}
			later := now.Add(time.Minute)
			require.NoError(t, r.Submit(Job{ID: "small", Account: "a", Gang: member(placement.NodesOf(1, 8))}, later))
			p = startAll(t, r, later)
			require.Len(t, p.Holds, tc.holds, p.Describe(r.c, epoch))
			if tc.holds == 0 {
				require.Len(t, p.HoldEnds, 2, p.Describe(r.c, epoch))
				for _, he := range p.HoldEnds {
					require.Equal(t, HoldBudgetSpent, he.Cause, p.Describe(r.c, epoch))
				}
				require.Len(t, p.Starts, 1, "small on GPUs no longer held:\n%s", p.Describe(r.c, epoch))
			}
		})
	}
}

// TestRestoredSpentHoldHoldingNothingIsDue: a hold restored under a
// budget lowered below its spending ends at the next cycle
// (HoldBudgetSpent), also when the snapshot says it holds no GPU (its
// target's GPUs freed after the last cycle): NextEvent asks for that
// cycle at once. It asked for none (a held hold's end is timed by the
// rate it holds at), so the gang read "held" and the holds stayed until
// some event came.
func TestRestoredSpentHoldHoldingNothingIsDue(t *testing.T) {
	e := heldPair(t, 2)
	now := epoch.Add(time.Hour)
	p := startAll(t, e, now) // an hour of holding spent
	require.Len(t, p.Holds, 2, p.Describe(e.c, epoch))
	snap := snapshotCopy(t, e.Snapshot())
	for i := range snap.Holds {
		snap.Holds[i].Held = 0
	}
	cfg := e.cfg
	cfg.Hold.Budget = time.Minute
	r, err := Restore(e.c, cfg, snap)
	require.NoError(t, err)
	r.checkEach = true
	require.NoError(t, r.check())
	next, ok := r.NextEvent()
	require.True(t, ok, "no cycle asked for, with two holds past their budget")
	require.False(t, next.After(now.Add(time.Nanosecond)), "next cycle at %v, want at once after %v", next, now)
	p = startAll(t, r, next)
	require.Empty(t, p.Holds, p.Describe(r.c, epoch))
	require.Len(t, p.HoldEnds, 2, p.Describe(r.c, epoch))
	for _, he := range p.HoldEnds {
		require.Equal(t, HoldBudgetSpent, he.Cause, p.Describe(r.c, epoch))
	}
}
