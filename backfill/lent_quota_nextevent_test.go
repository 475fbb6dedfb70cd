package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestLentOpenedChecksQuota: a reservation that opens lent pods to its
// job asks for a cycle at once (lentOpened) only when the job's queue's
// quota takes its start there too (lentPlace checks it: lentQuotaFits,
// the lent pods counted given back). On 2 nodes of 8 GPUs, "lender"
// (queue o, guarantee 16; elastic: 2 nodes, minimum 1, growing, 2h) runs
// on both; w (queue q, guarantee 0, 1 node, 1h) comes at 10m: the gate
// lets it by (the GPUs in use leave no room: it waits for GPUs) and it
// is reserved at the lender's end. When o lends what it does not use
// (lending limit unlimited), w starts on the lent node in a cycle at
// once. When o lends nothing (lending limit 0: it keeps its guarantee
// idle), the quota refuses w's start on the lent node: NextEvent names
// the lender's end, not a cycle at once that would start nothing.
func TestLentOpenedChecksQuota(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lending int
		atOnce  bool
	}{
		{"o lends: a cycle at once starts w", Unlimited, true},
		{"o keeps 16 idle: no cycle at once", 8, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 3, GPUsPerNode: 8})
			require.NoError(t, err)
			cfg := DefaultConfig()
			cfg.Hold.Enabled = false
			cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
				{Name: "q", Guarantee: 0, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
				{Name: "o", Guarantee: 24, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: tc.lending},
			}}
			e, _ := pinnedEngine(t, c, cfg)
			l := Job{ID: "lender", Account: "a", Queue: "o", TimeLimit: 2 * time.Hour, Grow: true,
				Gang: gang.Spec{Members: []gang.Member{{Name: "m", Min: 1, Request: placement.NodesOf(2, 8)}}}}
			require.NoError(t, e.Submit(l, epoch))
			x := Job{ID: "x", Account: "a", Queue: "q", TimeLimit: 3 * time.Hour, Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}
			require.NoError(t, e.Submit(x, epoch))
			require.Len(t, startAll(t, e, epoch).Starts, 2)

			now := epoch.Add(10 * time.Minute)
			w := Job{ID: "w", Account: "a", Queue: "q", TimeLimit: time.Hour, Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}
			require.NoError(t, e.Submit(w, now))
			p := startAll(t, e, now)
			desc := p.Describe(e.c, epoch)
			require.Empty(t, p.Starts, desc)
			require.Equal(t, map[string]time.Time{"w": epoch.Add(2 * time.Hour)}, reservedStarts(p), desc)
			next, ok := e.NextEvent()
			require.True(t, ok)
			if !tc.atOnce {
				require.Equal(t, epoch.Add(2*time.Hour), next, "NextEvent %v: no cycle at once for a start the quota refuses: %s", next.Sub(epoch), desc)
				p = startAll(t, e, now.Add(time.Nanosecond))
				require.Empty(t, p.Starts, "the quota refuses w on the lent node: %s", p.Describe(e.c, epoch))
				return
			}
			require.False(t, next.After(now.Add(time.Nanosecond)), "NextEvent %v: a cycle at once", next.Sub(epoch))
			p = startAll(t, e, next)
			require.Len(t, p.Starts, 1, p.Describe(e.c, epoch))
			require.Equal(t, "w", p.Starts[0].Job)
		})
	}
}
