package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// epoch is the virtual time of the stream's first event.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// account is the only fair-share account: with one account every job has
// the same fair-share factor and jobs go first come, first served, as with
// Slurm's priority/basic.
const account = "bench"

// Outcome is what one scheduler did with the stream: where the jobs
// running at the end run, where and when the pending jobs are planned, and
// how long its backfill cycles took.
type Outcome struct {
	Name string
	// Running maps each running job to its nodes.
	Running map[string][]string
	// Planned maps each pending job with a planned start to its planned
	// nodes; PlannedStart to the planned start's offset from the stream's
	// first submission.
	Planned      map[string][]string
	PlannedStart map[string]time.Duration
	// Pending counts the jobs still pending.
	Pending int
	// Cycle times. For Slurm: sdiag's last, mean and max backfill cycle
	// and the depth (jobs tested) of the last one. For Phalanx: the first
	// Schedule call after the pending stream (median over the replays),
	// the mean and max of the calls after it, and the jobs it tested.
	CycleFirst, CycleMean, CycleMax time.Duration
	CycleDepth                      int
	Cycles                          int
	Notes                           []string
}

// ReplayConfig configures the Phalanx side.
type ReplayConfig struct {
	Key    string // name on the command line (-only)
	Name   string
	Depth  int // backfill.Config.ReservationDepth
	Steady int // Schedule calls after the first one of the backfill phase
}

// replayOnce runs the stream through a new engine and returns the outcome
// and the duration of the first Schedule call of the backfill phase.
func replayOnce(c *topology.Cluster, ev []Event, rc ReplayConfig) (*Outcome, time.Duration, []time.Duration, error) {
	cfg := backfill.DefaultConfig()
	cfg.ReservationDepth = rc.Depth
	cfg.Hold.Enabled = false // every job has a time limit: nothing to hold
	tree, err := fairshare.NewTree(cfg.FairShare)
	if err != nil {
		return nil, 0, nil, err
	}
	if err := tree.AddAccount(fairshare.RootName, account, 1); err != nil {
		return nil, 0, nil, err
	}
	e, err := backfill.New(c, cfg, tree)
	if err != nil {
		return nil, 0, nil, err
	}
	var (
		first  time.Duration
		steady []time.Duration
		last   *backfill.Plan
	)
	schedule := func(now time.Time) (*backfill.Plan, time.Duration, error) {
		t := time.Now()
		plan, err := e.Schedule(now)
		d := time.Since(t)
		if err != nil {
			return nil, 0, err
		}
		for _, s := range plan.Starts {
			if err := e.Started(s.Job, now); err != nil {
				return nil, 0, err
			}
		}
		return plan, d, nil
	}
	for _, x := range ev {
		now := epoch.Add(time.Duration(x.AtMS) * time.Millisecond)
		switch x.Op {
		case OpSubmit:
			j := backfill.Job{ID: x.ID, Account: account, Submit: now,
				TimeLimit: time.Duration(x.LimitMin) * time.Minute,
				Gang:      gang.Spec{Members: []gang.Member{{Name: "job", Request: placement.WholeNodes(x.Nodes)}}}}
			if err := e.Submit(j, now); err != nil {
				return nil, 0, nil, err
			}
		case OpCancel:
			if err := e.Cancel(x.ID, now); err != nil {
				return nil, 0, nil, err
			}
		case OpSync:
			plan, d, err := schedule(now)
			if err != nil {
				return nil, 0, nil, err
			}
			if x.ID != PhaseBackfill {
				if len(plan.Waiting) > 0 {
					return nil, 0, nil, fmt.Errorf("phase %s: %d jobs did not start", x.ID, len(plan.Waiting))
				}
				continue
			}
			first, last = d, plan
			for i := range rc.Steady {
				plan, d, err := schedule(now.Add(time.Duration(i+1) * time.Second))
				if err != nil {
					return nil, 0, nil, err
				}
				steady, last = append(steady, d), plan
			}
		}
	}
	o := &Outcome{
		Name:         rc.Name,
		Running:      map[string][]string{},
		Planned:      map[string][]string{},
		PlannedStart: map[string]time.Duration{},
		Pending:      e.Pending(),
		CycleDepth:   last.Tested,
		Cycles:       1 + len(steady),
	}
	for _, id := range allIDs(ev) {
		if a, ok := e.Allocation(id); ok {
			o.Running[id] = nodeNames(c, &a)
		}
	}
	for _, r := range last.Reservations {
		o.Planned[r.Job] = nodeNames(c, &r.Allocation)
		o.PlannedStart[r.Job] = r.Start.Sub(epoch)
	}
	return o, first, steady, nil
}

// Replay runs the stream `runs` times (the engine is deterministic, so
// every run gives the same plans) and keeps the median first-cycle time.
func Replay(c *topology.Cluster, ev []Event, rc ReplayConfig, runs int) (*Outcome, error) {
	var firsts, steady []time.Duration
	var o *Outcome
	for range max(runs, 1) {
		out, first, st, err := replayOnce(c, ev, rc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rc.Name, err)
		}
		o = out
		firsts = append(firsts, first)
		steady = append(steady, st...)
	}
	slices.Sort(firsts)
	o.CycleFirst = firsts[len(firsts)/2]
	if len(steady) > 0 {
		var sum time.Duration
		for _, d := range steady {
			sum += d
			o.CycleMax = max(o.CycleMax, d)
		}
		o.CycleMean = sum / time.Duration(len(steady))
	}
	o.Notes = append(o.Notes, fmt.Sprintf("%s: first Schedule after the pending stream, median of %d replays: %v; %d later calls: mean %v, max %v; %d jobs tested",
		rc.Name, len(firsts), o.CycleFirst, len(steady), o.CycleMean, o.CycleMax, o.CycleDepth))
	return o, nil
}

func allIDs(ev []Event) []string {
	var ids []string
	for _, x := range ev {
		if x.Op == OpSubmit {
			ids = append(ids, x.ID)
		}
	}
	return ids
}

func nodeNames(c *topology.Cluster, a *gang.Allocation) []string {
	var names []string
	for _, m := range a.Members {
		for _, x := range m.Assignment {
			names = append(names, c.NodeName(topology.NodeID(x.Node)))
		}
	}
	return names
}
