package backfill_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Example_embed is the README's "Use it as a library": a host embeds the
// engine, passes it events with their time, applies the plans and sleeps
// until NextEvent. TestReadmeEmbed keeps the README's copy identical.
func Example_embed() {
	// README:begin
	cluster := topology.Default2000() // or topology/slurm, topology/kube loaders
	cfg := backfill.DefaultConfig()
	tree, _ := fairshare.NewTree(cfg.FairShare)
	_ = tree.AddAccount(fairshare.RootName, "research", 1)
	engine, err := backfill.New(cluster, cfg, tree)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i, nodes := range []int{200, 64, 16} { // 1,600, 512 and 128 GPUs
		job := backfill.Job{ID: fmt.Sprint("job", i), Account: "research", TimeLimit: time.Hour,
			Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.NodesOf(nodes, 8)}}}}
		_ = engine.Submit(job, now)
	}
	for {
		for _, j := range engine.Jobs() { // the host learns that jobs ended
			if j.State == backfill.StateRunning && !j.End.After(now) {
				_ = engine.Finished(j.ID, now)
			}
		}
		plan, err := engine.Schedule(now)
		if err != nil {
			panic(err)
		}
		for _, s := range plan.Starts { // launch the pods, then confirm
			_ = engine.Started(s.Job, now)
			fmt.Println(now.Format("15:04"), "start", s.Job, backfill.Hosts(cluster, &s.Allocation))
		}
		next, ok := engine.NextEvent() // sleep until then, or until the next host event
		if !ok {
			break
		}
		now = next
	}
	// README:end

	// Output:
	// 09:00 start job0 worker=n[000-191,240-247]
	// 09:00 start job2 worker=n[192-207]
	// 10:00 start job1 worker=n[000-063]
}

// TestReadmeEmbed checks that the README's library section shows exactly
// the body of Example_embed (between its README markers), so the README's
// code compiles and prints what the Example's output says.
func TestReadmeEmbed(t *testing.T) {
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "\t// README:begin\n")
	body, _, ok2 := strings.Cut(body, "\t// README:end\n")
	if !ok || !ok2 {
		t.Fatal("README markers missing in readme_example_test.go")
	}
	var want strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if !strings.Contains(string(readme), "```go\n"+want.String()+"```\n") {
		t.Errorf("README.md lacks the body of Example_embed as a go block; it should read:\n%s", want.String())
	}
}
