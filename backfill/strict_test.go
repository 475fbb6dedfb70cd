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

// TestStrictOrderProperties: TestQuotaPropertiesWithPlans' workloads (the
// same checks of the quotas, whole gangs and the engine's invariants
// after every event) with StrictOrder on about half the queues without
// children, drawn apart. In every plan, once a job of a strict queue
// waits for quota (its own limits, not the strict order) without a
// reservation, no job of that queue ranked below it starts, unless it
// held a reservation or a claim before; and every such job without a
// reservation that waits is told it waits for that one. Every job ends
// (the order never holds a queue back for good).
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
		dur := map[string]time.Duration{}
		for i := range jobs {
			if i%2 == 0 {
				dur[jobs[i].ID], jobs[i].TimeLimit = jobs[i].TimeLimit, 0
			}
		}
		d := newDriver(t, e, jobs, dur)
		d.release = func() time.Duration { return time.Duration(r.IntN(6)) * time.Minute }
		e.checkEach = true
		newQuotaWatch(t, d, w, &cfg, e.c.TotalGPUs())
		quotaCheck := d.afterCycle
		exempt := map[string]bool{} // reserved or claimed in an earlier plan
		strict := map[string]bool{}
		for _, q := range cfg.Quotas.Queues {
			strict[q.Name] = q.StrictOrder
		}
		d.afterCycle = func(p *Plan) {
			quotaCheck(p)
			reserved := map[string]bool{}
			for _, rv := range p.Reservations {
				reserved[rv.Job] = true
			}
			head := map[string]*jobRec{} // queue → its head in this plan
			for _, wt := range p.Waiting {
				j := e.jobs.byID[wt.Job]
				q := j.job.Queue
				if !strict[q] || reserved[wt.Job] {
					continue
				}
				if h := head[q]; h != nil {
					if j.rank > h.rank && !exempt[wt.Job] && (wt.Code != WaitQuota || wt.Blocker != h.job.ID) && j.unfit == "" {
						t.Errorf("workload %d at %v: %s (queue %s) is told %v/%s %q, not that it waits for %s", w, p.Time.Sub(epoch), wt.Job, q, wt.Code, wt.Blocker, wt.Detail, h.job.ID)
					}
					blocked++
					continue
				}
				if wt.Code == WaitQuota && e.jobs.byID[wt.Blocker] == nil && j.unfit == "" {
					head[q] = j
					heads++
				}
			}
			for _, st := range p.Starts {
				j := e.jobs.byID[st.Job]
				if h := head[j.job.Queue]; h != nil && j.rank > h.rank && !exempt[st.Job] {
					t.Errorf("workload %d at %v: %s starts in queue %s below %s, which waits for quota", w, p.Time.Sub(epoch), st.Job, j.job.Queue, h.job.ID)
				}
			}
			for _, rv := range p.Reservations {
				exempt[rv.Job] = true
			}
			for _, pr := range p.Preemptions {
				exempt[pr.Preemptor] = true
			}
		}
		d.run(time.Time{})
		if e.Pending() != 0 || e.Running() != 0 {
			if p, err := e.Schedule(e.Now()); err == nil {
				for _, wt := range p.Waiting {
					t.Logf("%s %s %v %s %q", wt.Job, e.jobs.byID[wt.Job].job.Queue, wt.Code, wt.Blocker, wt.Detail)
				}
				t.Logf("%+v", cfg.Quotas.Queues)
			}
			t.Fatalf("workload %d: %d pending, %d running at the end", w, e.Pending(), e.Running())
		}
	}
	t.Logf("%d heads of a strict queue, %d jobs held behind one, over %d workloads", heads, blocked, workloads)
	if heads < workloads || blocked < workloads {
		t.Errorf("too easy: %d heads, %d jobs held behind one", heads, blocked)
	}
}
