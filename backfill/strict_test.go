package backfill

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestStrictOrder: queue q may use 16 GPUs (two nodes). Two one-node jobs
// run in it (one for 25 minutes, one for 50); a two-node job B, then six
// one-node jobs S0..S5 of 50 minutes each, are submitted behind them, and
// a job of queue o beside them. Each running job frees half of what B
// needs. Without StrictOrder (Kueue's BestEffortFIFO) each freed node
// goes to the next small job, and B waits until the small jobs are gone:
// it starts last. With it, the small jobs wait behind B (their reason
// names it), B starts in the first cycle after both nodes are free (50
// minutes), and then the small jobs. Queue o's job, in a queue without
// strict order, starts at once either way: the order is per queue.
func TestStrictOrder(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			e, job := quotaRig(t, 8, []QueueSpec{
				{Name: "q", Guarantee: 16, Maximum: 16, BorrowingLimit: 0, LendingLimit: Unlimited, StrictOrder: strict},
				{Name: "o", Guarantee: 8, Maximum: 8, BorrowingLimit: 0, LendingLimit: Unlimited},
			}, nil)
			runs := map[string]time.Duration{"A1": 25 * time.Minute}
			ends := map[string]time.Time{}
			var order []string
			step := func(now time.Time) *Plan {
				for id, end := range ends {
					if !end.After(now) {
						require.NoError(t, e.Finished(id, now))
						delete(ends, id)
					}
				}
				p := startAll(t, e, now)
				for _, s := range p.Starts {
					d, ok := runs[s.Job]
					if !ok {
						d = 50 * time.Minute
					}
					ends[s.Job], order = now.Add(d), append(order, s.Job)
				}
				return p
			}
			require.NoError(t, e.Submit(job("A1", "q", 0, 8, 1, 0, preempt.Never, time.Hour), epoch))
			require.NoError(t, e.Submit(job("A2", "q", 0, 8, 1, 0, preempt.Never, time.Hour), epoch))
			step(epoch)
			require.NoError(t, e.Submit(job("B", "q", 0, 8, 2, 0, preempt.Never, time.Hour), epoch.Add(time.Minute)))
			for i := range 6 {
				require.NoError(t, e.Submit(job(fmt.Sprintf("S%d", i), "q", 0, 8, 1, 0, preempt.Never, time.Hour), epoch.Add(2*time.Minute)))
			}
			require.NoError(t, e.Submit(job("O", "o", 0, 8, 1, 0, preempt.Never, time.Hour), epoch.Add(2*time.Minute)))
			started := map[string]time.Duration{}
			for m := 3; m < 8*60; m += 5 {
				now := epoch.Add(time.Duration(m) * time.Minute)
				p := step(now)
				for _, s := range p.Starts {
					started[s.Job] = now.Sub(epoch)
				}
				if w := waitingOf(p, "S0"); strict && w != nil && started["B"] == 0 {
					require.Equal(t, WaitQuota, w.Code, p.Describe(e.c, epoch))
					require.Equal(t, "B", w.Blocker)
					require.Contains(t, w.Detail, "queue q starts its jobs in rank order (strict order), and job B")
				}
			}
			require.Equal(t, 3*time.Minute, started["O"], "queue o's job starts at once")
			require.Len(t, started, 8, "every job started: %v", order)
			if strict {
				require.Equal(t, 53*time.Minute, started["B"], "B starts in the first cycle after A2 ends: %v", order)
				require.Equal(t, []string{"A1", "A2", "O", "B"}, order[:4], "no small job of q starts before B")
				return
			}
			require.Equal(t, "B", order[len(order)-1], "B starts last: %v", order)
			for i := range 6 {
				require.Less(t, started[fmt.Sprintf("S%d", i)], started["B"])
			}
		})
	}
}

// TestStrictOrderCases: queue q (16 GPUs, strict) runs A on one node;
// B asks for two, S for one, behind it. In each case S must not start
// while B waits, and what the case names holds:
//   - window: MaxJobsTested 1 (a window of one job): B, the queue's first
//     job, is tested every cycle, so S never gets a window of its own;
//   - backlog: S has waited past BacklogAfter, held back by strict order
//     alone: no backlog is named (the queue is at its limit, not the
//     cluster);
//   - entitled: q guarantees 16 and may borrow 8 more (B, three nodes,
//     would borrow; S is covered): S does not go ahead of B in the
//     entitled-first order;
//   - drained: B asks for the four nodes of a cluster with one drained:
//     it could never run, holds nothing back, and S starts.
func TestStrictOrderCases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    QueueSpec
		nodes   int // of B
		tune    func(*Config)
		drain   bool
		sStarts bool
	}{
		{name: "window", spec: QueueSpec{Guarantee: 16, Maximum: 16}, nodes: 2, tune: func(c *Config) { c.MaxJobsTested = 1 }},
		{name: "backlog", spec: QueueSpec{Guarantee: 16, Maximum: 16}, nodes: 2, tune: func(c *Config) { c.BacklogAfter, c.ReservationDepth = 30*time.Minute, 4 }},
		{name: "entitled", spec: QueueSpec{Guarantee: 16, Maximum: Unlimited, BorrowingLimit: 8}, nodes: 3},
		{name: "drained", spec: QueueSpec{Guarantee: 32, Maximum: 32}, nodes: 4, drain: true, sStarts: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.spec
			q.Name, q.LendingLimit, q.StrictOrder = "q", Unlimited, true
			e, job := quotaRig(t, 4, []QueueSpec{q}, tc.tune)
			require.NoError(t, e.Submit(job("A", "q", 0, 4, 1, 0, preempt.Requeue, 3*time.Hour), epoch))
			startAll(t, e, epoch)
			if tc.drain {
				require.NoError(t, e.Drain(3, epoch.Add(time.Minute)))
			}
			require.NoError(t, e.Submit(job("B", "q", 0, 4, tc.nodes, 0, preempt.Requeue, time.Hour), epoch.Add(time.Minute)))
			require.NoError(t, e.Submit(job("S", "q", 0, 4, 1, 0, preempt.Requeue, time.Hour), epoch.Add(2*time.Minute)))
			sAt := time.Duration(-1)
			for m := 3; m < 60; m++ {
				now := epoch.Add(time.Duration(m) * time.Minute)
				p := startAll(t, e, now)
				require.Empty(t, p.Backlog, "%v: %s", now.Sub(epoch), p.Describe(e.c, epoch))
				for _, st := range p.Starts {
					require.NotEqual(t, "B", st.Job)
					if st.Job == "S" {
						sAt = now.Sub(epoch)
					}
				}
				if w := waitingOf(p, "S"); w != nil && !tc.sStarts && w.Code != WaitPriority {
					// (Outside the window S is not tested: WaitPriority.)
					require.Equal(t, WaitQuota, w.Code, "%v: %s", now.Sub(epoch), p.Describe(e.c, epoch))
					require.Equal(t, "B", w.Blocker)
				}
			}
			if tc.sStarts {
				require.Equal(t, 3*time.Minute, sAt, "S starts at once")
			} else {
				require.Equal(t, time.Duration(-1), sAt, "S never starts while B waits")
			}
		})
	}
}

// TestStrictOrderProperties: TestQuotaPropertiesWithPlans' workloads (the
// same checks of the quotas, whole gangs and the engine's invariants
// after every event) with StrictOrder on about half the queues without
// children, drawn apart. In every plan, once a job of a strict queue
// waits for quota (its own limits, not the strict order) without a
// reservation, no job of that queue ranked below it starts, unless it
// held a reservation or a claim before; and every such job without a
// reservation that waits is told it waits for that one (or, outside a
// MaxJobsTested window, that it was not tested); no such job gets a new
// reservation. Rank is read as the cycle's priority, which the
// entitled-first order does not change. Every job ends (the order never holds a
// queue back for good).
func TestStrictOrderProperties(t *testing.T) {
	workloads := 300
	if testing.Short() {
		workloads = 40
	}
	var blocked, heads int
	for w := range workloads {
		r := rand.New(rand.NewPCG(uint64(w), 23))
		sr := rand.New(rand.NewPCG(uint64(w), 37))
		e, jobs, cfg := quotaEngineWith(t, r, w, true, func(cfg *Config) {
			qs := cfg.Quotas.Queues
			for i := range qs {
				if !slices.ContainsFunc(qs, func(o QueueSpec) bool { return o.Parent == qs[i].Name }) && sr.IntN(2) == 0 {
					qs[i].StrictOrder = true
				}
			}
		})
		d := quotaPlanDriver(t, e, jobs, r)
		e.checkEach = true
		newQuotaWatch(t, d, w, &cfg, e.c.TotalGPUs())
		quotaCheck := d.afterCycle
		prevResv, claimed := map[string]bool{}, map[string]bool{}
		strict := map[string]bool{}
		for _, q := range cfg.Quotas.Queues {
			strict[q.Name] = q.StrictOrder
		}
		// prio returns job id's priority in this cycle's ranking (the
		// entitled-first order moves jobs, not their priorities).
		prio := func(id string) (uint64, bool) {
			for k, j := range e.order {
				if j.job.ID == id {
					return e.prio[k], true
				}
			}
			return 0, false
		}
		d.afterCycle = func(p *Plan) {
			quotaCheck(p)
			reserved := map[string]bool{}
			for _, rv := range p.Reservations {
				reserved[rv.Job] = true
			}
			type headAt struct {
				id   string
				prio uint64
			}
			head := map[string]headAt{} // queue → its head in this plan
			below := func(q, id string) (headAt, bool) {
				h, ok := head[q]
				if !ok || h.id == id {
					return h, false
				}
				pr, found := prio(id)
				return h, found && pr < h.prio
			}
			for _, wt := range p.Waiting {
				j := e.jobs.byID[wt.Job]
				q := j.job.Queue
				if !strict[q] {
					continue
				}
				if h, ok := below(q, wt.Job); ok {
					if !reserved[wt.Job] && !prevResv[wt.Job] && !claimed[wt.Job] && j.unfit == "" && (wt.Code != WaitQuota || wt.Blocker != h.id) && (wt.Code != WaitPriority || cfg.MaxJobsTested == 0) {
						t.Errorf("workload %d at %v: %s (queue %s) is told %v/%s %q, not that it waits for %s", w, p.Time.Sub(epoch), wt.Job, q, wt.Code, wt.Blocker, wt.Detail, h.id)
					}
					blocked++
					continue
				}
				if _, ok := head[q]; !ok && !reserved[wt.Job] && wt.Code == WaitQuota && e.jobs.byID[wt.Blocker] == nil && j.unfit == "" && j.noFitGen != e.inServiceGen {
					head[q] = headAt{wt.Job, wt.Priority}
					heads++
				}
			}
			for _, st := range p.Starts {
				q := e.jobs.byID[st.Job].job.Queue
				if h, ok := below(q, st.Job); ok && !prevResv[st.Job] && !claimed[st.Job] {
					t.Errorf("workload %d at %v: %s starts in queue %s below %s, which waits for quota", w, p.Time.Sub(epoch), st.Job, q, h.id)
					t.Log(p.Describe(e.c, epoch))
				}
				delete(claimed, st.Job)
			}
			for _, rv := range p.Reservations {
				q := e.jobs.byID[rv.Job].job.Queue
				if h, ok := below(q, rv.Job); ok && !prevResv[rv.Job] && !claimed[rv.Job] {
					t.Errorf("workload %d at %v: %s is reserved in queue %s below %s, which waits for quota", w, p.Time.Sub(epoch), rv.Job, q, h.id)
				}
			}
			prevResv = reserved
			for _, pr := range p.Preemptions {
				claimed[pr.Preemptor] = true
			}
		}
		d.run(time.Time{})
		if e.Pending() != 0 || e.Running() != 0 {
			t.Fatalf("workload %d: %d pending, %d running at the end", w, e.Pending(), e.Running())
		}
	}
	t.Logf("%d heads of a strict queue, %d jobs held behind one, over %d workloads", heads, blocked, workloads)
	if heads < workloads || blocked < workloads {
		t.Errorf("too easy: %d heads, %d jobs held behind one", heads, blocked)
	}
}

// TestStrictOrderHeadsInTheWalk: the head of a strict queue is whichever
// job the walk first leaves waiting for quota, not only the queue's first
// job.
//   - window: q (no guarantee, maximum 16) waits with F (one node), S2
//     (two) and S3 (one) while o's X fills the cluster; MaxJobsTested 1.
//     When X ends, F (the first job, always tested) starts and S2 then
//     waits for q's maximum: S2, passed over by the window, heads the
//     queue untested, and S3 in the window does not start.
//   - backlog: q (maximum 24) runs R on node 0; F (two nodes, only 0 and
//     1) fits q's quota but waits for node 0; S2 (three nodes) waits for
//     q's maximum and heads the queue; S3 waits behind S2 and names no
//     backlog (BacklogAfter 30 minutes) in an hour.
func TestStrictOrderHeadsInTheWalk(t *testing.T) {
	t.Run("window", func(t *testing.T) {
		for _, end := range []int{10, 11, 12} {
			e, job := quotaRig(t, 4, []QueueSpec{
				{Name: "q", Guarantee: 0, Maximum: 16, BorrowingLimit: Unlimited, LendingLimit: Unlimited, StrictOrder: true},
				{Name: "o", Guarantee: 32, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
			}, func(c *Config) { c.MaxJobsTested = 1 })
			require.NoError(t, e.Submit(job("X", "o", 0, 4, 4, 0, preempt.Never, 0), epoch))
			startAll(t, e, epoch)
			require.NoError(t, e.Submit(job("F", "q", 0, 4, 1, 0, preempt.Requeue, 0), epoch.Add(time.Minute)))
			require.NoError(t, e.Submit(job("S2", "q", 0, 4, 2, 0, preempt.Requeue, 0), epoch.Add(time.Minute+time.Second)))
			require.NoError(t, e.Submit(job("S3", "q", 0, 4, 1, 0, preempt.Requeue, 0), epoch.Add(time.Minute+2*time.Second)))
			fStarted := false
			for m := 2; m < 30; m++ {
				now := epoch.Add(time.Duration(m) * time.Minute)
				if m == end {
					require.NoError(t, e.Finished("X", now))
				}
				p := startAll(t, e, now)
				for _, s := range p.Starts {
					require.NotEqual(t, "S3", s.Job, "X ends at %dm; S3 starts at %dm below S2: %s", end, m, p.Describe(e.c, epoch))
					fStarted = fStarted || s.Job == "F"
				}
			}
			require.True(t, fStarted, "F starts once X ends at %dm", end)
		}
	})
	t.Run("backlog", func(t *testing.T) {
		e, job := quotaRig(t, 4, []QueueSpec{
			{Name: "q", Guarantee: 0, Maximum: 24, BorrowingLimit: Unlimited, LendingLimit: Unlimited, StrictOrder: true},
		}, func(c *Config) { c.BacklogAfter, c.ReservationDepth = 30*time.Minute, 4 })
		require.NoError(t, e.Submit(job("R", "q", 0, 1, 1, 0, preempt.Requeue, 0), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("F", "q", 0, 2, 2, 0, preempt.Requeue, time.Hour), epoch.Add(time.Minute)))
		require.NoError(t, e.Submit(job("S2", "q", 0, 4, 3, 0, preempt.Requeue, time.Hour), epoch.Add(time.Minute+time.Second)))
		require.NoError(t, e.Submit(job("S3", "q", 1, 4, 1, 0, preempt.Requeue, time.Hour), epoch.Add(time.Minute+2*time.Second)))
		for m := 2; m < 60; m++ {
			p := startAll(t, e, epoch.Add(time.Duration(m)*time.Minute))
			require.Empty(t, p.Starts, "%dm: %s", m, p.Describe(e.c, epoch))
			require.Empty(t, p.Backlog, "%dm: %s", m, p.Describe(e.c, epoch))
			w := waitingOf(p, "S3")
			require.NotNil(t, w)
			require.Equal(t, WaitQuota, w.Code, p.Describe(e.c, epoch))
			require.Equal(t, "S2", w.Blocker, p.Describe(e.c, epoch))
		}
	})
}
