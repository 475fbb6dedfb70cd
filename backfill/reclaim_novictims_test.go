package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestReclaimWithoutVictimsCyclesAtOnce: a reclaim whose claim needs no
// victim (the pod a growing job lends the reclaimer gives its queue's
// parent the room, and it lands on that pod and free GPUs) is started by
// the next cycle's startClaims; no event of the host comes for it (no
// victim to release), so NextEvent must ask for that cycle at once.
// Five nodes; P (32 GPUs, no borrowing above it) holds q and r. G
// (queue r, never preempted, elastic: nodes 0-2, minimum 2, growing)
// started within r's guarantee of 24; restored under 16 each, r borrows
// 8 of q's, and G lends its pod on node 2. X (queue q, 2 of nodes 2-4)
// is gated for quota under P. At class 1, G lends X its pod: the reclaim
// takes it (G shrinks) with no victim. Before the fix NextEvent named
// G's end, ten hours off, and X waited on idle GPUs until then. At class
// 0 G lends nothing and X waits for quota, no claim made. X's reason
// names no victim (it read "waiting for preempted jobs  to release
// their GPUs" before the fix to victimList). A snapshot
// keeps the cycle due at once (Snapshot.SlotOpen).
func TestReclaimWithoutVictimsCyclesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		class     int
		claim     bool // X gets a claim without victims, G lending its pod
		roundTrip bool // snapshot and restore before the next cycle
	}{
		{"class 1: lent pod, claim without victims", 1, true, false},
		{"class 1, restored: the cycle is still due at once", 1, true, true},
		{"class 0: lent nothing, waits for quota", 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, job := growerRestoredUnder16(t, func(quotaJobFn) []Job { return nil })

			at := epoch.Add(2 * time.Minute)
			x := job("X", "q", 2, 5, 2, 0, preempt.Requeue, time.Hour)
			x.Class = tc.class
			require.NoError(t, e.Submit(x, at))
			p := startAll(t, e, at)
			desc := p.Describe(e.c, epoch)
			require.Empty(t, p.Starts, desc)
			require.Empty(t, p.Preemptions, desc)
			cl := e.jobs.byID["X"].claim
			next, ok := e.NextEvent()
			require.True(t, ok)
			if !tc.claim {
				require.Nil(t, cl, desc)
				require.Empty(t, p.PodChanges, desc)
				require.Equal(t, 3, e.jobs.byID["G"].alloc.Members[0].Pods)
				require.True(t, next.After(at.Add(time.Hour)), "nothing to start: next event %v", next.Sub(epoch))
				return
			}
			require.NotNil(t, cl, desc)
			require.True(t, cl.reclaim)
			require.Empty(t, cl.victims)
			require.Len(t, p.PodChanges, 1, desc)
			require.Equal(t, "X", p.PodChanges[0].For)
			require.Equal(t, 2, e.jobs.byID["G"].alloc.Members[0].Pods, "G gave its lent pod up")
			require.Len(t, p.Waiting, 1, desc)
			w := p.Waiting[0]
			require.Equal(t, WaitPreempting, w.Code, desc)
			require.Empty(t, w.Detail, "no victim to name")
			require.NotContains(t, w.Message(epoch), "preempted jobs", "the reason names no victim")
			require.False(t, next.After(at.Add(time.Millisecond)), "a claim without victims starts at the next cycle: next event %v", next.Sub(epoch))
			if tc.roundTrip {
				e = roundTrip(t, e)
				next, ok = e.NextEvent()
				require.True(t, ok)
				require.False(t, next.After(at.Add(time.Millisecond)), "restored: next event %v", next.Sub(epoch))
			}

			p = startAll(t, e, next)
			desc = p.Describe(e.c, epoch)
			require.Len(t, p.Starts, 1, desc)
			require.Equal(t, "X", p.Starts[0].Job)
			require.Equal(t, 16, p.Starts[0].Allocation.GPUs())
		})
	}
}
