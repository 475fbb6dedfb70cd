package backfill

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// busyEngine returns an engine on c with seeded running jobs holding about
// busy of the GPUs (time limits 1 to 8 hours) and pending seeded jobs.
func busyEngine(tb testing.TB, c *topology.Cluster, depth int, busy float64, pending int, seed uint64) (*Engine, time.Time) {
	r := rand.New(rand.NewPCG(seed, 7))
	cfg := DefaultConfig()
	cfg.ReservationDepth = depth
	accounts := make([]string, 100)
	for i := range accounts {
		accounts[i] = fmt.Sprintf("acct%02d", i)
	}
	e, err := New(c, cfg, flatTree(tb, cfg.FairShare, accounts...))
	if err != nil {
		tb.Fatal(err)
	}
	job := func(id string, at time.Time) Job {
		var req placement.Request
		switch k := r.IntN(10); {
		case k < 5:
			req = placement.NodesOf(1, 1+r.IntN(8))
		case k < 8:
			req = placement.NodesOf(1+r.IntN(8), 8)
		default:
			req = placement.NodesOf(8+r.IntN(64), 8)
		}
		return Job{ID: id, Account: accounts[r.IntN(len(accounts))], Submit: at,
			TimeLimit: time.Duration(1+r.IntN(8)) * time.Hour, Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}}
	}
	now := epoch
	for i := 0; float64(e.UsedGPUs()) < busy*float64(c.TotalGPUs()) && i < 100000; i++ {
		if err := e.Submit(job(fmt.Sprintf("run%06d", i), now), now); err != nil {
			continue
		}
		if _, err := e.Schedule(now); err != nil {
			tb.Fatal(err)
		}
		// Drop what did not start: the fill only wants running jobs.
		for _, j := range append([]*jobRec(nil), e.jobs.pending...) {
			if err := e.Cancel(j.job.ID, now); err != nil {
				tb.Fatal(err)
			}
		}
	}
	now = now.Add(time.Minute)
	for i := range pending {
		if err := e.Submit(job(fmt.Sprintf("pend%06d", i), now.Add(-time.Duration(r.IntN(3600))*time.Second)), now); err != nil {
			tb.Fatal(err)
		}
	}
	return e, now
}

// BenchmarkSchedule measures one steady-state scheduling cycle: running
// jobs hold about 90% of the GPUs, the pending jobs mostly do not fit, the
// reservations made by a first cycle are kept (and re-checked) by each
// measured one.
//
//	go test -run '^$' -bench BenchmarkSchedule ./backfill
func BenchmarkSchedule(b *testing.B) {
	type tc struct {
		inv     string
		c       func() *topology.Cluster
		pending int
		depth   int
	}
	var cases []tc
	for _, p := range []int{100, 1000, 10000} {
		for _, d := range []int{1, 16} {
			cases = append(cases, tc{"2k", topology.Default2000, p, d})
		}
	}
	cases = append(cases, tc{"2k", topology.Default2000, 1000, Conservative})
	cases = append(cases, tc{"100k", topology.FatTree100k, 10000, 16})
	for _, k := range cases {
		depth := fmt.Sprint(k.depth)
		if k.depth == Conservative {
			depth = "all"
		}
		b.Run(fmt.Sprintf("inv=%s/state=90/pending=%d/depth=%s", k.inv, k.pending, depth), func(b *testing.B) {
			e, now := busyEngine(b, k.c(), k.depth, 0.9, k.pending, 1)
			p, err := e.Schedule(now)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if p, err = e.Schedule(now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(p.Reservations)), "reservations")
			b.ReportMetric(float64(e.Running()), "running")
			b.ReportMetric(float64(p.Tested), "tested/op")
		})
	}
}

// BenchmarkPlanResize measures the engine's planning of one resize of a
// running elastic job on the 2,000-GPU cluster, about 70% busy with
// seeded jobs, 100 pending and the reservations of a first cycle: a grow
// by pods=k (growJob: the nodes promised to reservations overlapping the
// job's run, the new pods next to its last pod, the GPU owners, the pod
// change) and a shrink by k pods (releasePods: the pods as they were, the
// ledger). Acceptance point 5 of issue 17 asks for 10 µs or less.
//
//	go test -run '^$' -bench BenchmarkPlanResize -benchtime 20000x ./backfill
func BenchmarkPlanResize(b *testing.B) {
	for _, k := range []int{1, 8} {
		for _, op := range []string{"grow", "shrink"} {
			b.Run(fmt.Sprintf("inv=2k/state=70/op=%s/pods=%d", op, k), func(b *testing.B) {
				e, now := busyEngine(b, topology.Default2000(), 16, 0.7, 100, 1)
				// Submitted a day ago: first in priority order.
				job := Job{ID: "elastic", Account: "acct00", Submit: now.Add(-24 * time.Hour), TimeLimit: 4 * time.Hour, Grow: true,
					Gang: gang.Spec{Members: []gang.Member{{Name: "w", Request: placement.NodesOf(64, 4), Min: 8}}}}
				if err := e.Submit(job, now); err != nil {
					b.Fatal(err)
				}
				plan, err := e.Schedule(now)
				if err != nil {
					b.Fatal(err)
				}
				j := e.jobs.byID["elastic"]
				if !j.phase.Active() || j.alloc.Members[0].Pods < 8+k {
					b.Fatalf("the elastic job is %s with %d pods, too small to shrink by %d", j.phase, j.alloc.Members[0].Pods, k)
				}
				ranks := make([]int, k)
				var pc PodChange
				shrink := func() {
					ma := &j.alloc.Members[0]
					for i := range ranks {
						ranks[i] = ma.Pods - 1 - i
					}
					pc.Pods = pc.Pods[:0]
					e.jobs.setOwner(j.alloc, nil)
					e.releasePods(j, 0, ranks, &pc)
					e.jobs.setOwner(j.alloc, j)
					j.used = j.alloc.GPUs()
				}
				grow := func() {
					plan.PodChanges = plan.PodChanges[:0]
					e.growJob(j, now, plan, -1)
				}
				b.ReportAllocs()
				for b.Loop() {
					if op == "grow" {
						b.StopTimer()
						shrink()
						b.StartTimer()
						grow()
					} else {
						shrink()
						b.StopTimer()
						grow()
						b.StartTimer()
					}
				}
				if err := e.check(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(e.book.resv)), "reservations")
				b.ReportMetric(float64(j.alloc.Members[0].Pods), "member-pods")
			})
		}
	}
}
