package backfill

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestWholeNodeMixedNoNodeSet: a whole-node job with no node set of its
// own, on a cluster of two 8-GPU nodes (n0, n1) and two 4-GPU nodes (n2,
// n3), in a queue with a maximum of 8 GPUs. Submit counted each pod at
// the cluster's largest node and refused WholeNodes(2) ("16 GPUs; queue
// has 8") although n2 and n3 take it within the 8; Submit now refuses
// only what no choice of nodes fits (a lower bound: the smallest nodes),
// and the job starts on the small nodes, charged the 8 GPUs it holds.
// WholeNodes(3) needs at least 4+4+8 = 16 GPUs: refused, the reason
// saying so. With n2 busy, it is reserved on n2-n3 (the free 8-GPU nodes
// take it past its maximum; reserveBlocked), or, with reservations off,
// waits for quota, the reason saying its whole nodes take 16 GPUs where
// they fit now.
func TestWholeNodeMixedNoNodeSet(t *testing.T) {
	c := mixedCluster(t)
	tests := []struct {
		name       string
		pods       int
		preemption preempt.Policy
		guarantee  int
		busy       bool   // a job of another queue holds n2 first
		noResv     bool   // ReservationDepth 0
		refused    string // Submit refuses it, the error saying this ("" accepts)
		nodes      string // where it starts ("" waits)
	}{
		{name: "two whole nodes, preemptible", pods: 2, preemption: preempt.Requeue, nodes: "n[2-3]"},
		{name: "two whole nodes within the guarantee", pods: 2, preemption: preempt.Never, guarantee: 8, nodes: "n[2-3]"},
		{name: "three whole nodes never fit", pods: 3, preemption: preempt.Requeue, refused: "at least 16 GPUs"},
		{name: "not preemptible above the guarantee", pods: 2, preemption: preempt.Never, guarantee: 4, refused: "at least 8 GPUs"},
		{name: "small node busy: reserved there", pods: 2, preemption: preempt.Requeue, busy: true},
		{name: "small node busy, no reservations: waits", pods: 2, preemption: preempt.Requeue, busy: true, noResv: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tt.noResv {
				cfg.ReservationDepth = 0
			}
			cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
				{Name: "q", Guarantee: tt.guarantee, Maximum: 8, BorrowingLimit: Unlimited},
				{Name: "other", Guarantee: 8, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
			}}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			if tt.busy {
				on := placement.NodesOf(1, 4)
				on.Allowed = c.NewNodeSet()
				on.Allowed.Set(2)
				require.NoError(t, e.Submit(Job{ID: "b", Account: "a", Queue: "other", TimeLimit: time.Hour, Gang: member(on)}, epoch))
				require.Len(t, startAll(t, e, epoch).Starts, 1)
			}
			j := Job{ID: "w", Account: "a", Queue: "q", TimeLimit: time.Hour, Preemption: tt.preemption,
				Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.WholeNodes(tt.pods)}}}}
			err = e.Submit(j, epoch)
			if tt.refused != "" {
				if !errors.Is(err, ErrNeverFits) || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("Submit = %v; want ErrNeverFits saying %q", err, tt.refused)
				}
				return
			}
			require.NoError(t, err, "the job fits its queue on the small nodes")
			p := startAll(t, e, epoch)
			st, _ := e.Job("w")
			if tt.nodes == "" {
				require.Empty(t, p.Starts, "w cannot start within its queue's 8 GPUs while n2 is busy")
				var w *Waiting
				for i := range p.Waiting {
					if p.Waiting[i].Job == "w" {
						w = &p.Waiting[i]
					}
				}
				require.NotNil(t, w, "w is told why it waits")
				if !tt.noResv {
					require.Equal(t, StateReserved, st.State)
					require.Equal(t, WaitReserved, w.Code, w.Message(epoch))
					require.Equal(t, epoch.Add(time.Hour), w.Until, "reserved when b ends")
					require.Equal(t, "n[2-3]", st.Nodes, "planned on the small nodes")
				} else {
					require.Equal(t, StatePending, st.State)
					require.Equal(t, WaitQuota, w.Code, w.Message(epoch))
					if msg := w.Message(epoch); !strings.Contains(msg, "take 16 GPUs on the nodes free now (8 on the smallest") {
						t.Errorf("w's reason %q does not say its whole nodes take 16 GPUs where they fit now", msg)
					}
				}
				// n2 ends: w starts there.
				require.NoError(t, e.Finished("b", epoch.Add(time.Minute)))
				p = startAll(t, e, epoch.Add(time.Minute))
				require.Len(t, p.Starts, 1, p.Describe(c, epoch))
				st, _ = e.Job("w")
				require.Equal(t, "n[2-3]", st.Nodes)
				return
			}
			require.Len(t, p.Starts, 1, "w starts: %s", p.Describe(c, epoch))
			require.Equal(t, tt.nodes, st.Nodes)
			require.Equal(t, 8, e.Queues()[0].Used, "queue q is charged the GPUs w holds")
		})
	}
}

// TestWholeNodeHeldByLimits: a whole-node job with no node set on the
// mixed cluster, in a queue with a maximum of 8 GPUs, is held back by its
// queue's limits (heldByLimits: strict order's head, the backlog rule)
// only when they refuse it on the smallest nodes it may use, as the
// quota gate lets it by: it was held while its queue had room for it on
// the 4-GPU nodes, counted at 16 GPUs.
func TestWholeNodeHeldByLimits(t *testing.T) {
	c := mixedCluster(t)
	tests := []struct {
		name  string
		inUse int // GPUs of queue q in use first (a job on n2)
		held  bool
	}{
		{name: "room on the small nodes", held: false},
		{name: "no room even on the small nodes", inUse: 4, held: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Quotas = QuotaConfig{Queues: []QueueSpec{{Name: "q", Maximum: 8, BorrowingLimit: Unlimited}}}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			e.checkEach = true
			if tt.inUse > 0 {
				on := placement.NodesOf(1, tt.inUse)
				on.Allowed = c.NewNodeSet()
				on.Allowed.Set(2)
				require.NoError(t, e.Submit(Job{ID: "b", Account: "a", Queue: "q", TimeLimit: time.Hour, Gang: member(on)}, epoch))
				require.Len(t, startAll(t, e, epoch).Starts, 1)
			}
			require.NoError(t, e.Submit(Job{ID: "w", Account: "a", Queue: "q", TimeLimit: time.Hour, Preemption: preempt.Requeue,
				Gang: member(placement.WholeNodes(2))}, epoch))
			j, _ := e.jobs.lookup("w", epoch, e.cfg.KeepEnded)
			require.NotNil(t, j)
			require.Equal(t, tt.held, e.heldByLimits(j), "held by its queue's limits")
		})
	}
}
