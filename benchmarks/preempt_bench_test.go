package benchmarks

import (
	"fmt"
	"testing"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/internal/testgang"
	"github.com/phalanx-sched/phalanx/topology"
)

// BenchmarkPreempt times one victim search (gang/preempt.Searcher.Find)
// on a full cluster: the 2,000-GPU default cluster with 250 running gangs
// and the 100,000-GPU fat tree with 10,000, each built by
// internal/testgang (topology-aware placement and two rounds of churn;
// four classes, one gang in ten with policy never and one in ten inside
// its exempt time) for a class-4 preemptor of each shape of
// testgang.Preemptors. Default options (MaxWork 64). Metrics per search:
// victims, the GPU-hours they lose, the lowest-level domains they touch,
// and the trial admissions made.
//
//	go test -run '^$' -bench BenchmarkPreempt -benchmem ./benchmarks
func BenchmarkPreempt(b *testing.B) {
	for _, inv := range []struct {
		name  string
		c     *topology.Cluster
		gangs int
	}{
		{"2k", topology.Default2000(), 250},
		{"100k", topology.FatTree100k(), 10000},
	} {
		w := testgang.Build(inv.c, testgang.Config{Gangs: inv.gangs, Busy: 1, Classes: 4, Seed: 1})
		s, err := preempt.NewSearcher(inv.c, preempt.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range testgang.Preemptors(inv.c) {
			b.Run(fmt.Sprintf("inv=%s/gangs=%d/preemptor=%s", inv.name, len(w.Cands), p.Name), func(b *testing.B) {
				req := &preempt.Preemptor{Gang: p.Gang, Class: 4}
				var res preempt.Verdict
				if err := s.Find(w.Ledger.State(), req, w.Cands, &res); err != nil {
					b.Fatal(err)
				}
				if !res.Found || len(res.Victims) == 0 {
					b.Fatalf("no victims: %s", res.Reason)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := s.Find(w.Ledger.State(), req, w.Cands, &res); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(res.Victims)), "victims/op")
				b.ReportMetric(float64(res.Cost)/3600, "GPUh-lost/op")
				b.ReportMetric(float64(res.Domains), "leaves/op")
				b.ReportMetric(float64(res.Work), "admissions/op")
			})
		}
	}
}
