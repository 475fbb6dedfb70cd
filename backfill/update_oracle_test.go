package backfill

import (
	"testing"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestUpdateDecidesAsSubmitted: after an Update, the next cycle decides
// as an engine to which the job was submitted with its new node sets
// (same submit time, same events): the same starts, and the same state
// and reason for w and y. w and y (one node of 8 GPUs each) wait without
// a plan to keep (greedy backfill, no reservations) behind jobs with a
// limit on n0 to n2 and half of n3.
//   - fair share, OnlyChangedWaits: w fails as any job of its shape
//     would, cycle after cycle, and the kept ranking marks it quiet;
//     narrowed to n0 and n3 its reason counts nodes outside Allowed. A
//     mark kept would pass it over untested with its old reason (the
//     invariant checker panics first: "marked quiet ... but its test was
//     not skipped").
//   - queues, one in strict order, n0 drained: w, on n0 alone, widened
//     to every node.
func TestUpdateDecidesAsSubmitted(t *testing.T) {
	c := updateCluster(t)
	tests := []struct {
		name       string
		cfg        func(cfg *Config)
		drain      bool
		old, sets  *bitset.BitSet
		wantReason string // a part of w's reason after the update
	}{
		{name: "quiet fair-share ranking", cfg: func(cfg *Config) { cfg.OnlyChangedWaits = true },
			sets: nodeSet(c, 0, 3), wantReason: "outside Allowed"},
		{name: "strict queue", cfg: func(cfg *Config) {
			cfg.Quotas.Queues = []QueueSpec{
				{Name: "q", Guarantee: 8, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited, StrictOrder: true},
				{Name: "o", Guarantee: 24, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
			}
		}, drain: true, old: nodeSet(c, 0), sets: nil, wantReason: "not enough free GPUs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build := func(sets *bitset.BitSet) *Engine {
				cfg := DefaultConfig()
				cfg.ReservationDepth = 0
				tt.cfg(&cfg)
				e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
				require.NoError(t, err)
				e.checkEach = true
				queue := func(q string) string {
					if cfg.Quotas.Queues == nil {
						return ""
					}
					return q
				}
				if tt.drain {
					require.NoError(t, e.Drain(0, mins(0)))
				}
				for i, g := range []int{8, 8, 8, 4} {
					if tt.drain && i == 0 {
						continue
					}
					require.NoError(t, e.Submit(Job{ID: "r" + string(rune('0'+i)), Account: "a", Queue: queue("o"), TimeLimit: time.Hour,
						Gang: member(onNodes(c, placement.NodesOf(1, g), i))}, mins(0)))
				}
				startAll(t, e, mins(0))
				w := Job{ID: "w", Account: "a", Queue: queue("q"), TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}
				w.Gang.Members[0].Request.Allowed = sets
				require.NoError(t, e.Submit(w, mins(1)))
				require.NoError(t, e.Submit(Job{ID: "y", Account: "b", Queue: queue("q"), TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, mins(1)))
				for m := 1; m < 8; m++ {
					startAll(t, e, mins(m))
				}
				return e
			}
			e, fresh := build(tt.old), build(tt.sets)
			require.NoError(t, e.Update(withSets(t, e, "w", tt.sets, nil), mins(8)))
			p, want := startAll(t, e, mins(9)), startAll(t, fresh, mins(9))
			desc := p.Describe(c, epoch) + "\nfresh:\n" + want.Describe(c, epoch)
			require.Equal(t, want.Starts, p.Starts, desc)
			for _, id := range []string{"w", "y"} {
				got, _ := e.Job(id)
				exp, _ := fresh.Job(id)
				// (A reason told before and unchanged keeps the priority it
				// was told with: compared without it.)
				type seen struct {
					State        JobState
					Code         WaitCode
					Reason       string
					PlannedStart time.Time
					Nodes        string
				}
				require.Equal(t, seen{exp.State, exp.Code, exp.Reason, exp.PlannedStart, exp.Nodes},
					seen{got.State, got.Code, got.Reason, got.PlannedStart, got.Nodes}, "job %s after the update; %s", id, desc)
			}
			st, _ := e.Job("w")
			require.Contains(t, st.Reason, tt.wantReason, desc)
		})
	}
}

// TestUpdateResizesKeptRanking: on mixedCluster (8, 8, 4 and 4 GPUs),
// under a job-size weight, w (one whole node) counts 4 GPUs on n2 and n3
// and 8 once widened to every node: its priority moves, and the kept
// fair-share ranking, whose key for w no longer holds, is left for a
// whole ranking (the invariant checker compares the kept ranking with a
// whole one every cycle). The next cycle tells w the priority a job
// submitted with the new sets has.
func TestUpdateResizesKeptRanking(t *testing.T) {
	c := mixedCluster(t)
	build := func(sets *bitset.BitSet) *Engine {
		cfg := DefaultConfig()
		cfg.ReservationDepth = 0
		cfg.FairShare.Weights.JobSize = 1000
		cfg.FairShare.ClusterGPUs = c.TotalGPUs()
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
		require.NoError(t, err)
		e.checkEach = true
		for i, g := range []int{8, 8, 4, 4} {
			require.NoError(t, e.Submit(Job{ID: "r" + string(rune('0'+i)), Account: "a", TimeLimit: time.Hour,
				Gang: member(onNodes(c, placement.NodesOf(1, g), i))}, mins(0)))
		}
		startAll(t, e, mins(0))
		w := Job{ID: "w", Account: "a", TimeLimit: time.Hour, Gang: member(placement.WholeNodes(1))}
		w.Gang.Members[0].Request.Allowed = sets
		require.NoError(t, e.Submit(w, mins(1)))
		require.NoError(t, e.Submit(Job{ID: "y", Account: "b", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 6))}, mins(1)))
		for m := 1; m < 8; m++ {
			startAll(t, e, mins(m))
		}
		return e
	}
	e, fresh := build(nodeSet(c, 2, 3)), build(nil)
	require.True(t, e.kr.on, "the kept ranking is in use")
	st, _ := e.Job("w")
	require.Equal(t, 4, st.GPUs)
	require.NoError(t, e.Update(withSets(t, e, "w", nil, nil), mins(8)))
	st, _ = e.Job("w")
	require.Equal(t, 8, st.GPUs)
	p, want := startAll(t, e, mins(9)), startAll(t, fresh, mins(9))
	require.Equal(t, want.Starts, p.Starts)
	prio := func(p *Plan) uint64 {
		for _, w := range p.Waiting {
			if w.Job == "w" {
				return w.Priority
			}
		}
		t.Fatalf("w not in the plan: %s", p.Describe(c, epoch))
		return 0
	}
	require.Equal(t, prio(want), prio(p), "w's priority after the update")
}
