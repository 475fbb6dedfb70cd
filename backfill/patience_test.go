package backfill

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestPatienceKeepsMemberCap: a job whose member may span at most 2 leaves,
// with a patience of 1 spine (which a placement over 3 leaves of one spine
// meets), is placed under its own limit while it is patient. A review
// found the patience's cap replacing the member's: the job was placed on
// 3 leaves, which the ledger (checking the job's own spec) refused with a
// panic at its start, and a reservation there made the engine's own
// snapshot unrestorable.
func TestPatienceKeepsMemberCap(t *testing.T) {
	spec := topology.ClusterSpec{Levels: []string{"spine", "leaf"}}
	for s := range 2 {
		for l := range 3 {
			for n := range 3 {
				spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("s%dl%dn%d", s, l, n), GPUs: 8,
					Path: []string{fmt.Sprintf("s%d", s), fmt.Sprintf("s%dl%d", s, l)}})
			}
		}
	}
	c, err := topology.Build(spec)
	require.NoError(t, err)
	cfg := DefaultConfig()
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	// A blocker on the first node of every leaf: 2 nodes free in each.
	for l := range 6 {
		only := c.NewNodeSet()
		only.Set(uint(3 * l))
		req := placement.NodesOf(1, 8)
		req.Allowed = only
		require.NoError(t, e.Submit(Job{ID: fmt.Sprintf("b%d", l), Account: "a", TimeLimit: time.Hour, Gang: member(req)}, epoch))
	}
	p, err := e.Schedule(epoch)
	require.NoError(t, err)
	require.Len(t, p.Starts, 6)
	for _, s := range p.Starts {
		require.NoError(t, e.Started(s.Job, epoch))
	}
	req := placement.NodesOf(5, 8)
	req.MaxDomains = 2
	job := Job{ID: "p", Account: "a", TimeLimit: time.Hour, Gang: member(req),
		Patience: Patience{MaxDomains: 1, Level: "spine", Wait: 10 * time.Hour}}
	now := epoch.Add(time.Minute)
	require.NoError(t, e.Submit(job, now))
	p, err = e.Schedule(now)
	require.NoError(t, err)
	require.Empty(t, p.Starts, "5 nodes on 2 leaves of 2 free nodes each")
	_, err = Restore(c, cfg, snapshotCopy(t, e.Snapshot()))
	require.NoError(t, err, "the engine's own snapshot")

	end := epoch.Add(time.Hour)
	for l := range 6 {
		require.NoError(t, e.Finished(fmt.Sprintf("b%d", l), end))
	}
	p, err = e.Schedule(end)
	require.NoError(t, err)
	require.Len(t, p.Starts, 1)
	a := p.Starts[0].Allocation
	leaves := map[int]bool{}
	for _, x := range a.Members[0].Assignment {
		leaves[c.NodeDomain(x.Node, 1)] = true
	}
	require.LessOrEqual(t, len(leaves), 2, "leaves of %s", Hosts(c, &a))
	g := job.Gang
	g.ID = "p"
	require.NoError(t, g.CheckAllocation(c, &gang.Allocation{ID: "p", Members: a.Members}))
}
