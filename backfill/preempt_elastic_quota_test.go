package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestPreemptorAtItsMinimumUnderQuota: an elastic preemptor of two 8-GPU
// pods (minimum one) in a queue with a maximum of 8 GPUs, on four 8-GPU
// nodes held by a lower-class gang of another queue. Its queue's quota
// takes it at its minimum (the gate lets it by there), but the victim
// search placed its full size and the claim was checked at 16 GPUs: it
// never preempted. It now preempts, and starts at its minimum.
func TestPreemptorAtItsMinimumUnderQuota(t *testing.T) {
	c := mixedCluster(t)
	tests := []struct {
		name   string
		member gang.Member
		want   int // GPUs it starts with
	}{
		{name: "elastic gang at its minimum", member: gang.Member{Name: "m", Request: placement.NodesOf(2, 4), Min: 1}, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Preemption.Enabled, cfg.Preemption.Grace, cfg.Preemption.ExemptTime = true, time.Minute, 0
			cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
				{Name: "q", Maximum: 4, BorrowingLimit: Unlimited},
				{Name: "o", Maximum: Unlimited, BorrowingLimit: Unlimited},
			}}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			for i, g := range []int{8, 8, 4, 4} {
				on := placement.NodesOf(1, g)
				on.Allowed = c.NewNodeSet()
				on.Allowed.Set(uint(i))
				id := "low" + string(rune('0'+i))
				require.NoError(t, e.Submit(Job{ID: id, Account: "a", Queue: "o", TimeLimit: 10 * time.Hour, Preemption: preempt.Requeue, Gang: member(on)}, epoch))
			}
			require.Len(t, startAll(t, e, epoch).Starts, 4)
			p := Job{ID: "p", Account: "a", Queue: "q", Class: 1, TimeLimit: time.Hour, Preemption: preempt.Requeue,
				Gang: gang.Spec{Members: []gang.Member{tt.member}}}
			require.NoError(t, e.Submit(p, epoch.Add(time.Minute)))
			plan := startAll(t, e, epoch.Add(time.Minute))
			require.Len(t, plan.Preemptions, 1, plan.Describe(c, epoch))
			v := plan.Preemptions[0].Victim
			require.NoError(t, e.Preempted(v, epoch.Add(90*time.Second)))
			plan = startAll(t, e, epoch.Add(2*time.Minute))
			require.Len(t, plan.Starts, 1, plan.Describe(c, epoch))
			require.Equal(t, "p", plan.Starts[0].Job)
			require.Equal(t, tt.want, e.Queues()[0].Used, "p runs at its minimum within its queue's maximum")
		})
	}
}
