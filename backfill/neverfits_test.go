package backfill

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestSubmitNeverFitsOnlyWhenProven: Submit refuses a gang with
// ErrNeverFits only when no packing of it exists on the empty cluster.
// The cluster (found by gang's TestProvenFailure): spine s0 with two
// 8-GPU nodes on one leaf and a 4-GPU node on another, spine s1 with a
// 4-GPU and an 8-GPU node. The gang of GPU totals fits it (m2 on n01
// alone, m0 on spine s1, m1 on n00 and two GPUs of n02), but the
// admitter's greedy pass and search, which take the placer's one answer
// for such members, miss it: Submit refused it forever ("never fits"),
// and a Kubernetes adapter marked its pods unschedulable for good. Gangs
// that truly cannot fit are still refused.
func TestSubmitNeverFitsOnlyWhenProven(t *testing.T) {
	c := spineLeafCluster(t, []spineLeafNode{{8, "s0", "l0"}, {8, "s0", "l0"}, {4, "s0", "l1"}, {4, "s1", "l2"}, {8, "s1", "l3"}})
	gpus := func(g int, excl bool, required string, limit int) placement.Request {
		return placement.Request{GPUs: g, Exclusive: excl, Required: required, MaxDomains: limit, MaxDomainsLevel: "spine"}
	}
	nodes := func(n, g int, required string) placement.Request {
		return placement.Request{Nodes: n, GPUsPerNode: g, Required: required}
	}
	members := gangOfRequests
	checkSubmitVerdicts(t, c, []submitVerdict{
		{"GPU totals that fit but the admitter misses", members(gpus(12, false, "", 1), gpus(10, false, "spine", 0), gpus(6, true, "", 1)), nil, ""},
		{"node counts that cannot share the 8-GPU nodes", members(nodes(2, 8, "spine"), nodes(2, 8, "")), ErrNeverFits, "needs 2 nodes with 8 free GPUs"},
		{"a GPU total no spine holds", members(gpus(21, false, "spine", 0), nodes(1, 4, "")), ErrNeverFits, "the best spine has 20"},
	})
}

// spineLeafNode is one node of spineLeafCluster: its GPUs, spine and leaf.
type spineLeafNode struct {
	gpus        int
	spine, leaf string
}

// spineLeafCluster builds a two-level cluster (spine, leaf) of the nodes
// given, named n00, n01, ... in order.
func spineLeafCluster(t *testing.T, nodes []spineLeafNode) *topology.Cluster {
	t.Helper()
	spec := topology.ClusterSpec{Levels: []string{"spine", "leaf"}}
	for i, n := range nodes {
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: fmt.Sprintf("n%02d", i), GPUs: n.gpus, Path: []string{n.spine, n.leaf}})
	}
	c, err := topology.Build(spec)
	require.NoError(t, err)
	return c
}

// gangOfRequests is a gang of one member per request, named m0, m1, ...
func gangOfRequests(reqs ...placement.Request) gang.Spec {
	var g gang.Spec
	for i, r := range reqs {
		g.Members = append(g.Members, gang.Member{Name: fmt.Sprintf("m%d", i), Request: r})
	}
	return g
}

// submitVerdict is one case of checkSubmitVerdicts: a gang, the error
// Submit must return (nil: accepted) and text that error must contain.
type submitVerdict struct {
	name string
	gang gang.Spec
	want error
	msg  string
}

// checkSubmitVerdicts submits each case's gang (an hour's limit, account
// a) to one default engine on c at epoch and checks Submit's verdict.
func checkSubmitVerdicts(t *testing.T, c *topology.Cluster, tests []submitVerdict) {
	t.Helper()
	cfg := DefaultConfig()
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := Job{ID: fmt.Sprintf("j%d", i), Account: "a", TimeLimit: time.Hour, Gang: tt.gang}
			err := e.Submit(j, epoch)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Submit = %v; want %v mentioning %q", err, tt.want, tt.msg)
			}
		})
	}
}
