package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestLateReleaseDueReservationFirst: v (class 0, 10h limit) and f (2h)
// run on a leaf each; r (all 8 nodes, 1h) is reserved at t+10h, v's end;
// u (class 1, a leaf, 30m) preempts v at t+2m and claims its leaf, which
// r shares from t+10h (after u's end, had it started when due). f ends at
// t+2h. The doc (Preemption): "Should a victim be released so late that
// a reservation the claim shares GPUs with is due first (its time limit
// after the grace's end), the reservation starts and the claim is
// dropped"; and no job ever starts on the GPUs of a due reservation. With
// v released at t+11h, r is due and its GPUs are all free: r starts, u
// does not. Before the fix the claim started first, at the top of the
// cycle, on r's GPUs, and r moved to t+11h30m ("late start u"). Released
// within its grace, u starts on its claim and r moves earlier, to f's
// end.
func TestLateReleaseDueReservationFirst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		release  time.Duration
		starts   string
		rPlanned time.Duration // r's planned start after the release cycle (0: started)
	}{
		{name: "released within the grace", release: 6 * time.Minute, starts: "u", rPlanned: 2 * time.Hour},
		{name: "released after the reservation is due", release: 11 * time.Hour, starts: "r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := opsCluster(t)
			cfg := DefaultConfig()
			cfg.ReservationDepth = 4
			cfg.Hold.Enabled = false
			cfg.Preemption = PreemptionConfig{Enabled: true, Grace: 5 * time.Minute, MinGain: 30 * time.Minute}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			leaf := func(id string, limit time.Duration, class int, pol preempt.Policy) Job {
				r := placement.NodesOf(4, 8)
				r.Required = "leaf"
				return Job{ID: id, Account: "a", Gang: member(r), TimeLimit: limit, Class: class, Preemption: pol}
			}
			require.NoError(t, e.Submit(leaf("v", 10*time.Hour, 0, preempt.Requeue), epoch))
			require.NoError(t, e.Submit(leaf("f", 2*time.Hour, 0, preempt.Never), epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 2)
			require.NoError(t, e.Submit(Job{ID: "r", Account: "a", Gang: member(placement.NodesOf(8, 8)), TimeLimit: time.Hour}, epoch.Add(time.Minute)))
			p := startAll(t, e, epoch.Add(time.Minute))
			require.Len(t, p.Reservations, 1)
			require.Equal(t, epoch.Add(10*time.Hour), p.Reservations[0].Start)
			require.NoError(t, e.Submit(leaf("u", 30*time.Minute, 1, preempt.Never), epoch.Add(2*time.Minute)))
			p = startAll(t, e, epoch.Add(2*time.Minute))
			require.Len(t, p.Preemptions, 1)
			require.Equal(t, "v", p.Preemptions[0].Victim)
			if tc.release > 2*time.Hour {
				require.NoError(t, e.Finished("f", epoch.Add(2*time.Hour)))
				startAll(t, e, epoch.Add(2*time.Hour))
			}

			at := epoch.Add(tc.release)
			require.NoError(t, e.Preempted("v", at))
			p = startAll(t, e, at)
			var started []string
			for _, s := range p.Starts {
				started = append(started, s.Job)
			}
			require.Equal(t, []string{tc.starts}, started, p.Describe(c, epoch))
			st, ok := e.Job("r")
			require.True(t, ok)
			if tc.rPlanned == 0 {
				require.Equal(t, StateRunning, st.State)
				require.Equal(t, at, st.Start)
				return
			}
			require.Equal(t, StateReserved, st.State)
			require.Equal(t, epoch.Add(tc.rPlanned), st.PlannedStart)
			require.Empty(t, p.Moves, "no reservation moves later")
		})
	}
}
