package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestWholeNodeStartWithinShare: the quota gate lets a whole-node job of
// unequal node sizes by at its leastGPUs when its weighted share refuses
// its largest nodes; its start must then stay within that share too, as
// the gate would have refused the GPUs placed. Queues a and b (no
// guarantees, equal weights) share the two 8-GPU (n0, n1) and two 4-GPU
// (n2, n3) nodes, 12 GPUs each. x (queue b, two whole nodes), ranked
// first, and y (queue a) wait. x started on n0-n1 (16 GPUs, past b's
// share while a waits below its own), and y did not fit what was left.
//   - idle cluster, y two pods of 6 GPUs: x now starts on n2-n3 (8) and
//     y on n0-n1;
//   - z (queue a, 4 GPUs) on n2, y one pod of 8: x waits for its share,
//     the reason saying so, and y starts.
func TestWholeNodeStartWithinShare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		busy   bool // z runs on n2
		y      placement.Request
		xNodes string // "" waits for its share
	}{
		{name: "small nodes free", y: placement.NodesOf(2, 6), xNodes: "n[2-3]"},
		{name: "a small node busy", busy: true, y: placement.NodesOf(1, 8)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := twoQueueMixedEngine(t)
			if tc.busy {
				require.NoError(t, e.Submit(Job{ID: "z", Account: "a", Queue: "a", TimeLimit: time.Hour,
					Gang: member(onNodes(c, placement.NodesOf(1, 4), 2))}, epoch))
				require.Len(t, startAll(t, e, epoch).Starts, 1)
			}
			require.NoError(t, e.Submit(Job{ID: "x", Account: "a", Queue: "b", TimeLimit: time.Hour,
				Gang: member(placement.WholeNodes(2))}, epoch))
			require.NoError(t, e.Submit(Job{ID: "y", Account: "a", Queue: "a", TimeLimit: time.Hour,
				Gang: member(tc.y)}, epoch.Add(time.Second)))
			now := epoch.Add(time.Minute)
			p := startAll(t, e, now)
			desc := p.Describe(c, epoch)
			require.LessOrEqual(t, e.Queues()[1].Used, 12, "queue b within its share: %s", desc)
			st, _ := e.Job("y")
			require.Equal(t, StateRunning, st.State, desc)
			st, _ = e.Job("x")
			if tc.xNodes != "" {
				require.Equal(t, StateRunning, st.State, desc)
				require.Equal(t, tc.xNodes, st.Nodes, desc)
				return
			}
			w := waitingOf(p, "x")
			require.NotNil(t, w, desc)
			require.Equal(t, WaitQuota, w.Code, w.Message(now))
			require.Equal(t, "b", w.Blocker, w.Message(now))
			require.Contains(t, w.Detail, "past its weighted share of 12 (weight 1) while queue a waits below its own")
		})
	}
}
