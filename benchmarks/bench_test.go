package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/slurm"
)

// inventory is a benchmark cluster.
type inventory struct {
	name string
	c    *topology.Cluster
	// segLevel is where segments of segSize nodes go.
	segLevel string
	segSize  int
}

var inventories = sync1(func() []inventory {
	must := func(c *topology.Cluster, err error) *topology.Cluster {
		if err != nil {
			panic(err)
		}
		return c
	}
	invs := []inventory{
		{"2k", topology.Default2000(), "leaf", 8},
		{"nvl72", topology.NVL72Default(), "block", 16},
		{"superpod16k", must(topology.FatTree(topology.FatTreeConfig{Spines: 8, LeavesPerSpine: 8, NodesPerLeaf: 32, GPUsPerNode: 8})), "leaf", 16},
		{"100k", topology.FatTree100k(), "leaf", 8},
	}
	if c, _, err := slurm.LoadConf(os.DirFS("../topology/slurm/testdata"), "alibaba_lingjun_crux_3tier.topology.conf", slurm.Options{}); err == nil {
		invs = append(invs, inventory{"alibaba847", c, "leaf", 2})
	}
	return invs
})

// sync1 computes a value once, on first use.
func sync1[T any](f func() T) func() T {
	var v T
	done := false
	return func() T {
		if !done {
			v, done = f(), true
		}
		return v
	}
}

// state is a benchmark free state.
type state struct {
	name string
	s    *topology.State
}

// states returns the empty state and seeded states 50% and 90% busy,
// fragmented by a random mix of partial-node and whole-node jobs.
func states(c *topology.Cluster) []state {
	out := []state{{"empty", topology.NewState(c)}}
	for _, busy := range []int{50, 90} {
		s := topology.NewState(c)
		testcluster.Fragment(s, rand.New(rand.NewPCG(uint64(busy), 42)), float64(busy)/100)
		out = append(out, state{fmt.Sprint(busy), s})
	}
	return out
}

// requests returns the placement requests of the suite for an inventory:
// 1, 8, 64, 512 and 1,200 GPUs (8-GPU nodes beyond one node; 4-GPU nodes
// on NVL72), then constrained variants of 64 and 512 GPUs.
func requests(inv inventory) []struct {
	name string
	req  placement.Request
} {
	g := inv.c.MaxNodeGPUs()
	nodes := func(gpus int) placement.Request {
		if gpus <= g {
			return placement.NodesOf(1, gpus)
		}
		return placement.NodesOf(gpus/g, g)
	}
	out := []struct {
		name string
		req  placement.Request
	}{}
	for _, n := range []int{1, 8, 64, 512, 1200} {
		out = append(out, struct {
			name string
			req  placement.Request
		}{fmt.Sprintf("gpus=%d", n), nodes(n)})
	}
	req64 := nodes(64)
	req64.Required = "leaf"
	pref := nodes(512)
	pref.Preferred = "spine"
	seg := nodes(512)
	seg.SegmentSize, seg.SegmentLevel = inv.segSize, inv.segLevel
	if seg.Nodes%seg.SegmentSize != 0 {
		seg.SegmentSize = 1
	}
	out = append(out,
		struct {
			name string
			req  placement.Request
		}{"gpus=64-required-leaf", req64},
		struct {
			name string
			req  placement.Request
		}{"gpus=512-preferred-spine", pref},
		struct {
			name string
			req  placement.Request
		}{fmt.Sprintf("gpus=512-segments-%d-%s", seg.SegmentSize, inv.segLevel), seg},
	)
	return out
}

// BenchmarkPlace: one placement decision per op, for every inventory,
// state and request; reports the leaves and nodes of the placement.
//
//	go test -run '^$' -bench 'BenchmarkPlace$' ./benchmarks
func BenchmarkPlace(b *testing.B) {
	for _, inv := range inventories() {
		for _, st := range states(inv.c) {
			for _, rq := range requests(inv) {
				b.Run(fmt.Sprintf("inv=%s/state=%s/%s", inv.name, st.name, rq.name), func(b *testing.B) {
					p := placement.New(inv.c, placement.Options{})
					buf := make([]topology.NodeAlloc, 0, inv.c.NumNodes())
					req := rq.req
					var res placement.Result
					var err error
					b.ReportAllocs()
					for b.Loop() {
						res, err = p.Place(st.s, &req, buf)
					}
					if err != nil {
						b.Fatal(err)
					}
					placed := 0.0
					if res.Placed {
						placed = 1
						b.ReportMetric(float64(res.Leaves(inv.c)), "leaves/op")
						b.ReportMetric(float64(res.Nodes), "nodes/op")
					}
					b.ReportMetric(placed, "placed")
				})
			}
		}
	}
}

// BenchmarkAdmitRelease admits a gang (150 x 8 GPUs, or a 3-member
// heterogeneous gang) on an empty state and releases it: one of each per op.
//
//	go test -run '^$' -bench BenchmarkAdmitRelease ./benchmarks
func BenchmarkAdmitRelease(b *testing.B) {
	gangs := []struct {
		name string
		g    gang.Spec
	}{
		{"gang=1200gpus", gang.Spec{ID: "g", Members: []gang.Member{{Name: "w", Request: placement.NodesOf(150, 8)}}}},
		{"gang=het3", gang.Spec{ID: "g", Members: []gang.Member{
			{Name: "launcher", Request: placement.NodesOf(1, 1)},
			{Name: "workers", Request: placement.Request{Nodes: 16, GPUsPerNode: 8, Required: "leaf"}},
			{Name: "ps", Request: placement.NodesOf(4, 4)},
		}}},
	}
	for _, inv := range inventories() {
		if inv.c.MaxNodeGPUs() != 8 {
			continue
		}
		for _, g := range gangs {
			b.Run(fmt.Sprintf("inv=%s/%s", inv.name, g.name), func(b *testing.B) {
				l := gang.NewLedger(inv.c, gang.Options{})
				spec := g.g
				if res, _ := l.Admit(&spec); !res.Admitted {
					b.Skipf("does not fit: %s", res)
				}
				_ = l.Release(spec.ID)
				b.ReportAllocs()
				for b.Loop() {
					if res, _ := l.Admit(&spec); !res.Admitted {
						b.Fatal(res)
					}
					_ = l.Release(spec.ID)
				}
			})
		}
	}
}

// BenchmarkStateCopy copies a fragmented state into another: the what-if
// copy the scheduler makes.
//
//	go test -run '^$' -bench BenchmarkStateCopy ./benchmarks
func BenchmarkStateCopy(b *testing.B) {
	for _, inv := range inventories() {
		st := states(inv.c)[2]
		dst := topology.NewState(inv.c)
		b.Run("inv="+inv.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = st.s.CopyInto(dst)
			}
		})
	}
}

// BenchmarkFairShare recomputes priorities for pending jobs after a usage
// change: 1,000 users in 100 accounts.
//
//	go test -run '^$' -bench BenchmarkFairShare ./benchmarks
func BenchmarkFairShare(b *testing.B) {
	cfg := fairshare.DefaultConfig()
	tree, err := fairshare.NewTree(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for a := range 100 {
		acct := fmt.Sprintf("acct%03d", a)
		_ = tree.AddAccount(fairshare.RootName, acct, 1)
		for u := range 10 {
			_ = tree.AddAccount(acct, fmt.Sprintf("user%04d", a*10+u), 1)
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(1, 1))
	now := t0 // shared: the tree's time only moves forward
	for _, n := range []int{1000, 10000} {
		jobs := make([]fairshare.QueuedJob, n)
		for i := range jobs {
			jobs[i] = fairshare.QueuedJob{ID: fmt.Sprint(i), Account: fmt.Sprintf("user%04d", r.IntN(1000)),
				Submit: t0.Add(-time.Duration(r.IntN(86400)) * time.Second), GPUs: 1 + r.IntN(64)}
		}
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			var snap *fairshare.View
			var out []fairshare.Ranked
			var err error
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Second)
				if err = tree.Charge(jobs[0].Account, 100, now); err != nil {
					b.Fatal(err)
				}
				if snap, err = tree.View(now, snap); err != nil {
					b.Fatal(err)
				}
				if out, err = snap.Prioritize(jobs, out[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScaling sweeps fat trees from 250 to 12,500 nodes (8 GPUs per
// node, 25 nodes per leaf, 10 leaves per spine) for the main operations on
// a 50% fragmented state, to show how each grows with the cluster.
//
//	go test -run '^$' -bench BenchmarkScaling ./benchmarks
func BenchmarkScaling(b *testing.B) {
	for _, nodes := range []int{250, 1000, 2500, 5000, 12500} {
		leaves := nodes / 25
		spines := max(1, leaves/10)
		c, err := topology.FatTree(topology.FatTreeConfig{Spines: spines, LeavesPerSpine: leaves / spines, NodesPerLeaf: 25, GPUsPerNode: 8})
		if err != nil {
			b.Fatal(err)
		}
		s := topology.NewState(c)
		testcluster.Fragment(s, rand.New(rand.NewPCG(50, 42)), 0.5)
		p := placement.New(c, placement.Options{})
		buf := make([]topology.NodeAlloc, 0, c.NumNodes())
		for _, rq := range []struct {
			name string
			req  placement.Request
		}{{"place-8gpus", placement.NodesOf(1, 8)}, {"place-64gpus", placement.NodesOf(8, 8)}, {"place-512gpus", placement.NodesOf(64, 8)}} {
			b.Run(fmt.Sprintf("op=%s/nodes=%d", rq.name, nodes), func(b *testing.B) {
				req := rq.req
				b.ReportAllocs()
				for b.Loop() {
					_, _ = p.Place(s, &req, buf)
				}
			})
		}
		dst := topology.NewState(c)
		b.Run(fmt.Sprintf("op=state-copy/nodes=%d", nodes), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.CopyInto(dst)
			}
		})
		b.Run(fmt.Sprintf("op=admit-release-64x8/nodes=%d", nodes), func(b *testing.B) {
			l := gang.NewLedger(c, gang.Options{})
			g := gang.Spec{ID: "g", Members: []gang.Member{{Name: "w", Request: placement.NodesOf(64, 8)}}}
			b.ReportAllocs()
			for b.Loop() {
				if res, _ := l.Admit(&g); !res.Admitted {
					b.Fatal(res)
				}
				_ = l.Release("g")
			}
		})
		b.Run(fmt.Sprintf("op=schedule-1000pending/nodes=%d", nodes), func(b *testing.B) {
			w := newWorkload(c, 16, false, 11)
			e, now := w.engine(b, 0.9, 1000)
			plan := &backfill.Plan{}
			_ = e.ScheduleInto(now, plan)
			b.ReportAllocs()
			for b.Loop() {
				_ = e.ScheduleInto(now, plan)
			}
		})
	}
}
