package backfill

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestPreemptionAllocates: a cycle in which a waiting job looks for victims
// (and finds none it may stop) allocates no more than the same cycle with
// preemption off: the victim search and its candidates reuse the engine's
// buffers.
func TestPreemptionAllocates(t *testing.T) {
	var allocs [2]float64
	for k, on := range []bool{false, true} {
		c := opsCluster(t)
		cfg := DefaultConfig()
		cfg.Hold.Enabled = false
		cfg.Preemption.Enabled = on
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.NumNodes() {
			// Protected: the search fails the same way every cycle.
			if err := e.Submit(Job{ID: fmt.Sprintf("run%d", i), Account: "a", Gang: member(placement.NodesOf(1, 8))}, epoch); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Schedule(epoch); err != nil {
			t.Fatal(err)
		}
		for i := range c.NumNodes() {
			if err := e.Started(fmt.Sprintf("run%d", i), epoch); err != nil {
				t.Fatal(err)
			}
		}
		urgent := Job{ID: "urgent", Account: "a", Class: 1, Gang: member(placement.NodesOf(4, 8))}
		if err := e.Submit(urgent, epoch); err != nil {
			t.Fatal(err)
		}
		plan := &Plan{}
		now := epoch.Add(time.Hour)
		if err := e.ScheduleInto(now, plan); err != nil {
			t.Fatal(err)
		}
		if w := plan.Waiting[0]; w.PreemptTried != on || on && w.Preempt.Code != preempt.NotPreemptible {
			t.Fatalf("preemption %v: %+v", on, w)
		}
		allocs[k] = testing.AllocsPerRun(20, func() {
			if err := e.ScheduleInto(now, plan); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("allocations per cycle: %v without preemption, %v with a victim search", allocs[0], allocs[1])
	if allocs[1] > allocs[0] {
		t.Errorf("a cycle with a victim search allocates %v times, %v without", allocs[1], allocs[0])
	}
}

// preemptBusyEngine returns an engine on c whose GPUs are all held by
// started class-0 gangs of 1 to 16 nodes (no time limits, preemptible but
// inside an exempt time of a year), with pending class-1 gangs of 2 to
// 32 nodes: each cycle's victim searches fail the same way. With
// distinct, each gang's time limit is a minute shorter than the one
// before it (from pending+60 minutes), so that no failed search answers
// another's.
func preemptBusyEngine(tb testing.TB, c *topology.Cluster, pending int, on, distinct bool) (*Engine, time.Time) {
	r := rand.New(rand.NewPCG(3, 3))
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Preemption = PreemptionConfig{Enabled: on, ExemptTime: 365 * 24 * time.Hour, Grace: 5 * time.Minute, MaxSearches: 16}
	e, err := New(c, cfg, flatTree(tb, cfg.FairShare, "a"))
	if err != nil {
		tb.Fatal(err)
	}
	now := epoch
	for i := 0; e.UsedGPUs() < c.TotalGPUs() && i < 100000; i++ {
		nodes := min([]int{1, 2, 4, 8, 16}[r.IntN(5)], (c.TotalGPUs()-e.UsedGPUs())/c.MaxNodeGPUs())
		j := Job{ID: fmt.Sprintf("run%05d", i), Account: "a", Preemption: preempt.Requeue, Gang: member(placement.NodesOf(max(nodes, 1), c.MaxNodeGPUs()))}
		if err := e.Submit(j, now); err != nil {
			tb.Fatal(err)
		}
		p := scheduleStarted(tb, e, now)
		if len(p.Starts) == 0 {
			if err := e.Cancel(j.ID, now); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for i := range pending {
		j := Job{ID: fmt.Sprintf("urgent%05d", i), Account: "a", Class: 1,
			Gang: member(placement.Request{Nodes: 2 << r.IntN(5), GPUsPerNode: c.MaxNodeGPUs(), Required: "spine"})}
		if distinct {
			j.TimeLimit = time.Duration(pending+60-i) * time.Minute
		}
		if err := e.Submit(j, now); err != nil {
			tb.Fatal(err)
		}
	}
	return e, now.Add(time.Hour)
}

// BenchmarkSchedulePreempt measures a cycle on a full cluster in which
// waiting class-1 gangs (100 or 1,000) look for victims among the running
// class-0 gangs and find only exempt ones (so every cycle is the same):
// the cost of preemption when it does not help, next to the same cycle
// with preemption off. The gangs have five shapes: a failed search
// answers the later ones of its shape (mayPreempt), so that about five
// search. With distinct=true each gang's time limit is shorter than
// those before it, so that no failed search answers another and 16 (the
// budget, MaxSearches) search: the cost of the searches themselves.
// searched/op counts the victim searches run; tried/op the waiting jobs
// told why preemption did not help.
//
//	go test -run '^$' -bench BenchmarkSchedulePreempt ./backfill
func BenchmarkSchedulePreempt(b *testing.B) {
	for _, pending := range []int{100, 1000} {
		for _, on := range []bool{false, true} {
			for _, distinct := range []bool{false, true} {
				if distinct && !on {
					continue
				}
				b.Run(fmt.Sprintf("inv=2k/pending=%d/preempt=%v/distinct=%v", pending, on, distinct), func(b *testing.B) { schedulePreempt(b, pending, on, distinct) })
			}
		}
	}
}

func schedulePreempt(b *testing.B, pending int, on, distinct bool) {
	e, now := preemptBusyEngine(b, topology.Default2000(), pending, on, distinct)
	plan := &Plan{}
	if err := e.ScheduleInto(now, plan); err != nil {
		b.Fatal(err)
	}
	tried := 0
	for _, w := range plan.Waiting {
		if w.PreemptTried {
			tried++
		}
	}
	if on != (tried > 0) {
		b.Fatalf("preemption %v, %d jobs told why it did not help", on, tried)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.ScheduleInto(now, plan); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tried), "tried/op")
	b.ReportMetric(float64(e.cyc.searches), "searched/op")
	b.ReportMetric(float64(e.Running()), "running")
}
