package backfill

import (
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestRecountBlockedReason: a job that would fit now but for GPUs
// reserved (WaitReservation) or held (WaitHold) for another carries the
// placement reason of its test on the GPUs the reservation or hold
// leaves ("needs 10 free GPUs; the cluster has 8"). When a job ranked
// below it starts later in the walk on GPUs it counted, the plan tells
// the count that start leaves, as a second cycle at the same time tells
// it, and with OnlyChangedWaits that cycle lists nothing. Before
// recountWaits read these reasons anew (stop 69), the first cycle kept
// the test's count (8), and the second told 6 and listed the job again,
// its message unchanged. When low takes 3 GPUs, j no longer fits even on
// the reserved or held GPUs: it waits for resources (under the
// reservation, told the one slot is taken), as the second cycle and an
// engine restored from the first cycle's snapshot tell. Before
// recountWaits told it so (stop 70), the first cycle kept the blocked
// code with the new count, and the second listed j again.
func TestRecountBlockedReason(t *testing.T) {
	const (
		six  = "needs 10 free GPUs; the cluster has 6 (3 nodes left out: 3 short of free GPUs)"
		five = "needs 10 free GPUs; the cluster has 5 (3 nodes left out: 3 short of free GPUs)"
	)
	for _, blocked := range []struct {
		name string
		code WaitCode
		by   string // the job whose GPUs j would fit on
		low  int    // the GPUs low takes of node 3's 8 free
		want string // j's reason
		// refused: j no longer fits even on by's GPUs (WaitResources,
		// with noSlot's code).
		refused bool
		noSlot  NoSlotCode
	}{
		{"reservation", WaitReservation, "r", 2, six, false, 0},
		{"hold", WaitHold, "h", 2, six, false, 0},
		{"reservation/low takes 3", WaitReservation, "r", 3, five, true, SlotsTaken},
		{"hold/low takes 3", WaitHold, "h", 3, five, true, 0},
	} {
		want := blocked.want
		for _, changes := range []bool{false, true} { // Config.OnlyChangedWaits
			t.Run(fmt.Sprintf("%s/changes=%v", blocked.name, changes), func(t *testing.T) {
				c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
				if err != nil {
					t.Fatal(err)
				}
				hold := blocked.code == WaitHold
				cfg := DefaultConfig()
				cfg.Hold.Enabled = false
				cfg.ReservationDepth = 1 // EASY: r's is the one reservation
				if hold {
					// j (10 GPUs) below MinGPUs: it takes no hold of its own.
					cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 12, MinWait: 10 * time.Minute, MaxShare: 1, CapWait: 20 * time.Minute,
						Budget: time.Hour, Hysteresis: 10 * time.Minute, MaxHolds: 2}
				}
				cfg.OnlyChangedWaits = changes
				e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
				if err != nil {
					t.Fatal(err)
				}
				limit := func(d time.Duration) time.Duration {
					if hold {
						return 0 // hold mode: jobs without time limits
					}
					return d
				}
				job := func(id string, at time.Time, l time.Duration, req placement.Request) Job {
					return Job{ID: id, Account: "a", Submit: at, TimeLimit: limit(l), Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}}
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
				// Two whole nodes and half of a third busy: 12 GPUs
				// free, 4 on node 2 and 8 on node 3.
				submit(job("a", now, time.Hour, placement.NodesOf(2, 8)), job("b", now, time.Hour, placement.NodesOf(1, 4)))
				if hold {
					// h (3 whole nodes) waits, and after MinWait holds
					// node 2's free GPUs in its target, nodes 0-2.
					submit(job("h", now, 0, placement.NodesOf(3, 8)))
				}
				if p := scheduleStarted(t, e, now); len(p.Starts) != 2 {
					t.Fatalf("a and b did not start:\n%s", p.Describe(c, epoch))
				}
				if hold {
					now = now.Add(11 * time.Minute)
					if p := scheduleStarted(t, e, now); len(p.Holds) != 1 || p.Holds[0].Job != "h" || p.Holds[0].GPUs != 4 {
						t.Fatalf("want h holding node 2's 4 free GPUs:\n%s", p.Describe(c, epoch))
					}
				}
				now = now.Add(time.Minute)
				if !hold {
					// r reserves nodes 0-2 for when a and b end.
					submit(job("r", now, time.Hour, placement.NodesOf(3, 8)))
				}
				// j (10 GPUs, for 3 hours) fits the 12 free only on node
				// 2's reserved or held GPUs; low, ranked below j, starts
				// on node 3.
				submit(job("j", now.Add(time.Second), 3*time.Hour, placement.TotalGPUs(10)),
					job("low", now.Add(2*time.Second), 3*time.Hour, placement.NodesOf(1, blocked.low)))
				now = now.Add(time.Minute)
				first := scheduleStarted(t, e, now)
				if len(first.Starts) != 1 || first.Starts[0].Job != "low" {
					t.Fatalf("want low started:\n%s", first.Describe(c, epoch))
				}
				code, by := blocked.code, blocked.by
				if blocked.refused {
					code, by = WaitResources, ""
				}
				w := waitingOf(first, "j")
				if w == nil || w.Code != code || w.Blocker != by || w.NoSlot != blocked.noSlot {
					t.Fatalf("want j waiting with code %v for %q (no slot: %v):\n%s", code, by, blocked.noSlot, first.Describe(c, epoch))
				}
				if got := w.Reason.String(); got != want {
					t.Errorf("first cycle gave j the reason:\n%s\nwant:\n%s", got, want)
				}
				// An engine restored from the snapshot, listing every
				// reason, tells j the same.
				fresh := cfg
				fresh.OnlyChangedWaits = false
				f, err := Restore(c, fresh, e.Snapshot())
				if err != nil {
					t.Fatal(err)
				}
				fp := scheduleStarted(t, f, now)
				if fw := waitingOf(fp, "j"); len(fp.Starts) != 0 || fw == nil || *fw != *w {
					t.Errorf("first cycle told j %+v; the restored engine %+v:\n%s", *w, fw, fp.Describe(c, epoch))
				}
				second := scheduleStarted(t, e, now)
				if len(second.Starts) != 0 {
					t.Fatalf("second cycle started:\n%s", second.Describe(c, epoch))
				}
				if changes {
					if len(second.Waiting) != 0 {
						t.Errorf("second cycle listed changed reasons: %+v\n%s", second.Waiting, second.Describe(c, epoch))
					}
					return
				}
				if w := waitingOf(second, "j"); w == nil || w.Code != code || w.Reason.String() != want || w.NoSlot != blocked.noSlot {
					t.Errorf("second cycle told j other words: %+v, want the reason:\n%s", w, want)
				}
			})
		}
	}
}
