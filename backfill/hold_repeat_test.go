package backfill

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// repeatOp is one event of a TestHoldRepeatSameTime scenario: a submit
// (a gang of nodes×gpus, with limit; no limit when 0), a cancel or a
// finish, at its time.
type repeatOp struct {
	at          time.Duration
	kind        string // "submit", "cancel", "finish"
	id, account string
	nodes, gpus int
	limit       time.Duration
}

// TestHoldRepeatSameTime: in hold mode, after each event the host runs a
// cycle, then cycles at once while NextEvent asks for one, then a second
// cycle at the same time with no event between: that one must change
// nothing: start no job, end no hold, give no hold. Found by a random
// driver (cancels and finishes of jobs without limits, repeated cycles),
// shrunk:
//   - planned: j10, which has a planned start (j04 ran past its limit)
//     but no reservation (depth 0), gets no hold; j14, ranked below it,
//     then took a hold whose target covers that start. A second cycle
//     found j10 no planned start and passed j14's hold on to it.
//   - hysteresis: j08 waited out the hysteresis behind j11's hold, ranked
//     below; j11 started on its whole target and j10, ranked below j08,
//     took a new hold on the GPUs j08 needs. A second cycle passed it on
//     to j08 (j10 held nothing).
//
// The first cycle must ask for the next at once (NextEvent), which
// decides as the second did.
func TestHoldRepeatSameTime(t *testing.T) {
	m := time.Minute
	for _, tc := range []struct {
		name string
		ops  []repeatOp
	}{
		{"planned", []repeatOp{
			{38 * m, "submit", "j03", "a", 1, 8, 0},
			{54 * m, "submit", "j04", "c", 1, 8, 37 * m},
			{55 * m, "submit", "j05", "a", 2, 8, 0},
			{141 * m, "submit", "j10", "b", 1, 8, 73 * m},
			{210 * m, "submit", "j14", "b", 3, 8, 0},
		}},
		{"hysteresis", []repeatOp{
			{19 * m, "submit", "j01", "b", 2, 8, 0},
			{42 * m, "submit", "j02", "a", 1, 2, 0},
			{60 * m, "submit", "j05", "c", 2, 8, 0},
			{102 * m, "submit", "j08", "b", 2, 8, 0},
			{131 * m, "submit", "j10", "b", 2, 8, 0},
			{131 * m, "submit", "j11", "c", 3, 8, 0},
			{275 * m, "cancel", "j01", "", 0, 0, 0},
			{333 * m, "finish", "j05", "", 0, 0, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := holdSceneEngine(t, HoldConfig{MinGPUs: 4, MaxShare: 1, Budget: time.Hour, Hysteresis: 10 * time.Minute, MaxHolds: 1}, "a", "b", "c")
			holds := func(p *Plan) []string {
				var ids []string
				for _, h := range p.Holds {
					ids = append(ids, h.Job+" on "+h.Nodes)
				}
				slices.Sort(ids)
				return ids
			}
			var passedOn int
			for _, o := range tc.ops {
				now := epoch.Add(o.at)
				var err error
				switch o.kind {
				case "submit":
					j := Job{ID: o.id, Account: o.account, TimeLimit: o.limit,
						Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(o.nodes, o.gpus)}}}}
					err = e.Submit(j, now)
				case "cancel":
					err = e.Cancel(o.id, now)
				case "finish":
					err = e.Finished(o.id, now)
				}
				if err != nil {
					t.Fatalf("%s %s: %v", o.kind, o.id, err)
				}
				first := scheduleStarted(t, e, now)
				for i := 0; ; i++ {
					for _, h := range first.HoldEnds {
						if h.Cause == HoldPassedOn {
							passedOn++
						}
					}
					if next, ok := e.NextEvent(); !ok || !next.Equal(now.Add(time.Nanosecond)) {
						break
					}
					if i == 5 {
						t.Fatalf("%v: NextEvent still at once after %d cycles", o.at, i+1)
					}
					first = scheduleStarted(t, e, now) // the host's cycle at once (at the same time, as a host would)
				}
				second := scheduleStarted(t, e, now)
				var changed []string
				for _, s := range second.Starts {
					changed = append(changed, "start "+s.Job)
				}
				for _, h := range second.HoldEnds {
					changed = append(changed, fmt.Sprintf("hold of %s ended (%v %s)", h.Job, h.Cause, h.By))
				}
				if a, b := holds(first), holds(second); !slices.Equal(a, b) {
					changed = append(changed, fmt.Sprintf("holds %v, then %v", a, b))
				}
				if len(changed) > 0 {
					t.Fatalf("after %s %s at %v, a second cycle at the same time, NextEvent not at once, changed %v\nthe first:\n%s\nthe second:\n%s",
						o.kind, o.id, o.at, changed, first.Describe(c, epoch), second.Describe(c, epoch))
				}
			}
			if passedOn == 0 {
				t.Errorf("no hold was passed on: the scenario no longer reaches the take-over")
			}
		})
	}
}

// holdSceneEngine returns the cluster of the hold-mode repeat scenes (one
// spine, two leaves of two 8-GPU nodes) and an engine on it with no
// reservations (ReservationDepth 0), hold mode as hold (Enabled set) and
// a flat fair-share tree of accounts.
func holdSceneEngine(t *testing.T, hold HoldConfig, accounts ...string) (*topology.Cluster, *Engine) {
	t.Helper()
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReservationDepth = 0
	cfg.Hold = hold
	cfg.Hold.Enabled = true
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, accounts...))
	if err != nil {
		t.Fatal(err)
	}
	return c, e
}
