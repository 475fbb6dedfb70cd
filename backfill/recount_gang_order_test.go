package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestRecountGangOrder: a gang whose failing member failed by itself
// only once moved to the front of the gang's order (member a, tried
// first, fitted; b, alone on no node with 8 free GPUs, did not) is told,
// after a job ranked below it took GPUs a needed later in the walk, what
// a second cycle at the same time tells: that a, tried first, no longer
// fits. Before recountWaits tried such a gang anew (stop 69), the first
// cycle recounted b's reason and the second named a, listing the gang
// again with OnlyChangedWaits.
func TestRecountGangOrder(t *testing.T) {
	const want = "its members cannot all fit together: member a: needs 3 nodes with 4 free GPUs; the cluster has 2 (2 nodes left out: 2 short of free GPUs)"
	for _, tc := range []struct {
		name    string
		changes bool // Config.OnlyChangedWaits
	}{
		{"every reason listed", false},
		{"changes only", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Hold.Enabled = false
			cfg.ReservationDepth = 0 // greedy: the job ranked below starts
			cfg.OnlyChangedWaits = tc.changes
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			job := func(id string, at time.Time, ms ...gang.Member) Job {
				return Job{ID: id, Account: "a", Submit: at, TimeLimit: time.Hour, Gang: gang.Spec{Members: ms}}
			}
			now := epoch
			// Half of every node busy: 4 free GPUs on each of the 4.
			if err := e.Submit(job("run", now, gang.Member{Name: "m", Request: placement.NodesOf(4, 4)}), now); err != nil {
				t.Fatal(err)
			}
			if p := scheduleStarted(t, e, now); len(p.Starts) != 1 {
				t.Fatalf("run did not start:\n%s", p.Describe(c, epoch))
			}
			now = now.Add(time.Minute)
			// a (12 GPUs) goes first in the gang's order; b needs a node
			// with 8 free GPUs, which no node has.
			g := job("g", now, gang.Member{Name: "a", Request: placement.NodesOf(3, 4)}, gang.Member{Name: "b", Request: placement.NodesOf(1, 8)})
			low := job("low", now.Add(time.Second), gang.Member{Name: "m", Request: placement.NodesOf(2, 4)})
			for _, j := range []Job{g, low} {
				if err := e.Submit(j, j.Submit); err != nil {
					t.Fatal(err)
				}
			}
			now = now.Add(time.Minute)
			first := scheduleStarted(t, e, now)
			if len(first.Starts) != 1 || first.Starts[0].Job != "low" {
				t.Fatalf("want low started below g:\n%s", first.Describe(c, epoch))
			}
			if len(first.Waiting) != 1 || first.Waiting[0].Job != "g" {
				t.Fatalf("want g listed waiting:\n%s", first.Describe(c, epoch))
			}
			if got := first.Waiting[0].Message(epoch); got != want {
				t.Errorf("first cycle told g:\n%s\nwant:\n%s", got, want)
			}
			if s, ok := e.Job("g"); !ok || s.Reason != want {
				t.Errorf("g's status tells %q, want %q", s.Reason, want)
			}
			second := scheduleStarted(t, e, now)
			if len(second.Starts) != 0 {
				t.Fatalf("second cycle started:\n%s", second.Describe(c, epoch))
			}
			switch {
			case tc.changes && len(second.Waiting) != 0:
				t.Errorf("second cycle listed a changed reason:\n%s", second.Describe(c, epoch))
			case !tc.changes && (len(second.Waiting) != 1 || second.Waiting[0].Message(epoch) != want):
				t.Errorf("second cycle told other words:\n%s\nwant g told:\n%s", second.Describe(c, epoch), want)
			}
		})
	}
}
