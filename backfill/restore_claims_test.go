package backfill

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestRestoredClaimOnLostNodeDropped: a snapshot taken mid-preemption
// (preemptingEngine: urgent claims leaf s0-l0, one victim released, one
// still stopping) whose claim has GPUs on a node the snapshot lists down
// or drained (NodeDown and Drain drop such a claim, its victims still
// stopping; a host that edits its snapshot, marking a node lost, may
// leave one). Restore refused the whole snapshot (the claimed GPUs out of
// service). It now drops the claim as NodeDown and Drain do: the restored
// engine snapshots as an engine given the node event at the snapshot's
// time does, and plans the next cycle as it does.
func TestRestoredClaimOnLostNodeDropped(t *testing.T) {
	for _, tc := range []struct {
		name       string
		down       bool
		victimNode bool // the node lost is one a victim still runs on
	}{
		{"down, released node", true, false},
		{"drained, released node", false, false},
		{"drained, victim's node", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := preemptingEngine(t)
			snap := snapshotCopy(t, e.Snapshot())
			require.Len(t, snap.Claims, 1)
			cl := snap.Claims[0]
			alloc, err := e.allocationOf(&cl.Placement)
			require.NoError(t, err)
			node := topology.NodeID(-1)
			for pod := range alloc.Pods() {
				if (e.jobs.owner(int(pod.Node), 0) != nil) == tc.victimNode {
					node = pod.Node
				}
			}
			require.GreaterOrEqual(t, int(node), 0)
			if tc.down {
				snap.Down = append(snap.Down, e.c.NodeName(node))
			} else {
				snap.Drained = append(snap.Drained, e.c.NodeName(node))
			}
			r, err := Restore(e.c, e.cfg, snap)
			require.NoError(t, err)
			r.checkEach = true
			require.NoError(t, r.check())

			// The twin: the same engine, given the node event at the
			// snapshot's time.
			k := preemptingEngine(t)
			if tc.down {
				_, err = k.NodeDown(node, k.Now())
			} else {
				err = k.Drain(node, k.Now())
			}
			require.NoError(t, err)
			require.Empty(t, k.Snapshot().Claims)
			want, err := json.Marshal(k.Snapshot())
			require.NoError(t, err)
			got, err := json.Marshal(r.Snapshot())
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got))

			now := epoch.Add(63 * time.Minute)
			for _, v := range cl.Victims {
				st, ok := r.Job(v)
				require.True(t, ok, v)
				if st.State == StatePreempting {
					require.NoError(t, r.Preempted(v, now))
					require.NoError(t, k.Preempted(v, now))
				}
			}
			pr, err := r.Schedule(now)
			require.NoError(t, err)
			pk, err := k.Schedule(now)
			require.NoError(t, err)
			require.Equal(t, pk.Describe(k.c, epoch), pr.Describe(r.c, epoch))
			require.Equal(t, pk.Starts, pr.Starts)
		})
	}
}
