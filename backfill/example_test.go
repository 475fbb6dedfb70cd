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

// A 512-GPU job waits on a busy cluster with a reservation while a short
// job backfills around it.
func ExampleEngine_Schedule() {
	c := topology.Default2000()
	cfg := backfill.DefaultConfig()
	spec, _ := fairshare.ParseText("alice\nbob\n")
	tree, _ := fairshare.BuildTree(spec, cfg.FairShare)
	e, err := backfill.New(c, cfg, tree)
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(id, account string, nodes int, limit time.Duration) backfill.Job {
		return backfill.Job{ID: id, Account: account, TimeLimit: limit,
			Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.NodesOf(nodes, 8)}}}}
	}
	_ = e.Submit(job("busy", "bob", 200, 2*time.Hour), t0)
	_, _ = e.Schedule(t0)

	_ = e.Submit(job("big", "alice", 64, time.Hour), t0.Add(time.Minute))
	_ = e.Submit(job("short", "bob", 16, 30*time.Minute), t0.Add(2*time.Minute))
	plan, _ := e.Schedule(t0.Add(5 * time.Minute))
	fmt.Print(plan.Describe(c, t0))
	// Output:
	// cycle at t+5m0s: 1 started, 1 reserved, 1 waiting, 2 tested
	// start short on worker=n[192-207]
	// reserve big at t+2h0m0s until t+3h0m0s on worker=n[000-063]
	// wait big Reserved: reserved: planned to start at t+2h0m0s
}

// A host lists its jobs from the engine instead of keeping its own copy,
// and sleeps until the next time the plan can change.
func ExampleEngine_Jobs() {
	c := topology.Default2000()
	cfg := backfill.DefaultConfig()
	spec, _ := fairshare.ParseText("alice\nbob\n")
	tree, _ := fairshare.BuildTree(spec, cfg.FairShare)
	e, _ := backfill.New(c, cfg, tree)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(id, account string, nodes int, limit time.Duration) backfill.Job {
		return backfill.Job{ID: id, Account: account, TimeLimit: limit,
			Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.NodesOf(nodes, 8)}}}}
	}
	_ = e.Submit(job("train", "bob", 200, 2*time.Hour), t0)
	plan, _ := e.Schedule(t0)
	_ = e.Started(plan.Starts[0].Job, t0)
	_ = e.Submit(job("big", "alice", 64, time.Hour), t0.Add(time.Minute))
	_, _ = e.Schedule(t0.Add(time.Minute))
	fmt.Print(backfill.FormatJobs(e.Jobs(), t0))
	next, _ := e.NextEvent()
	fmt.Println("sleep until", next.Sub(t0))
	// Output:
	// JOBID  ACCOUNT  STATE     GPUS  LIMIT   SUBMIT  START               END       NODES               REASON
	// train  bob      running   1600  2h0m0s  t+0s    t+0s                t+2h0m0s  n[000-191,240-247]  -
	// big    alice    reserved  512   1h0m0s  t+1m0s  t+2h0m0s (planned)  t+3h0m0s  n[000-063]          reserved: planned to start at t+2h0m0s
	// sleep until 2h0m0s
}

// An urgent gang preempts a preemptible training job on a full cluster:
// the host signals the victim, reports it released, and the urgent gang
// starts at the next cycle on the GPUs claimed for it. The victim,
// checkpointed an hour in, loses only the work since; requeued with its
// submit time, it is soon held for (hold mode) as the oldest large gang.
func ExampleEngine_Preempted() {
	c, _ := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	cfg := backfill.DefaultConfig()
	cfg.Preemption.Enabled = true
	spec, _ := fairshare.ParseText("research\nprod\n")
	tree, _ := fairshare.BuildTree(spec, cfg.FairShare)
	e, _ := backfill.New(c, cfg, tree)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(id, account string, nodes, class int, policy preempt.Policy) backfill.Job {
		return backfill.Job{ID: id, Account: account, Class: class, Preemption: policy,
			Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.Request{Nodes: nodes, GPUsPerNode: 8, Required: "leaf"}}}}}
	}
	_ = e.Submit(job("train", "research", 4, 0, preempt.Requeue), t0)
	_ = e.Submit(job("serve", "prod", 4, 2, preempt.Never), t0)
	plan, _ := e.Schedule(t0)
	for _, s := range plan.Starts {
		_ = e.Started(s.Job, t0)
	}
	_ = e.Checkpointed("train", t0.Add(time.Hour))

	_ = e.Submit(job("urgent", "prod", 4, 1, preempt.Never), t0.Add(90*time.Minute))
	plan, _ = e.Schedule(t0.Add(90 * time.Minute))
	fmt.Print(plan.Describe(c, t0))

	_ = e.Preempted("train", t0.Add(93*time.Minute)) // every pod of it has ended
	plan, _ = e.Schedule(t0.Add(93 * time.Minute))
	fmt.Print(plan.Describe(c, t0))
	// Output:
	// cycle at t+1h30m0s: 0 started, 0 reserved, 1 waiting, 1 tested
	// preempt train for urgent (requeue, grace until t+1h35m0s, 16.0 GPU-hours lost): preempted by urgent (class 1, above this job's 0) for its 32-GPU gang, which had no planned start
	// wait urgent Preempting: waiting for preempted job train to release its GPUs (grace until t+1h35m0s); it starts at the next cycle after
	// cycle at t+1h33m0s: 1 started, 0 reserved, 1 waiting, 2 tested
	// start urgent on worker=node[00004-00007]
	// hold for train since t+1h33m0s: 0 of 32 GPUs held on node[00004-00007], 0.0 of 128.0 GPU-hours spent
	// wait train Held: hold since t+1h33m0s: 0 of 32 GPUs held on node[00004-00007]; 128.0 of 128.0 GPU-hours of its budget left; estimated start t+2h33m0s
}

// An adapter binds a starting job's pods in rank order; one bind fails,
// and the adapter re-places that pod alone instead of restarting the
// gang. A node failure later takes one pod of an elastic job, which goes
// on smaller (OnNodeFailure Shrink).
func ExampleEngine_ReplacePod() {
	c := topology.Default2000()
	cfg := backfill.DefaultConfig()
	spec, _ := fairshare.ParseText("alice\n")
	tree, _ := fairshare.BuildTree(spec, cfg.FairShare)
	e, _ := backfill.New(c, cfg, tree)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_ = e.Submit(backfill.Job{ID: "train", Account: "alice", TimeLimit: time.Hour, OnNodeFailure: backfill.Shrink,
		Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.NodesOf(4, 8), Min: 2}}}}, t0)
	plan, _ := e.Schedule(t0)
	alloc := plan.Starts[0].Allocation
	for p := range alloc.Pods() {
		fmt.Printf("bind %s-%d to %s\n", p.Member, p.Rank, c.NodeName(p.Node))
	}
	rep, err := e.ReplacePod("train", "worker", 2, t0.Add(time.Second))
	fmt.Printf("bind of worker-2 failed: moved %s -> %s (%v)\n", c.NodeName(rep.Old.Node), c.NodeName(rep.New.Node), err)
	one, _ := alloc.Pod(0, 1) // worker-1's node fails
	evs, _ := e.NodeDown(one.Node, t0.Add(time.Minute))
	fmt.Printf("%+v\n", evs)
	plan, _ = e.Schedule(t0.Add(time.Minute))
	fmt.Print(plan.Describe(c, t0))
	// Output:
	// bind worker-0 to n240
	// bind worker-1 to n241
	// bind worker-2 to n242
	// bind worker-3 to n243
	// bind of worker-2 failed: moved n242 -> n244 (<nil>)
	// [{Job:train Requeued:false Replaced:false Shrunk:true}]
	// cycle at t+1m0s: 0 started, 0 reserved, 0 waiting, 0 tested
	// replaced pods of train: worker rank 2 n242 -> n244
	// removed pods of train (node n241 down): worker rank 1 n241
}
