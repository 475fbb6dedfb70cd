package backfill

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/topology"
)

// reclaimLendingScene builds the scene of the reclaim tests with a
// lender: guaranteedPair's four nodes (queues q and o, 16 GPUs each),
// preemption on; in o, G (elastic: 3 nodes, minimum 2, growing) runs
// on nodes 0-2 and B on node 3, so that o borrows all of q's
// guarantee. From the cycle after G's start, G lends its one pod above
// its minimum.
func reclaimLendingScene(t *testing.T) (*Engine, func(id, queue string, lo, hi, min int, p preempt.Policy, limit time.Duration) Job) {
	t.Helper()
	e, mk := quotaRig(t, 4, []QueueSpec{
		{Name: "q", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		{Name: "o", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
	}, func(c *Config) { c.Preemption.Enabled = true })
	job := func(id, queue string, lo, hi, min int, p preempt.Policy, limit time.Duration) Job {
		return mk(id, queue, lo, hi, hi-lo, min, p, limit)
	}
	g := job("G", "o", 0, 3, 2, preempt.Requeue, 10*time.Hour)
	g.Grow = true
	require.NoError(t, e.Submit(g, epoch))
	require.NoError(t, e.Submit(job("B", "o", 3, 4, 0, preempt.Requeue, 10*time.Hour), epoch))
	p := startAll(t, e, epoch)
	require.Len(t, p.Starts, 2, p.Describe(e.c, epoch))
	return e, job
}

// queueUsed returns the GPUs queue name uses (Engine.Queues).
func queueUsed(e *Engine, name string) int {
	for _, q := range e.Queues() {
		if q.Name == name {
			return q.Used
		}
	}
	return -1
}

// TestReclaimTakesLentPods: X (queue q, 2 nodes, within q's guarantee)
// reclaims q's guarantee from o, where G lends one pod above its
// minimum and B runs on one node. At class 1, G lends to X (lendsTo):
// the reclaim counts the lent pod free and takes it from G (PodsRemoved
// For X) with B as its only victim, and G keeps its minimum. Before the
// fix the reclaim search counted the lent pod taken and stopped G whole
// (24 GPUs, 0.8 GPU-hours lost). At class 0, G lends X nothing, and
// stopping G whole is the reclaim (by design).
func TestReclaimTakesLentPods(t *testing.T) {
	for _, tc := range []struct {
		name      string
		class     int
		victims   []string
		removed   int     // pods removed from G for X
		lost      float64 // GPU-hours the victims lose
		gPods     int     // G's pods once X started (0: G stopped)
		xNodes    []int   // X's nodes
		oUsedThen int     // o's GPUs once X started
	}{
		{"class 1: the lent pod and B", 1, []string{"B"}, 1, 8 * 2.0 / 60, 2, []int{2, 3}, 16},
		{"class 0: no lending, G stopped", 0, []string{"G"}, 0, 24 * 2.0 / 60, 0, nil, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, job := reclaimLendingScene(t)
			at := epoch.Add(2 * time.Minute)
			x := job("X", "q", 0, 4, 0, preempt.Requeue, time.Hour)
			x.Gang.Members[0].Request.Nodes = 2
			x.Class = tc.class
			require.NoError(t, e.Submit(x, at))
			p := startAll(t, e, at)
			desc := p.Describe(e.c, epoch)
			require.Empty(t, p.Starts, desc)
			var victims []string
			var lost int64
			for _, pr := range p.Preemptions {
				require.Equal(t, "X", pr.Preemptor)
				require.Contains(t, pr.Reason, "reclaimed for job X of queue q")
				victims = append(victims, pr.Victim)
				lost += pr.LostGPUSeconds
			}
			require.Equal(t, tc.victims, victims, desc)
			require.InDelta(t, tc.lost, float64(lost)/3600, 1e-9, desc)
			removed := 0
			for _, pc := range p.PodChanges {
				require.Equal(t, "G", pc.Job, desc)
				require.Equal(t, PodsRemoved, pc.Kind)
				require.Equal(t, "X", pc.For)
				removed += len(pc.Pods)
			}
			require.Equal(t, tc.removed, removed, desc)
			require.True(t, e.jobs.byID["X"].claim.reclaim)
			require.Equal(t, 16, queueUsed(e, "q"), "the claim counts for q")

			at = at.Add(3 * time.Minute)
			for _, id := range tc.victims {
				require.NoError(t, e.Preempted(id, at))
			}
			p = startAll(t, e, at)
			desc = p.Describe(e.c, epoch)
			require.Len(t, p.Starts, 1, desc)
			require.Equal(t, "X", p.Starts[0].Job)
			require.Equal(t, 16, p.Starts[0].Allocation.GPUs())
			if tc.xNodes != nil {
				var nodes []int
				forEntries(&p.Starts[0].Allocation, func(x topology.NodeAlloc) { nodes = append(nodes, int(x.Node)) })
				sort.Ints(nodes)
				require.Equal(t, tc.xNodes, nodes, "X takes G's lent node and B's")
			}
			gr := e.jobs.byID["G"]
			if tc.gPods == 0 {
				require.False(t, gr.phase.Active(), "G was stopped: %s", gr.phase)
			} else {
				require.Equal(t, StateRunning, gr.phase)
				require.Equal(t, tc.gPods, gr.alloc.Members[0].Pods)
			}
			require.Equal(t, 16, queueUsed(e, "q"))
			require.Equal(t, tc.oUsedThen, queueUsed(e, "o"))
		})
	}
}

// TestReclaimLentClaimRoundTrip: a snapshot taken while X's reclaim
// claim holds the pod it took from G (G shrunk to its minimum already, B
// not yet released) restores to the same snapshot, and the restored
// engine starts X on the claim (G's lent node and B's) once B is
// released, G kept at its minimum and the queues counting as before.
func TestReclaimLentClaimRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit time.Duration
	}{
		{"with a time limit", time.Hour},
		{"without a time limit", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, job := reclaimLendingScene(t)
			at := epoch.Add(2 * time.Minute)
			x := job("X", "q", 0, 4, 0, preempt.Requeue, tc.limit)
			x.Gang.Members[0].Request.Nodes = 2
			x.Class = 1
			require.NoError(t, e.Submit(x, at))
			p := startAll(t, e, at)
			desc := p.Describe(e.c, epoch)
			require.Len(t, p.Preemptions, 1, desc)
			require.Equal(t, "B", p.Preemptions[0].Victim)
			require.Len(t, p.PodChanges, 1, desc)
			require.Equal(t, 2, e.jobs.byID["G"].alloc.Members[0].Pods, "G shrunk before the snapshot")

			r := roundTrip(t, e)
			cl := r.jobs.byID["X"].claim
			require.NotNil(t, cl, "the claim survives the round trip")
			require.True(t, cl.reclaim)
			require.Equal(t, 16, queueUsed(r, "q"))
			require.Equal(t, 16, queueUsed(r, "o"), "G at its minimum; B preempting counts for nobody")

			at = at.Add(3 * time.Minute)
			require.NoError(t, r.Preempted("B", at))
			p = startAll(t, r, at)
			desc = p.Describe(r.c, epoch)
			require.Len(t, p.Starts, 1, desc)
			require.Equal(t, "X", p.Starts[0].Job)
			var nodes []int
			forEntries(&p.Starts[0].Allocation, func(x topology.NodeAlloc) { nodes = append(nodes, int(x.Node)) })
			sort.Ints(nodes)
			require.Equal(t, []int{2, 3}, nodes)
			gr := r.jobs.byID["G"]
			require.Equal(t, StateRunning, gr.phase)
			require.Equal(t, 2, gr.alloc.Members[0].Pods)
			require.Equal(t, 16, queueUsed(r, "q"))
			require.Equal(t, 16, queueUsed(r, "o"))
		})
	}
}

// TestReclaimFailureKeyedByLending: a reclaim search that failed for a
// job of one class answers (claimFails.skip) a job of another class only
// when the growing jobs lend both the same pods (lendsTo: by class). In
// reclaimLendingScene, G (class 0) lends its pod to jobs of class 1 and
// above, not to those of class 0: a quota failure recorded for a class-0
// job of queue q must not rule out a class-1 job of the same shape,
// whose search counts G's pod free (and reclaims by it:
// TestReclaimTakesLentPods), but does rule out another class-0 job, and
// a class-1 failure rules out a class-2 job (G lends both).
func TestReclaimFailureKeyedByLending(t *testing.T) {
	for _, tc := range []struct {
		name          string
		failed, asker int
		skipped       bool
	}{
		{"class 0 failed, class 1 asks: lent a pod, it searches", 0, 1, false},
		{"class 0 failed, class 0 asks", 0, 0, true},
		{"class 1 failed, class 0 asks: lent none, it searches", 1, 0, false},
		{"class 1 failed, class 2 asks: lent the same pod", 1, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := reclaimLendingScene(t)
			at := epoch.Add(2 * time.Minute)
			require.True(t, lends(e.jobs.byID["G"], at))
			job := func(class int) *jobRec {
				return &jobRec{gpus: 16, shapeID: 7, queue: 0, job: Job{ID: "X", Class: class, TimeLimit: time.Hour}}
			}
			s := e.quota
			s.fails.reset()
			s.fails.add(0, 16, job(tc.failed), e, at, true, false)
			got := s.fails.skip(0, 16, job(tc.asker), e) != nil
			require.Equal(t, tc.skipped, got)
		})
	}
}

// pooledQueues is the queue tree of the reclaim tests on lent pods: P
// (guarantee 32, no borrowing) over q and r (guarantees given), and z
// (guarantee 8) beside it.
func pooledQueues(q, r int) []QueueSpec {
	return []QueueSpec{
		{Name: "P", Guarantee: 32, Maximum: Unlimited, BorrowingLimit: 0, LendingLimit: Unlimited},
		{Name: "q", Parent: "P", Guarantee: q, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		{Name: "r", Parent: "P", Guarantee: r, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		{Name: "z", Guarantee: 8, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
	}
}

// growerRestoredUnder16 starts G (queue r of pooledQueues(8, 24), never
// preempted, elastic: nodes 0-2, minimum 2, growing, 10h) and the
// jobs others gives on five nodes, preemption on, and returns the engine
// restored under pooledQueues(16, 16), where r borrows 8 of q's and G
// lends its pod on node 2, with its job maker.
func growerRestoredUnder16(t *testing.T, others func(job quotaJobFn) []Job) (*Engine, quotaJobFn) {
	t.Helper()
	e0, job := quotaRig(t, 5, pooledQueues(8, 24), func(c *Config) { c.Preemption.Enabled = true })
	g := job("G", "r", 0, 3, 3, 2, preempt.Never, 10*time.Hour)
	g.Grow = true
	jobs := append([]Job{g}, others(job)...)
	for _, j := range jobs {
		require.NoError(t, e0.Submit(j, epoch))
	}
	p := startAll(t, e0, epoch)
	require.Len(t, p.Starts, len(jobs), p.Describe(e0.c, epoch))
	startAll(t, e0, epoch.Add(time.Minute))
	cfg := e0.Config()
	cfg.Quotas.Queues = pooledQueues(16, 16)
	e, err := Restore(e0.c, cfg, e0.Snapshot())
	require.NoError(t, err)
	e.checkEach = true
	return e, job
}

// quotaJobFn is quotaRig's job maker.
type quotaJobFn = func(id, queue string, lo, hi, nodes, min int, p preempt.Policy, limit time.Duration) Job

// TestReclaimQuotaFailureThenLentClass: in one cycle, X0 (class 0) and
// then X1 (class 1), of the same shape (queue q, 2 of nodes 2-4, within
// q's guarantee), reclaim. Five nodes; P (32 GPUs, no borrowing above
// it) holds q and r, and z (8) is beside it. G (queue r, class 0,
// elastic: nodes 0-2, minimum 2, growing, never preempted) started
// within r's guarantee of 24; restored under guarantees of 16 for q and
// r, it borrows 8 of q's, and lends its pod on node 2. B1 and B2 (z,
// borrowing) run on nodes 3 and 4. X0 is lent nothing: stopping B1 and
// B2 places it but frees no room under P, where G cannot be stopped, so
// its search fails for quota. X1 is lent G's pod: with it and one of
// B1 and B2 it fits, and G giving its pod back makes the room under P.
// Before the failure cache was keyed by the lending, X0's failure (no
// quota room for 16 GPUs) ruled X1's search out, and X1 waited.
func TestReclaimQuotaFailureThenLentClass(t *testing.T) {
	for _, tc := range []struct {
		name    string
		classes []int // of the jobs of X's shape, in submission order
		claims  []string
	}{
		{"class 0 fails, then class 1 claims by the lent pod", []int{0, 1}, []string{"X1"}},
		{"class 0 fails twice", []int{0, 0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, job := growerRestoredUnder16(t, func(job quotaJobFn) []Job {
				return []Job{
					job("B1", "z", 3, 4, 1, 0, preempt.Requeue, 10*time.Hour),
					job("B2", "z", 4, 5, 1, 0, preempt.Requeue, 10*time.Hour),
				}
			})

			at := epoch.Add(2 * time.Minute)
			for i, class := range tc.classes {
				x := job("X"+string(rune('0'+i)), "q", 2, 5, 2, 0, preempt.Requeue, time.Hour)
				x.Class = class
				require.NoError(t, e.Submit(x, at))
			}
			p := startAll(t, e, at)
			desc := p.Describe(e.c, epoch)
			require.Empty(t, p.Starts, desc)
			var claims []string
			for _, id := range []string{"X0", "X1"} {
				if j := e.jobs.byID[id]; j != nil && j.claim != nil {
					claims = append(claims, id)
					require.True(t, j.claim.reclaim)
				}
			}
			require.Equal(t, tc.claims, claims, desc)
			if tc.claims == nil {
				require.Empty(t, p.Preemptions, desc)
				require.Empty(t, p.PodChanges, desc)
				return
			}
			require.Len(t, p.Preemptions, 1, desc)
			require.Equal(t, "X1", p.Preemptions[0].Preemptor)
			require.Len(t, p.PodChanges, 1, desc)
			require.Equal(t, "G", p.PodChanges[0].Job)
			require.Equal(t, "X1", p.PodChanges[0].For)
			require.Equal(t, 2, e.jobs.byID["G"].alloc.Members[0].Pods)
		})
	}
}
