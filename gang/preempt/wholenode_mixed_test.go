package preempt_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestWholeNodePreemptorOnSmallNodes: two 8-GPU nodes (n0, n1) and two
// 4-GPU nodes (n2, n3), each held by its own lower-class gang. A
// preemptor with whole-node pods fits once the small nodes are freed,
// and their gangs cost less: the search takes them, with and without
// its exact stage (podShape counts a whole-node lead member's pods at the
// cluster's largest node; its pods are still matched to any idle node,
// and the bound it feeds stays a necessary condition).
func TestWholeNodePreemptorOnSmallNodes(t *testing.T) {
	tests := []struct {
		name    string
		members func(c *topology.Cluster) []gang.Member
		exact   int // Options.ExactCandidates
		want    []string
	}{
		{name: "two whole nodes", members: func(c *topology.Cluster) []gang.Member {
			return []gang.Member{{Name: "m", Request: placement.WholeNodes(2)}}
		}, exact: preempt.DefaultOptions().ExactCandidates, want: []string{"v2", "v3"}},
		{name: "two whole nodes, no exact search", members: func(c *topology.Cluster) []gang.Member {
			return []gang.Member{{Name: "m", Request: placement.WholeNodes(2)}}
		}, want: []string{"v2", "v3"}},
		{name: "whole small nodes beside a GPU member", members: func(c *topology.Cluster) []gang.Member {
			small, _ := c.NodeSet("n2", "n3")
			r := placement.WholeNodes(2)
			r.Allowed = small
			return []gang.Member{{Name: "w", Request: r}, {Name: "g", Request: placement.NodesOf(1, 4)}}
		}, exact: preempt.DefaultOptions().ExactCandidates, want: []string{"v1", "v2", "v3"}},
		{name: "whole small nodes beside a GPU member, no exact search", members: func(c *topology.Cluster) []gang.Member {
			small, _ := c.NodeSet("n2", "n3")
			r := placement.WholeNodes(2)
			r.Allowed = small
			return []gang.Member{{Name: "w", Request: r}, {Name: "g", Request: placement.NodesOf(1, 4)}}
		}, want: []string{"v1", "v2", "v3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := topology.ClusterSpec{Levels: []string{"leaf"}}
			for i, g := range []int{8, 8, 4, 4} {
				spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: g, Path: []string{fmt.Sprintf("l%d", i/2)}})
			}
			c, err := topology.Build(spec)
			if err != nil {
				t.Fatal(err)
			}
			l := gang.NewLedger(c, gang.Options{})
			var cands []preempt.Candidate
			for i, g := range []int{8, 8, 4, 4} {
				on, _ := c.NodeSet(fmt.Sprintf("n%d", i))
				id := fmt.Sprintf("v%d", i)
				if res, err := l.Admit(&gang.Spec{ID: id, Members: []gang.Member{{Name: "w", Request: placement.Request{Nodes: 1, GPUsPerNode: g, Allowed: on}}}}); err != nil || !res.Admitted {
					t.Fatal(err, res)
				}
				a, _ := l.Get(id)
				// Cost per GPU alike (a small node's gang costs half), v0's
				// a little more than v1's.
				cost := int64(g) * 100
				if i == 0 {
					cost++
				}
				cands = append(cands, preempt.Candidate{ID: id, Alloc: a, Policy: preempt.Requeue, Cost: cost})
			}
			opt := preempt.DefaultOptions()
			opt.ExactCandidates = tt.exact
			s, err := preempt.NewSearcher(c, opt)
			if err != nil {
				t.Fatal(err)
			}
			var v preempt.Verdict
			req := &preempt.Preemptor{Class: 1, Gang: &gang.Spec{ID: "hi", Members: tt.members(c)}}
			if err := s.Find(l.State(), req, cands, &v); err != nil {
				t.Fatal(err)
			}
			ids := slices.Clone(v.IDs)
			slices.Sort(ids)
			if !v.Found || !slices.Equal(ids, tt.want) {
				t.Fatalf("found %v, victims %v: %s; want %v", v.Found, ids, v.Reason, tt.want)
			}
		})
	}
}
