package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestRecountPreemptReason: a job whose victim search found no set
// (PreemptTried) is told why with counts of the running gangs and of the
// free GPUs ("cannot be preempted (2 gangs ...)"). When a job ranked
// below it starts later in the walk, the first cycle tells the reason
// the search gives on the state the plan leaves (recountWaits), which is
// what a second cycle at the same time tells, and what an engine
// restored from the snapshot taken after the first cycle, listing every
// reason, tells; with OnlyChangedWaits the second cycle lists nothing.
// Before stop 70 the first cycle kept the counts of the job's test: the
// second cycle told another reason ("3 gangs"), and listed it again
// under OnlyChangedWaits.
//
// A job started in the cycle is a candidate only once the host confirms
// it, so the same holds of one ranked above j, started before j's test
// (low never above: before stop 70 the first cycle told "no lower-class
// victims ... (2 gangs)").
//
// The cluster: four 8-GPU nodes. a (class 0 unless told) runs on node 0
// and b (class 0) on node 1, both with policy never; j (class 1) needs
// 32 GPUs, the whole cluster, and finds no victims; low, ranked below j,
// takes 4 GPUs of node 2 (ranked above j in one case).
func TestRecountPreemptReason(t *testing.T) {
	const pre = "not enough free GPUs now: member m: needs 32 free GPUs; the cluster has 12 (2 nodes left out: 2 short of free GPUs); preemption did not help: "
	for _, tc := range []struct {
		name   string
		aClass int
		low    Job  // its ID, Account and Gang are set by the test
		above  bool // low is submitted before j, and ranks above it
		want   string
	}{
		{"low never", 0, Job{Class: 0, Preemption: preempt.Never}, false,
			pre + "the only victims cannot be preempted (3 gangs of class below 1 with policy never)"},
		{"low never above", 0, Job{Class: 0, Preemption: preempt.Never}, true,
			pre + "the only victims cannot be preempted (3 gangs of class below 1 with policy never)"},
		{"low exempt", 0, Job{Class: 0, Preemption: preempt.Requeue}, false,
			pre + "the only victims are inside their exempt time (1 gang) or cannot be preempted (2 gangs with policy never)"},
		{"low same class", 1, Job{Class: 1, Preemption: preempt.Never}, false,
			pre + "no lower-class victims in any domain that could hold it: with every lower-class gang stopped (1 gang), member m: needs 32 free GPUs; the cluster has 20 (1 node left out: 1 short of free GPUs)"},
	} {
		for _, changes := range []bool{false, true} { // Config.OnlyChangedWaits
			name := tc.name + map[bool]string{false: "/every reason", true: "/changes only"}[changes]
			t.Run(name, func(t *testing.T) {
				// No time limits: j has no planned start, so it searches.
				c, cfg, e := recountPreemptEngine(t, time.Hour, changes)
				submit := func(at time.Time, jobs ...Job) { t.Helper(); submitAt(t, e, at, jobs...) }
				job := classJob
				now := epoch
				submit(now, job("a", tc.aClass, preempt.Never, placement.NodesOf(1, 8)))
				submit(now.Add(time.Second), job("b", 0, preempt.Never, placement.NodesOf(1, 8)))
				now = now.Add(time.Minute)
				if p := scheduleStarted(t, e, now); len(p.Starts) != 2 {
					t.Fatalf("a and b did not both start:\n%s", p.Describe(c, epoch))
				}
				now = now.Add(2 * time.Hour) // a and b out of their exempt time
				jAt, lowAt := now, now.Add(time.Second)
				j, low := job("j", 1, preempt.Never, placement.TotalGPUs(32)), job("low", tc.low.Class, tc.low.Preemption, placement.NodesOf(1, 4))
				if tc.above {
					submit(jAt, low)
					submit(lowAt, j)
				} else {
					submit(jAt, j)
					submit(lowAt, low)
				}
				now = now.Add(time.Minute)
				first := scheduleStarted(t, e, now)
				if len(first.Starts) != 1 || first.Starts[0].Job != "low" || len(first.Preemptions) != 0 {
					t.Fatalf("want low started, no preemption:\n%s", first.Describe(c, epoch))
				}
				w := waitingOf(first, "j")
				if w == nil || w.Code != WaitResources || !w.PreemptTried {
					t.Fatalf("want j waiting for resources after a search:\n%s", first.Describe(c, epoch))
				}
				if got := w.Message(epoch); got != tc.want {
					t.Errorf("first cycle told j:\n%s\nwant:\n%s", got, tc.want)
				}
				if s, ok := e.Job("j"); !ok || s.wait.Message(epoch) != tc.want {
					t.Errorf("j's status after the first cycle: %q", s.wait.Message(epoch))
				}

				fw := repeatAgrees(t, c, cfg, e, now, w)
				if s, ok := e.Job("j"); !ok || s.wait.Message(epoch) != fw.Message(epoch) || s.wait.Preempt != fw.Preempt {
					t.Errorf("j's status after the second cycle: %q; the restored engine told %q", s.wait.Message(epoch), fw.Message(epoch))
				}
			})
		}
	}
}
