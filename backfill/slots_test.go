package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestFreedSlotGoesByRank checks that a reservation slot freed during a
// walk goes to the highest-ranked waiting job, not to the first job
// after the one that freed it. Four 8-GPU nodes, depth 1. Two jobs of two
// nodes run (limits 1 h and 3 h); r (two nodes) holds the one
// reservation, from the first one's end. Then a (every node, a QOS that
// ranks it above r) and b (two nodes, ranked below r) wait: a gets no
// reservation, the slot being r's. When the first running job ends early,
// the walk meets a (still no room), then r, which now fits and starts,
// freeing the slot, then b. b must not take the slot: a, ranked above
// it, wanted it first. NextEvent asks for a cycle at once, and that cycle
// gives the slot to a. Before the fix a job of 512 GPUs waited 30 hours
// on the synthetic workload (seed 12 of 12), while younger jobs took each
// slot that freed behind it.
//
// The next cycle runs at the time NextEvent gives, on an engine restored
// from a snapshot as well. In the variant a-never-fits a node under the 3-hour job is drained
// before a arrives, so a can never get a reservation, and the next cycle
// changes nothing (neither the ledger nor the book): b, kept from the
// slot in the walk before, must get it now. (A test made while the walk
// kept a job from a free slot is stamped with the world it ran in; a
// quiet walk passing b over on that stamp would leave the slot unused:
// setStamp does not stamp such tests.)
//
// Every engine runs the same events: the default paths, the reference
// paths (setNaive), and the default paths checking each skipped test,
// with and without OnlyChangedWaits; their plans must agree.
func TestFreedSlotGoesByRank(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		changes bool // OnlyChangedWaits
		never   bool // a can never fit (a drained node): b gets the slot
	}{
		{"all-waits", false, false},
		{"only-changed-waits", true, false},
		{"all-waits/a-never-fits", false, true},
		{"only-changed-waits/a-never-fits", true, true},
	} {
		changes := tc.changes
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ReservationDepth, cfg.OnlyChangedWaits = 1, changes
			engines := make([]*Engine, 3)
			for i := range engines {
				if engines[i], err = New(c, cfg, flatTree(t, cfg.FairShare, "acct")); err != nil {
					t.Fatal(err)
				}
			}
			engines[1].setNaive(true)
			engines[2].checkEach = true
			now := epoch
			submit := func(id string, nodes int, limit time.Duration, qos float64) {
				t.Helper()
				j := Job{ID: id, Account: "acct", TimeLimit: limit, Submit: now, QOS: qos,
					Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(nodes, 8)}}}}
				for _, e := range engines {
					if err := e.Submit(j, now); err != nil {
						t.Fatal(err)
					}
				}
			}
			schedule := func() *Plan {
				t.Helper()
				plans := make([]*Plan, len(engines))
				for i, e := range engines {
					plans[i] = scheduleStarted(t, e, now)
					if err := e.check(); err != nil {
						t.Fatalf("engine %d at %v: %v", i, now.Sub(epoch), err)
					}
				}
				for i := 1; i < len(plans); i++ {
					a, b := plans[0], plans[i]
					if i == 3 && changes {
						// A restored engine's first cycle lists every
						// waiting job: its decisions must agree.
						a, b = &Plan{Starts: a.Starts, Reservations: a.Reservations, Moves: a.Moves},
							&Plan{Starts: b.Starts, Reservations: b.Reservations, Moves: b.Moves}
					}
					if a, b := planJSON(t, a), planJSON(t, b); a != b {
						t.Fatalf("at %v engine %d's plan differs:\n%s\n%s", now.Sub(epoch), i, a, b)
					}
				}
				return plans[0]
			}
			reserved := func() map[string]time.Duration {
				m := map[string]time.Duration{}
				for _, js := range engines[0].Jobs() {
					if !js.PlannedStart.IsZero() {
						m[js.ID] = js.PlannedStart.Sub(epoch)
					}
				}
				return m
			}

			submit("short", 2, time.Hour, 0)
			submit("long", 2, 3*time.Hour, 0)
			schedule()
			submit("r", 2, time.Hour, 0)
			schedule()
			if got := reserved(); len(got) != 1 || got["r"] != time.Hour {
				t.Fatalf("reservations %v, want r's at 1h", got)
			}
			now = now.Add(time.Minute)
			if tc.never {
				al, _ := engines[0].Allocation("long")
				for _, e := range engines {
					if err := e.Drain(al.Members[0].Assignment[0].Node, now); err != nil {
						t.Fatal(err)
					}
				}
			}
			submit("a", 4, time.Hour, 1) // QOS: ranked above r
			now = now.Add(time.Minute)
			submit("b", 2, time.Hour, 0)
			schedule()
			if got := reserved(); len(got) != 1 || got["r"] != time.Hour {
				t.Fatalf("with a and b waiting: reservations %v, want r's alone", got)
			}

			now = epoch.Add(30 * time.Minute)
			for _, e := range engines {
				if err := e.Finished("short", now); err != nil {
					t.Fatal(err)
				}
			}
			p := schedule()
			if len(p.Starts) != 1 || p.Starts[0].Job != "r" {
				t.Fatalf("starts %+v, want r's alone", p.Starts)
			}
			if got := reserved(); len(got) != 0 {
				t.Fatalf("after r started: reservations %v, want none (the slot freed behind a waits for the next cycle)", got)
			}
			for i, e := range engines {
				if next, ok := e.NextEvent(); !ok || !next.Equal(now.Add(time.Nanosecond)) {
					t.Fatalf("engine %d: NextEvent %v %v, want a cycle at once (%v)", i, next, ok, now.Add(time.Nanosecond))
				}
			}
			// So does an engine restored from a snapshot taken now
			// (Snapshot.SlotOpen); it joins the others.
			restored, err := Restore(c, cfg, engines[0].Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			if next, ok := restored.NextEvent(); !ok || !next.Equal(now.Add(time.Nanosecond)) {
				t.Fatalf("restored: NextEvent %v %v, want a cycle at once", next, ok)
			}
			engines = append(engines, restored)

			now = now.Add(time.Nanosecond) // the cycle NextEvent asks for
			schedule()
			if tc.never {
				// b's two nodes: r's end at 1h30m.
				if got := reserved(); len(got) != 1 || got["b"] != 90*time.Minute {
					t.Fatalf("next cycle, a never fitting: reservations %v, want b's at 1h30m", got)
				}
			} else if got := reserved(); len(got) != 1 || got["a"] != 3*time.Hour {
				// a needs every node: long ends at 3h.
				t.Fatalf("next cycle: reservations %v, want a's at 3h", got)
			}
			for i, e := range engines {
				if next, ok := e.NextEvent(); ok && !next.After(now.Add(time.Nanosecond)) {
					t.Fatalf("engine %d: with the slot taken, NextEvent %v: still at once", i, next)
				}
			}
		})
	}
}

// TestSlotOpenNeedsACycle restores a snapshot that claims a slot was left
// for the next cycle although no cycle ever ran: the claim is ignored, so
// NextEvent never asks for a cycle at a time Schedule refuses (the zero
// time plus a nanosecond), which would have a host loop.
func TestSlotOpenNeedsACycle(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "acct"))
	if err != nil {
		t.Fatal(err)
	}
	snap := e.Snapshot()
	snap.SlotOpen = true
	r, err := Restore(c, cfg, snap)
	if err != nil {
		t.Fatal(err)
	}
	if next, ok := r.NextEvent(); ok {
		t.Fatalf("NextEvent %v: a wake no cycle asked for", next)
	}
}
