package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestHoldEndedForPreemptionReoffers: gang G (class 1, three nodes of a
// leaf) holds nodes 0-2 while the class-0 jobs it could preempt are inside
// their exempt time. Once they are out of it, a job on node 0 ends, and S
// (class 0, ranked above G) is refused node 0's GPUs, held for G; G, tested
// after, preempts three class-0 jobs instead, and its hold ends (preempting)
// in that cycle, leaving node 0 free. As for any hold that ends after it
// refused a job ("the next cycle is due at once", hold mode in the package
// doc), the next cycle is due at once, and S starts in it. Before, the claim
// dropped the hold without looking at its refusals: NextEvent asked for no
// cycle at all, and S waited on free GPUs, told they were held for G.
func TestHoldEndedForPreemptionReoffers(t *testing.T) {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.ReservationDepth = 1
	cfg.FairShare.HalfLife = time.Hour
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
	cfg.Preemption = PreemptionConfig{Enabled: true, ExemptTime: 30 * time.Minute, Grace: 5 * time.Minute}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
	require.NoError(t, err)
	e.checkEach = true
	one := func(id string, class int) Job {
		return Job{ID: id, Account: "a", Class: class, Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}
	}
	for _, id := range []string{"a0", "a1", "a2", "a3"} {
		require.NoError(t, e.Submit(one(id, 1), epoch))
	}
	startAll(t, e, epoch)
	for _, id := range []string{"b4", "b5", "b6", "b7"} {
		require.NoError(t, e.Submit(one(id, 0), epoch.Add(10*time.Minute)))
	}
	startAll(t, e, epoch.Add(10*time.Minute))
	req := placement.NodesOf(3, 8)
	req.Required = "leaf"
	require.NoError(t, e.Submit(Job{ID: "G", Account: "b", Class: 1, Gang: member(req)}, epoch.Add(11*time.Minute)))
	p := startAll(t, e, epoch.Add(12*time.Minute))
	require.Len(t, p.Holds, 1, p.Describe(c, epoch))
	now := epoch.Add(41 * time.Minute)
	require.NoError(t, e.Finished("a0", now))
	s := one("S", 0)
	s.QOS = 1
	require.NoError(t, e.Submit(s, now))
	p = startAll(t, e, now)
	require.Len(t, p.HoldEnds, 1, p.Describe(c, epoch))
	require.Equal(t, HoldPreempting, p.HoldEnds[0].Cause, p.Describe(c, epoch))
	require.Len(t, p.Preemptions, 3, p.Describe(c, epoch))
	startsAtOnce(t, e, now, "S")
}
