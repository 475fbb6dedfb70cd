package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/topology"
)

func twoNodes(t *testing.T) *topology.Cluster {
	t.Helper()
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestShapeLargerThanAsked: a trace job of 12 GPUs runs on two whole
// 8-GPU nodes (ReadTrace), 16 GPUs. The engine policies ran it for 12/16
// of its hour (its progress was counted at the GPUs it asked for, as for
// an elastic job cut to fewer GPUs), and pod-by-pod counted 4 of its bound
// GPUs as idle while a job waited for them (found by a helper's probe).
// It runs its hour on 16 GPUs under every policy, and nothing is idle
// while the 4-GPU job behind it waits.
func TestShapeLargerThanAsked(t *testing.T) {
	jobs, _, err := ReadTrace(strings.NewReader("job_id,user,submit_s,duration_s,gpus,time_limit_s\nj,u,0,3600,12,7200\nk,v,1,1800,4,3600\n"), TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Nodes != 2 || jobs[0].GPUsPerNode != 8 {
		t.Fatalf("12 GPUs shaped %d x %d, want 2 x 8", jobs[0].Nodes, jobs[0].GPUsPerNode)
	}
	for _, p := range []Policy{PodByPod, GangFIFO, GangBackfill, Phalanx} {
		t.Run(p.String(), func(t *testing.T) {
			r, err := Run(Config{Cluster: twoNodes(t), Policy: p}, jobs)
			if err != nil {
				t.Fatal(err)
			}
			j, k := r.Outcomes[0], r.Outcomes[1]
			if j.End-j.Start != time.Hour {
				t.Errorf("12 GPUs on 2 x 8 ran %v, want 1h", j.End-j.Start)
			}
			if k.Start != time.Hour {
				t.Errorf("the 4-GPU job started at %v, want 1h (every GPU bound to j until then)", k.Start)
			}
			if r.IdleWhileQueuedGPUSeconds != 0 {
				t.Errorf("%v GPU-hours idle while queued, want 0", r.IdleWhileQueuedGPUSeconds/3600)
			}
			// 16 GPUs for an hour, then 4 for half an hour.
			if want := (16*3600 + 4*1800) / 3600.0; r.BusyGPUSeconds/3600 != want {
				t.Errorf("busy %v GPU-hours, want %v", r.BusyGPUSeconds/3600, want)
			}
		})
	}
}

// TestFailEndsAtLastEvent: under OnNodeFailure Fail, a job failed by a
// node ends there; its cancelled finish was still queued, so the run went
// on to it and Result.End read 10h, not the last real event (the repair,
// an hour after the failure; found by a helper's probe).
func TestFailEndsAtLastEvent(t *testing.T) {
	r, err := Run(Config{Cluster: twoNodes(t), Policy: GangBackfill, Seed: 3, NodeMTBF: 20 * time.Hour, Repair: time.Hour,
		OnNodeFailure: backfill.Fail}, []TraceJob{{ID: "a", Account: "x", Duration: 10 * time.Hour, GPUs: 16, Nodes: 2, GPUsPerNode: 8}})
	if err != nil {
		t.Fatal(err)
	}
	a := r.Outcomes[0]
	if a.End >= 10*time.Hour {
		t.Fatalf("the job ended at %v: no node failed under it, the case tests nothing", a.End)
	}
	if r.End > a.End+time.Hour {
		t.Errorf("the job failed at %v and its node was repaired an hour later, but End is %v", a.End, r.End)
	}
}

// TestWholeNodeShape: a job built by hand as whole nodes (GPUsPerNode 0)
// holds its nodes' GPUs, which its GPUs stand for: it runs its hour under
// every policy (a review found it finished at once, and pod-by-pod
// panicking, when its shape was counted as Nodes x GPUsPerNode = 0 GPUs).
func TestWholeNodeShape(t *testing.T) {
	jobs := []TraceJob{{ID: "w", Account: "x", Duration: time.Hour, GPUs: 8, Nodes: 1, GPUsPerNode: 0}}
	for _, p := range []Policy{PodByPod, GangFIFO, GangBackfill, Phalanx} {
		t.Run(p.String(), func(t *testing.T) {
			r, err := Run(Config{Cluster: twoNodes(t), Policy: p}, jobs)
			if err != nil {
				t.Fatal(err)
			}
			if o := r.Outcomes[0]; o.End-o.Start != time.Hour || o.GPUSeconds != 8*3600 {
				t.Errorf("ran %v on %v GPU-seconds, want 1h and %v", o.End-o.Start, o.GPUSeconds, 8*3600)
			}
		})
	}
}
