package gang

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestRankOrder64 is acceptance point 1 of issue 17: a 64-GPU job on
// 8-GPU nodes under one leaf has ranks 0-7 on one node and 8-15 on the
// next node of the same leaf, whether it asks for nodes or for a GPU
// total, and whatever else runs on the cluster.
func TestRankOrder64(t *testing.T) {
	c := topology.Default2000()
	leaf := c.Depth() - 1
	for _, tc := range []struct {
		name string
		req  placement.Request
	}{
		{"nodes=8x8", placement.Request{Nodes: 8, GPUsPerNode: 8, Required: "leaf"}},
		{"gpus=64", placement.Request{GPUs: 64, Required: "leaf"}},
		{"whole=8", placement.Request{Nodes: 8, Exclusive: true, Required: "leaf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger(c, Options{})
			// Something else runs first, so that the job does not start
			// on node 0.
			if res, err := l.Admit(workers("other", 3, 4)); err != nil || !res.Admitted {
				t.Fatalf("other: %v %v", res, err)
			}
			g := &Spec{ID: "job", Members: []Member{{Name: "worker", Request: tc.req}}}
			if res, err := l.Admit(g); err != nil || !res.Admitted {
				t.Fatalf("job: %v %v", res, err)
			}
			a, _ := l.Get("job")
			var pods []Pod
			for p := range a.Pods() {
				pods = append(pods, p)
			}
			if len(pods) != 8 {
				t.Fatalf("%d pods, want 8", len(pods))
			}
			d0 := c.NodeDomain(pods[0].Node, leaf)
			for i, p := range pods {
				if p.Rank != i || p.FirstGPURank != 8*i || p.NumGPUs() != 8 {
					t.Errorf("pod %d: rank %d, GPU ranks from %d, %d GPUs; want rank %d, GPU ranks %d-%d", i, p.Rank, p.FirstGPURank, p.NumGPUs(), i, 8*i, 8*i+7)
				}
				if d := c.NodeDomain(p.Node, leaf); d != d0 {
					t.Errorf("pod %d on %s, leaf %d; pod 0 on leaf %d", i, c.NodeName(p.Node), d, d0)
				}
				if i > 0 && p.Node <= pods[i-1].Node {
					t.Errorf("rank %d on %s does not follow rank %d on %s", i, c.NodeName(p.Node), i-1, c.NodeName(pods[i-1].Node))
				}
			}
			// GPU ranks 0-7 on one node, 8-15 on the next node of the leaf:
			// no free node of the leaf lies between them.
			for n := pods[0].Node + 1; n < pods[1].Node; n++ {
				if l.State().FreeCount(n) == 8 {
					t.Errorf("idle node %s lies between ranks 0 and 1", c.NodeName(n))
				}
			}
		})
	}
}

// TestPodsProperty: over many seeds, on random clusters with random
// gangs admitted and released, every pod of every allocation appears
// exactly once in Pods, with its member, a rank from 0 to Pods-1 and its
// GPUs; ranks follow node order within each member (as admitted), GPU
// ranks count the GPUs before them, and Pod(mi, rank) agrees.
func TestPodsProperty(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	clusters := []*topology.Cluster{topology.Default2000(), packCluster(rand.New(rand.NewPCG(1, 2)))}
	pods := 0
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 17))
		c := clusters[seed%len(clusters)]
		l := NewLedger(c, Options{})
		for k := range 12 {
			g := randomGang(r, c, fmt.Sprintf("g%d", k))
			res, err := l.Admit(g)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if res.Admitted {
				a, _ := l.Get(g.ID)
				pods += checkPods(t, fmt.Sprintf("seed %d gang %s", seed, g.ID), a, true)
			}
			if ids := l.IDs(); r.IntN(3) == 0 && len(ids) > 0 {
				_ = l.Release(ids[r.IntN(len(ids))])
			}
		}
		for _, id := range l.IDs() {
			a, _ := l.Get(id)
			checkPods(t, fmt.Sprintf("seed %d gang %s (end)", seed, id), a, true)
		}
	}
	if pods == 0 {
		t.Fatal("no pods checked")
	}
	t.Logf("%d pods checked", pods)
}

// checkPods checks Pods against the allocation's assignments and returns
// the number of pods; sorted asks that each member's ranks follow node
// order.
func checkPods(t *testing.T, ctx string, a *Allocation, sorted bool) int {
	t.Helper()
	type key struct {
		node topology.NodeID
		mi   int
	}
	seen := map[key]uint64{}
	next := make([]int, len(a.Members))
	gpus := make([]int, len(a.Members))
	last := make([]topology.NodeID, len(a.Members))
	n := 0
	for p := range a.Pods() {
		n++
		if p.MemberIndex < 0 || p.MemberIndex >= len(a.Members) || a.Members[p.MemberIndex].Name != p.Member {
			t.Fatalf("%s: pod %+v names no member", ctx, p)
		}
		mi := p.MemberIndex
		if p.Rank != next[mi] || p.FirstGPURank != gpus[mi] {
			t.Fatalf("%s: member %s pod %+v: want rank %d, GPU ranks from %d", ctx, p.Member, p, next[mi], gpus[mi])
		}
		if sorted && p.Rank > 0 && p.Node <= last[mi] {
			t.Fatalf("%s: member %s rank %d on node %d after node %d", ctx, p.Member, p.Rank, p.Node, last[mi])
		}
		if _, dup := seen[key{p.Node, mi}]; dup || p.GPUs == 0 {
			t.Fatalf("%s: member %s: pod on node %d listed twice or without GPUs", ctx, p.Member, p.Node)
		}
		seen[key{p.Node, mi}] = p.GPUs
		if q, ok := a.Pod(mi, p.Rank); !ok || q != p {
			t.Fatalf("%s: Pod(%d, %d) = %+v, %v; Pods gave %+v", ctx, mi, p.Rank, q, ok, p)
		}
		next[mi]++
		gpus[mi] += p.NumGPUs()
		last[mi] = p.Node
	}
	total := 0
	for mi := range a.Members {
		ma := &a.Members[mi]
		total += len(ma.Assignment)
		if next[mi] != len(ma.Assignment) {
			t.Fatalf("%s: member %s: %d pods listed, %d assigned", ctx, ma.Name, next[mi], len(ma.Assignment))
		}
		for _, x := range ma.Assignment {
			if seen[key{x.Node, mi}] != x.GPUs {
				t.Fatalf("%s: member %s: assignment on node %d not listed with its GPUs", ctx, ma.Name, x.Node)
			}
		}
		if _, ok := a.Pod(mi, len(ma.Assignment)); ok {
			t.Fatalf("%s: member %s: Pod beyond the last rank", ctx, ma.Name)
		}
	}
	if n != total || gpuSum(gpus) != a.GPUs() {
		t.Fatalf("%s: %d pods and %d GPUs listed, %d and %d allocated", ctx, n, gpuSum(gpus), total, a.GPUs())
	}
	return n
}

func gpuSum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// TestPodsZeroAllocs is the iterator half of acceptance point 5 of issue
// 17: iterating over the pods of a 150-pod allocation allocates nothing.
func TestPodsZeroAllocs(t *testing.T) {
	l := NewLedger(topology.Default2000(), Options{})
	g := &Spec{ID: "big", Members: []Member{
		{Name: "launcher", Request: placement.NodesOf(1, 1)},
		{Name: "worker", Request: placement.NodesOf(150, 8)},
	}}
	if res, err := l.Admit(g); err != nil || !res.Admitted {
		t.Fatalf("%v %v", res, err)
	}
	a, _ := l.Get("big")
	sum := 0
	n := testing.AllocsPerRun(100, func() {
		for p := range a.Pods() {
			sum += p.Rank + int(p.Node)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per iteration over the pods", n)
	}
	if sum == 0 {
		t.Error("the iteration saw no pods")
	}
}
