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

// TestHeldStartOnTargetMissPreempt: as TestHeldStartMissPreempt, but h's
// gang starts on its own target (the 4 GPUs free beside l). On
// opsCluster (8 nodes of 8 GPUs) v runs on 4 nodes and l on half of one
// (neither may be preempted), u on 3 (it may), none of them with a limit
// but l. a (4 nodes, a class above every running job) is walked first:
// its search misses while h's hold keeps its target, and its victim
// search finds u's 3 nodes only. Then h's gang starts on its target and
// its hold ends (heldStarted): the GPUs the hold no longer masks are h's,
// a gang just started that a victim search may not take (inside its
// exempt time, or of policy Never), and they run for good. A cycle at
// once was asked for all the same, in vain: a second cycle at the same
// time, h's start confirmed, decides as the first (it starts and
// preempts nothing, and a waits as it did). (Its victim search there
// counts h among the lower-class gangs, as it would after the start of
// any gang walked after a's test: a reason's counts of gangs a victim
// search met are those of its test.)
func TestHeldStartOnTargetMissPreempt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exempt time.Duration
		policy preempt.Policy
	}{
		{name: "inside its exempt time", exempt: 10 * time.Minute, policy: preempt.Requeue},
		{name: "policy never", policy: preempt.Never},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, _ := missPreemptConfig(false, 0, 0)
			cfg.Preemption.ExemptTime = tc.exempt
			cfg.Hold.MinWait = 10 * time.Hour // a is no hold candidate
			c := opsCluster(t)
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
			require.NoError(t, err)
			now := epoch.Add(2 * time.Minute)
			require.NoError(t, e.Submit(Job{ID: "v", Account: "a", Gang: member(placement.NodesOf(4, 8))}, now))
			require.NoError(t, e.Submit(Job{ID: "l", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 4))}, now))
			require.NoError(t, e.Submit(Job{ID: "u", Account: "a", Preemption: preempt.Requeue, Gang: member(placement.NodesOf(3, 8))}, now))
			scheduleStarted(t, e, now)
			var free topology.NodeAlloc
			for i := range e.c.NumNodes() {
				if f := e.ledger.State().Free(topology.NodeID(i)); f != 0 {
					free = topology.NodeAlloc{Node: topology.NodeID(i), GPUs: f}
				}
			}
			require.Equal(t, 4, e.ledger.State().FreeGPUs(), "scene changed")
			require.True(t, e.profileAhead(), "scene changed")
			later := now.Add(time.Minute)
			require.NoError(t, e.Submit(Job{ID: "a", Account: "b", Class: 1, Gang: member(placement.NodesOf(4, 8))}, later))
			require.NoError(t, e.Submit(Job{ID: "h", Account: "b", Preemption: tc.policy, Gang: member(placement.NodesOf(1, 4))}, later))
			h := &hold{job: e.jobs.byID["h"], since: later, target: gang.Allocation{Members: []gang.MemberAllocation{{Name: "m", Pods: 1,
				Assignment: []topology.NodeAlloc{free}}}}}
			h.budget = e.holdBudget(&h.target)
			e.book.addHold(h)
			first := scheduleStarted(t, e, later)
			desc := first.Describe(c, epoch)
			require.Len(t, first.Starts, 1, desc)
			require.Equal(t, "h", first.Starts[0].Job, desc)
			require.Equal(t, []topology.NodeAlloc{free}, first.Starts[0].Allocation.Members[0].Assignment, "h starts on its target: "+desc)
			require.Empty(t, first.Preemptions, desc)
			require.Equal(t, e.cyc.holdMiss, e.jobs.byID["a"], "a's miss recorded")
			require.True(t, e.cyc.holdMissPreempts, "a may look for victims")
			next, ok := e.NextEvent()
			require.False(t, ok && next.Equal(later.Add(time.Nanosecond)), "no cycle at once after h's start on its target: %v", next.Sub(epoch))
			second := scheduleStarted(t, e, later)
			require.Empty(t, second.Starts, second.Describe(c, epoch))
			require.Empty(t, second.Preemptions, second.Describe(c, epoch))
			require.Len(t, second.Waiting, 1, second.Describe(c, epoch))
			require.Equal(t, first.Waiting[0].Code, second.Waiting[0].Code, "a second cycle at the same time decides as the first")
			require.Equal(t, first.Waiting[0].Preempt.Code, second.Waiting[0].Preempt.Code, second.Describe(c, epoch))
		})
	}
}
