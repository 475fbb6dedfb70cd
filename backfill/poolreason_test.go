package backfill

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestPoolReasonsNameThePool: a queue's pool cuts its jobs' Allowed sets,
// and the nodes it leaves out are named as the pool's in every reason, not
// as "outside Allowed" (which a user who gave no Allowed would not
// understand). A member whose own nodes the pool cuts further is named by
// both, in its own words when it gave some (AllowedLabel). A snapshot
// keeps each member's own nodes and words, so that a restore without the
// pool names them alone.
func TestPoolReasonsNameThePool(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	require.NoError(t, err)
	names := func(ids ...int) string {
		var s []string
		for _, id := range ids {
			s = append(s, c.NodeName(topology.NodeID(id)))
		}
		return strings.Join(s, ",")
	}
	config := func(pool string) Config {
		cfg := DefaultConfig()
		cfg.ReservationDepth = 0 // every waiting job says why it cannot start now
		cfg.Quotas = QuotaConfig{Queues: []QueueSpec{{Name: "q", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Nodes: pool}}}
		return cfg
	}
	cfg := config(names(2, 3)) // the second leaf
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	job := func(id string, nodes int, allowed []int, label string) Job {
		req := placement.NodesOf(nodes, 8)
		if allowed != nil {
			req.Allowed = c.NewNodeSet()
			for _, n := range allowed {
				req.Allowed.Set(uint(n))
			}
		}
		req.AllowedLabel = label
		return Job{ID: id, Account: "a", Queue: "q", TimeLimit: time.Hour, Gang: member(req)}
	}
	require.NoError(t, e.Submit(job("r", 2, nil, ""), epoch))
	startAll(t, e, epoch)
	for _, j := range []Job{
		job("none", 1, nil, ""), // the pool alone
		job("wider", 1, []int{0, 1, 2, 3}, "rejected by affinity"), // holds the pool: the pool alone
		job("own", 1, []int{0, 2}, ""),                             // cut by the pool
		job("named", 1, []int{2}, "rejected by affinity"),          // cut, in its own words
	} {
		require.NoError(t, e.Submit(j, epoch))
	}
	want := map[string]string{
		"none":  "(4 nodes left out: 2 outside queue q's pool, 2 short of free GPUs)",
		"wider": "(4 nodes left out: 2 outside queue q's pool, 2 short of free GPUs)",
		"own":   "(4 nodes left out: 3 outside Allowed or outside queue q's pool, 1 short of free GPUs)",
		"named": "(4 nodes left out: 3 rejected by affinity or outside queue q's pool, 1 short of free GPUs)",
	}
	check := func(e *Engine, at time.Time, want map[string]string) {
		t.Helper()
		p, err := e.Schedule(at)
		require.NoError(t, err)
		require.Len(t, p.Waiting, len(want))
		for _, w := range p.Waiting {
			msg := w.Message(epoch)
			if !strings.Contains(msg, want[w.Job]) || strings.Contains(msg, "outside Allowed,") {
				t.Errorf("job %s: %q; want it to contain %q", w.Job, msg, want[w.Job])
			}
		}
	}
	check(e, epoch.Add(time.Minute), want)

	// JobSpec gives the nodes with the pool applied, and the words that
	// name them, and a job submitted again from it is named as the first.
	spec, _ := e.JobSpec("named")
	require.Equal(t, "rejected by affinity or outside queue q's pool", spec.Gang.Members[0].Request.AllowedLabel)
	spec, _ = e.JobSpec("own")
	spec.ID, spec.Gang.ID = "own-again", ""
	require.NoError(t, e.Submit(spec, epoch.Add(time.Minute)))
	want["own-again"] = want["own"]
	check(e, epoch.Add(90*time.Second), want)
	require.NoError(t, e.Cancel("own-again", epoch.Add(90*time.Second)))
	delete(want, "own-again")

	snap := snapshotCopy(t, e.Snapshot())
	for _, jr := range snap.Jobs {
		r := jr.Gang.Members[0].Request
		wantLabel := map[string]string{"wider": "rejected by affinity", "named": "rejected by affinity",
			"own-again": "outside Allowed or outside queue q's pool"}[jr.ID] // as submitted from JobSpec
		require.Equal(t, wantLabel, r.AllowedLabel, "job %s's recorded label is not its own", jr.ID)
	}
	r, err := Restore(c, cfg, snapshotCopy(t, snap))
	require.NoError(t, err)
	r.checkEach = true
	check(r, epoch.Add(2*time.Minute), want)

	// Without the pool each member's own nodes and words are left.
	noPool := config("")
	r, err = Restore(c, noPool, snapshotCopy(t, snap))
	require.NoError(t, err)
	r.checkEach = true
	p, err := r.Schedule(epoch.Add(3 * time.Minute))
	require.NoError(t, err)
	require.Len(t, p.Starts, 2, "the first leaf's two nodes take two jobs")
	free := map[string]string{
		"none":  "(4 nodes left out: 4 short of free GPUs)",
		"wider": "(4 nodes left out: 4 short of free GPUs)",
		"own":   "(4 nodes left out: 2 outside Allowed, 2 short of free GPUs)",
		"named": "(4 nodes left out: 3 rejected by affinity, 1 short of free GPUs)",
	}
	for _, w := range p.Waiting {
		if msg := w.Message(epoch); !strings.Contains(msg, free[w.Job]) {
			t.Errorf("without the pool, job %s: %q; want it to contain %q", w.Job, msg, free[w.Job])
		}
	}
}

// TestInheritedPoolReasons: a pool a queue inherits is named after the
// queues whose Nodes make it, not after the job's own queue.
func TestInheritedPoolReasons(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	require.NoError(t, err)
	q := func(name, parent, nodes string) QueueSpec {
		return QueueSpec{Name: name, Parent: parent, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Nodes: nodes}
	}
	cfg := DefaultConfig()
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		q("team", "", c.NodeName(2)+","+c.NodeName(3)),
		q("alice", "team", ""),
		q("bob", "team", c.NodeName(2)),
	}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	for _, tc := range []struct{ queue, want string }{
		{"alice", "(2 nodes left out: 2 outside queue team's pool)"},
		{"bob", "(3 nodes left out: 3 outside the pool of queue team or of queue bob)"},
	} {
		err := e.Submit(Job{ID: "big-" + tc.queue, Account: "a", Queue: tc.queue, Gang: member(placement.NodesOf(3, 8))}, epoch)
		if !errors.Is(err, ErrNeverFits) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("3 nodes in queue %s: %v; want it to contain %q", tc.queue, err, tc.want)
		}
	}
}
