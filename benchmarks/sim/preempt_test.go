package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestPreemptionPolicy: on a loaded random trace with a tenth of the jobs
// urgent, the phalanx policy with preemption starts the urgent jobs
// sooner than without (p50 and p95 of their waits), every job still
// finishes, no urgent job is ever preempted, and the busy GPU-seconds
// still equal the jobs' own (the work preempted jobs lost counts as busy
// time, as a node failure's does).
func TestPreemptionPolicy(t *testing.T) {
	jobs := randomTrace(rand.New(rand.NewPCG(5, 5)), 600)
	for i := range jobs {
		jobs[i].Submit /= 4 // load
	}
	c := topology.Default2000()
	var res [2]*Result
	for k, off := range []bool{true, false} {
		cfg := Config{Cluster: c, ClusterName: "default-2k", Trace: "random", Policy: Phalanx, Seed: 1,
			Preemption: &Preemption{UrgentShare: 0.1, Release: 2 * time.Minute, Off: off}}
		r, err := Run(cfg, jobs)
		if err != nil {
			t.Fatal(err)
		}
		checkConservation(t, r)
		if r.Finished+r.Rejected != r.Jobs {
			t.Fatalf("preemption off=%v: %d of %d jobs finished", off, r.Finished, r.Jobs)
		}
		for _, o := range r.Outcomes {
			if o.Urgent && o.Preemptions > 0 {
				t.Fatalf("urgent job %s preempted", o.ID)
			}
		}
		res[k] = r
	}
	base, pre := res[0], res[1]
	t.Logf("without preemption: urgent %+v, other %+v", *base.UrgentWaits, *base.OtherWaits)
	t.Logf("with preemption: urgent %+v, other %+v, %d victims, %.0f GPU-h lost (busy %.0f GPU-h)",
		*pre.UrgentWaits, *pre.OtherWaits, pre.Preemptions, pre.PreemptedGPUSeconds/3600, pre.BusyGPUSeconds/3600)
	if base.Preemptions != 0 || pre.Preemptions == 0 || pre.PreemptedGPUSeconds <= 0 {
		t.Fatalf("victims: %d without preemption, %d (%.0f GPU-s) with", base.Preemptions, pre.Preemptions, pre.PreemptedGPUSeconds)
	}
	if pre.UrgentWaits.P50 > base.UrgentWaits.P50 || pre.UrgentWaits.P95 > base.UrgentWaits.P95 {
		t.Fatalf("urgent waits p50/p95 %v/%v with preemption, %v/%v without", pre.UrgentWaits.P50, pre.UrgentWaits.P95,
			base.UrgentWaits.P50, base.UrgentWaits.P95)
	}
}

// TestPreemptedLossExcludesFailureLoss: a run that lost work to a
// replacement and is then preempted loses, at the preemption, only what
// the replacement had not already lost: each GPU-second counts once in
// FailureLostGPUSeconds and PreemptedGPUSeconds together. On three 8-GPU
// nodes, one 8-GPU job of 1,000 h (not urgent) runs; urgent 2-node jobs of
// no run time arrive every 5 h and preempt it when a node is down; nodes
// fail (mean 20 h) and are repaired after 3 h, and the job's pods on a
// failed node are replaced. The urgent jobs use no GPU time, so all the
// busy time is the job's, and what it lost cannot exceed it. With seed 48
// it was replaced and preempted many times and never restarted whole; the
// preemptions counted the whole run, the replaced parts again (1,326,060
// + 4,320,480 GPU-s lost of 4,608,000 run).
func TestPreemptedLossExcludesFailureLoss(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 3, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []TraceJob{{ID: "a", Account: "x", Duration: 1000 * time.Hour, GPUs: 8, Nodes: 1, GPUsPerNode: 8}}
	for k := 1; k <= 30; k++ {
		jobs = append(jobs, TraceJob{ID: fmt.Sprint("u", k), Account: "y", Submit: time.Duration(k) * 5 * time.Hour,
			TimeLimit: time.Hour, GPUs: 16, Nodes: 2, GPUsPerNode: 8})
	}
	r, err := Run(Config{Cluster: c, Policy: GangBackfill, Seed: 48, NodeMTBF: 20 * time.Hour, Repair: 3 * time.Hour,
		OnNodeFailure: backfill.Replace, Horizon: 160 * time.Hour, Preemption: &Preemption{UrgentShare: 0.97, Release: time.Minute}}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	checkConservation(t, r)
	if o := r.Outcomes[0]; o.Urgent || o.Preemptions == 0 || r.Replacements == 0 || r.FailureRestarts != 0 {
		t.Fatalf("job a urgent %v, preempted %d times; %d replacements, %d whole restarts: want a job replaced and preempted, never restarted whole",
			o.Urgent, o.Preemptions, r.Replacements, r.FailureRestarts)
	}
	if lost := r.FailureLostGPUSeconds + r.PreemptedGPUSeconds; lost > r.BusyGPUSeconds*(1+1e-9) {
		t.Errorf("lost %.0f GPU-s to failures and %.0f to preemptions, %.0f in all, of %.0f run",
			r.FailureLostGPUSeconds, r.PreemptedGPUSeconds, lost, r.BusyGPUSeconds)
	}
}
