package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestStatusGPUsOfActiveJob: JobStatus.GPUs of an active job is the GPUs
// it holds, not the bound it was checked against before it started. A
// job of two whole nodes on a cluster of 8- and 4-GPU nodes, in a queue
// of 8 GPUs, holds the two 4-GPU nodes: its status said 16 (two of the
// largest nodes). An elastic gang of four 2-GPU pods cut to two by its
// queue's maximum said 8 while it held 4. Waiting, each says its bound.
func TestStatusGPUsOfActiveJob(t *testing.T) {
	c := mixedCluster(t)
	tests := []struct {
		name    string
		member  gang.Member
		waiting int // JobStatus.GPUs before the start (its bound)
		running int // and after (what it holds)
	}{
		{name: "whole nodes on small nodes", member: gang.Member{Name: "m", Request: placement.WholeNodes(2)}, waiting: 16, running: 8},
		{name: "elastic gang cut by its quota", member: gang.Member{Name: "m", Request: placement.NodesOf(4, 2), Min: 1}, waiting: 8, running: 4},
		{name: "fixed gang", member: gang.Member{Name: "m", Request: placement.NodesOf(2, 2)}, waiting: 4, running: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			max := 8
			if tt.member.Min > 0 {
				max = 4
			}
			cfg.Quotas = QuotaConfig{Queues: []QueueSpec{{Name: "q", Maximum: max, BorrowingLimit: Unlimited}}}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			require.NoError(t, e.Submit(Job{ID: "w", Account: "a", Queue: "q", TimeLimit: time.Hour, Preemption: preempt.Requeue,
				Gang: gang.Spec{Members: []gang.Member{tt.member}}}, epoch))
			st, _ := e.Job("w")
			require.Equal(t, tt.waiting, st.GPUs, "a waiting job's status gives its bound")
			p, err := e.Schedule(epoch)
			require.NoError(t, err)
			require.Len(t, p.Starts, 1, p.Describe(c, epoch))
			st, _ = e.Job("w")
			require.Equal(t, StateStarting, st.State)
			require.Equal(t, tt.running, st.GPUs, "a starting job's status gives the GPUs it holds")
			require.NoError(t, e.Started("w", epoch))
			st, _ = e.Job("w")
			require.Equal(t, tt.running, st.GPUs, "a running job's status gives the GPUs it holds (on %s)", st.Nodes)
			require.Equal(t, tt.running, e.Queues()[0].Used, "and is charged them")
		})
	}
}
