package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// victimSet is a set of jobs to stop and what stopping them costs.
type victimSet struct {
	ids          []string
	gpus, leaves int
	lostGPUHours float64
}

// preemption: an urgent 256-GPU gang that must sit under one spine
// arrives on a cluster full of preemptible batch gangs (no time limits):
// the engine's topology-aware victim choice next to a topology-blind one
// (cheapest victims first, whatever their domains).
func preemption(w io.Writer, c *topology.Cluster) error {
	fmt.Fprintln(w, "6. An urgent 256-GPU gang (32 nodes x 8 GPUs under one spine, class 1) on a cluster kept full by")
	fmt.Fprintln(w, "   preemptible batch gangs of class 0 (1 to 16 nodes, no time limits, started over 12 h; a few protected services)")
	e, t0, err := fullCluster(c)
	if err != nil {
		return err
	}
	now := t0.Add(12 * time.Hour)
	urgent := backfill.Job{ID: "urgent", Account: "prod", Class: 1,
		Gang: gang.Spec{ID: "urgent", Members: []gang.Member{{Name: "worker", Request: placement.Request{Nodes: 32, GPUsPerNode: 8, Required: "spine"}}}}}
	if err := e.Submit(urgent, now); err != nil {
		return err
	}
	blind, err := blindChoice(e, &urgent.Gang, now)
	if err != nil {
		return err
	}
	plan, err := e.Schedule(now)
	if err != nil {
		return err
	}
	var chosen victimSet
	for _, x := range plan.Preemptions {
		chosen.ids = append(chosen.ids, x.Victim)
		chosen.lostGPUHours += float64(x.LostGPUSeconds) / 3600
	}
	chosen.gpus, chosen.leaves = stopped(e, chosen.ids)
	fmt.Fprintf(w, "   %-32s %8s %13s %7s %11s\n", "victim choice", "victims", "GPUs stopped", "leaves", "GPU-h lost")
	for _, row := range []struct {
		name string
		v    victimSet
	}{{"phalanx (gang/preempt)", chosen}, {"cheapest first, topology-blind", blind}} {
		fmt.Fprintf(w, "   %-32s %8d %13d %7d %11.0f\n", row.name, len(row.v.ids), row.v.gpus, row.v.leaves, row.v.lostGPUHours)
	}
	return startUrgent(w, e, plan, now)
}

// startUrgent reports the victims released after a minute and runs the
// cycle that starts the urgent gang.
func startUrgent(w io.Writer, e *backfill.Engine, plan *backfill.Plan, now time.Time) error {
	if len(plan.Preemptions) == 0 {
		return fmt.Errorf("preemption: no victims: %s", plan.Waiting[0].Message(time.Time{}))
	}
	fmt.Fprintf(w, "   phalanx's victims: %s\n", strings.Join(victimIDs(plan), ", "))
	fmt.Fprintf(w, "   their reason: %s\n", plan.Preemptions[0].Reason)
	released := now.Add(time.Minute)
	for _, x := range plan.Preemptions {
		if err := e.Preempted(x.Victim, released); err != nil {
			return err
		}
	}
	next, err := e.Schedule(released)
	if err != nil {
		return err
	}
	for _, s := range next.Starts {
		if s.Job == "urgent" {
			fmt.Fprintf(w, "   released a minute later, the urgent gang starts on %s; the victims are requeued with their submit times\n",
				backfill.NodeList(e.Cluster(), &s.Allocation))
			return nil
		}
	}
	return fmt.Errorf("preemption: the urgent gang did not start after its victims were released")
}

func victimIDs(p *backfill.Plan) []string {
	var ids []string
	for _, x := range p.Preemptions {
		ids = append(ids, x.Victim)
	}
	return ids
}

// fullCluster returns an engine whose cluster is full of gangs started
// over 12 hours from t0, and t0.
func fullCluster(c *topology.Cluster) (*backfill.Engine, time.Time, error) {
	cfg := backfill.DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Preemption.Enabled = true
	spec, _ := fairshare.ParseText("batch\nprod\n")
	tree, err := fairshare.BuildTree(spec, cfg.FairShare)
	if err != nil {
		return nil, time.Time{}, err
	}
	e, err := backfill.New(c, cfg, tree)
	if err != nil {
		return nil, time.Time{}, err
	}
	r := rand.New(rand.NewPCG(16, 16))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; e.UsedGPUs() < c.TotalGPUs() && i < 2000; i++ {
		at := t0.Add(time.Duration(i) * 12 * time.Hour / 400)
		nodes := []int{1, 1, 1, 2, 4, 8, 16}[r.IntN(7)]
		if free := (c.TotalGPUs() - e.UsedGPUs()) / 8; nodes > free {
			nodes = max(free, 1)
		}
		job := backfill.Job{ID: fmt.Sprintf("b%03d", i), Account: "batch", Preemption: preempt.Requeue,
			Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: placement.Request{Nodes: nodes, GPUsPerNode: 8, Required: "leaf"}}}}}
		if nodes == 1 && r.IntN(5) == 0 {
			job.ID, job.Account, job.Preemption = fmt.Sprintf("svc%03d", i), "prod", preempt.Never
		}
		if err := run1(e, job, at); err != nil {
			return nil, t0, err
		}
	}
	return e, t0, nil
}

// run1 submits job at at and starts it if it fits (or cancels it).
func run1(e *backfill.Engine, job backfill.Job, at time.Time) error {
	if err := e.Submit(job, at); err != nil {
		return err
	}
	p, err := e.Schedule(at)
	if err != nil {
		return err
	}
	for _, s := range p.Starts {
		if err := e.Started(s.Job, at); err != nil {
			return err
		}
	}
	if len(p.Starts) == 0 {
		return e.Cancel(job.ID, at)
	}
	return nil
}

// blindChoice stops the preemptible running jobs cheapest first (their
// GPUs times their age), whatever their domains, until g can be admitted.
func blindChoice(e *backfill.Engine, g *gang.Spec, now time.Time) (victimSet, error) {
	type cand struct {
		id   string
		cost float64
		a    gang.Allocation
	}
	var cands []cand
	for _, st := range e.Jobs() {
		spec, _ := e.JobSpec(st.ID)
		if st.State != backfill.StateRunning || spec.Class >= 1 || spec.Preemption == preempt.Never {
			continue
		}
		a, _ := e.Allocation(st.ID)
		cands = append(cands, cand{st.ID, float64(st.GPUs) * now.Sub(st.Start).Hours(), a})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].cost < cands[j].cost })
	s := topology.NewState(e.Cluster())
	if err := e.CopyState(s); err != nil {
		return victimSet{}, err
	}
	adm := gang.NewAdmitter(e.Cluster(), gang.Options{})
	var v victimSet
	var out gang.Allocation
	for _, x := range cands {
		if res, err := adm.Admit(s, g, &out); err != nil || res.Admitted {
			v.gpus, v.leaves = stopped(e, v.ids)
			return v, err
		}
		for _, m := range x.a.Members {
			if err := s.Release(m.Assignment); err != nil {
				return v, err
			}
		}
		v.ids = append(v.ids, x.id)
		v.lostGPUHours += x.cost
	}
	return v, fmt.Errorf("blind choice: the urgent gang does not fit even with every preemptible job stopped")
}

// stopped counts the GPUs and the leaves of the running jobs ids.
func stopped(e *backfill.Engine, ids []string) (gpus, leaves int) {
	c := e.Cluster()
	var seen []int
	for _, id := range ids {
		a, _ := e.Allocation(id)
		gpus += a.GPUs()
		for _, m := range a.Members {
			for _, x := range m.Assignment {
				seen = append(seen, c.NodeDomain(x.Node, c.Depth()-1))
			}
		}
	}
	slices.Sort(seen)
	return gpus, len(slices.Compact(seen))
}
