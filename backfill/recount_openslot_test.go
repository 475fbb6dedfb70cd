package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestRecountOpenSlotTaken: a job tested while a reservation slot was
// open to it, for which no start could be planned, is told no reason for
// holding no reservation (NoSlot 0). When a job ranked below it takes the
// last slot later in the walk, the first cycle tells it the book is full
// (SlotsTaken, recountWaits), as a second cycle at the same time and an
// engine restored after the first cycle tell it; with OnlyChangedWaits
// the second cycle lists nothing. Before stop 70 the first cycle kept
// NoSlot 0 (found by TestReasonRepeatProperty's preemption mode).
//
// The cluster: two leaves of two 8-GPU nodes, EASY (one slot). x, without
// a time limit, holds leaf 1; y, without one, node 0; z node 1 until
// t+2h. j needs both nodes of a leaf, which no end frees: no start. low,
// ranked below j, needs one node and reserves z's.
func TestRecountOpenSlotTaken(t *testing.T) {
	for _, changes := range []bool{false, true} { // Config.OnlyChangedWaits
		t.Run(map[bool]string{false: "every reason", true: "changes only"}[changes], func(t *testing.T) {
			c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Hold.Enabled = false
			cfg.ReservationDepth = 1
			cfg.OnlyChangedWaits = changes
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			job := func(id string, limit time.Duration, req placement.Request) Job {
				return Job{ID: id, Account: "a", TimeLimit: limit, Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}}
			}
			submit := func(at time.Time, j Job) {
				t.Helper()
				j.Submit = at
				if err := e.Submit(j, at); err != nil {
					t.Fatal(err)
				}
			}
			now := epoch
			submit(now, job("y", 0, placement.NodesOf(1, 8)))
			submit(now.Add(time.Second), job("z", 2*time.Hour, placement.NodesOf(1, 8)))
			submit(now.Add(2*time.Second), job("x", 0, placement.NodesOf(2, 8)))
			if p := scheduleStarted(t, e, now.Add(2*time.Second)); len(p.Starts) != 3 {
				t.Fatalf("x, y and z did not all start:\n%s", p.Describe(c, epoch))
			}
			now = now.Add(time.Minute)
			submit(now, job("j", time.Hour, placement.Request{Nodes: 2, GPUsPerNode: 8, Required: "leaf"}))
			submit(now.Add(time.Second), job("low", time.Hour, placement.NodesOf(1, 8)))
			now = now.Add(time.Minute)
			first := scheduleStarted(t, e, now)
			if len(first.Reservations) != 1 || first.Reservations[0].Job != "low" {
				t.Fatalf("want low reserved below j:\n%s", first.Describe(c, epoch))
			}
			w := waitingOf(first, "j")
			if w == nil || w.Code != WaitResources {
				t.Fatalf("want j waiting for resources:\n%s", first.Describe(c, epoch))
			}
			if w.NoSlot != SlotsTaken {
				t.Errorf("first cycle told j: %s (NoSlot %v), want SlotsTaken", w.Message(epoch), w.NoSlot)
			}

			fresh := cfg
			fresh.OnlyChangedWaits = false
			f, err := Restore(c, fresh, e.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			fp := scheduleStarted(t, f, now)
			if fw := waitingOf(fp, "j"); fw == nil || *fw != *w {
				t.Errorf("first cycle told j:\n%s\nthe restored engine:\n%s", w.Message(epoch), fp.Describe(c, epoch))
			}
			second := scheduleStarted(t, e, now)
			if changes {
				if len(second.Waiting) != 0 {
					t.Errorf("second cycle listed changed reasons:\n%s", second.Describe(c, epoch))
				}
			} else if sw := waitingOf(second, "j"); sw == nil || *sw != *w {
				t.Errorf("first cycle told j:\n%s\nthe second:\n%s", w.Message(epoch), second.Describe(c, epoch))
			}
		})
	}
}
