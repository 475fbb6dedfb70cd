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
// without limits (hold mode); at depth 1, 16 and in strict order; a third
// of the workloads with preemption (claims), a quarter with patience (a
// job's own time, which NextEvent names), a fifth under queues (one of
// them in strict order).
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
			if seed%3 == 1 {
				cfg.Preemption = PreemptionConfig{Enabled: true, ExemptTime: 10 * time.Minute, Grace: 5 * time.Minute, MinGain: 5 * time.Minute}
			}
			if seed%5 == 3 {
				cfg.Quotas.Queues = []QueueSpec{
					{Name: "a", Guarantee: 48, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
					{Name: "b", Guarantee: 48, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: 96},
					{Name: "c", Guarantee: 32, BorrowingLimit: 32, LendingLimit: Unlimited, Maximum: Unlimited, StrictOrder: true},
				}
			}
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
				if seed%4 == 2 && r.IntN(3) == 0 {
					jobs[i].Patience = Patience{MaxDomains: 1, Wait: time.Duration(10+r.IntN(50)) * time.Minute}
				}
				if cfg.Quotas.Queues != nil {
					jobs[i].Queue = jobs[i].Account
				}
			}
			if cfg.Preemption.Enabled {
				preemptWorkload(r, jobs)
			}
			h := newHost(t, e, jobs, seed)
			h.quotaMoves = cfg.Quotas.Queues != nil // the quota promises are other tests' concern
			if cfg.Preemption.Enabled {
				rr := rand.New(rand.NewPCG(seed, 32))
				h.release = func() time.Duration { return time.Duration(rr.IntN(20*60)) * time.Second }
			}
			owed := map[string]bool{} // the jobs owed a test, as the host sees them
			run, idle := 0, 0         // cycles asked for at once since the last event; of them, with nothing owed
			var named time.Time       // when NextEvent last let the host sleep until
			event := false            // an event was reported since the last cycle
			h.reported = func() {
				run, event = 0, true
				for _, s := range h.e.Jobs() {
					if s.State.Waiting() {
						owed[s.ID] = true
					}
				}
			}
			h.afterCycle = func(p *Plan) {
				if !event && !named.IsZero() && !p.Time.Before(named) {
					// A cycle at a time NextEvent named: every job that
					// waited then is owed a test, as after an event.
					run = 0
					for _, s := range p.Starts {
						owed[s.Job] = true
					}
					for _, w := range p.Waiting {
						owed[w.Job] = true
					}
				}
				event, named = false, time.Time{}
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
				for id := range owed {
					if s, ok := h.e.Job(id); !ok || !s.State.Waiting() {
						delete(owed, id)
					}
				}
				next, ok := h.e.NextEvent()
				if ok && next.Equal(h.e.Now().Add(time.Nanosecond)) {
					atOnce++
					if run++; run > 2*(40/cfg.MaxJobsTested+1) {
						t.Fatalf("at %v: %d cycles at once since the last event", h.e.Now().Sub(epoch), run)
					}
					// With nothing owed, only a free reservation slot or
					// held GPUs let go asks for a cycle at once: not for
					// long.
					if idle++; len(owed) > 0 {
						idle = 0
					}
					if idle > 3 {
						t.Fatalf("at %v: %d cycles asked for at once with no job owed a test", h.e.Now().Sub(epoch), idle)
					}
					return
				}
				sleeps++
				idle, named = 0, next
				for id := range owed {
					t.Fatalf("at %v: job %s waited at the last event and was not tested since, but NextEvent lets the host sleep until %v",
						h.e.Now().Sub(epoch), id, next.Sub(epoch))
				}
			}
			h.run()
		})
	}
	t.Logf("%d waiting jobs passed over by windows, %d cycles asked for at once, %d sleeps after a cycle", passed, atOnce, sleeps)
	if passed == 0 || atOnce == 0 {
		t.Errorf("no window left a job untested (%d) or no cycle was asked for at once (%d)", passed, atOnce)
	}
}
