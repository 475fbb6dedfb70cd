package backfill

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestUsageIndependentOfCadence: a job's decayed usage does not depend on
// how often the host runs cycles. A runs 8 GPUs for 4 h from the start, B
// 16 GPUs from 30 min to 3 h (its end reported before the first cycle
// at or after 3 h, with no cycle at 3 h itself in the uneven case); the
// half-life is an hour. Whether the
// host runs no cycle between the events, one every hour, every 10 minutes,
// every minute or at uneven instants, the usage at 4 h is each job's GPUs
// x the decayed integral of its run. Before, each charge billed the GPU-
// seconds since the last one at full weight: A alone ended with 115,200,
// 54,000, 41,246 or 39,178 GPU-seconds for the first four cadences
// (exact: 38,953).
func TestUsageIndependentOfCadence(t *testing.T) {
	hl := time.Hour
	end := epoch.Add(4 * time.Hour)
	uneven := []time.Duration{7 * time.Minute, 41 * time.Minute, 43 * time.Minute, 2*time.Hour + 59*time.Minute, 3*time.Hour + 30*time.Minute}
	wantA := 8 * fairshare.DecayedSeconds(4*time.Hour, hl)
	// B's run ends at 3 h: its usage then, decayed for an hour.
	wantB := 16 * fairshare.DecayedSeconds(150*time.Minute, hl) / 2
	require.InDelta(t, 38953, wantA, 1)
	for _, tc := range []struct {
		name   string
		cycles []time.Duration
	}{
		{"no cycle between events", nil},
		{"hourly", every(time.Hour)},
		{"every 10 minutes", every(10 * time.Minute)},
		{"every minute", every(time.Minute)},
		{"at uneven instants", uneven},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.FairShare.HalfLife = hl
			e, err := New(opsCluster(t), cfg, flatTree(t, cfg.FairShare, "a", "b"))
			require.NoError(t, err)
			require.NoError(t, e.Submit(Job{ID: "A", Account: "a", TimeLimit: 5 * time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch))
			startAll(t, e, epoch)
			bAt := epoch.Add(30 * time.Minute)
			submitted, ended := false, false
			at := func(now time.Time) {
				if !submitted && !now.Before(bAt) {
					require.NoError(t, e.Submit(Job{ID: "B", Account: "b", TimeLimit: 5 * time.Hour, Gang: member(placement.NodesOf(2, 8))}, bAt))
					p := startAll(t, e, bAt)
					require.Len(t, p.Starts, 1, "B starts at once")
					submitted = true
				}
				if !ended && !now.Before(epoch.Add(3*time.Hour)) {
					require.NoError(t, e.Finished("B", epoch.Add(3*time.Hour)))
					ended = true
				}
				if now.After(bAt) {
					startAll(t, e, now)
				}
			}
			for _, d := range tc.cycles {
				at(epoch.Add(d))
			}
			at(end)
			require.NoError(t, e.Finished("A", end))
			v, err := e.FairShare()
			require.NoError(t, err)
			a, _ := v.Account("a")
			b, _ := v.Account("b")
			require.InEpsilon(t, wantA, a.Usage, 1e-9, "a's usage")
			require.InEpsilon(t, wantB, b.Usage, 1e-9, "b's usage")
		})
	}
}

// every returns the offsets d, 2d, ... before 4 h.
func every(d time.Duration) []time.Duration {
	var out []time.Duration
	for at := d; at < 4*time.Hour; at += d {
		out = append(out, at)
	}
	return out
}

// TestFairShareCountsUnbilledUsage: FairShare counts the usage of the
// active jobs since their last charge, and asking for it changes
// nothing. A runs 8 GPUs from the start; no cycle runs until a submit at
// 2 h, when the view shows A's two hours. Before, it showed none until the
// next cycle billed them. An engine asked at every step and one never
// asked make the same plans and end with the same usage.
func TestFairShareCountsUnbilledUsage(t *testing.T) {
	hl := time.Hour
	run := func(ask bool) (string, float64) {
		cfg := DefaultConfig()
		cfg.FairShare.HalfLife = hl
		e, err := New(opsCluster(t), cfg, flatTree(t, cfg.FairShare, "a", "b"))
		require.NoError(t, err)
		var plans strings.Builder
		look := func(want float64) {
			if !ask {
				return
			}
			v, err := e.FairShare()
			require.NoError(t, err)
			a, _ := v.Account("a")
			require.InEpsilon(t, want, a.Usage, 1e-9, "a's usage at %v", v.Time())
		}
		require.NoError(t, e.Submit(Job{ID: "A", Account: "a", TimeLimit: 5 * time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch))
		plans.WriteString(startAll(t, e, epoch).Describe(e.c, epoch))
		require.NoError(t, e.Submit(Job{ID: "B", Account: "b", TimeLimit: 5 * time.Hour, Gang: member(placement.NodesOf(8, 8))}, epoch.Add(2*time.Hour)))
		look(8 * fairshare.DecayedSeconds(2*time.Hour, hl))
		plans.WriteString(startAll(t, e, epoch.Add(2*time.Hour)).Describe(e.c, epoch))
		look(8 * fairshare.DecayedSeconds(2*time.Hour, hl))
		require.NoError(t, e.Finished("A", epoch.Add(3*time.Hour)))
		look(8 * fairshare.DecayedSeconds(3*time.Hour, hl))
		plans.WriteString(startAll(t, e, epoch.Add(3*time.Hour)).Describe(e.c, epoch))
		v, err := e.FairShare()
		require.NoError(t, err)
		a, _ := v.Account("a")
		return plans.String(), a.Usage
	}
	askedPlans, askedUsage := run(true)
	plans, usage := run(false)
	require.Equal(t, plans, askedPlans)
	require.Equal(t, usage, askedUsage, "usage differs when FairShare was asked")
}
