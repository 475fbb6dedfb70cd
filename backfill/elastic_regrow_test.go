package backfill

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestLenderRegrowsAfterDroppedClaim: v (2 nodes pinned to nodes 0-1)
// and g (elastic: 6 nodes, minimum 2, growing) run on the 8 nodes; u
// (class 1, 6 nodes) preempts v and its claim takes g's 4 lent pods
// (nodes 4-7). Then u is cancelled (its claim dropped without starting),
// or starts; three 8-node jobs b0-b2 wait (depth 1: b0 is reserved at
// v's end, b1 and b2 hold no reservation), v requeued restarts on nodes
// 0-1. Before the fix g stayed at 2 pods and nodes 4-7 sat idle until
// b0's start 10 hours later: grow ran only when every waiting job held a
// reservation, though the claim took those pods for nothing and no
// waiting job fits them. Now g grows back by the pods the dropped claim
// took, off b0's reservation (which does not move); a claim that starts
// owes its lender nothing. Each case runs three times: without a restart,
// with the engine restored from its snapshot just after the claim (the
// claim's lenders are in ClaimRecord.Lent), and just after the cancel
// (the pods owed are in JobRecord.OwedPods): the restored engine regrows
// g as the original does.
func TestLenderRegrowsAfterDroppedClaim(t *testing.T) {
	for _, restart := range []string{"none", "after the claim", "after the cancel"} {
		t.Run("restart "+restart, func(t *testing.T) { lenderRegrows(t, restart) })
	}
}

func lenderRegrows(t *testing.T, restart string) {
	for _, tc := range []struct {
		name    string
		cancel  bool // u cancelled: its claim dropped without starting
		backlog int
		gPods   int // g's pods at the end
	}{
		{"claim dropped, no backlog", true, 0, 6},
		{"claim dropped, backlog without reservations", true, 3, 6},
		{"claim started, backlog without reservations", false, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := lendingScene(t, 1, 0)

			at := epoch.Add(20 * time.Minute)
			u := Job{ID: "u", Account: "a", TimeLimit: 30 * time.Minute, Class: 1, Gang: member(placement.NodesOf(6, 8))}
			require.NoError(t, e.Submit(u, at))
			p := startAll(t, e, at)
			require.Len(t, p.Preemptions, 1, p.Describe(c, epoch))
			require.Len(t, p.PodChanges, 1, p.Describe(c, epoch))
			require.Len(t, p.PodChanges[0].Pods, 4, "the claim takes g's lent pods")
			if restart == "after the claim" {
				e = roundTrip(t, e)
			}
			at = at.Add(time.Minute)
			if tc.cancel {
				require.NoError(t, e.Cancel("u", at))
			}
			if restart == "after the cancel" {
				e = roundTrip(t, e)
			}
			for i := range tc.backlog {
				b := Job{ID: fmt.Sprintf("b%d", i), Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(8, 8))}
				require.NoError(t, e.Submit(b, at))
			}
			at = at.Add(time.Minute)
			require.NoError(t, e.Preempted("v", at))
			var resv []Reservation
			for i := range 4 {
				p = startAll(t, e, at.Add(time.Duration(i)*time.Minute))
				if tc.backlog > 0 {
					require.Len(t, p.Reservations, 1, p.Describe(c, epoch))
					if resv != nil {
						require.Equal(t, resv[0].Start, p.Reservations[0].Start, "growth moves no reservation")
					}
					resv = append(resv[:0], p.Reservations...)
				}
			}
			gr := e.jobs.byID["g"]
			require.Equal(t, StateRunning, gr.phase)
			require.Equal(t, tc.gPods, gr.alloc.Members[0].Pods, p.Describe(c, epoch))
			require.Zero(t, gr.owed)
		})
	}
}

// TestRestoreOwedAndLentChecked: Restore trusts neither a job's owed
// pods nor a claim's lenders. A snapshot taken just after u's claim took
// g's 4 lent pods is edited: an owed count below zero, on a job that does
// not grow or is not active, or above its gang's pods, and a lender that
// is unknown, the claim's own job, listed twice, or with no pods or more
// than its gang has, are each refused with ErrRestore; the snapshot as
// taken restores.
func TestRestoreOwedAndLentChecked(t *testing.T) {
	c, e := lendingScene(t, 1, 0)
	at := epoch.Add(20 * time.Minute)
	require.NoError(t, e.Submit(Job{ID: "u", Account: "a", TimeLimit: 30 * time.Minute, Class: 1, Gang: member(placement.NodesOf(6, 8))}, at))
	require.Len(t, startAll(t, e, at).Preemptions, 1)
	base := e.Snapshot()
	require.Len(t, base.Claims, 1)
	require.Equal(t, []LentRecord{{Job: "g", Pods: 4}}, base.Claims[0].Lent)
	job := func(s *Snapshot, id string) *JobRecord {
		for i := range s.Jobs {
			if s.Jobs[i].ID == id {
				return &s.Jobs[i]
			}
		}
		t.Fatalf("no job %s in the snapshot", id)
		return nil
	}
	for _, tc := range []struct {
		name string
		edit func(s *Snapshot)
		ok   bool
	}{
		{"as taken", func(*Snapshot) {}, true},
		{"owed pods", func(s *Snapshot) { job(s, "g").OwedPods = 4 }, true},
		{"owed below zero", func(s *Snapshot) { job(s, "g").OwedPods = -1 }, false},
		{"owed above the gang's pods", func(s *Snapshot) { job(s, "g").OwedPods = 7 }, false},
		{"owed to a job that does not grow", func(s *Snapshot) { job(s, "v").OwedPods = 1 }, false},
		{"owed to a waiting job", func(s *Snapshot) { job(s, "u").OwedPods = 1 }, false},
		{"unknown lender", func(s *Snapshot) { s.Claims[0].Lent[0].Job = "x" }, false},
		{"lender is the claim's job", func(s *Snapshot) { s.Claims[0].Lent[0].Job = "u" }, false},
		{"lender not growing", func(s *Snapshot) { s.Claims[0].Lent[0].Job = "v" }, false},
		{"lender twice", func(s *Snapshot) { s.Claims[0].Lent = append(s.Claims[0].Lent, s.Claims[0].Lent[0]) }, false},
		{"no pods", func(s *Snapshot) { s.Claims[0].Lent[0].Pods = 0 }, false},
		{"more pods than the gang", func(s *Snapshot) { s.Claims[0].Lent[0].Pods = 7 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(base)
			require.NoError(t, err)
			var s Snapshot
			require.NoError(t, json.Unmarshal(data, &s))
			tc.edit(&s)
			_, err = Restore(c, e.cfg, &s)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrRestore)
		})
	}
}
