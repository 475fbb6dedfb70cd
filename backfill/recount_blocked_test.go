package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestRecountBlockedReason: a job that would fit now but for GPUs
// reserved for another (WaitReservation) carries the placement reason of
// its test on the GPUs the reservation leaves ("needs 10 free GPUs; the
// cluster has 8"). When a job ranked below it starts later in the walk
// on GPUs it counted, the plan tells the count that start leaves, as a
// second cycle at the same time tells it, and with OnlyChangedWaits that
// cycle lists nothing. Before recountWaits read these reasons anew
// (stop 69), the first cycle kept the test's count (8), and the second
// told 6 and listed the job again, its message unchanged.
func TestRecountBlockedReason(t *testing.T) {
	const want = "needs 10 free GPUs; the cluster has 6 (3 nodes left out: 3 short of free GPUs)"
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
			cfg.ReservationDepth = 1 // EASY: r's is the one reservation
			cfg.OnlyChangedWaits = tc.changes
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			job := func(id string, at time.Time, limit time.Duration, req placement.Request) Job {
				return Job{ID: id, Account: "a", Submit: at, TimeLimit: limit, Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}}
			}
			submit := func(jobs ...Job) {
				t.Helper()
				for _, j := range jobs {
					if err := e.Submit(j, j.Submit); err != nil {
						t.Fatal(err)
					}
				}
			}
			now := epoch
			// Two whole nodes and half of a third busy for an hour: 12
			// GPUs free, 4 on node 2 and 8 on node 3.
			submit(job("a", now, time.Hour, placement.NodesOf(2, 8)), job("b", now, time.Hour, placement.NodesOf(1, 4)))
			if p := scheduleStarted(t, e, now); len(p.Starts) != 2 {
				t.Fatalf("a and b did not start:\n%s", p.Describe(c, epoch))
			}
			now = now.Add(time.Minute)
			// r reserves nodes 0-2 for when a and b end; j (10 GPUs, for
			// 3 hours) fits the 12 free only on node 2's reserved GPUs;
			// low, ranked below j, starts on node 3.
			submit(job("r", now, time.Hour, placement.NodesOf(3, 8)),
				job("j", now.Add(time.Second), 3*time.Hour, placement.TotalGPUs(10)),
				job("low", now.Add(2*time.Second), 3*time.Hour, placement.NodesOf(1, 2)))
			now = now.Add(time.Minute)
			first := scheduleStarted(t, e, now)
			if len(first.Starts) != 1 || first.Starts[0].Job != "low" || len(first.Reservations) != 1 || first.Reservations[0].Job != "r" {
				t.Fatalf("want low started and r reserved:\n%s", first.Describe(c, epoch))
			}
			w := waitingOf(first, "j")
			if w == nil || w.Code != WaitReservation || w.Blocker != "r" {
				t.Fatalf("want j waiting for r's reservation:\n%s", first.Describe(c, epoch))
			}
			if got := w.Reason.String(); got != want {
				t.Errorf("first cycle gave j the reason:\n%s\nwant:\n%s", got, want)
			}
			second := scheduleStarted(t, e, now)
			if len(second.Starts) != 0 {
				t.Fatalf("second cycle started:\n%s", second.Describe(c, epoch))
			}
			if tc.changes {
				if len(second.Waiting) != 0 {
					t.Errorf("second cycle listed changed reasons: %+v\n%s", second.Waiting, second.Describe(c, epoch))
				}
				return
			}
			if w := waitingOf(second, "j"); w == nil || w.Code != WaitReservation || w.Reason.String() != want {
				t.Errorf("second cycle told j other words: %+v, want the reason:\n%s", w, want)
			}
		})
	}
}
