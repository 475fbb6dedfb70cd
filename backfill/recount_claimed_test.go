package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestRecountClaimedReason: a job that would fit now but for GPUs
// claimed for another job's preemption (WaitClaimed) carries the
// placement reason of its test on the GPUs the claim leaves. When a job
// ranked below it starts later in the walk on GPUs it counted, the first
// cycle tells what that start leaves (recountWaits), which is what a
// second cycle at the same time tells, and what an engine restored from
// the snapshot taken after the first cycle, listing every reason, tells;
// with OnlyChangedWaits the second cycle lists nothing. Where the start
// leaves it too few GPUs even with the claim's (low takes 3 or 4), it
// waits for resources: before recountWaits told it so (stop 70), the
// first cycle kept WaitClaimed with the new count, which the second
// cycle, and the restored engine, told as WaitResources (listed again
// under OnlyChangedWaits).
//
// The cluster: four 8-GPU nodes. v (class 0, preemptible) runs on node
// 0, a (protected) on node 1, b (protected) on half of node 2; p (class
// 1, two whole nodes) preempts v and claims nodes 0 and 3, node 3's 8
// GPUs free. j (class 0, 10 GPUs) fits only on the claim's free GPUs
// and node 2's 4, and low, ranked below j, takes some of node 2's.
func TestRecountClaimedReason(t *testing.T) {
	const need = 10 // j's GPUs
	for _, tc := range []struct {
		name string
		low  placement.Request // what low takes of node 2's 4 free GPUs
		code WaitCode          // j's code after the first cycle
		want string            // j's reason after the first cycle
	}{
		{"low takes 2", placement.NodesOf(1, 2), WaitClaimed, "needs 10 free GPUs; the cluster has 2 (3 nodes left out: 3 short of free GPUs)"},
		{"low takes 3", placement.NodesOf(1, 3), WaitResources, "needs 10 free GPUs; the cluster has 1 (3 nodes left out: 3 short of free GPUs)"},
		{"low takes 4", placement.NodesOf(1, 4), WaitResources, "needs 10 free GPUs; the cluster has 0 (4 nodes left out: 4 short of free GPUs)"},
	} {
		blocker := map[bool]string{false: "", true: "p"}[tc.code == WaitClaimed]
		for _, changes := range []bool{false, true} { // Config.OnlyChangedWaits
			name := tc.name + map[bool]string{false: "/every reason", true: "/changes only"}[changes]
			t.Run(name, func(t *testing.T) {
				// No time limits: no job has a planned start, so p
				// preempts rather than waits.
				c, cfg, e := recountPreemptEngine(t, time.Minute, changes)
				submit := func(at time.Time, jobs ...Job) { t.Helper(); submitAt(t, e, at, jobs...) }
				now := epoch
				submit(now, classJob("v", 0, preempt.Requeue, placement.NodesOf(1, 8)))
				submit(now.Add(time.Second), classJob("a", 0, preempt.Never, placement.NodesOf(1, 8)))
				submit(now.Add(2*time.Second), classJob("b", 0, preempt.Never, placement.NodesOf(1, 4)))
				now = now.Add(time.Minute)
				if p := scheduleStarted(t, e, now); len(p.Starts) != 3 {
					t.Fatalf("v, a and b did not all start:\n%s", p.Describe(c, epoch))
				}
				if used := e.UsedGPUs(); used != 20 {
					t.Fatalf("%d GPUs used, want 20", used)
				}
				now = now.Add(time.Hour)
				submit(now, classJob("p", 1, preempt.Never, placement.NodesOf(2, 8)))
				if p := scheduleStarted(t, e, now); len(p.Preemptions) != 1 || p.Preemptions[0].Victim != "v" {
					t.Fatalf("want p preempting v:\n%s", p.Describe(c, epoch))
				}
				if s, ok := e.Job("p"); !ok || s.Code != WaitPreempting {
					t.Fatalf("want p waiting for v: %+v", s)
				}
				now = now.Add(time.Minute)
				submit(now, classJob("j", 0, preempt.Never, placement.TotalGPUs(need)))
				submit(now.Add(time.Second), classJob("low", 0, preempt.Never, tc.low))
				now = now.Add(time.Minute)
				first := scheduleStarted(t, e, now)
				if len(first.Starts) != 1 || first.Starts[0].Job != "low" {
					t.Fatalf("want low started below j:\n%s", first.Describe(c, epoch))
				}
				w := waitingOf(first, "j")
				if w == nil || w.Code != tc.code || w.Blocker != blocker {
					t.Fatalf("want j waiting with code %v (blocker %q):\n%s", tc.code, blocker, first.Describe(c, epoch))
				}
				if got := w.Reason.String(); got != tc.want {
					t.Errorf("first cycle gave j the reason:\n%s\nwant:\n%s", got, tc.want)
				}
				if s, ok := e.Job("j"); !ok || s.Code != tc.code || s.wait.Blocker != blocker || s.wait.Reason.String() != tc.want {
					t.Errorf("j's status after the first cycle: code %v, blocker %q, reason %q", s.Code, s.wait.Blocker, s.wait.Reason.String())
				}

				fw := repeatAgrees(t, c, cfg, e, now, w)
				if s, ok := e.Job("j"); !ok || s.Code != fw.Code || s.wait.Blocker != fw.Blocker || s.wait.Reason != fw.Reason {
					t.Errorf("j's status after the second cycle: %+v; the restored engine told %+v", s, *fw)
				}
			})
		}
	}
}

// recountPreemptEngine returns an engine in greedy mode (no reservation
// depth, no hold) with preemption on (exempt time exempt) on four 8-GPU
// nodes in two leaves, one account "a", OnlyChangedWaits as changes,
// with its cluster and config.
func recountPreemptEngine(t *testing.T, exempt time.Duration, changes bool) (*topology.Cluster, Config, *Engine) {
	t.Helper()
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.ReservationDepth = 0 // greedy: a job ranked below another starts after its test
	cfg.Preemption = PreemptionConfig{Enabled: true, ExemptTime: exempt, Grace: 10 * time.Minute}
	cfg.OnlyChangedWaits = changes
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	if err != nil {
		t.Fatal(err)
	}
	return c, cfg, e
}

// classJob is a one-member job of account "a" without a time limit.
func classJob(id string, class int, pol preempt.Policy, req placement.Request) Job {
	return Job{ID: id, Account: "a", Class: class, Preemption: pol, Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}}
}

// submitAt submits jobs to e at at, each with that submit time.
func submitAt(t *testing.T, e *Engine, at time.Time, jobs ...Job) {
	t.Helper()
	for _, j := range jobs {
		j.Submit = at
		if err := e.Submit(j, at); err != nil {
			t.Fatal(err)
		}
	}
}

// repeatAgrees checks that w, what the first cycle at now told job j,
// is what an engine restored from e's snapshot (listing every reason)
// tells it in a cycle at now, and what a second cycle of e at now tells
// (with OnlyChangedWaits: lists nothing), neither starting nor
// preempting. It returns the restored engine's wait.
func repeatAgrees(t *testing.T, c *topology.Cluster, cfg Config, e *Engine, now time.Time, w *Waiting) *Waiting {
	t.Helper()
	fresh := cfg
	fresh.OnlyChangedWaits = false
	f, err := Restore(c, fresh, e.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	fp := scheduleStarted(t, f, now)
	fw := waitingOf(fp, "j")
	if len(fp.Starts) != 0 || len(fp.Preemptions) != 0 || fw == nil {
		t.Fatalf("restored engine's cycle:\n%s", fp.Describe(c, epoch))
	}
	if *fw != *w {
		t.Errorf("first cycle told j:\n%+v\n%s\nthe restored engine:\n%+v\n%s", *w, w.Message(epoch), *fw, fw.Message(epoch))
	}
	second := scheduleStarted(t, e, now)
	if len(second.Starts) != 0 || len(second.Preemptions) != 0 {
		t.Fatalf("second cycle started or preempted:\n%s", second.Describe(c, epoch))
	}
	if cfg.OnlyChangedWaits {
		if len(second.Waiting) != 0 {
			t.Errorf("second cycle listed changed reasons: %+v\n%s", second.Waiting, second.Describe(c, epoch))
		}
	} else if sw := waitingOf(second, "j"); sw == nil || *sw != *fw {
		t.Errorf("second cycle told j %+v; the restored engine %+v", sw, *fw)
	}
	return fw
}
