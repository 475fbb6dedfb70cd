package sim

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestMeanJCTDoesNotOverflow: the mean completion time of many long jobs,
// whose sum exceeds a Duration's range (about 292 years), is their mean,
// not a negative number (a replay of Philly at load 4 under gang FIFO
// printed a mean JCT of -107169s).
func TestMeanJCTDoesNotOverflow(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs int
		jct  time.Duration
	}{
		{"few short", 10, time.Hour},
		{"Philly-sized, 31 h each", 82247, 31 * time.Hour},
		{"a million, 2 days each", 1_000_000, 48 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{jobs: make([]TraceJob, tc.jobs), out: make([]Outcome, tc.jobs)}
			for i := range r.out {
				r.out[i] = Outcome{Submit: time.Duration(i) * time.Second, Started: true, Finished: true}
				r.out[i].Start = r.out[i].Submit + tc.jct/2
				r.out[i].End = r.out[i].Submit + tc.jct
			}
			var m Result
			m.countJobs(r, r.out[tc.jobs-1].End)
			if m.Finished != tc.jobs {
				t.Fatalf("%d finished, want %d", m.Finished, tc.jobs)
			}
			if d := m.MeanJCT - tc.jct; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("mean JCT %v, want %v", m.MeanJCT, tc.jct)
			}
		})
	}
}

// TestMetricsAtTheEdges: the metrics mean what their names say on small
// traces whose values are worked out by hand (a 2-node, 16-GPU cluster).
func TestMetricsAtTheEdges(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, submit, dur time.Duration, nodes int) TraceJob {
		return TraceJob{ID: id, Account: "x", Submit: submit, Duration: dur, GPUs: 8 * nodes, Nodes: nodes, GPUsPerNode: 8}
	}
	run := func(t *testing.T, cfg Config, jobs ...TraceJob) *Result {
		t.Helper()
		cfg.Cluster = c
		r, err := Run(cfg, jobs)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Run("negative horizon", func(t *testing.T) {
		if _, err := Run(Config{Cluster: c, Policy: GangBackfill, Horizon: -time.Hour}, []TraceJob{job("a", 0, time.Hour, 1)}); err == nil {
			t.Error("a negative Horizon ran")
		}
	})
	t.Run("horizon", func(t *testing.T) {
		// a runs 2h-12h on one node; b (both nodes) waits behind it. The
		// run stops 5 hours after the first submit, at 7h: a ran 5 of
		// them on half the cluster, and b has waited 5.
		r := run(t, Config{Policy: GangBackfill, Horizon: 5 * time.Hour},
			job("a", 2*time.Hour, 10*time.Hour, 1), job("b", 2*time.Hour, time.Hour, 2))
		if r.End != 7*time.Hour || r.Makespan != 5*time.Hour || r.ActiveWindow != 5*time.Hour {
			t.Errorf("end %v, makespan %v, active window %v; want 7h, 5h, 5h", r.End, r.Makespan, r.ActiveWindow)
		}
		if math.Abs(r.Utilisation-0.5) > 1e-12 || r.LongestWait != 5*time.Hour || r.Running != 1 || r.Pending != 1 {
			t.Errorf("utilisation %v, longest wait %v, %d running, %d waiting; want 0.5, 5h, 1, 1",
				r.Utilisation, r.LongestWait, r.Running, r.Pending)
		}
	})
	for _, policy := range []Policy{GangBackfill, PodByPod} {
		t.Run("jobs after the horizon/"+policy.String(), func(t *testing.T) {
			// a runs 0-1h, b 1h-2h (both done at the 3h horizon), w waits
			// behind l (running from 2h), c comes at 4h: after the end,
			// counted as not submitted. Every job is in one count.
			// c's account, y, is the trace's too: Accounts counts the
			// trace's accounts under every policy (pod by pod counted only
			// those submitted by the horizon).
			late := job("c", 4*time.Hour, time.Hour, 1)
			late.Account = "y"
			r := run(t, Config{Policy: policy, Horizon: 3 * time.Hour},
				job("a", 0, time.Hour, 1), job("b", time.Hour, time.Hour, 1), job("l", 2*time.Hour, 5*time.Hour, 2),
				job("w", 2*time.Hour+time.Minute, time.Hour, 2), late)
			got := []int{r.Jobs, r.Finished, r.Running, r.Pending, r.Rejected, r.Unsubmitted, r.Accounts}
			if want := []int{5, 2, 1, 1, 0, 1, 2}; !slices.Equal(got, want) {
				t.Errorf("jobs, finished, running, pending, rejected, unsubmitted, accounts = %v, want %v", got, want)
			}
		})
		t.Run("rejected/"+policy.String(), func(t *testing.T) {
			// big asks for 3 nodes of the 2: it is rejected at once, never
			// waits, and no wait counts it.
			r := run(t, Config{Policy: policy}, job("a", 0, time.Hour, 1), job("big", 0, time.Hour, 3))
			if r.Rejected != 1 || r.Finished != 1 || r.Pending != 0 || r.LongestWait != 0 {
				t.Errorf("%d rejected, %d finished, %d waiting, longest wait %v; want 1, 1, 0, 0", r.Rejected, r.Finished, r.Pending, r.LongestWait)
			}
			for _, w := range r.Waits {
				if w.Jobs > 0 && (w.Max != 0 || w.NotStarted != 0) {
					t.Errorf("class %s counts the rejected job: %+v", w.Class, w)
				}
			}
			if !r.Outcomes[1].Rejected || r.Outcomes[0].Rejected {
				t.Errorf("outcomes %+v: want big marked rejected", r.Outcomes)
			}
		})
	}
	t.Run("makespan to the end of the run", func(t *testing.T) {
		// Pod by pod, x1 and y1 each bind one pod of two and wait for
		// ever; z (1 GPU) comes at 2h and cannot bind either: the run
		// ends at z's submit, and the makespan reaches it.
		r := run(t, Config{Policy: PodByPod}, job("x1", 0, time.Hour, 2), job("y1", 0, time.Hour, 2),
			TraceJob{ID: "z", Account: "x", Submit: 2 * time.Hour, Duration: time.Hour, GPUs: 1, Nodes: 1, GPUsPerNode: 1})
		if r.Finished != 0 || r.End != 2*time.Hour || r.Makespan != 2*time.Hour {
			t.Errorf("%d finished, end %v, makespan %v; want 0, 2h, 2h", r.Finished, r.End, r.Makespan)
		}
	})
}

// TestTableLargeWaits: the ">64 p95/max" cell is "-" only when no job of
// more than 64 GPUs was submitted, as in the waits table; large jobs that
// never waited show 0s/0s.
func TestTableLargeWaits(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 8, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		jobs []TraceJob
		want string
	}{
		{"no large job", []TraceJob{{ID: "a", Account: "x", Duration: time.Hour, GPUs: 8, Nodes: 1, GPUsPerNode: 8}}, " - "},
		{"a large job that never waited", []TraceJob{{ID: "a", Account: "x", Duration: time.Hour, GPUs: 128, Nodes: 16, GPUsPerNode: 8}}, " 0s/0s "},
		{"a large job that waited an hour", []TraceJob{{ID: "a", Account: "x", Duration: time.Hour, GPUs: 128, Nodes: 16, GPUsPerNode: 8},
			{ID: "b", Account: "x", Duration: time.Hour, GPUs: 128, Nodes: 16, GPUsPerNode: 8}}, " 1.0h/1.0h "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Run(Config{Cluster: c, Policy: GangBackfill}, tt.jobs)
			if err != nil {
				t.Fatal(err)
			}
			row := strings.Split(Table([]*Result{r}), "\n")[2]
			if !strings.Contains(row, tt.want) {
				t.Fatalf("row %q lacks %q", row, tt.want)
			}
		})
	}
}

// TestRunRefusesBadJobs: jobs Run would simulate wrongly are refused,
// under every policy: out of submit order (the makespan of jobs run from
// 0 to 2h was 1h), a negative duration (pod by pod: -8 GPU-hours busy, a
// mean JCT of -1h), a shape of no node.
func TestRunRefusesBadJobs(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, submit, dur time.Duration) TraceJob {
		return TraceJob{ID: id, Account: "x", Submit: submit, Duration: dur, GPUs: 8, Nodes: 1, GPUsPerNode: 8}
	}
	noNode := job("a", 0, time.Hour)
	noNode.Nodes = 0
	negLimit := job("a", 0, time.Hour)
	negLimit.TimeLimit = -time.Hour
	for _, tt := range []struct {
		name string
		jobs []TraceJob
		err  string
	}{
		{"out of submit order", []TraceJob{job("b", time.Hour, time.Hour), job("a", 0, time.Hour)}, "job a submitted at 0s, before job b at 1h0m0s"},
		{"negative duration", []TraceJob{job("a", time.Hour, -time.Hour)}, "job a: negative duration"},
		{"negative limit", []TraceJob{negLimit}, "job a: negative duration"},
		{"no node", []TraceJob{noNode}, "job a: 8 GPUs on 0 nodes"},
	} {
		for _, p := range Policies {
			t.Run(tt.name+"/"+p.String(), func(t *testing.T) {
				r, err := Run(Config{Cluster: c, Policy: p}, tt.jobs)
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Run = %v, %v; want an error with %q", r, err, tt.err)
				}
			})
		}
	}
}

// TestRejectedOnUnequalNodes: a gang that no set of nodes can hold is
// rejected under every policy (it never queues, and no wait counts it),
// although it asks for no more nodes, nor GPUs per node, than the
// cluster has: two pods of 8 GPUs on an 8-GPU and a 4-GPU node. Pod by
// pod queued it for ever: a wait to the end of the run, one job waiting.
func TestRejectedOnUnequalNodes(t *testing.T) {
	c, err := topology.Build(topology.ClusterSpec{Levels: []string{"leaf"}, Nodes: []topology.NodeSpec{
		{Name: "a", GPUs: 8, Path: []string{"l"}}, {Name: "b", GPUs: 4, Path: []string{"l"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		gang     TraceJob
		rejected int
	}{
		{"two pods of 8", TraceJob{ID: "gang", Account: "x", Duration: time.Hour, GPUs: 16, Nodes: 2, GPUsPerNode: 8}, 1},
		{"two pods of 4", TraceJob{ID: "gang", Account: "x", Duration: time.Hour, GPUs: 8, Nodes: 2, GPUsPerNode: 4}, 0},
		{"one pod of 8", TraceJob{ID: "gang", Account: "x", Duration: time.Hour, GPUs: 8, Nodes: 1, GPUsPerNode: 8}, 0},
	} {
		for _, p := range Policies {
			t.Run(tt.name+"/"+p.String(), func(t *testing.T) {
				jobs := []TraceJob{{ID: "small", Account: "x", Duration: time.Hour, GPUs: 1, Nodes: 1, GPUsPerNode: 1}, tt.gang}
				r, err := Run(Config{Cluster: c, Policy: p}, jobs)
				if err != nil {
					t.Fatal(err)
				}
				if r.Rejected != tt.rejected || r.Finished != 2-tt.rejected || r.Pending != 0 {
					t.Fatalf("%d rejected, %d finished, %d waiting; want %d, %d, 0", r.Rejected, r.Finished, r.Pending, tt.rejected, 2-tt.rejected)
				}
				if tt.rejected > 0 && (r.LongestWait != 0 || r.IdleWhileQueuedGPUSeconds != 0) {
					t.Fatalf("longest wait %v, idle while queued %v GPU-s; want 0, 0", r.LongestWait, r.IdleWhileQueuedGPUSeconds)
				}
			})
		}
	}
}
