package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestHoldLetGoMissPreempt: a job whose search missed while holds kept
// their GPUs may then have looked for victims (reserveOrPreempt), and
// the victim search masks the holds' targets as well. On opsCluster (8
// nodes of 8 GPUs), u runs without a limit on 3 nodes and may be
// preempted, v runs without a limit on 2 and may not, l with a limit on
// one; h's hold targets a node of u, k's a free node. Job a needs 4
// nodes: its search finds none (u and v run for good, the holds keep
// theirs), and its victim search finds 3 (u's 2 not held and the free
// node no hold keeps). When the walk lets go of h's hold, a victim
// search finds 4 and a preempts u, but the GPUs left open by their
// count (missRoom: l's node and the free one) are 16, and every GPU of
// h's target runs a job without a limit (runsPast): no cycle at once was
// asked for, and a waited for the next event for a preemption a second
// cycle at the same time makes. When a may preempt (its class above the
// lowest running one) or reclaim its queue's guarantee (u, v and l in a
// queue guaranteed the 24 GPUs of v and l, a in one guaranteed 32,
// preemption off), the
// cycle at once is asked for; when it may not, nothing changes.
func TestHoldLetGoMissPreempt(t *testing.T) {
	for _, tc := range missPreemptCases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, lender, owner := missPreemptConfig(tc.quota, 32, 24)
			e, err := New(opsCluster(t), cfg, flatTree(t, cfg.FairShare, "a", "b"))
			if err != nil {
				t.Fatal(err)
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			now := epoch.Add(2 * time.Minute)
			must(e.Submit(Job{ID: "u", Account: "a", Queue: lender, Preemption: preempt.Requeue, Gang: member(placement.NodesOf(3, 8))}, now))
			must(e.Submit(Job{ID: "v", Account: "a", Queue: lender, Gang: member(placement.NodesOf(2, 8))}, now))
			must(e.Submit(Job{ID: "l", Account: "a", Queue: lender, TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, now))
			scheduleStarted(t, e, now)
			node := func(n topology.NodeID) gang.Allocation {
				return gang.Allocation{Members: []gang.MemberAllocation{{Name: "m", Pods: 1,
					Assignment: []topology.NodeAlloc{{Node: n, GPUs: 0xff}}}}}
			}
			var ofU, free []topology.NodeID
			for i := range e.c.NumNodes() {
				n := topology.NodeID(i)
				switch o := e.jobs.owner(i, 0); {
				case o == nil:
					free = append(free, n)
				case o.job.ID == "u":
					ofU = append(ofU, n)
				}
			}
			if len(ofU) != 3 || len(free) != 2 || !e.profileAhead() {
				t.Fatalf("scene changed: u on %v, free %v, profile ahead %v", ofU, free, e.profileAhead())
			}
			later := now.Add(time.Minute)
			must(e.Submit(Job{ID: "a", Account: "b", Queue: owner, Class: tc.class, Gang: member(placement.NodesOf(4, 8))}, later))
			for _, id := range []string{"h", "k", "b"} {
				must(e.Submit(Job{ID: id, Account: "b", Queue: lender, Gang: member(placement.NodesOf(1, 8))}, later))
			}
			a, b := e.jobs.byID["a"], e.jobs.byID["b"]
			h := &hold{job: e.jobs.byID["h"], since: later, target: node(ofU[0])}
			k := &hold{job: e.jobs.byID["k"], since: later, target: node(free[0])}
			e.book.addHold(h)
			e.book.addHold(k)
			c := &e.cyc
			c.e, c.now, c.walking, c.reoffer, c.holdKept = e, later, true, false, false
			c.holdMiss, c.holdMissMany, c.holdMissNeed = nil, false, 0
			c.initPreempt()
			if _, found := e.search(later, query{j: a, spec: &a.job.Gang}); found {
				t.Fatal("scene changed: a's search found a start")
			}
			c.readHoldsMissed(a, &a.job.Gang)
			if c.holdMiss != a {
				t.Fatal("a's miss not recorded")
			}
			c.walkOrder, c.walkRank = []*jobRec{a, b}, 1
			c.releaseHold(h)
			got := c.reoffer
			c.walking, c.walkOrder, c.reoffer = false, nil, false
			if got != tc.want {
				t.Errorf("cycle at once %v after h's hold let go (a of class %d, quotas %v, missed); want %v", got, tc.class, tc.quota, tc.want)
			}
			// The cycle at once is not asked for in vain: one at the
			// same time preempts u for a when a may preempt or reclaim.
			p, err := e.Schedule(later)
			must(err)
			preempted := len(p.Preemptions) > 0 && p.Preemptions[0].Victim == "u" && p.Preemptions[0].Preemptor == "a"
			if preempted != tc.want {
				t.Errorf("a second cycle preempts %v; want u preempted: %v", p.Preemptions, tc.want)
			}
		})
	}
}

// TestHeldStartMissPreempt: as TestHoldLetGoMissPreempt, a hold's end
// after the miss of a job that may preempt, here by its gang's start
// (heldStarted), away from its target. On opsCluster (8 nodes of 8 GPUs)
// u runs without a limit on 3 nodes and may be preempted, v without a
// limit on 4 and may not, l with a limit on half of the eighth; h's hold
// (4 GPUs) targets half a node of u. Job a (3 nodes of 8 GPUs) is
// walked first: its search misses, and its victim search, holds masked,
// finds u's 2 other nodes. Then h's gang starts beside l (the only GPUs
// free) and its hold ends: a victim search now finds u's 3 nodes, and a
// second cycle at the same time preempts u for a. Every
// GPU of h's target runs a job without a limit (runsPast), which let
// heldStarted ask for no cycle at once, whereas releaseHold and retarget
// ask for one after such a miss (holdMissPreempts): a waited for the
// next event for that preemption. The same when a may reclaim its
// queue's guarantee (v and l in a queue guaranteed their 36 GPUs, u
// borrowing in it, a and h in one guaranteed 28; preemption off). When
// a may do neither (its class not above u's, no queues), nothing is
// asked and nothing changes. (u starts in a cycle after v and l, so that
// it is the one that borrows.)
func TestHeldStartMissPreempt(t *testing.T) {
	for _, tc := range missPreemptCases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, lender, owner := missPreemptConfig(tc.quota, 28, 36)
			cfg.Hold.MinWait = 10 * time.Hour // a is no hold candidate
			c := opsCluster(t)
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
			if err != nil {
				t.Fatal(err)
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			now := epoch.Add(2 * time.Minute)
			must(e.Submit(Job{ID: "v", Account: "a", Queue: lender, Gang: member(placement.NodesOf(4, 8))}, now))
			must(e.Submit(Job{ID: "l", Account: "a", Queue: lender, TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 4))}, now))
			scheduleStarted(t, e, now) // v and l first: u borrows
			must(e.Submit(Job{ID: "u", Account: "a", Queue: lender, Preemption: preempt.Requeue, Gang: member(placement.NodesOf(3, 8))}, now))
			scheduleStarted(t, e, now)
			var ofU []topology.NodeID
			for i := range e.c.NumNodes() {
				if o := e.jobs.owner(i, 0); o != nil && o.job.ID == "u" {
					ofU = append(ofU, topology.NodeID(i))
				}
			}
			if len(ofU) != 3 || e.ledger.State().FreeGPUs() != 4 || !e.profileAhead() {
				t.Fatalf("scene changed: u on %v, %d GPUs free, profile ahead %v", ofU, e.ledger.State().FreeGPUs(), e.profileAhead())
			}
			later := now.Add(time.Minute)
			must(e.Submit(Job{ID: "a", Account: "b", Queue: owner, Class: tc.class, Gang: member(placement.NodesOf(3, 8))}, later))
			must(e.Submit(Job{ID: "h", Account: "b", Queue: owner, Gang: member(placement.NodesOf(1, 4))}, later))
			h := &hold{job: e.jobs.byID["h"], since: later, target: gang.Allocation{Members: []gang.MemberAllocation{{Name: "m", Pods: 1,
				Assignment: []topology.NodeAlloc{{Node: ofU[0], GPUs: 0x0f}}}}}}
			h.budget = e.holdBudget(&h.target)
			e.book.addHold(h)
			first := scheduleStarted(t, e, later)
			if len(first.Starts) != 1 || first.Starts[0].Job != "h" || len(first.Preemptions) != 0 {
				t.Fatalf("want h started and nothing preempted:\n%s", first.Describe(c, epoch))
			}
			next, ok := e.NextEvent()
			if atOnce := ok && next.Equal(later.Add(time.Nanosecond)); atOnce != tc.want {
				t.Errorf("NextEvent %v, %v: a cycle at once %v after h's start, want %v", next.Sub(epoch), ok, atOnce, tc.want)
			}
			// The cycle at once is not asked for in vain: one at the
			// same time preempts u for a when a may preempt or reclaim.
			second := scheduleStarted(t, e, later)
			preempted := len(second.Preemptions) > 0 && second.Preemptions[0].Victim == "u" && second.Preemptions[0].Preemptor == "a"
			if preempted != tc.want {
				t.Errorf("a second cycle preempts %v; want u preempted for a: %v", second.Preemptions, tc.want)
			}
		})
	}
}

// missPreemptConfig is the configuration of the hold-miss tests above:
// hold mode on, and either preemption on (no queues) or, with quota,
// preemption off and two queues without limits, "g" (the owner, where
// the job that misses waits) guaranteed own GPUs and "borrow" (the
// lender, where the jobs to reclaim from run) guaranteed lent.
func missPreemptConfig(quota bool, own, lent int) (cfg Config, lender, owner string) {
	cfg = DefaultConfig()
	cfg.Hold.Enabled = true
	cfg.Preemption.Enabled, cfg.Preemption.ExemptTime = !quota, 0
	if !quota {
		return cfg, "", ""
	}
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "g", Guarantee: own, LendingLimit: Unlimited, BorrowingLimit: Unlimited, Maximum: Unlimited},
		{Name: "borrow", Guarantee: lent, LendingLimit: Unlimited, BorrowingLimit: Unlimited, Maximum: Unlimited},
	}}
	return cfg, "borrow", "g"
}

// missPreemptCases are the cases of the hold-miss tests above: whether
// job a, whose search missed, may look for victims (its class above the
// lowest running one) or reclaim (quota), and so whether a cycle at once
// is wanted.
var missPreemptCases = []struct {
	name  string
	class int  // a's
	quota bool // queues: a may reclaim
	want  bool
}{
	{"may preempt", 1, false, true},
	{"may reclaim", 0, true, true},
	{"may not preempt", 0, false, false},
}
