package backfill

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// holdWatch checks hold mode's promises cycle by cycle, for a host.
type holdWatch struct {
	t          testing.TB
	e          *Engine
	hysteresis time.Duration
	slack      time.Duration               // the host's largest lateness
	blocked    map[string]time.Time        // first cycle a job waited behind a lower-ranked hold
	held       map[string]*gang.Allocation // before the cycle: each hold's GPUs free then (held)
	holds      int
	takeovers  int
}

// before records the GPUs each hold holds before a cycle.
func (w *holdWatch) before() {
	w.held = map[string]*gang.Allocation{}
	s := w.e.ledger.State()
	for _, h := range w.e.book.holds {
		a := &gang.Allocation{ID: h.job.job.ID}
		for _, m := range h.target.Members {
			ma := gang.MemberAllocation{Name: m.Name}
			for _, x := range m.Assignment {
				if free := x.GPUs & s.Free(x.Node); free != 0 {
					ma.Assignment = append(ma.Assignment, topology.NodeAlloc{Node: x.Node, GPUs: free})
				}
			}
			a.Members = append(a.Members, ma)
		}
		w.held[h.job.job.ID] = a
	}
}

// after checks a cycle's plan.
func (w *holdWatch) after(p *Plan) {
	w.checkHeldGPUs(p)
	w.checkReasons(p)
	w.checkHysteresis(p)
	w.holds += len(p.Holds)
}

// checkHeldGPUs: the GPUs a hold held before the cycle go to no other job
// in it, unless the hold ended (its end is in the plan), its gang started,
// or it moved to another target.
func (w *holdWatch) checkHeldGPUs(p *Plan) {
	ended := map[string]bool{}
	for _, h := range p.HoldEnds {
		ended[h.Job] = true
	}
	for _, s := range p.Starts {
		ended[s.Job] = true
	}
	for id, held := range w.held {
		if ended[id] {
			continue
		}
		h := w.e.book.holdOf(w.e.jobs.byID[id])
		for _, s := range p.Starts {
			if s.Job != id && intersects(&s.Allocation, held) && (h == nil || intersects(&s.Allocation, &h.target)) {
				w.t.Fatalf("cycle at %v: %s started on GPUs held for %s", p.Time.Sub(epoch), s.Job, id)
			}
		}
	}
}

// checkReasons: every reason about a hold matches the plan: a held job's
// counts are its hold's; a job blocked by a hold names a job the plan
// shows holding, or starting later in the same cycle, or whose hold the
// plan shows ending later in it, and then only with the next cycle due at
// once (NextEvent), to offer the hold's GPUs again in priority order.
func (w *holdWatch) checkReasons(p *Plan) {
	holds := map[string]HoldStatus{}
	for _, h := range p.Holds {
		holds[h.Job] = h
	}
	// A hold that ended in the walk after it refused a job: the next
	// cycle offers its GPUs at once (the reason is then of a hold the
	// plan shows ending).
	gone := map[string]bool{}
	next, _ := w.e.NextEvent()
	reoffered := next.Equal(p.Time.Add(time.Nanosecond))
	for _, h := range p.HoldEnds {
		gone[h.Job] = reoffered && h.Cause != HoldBudgetSpent
	}
	for _, s := range p.Starts {
		gone[s.Job] = true // it took the GPUs it held
	}
	for _, wt := range p.Waiting {
		switch wt.Code {
		case WaitHeld:
			h, ok := holds[wt.Job]
			if !ok || wt.Hold == nil || *wt.Hold != h {
				w.t.Fatalf("cycle at %v: %s says it is held (%+v); the plan's hold: %+v", p.Time.Sub(epoch), wt.Job, wt.Hold, h)
			}
		case WaitHold, WaitForHold:
			if _, ok := holds[wt.Blocker]; wt.Blocker != "" && !ok && !gone[wt.Blocker] {
				w.t.Fatalf("cycle at %v: %s says %s holds its GPUs, but %s has no hold (hold ends %+v; next cycle at once: %v)", p.Time.Sub(epoch), wt.Job, wt.Blocker, wt.Blocker, p.HoldEnds, reoffered)
			}
		}
	}
}

// checkHysteresis: a job that waits behind a lower-ranked gang's hold does
// so for at most the hysteresis (plus the host's lateness).
func (w *holdWatch) checkHysteresis(p *Plan) {
	rank := map[string]int{}
	for i, wt := range p.Waiting {
		rank[wt.Job] = i
	}
	now := map[string]bool{}
	for _, wt := range p.Waiting {
		if wt.Code != WaitForHold || wt.Blocker == "" || wt.Until.IsZero() {
			continue
		}
		if r, waits := rank[wt.Blocker]; waits && r < rank[wt.Job] {
			w.t.Fatalf("cycle at %v: %s waits behind %s's hold, said lower-ranked, which ranks higher", p.Time.Sub(epoch), wt.Job, wt.Blocker)
		}
		now[wt.Job] = true
		first, seen := w.blocked[wt.Job]
		if !seen {
			w.blocked[wt.Job] = p.Time
			continue
		}
		if p.Time.Sub(first) > w.hysteresis+w.slack {
			w.t.Fatalf("cycle at %v: %s has waited behind lower-ranked holds since %v", p.Time.Sub(epoch), wt.Job, first.Sub(epoch))
		}
	}
	for id := range w.blocked {
		if !now[id] {
			delete(w.blocked, id)
			w.takeovers++
		}
	}
}

// TestHoldProperties: over seeded workloads, most jobs without a time
// limit, driven late (host), with hold mode on for gangs of 16 GPUs or
// more (several holds, small budgets, a short hysteresis): held GPUs never
// go to another job while the hold lasts, every hold reason matches the
// plan's holds, and no job waits behind a lower-ranked gang's hold for
// longer than the hysteresis. Every invariant is checked after every
// call in some of the runs.
func TestHoldProperties(t *testing.T) {
	seeds := 500
	if testing.Short() {
		seeds = 40
	}
	var holds, takeovers, ends int
	for seed := range uint64(seeds) {
		h, w := holdHost(t, seed)
		h.e.checkEach = seed%25 == 0
		h.beforeCycle, h.afterCycle = w.before, func(p *Plan) {
			w.after(p)
			ends += len(p.HoldEnds)
		}
		h.run()
		holds += w.holds
		takeovers += w.takeovers
	}
	t.Logf("%d hold-cycles, %d hold ends, %d waits behind lower-ranked holds ended", holds, ends, takeovers)
	if holds < seeds {
		t.Errorf("too easy: %d hold-cycles over %d workloads", holds, seeds)
	}
}

func holdHost(t *testing.T, seed uint64) (*host, *holdWatch) {
	r := rand.New(rand.NewPCG(seed, 13))
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReservationDepth = []int{0, 1, 16}[seed%3]
	cfg.FairShare.HalfLife = time.Hour
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MinWait: time.Duration(r.IntN(3)) * 10 * time.Minute, MaxShare: 0.5,
		CapWait: 30 * time.Minute, Budget: time.Duration(1+r.IntN(3)) * 30 * time.Minute, Hysteresis: 20 * time.Minute, MaxHolds: 1 + r.IntN(3)}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := randomWorkload(r, c, 40, true)
	for i := range jobs {
		if r.IntN(4) != 0 {
			jobs[i].TimeLimit = 0
		}
	}
	w := &holdWatch{t: t, e: e, hysteresis: cfg.Hold.Hysteresis, slack: 15 * time.Minute, blocked: map[string]time.Time{}}
	return newHost(t, e, jobs, seed), w
}
