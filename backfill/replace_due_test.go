package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestReplaceKeepsOffDueReservation: a reservation that is due, its job
// not started, still promises its planned GPUs after the end it was
// planned with has passed (a host that runs its cycle late: the next
// cycle moves that end with its time). A pod re-placed between cycles, on
// a node failure (OnNodeFailure Replace) or by ReplacePod, must keep off
// its nodes, so that the late cycle starts it there as the doc promises.
// Before the fix, promisedNodes took such a reservation for one that had
// ended and put the pod on its free GPUs: the late cycle could not start
// it and dropped it with cause unknown.
//
// Three nodes of 8 GPUs: "over" (one whole node, 10 minutes) and "long"
// (2 GPUs of another, no limit, Replace) run; "big" (two whole nodes,
// 30 minutes) is reserved from over's end on over's node and the free
// one. Over finishes on time, and no cycle runs until after big's planned
// end; then long's node fails, or the host moves long's pod.
func TestReplaceKeepsOffDueReservation(t *testing.T) {
	tests := []struct {
		name string
		// move re-places long's pod at now and reports whether it moved.
		move func(t *testing.T, e *Engine, node topology.NodeID, now time.Time) bool
	}{
		{"node failure with Replace", func(t *testing.T, e *Engine, node topology.NodeID, now time.Time) bool {
			evs, err := e.NodeDown(node, now)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || evs[0].Job != "long" {
				t.Fatalf("node events %+v; want one for long", evs)
			}
			return evs[0].Replaced
		}},
		{"ReplacePod", func(t *testing.T, e *Engine, _ topology.NodeID, now time.Time) bool {
			rep, err := e.ReplacePod("long", "m", 0, now)
			if err != nil {
				t.Fatal(err)
			}
			return rep.Replaced
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 3, GPUsPerNode: 8})
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			e.checkEach = true
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(e.Submit(Job{ID: "over", Account: "a", TimeLimit: 10 * time.Minute, Gang: member(placement.NodesOf(1, 8))}, epoch))
			must(e.Submit(Job{ID: "long", Account: "a", OnNodeFailure: Replace, Gang: member(placement.NodesOf(1, 2))}, epoch))
			p, err := e.Schedule(epoch)
			must(err)
			if len(p.Starts) != 2 {
				t.Fatalf("starts %+v; want over and long", p.Starts)
			}
			must(e.Started("over", epoch))
			must(e.Started("long", epoch))
			must(e.Submit(Job{ID: "big", Account: "a", TimeLimit: 30 * time.Minute, Gang: member(placement.NodesOf(2, 8))}, epoch))
			p, err = e.Schedule(epoch)
			must(err)
			if len(p.Reservations) != 1 || p.Reservations[0].Job != "big" || !p.Reservations[0].Start.Equal(epoch.Add(10*time.Minute)) {
				t.Fatalf("reservations %+v; want big's at +10m", p.Reservations)
			}
			planned := p.Reservations[0].Allocation
			longAt, _ := e.Allocation("long")
			longNode := longAt.Members[0].Assignment[0].Node
			if planned.OnNode(longNode) {
				t.Fatalf("big planned on long's node %d", longNode)
			}
			must(e.Finished("over", epoch.Add(10*time.Minute)))

			late := epoch.Add(41 * time.Minute) // after big's planned end
			moved := tt.move(t, e, longNode, late)
			if a, ok := e.Allocation("long"); ok {
				for _, x := range a.Members[0].Assignment {
					if planned.OnNode(x.Node) {
						t.Fatalf("long re-placed on node %d, planned for big's due reservation", x.Node)
					}
				}
			}
			if moved {
				t.Fatal("long moved, but every node with room is planned for big")
			}
			p, err = e.Schedule(late)
			must(err)
			if len(p.Starts) != 1 || p.Starts[0].Job != "big" || p.Starts[0].Allocation.GPUs() != planned.GPUs() {
				t.Fatalf("the late cycle starts %+v, moves %+v; want big on its planned GPUs", p.Starts, p.Moves)
			}
			for _, m := range planned.Members[0].Assignment {
				if !p.Starts[0].Allocation.OnNode(m.Node) {
					t.Fatalf("big started on %+v, planned on %+v", p.Starts[0].Allocation.Members, planned.Members)
				}
			}
		})
	}
}
