// Command custom-scheduler shows how a scheduler author wires Phalanx into
// a scheduling loop: events arrive on a channel (submissions, completions,
// node failures, timer ticks), a fake clock stands in for the wall clock,
// each cycle's plan is applied (starts launched, completions reported
// later) and the reasons of waiting jobs are printed.
//
//	go run ./examples/custom-scheduler
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "custom-scheduler:", err)
		os.Exit(1)
	}
}

// event is what the host delivers to the scheduling loop.
type event struct {
	at   time.Duration // on the fake clock
	kind string        // submit, done, node-down, tick
	job  backfill.Job
	id   string // done: the job; node-down: the node
}

// fakeClock is the loop's notion of time: it only moves when an event says
// so. A real host would use time.Now here; Phalanx itself never reads it.
type fakeClock struct{ t0, now time.Time }

func (c *fakeClock) advance(d time.Duration) time.Time { c.now = c.t0.Add(d); return c.now }

func job(id, account string, nodes, gpus int, limit time.Duration) backfill.Job {
	return backfill.Job{ID: id, Account: account, TimeLimit: limit,
		Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.NodesOf(nodes, gpus)}}}}
}

func run(w io.Writer) error {
	cluster := topology.Default2000()
	accounts, err := fairshare.ParseText("vision\nlanguage\n")
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
	clock := &fakeClock{t0: time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)}

	// The host's event source: a goroutine feeding a channel, as an
	// informer or an RPC server would. Completions are fed back by the
	// loop itself (launch below), so the channel is buffered.
	events := make(chan event, 64)
	go func() {
		defer close(events)
		for _, e := range []event{
			{at: 0, kind: "submit", job: job("pretrain", "language", 180, 8, 6*time.Hour)},
			{at: time.Minute, kind: "submit", job: job("vit-sweep", "vision", 8, 8, time.Hour)},
			{at: 2 * time.Minute, kind: "submit", job: job("llm-70b", "language", 96, 8, 4*time.Hour)},
			{at: 3 * time.Minute, kind: "submit", job: job("eval", "vision", 2, 4, 30*time.Minute)},
			{at: 20 * time.Minute, kind: "node-down", id: "n010"},
			{at: 8 * time.Hour, kind: "tick"},
		} {
			events <- e
		}
	}()

	// The loop: take the next event in time order, apply it, run a cycle,
	// apply the plan. The host sends its events in time order; the loop
	// keeps the completions it expects in a list, and always holds the
	// host's next event before deciding what comes first.
	var future []event
	var peek *event
	hostOpen := true
	next := func() (event, bool) {
		if peek == nil && hostOpen {
			if e, ok := <-events; ok {
				peek = &e
			} else {
				hostOpen = false
			}
		}
		sort.SliceStable(future, func(i, j int) bool { return future[i].at < future[j].at })
		switch {
		case peek != nil && (len(future) == 0 || peek.at <= future[0].at):
			e := *peek
			peek = nil
			return e, true
		case len(future) > 0:
			e := future[0]
			future = future[1:]
			return e, true
		}
		return event{}, false
	}
	running := map[string]bool{}
	for {
		e, ok := next()
		if !ok {
			return nil
		}
		now := clock.advance(e.at)
		switch e.kind {
		case "submit":
			if err := engine.Submit(e.job, now); err != nil {
				fmt.Fprintf(w, "%s  rejected %s: %v\n", stamp(e.at), e.job.ID, err)
				continue
			}
			fmt.Fprintf(w, "%s  submitted %s\n", stamp(e.at), e.job.ID)
		case "done":
			if !running[e.id] {
				continue // it was killed by a node failure meanwhile
			}
			delete(running, e.id)
			if err := engine.Finished(e.id, now); err != nil {
				return err
			}
			fmt.Fprintf(w, "%s  finished %s\n", stamp(e.at), e.id)
		case "node-down":
			// The host knows nodes by name; the engine by NodeID.
			node, ok := cluster.LookupNode(e.id)
			if !ok {
				return fmt.Errorf("unknown node %q", e.id)
			}
			evs, err := engine.NodeDown(node, now)
			if err != nil {
				return err
			}
			for _, x := range evs {
				delete(running, x.Job)
				fmt.Fprintf(w, "%s  node %s failed: %s requeued=%v\n", stamp(e.at), e.id, x.Job, x.Requeued)
			}
		}
		plan, err := engine.Schedule(now)
		if err != nil {
			return err
		}
		for _, s := range plan.Starts {
			// Launch: here the pods would be created. The job then runs
			// for 80% of its time limit and reports back.
			running[s.Job] = true
			if err := engine.Started(s.Job, now); err != nil {
				return err
			}
			j, _ := engine.JobSpec(s.Job) // the job as submitted: its gang, its limit
			limit := j.TimeLimit
			future = append(future, event{at: e.at + limit*8/10, kind: "done", id: s.Job})
			fmt.Fprintf(w, "%s  start %s on %s\n", stamp(e.at), s.Job, backfill.Hosts(cluster, &s.Allocation))
		}
		for _, wt := range plan.Waiting {
			fmt.Fprintf(w, "%s    %s waits: %s\n", stamp(e.at), wt.Job, wt.Message(clock.t0))
		}
	}
}

func stamp(d time.Duration) string {
	return fmt.Sprintf("[t+%5s]", d.Round(time.Minute).String())
}
