package backfill_test

import (
	"fmt"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Two teams share a 2,000-GPU cluster through a cohort: research is
// guaranteed 1,200 GPUs and may borrow up to 400 more, serving is
// guaranteed 800 and lends at most 600 of them. Research borrows up to its
// limit while serving is idle; when serving's work arrives, it reclaims
// its guarantee by preempting the research gang that started last. The
// queues' use counts the claim for serving's job, not the preempted gang.
func ExampleQuotaConfig() {
	c := topology.Default2000()
	cfg := backfill.DefaultConfig()
	cfg.Quotas = backfill.QuotaConfig{Queues: []backfill.QueueSpec{
		{Name: "lab", Guarantee: 2000, BorrowingLimit: 0, LendingLimit: backfill.Unlimited, Maximum: backfill.Unlimited},
		{Name: "research", Parent: "lab", Guarantee: 1200, BorrowingLimit: 400, LendingLimit: backfill.Unlimited, Maximum: backfill.Unlimited},
		{Name: "serving", Parent: "lab", Guarantee: 800, BorrowingLimit: backfill.Unlimited, LendingLimit: 600, Maximum: 1000, Weight: 2},
	}}
	if err := cfg.Quotas.Validate(); err != nil {
		panic(err)
	}
	spec, _ := fairshare.ParseText("alice\nbob\n")
	tree, _ := fairshare.BuildTree(spec, cfg.FairShare)
	e, err := backfill.New(c, cfg, tree)
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(id, queue string, nodes int) backfill.Job {
		return backfill.Job{ID: id, Account: "alice", Queue: queue, Preemption: preempt.Requeue,
			Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.NodesOf(nodes, 8)}}}}
	}
	for i, at := range []time.Duration{0, 0, 0, time.Hour, 2 * time.Hour} {
		_ = e.Submit(job(fmt.Sprintf("train%d", i), "research", 50), t0.Add(at))
		plan, _ := e.Schedule(t0.Add(at))
		for _, s := range plan.Starts {
			_ = e.Started(s.Job, t0.Add(at))
		}
		for _, w := range plan.Waiting {
			if w.Code == backfill.WaitQuota {
				fmt.Printf("%s waits: %s\n", w.Job, w.Message(t0))
			}
		}
	}
	_ = e.Submit(job("serve", "serving", 60), t0.Add(3*time.Hour))
	plan, _ := e.Schedule(t0.Add(3 * time.Hour))
	for _, p := range plan.Preemptions {
		fmt.Printf("preempt %s: %s\n", p.Victim, p.Reason)
	}
	for _, q := range e.Queues() {
		fmt.Printf("%-8s guarantee %4d, used %4d, borrowed %3d, waiting %3d\n", q.Name, q.Guarantee, q.Used, q.Borrowed, q.Waiting)
	}
	// Output:
	// train4 waits: queue research: 1600 of 1600 GPUs (1200 guaranteed, borrowing limit 400), borrowing limit reached
	// preempt train3: reclaimed for job serve of queue serving, below its guarantee (0 of 800 GPUs in use, the job needs 480): queue research borrows
	// lab      guarantee 2000, used 1680, borrowed   0, waiting 400
	// research guarantee 1200, used 1200, borrowed   0, waiting 400
	// serving  guarantee  800, used  480, borrowed   0, waiting   0
}
