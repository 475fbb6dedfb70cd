package backfill

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// lendingScene builds the lending scene several tests share: on
// preemptOps' cluster (reservation depth given), v (class 0, requeued
// when preempted) runs pinned to nodes 0-1 and g (elastic: 6 nodes,
// minimum 2, growing, requeued, of class gClass) runs on nodes 2-7; one
// more cycle a minute later makes g lend its 4 pods above its minimum.
func lendingScene(t *testing.T, depth, gClass int) (*topology.Cluster, *Engine) {
	t.Helper()
	c, e := preemptOps(t, depth, 0)
	v := pinnedJob(c, "v", 0, 2, 10*time.Hour)
	v.Preemption = preempt.Requeue
	require.NoError(t, e.Submit(v, epoch))
	require.Len(t, startAll(t, e, epoch).Starts, 1)
	g := Job{ID: "g", Account: "a", TimeLimit: 10 * time.Hour, Grow: true, Class: gClass, Preemption: preempt.Requeue,
		Gang: gang.Spec{Members: []gang.Member{{Name: "m", Min: 2, Request: placement.NodesOf(6, 8)}}}}
	require.NoError(t, e.Submit(g, epoch))
	require.Len(t, startAll(t, e, epoch).Starts, 1)
	startAll(t, e, epoch.Add(time.Minute)) // g lends from the cycle after its start
	return c, e
}

// TestPreemptorCombinesLentPodsWithVictims: v (class 0, 2 nodes pinned
// to nodes 0-1) runs, and g (class 0, elastic: 6 nodes, minimum 2,
// growing) runs on nodes 2-7, lending its 4 pods above its minimum. u
// (class 1, 6 nodes, 30m) does not fit the free GPUs nor the lent pods
// alone. The doc (Node failures and elastic gangs): "a preemptor takes
// lent pods rather than stop a gang". Before the fix the victim search
// counted the lent pods as taken and stopped g whole (16 GPU-hours
// lost) where v and g's lent pods do (5.3 GPU-hours): the search now
// counts them free, the claim takes them from g (PodsRemoved For u),
// and u starts on them and v's nodes once v is released, g kept at its
// minimum. A lender of u's class lends it nothing, and is no victim: u
// waits.
func TestPreemptorCombinesLentPodsWithVictims(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gClass   int
		victims  []string
		removed  int // pods removed from g for u
		gPodsEnd int // g's pods once u started (0: u does not start)
	}{
		{"lender below the preemptor: v and the lent pods", 0, []string{"v"}, 4, 2},
		{"lender of the preemptor's class: no preemption", 1, nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := lendingScene(t, 4, tc.gClass)

			at := epoch.Add(20 * time.Minute)
			u := Job{ID: "u", Account: "a", TimeLimit: 30 * time.Minute, Class: 1, Gang: member(placement.NodesOf(6, 8))}
			require.NoError(t, e.Submit(u, at))
			p := startAll(t, e, at)
			require.Empty(t, p.Starts, p.Describe(c, epoch))
			var victims []string
			for _, pr := range p.Preemptions {
				require.Equal(t, "u", pr.Preemptor)
				victims = append(victims, pr.Victim)
			}
			require.Equal(t, tc.victims, victims, p.Describe(c, epoch))
			removed := 0
			for _, pc := range p.PodChanges {
				require.Equal(t, "g", pc.Job)
				require.Equal(t, PodsRemoved, pc.Kind)
				require.Equal(t, "u", pc.For)
				removed += len(pc.Pods)
			}
			require.Equal(t, tc.removed, removed, p.Describe(c, epoch))
			if tc.gPodsEnd == 0 {
				st, _ := e.Job("g")
				require.Equal(t, StateRunning, st.State)
				return
			}

			at = at.Add(3 * time.Minute)
			require.NoError(t, e.Preempted("v", at))
			p = startAll(t, e, at)
			require.Len(t, p.Starts, 1, p.Describe(c, epoch))
			require.Equal(t, "u", p.Starts[0].Job)
			var nodes []int
			forEntries(&p.Starts[0].Allocation, func(x topology.NodeAlloc) { nodes = append(nodes, int(x.Node)) })
			sort.Ints(nodes)
			require.Equal(t, []int{0, 1, 4, 5, 6, 7}, nodes, "u takes v's nodes and g's lent ones")
			gr := e.jobs.byID["g"]
			require.Equal(t, StateRunning, gr.phase)
			require.Equal(t, tc.gPodsEnd, gr.alloc.Members[0].Pods)
		})
	}
}
