package backfill

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestWindowsReachEveryJob: with a MaxJobsTested window, a host that
// sleeps until NextEvent (or an event), waking late as hosts do, has every
// job that waited at an event tested (or given a reason the cycle decided:
// started, reserved, behind a strict blocker) before NextEvent lets it
// sleep, and the cycles it asks for at once stop within two rounds of
// windows. Windows of 1 to 4 jobs; fair-share or age order; jobs with and
// without limits (hold mode); at depth 1, 16 and in strict order.
func TestWindowsReachEveryJob(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	seeds := 60
	if testing.Short() {
		seeds = 12
	}
	var passed, atOnce, sleeps int
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 31))
			cfg := DefaultConfig()
			cfg.MaxJobsTested = 1 + int(seed%4)
			cfg.ReservationDepth = []int{1, 16}[seed/4%2]
			cfg.Strict = seed%12 == 11
			if seed%3 == 0 {
				cfg.FairShare.Weights = fairshare.Weights{Age: 1000}
			}
			cfg.FairShare.HalfLife = time.Hour
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
			if err != nil {
				t.Fatal(err)
			}
			e.checkEach = seed%5 == 0
			jobs := randomWorkload(r, c, 40, true)
			for i := range jobs {
				if r.IntN(4) == 0 {
					jobs[i].TimeLimit = 0
				}
			}
			h := newHost(t, e, jobs, seed)
			owed := map[string]bool{}
			run := 0 // cycles asked for at once since the last event
			h.reported = func() {
				run = 0
				for _, s := range h.e.Jobs() {
					if s.State.Waiting() {
						owed[s.ID] = true
					}
				}
			}
			h.afterCycle = func(p *Plan) {
				for _, s := range p.Starts {
					delete(owed, s.Job)
				}
				for _, w := range p.Waiting {
					if w.Code == WaitPriority && w.Blocker == "" {
						passed++ // outside the window
					} else {
						delete(owed, w.Job)
					}
				}
				if next, ok := h.e.NextEvent(); ok && next.Equal(h.e.Now().Add(time.Nanosecond)) {
					atOnce++
					if run++; run > 2*(40/cfg.MaxJobsTested+1) {
						t.Fatalf("at %v: %d cycles at once since the last event", h.e.Now().Sub(epoch), run)
					}
					return
				}
				sleeps++
				for id := range owed {
					if s, ok := h.e.Job(id); ok && s.State.Waiting() {
						next, _ := h.e.NextEvent()
						t.Fatalf("at %v: job %s waited at the last event and was not tested since, but NextEvent lets the host sleep until %v",
							h.e.Now().Sub(epoch), id, next.Sub(epoch))
					}
				}
				clear(owed)
			}
			h.run()
		})
	}
	t.Logf("%d waiting jobs passed over by windows, %d cycles asked for at once, %d sleeps after a cycle", passed, atOnce, sleeps)
	if passed == 0 || atOnce == 0 {
		t.Errorf("no window left a job untested (%d) or no cycle was asked for at once (%d)", passed, atOnce)
	}
}
