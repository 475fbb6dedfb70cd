package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// bigBehindScene builds the scene two restore tests share: on
// opsCluster's eight 8-GPU nodes (default config, accounts a and b), a
// runs on 6 nodes until t+2h and b on 1 until t+5h, one node free, and
// big (7 nodes, 1h) is submitted and waits.
func bigBehindScene(t *testing.T) (*topology.Cluster, *Engine) {
	t.Helper()
	c := opsCluster(t)
	cfg := DefaultConfig()
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
	require.NoError(t, err)
	e.checkEach = true
	require.NoError(t, e.Submit(Job{ID: "a", Account: "a", TimeLimit: 2 * time.Hour, Gang: member(placement.NodesOf(6, 8))}, epoch))
	require.NoError(t, e.Submit(Job{ID: "b", Account: "a", TimeLimit: 5 * time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch))
	startAll(t, e, epoch)
	require.NoError(t, e.Submit(Job{ID: "big", Account: "b", TimeLimit: time.Hour, Gang: member(placement.NodesOf(7, 8))}, epoch))
	return c, e
}

// TestRestoreUnderNoReservations: a snapshot with reservations restored
// under a config that makes none (ReservationDepth 0, greedy backfill,
// or Strict) kept them: the cycle keeps a reservation until its job
// starts, and, never making one under such a config, never drops one
// either. Eight 8-GPU nodes: a runs on 6 until t+2h, b on 1 until t+5h,
// one node free; big (7 nodes) is reserved at t+2h, small (1 node, 3h)
// at t+3h. Restored under depth 0, small waited for big's reservation
// (its 3 hours on the free node would delay it) where greedy backfill
// starts it at once; under Strict the plan listed both reservations,
// small's beside a reason saying it waits for big's priority. The
// restored engine now plans as one restored from the snapshot without
// the reservations (its jobs recorded waiting).
func TestRestoreUnderNoReservations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    func(*Config)
		starts []string
	}{
		{"depth 0", func(c *Config) { c.ReservationDepth = 0 }, []string{"small"}},
		{"strict", func(c *Config) { c.Strict = true }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := bigBehindScene(t)
			require.NoError(t, e.Submit(Job{ID: "small", Account: "b", TimeLimit: 3 * time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch))
			p := startAll(t, e, epoch.Add(time.Minute))
			require.Len(t, p.Reservations, 2, p.Describe(c, epoch))
			snap := snapshotCopy(t, e.Snapshot())

			// The oracle: the same snapshot without its reservations.
			bare := snapshotCopy(t, snap)
			bare.Reservations = nil
			for i := range bare.Jobs {
				if bare.Jobs[i].State == StateReserved {
					bare.Jobs[i].State = StatePending
				}
			}
			cfg2 := DefaultConfig()
			tc.cfg(&cfg2)
			o, err := Restore(c, cfg2, bare)
			require.NoError(t, err)
			r, err := Restore(c, cfg2, snap)
			require.NoError(t, err)
			r.checkEach = true
			require.NoError(t, r.check())
			for _, id := range []string{"big", "small"} {
				st, _ := r.Job(id)
				require.Equal(t, StatePending, st.State, id)
			}
			now := epoch.Add(2 * time.Minute)
			want := startAll(t, o, now)
			got := startAll(t, r, now)
			require.Empty(t, got.Reservations, got.Describe(c, epoch))
			var started []string
			for _, s := range got.Starts {
				started = append(started, s.Job)
			}
			require.Equal(t, tc.starts, started, got.Describe(c, epoch))
			require.Equal(t, want.Describe(c, epoch), got.Describe(c, epoch))
		})
	}
}
