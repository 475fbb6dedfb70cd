package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestHoldLetGoMissRoom drives holdLetGo in a walk after searches missed
// (readHoldsMissed) on opsCluster (8 nodes of 8 GPUs): u runs without a
// limit on 5 nodes, l with one on a sixth (the profile has a time
// ahead), and the holds of gangs h and k target one of the last two
// each. The walk lets go of h's hold: a search may then ever find open
// the 8 GPUs of l's node and the 8 h held, and those of k's hold when it
// is the missing job's own, or when several jobs missed (each may hold
// one). It asks for a cycle at once only when the fewest GPUs the misses
// needed are at most those (missRoom); before, whatever they needed. The
// job tested asks nothing for its own miss.
func TestHoldLetGoMissRoom(t *testing.T) {
	for _, tc := range []struct {
		name    string
		needs   []int // GPUs (whole 8-GPU nodes) of the misses, a's first, then x's
		ownHold bool  // k's hold is a's
		tested  bool  // a is the job tested when the hold is let go
		want    bool
	}{
		{"fits the GPUs no hold keeps", []int{16}, false, false, true},
		{"needs the hold kept", []int{24}, false, false, false},
		{"needs its own hold's GPUs", []int{24}, true, false, true},
		{"more than the cluster leaves", []int{32}, true, false, false},
		{"several missed, the fewest counted", []int{32, 24}, false, false, true},
		{"several missed, all too many", []int{32, 40}, false, false, false},
		{"its own miss, tested", []int{8}, false, true, false},
		{"several missed, one tested", []int{8, 8}, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, e, must := fullEngine(t, func(c *Config) { c.Hold.Enabled = true })
			must(e.Finished("big", epoch.Add(time.Minute)))
			now := epoch.Add(2 * time.Minute)
			must(e.Submit(Job{ID: "u", Account: "a", Gang: member(placement.NodesOf(5, 8))}, now))
			must(e.Submit(Job{ID: "l", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, now))
			scheduleStarted(t, e, now)
			var targets []gang.Allocation
			for i := range e.c.NumNodes() {
				if n := topology.NodeID(i); e.ledger.State().FreeCount(n) == 8 {
					targets = append(targets, gang.Allocation{Members: []gang.MemberAllocation{{Name: "m", Pods: 1,
						Assignment: []topology.NodeAlloc{{Node: n, GPUs: 0xff}}}}})
				}
			}
			if len(targets) != 2 || !e.profileAhead() {
				t.Fatalf("scene changed: %d free nodes, profile ahead %v", len(targets), e.profileAhead())
			}
			later := now.Add(time.Minute)
			for _, id := range []string{"a", "x", "h", "k", "b"} {
				must(e.Submit(Job{ID: id, Account: "b", Gang: member(placement.NodesOf(1, 8))}, later))
			}
			a, x, b := e.jobs.byID["a"], e.jobs.byID["x"], e.jobs.byID["b"]
			keeper := e.jobs.byID["k"]
			if tc.ownHold {
				keeper = a
			}
			h := &hold{job: e.jobs.byID["h"], since: later, target: targets[0]}
			k := &hold{job: keeper, since: later, target: targets[1]}
			e.book.addHold(h)
			e.book.addHold(k)
			c := &e.cyc
			c.e, c.now, c.walking, c.reoffer = e, later, true, false
			c.holdMiss, c.holdMissMany, c.holdMissNeed = nil, false, 0
			for i, need := range tc.needs {
				j := []*jobRec{a, x}[i]
				spec := member(placement.NodesOf(need/8, 8))
				c.readHoldsMissed(j, &spec)
			}
			if c.holdMiss != a {
				t.Fatal("a's miss not recorded")
			}
			c.walkOrder, c.walkRank = []*jobRec{x, a, b}, 2
			if tc.tested {
				c.walkRank = 1
			}
			e.book.dropHold(h)
			c.holdLetGo()
			got := c.reoffer
			c.walking, c.walkOrder, c.reoffer = false, nil, false
			e.book.dropHold(k)
			if got != tc.want {
				t.Errorf("cycle at once %v after the hold let go (misses need %v, fewest %d); want %v", got, tc.needs, c.holdMissNeed, tc.want)
			}
		})
	}
}
