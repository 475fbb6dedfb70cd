package benchmarks

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// workload makes the jobs of the scheduling benchmarks: seeded, with time
// limits of 1 to 8 hours, 100 accounts; half single-node jobs, 30% of 1 to
// 8 whole nodes, 20% of 8 to 72 whole nodes. With unique set every job's
// request is different from every other (a random topology constraint or
// domain limit on top of its size), so that no cache of same-shape
// outcomes can answer for it.
type workload struct {
	c        *topology.Cluster
	r        *rand.Rand
	depth    int
	unique   bool
	accounts []string
	n        int
	// quotas are the engine's queues; queueOf gives an account's queue
	// (jobs in queues may be preempted, so that they may borrow).
	quotas  backfill.QuotaConfig
	queueOf func(account int) string
	// tune, when set, changes the engine's config before it is built.
	tune func(*backfill.Config)
}

func newWorkload(c *topology.Cluster, depth int, unique bool, seed uint64) *workload {
	w := &workload{c: c, r: rand.New(rand.NewPCG(seed, 7)), depth: depth, unique: unique}
	for i := range 100 {
		w.accounts = append(w.accounts, fmt.Sprintf("acct%02d", i))
	}
	return w
}

// job returns the next job, submitted at at.
func (w *workload) job(prefix string, at time.Time) backfill.Job {
	r, g := w.r, w.c.MaxNodeGPUs()
	var req placement.Request
	switch k := r.IntN(10); {
	case k < 5:
		req = placement.NodesOf(1, 1+r.IntN(g))
	case k < 8:
		req = placement.NodesOf(1+r.IntN(8), g)
	default:
		req = placement.NodesOf(8+r.IntN(64), g)
	}
	if w.unique && req.Nodes > 1 {
		switch r.IntN(3) {
		case 0:
			req.Required = w.c.LevelName(r.IntN(w.c.Depth()))
		case 1:
			req.MaxDomains = 1 + r.IntN(req.Nodes)
		default:
			req.Preferred = w.c.LevelName(r.IntN(w.c.Depth()))
		}
	}
	w.n++
	acct := r.IntN(len(w.accounts))
	j := backfill.Job{ID: fmt.Sprintf("%s%07d", prefix, w.n), Account: w.accounts[acct], Submit: at,
		TimeLimit: time.Duration(1+r.IntN(8)) * time.Hour, Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}}
	if w.queueOf != nil {
		j.Queue, j.Preemption = w.queueOf(acct), preempt.Requeue
	}
	return j
}

// engine returns an engine whose running jobs hold about busy of the GPUs
// (and nothing else: the jobs that did not start when filling are
// withdrawn) and pending jobs submitted within the last hour.
func (w *workload) engine(b testing.TB, busy float64, pending int) (*backfill.Engine, time.Time) {
	cfg := backfill.DefaultConfig()
	cfg.ReservationDepth = w.depth
	cfg.Quotas = w.quotas
	if w.tune != nil {
		w.tune(&cfg)
	}
	tree, err := fairshare.NewTree(cfg.FairShare)
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range w.accounts {
		_ = tree.AddAccount(fairshare.RootName, a, 1)
	}
	e, err := backfill.New(w.c, cfg, tree)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Fill one job at a time, each started alone or withdrawn, skipping
	// jobs that would take the busy share past busy: the state holds
	// busy of the GPUs in running jobs and nothing else.
	target := int(busy * float64(w.c.TotalGPUs()))
	plan := &backfill.Plan{}
	for tries := 0; e.UsedGPUs() < target-w.c.MaxNodeGPUs() && tries < 200000; tries++ {
		j := w.job("run", now)
		if e.UsedGPUs()+jobGPUs(w.c, &j) > target || e.Submit(j, now) != nil {
			continue
		}
		if err := e.ScheduleInto(now, plan); err != nil {
			b.Fatal(err)
		}
		for _, s := range plan.Starts {
			_ = e.Started(s.Job, now)
		}
		for _, wt := range plan.Waiting {
			_ = e.Cancel(wt.Job, now)
		}
		now = now.Add(time.Second)
	}
	now = now.Add(time.Minute)
	for n := 0; n < pending; {
		j := w.job("pend", now.Add(-time.Duration(w.r.IntN(3600))*time.Second))
		switch err := e.Submit(j, now); {
		case errors.Is(err, backfill.ErrNeverFits):
			continue // a unique shape no cluster state can hold: draw again
		case err != nil:
			b.Fatal(err)
		}
		n++
	}
	return e, now
}

// jobGPUs returns the GPUs job j asks for (whole nodes count as the
// cluster's largest node).
func jobGPUs(c *topology.Cluster, j *backfill.Job) int {
	n := 0
	for _, m := range j.Gang.Members {
		r := m.Request
		switch {
		case r.GPUs > 0:
			n += r.GPUs
		case r.GPUsPerNode > 0:
			n += r.Nodes * r.GPUsPerNode
		default:
			n += r.Nodes * c.MaxNodeGPUs()
		}
	}
	return n
}

func busyShare(e *backfill.Engine) float64 {
	return float64(e.UsedGPUs()) / float64(e.Cluster().TotalGPUs())
}

// BenchmarkSchedule measures one scheduling cycle, honestly:
//
//   - state=90: every timed cycle runs on the same state, 90% of the GPUs
//     busy in running jobs and the pending jobs waiting, restored from a
//     snapshot before it (untimed, with a garbage collection): no earlier
//     cycle has started what fits or made the reservations;
//   - churn: a steady state in which, before each cycle (untimed), the 5
//     oldest running jobs finish and 5 new jobs arrive, a minute later;
//     the busy share it settles at is reported (busy%, after the cycle's
//     starts), with the mean starts per cycle (starts). On large queues
//     and the 100,000-GPU cluster it settles near 100% busy, where most
//     attempts fail fast, so:
//   - churn90: a steady state at most 90% busy: before each cycle
//     (untimed) the oldest running jobs finish until at most 90% of the
//     GPUs are busy (at least 5 of them) and 5 new jobs arrive; each
//     timed cycle starts what fits in what was freed, on an engine that
//     has run cycles before (no freshly restored state). busy% is the
//     share before the cycle (below 90% where the reservations keep
//     freed GPUs idle for their jobs), starts the mean per cycle;
//
// each with jobs of shared shapes (about 80 distinct requests, which a
// same-shape failure cache can answer for) and unique shapes (every
// request different: cache-proof), under the default policy
// (backfill.DefaultConfig: reservation depth 4). The caller's plan is
// reused from cycle to cycle with room for the whole queue (warmPlan), as
// a host's is after its first cycle. The sweep runs from 1,000
// to 100,000 pending jobs (the 100,000 cases only with churn: a restore per
// cycle would dominate). Conservative backfill (a reservation for every
// job) runs at 1,000 and 2,000 pending on the 2,000-GPU cluster.
//
//	go test -run '^$' -bench 'BenchmarkSchedule$' -benchtime 20x ./benchmarks
func BenchmarkSchedule(b *testing.B) {
	for _, tc := range scheduleCases() {
		b.Run(tc.name(), func(b *testing.B) {
			if tc.state == fresh90 {
				scheduleFresh(b, tc)
			} else {
				scheduleChurn(b, tc)
			}
		})
	}
}

// BenchmarkScheduleOrder times a churn cycle (5 jobs finish, 5 arrive)
// under the two orders a host without reservations runs: strict order
// (gang FIFO, Kueue's StrictFIFO) and backfill at depth 0, with the
// default fair-share priorities or with priorities by age alone
// (order=age: the queue kept in submit order between cycles, with
// priorities computed only for the reasons listed). Plans list only
// changed reasons, as a host that reads them would ask; listed is the
// mean number listed per cycle (scheduleChurnOn).
//
//	go test -run '^$' -bench 'BenchmarkScheduleOrder' -benchtime 20x ./benchmarks
func BenchmarkScheduleOrder(b *testing.B) {
	for _, inv := range inventories() {
		sizes := map[string][]int{"2k": {10000}, "100k": {10000, 100000}}[inv.name]
		for _, pending := range sizes {
			for _, strict := range []bool{true, false} {
				for _, age := range []bool{false, true} {
					mode, order := "backfill", "fairshare"
					if strict {
						mode = "strict"
					}
					if age {
						order = "age"
					}
					b.Run(fmt.Sprintf("inv=%s/pending=%d/mode=%s/order=%s", inv.name, pending, mode, order), func(b *testing.B) {
						w := newWorkload(inv.c, 0, false, 11)
						w.tune = func(cfg *backfill.Config) {
							cfg.Strict, cfg.OnlyChangedWaits = strict, true
							if age {
								cfg.FairShare.Weights = fairshare.Weights{Age: 1000}
							}
						}
						scheduleChurnOn(b, w, pending, false)
					})
				}
			}
		}
	}
}

type scheduleCase struct {
	inv     inventory
	pending int
	depth   int
	unique  bool
	state   scheduleState
}

// scheduleState is the state a BenchmarkSchedule case times its cycles in.
type scheduleState uint8

const (
	fresh90 scheduleState = iota // state=90: a restored 90%-busy snapshot
	churn                        // state=churn: 5 finish, 5 arrive
	churn90                      // state=churn90: finish down to 90% busy, 5 arrive
)

var scheduleStateNames = [...]string{"90", "churn", "churn90"}

func (tc scheduleCase) name() string {
	state, shapes, depth := scheduleStateNames[tc.state], "shared", fmt.Sprint(tc.depth)
	if tc.unique {
		shapes = "unique"
	}
	if tc.depth == backfill.Conservative {
		depth = "conservative"
	}
	return fmt.Sprintf("inv=%s/state=%s/pending=%d/shapes=%s/depth=%s", tc.inv.name, state, tc.pending, shapes, depth)
}

func scheduleCases() []scheduleCase {
	var out []scheduleCase
	for _, inv := range inventories() {
		sizes := map[string][]int{"2k": {1000, 10000, 100000}, "100k": {10000, 100000}}[inv.name]
		for _, pending := range sizes {
			for _, state := range []scheduleState{fresh90, churn, churn90} {
				if state == fresh90 && pending > 10000 {
					continue
				}
				for _, unique := range []bool{false, true} {
					out = append(out, scheduleCase{inv, pending, backfill.DefaultDepth, unique, state})
				}
			}
		}
		if inv.name == "2k" {
			// Conservative backfill (a reservation for every job), as
			// Slurm plans: 1,000 and 2,000 pending.
			for _, pending := range []int{1000, 2000} {
				out = append(out, scheduleCase{inv, pending, backfill.Conservative, true, fresh90})
			}
		}
	}
	return out
}

// warmPlan returns the plan a host reuses from cycle to cycle (see
// backfill.Engine.ScheduleInto) as it is after its first cycle on a queue
// of pending jobs: with room for every waiting job. A new plan's first
// cycle grows the list of waiting jobs (552 bytes each) into fresh
// memory, which at 10,000 pending costs tens of milliseconds once and is
// no part of a cycle in the steady state a host runs in.
func warmPlan(pending int) *backfill.Plan {
	return &backfill.Plan{Waiting: make([]backfill.Waiting, 0, pending)}
}

// scheduleFresh times cycles on the same restored state.
func scheduleFresh(b *testing.B, tc scheduleCase) {
	scheduleFreshOn(b, newWorkload(tc.inv.c, tc.depth, tc.unique, 11), tc.pending)
}

// scheduleFreshOn times cycles on the same restored state of workload w.
func scheduleFreshOn(b *testing.B, w *workload, pending int) {
	e, now := w.engine(b, 0.9, pending)
	snap := e.Snapshot()
	busy := busyShare(e)
	plan := warmPlan(pending)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		r, err := backfill.Restore(w.c, e.Config(), snap)
		if err != nil {
			b.Fatal(err)
		}
		// The restore's garbage is collected here, untimed, not by
		// the collector running beside the timed cycle.
		runtime.GC()
		b.StartTimer()
		if err := r.ScheduleInto(now, plan); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(100*busy, "busy%")
	b.ReportMetric(float64(len(plan.Starts)), "starts")
	b.ReportMetric(float64(len(plan.Reservations)), "reservations")
}

// scheduleChurn times cycles in a steady state with churn (tc.state churn
// or churn90).
func scheduleChurn(b *testing.B, tc scheduleCase) {
	scheduleChurnOn(b, newWorkload(tc.inv.c, tc.depth, tc.unique, 11), tc.pending, tc.state == churn90)
}

// scheduleChurnOn times cycles of workload w in a steady state with churn:
// before each cycle the 5 oldest running jobs finish, or with at90 the
// oldest until at most 90% of the GPUs are busy (at least 5), and 5 jobs
// arrive. It reports the busy share, and per cycle the starts and the
// reasons the plan lists (every waiting job's, or with
// Config.OnlyChangedWaits the changed ones).
func scheduleChurnOn(b *testing.B, w *workload, pending int, at90 bool) {
	e, now := w.engine(b, 0.9, pending)
	plan := warmPlan(pending)
	var running []string // oldest first
	for _, s := range e.Jobs() {
		if s.State.Active() {
			running = append(running, s.ID)
		}
	}
	step := func() {
		now = now.Add(time.Minute)
		target := int(0.9 * float64(w.c.TotalGPUs()))
		for n := 0; len(running) > 0 && (n < 5 || at90 && e.UsedGPUs() > target); n++ {
			if err := e.Finished(running[0], now); err != nil {
				b.Fatal(err)
			}
			running = running[1:]
		}
		for n := 0; n < 5; {
			switch err := e.Submit(w.job("new", now), now); {
			case errors.Is(err, backfill.ErrNeverFits):
				continue // a unique shape no cluster state can hold
			case err != nil:
				b.Fatal(err)
			}
			n++
		}
	}
	confirm := func() {
		for _, s := range plan.Starts {
			_ = e.Started(s.Job, now)
			running = append(running, s.Job)
		}
	}
	for range 5 { // settle
		step()
		if err := e.ScheduleInto(now, plan); err != nil {
			b.Fatal(err)
		}
		confirm()
	}
	b.ReportAllocs()
	b.ResetTimer()
	busy, starts, listed := 0.0, 0, 0
	for range b.N {
		b.StopTimer()
		step()
		if at90 {
			busy += busyShare(e) // before the cycle: what it runs at
		}
		b.StartTimer()
		if err := e.ScheduleInto(now, plan); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		starts += len(plan.Starts)
		listed += len(plan.Waiting)
		confirm()
		if !at90 {
			busy += busyShare(e)
		}
		b.StartTimer()
	}
	b.ReportMetric(100*busy/float64(b.N), "busy%")
	b.ReportMetric(float64(starts)/float64(b.N), "starts")
	b.ReportMetric(float64(listed)/float64(b.N), "listed")
	b.ReportMetric(float64(len(plan.Reservations)), "reservations")
}

// BenchmarkScheduleGangRecount times a repeated cycle listing only
// changed reasons (Config.OnlyChangedWaits) whose queue holds
// multi-member gangs that wait, under the default policy
// (backfill.DefaultConfig: reservation depth 4): the cost of telling them
// on the state the plan leaves (recountWaits) where a job ranked below
// them started later in the walk. Every node runs a job on half its
// GPUs, so that no node has a whole node's GPUs free; each gang (2 or 3
// members of mixed shapes, submitted up to an hour before the others)
// has a member a of 5 to 9 half nodes, placed first (the largest), that
// fits, a member b of 1 or 2 whole nodes that does not, after a or
// alone (gang.Admitter tries it first in a later order), and half of
// them a member c of 1 or 2 nodes of 1 to half a node's GPUs: its
// reason's counts are those of a later order than its first, and the
// recount tries the gang anew on the state the plan leaves
// (gang.Admitter.Check). The 4 gangs ranked first hold reservations (the
// default depth) and are not recounted. Before each cycle (untimed) the
// oldest low job finishes and a new one (a half node, the newest: ranked
// last) arrives, which the timed cycle starts after every gang's test.
// recounted is the mean number of gangs per cycle told such a reason,
// ranked above that start (the ones the recount tries anew); listed the
// reasons the plan lists; starts the starts.
//
//	go test -run '^$' -bench 'BenchmarkScheduleGangRecount' -benchtime 20x -benchmem ./benchmarks
func BenchmarkScheduleGangRecount(b *testing.B) {
	for _, inv := range inventories() {
		for _, gangs := range map[string][]int{"2k": {100, 1000}, "100k": {1000, 10000}}[inv.name] {
			b.Run(fmt.Sprintf("inv=%s/gangs=%d", inv.name, gangs), func(b *testing.B) { scheduleGangRecount(b, inv.c, gangs) })
		}
	}
}

// gangRecountEngine returns the engine of BenchmarkScheduleGangRecount
// on c, with gangs waiting gangs, and the time of its next cycle.
func gangRecountEngine(b *testing.B, c *topology.Cluster, gangs int) (*backfill.Engine, time.Time) {
	cfg := backfill.DefaultConfig()
	cfg.OnlyChangedWaits = true
	tree, err := fairshare.NewTree(cfg.FairShare)
	if err != nil {
		b.Fatal(err)
	}
	accounts := []string{"acct0", "acct1", "acct2", "acct3"}
	for _, a := range accounts {
		_ = tree.AddAccount(fairshare.RootName, a, 1)
	}
	e, err := backfill.New(c, cfg, tree)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	half := c.MaxNodeGPUs() / 2
	one := func(req placement.Request) gang.Spec {
		return gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}
	}
	// One job on half of every node's GPUs (packed jobs of half a node
	// would fill some nodes and leave others whole).
	j := backfill.Job{ID: "half", Account: accounts[0], Submit: now, TimeLimit: 24 * time.Hour, Gang: one(placement.NodesOf(c.NumNodes(), half))}
	if err := e.Submit(j, now); err != nil {
		b.Fatal(err)
	}
	plan := &backfill.Plan{}
	if err := e.ScheduleInto(now, plan); err != nil {
		b.Fatal(err)
	}
	for _, s := range plan.Starts {
		if err := e.Started(s.Job, now); err != nil {
			b.Fatal(err)
		}
	}
	if n := e.UsedGPUs(); n != c.NumNodes()*half {
		b.Fatalf("%d GPUs busy, want half of every node's (%d)", n, c.NumNodes()*half)
	}
	r := rand.New(rand.NewPCG(13, 7))
	for i := range gangs {
		ms := []gang.Member{
			{Name: "a", Request: placement.NodesOf(5+r.IntN(5), half)},
			{Name: "b", Request: placement.NodesOf(1+r.IntN(2), c.MaxNodeGPUs())},
		}
		if r.IntN(2) == 0 {
			ms = append(ms, gang.Member{Name: "c", Request: placement.NodesOf(1+r.IntN(2), 1+r.IntN(half))})
		}
		at := now.Add(time.Minute - time.Duration(r.IntN(3600))*time.Second)
		j := backfill.Job{ID: fmt.Sprintf("gang%05d", i), Account: accounts[r.IntN(len(accounts))], Submit: at,
			TimeLimit: time.Duration(1+r.IntN(8)) * time.Hour, Gang: gang.Spec{Members: ms}}
		if err := e.Submit(j, now.Add(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	return e, now.Add(2 * time.Hour)
}

// scheduleGangRecount times BenchmarkScheduleGangRecount's cycles.
func scheduleGangRecount(b *testing.B, c *topology.Cluster, gangs int) {
	e, now := gangRecountEngine(b, c, gangs)
	plan := warmPlan(gangs + 1)
	var low []string // running, oldest first
	n := 0
	step := func() {
		now = now.Add(time.Minute)
		if len(low) > 0 {
			if err := e.Finished(low[0], now); err != nil {
				b.Fatal(err)
			}
			low = low[1:]
		}
		n++
		j := backfill.Job{ID: fmt.Sprintf("low%07d", n), Account: "acct0", Submit: now, TimeLimit: time.Hour,
			Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(1, c.MaxNodeGPUs()/2)}}}}
		if err := e.Submit(j, now); err != nil {
			b.Fatal(err)
		}
	}
	cycle := func() {
		if err := e.ScheduleInto(now, plan); err != nil {
			b.Fatal(err)
		}
	}
	confirm := func() {
		for _, s := range plan.Starts {
			if err := e.Started(s.Job, now); err != nil {
				b.Fatal(err)
			}
			low = append(low, s.Job)
		}
	}
	for range 3 { // settle: every gang has been told its reason once
		step()
		cycle()
		confirm()
	}
	b.ReportAllocs()
	b.ResetTimer()
	starts, listed, recounted := 0, 0, 0
	for range b.N {
		b.StopTimer()
		step()
		b.StartTimer()
		cycle()
		b.StopTimer()
		if len(plan.Starts) != 1 || !strings.HasPrefix(plan.Starts[0].Job, "low") {
			b.Fatalf("want the low job started alone, after the gangs' tests; started %d (%v)", len(plan.Starts), plan.Starts)
		}
		starts += len(plan.Starts)
		listed += len(plan.Waiting)
		recounted += recountedGangs(e)
		confirm()
		b.StartTimer()
	}
	b.ReportMetric(float64(starts)/float64(b.N), "starts")
	b.ReportMetric(float64(listed)/float64(b.N), "listed")
	b.ReportMetric(float64(recounted)/float64(b.N), "recounted")
}

// recountedGangs counts the waiting gangs of BenchmarkScheduleGangRecount
// told that member b (tried after the larger member a in the gang's first
// order: gang.Admitter places the largest GPU count first) does not fit
// for want of free GPUs (a count of the state, "needs ...; the cluster
// has ..."): b failed by itself only in a later order, so that the
// recount tries the gang anew. Every gang was submitted before the
// cycle's low job and ranks above it.
func recountedGangs(e *backfill.Engine) int {
	n := 0
	for _, s := range e.Jobs() {
		if s.State == backfill.StatePending && s.Code == backfill.WaitGang && strings.HasPrefix(s.ID, "gang") &&
			strings.Contains(s.Reason, "member b: ") && strings.Contains(s.Reason, "; the cluster has ") {
			n++
		}
	}
	return n
}
