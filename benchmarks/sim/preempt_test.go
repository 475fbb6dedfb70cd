package sim

import (
	"math/rand/v2"
	"testing"
	"time"

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
