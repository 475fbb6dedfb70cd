// Command quickstart is the smallest real embedding of Phalanx: build the
// default cluster, submit two gangs, run one scheduling cycle, print where
// they go as Slurm hostlists.
//
//	go run ./examples/quickstart
package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	cluster := topology.Default2000() // 250 nodes x 8 GPUs, 16 leaves, 4 spines

	accounts, err := fairshare.ParseText("research\nproduct\n")
	if err != nil {
		return err
	}
	cfg := backfill.DefaultConfig()
	tree, err := fairshare.BuildTree(accounts, cfg.FairShare)
	if err != nil {
		return err
	}
	engine, err := backfill.New(cluster, cfg, tree)
	if err != nil {
		return err
	}

	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	// A training job: 1 launcher GPU plus 16 workers of 8 GPUs inside one
	// leaf switch; and a 64-GPU fine-tuning job.
	jobs := []backfill.Job{
		{ID: "train", Account: "research", TimeLimit: 4 * time.Hour, Gang: gang.Spec{Members: []gang.Member{
			{Name: "launcher", Request: placement.NodesOf(1, 1)},
			{Name: "worker", Request: placement.Request{Nodes: 16, GPUsPerNode: 8, Required: "leaf"}},
		}}},
		{ID: "finetune", Account: "product", TimeLimit: time.Hour, Gang: gang.Spec{Members: []gang.Member{
			{Name: "worker", Request: placement.NodesOf(8, 8)},
		}}},
	}
	for _, j := range jobs {
		if err := engine.Submit(j, now); err != nil {
			return err
		}
	}
	plan, err := engine.Schedule(now)
	if err != nil {
		return err
	}
	for _, s := range plan.Starts {
		fmt.Fprintf(w, "start %-8s %s\n", s.Job, backfill.Hosts(cluster, &s.Allocation))
		if err := engine.Started(s.Job, now); err != nil {
			return err
		}
	}
	for _, wt := range plan.Waiting {
		fmt.Fprintf(w, "wait  %-8s %s\n", wt.Job, wt.Message(time.Time{}))
	}
	fmt.Fprintf(w, "%d of %d GPUs in use\n", engine.UsedGPUs(), cluster.TotalGPUs())
	return nil
}
