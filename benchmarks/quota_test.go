package benchmarks

import (
	"fmt"
	"testing"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/topology"
)

// quotaSetups are the queue trees of BenchmarkScheduleQuotas, for a
// cluster c: none; one queue without limits (the cost of the
// checks alone: no job ever waits for quota); ten queues of ten accounts
// each with a maximum of a quarter of the cluster and no guarantee
// (Slurm GrpTRES-style); ten queues under two parents, each guaranteed a
// tenth of the cluster with no borrowing limit (reclaim at work); two
// queues each with half the nodes as its pool (a training partition and
// a serving pool), every job on its queue's nodes.
func quotaSetups(c *topology.Cluster) []struct {
	name    string
	quotas  backfill.QuotaConfig
	queueOf func(int) string
} {
	total := c.TotalGPUs()
	open := backfill.QueueSpec{BorrowingLimit: backfill.Unlimited, LendingLimit: backfill.Unlimited, Maximum: backfill.Unlimited}
	half := c.NumNodes() / 2
	nodes := func(lo, hi int) string {
		names := make([]string, 0, hi-lo)
		for n := lo; n < hi; n++ {
			names = append(names, c.NodeName(topology.NodeID(n)))
		}
		return topology.CompressHostlist(names)
	}
	pool0, pool1 := open, open
	pool0.Name, pool0.Nodes = "p0", nodes(0, half)
	pool1.Name, pool1.Nodes = "p1", nodes(half, c.NumNodes())
	one := open
	one.Name = "all"
	var grptres, guar []backfill.QueueSpec
	for _, p := range []string{"A", "B"} {
		q := open
		q.Name, q.Guarantee = p, total/2
		guar = append(guar, q)
	}
	for i := range 10 {
		q := open
		q.Name, q.Maximum = fmt.Sprintf("q%d", i), total/4
		grptres = append(grptres, q)
		q = open
		q.Name, q.Parent, q.Guarantee = fmt.Sprintf("q%d", i), []string{"A", "B"}[i/5], total/10
		guar = append(guar, q)
	}
	byTen := func(a int) string { return fmt.Sprintf("q%d", a/10) }
	return []struct {
		name    string
		quotas  backfill.QuotaConfig
		queueOf func(int) string
	}{
		{"off", backfill.QuotaConfig{}, nil},
		{"one", backfill.QuotaConfig{Queues: []backfill.QueueSpec{one}}, func(int) string { return "all" }},
		{"grptres", backfill.QuotaConfig{Queues: grptres}, byTen},
		{"guarantees", backfill.QuotaConfig{Queues: guar}, byTen},
		{"pools", backfill.QuotaConfig{Queues: []backfill.QueueSpec{pool0, pool1}}, func(a int) string { return fmt.Sprintf("p%d", a%2) }},
	}
}

// BenchmarkScheduleQuotas is BenchmarkSchedule on the 2,000-GPU cluster
// with 1,000 pending jobs (state=90 and churn, shared and unique shapes,
// the default policy) under each queue setup of quotaSetups: quotas=off
// is BenchmarkSchedule's case; quotas=one adds the quota checks without a
// limit that binds; grptres and guarantees change what runs (jobs wait for
// quota; reclaim preempts), so their times compare cycles that decide
// different things.
//
//	go test -run '^$' -bench 'BenchmarkScheduleQuotas' -benchtime 20x -count 6 ./benchmarks
func BenchmarkScheduleQuotas(b *testing.B) {
	inv := inventories()[0]
	for _, setup := range quotaSetups(inv.c) {
		for _, state := range []scheduleState{fresh90, churn} {
			for _, unique := range []bool{false, true} {
				tc := scheduleCase{inv, 1000, backfill.DefaultDepth, unique, state}
				b.Run(fmt.Sprintf("quotas=%s/%s", setup.name, tc.name()), func(b *testing.B) {
					w := newWorkload(tc.inv.c, tc.depth, tc.unique, 11)
					w.quotas, w.queueOf = setup.quotas, setup.queueOf
					if tc.state == churn {
						scheduleChurnOn(b, w, tc.pending, false)
					} else {
						scheduleFreshOn(b, w, tc.pending)
					}
				})
			}
		}
	}
}
