package backfill

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestQuotaValidate: every bad queue config is refused with ErrConfig and
// an error naming the queue; good ones pass.
func TestQuotaValidate(t *testing.T) {
	q := func(name, parent string, g int) QueueSpec {
		return QueueSpec{Name: name, Parent: parent, Guarantee: g, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}
	}
	with := func(s QueueSpec, f func(*QueueSpec)) QueueSpec { f(&s); return s }
	for _, tc := range []struct {
		name   string
		queues []QueueSpec
		want   string // "" passes
	}{
		{"empty", nil, ""},
		{"tree", []QueueSpec{q("lab", "", 64), q("a", "lab", 32), q("b", "lab", 32)}, ""},
		{"limits", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.BorrowingLimit, s.LendingLimit, s.Maximum, s.Weight = 0, 0, 8, 2 })}, ""},
		{"no name", []QueueSpec{q("", "", 0)}, `queue "": a name of 0 bytes`},
		{"long name", []QueueSpec{q(strings.Repeat("x", MaxIDLength+1), "", 0)}, "a name of"},
		{"twice", []QueueSpec{q("a", "", 0), q("a", "", 0)}, `queue "a": listed twice`},
		{"own parent", []QueueSpec{q("a", "a", 0)}, `queue "a": its own parent`},
		{"parent after", []QueueSpec{q("a", "lab", 0), q("lab", "", 0)}, `queue "a": parent "lab" is not listed before it`},
		{"unknown parent", []QueueSpec{q("a", "nope", 0)}, `queue "a": parent "nope"`},
		{"negative guarantee", []QueueSpec{q("a", "", -8)}, `queue "a": guarantee -8 is negative`},
		{"huge guarantee", []QueueSpec{q("a", "", math.MaxInt), q("b", "", math.MaxInt)}, `queue "a": guarantee 9223372036854775807 is negative or above 2147483647 GPUs`},
		{"huge maximum", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.Maximum = math.MaxInt32 + 1 })}, `queue "a": borrowing limit -1, lending limit -1 or maximum 2147483648`},
		{"largest counts", []QueueSpec{with(q("a", "", math.MaxInt32), func(s *QueueSpec) { s.Maximum, s.BorrowingLimit = math.MaxInt32, math.MaxInt32 })}, ""},
		{"bad borrowing", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.BorrowingLimit = -2 })}, `queue "a": borrowing limit -2`},
		{"bad lending", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.LendingLimit = -5 })}, `queue "a": borrowing limit -1, lending limit -5`},
		{"max below guarantee", []QueueSpec{with(q("a", "", 16), func(s *QueueSpec) { s.Maximum = 8 })}, `queue "a": maximum 8 is below its guarantee 16`},
		{"NaN weight", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.Weight = math.NaN() })}, `queue "a": weight NaN`},
		{"negative weight", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.Weight = -1 })}, `queue "a": weight -1`},
		{"a weight whose siblings' sum overflows", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.Weight = math.MaxFloat64 })}, `queue "a": weight 1.7976931348623157e+308 is neither 0 nor within [1e-06, 1e+06]`},
		{"a subnormal weight", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.Weight = 5e-324 })}, `queue "a": weight 5e-324`},
		{"weights at the bounds", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.Weight = MaxQueueWeight }), with(q("b", "", 8), func(s *QueueSpec) { s.Weight = MinQueueWeight })}, ""},
		{"bad nodes", []QueueSpec{with(q("a", "", 8), func(s *QueueSpec) { s.Nodes = "n[5-3]" })}, `queue "a": nodes:`},
		{"children above parent", []QueueSpec{q("lab", "", 32), q("a", "lab", 24), q("b", "lab", 16)},
			`queue "b": its guarantee of 16 takes the guarantees of "lab"'s queues to 40, above "lab"'s 32`},
		{"strict leaves", []QueueSpec{q("lab", "", 32), with(q("a", "lab", 16), func(s *QueueSpec) { s.StrictOrder = true }), q("b", "lab", 16)}, ""},
		{"strict parent", []QueueSpec{with(q("lab", "", 32), func(s *QueueSpec) { s.StrictOrder = true }), q("a", "lab", 16), q("b", "lab", 16)},
			`queue "lab": strict order, but it has children (queue "a")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := QuotaConfig{Queues: tc.queues}
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
			case !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("got %v, want ErrConfig with %q", err, tc.want)
			}
		})
	}
}

// TestQuotaNew: New refuses top guarantees above the cluster, pools whose
// queues guarantee more than their nodes hold, and jobs whose queue is
// wrong or could never hold them.
func TestQuotaNew(t *testing.T) {
	c := opsCluster(t) // 64 GPUs
	cfg := DefaultConfig()
	cfg.Quotas.Queues = []QueueSpec{{Name: "a", Guarantee: 48, Maximum: Unlimited, LendingLimit: Unlimited}, {Name: "b", Guarantee: 24, Maximum: Unlimited, LendingLimit: Unlimited}}
	if _, err := New(c, cfg, flatTree(t, cfg.FairShare, "x")); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "add up to 72 GPUs; the cluster has 64") {
		t.Fatalf("New: %v", err)
	}
	cfg.Quotas.Queues = []QueueSpec{{Name: "a", Maximum: Unlimited, LendingLimit: Unlimited, Nodes: "nope[1-2]"}}
	if _, err := New(c, cfg, flatTree(t, cfg.FairShare, "x")); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `queue "a": nodes: topology: unknown node: "nope1"`) {
		t.Fatalf("New with unknown pool nodes: %v", err)
	}
	cfg.Quotas.Queues = []QueueSpec{{Name: "a", Guarantee: 24, Maximum: Unlimited, LendingLimit: Unlimited, Nodes: opsNodeNames(c, 2)}}
	if _, err := New(c, cfg, flatTree(t, cfg.FairShare, "x")); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `queue "a": guarantee 24 is above the 16 GPUs of its nodes`) {
		t.Fatalf("New with a guarantee above its pool: %v", err)
	}
	two, one := opsNodeNames(c, 2), opsNodeNames(c, 1) // 16 and 8 GPUs
	for _, tc := range []struct {
		name   string
		queues []QueueSpec
		want   string // "" accepted
	}{
		{"siblings on the same nodes, each guaranteeing all of them", []QueueSpec{
			{Name: "a", Guarantee: 16, Maximum: Unlimited, Nodes: two},
			{Name: "b", Guarantee: 16, Maximum: Unlimited, Nodes: two}},
			`queue "a": the queues placed inside its pool guarantee 32 GPUs between them (a 16, b 16), above the 16 GPUs of its nodes`},
		{"a queue on part of another's nodes", []QueueSpec{
			{Name: "a", Guarantee: 12, Maximum: Unlimited, Nodes: two},
			{Name: "b", Guarantee: 8, Maximum: Unlimited, Nodes: one}},
			`queue "a": the queues placed inside its pool guarantee 20 GPUs between them (a 12, b 8)`},
		{"a child narrowing its parent's pool (counted in the parent's)", []QueueSpec{
			{Name: "a", Guarantee: 16, Maximum: Unlimited, Nodes: two},
			{Name: "a1", Parent: "a", Guarantee: 8, Maximum: Unlimited, Nodes: one},
			{Name: "a2", Parent: "a", Guarantee: 8, Maximum: Unlimited},
			{Name: "b", Guarantee: 48, Maximum: Unlimited}}, ""},
		{"a borrowing queue without a guarantee on a pool's nodes", []QueueSpec{
			{Name: "serving", Guarantee: 16, Maximum: Unlimited, Nodes: two},
			{Name: "borrowed", BorrowingLimit: Unlimited, Maximum: Unlimited, Nodes: two}}, ""},
	} {
		cfg.Quotas.Queues = tc.queues
		_, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: New: %v, want %q", tc.name, err, tc.want)
		}
	}
	cfg.Quotas.Queues = []QueueSpec{
		{Name: "lab", Guarantee: 64, Maximum: Unlimited, LendingLimit: Unlimited},
		{Name: "a", Parent: "lab", Guarantee: 16, BorrowingLimit: 8, Maximum: Unlimited, LendingLimit: Unlimited},
		{Name: "b", Parent: "lab", Guarantee: 16, BorrowingLimit: Unlimited, Maximum: 40, LendingLimit: 8},
	}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	job := func(queue string, nodes int, p preempt.Policy) Job {
		return Job{ID: "j", Account: "x", Queue: queue, Preemption: p, Gang: member(placement.NodesOf(nodes, 8))}
	}
	for _, tc := range []struct {
		name string
		job  Job
		is   error
		want string
	}{
		{"no queue", job("", 1, preempt.Requeue), ErrBadJob, `queue "" is not a queue without children`},
		{"parent queue", job("lab", 1, preempt.Requeue), ErrBadJob, `queue "lab" is not a queue without children`},
		{"unknown queue", job("zz", 1, preempt.Requeue), ErrBadJob, `queue "zz"`},
		{"above the borrowing limit", job("a", 4, preempt.Requeue), ErrNeverFits, "queue a may use at most 24"},
		{"above the maximum", job("b", 6, preempt.Requeue), ErrNeverFits, "queue b has a maximum of 40"},
		{"never above the guarantee", job("b", 3, preempt.Never), ErrNeverFits, "runs within its queue's guarantee, and queue b has 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Submit(tc.job, epoch); !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %v with %q", err, tc.is, tc.want)
			}
		})
	}
	for _, ok := range []Job{job("a", 3, preempt.Requeue), job("b", 2, preempt.Never)} {
		ok.ID += ok.Queue
		if err := e.Submit(ok, epoch); err != nil {
			t.Fatalf("%s: %v", ok.ID, err)
		}
	}
	cfg.Quotas = QuotaConfig{}
	plain, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Submit(job("a", 1, preempt.Never), epoch); !errors.Is(err, ErrBadJob) || !strings.Contains(err.Error(), "there are no queues") {
		t.Fatalf("a queue without queues: %v", err)
	}
}

// TestQuotaCycleAllocs: a cycle in which every waiting job waits for
// quota allocates no more than the same cycle in which they wait for GPUs
// without quotas (reasons are cached per queue and use).
func TestQuotaCycleAllocs(t *testing.T) {
	var allocs [3]float64
	for k, quotas := range []bool{false, true, true} {
		c := opsCluster(t)
		cfg := DefaultConfig()
		cfg.Hold.Enabled = false
		if quotas {
			cfg.Quotas.Queues = []QueueSpec{{Name: "a", Maximum: 64, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
				{Name: "b", Maximum: 64, BorrowingLimit: Unlimited, LendingLimit: Unlimited}}
		}
		pools := k == 2 // a and b on overlapping pools (a group), a drained node running a job
		if pools {
			var names []string
			for n := range c.NumNodes() {
				names = append(names, c.NodeName(topology.NodeID(n)))
			}
			cfg.Quotas.Queues[0].Nodes = topology.CompressHostlist(names[:6])
			cfg.Quotas.Queues[1].Nodes = topology.CompressHostlist(names[2:])
		}
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
		if err != nil {
			t.Fatal(err)
		}
		queue := func(i int) string {
			if !quotas {
				return ""
			}
			return []string{"a", "b"}[i%2]
		}
		for i := range c.NumNodes() {
			if err := e.Submit(Job{ID: fmt.Sprintf("run%d", i), Account: "x", Queue: queue(0), Gang: member(placement.NodesOf(1, 8))}, epoch); err != nil {
				t.Fatal(err)
			}
		}
		first, err := e.Schedule(epoch)
		if err != nil {
			t.Fatal(err)
		}
		if pools {
			for _, st := range first.Starts {
				if err := e.Started(st.Job, epoch); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Drain(1, epoch); err != nil {
				t.Fatal(err)
			}
			if e.UsedGPUs() == 0 || e.quota.group[0] < 0 || e.quota.group[0] != e.quota.group[1] {
				t.Fatalf("%d GPUs used, groups %v: want jobs running and a and b in one group", e.UsedGPUs(), e.quota.group)
			}
		}
		for i := range 50 {
			// In queue a at its maximum, or in b, whose jobs would take
			// it past its weighted share while a waits below its own.
			if err := e.Submit(Job{ID: fmt.Sprintf("wait%d", i), Account: "x", Queue: queue(i), Gang: member(placement.NodesOf(1+i%3, 8))}, epoch); err != nil {
				t.Fatal(err)
			}
		}
		plan := &Plan{}
		if err := e.ScheduleInto(epoch, plan); err != nil {
			t.Fatal(err)
		}
		if quotas && !slices.ContainsFunc(plan.Waiting, func(w Waiting) bool { return w.Code == WaitQuota }) {
			t.Fatalf("no job waits for quota: %s", plan.Describe(c, epoch))
		}
		allocs[k] = testing.AllocsPerRun(20, func() {
			if err := e.ScheduleInto(epoch, plan); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("allocations per cycle: %v without quotas, %v with every job waiting for quota, %v with pools and a drained node", allocs[0], allocs[1], allocs[2])
	if allocs[1] > allocs[0] || allocs[2] > allocs[0] {
		t.Errorf("a cycle with quotas allocates %v times (%v with pools and a drained node), %v without", allocs[1], allocs[2], allocs[0])
	}
}

// TestQuotaRestore: restoring the engine (snapshot, JSON, restore) after
// every cycle that leaves a reclaim claim changes nothing: over 60
// workloads of the property test, the plans of a run restored in the
// middle of each reclaim are byte-identical to those of a run never
// restored.
func TestQuotaRestore(t *testing.T) {
	restores := 0
	for w := range 60 {
		var plans [2][]string
		for k, restore := range []bool{false, true} {
			r := rand.New(rand.NewPCG(uint64(w), 19))
			e, jobs, _ := quotaEngine(t, r, w, false)
			d := newDriver(t, e, jobs, map[string]time.Duration{})
			d.release = func() time.Duration { return time.Duration(r.IntN(6)) * time.Minute }
			d.afterCycle = func(p *Plan) {
				data, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				plans[k] = append(plans[k], string(data))
				if restore && slices.ContainsFunc(d.e.book.claims, func(cl *claim) bool { return cl.reclaim }) {
					d.e = roundTrip(t, d.e)
					restores++
				}
			}
			d.run(time.Time{})
		}
		if d := cmp.Diff(plans[0], plans[1]); d != "" {
			t.Fatalf("workload %d: the restored run differs (-plain +restored):\n%s", w, d)
		}
	}
	t.Logf("%d restores in the middle of a reclaim", restores)
	if restores < 10 {
		t.Errorf("only %d restores during reclaims", restores)
	}
}

// TestQuotaRestoreRefuses: a snapshot whose queues do not match the
// config in a way no config change explains is refused, naming the job
// or queue (queues renamed, removed, turned on or off restore:
// TestQuotaRestoreAcrossQueues).
func TestQuotaRestoreRefuses(t *testing.T) {
	e := reclaimingEngine(t)
	good := e.Snapshot()
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		snap func(*Snapshot)
		want string
	}{
		{"reclaim of its own queue", nil, func(s *Snapshot) {
			for i := range s.Jobs {
				if s.Jobs[i].ID == "b0" {
					s.Jobs[i].Queue = "a"
				}
			}
		}, "the reclaim claim for b0 lists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := json.Marshal(good)
			var snap Snapshot
			_ = json.Unmarshal(data, &snap)
			rc := e.Config()
			rc.Quotas.Queues = slices.Clone(rc.Quotas.Queues)
			if tc.cfg != nil {
				tc.cfg(&rc)
			}
			if tc.snap != nil {
				tc.snap(&snap)
			}
			if _, err := Restore(e.c, rc, &snap); !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrRestore with %q", err, tc.want)
			}
		})
	}
}

// TestQuotaRestoreAcrossQueues: the snapshots TestQuotaRestoreRefuses
// once refused for queues the config no longer has are restored
// (Restore's doc): without queues every queue is dropped and the reclaim
// claim with it (its victims still stop); a running job of an unknown
// queue runs on, counted in no queue; a waiting one of an unknown queue
// loses its claim (its victims still stop) and waits for quota, told
// why. The restored engine passes the invariant checker after the
// restore and a few cycles, and a round trip gives the same bytes.
func TestQuotaRestoreAcrossQueues(t *testing.T) {
	e := reclaimingEngine(t)
	good := e.Snapshot()
	setQueue := func(id, q string) func(*Snapshot) {
		return func(s *Snapshot) { s.Jobs[jobIndex(s, id)].Queue = q }
	}
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		snap func(*Snapshot)
		// claims: the claims kept; reason: b0's ("": none asserted);
		// used: the queues' use (a's six running gangs, the victims
		// counting for nobody, and b's claim, but for the jobs in no
		// queue).
		claims int
		reason string
		used   [2]int
	}{
		{"no queues", func(c *Config) { c.Quotas = QuotaConfig{} }, nil, 0, "", [2]int{}},
		{"reclaim without queues", func(c *Config) { c.Quotas = QuotaConfig{} }, func(s *Snapshot) {
			for i := range s.Jobs {
				s.Jobs[i].Queue = ""
			}
		}, 0, "", [2]int{}},
		{"unknown queue of a running job", nil, setQueue("a5", "zz"), 1, "", [2]int{40, 16}},
		{"unknown queue of a claiming job", nil, setQueue("b0", "zz"), 0,
			`queue "zz" is not in the config (Config.Quotas): it cannot start unless it is submitted again to a queue`, [2]int{48, 0}},
		{"no queue under queues", nil, setQueue("b0", ""), 0,
			"the job has no queue, and queues are configured now (Config.Quotas): it cannot start unless it is submitted again to a queue", [2]int{48, 0}},
		{"both queues renamed", func(c *Config) { c.Quotas.Queues[0].Name, c.Quotas.Queues[1].Name = "a2", "b2" }, nil, 0,
			`queue "b" is not in the config (Config.Quotas): it cannot start unless it is submitted again to a queue`, [2]int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshotCopy(t, good)
			rc := e.Config()
			rc.Quotas.Queues = slices.Clone(rc.Quotas.Queues)
			if tc.cfg != nil {
				tc.cfg(&rc)
			}
			if tc.snap != nil {
				tc.snap(snap)
			}
			r, err := Restore(e.c, rc, snap)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if err := r.check(); err != nil {
				t.Fatal(err)
			}
			r.checkEach = true
			requireRoundTrip(t, r, rc)
			if len(r.book.claims) != tc.claims {
				t.Fatalf("%d claims kept, want %d", len(r.book.claims), tc.claims)
			}
			preempting := 0
			queueOf := map[string]string{}
			for _, jr := range snap.Jobs {
				queueOf[jr.ID] = jr.Queue
			}
			for _, j := range r.Jobs() {
				if j.State == StatePreempting {
					preempting++
				}
				if j.Queue != queueOf[j.ID] {
					t.Errorf("job %s restored with queue %q, snapshot's %q (a config with its queue again could not place it)", j.ID, j.Queue, queueOf[j.ID])
				}
			}
			if preempting != 2 {
				t.Fatalf("%d jobs preempting, want the claim's 2 victims", preempting)
			}
			if st, _ := r.Job("a5"); st.State != StateRunning {
				t.Fatalf("a5 is %s", st.State)
			}
			if qs := r.Queues(); qs != nil && (qs[0].Used != tc.used[0] || qs[1].Used != tc.used[1] || qs[1].Waiting != 0) {
				t.Fatalf("queues %+v, want them using %v and nothing waiting", qs, tc.used)
			}
			for m := 1; m <= 3; m++ {
				now := epoch.Add(time.Hour + time.Duration(m)*time.Minute)
				p, err := r.Schedule(now)
				if err != nil {
					t.Fatal(err)
				}
				if tc.reason != "" {
					if got := reason(t, p, "b0"); got != tc.reason {
						t.Fatalf("b0 waits: %q, want %q", got, tc.reason)
					}
					if len(p.Starts) > 0 || len(p.Reservations) > 0 || len(p.Preemptions) > 0 {
						t.Fatalf("b0, which can never start, made a plan:\n%s", p.Describe(r.c, epoch))
					}
				}
				if err := r.check(); err != nil {
					t.Fatal(err)
				}
				requireRoundTrip(t, r, rc)
			}
		})
	}
}

// reclaimingEngine returns an engine on 64 GPUs with queues a and b
// (guarantees of 32 each) in which a borrows 32 GPUs and b's 16-GPU job
// has just reclaimed two of a's gangs.
func reclaimingEngine(t *testing.T) *Engine {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas.Queues = []QueueSpec{{Name: "a", Guarantee: 32, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
		{Name: "b", Guarantee: 32, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := e.Submit(Job{ID: fmt.Sprintf("a%d", i), Account: "x", Queue: "a", Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, epoch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Schedule(epoch); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		_ = e.Started(fmt.Sprintf("a%d", i), epoch)
	}
	now := epoch.Add(time.Hour)
	if err := e.Submit(Job{ID: "b0", Account: "x", Queue: "b", Gang: member(placement.NodesOf(2, 8))}, now); err != nil {
		t.Fatal(err)
	}
	p, err := e.Schedule(now)
	if err != nil || len(p.Preemptions) != 2 {
		t.Fatalf("want a reclaim of two gangs: %v\n%s", err, p.Describe(c, epoch))
	}
	return e
}

// opsNodeNames returns the first n nodes of c as a hostlist.
func opsNodeNames(c *topology.Cluster, n int) string {
	var names []string
	for i := range n {
		names = append(names, c.NodeName(topology.NodeID(i)))
	}
	return topology.CompressHostlist(names)
}

// TestClaimFails: which reclaim searches a failed one rules out in the
// cycle (claimFails): the rules case by case, each against a fresh
// record of one failure of a 16-GPU job of shape 5 with a one-hour limit.
func TestClaimFails(t *testing.T) {
	e, err := New(opsCluster(t), DefaultConfig(), flatTree(t, DefaultConfig().FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	job := func(gpus int, shape uint64, limit time.Duration) *jobRec {
		return &jobRec{gpus: gpus, shapeID: shape, job: Job{ID: "j", TimeLimit: limit}}
	}
	failed := job(16, 5, time.Hour)
	type failure struct{ quota, tight bool }
	cases := []struct {
		name    string
		fail    failure
		j       *jobRec
		mutate  func(j *jobRec) // before the ask
		skipped bool
	}{
		{"quota: as large", failure{quota: true}, job(16, 9, time.Hour), nil, true},
		{"quota: larger, longer limit", failure{quota: true}, job(24, 9, 2*time.Hour), nil, true},
		{"quota: no limit counts as the longest", failure{quota: true}, job(24, 9, 0), nil, true},
		{"quota: smaller", failure{quota: true}, job(8, 9, time.Hour), nil, false},
		{"quota: shorter limit", failure{quota: true}, job(24, 9, 30*time.Minute), nil, false},
		{"quota: another shape is no matter", failure{quota: true}, job(16, 0, time.Hour), nil, true},
		{"placement: same shape", failure{}, job(16, 5, time.Hour), nil, true},
		{"placement: same shape, longer limit", failure{}, job(16, 5, 0), nil, true},
		{"placement: same shape, shorter limit", failure{}, job(16, 5, 59*time.Minute), nil, false},
		{"placement: another shape", failure{}, job(16, 6, time.Hour), nil, false},
		{"placement: no shape number", failure{}, job(16, 0, time.Hour), nil, false},
		{"placement: failed on a tighter shape", failure{tight: true}, job(16, 5, time.Hour), nil, false},
		{"the book changed since", failure{quota: true}, job(16, 5, time.Hour), func(*jobRec) { e.book.version++ }, false},
		{"a job with its own reservation", failure{}, job(16, 5, time.Hour), func(j *jobRec) { j.resv = &reservation{job: j} }, false},
		{"a job with its own claim", failure{quota: true}, job(16, 5, time.Hour), func(j *jobRec) { j.claim = &claim{job: j} }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f claimFails
			f.init(2)
			f.add(1, failed.gpus, failed, e, epoch, tc.fail.quota, tc.fail.tight)
			if tc.mutate != nil {
				tc.mutate(tc.j)
			}
			if got := f.skip(1, tc.j.gpus, tc.j, e) != nil; got != tc.skipped {
				t.Errorf("skip = %v, want %v", got, tc.skipped)
			}
			if f.skip(0, tc.j.gpus, tc.j, e) != nil {
				t.Error("another queue's failure ruled the job out")
			}
			f.reset()
			if f.skip(1, tc.j.gpus, tc.j, e) != nil {
				t.Error("ruled out after reset")
			}
		})
	}
	t.Run("the quota counts changed since", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Quotas.Queues = []QueueSpec{{Name: "a", Guarantee: 8, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}
		eq, err := New(opsCluster(t), cfg, flatTree(t, cfg.FairShare, "x"))
		if err != nil {
			t.Fatal(err)
		}
		var f claimFails
		f.init(1)
		f.add(0, failed.gpus, failed, eq, epoch, false, false)
		j := job(16, 5, time.Hour)
		if f.skip(0, j.gpus, j, eq) == nil {
			t.Fatal("not ruled out on the same counts")
		}
		eq.quota.add(0, 8) // a job of the queue started
		if f.skip(0, j.gpus, j, eq) != nil {
			t.Error("ruled out after the counts changed")
		}
	})
	t.Run("placement: same shape, searched at its minimum", func(t *testing.T) {
		// An elastic gang reclaims for its minimum (reclaimGuarantee):
		// a failed search for its full shape does not answer it.
		var f claimFails
		f.init(1)
		f.add(0, failed.gpus, failed, e, epoch, false, false)
		j := job(16, 5, time.Hour)
		if f.skip(0, 8, j, e) != nil {
			t.Error("a search at the minimum was ruled out by one at full size")
		}
		if f.skip(0, 16, j, e) == nil {
			t.Error("a search at full size was not ruled out")
		}
	})
	t.Run("cap", func(t *testing.T) {
		var f claimFails
		f.init(1)
		for i := range maxClaimFails {
			if f.skip(0, 8, job(8, uint64(100+i), 0), e) != nil {
				t.Fatalf("failure %d: a search of a new shape was ruled out before the cap", i)
			}
			f.add(0, 8, job(8, uint64(100+i), 0), e, epoch, false, false)
		}
		own := job(8, 1, time.Minute)
		own.resv = &reservation{job: own}
		if f.skip(0, 8, own, e) == nil {
			t.Error("past the cap, a job with its own reservation still searched")
		}
	})
}

// TestQuotaShareProbeKept: a waiting job found not to fit the nodes in
// service is not tried again by the weighted-share gate until they change
// (Engine.inServiceGen): queue a's twenty gangs, each required in one leaf
// of four nodes and not simple (no shared-shape shortcut), are tried once
// while a node of each leaf is drained, not in the next cycles, and again
// once a node is resumed, when one fits and b's waiting jobs are held to
// b's share.
func TestQuotaShareProbeKept(t *testing.T) {
	const bigs = 20
	e := shareProbeEngine(t, bigs)
	e.checkEach = true // a skipped probe that would fit panics
	c := e.c
	now := epoch
	cycle := func(step string) *Plan {
		t.Helper()
		now = now.Add(time.Minute)
		plan, err := e.Schedule(now)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range plan.Starts {
			if err := e.Started(s.Job, now); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.check(); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return plan
	}
	tests := []struct {
		step   string
		event  func() error
		probes int
		canUse int8
		starts int
	}{
		{step: "first cycle: every gang tried", probes: bigs, canUse: -1, starts: 6},
		{step: "nothing changed: none tried", probes: 0, canUse: -1},
		{step: "a b job ended, same nodes in service: none tried", event: func() error { return e.Finished("b0", now) }, probes: 0, canUse: -1, starts: 1},
		{step: "node 3 resumed: the first gang fits", event: func() error { return e.Resume(3, now) }, probes: 1, canUse: 1},
	}
	for _, tc := range tests {
		if tc.event != nil {
			if err := tc.event(); err != nil {
				t.Fatal(err)
			}
		}
		plan := cycle(tc.step)
		if e.cyc.probes != tc.probes || e.quota.canUse[0] != tc.canUse || len(plan.Starts) != tc.starts {
			t.Errorf("%s: %d gangs tried, usable %d, %d started; want %d, %d, %d: %s", tc.step,
				e.cyc.probes, e.quota.canUse[0], len(plan.Starts), tc.probes, tc.canUse, tc.starts, plan.Describe(c, now))
		}
	}
}

// shareProbeEngine is an engine on opsCluster with nodes 3 and 7
// drained, queues a (weight 2: a share of 32 of the 48 GPUs in service,
// room for one of its gangs) and b with no guarantee, bigs gangs of
// unsimpleGang waiting in a and ten 1-node jobs in b.
func shareProbeEngine(tb testing.TB, bigs int) *Engine {
	c := opsCluster(tb)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas.Queues = []QueueSpec{{Name: "a", Weight: 2, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
		{Name: "b", BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}
	e, err := New(c, cfg, flatTree(tb, cfg.FairShare, "x"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, n := range []topology.NodeID{3, 7} {
		if err := e.Drain(n, epoch); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range bigs {
		if err := e.Submit(Job{ID: fmt.Sprintf("big%d", i), Account: "x", Queue: "a", Preemption: preempt.Requeue, Gang: unsimpleGang(c)}, epoch); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range 10 {
		if err := e.Submit(Job{ID: fmt.Sprintf("b%d", i), Account: "x", Queue: "b", Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, epoch); err != nil {
			tb.Fatal(err)
		}
	}
	return e
}

// unsimpleGang is a gang of 4 whole nodes required in one leaf, with a
// node set (every node) that makes it not simple: it shares no outcome
// with jobs of the same shape.
func unsimpleGang(c *topology.Cluster) gang.Spec {
	all := bitset.New(uint(c.NumNodes()))
	for n := range c.NumNodes() {
		all.Set(uint(n))
	}
	return member(placement.Request{Nodes: 4, GPUsPerNode: 8, Required: "leaf", Allowed: all})
}

// BenchmarkQuotaShareProbe times a cycle in which the weighted-share gate
// asks whether queue a, with pending gangs that cannot be placed while a
// node of each leaf is drained (unsimpleGang), could use GPUs, while
// queue b's jobs wait past b's share. probed/op counts the gangs tried on
// the nodes in service.
//
//	go test ./backfill -run '^$' -bench QuotaShareProbe
func BenchmarkQuotaShareProbe(b *testing.B) {
	for _, pending := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			e := shareProbeEngine(b, pending)
			plan := &Plan{}
			if err := e.ScheduleInto(epoch, plan); err != nil {
				b.Fatal(err)
			}
			for _, s := range plan.Starts {
				if err := e.Started(s.Job, epoch); err != nil {
					b.Fatal(err)
				}
			}
			probed := 0
			b.ReportAllocs()
			for b.Loop() {
				if err := e.ScheduleInto(epoch, plan); err != nil {
					b.Fatal(err)
				}
				probed += e.cyc.probes
			}
			b.ReportMetric(float64(probed)/float64(b.N), "probed/op")
		})
	}
}

// TestQuotaShareProbeAllocs: a cycle in which the weighted-share gate
// asks whether a queue's waiting jobs could use GPUs at all
// (quotaState.usable: queue a's only job, a gang required in one leaf of
// four nodes, cannot be placed while a node of each leaf is drained)
// allocates no more than the same cycle without queues, and b's jobs
// run past b's weighted share on the nodes a could not use.
func TestQuotaShareProbeAllocs(t *testing.T) {
	var allocs [2]float64
	for k, quotas := range []bool{false, true} {
		c := opsCluster(t)
		cfg := DefaultConfig()
		cfg.Hold.Enabled = false
		queue := func(string) string { return "" }
		if quotas {
			cfg.Quotas.Queues = []QueueSpec{{Name: "a", Guarantee: 32, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
				{Name: "b", Guarantee: 32, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}
			queue = func(q string) string { return q }
		}
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []topology.NodeID{3, 7} {
			if err := e.Drain(n, epoch); err != nil {
				t.Fatal(err)
			}
		}
		big := Job{ID: "big", Account: "x", Queue: queue("a"), Gang: member(placement.Request{Nodes: 4, GPUsPerNode: 8, Required: "leaf"})}
		if err := e.Submit(big, epoch); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := e.Submit(Job{ID: fmt.Sprintf("b%d", i), Account: "x", Queue: queue("b"), Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, epoch); err != nil {
				t.Fatal(err)
			}
		}
		plan := &Plan{}
		if err := e.ScheduleInto(epoch, plan); err != nil {
			t.Fatal(err)
		}
		if len(plan.Starts) != 6 {
			t.Fatalf("quotas %v: %d started, want 6 (every node in service): %s", quotas, len(plan.Starts), plan.Describe(c, epoch))
		}
		for _, s := range plan.Starts {
			if err := e.Started(s.Job, epoch); err != nil {
				t.Fatal(err)
			}
		}
		allocs[k] = testing.AllocsPerRun(20, func() {
			if err := e.ScheduleInto(epoch, plan); err != nil {
				t.Fatal(err)
			}
		})
		if quotas && e.quota.canUse[0] != -1 {
			t.Fatalf("queue a's use was not asked in the cycle (canUse %d)", e.quota.canUse[0])
		}
	}
	t.Logf("allocations per cycle: %v without quotas, %v with the share gate asking", allocs[0], allocs[1])
	if allocs[1] > allocs[0] {
		t.Errorf("a cycle with the share gate asking allocates %v times, %v without quotas", allocs[1], allocs[0])
	}
}

// TestOpenQueueDecidesAsNone: one queue without limits binds nothing, so
// an engine with it decides as one without queues: over seeded random
// workloads (reservations at depth 4, a third of the jobs without a time
// limit, hold mode on), the same starts on the same GPUs and the same
// reservations, cycle by cycle. (A first version of the reservations'
// quota room counted reserved GPUs against the cluster's total as if in
// use now, and the churn case of BenchmarkScheduleQuotas with one open
// queue started far less than without queues.)
func TestOpenQueueDecidesAsNone(t *testing.T) {
	workloads := 60
	if testing.Short() {
		workloads = 15
	}
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	reservations := 0
	for w := range workloads {
		var plans [2][]*Plan
		for k, open := range []bool{false, true} {
			r := rand.New(rand.NewPCG(uint64(w), 31))
			cfg := DefaultConfig()
			cfg.FairShare.HalfLife = time.Hour
			cfg.Hold.MinGPUs = 16
			if open {
				cfg.Quotas.Queues = []QueueSpec{{Name: "all", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited}}
			}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
			if err != nil {
				t.Fatal(err)
			}
			jobs := randomWorkload(r, c, 40, true)
			dur := map[string]time.Duration{}
			for i := range jobs {
				if open {
					jobs[i].Queue = "all"
				}
				if i%3 == 0 {
					dur[jobs[i].ID], jobs[i].TimeLimit = jobs[i].TimeLimit, 0
				}
			}
			d := newDriver(t, e, jobs, dur)
			d.run(time.Time{})
			plans[k] = d.plans
		}
		if len(plans[0]) != len(plans[1]) {
			t.Fatalf("workload %d: %d cycles without queues, %d with one open queue", w, len(plans[0]), len(plans[1]))
		}
		for i, p := range plans[0] {
			q := plans[1][i]
			if diff := cmp.Diff(p.Starts, q.Starts); diff != "" {
				t.Fatalf("workload %d, cycle at %v: starts differ (-none +open):\n%s", w, p.Time.Sub(epoch), diff)
			}
			if diff := cmp.Diff(p.Reservations, q.Reservations); diff != "" {
				t.Fatalf("workload %d, cycle at %v: reservations differ (-none +open):\n%s", w, p.Time.Sub(epoch), diff)
			}
			reservations += len(p.Reservations)
		}
	}
	if reservations < workloads {
		t.Fatalf("too easy: %d reservations over %d workloads", reservations, workloads)
	}
}

// TestLateQuotaBlamesOnlyItsQueue: a job of an unlimited queue (o) that
// started late does not move a reservation of queue q that q's quota
// refuses for another reason (X of q runs past its time limit): lateQuota
// blames only late jobs under the queue where the check binds. R is
// given up for quota at its start, blamed on q, and never moved for L's
// late start (a first version moved R to L's end, blamed on L, and then
// dropped it anyway, its nodes idle meanwhile).
func TestLateQuotaBlamesOnlyItsQueue(t *testing.T) {
	e := quotaEngine2(t, 10, 16)
	pinned := func(id, queue string, lo, hi, nodes int, limit time.Duration) Job {
		s := e.c.NewNodeSet()
		for n := lo; n < hi; n++ {
			s.Set(uint(n))
		}
		return Job{ID: id, Account: "a", Queue: queue, TimeLimit: limit, Gang: member(placement.Request{Nodes: nodes, GPUsPerNode: 8, Allowed: s})}
	}
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	var moves []Move
	run := func(d time.Duration) {
		moves = append(moves, startAll(t, e, at(d)).Moves...)
	}
	require.NoError(t, e.Submit(pinned("B", "o", 0, 7, 7, time.Hour), epoch))
	require.NoError(t, e.Submit(pinned("K", "o", 7, 8, 1, 25*time.Minute), epoch))
	require.NoError(t, e.Submit(pinned("M", "o", 8, 10, 2, 10*time.Minute), epoch))
	run(0)
	require.NoError(t, e.Submit(pinned("L", "o", 8, 10, 2, 45*time.Minute), at(30*time.Second)))
	run(30 * time.Second) // L reserved from M's end, 10 minutes
	require.NoError(t, e.Finished("M", at(10*time.Minute)))
	run(20 * time.Minute) // the host runs late: L starts 10 minutes late
	require.NoError(t, e.Submit(pinned("R", "q", 0, 7, 2, time.Hour), at(21*time.Minute)))
	run(21 * time.Minute) // R reserved from B's end, 1h
	require.NoError(t, e.Finished("K", at(25*time.Minute)))
	require.NoError(t, e.Submit(pinned("X", "q", 7, 8, 1, 30*time.Minute), at(25*time.Minute)))
	run(25 * time.Minute) // X of q starts; it will run past its limit
	require.NoError(t, e.Finished("B", at(time.Hour)))
	run(time.Hour)
	var dropped bool
	for _, m := range moves {
		require.NotEqualf(t, "L", m.By, "a move blamed on L, whose queue has no limit: %+v", m)
		if m.Job == "R" && m.Cause == CauseQuota && m.To.IsZero() {
			dropped = true
		}
	}
	require.True(t, dropped, "R was not given up for quota at its start: %+v", moves)
}

// quotaRig returns an engine with checks after every event on one leaf
// of nodes 8-GPU nodes with queues, its config changed by tune when not
// nil, and a job maker: id of queue, nodes of [lo, hi) (Allowed), an
// elastic gang down to min pods when min > 0.
func quotaRig(t *testing.T, nodes int, queues []QueueSpec, tune func(*Config)) (*Engine, func(id, queue string, lo, hi, nodes, min int, p preempt.Policy, limit time.Duration) Job) {
	t.Helper()
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: nodes, GPUsPerNode: 8})
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas = QuotaConfig{Queues: queues}
	if tune != nil {
		tune(&cfg)
	}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	return e, func(id, queue string, lo, hi, nodes, min int, p preempt.Policy, limit time.Duration) Job {
		s := c.NewNodeSet()
		for n := lo; n < hi; n++ {
			s.Set(uint(n))
		}
		return Job{ID: id, Account: "a", Queue: queue, TimeLimit: limit, Preemption: p,
			Gang: gang.Spec{Members: []gang.Member{{Name: "m", Min: min, Request: placement.Request{Nodes: nodes, GPUsPerNode: 8, Allowed: s}}}}}
	}
}

// guaranteedPair returns quotaRig's engine on four nodes with two
// queues, q and o, each guaranteed 16 GPUs and free to borrow, and its
// job maker for gangs on all the nodes of [lo, hi).
func guaranteedPair(t *testing.T) (*Engine, func(id, queue string, lo, hi, min int, p preempt.Policy, limit time.Duration) Job) {
	e, job := quotaRig(t, 4, []QueueSpec{
		{Name: "q", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		{Name: "o", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
	}, nil)
	return e, func(id, queue string, lo, hi, min int, p preempt.Policy, limit time.Duration) Job {
		return job(id, queue, lo, hi, hi-lo, min, p, limit)
	}
}

// TestNoBorrowReservationKeepsItsGuarantee: R, which may not be
// preempted and so runs only within queue q's guarantee (16 GPUs), is
// reserved on nodes 0-1 from B's end. S, of the same queue and free to
// borrow, could start now on nodes 2-3, but beside R it would take q past
// its guarantee: it waits, told of R, and R starts at its planned start.
// Before, S started (it may borrow, and the cluster had room), and R,
// due, found q's guarantee in use and gave its reservation up for quota.
func TestNoBorrowReservationKeepsItsGuarantee(t *testing.T) {
	e, job := guaranteedPair(t)
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	require.NoError(t, e.Submit(job("B", "o", 0, 2, 0, preempt.Requeue, time.Hour), epoch))
	startAll(t, e, epoch)
	require.NoError(t, e.Submit(job("R", "q", 0, 2, 0, preempt.Never, time.Hour), at(time.Minute)))
	p := startAll(t, e, at(time.Minute))
	require.Len(t, p.Reservations, 1, p.Describe(e.c, epoch))
	require.Equal(t, "R", p.Reservations[0].Job)
	require.NoError(t, e.Submit(job("S", "q", 2, 4, 0, preempt.Requeue, 3*time.Hour), at(2*time.Minute)))
	requireQuotaWait(t, e, startAll(t, e, at(2*time.Minute)), "S", "reserved for job R", "cannot be preempted", "queue q: 16 of 16 guaranteed GPUs in use")
	require.NoError(t, e.Finished("B", at(time.Hour)))
	// R runs; S may borrow now that no reservation of q needs the room.
	requireStartsOnly(t, e, startAll(t, e, at(time.Hour)), "R", "S")
}

// TestNoBorrowReservationLimits: what a reservation for a job that may
// not be preempted keeps from the others of its queue (keptOwn), q
// guaranteed 16 GPUs and o 32, both free to borrow:
//   - a job that would start once it runs borrows beside it and takes
//     nothing from it: R (nodes 0-1) is reserved from B's end, 1h, to 3h;
//     J (nodes 2-3, free to borrow) is reserved from C's end, 2h;
//   - an elastic one runs within the guarantee, its room kept at its
//     minimum: R, four nodes down to one, is reserved from B's end; S,
//     one node, starts now beside it, q within its guarantee with R at
//     its minimum, and R starts at B's end on what q's quota takes;
//   - one that is due and late is ahead of a borrower of its queue due
//     after it (see the subtest).
//
// A review found both refused by the first version: J was refused a
// reservation ("at its planned start, counting the 16 GPUs reserved for
// job R, ..."), and S waited for quota until R had started.
func TestNoBorrowReservationLimits(t *testing.T) {
	rig := func(t *testing.T) (*Engine, func(id, queue string, lo, hi, nodes, min int, p preempt.Policy, limit time.Duration) Job) {
		return quotaRig(t, 6, []QueueSpec{
			{Name: "q", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
			{Name: "o", Guarantee: 32, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		}, func(cfg *Config) { cfg.ReservationMinGPUs = 0 })
	}
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	t.Run("after its start", func(t *testing.T) {
		e, job := rig(t)
		require.NoError(t, e.Submit(job("B", "o", 0, 2, 2, 0, preempt.Requeue, time.Hour), epoch))
		require.NoError(t, e.Submit(job("C", "o", 2, 4, 2, 0, preempt.Requeue, 2*time.Hour), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("R", "q", 0, 2, 2, 0, preempt.Never, 2*time.Hour), at(time.Minute)))
		startAll(t, e, at(time.Minute))
		require.NoError(t, e.Submit(job("J", "q", 2, 4, 1, 0, preempt.Requeue, time.Hour), at(2*time.Minute)))
		p := startAll(t, e, at(2*time.Minute))
		reserved := reservedStarts(p)
		require.Equal(t, map[string]time.Time{"R": at(time.Hour), "J": at(2 * time.Hour)}, reserved, p.Describe(e.c, epoch))
	})
	t.Run("due and late, ahead of a due borrower", func(t *testing.T) {
		// R is due at 1h, but B runs past its limit on R's nodes. X, of
		// q and free to borrow, reserved on node 2 from C's end (1h5m,
		// when R should be running), is due too: it waits for R, which
		// starts once B is gone, and then X beside it. (At its own
		// planned start a job counts no reservation but the due ones of
		// its queue for jobs that cannot be preempted.)
		e, job := rig(t)
		require.NoError(t, e.Submit(job("B", "o", 0, 2, 2, 0, preempt.Requeue, time.Hour), epoch))
		require.NoError(t, e.Submit(job("C", "o", 2, 3, 1, 0, preempt.Requeue, 65*time.Minute), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("R", "q", 0, 2, 2, 0, preempt.Never, time.Hour), at(time.Minute)))
		require.NoError(t, e.Submit(job("X", "q", 2, 3, 1, 0, preempt.Requeue, time.Hour), at(time.Minute)))
		p := startAll(t, e, at(time.Minute))
		reserved := reservedStarts(p)
		require.Equal(t, map[string]time.Time{"R": at(time.Hour), "X": at(65 * time.Minute)}, reserved, p.Describe(e.c, epoch))
		require.NoError(t, e.Finished("C", at(65*time.Minute)))
		p = startAll(t, e, at(70*time.Minute))
		require.Empty(t, p.Starts, p.Describe(e.c, epoch))
		require.NoError(t, e.Finished("B", at(80*time.Minute)))
		p = startAll(t, e, at(80*time.Minute))
		require.ElementsMatch(t, []string{"R", "X"}, startedIDs(p), p.Describe(e.c, epoch))
		for _, m := range p.Moves {
			require.NotEqual(t, CauseQuota, m.Cause, p.Describe(e.c, epoch))
		}
	})
	t.Run("two due, each after the one due before it", func(t *testing.T) {
		// X and R may not be preempted, 16 GPUs each, the whole of q's
		// guarantee: due at 1h and 2h, both late (B and C run past their
		// limits). X, due first, starts once its GPUs are free; R waits
		// for it to end. (A review found each counting the other, and
		// neither starting.)
		e, job := rig(t)
		require.NoError(t, e.Submit(job("B", "o", 0, 2, 2, 0, preempt.Requeue, time.Hour), epoch))
		require.NoError(t, e.Submit(job("C", "o", 2, 4, 2, 0, preempt.Requeue, 2*time.Hour), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("X", "q", 0, 2, 2, 0, preempt.Never, time.Hour), at(time.Minute)))
		require.NoError(t, e.Submit(job("R", "q", 2, 4, 2, 0, preempt.Never, time.Hour), at(time.Minute)))
		startAll(t, e, at(time.Minute))
		require.NoError(t, e.Finished("B", at(140*time.Minute)))
		require.NoError(t, e.Finished("C", at(140*time.Minute)))
		p := startAll(t, e, at(140*time.Minute))
		require.Len(t, p.Starts, 1, p.Describe(e.c, epoch))
		require.Equal(t, "X", p.Starts[0].Job)
		// R moves to X's end, blamed on X's late start; not dropped.
		require.Equal(t, []Move{{Job: "R", From: at(2 * time.Hour), To: at(200 * time.Minute), Cause: CauseLateStart, By: "X"}}, p.Moves, p.Describe(e.c, epoch))
		require.NoError(t, e.Finished("X", at(200*time.Minute)))
		requireStartsOnly(t, e, startAll(t, e, at(200*time.Minute)), "R")
	})
	t.Run("elastic, at its minimum", func(t *testing.T) {
		e, job := rig(t)
		require.NoError(t, e.Submit(job("B", "o", 0, 4, 4, 0, preempt.Requeue, time.Hour), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("R", "q", 0, 4, 4, 1, preempt.Never, 2*time.Hour), at(time.Minute)))
		p := startAll(t, e, at(time.Minute))
		require.Len(t, p.Reservations, 1, p.Describe(e.c, epoch))
		require.NoError(t, e.Submit(job("S", "q", 4, 6, 1, 0, preempt.Requeue, 3*time.Hour), at(2*time.Minute)))
		requireStartsOnly(t, e, startAll(t, e, at(2*time.Minute)), "S")
		require.NoError(t, e.Finished("B", at(time.Hour)))
		p = startAll(t, e, at(time.Hour))
		requireStartsOnly(t, e, p, "R")
		require.Equal(t, 8, p.Starts[0].Allocation.GPUs(), p.Describe(e.c, epoch))
	})
}

// reservedStarts returns plan p's reservations' starts by job.
func reservedStarts(p *Plan) map[string]time.Time {
	m := map[string]time.Time{}
	for _, r := range p.Reservations {
		m[r.Job] = r.Start
	}
	return m
}

// requireQuotaWait fails unless plan p starts nothing and job id waits
// for quota with a reason that holds every one of parts.
func requireQuotaWait(t *testing.T, e *Engine, p *Plan, id string, parts ...string) {
	t.Helper()
	require.Empty(t, p.Starts, p.Describe(e.c, epoch))
	w := waitingOf(p, id)
	require.NotNil(t, w, p.Describe(e.c, epoch))
	require.Equal(t, WaitQuota, w.Code, p.Describe(e.c, epoch))
	for _, part := range parts {
		require.Contains(t, w.Detail, part)
	}
}

// requireStartsOnly fails unless plan p starts exactly the jobs ids and
// moves no reservation.
func requireStartsOnly(t *testing.T, e *Engine, p *Plan, ids ...string) {
	t.Helper()
	require.Empty(t, p.Moves, p.Describe(e.c, epoch))
	require.ElementsMatch(t, ids, startedIDs(p), p.Describe(e.c, epoch))
}

// startedIDs returns the jobs p starts, in its order.
func startedIDs(p *Plan) []string {
	var started []string
	for _, s := range p.Starts {
		started = append(started, s.Job)
	}
	return started
}

// TestElasticGangReclaimsAtItsMinimum: o borrows all of q's guarantee
// (16 GPUs) with one gang on the four nodes. E, elastic from four pods
// (32 GPUs, beyond q's guarantee) down to two (16, within it), reclaims
// the guarantee for its minimum: o's gang is preempted, and E starts on
// the two nodes claimed. Before, only a gang whose full size the
// guarantee covered reclaimed, and E waited for o's gang to end.
func TestElasticGangReclaimsAtItsMinimum(t *testing.T) {
	e, job := guaranteedPair(t)
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	require.NoError(t, e.Submit(job("O", "o", 0, 4, 0, preempt.Requeue, 0), epoch))
	startAll(t, e, epoch)
	require.NoError(t, e.Submit(job("E", "q", 0, 4, 2, preempt.Requeue, time.Hour), at(time.Minute)))
	p := startAll(t, e, at(time.Minute))
	require.Len(t, p.Preemptions, 1, p.Describe(e.c, epoch))
	require.Equal(t, "O", p.Preemptions[0].Victim)
	require.Contains(t, p.Preemptions[0].Reason, "reclaimed for job E of queue q, below its guarantee (0 of 16 GPUs in use, the job needs 16)")
	w := waitingOf(p, "E")
	require.NotNil(t, w, p.Describe(e.c, epoch))
	require.Equal(t, WaitPreempting, w.Code)
	require.NoError(t, e.Finished("O", at(2*time.Minute)))
	p = startAll(t, e, at(2*time.Minute))
	require.Len(t, p.Starts, 1, p.Describe(e.c, epoch))
	require.Equal(t, "E", p.Starts[0].Job)
	require.Equal(t, 16, p.Starts[0].Allocation.GPUs(), p.Describe(e.c, epoch))
}

// nestedQueues returns quotaRig's engine on eight nodes with queue A
// (32 GPUs, no borrowing above it) over q (guaranteed 16) and o (none),
// and z (guaranteed 32) beside A, its config changed by tune when not
// nil; and its job maker for rigid gangs.
func nestedQueues(t *testing.T, tune func(*Config)) (*Engine, func(id, queue string, lo, hi, nodes int, p preempt.Policy, limit time.Duration) Job) {
	e, job := quotaRig(t, 8, []QueueSpec{
		{Name: "A", Guarantee: 32, Maximum: Unlimited, BorrowingLimit: 0, LendingLimit: Unlimited},
		{Name: "q", Parent: "A", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		{Name: "o", Parent: "A", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		{Name: "z", Guarantee: 32, Maximum: Unlimited, BorrowingLimit: 0, LendingLimit: Unlimited},
	}, tune)
	return e, func(id, queue string, lo, hi, nodes int, p preempt.Policy, limit time.Duration) Job {
		return job(id, queue, lo, hi, nodes, 0, p, limit)
	}
}

// TestOwnQueueReservationsDecideBorrowing: whether a job would borrow,
// and so must leave room for other queues' reservations too, is judged
// with its own queue's reservations counted. Queue A (32 GPUs, no
// borrowing above it) holds q (guaranteed 16) and o (guaranteed none).
// R (q, 16 GPUs) and X (o, 8) are reserved from the end of z's jobs on
// their nodes. S (q, 16 GPUs) could start now on free nodes: alone it is
// within q's guarantee, but beside R it borrows, and then beside X too A
// has no room. It waits for quota (A's), and R and X start as planned. Before, S
// was judged within its guarantee, X was not counted, S started, and X
// gave its reservation up for A's pool at its start.
func TestOwnQueueReservationsDecideBorrowing(t *testing.T) {
	e, job := nestedQueues(t, nil)
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	require.NoError(t, e.Submit(job("B1", "z", 0, 2, 2, preempt.Never, time.Hour), epoch))
	require.NoError(t, e.Submit(job("B2", "z", 2, 3, 1, preempt.Never, time.Hour), epoch))
	startAll(t, e, epoch)
	require.NoError(t, e.Submit(job("R", "q", 0, 2, 2, preempt.Requeue, time.Hour), at(time.Minute)))
	require.NoError(t, e.Submit(job("X", "o", 2, 3, 1, preempt.Requeue, time.Hour), at(time.Minute)))
	p := startAll(t, e, at(time.Minute))
	require.Len(t, p.Reservations, 2, p.Describe(e.c, epoch))
	require.NoError(t, e.Submit(job("S", "q", 4, 6, 2, preempt.Requeue, 3*time.Hour), at(2*time.Minute)))
	requireQuotaWait(t, e, startAll(t, e, at(2*time.Minute)), "S", "nothing left to borrow: queue A's 32 GPUs")
	require.NoError(t, e.Finished("B1", at(time.Hour)))
	require.NoError(t, e.Finished("B2", at(time.Hour)))
	requireStartsOnly(t, e, startAll(t, e, at(time.Hour)), "R", "X")
}

// TestGuaranteeBorrowedKeepsReservation: a job within its queue's
// guarantee is not refused a reservation because a parent's pool, which
// another queue borrows, has no room at its start: reclaim gets it in
// there. Queue A (32 GPUs, no borrowing above it) holds q (guaranteed 16)
// and o (none), whose gang O borrows 24 of A's GPUs with no time limit.
// R and J, of q, 8 GPUs each, may run only on nodes 0 and 1, which B (of
// queue z) holds for an hour, so no reclaim can place them now. R is
// reserved from B's end; J too, though A's pool counts O, R and J there
// (40 of 32): within q's guarantee it reclaims O's GPUs then. K, of z,
// ranked below, may run on either node: it is reserved after them. At
// B's end one of R and J starts, the other reclaims from O and starts
// once O has gone. Before, the second of R and J was refused a
// reservation ("nothing left to borrow: queue A's 32 GPUs"), K was
// reserved on its node from B's end and took it for two hours.
//
// With a grace for victims, the claim's job runs past its planned end,
// where K is reserved on its node: K moves to its end (a late start),
// and the claim is made on the planned node. Before, K's reservation kept
// the reclaim search off it, so that the reclaim found no placement and
// the due job gave its reservation up for quota.
func TestGuaranteeBorrowedKeepsReservation(t *testing.T) {
	for _, tc := range []struct{ lim, klim, grace time.Duration }{
		{time.Hour, 2 * time.Hour, 0},
		{time.Hour, 2 * time.Hour, 5 * time.Minute},
		// A grace longer than the limits: K, reserved from R's and J's
		// end, ends before the claim is due, and moves all the same (the
		// claim holds its GPUs from now: a review found K left on them).
		{10 * time.Minute, 5 * time.Minute, 30 * time.Minute},
	} {
		lim, klim, grace := tc.lim, tc.klim, tc.grace
		t.Run(fmt.Sprintf("limits=%v,%v/grace=%v", lim, klim, grace), func(t *testing.T) {
			e, job := nestedQueues(t, func(cfg *Config) {
				cfg.ReservationMinGPUs = 0
				cfg.Preemption.Grace = grace
			})
			at := func(d time.Duration) time.Time { return epoch.Add(d) }
			require.NoError(t, e.Submit(job("B", "z", 0, 2, 2, preempt.Never, time.Hour), epoch))
			require.NoError(t, e.Submit(job("O", "o", 2, 5, 3, preempt.Requeue, 0), epoch))
			startAll(t, e, epoch)
			require.NoError(t, e.Submit(job("R", "q", 0, 1, 1, preempt.Requeue, lim), at(time.Minute)))
			require.NoError(t, e.Submit(job("J", "q", 1, 2, 1, preempt.Requeue, lim), at(time.Minute)))
			startAll(t, e, at(time.Minute))
			require.NoError(t, e.Submit(job("K", "z", 0, 2, 1, preempt.Never, klim), at(2*time.Minute)))
			p := startAll(t, e, at(2*time.Minute))
			reserved := reservedStarts(p)
			require.Equal(t, map[string]time.Time{"R": at(time.Hour), "J": at(time.Hour), "K": at(time.Hour + lim)}, reserved, p.Describe(e.c, epoch))
			require.NoError(t, e.Finished("B", at(time.Hour)))
			p = startAll(t, e, at(time.Hour))
			// One of R and J starts; A's pool then has no room for the
			// other, which reclaims O's GPUs.
			require.Len(t, p.Starts, 1, p.Describe(e.c, epoch))
			require.Len(t, p.Preemptions, 1, p.Describe(e.c, epoch))
			require.Equal(t, "O", p.Preemptions[0].Victim)
			first, second := p.Starts[0].Job, p.Preemptions[0].Preemptor
			require.ElementsMatch(t, []string{"R", "J"}, []string{first, second})
			if grace > 0 {
				require.Equal(t, []Move{{Job: "K", From: at(time.Hour + lim), To: at(time.Hour + grace + lim), Cause: CauseLateStart, By: second}}, p.Moves, p.Describe(e.c, epoch))
			} else {
				require.Empty(t, p.Moves, p.Describe(e.c, epoch))
			}
			require.NoError(t, e.Finished("O", at(time.Hour+grace)))
			p = startAll(t, e, at(time.Hour+grace))
			require.Len(t, p.Starts, 1, p.Describe(e.c, epoch))
			require.Equal(t, second, p.Starts[0].Job)
			require.Empty(t, p.Moves, p.Describe(e.c, epoch))
		})
	}
}

// TestGuardedReason: a reason that binds at a parent says that the other
// queues under it use their guarantees only where they do take the room
// the job lacks (quotaState.guarded). A (32 GPUs, no borrowing above it)
// holds q and o, each guaranteed 16. A review found the note where q's
// own gang took all of A and o used nothing.
func TestGuardedReason(t *testing.T) {
	const note = "the other queues under queue A use their guarantees"
	for _, tc := range []struct {
		name  string
		other bool // o runs a gang of 16 GPUs, q one of 16; else q one of 32
		want  bool
	}{
		{"q's own gang takes A", false, false},
		{"o uses its guarantee", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, job := quotaRig(t, 6, []QueueSpec{
				{Name: "A", Guarantee: 32, Maximum: Unlimited, BorrowingLimit: 0, LendingLimit: Unlimited},
				{Name: "q", Parent: "A", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
				{Name: "o", Parent: "A", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
			}, nil)
			if tc.other {
				require.NoError(t, e.Submit(job("O", "o", 0, 2, 2, 0, preempt.Requeue, time.Hour), epoch))
				require.NoError(t, e.Submit(job("Q1", "q", 2, 4, 2, 0, preempt.Requeue, time.Hour), epoch))
			} else {
				require.NoError(t, e.Submit(job("Q1", "q", 0, 4, 4, 0, preempt.Requeue, time.Hour), epoch))
			}
			startAll(t, e, epoch)
			require.NoError(t, e.Submit(job("Q2", "q", 4, 5, 1, 0, preempt.Requeue, time.Hour), epoch.Add(time.Minute)))
			p := startAll(t, e, epoch.Add(time.Minute))
			w := waitingOf(p, "Q2")
			require.NotNil(t, w, p.Describe(e.c, epoch))
			require.Equal(t, WaitQuota, w.Code, p.Describe(e.c, epoch))
			require.Equal(t, tc.want, strings.Contains(w.Detail, note), w.Detail)
		})
	}
}

// TestQuotaAheadBlame: A, of queue q (at most 8 GPUs), is reserved on node
// 0 from X's end (1h); C, of q, starts on node 1 with a limit that ends
// before A's start; B is reserved on both nodes from A's end (2h). C runs
// past its limit, so at a late cycle (1h5m) A's GPUs are free but q has no
// room for it: A holds node 0 on from the cycle's time, B moves behind it,
// and A then gives its reservation up for quota. B's move is blamed on A's
// quota (CauseQuotaAhead), not on a late start of A, which never started
// (before, "late start A"); the next cycle moves B earlier again.
func TestQuotaAheadBlame(t *testing.T) {
	e, job := quotaRig(t, 2, []QueueSpec{
		{Name: "q", Guarantee: 8, Maximum: 8, BorrowingLimit: 0, LendingLimit: Unlimited},
		{Name: "o", Guarantee: 8, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
	}, func(cfg *Config) { cfg.ReservationMinGPUs = 0 })
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	require.NoError(t, e.Submit(job("X", "o", 0, 1, 1, 0, preempt.Requeue, time.Hour), epoch))
	requireStartsOnly(t, e, startAll(t, e, epoch), "X")
	require.NoError(t, e.Submit(job("A", "q", 0, 1, 1, 0, preempt.Requeue, time.Hour), at(time.Minute)))
	startAll(t, e, at(time.Minute))
	require.NoError(t, e.Submit(job("C", "q", 1, 2, 1, 0, preempt.Requeue, 50*time.Minute), at(2*time.Minute)))
	requireStartsOnly(t, e, startAll(t, e, at(2*time.Minute)), "C")
	require.NoError(t, e.Submit(job("B", "o", 0, 2, 2, 0, preempt.Requeue, time.Hour), at(3*time.Minute)))
	p := startAll(t, e, at(3*time.Minute))
	require.Equal(t, map[string]time.Time{"A": at(time.Hour), "B": at(2 * time.Hour)}, reservedStarts(p), p.Describe(e.c, epoch))

	require.NoError(t, e.Finished("X", at(time.Hour)))
	p = startAll(t, e, at(65*time.Minute))
	require.Empty(t, p.Starts, p.Describe(e.c, epoch))
	require.Equal(t, []Move{
		{Job: "B", From: at(2 * time.Hour), To: at(2*time.Hour + 5*time.Minute), Cause: CauseQuotaAhead, By: "A"},
		{Job: "A", From: at(time.Hour), Cause: CauseQuota, By: "q"},
	}, p.Moves, p.Describe(e.c, epoch))
	require.Contains(t, p.Describe(e.c, epoch), "moved B from t+2h0m0s to t+2h5m0s: quota ahead A")
	require.Equal(t, WaitQuota, waitingOf(p, "A").Code, p.Describe(e.c, epoch))

	p = startAll(t, e, at(70*time.Minute))
	require.Empty(t, p.Moves, p.Describe(e.c, epoch))
	require.Equal(t, map[string]time.Time{"B": at(70 * time.Minute)}, reservedStarts(p), p.Describe(e.c, epoch))
}

// TestQuotaAheadMovedByALateStart: A, of queue q (at most 8 GPUs), is
// reserved on node 0 from X's end (45m); C, of q, reserved on node 1 from
// Y's end (10m) with a limit that ends before A's start, is confirmed 10
// minutes late, so it still runs at 45m; B is reserved on node 0 from A's
// end. At 45m A's GPUs are free but q has no room for it: it moves to C's
// end, blamed on C's late start, and B behind it is a chain of that move
// ("late start A"), not of A's quota (it said "quota ahead A": the mark
// that A's quota held it back outlived A's move; found by a helper's
// probe).
func TestQuotaAheadMovedByALateStart(t *testing.T) {
	e, job := quotaRig(t, 3, []QueueSpec{
		{Name: "q", Guarantee: 8, Maximum: 8, BorrowingLimit: 0, LendingLimit: Unlimited},
		{Name: "o", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
	}, func(cfg *Config) { cfg.ReservationMinGPUs = 0 })
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	require.NoError(t, e.Submit(job("X", "o", 0, 1, 1, 0, preempt.Never, 45*time.Minute), epoch))
	require.NoError(t, e.Submit(job("Y", "o", 1, 2, 1, 0, preempt.Never, 10*time.Minute), epoch))
	requireStartsOnly(t, e, startAll(t, e, epoch), "X", "Y")
	require.NoError(t, e.Submit(job("A", "q", 0, 1, 1, 0, preempt.Requeue, time.Hour), at(time.Minute)))
	startAll(t, e, at(time.Minute))
	require.NoError(t, e.Submit(job("C", "q", 1, 2, 1, 0, preempt.Requeue, 30*time.Minute), at(2*time.Minute)))
	startAll(t, e, at(2*time.Minute))
	require.NoError(t, e.Submit(job("B", "o", 0, 1, 1, 0, preempt.Requeue, time.Hour), at(3*time.Minute)))
	startAll(t, e, at(3*time.Minute))
	require.NoError(t, e.Finished("Y", at(10*time.Minute)))
	p, err := e.Schedule(at(10 * time.Minute))
	require.NoError(t, err)
	require.Equal(t, []string{"C"}, startedIDs(p), p.Describe(e.c, epoch))
	require.Equal(t, map[string]time.Time{"A": at(45 * time.Minute), "B": at(105 * time.Minute)}, reservedStarts(p), p.Describe(e.c, epoch))
	require.NoError(t, e.Started("C", at(20*time.Minute))) // confirmed late

	require.NoError(t, e.Finished("X", at(45*time.Minute)))
	p = startAll(t, e, at(45*time.Minute))
	require.Empty(t, p.Starts, p.Describe(e.c, epoch))
	require.Equal(t, []Move{
		{Job: "A", From: at(45 * time.Minute), To: at(50 * time.Minute), Cause: CauseLateStart, By: "C"},
		{Job: "B", From: at(105 * time.Minute), To: at(110 * time.Minute), Cause: CauseLateStart, By: "A"},
	}, p.Moves, p.Describe(e.c, epoch))
}

// TestGuardedClauseCountsUseNotKept: queue a, under lab, keeps its whole
// guarantee (16 GPUs) idle, lending nothing; b borrows the rest of lab's
// 32. A job of b that finds nothing left to borrow was also told "the
// other queues under queue lab use their guarantees", though a uses none:
// the GPUs a keeps idle counted as its use. The reason names the lending
// limit, and the clause only when the other queues' GPUs in use are what
// the job lacks (found by a helper's probe; testdata/quota_lending.txt
// keeps the clause once serving runs its guarantee).
func TestGuardedClauseCountsUseNotKept(t *testing.T) {
	U := Unlimited
	e, job := quotaRig(t, 8, []QueueSpec{
		{Name: "lab", Guarantee: 32, Maximum: U, BorrowingLimit: 0, LendingLimit: U},
		{Name: "a", Parent: "lab", Guarantee: 16, Maximum: U, BorrowingLimit: U, LendingLimit: 0},
		{Name: "b", Parent: "lab", Maximum: U, BorrowingLimit: U, LendingLimit: U},
	}, nil)
	require.NoError(t, e.Submit(job("R", "b", 0, 8, 2, 0, preempt.Requeue, time.Hour), epoch))
	requireStartsOnly(t, e, startAll(t, e, epoch), "R")
	require.NoError(t, e.Submit(job("W", "b", 0, 8, 1, 0, preempt.Requeue, time.Hour), epoch.Add(time.Minute)))
	p := startAll(t, e, epoch.Add(time.Minute))
	requireQuotaWait(t, e, p, "W", "16 of them kept idle by queues that lend no more")
	require.NotContains(t, waitingOf(p, "W").Detail, "use their guarantees", p.Describe(e.c, epoch))
}

// TestQuotaShareCappedByPool: a queue confined to a node pool is given
// no weighted share above its pool's GPUs, which it could never use.
// Queues a (a pool of 2 of the 8 nodes) and b (any node), equal weights,
// no guarantees, eight 1-node jobs each, a's first: a fills its pool and
// b takes the other 6 nodes. Before, a's share was half the cluster (32
// GPUs); a, at 16 with jobs waiting for its own nodes, counted as a
// sibling waiting below its share, and b waited at 32 with 16 GPUs outside
// a's pool idle ("... past its weighted share of 32 (weight 1) while queue
// a waits below its own"). A parent's share is capped by its children's.
func TestQuotaShareCappedByPool(t *testing.T) {
	c := opsCluster(t) // 8 nodes of 8 GPUs
	U := Unlimited
	q := func(name, parent, nodes string) QueueSpec {
		return QueueSpec{Name: name, Parent: parent, BorrowingLimit: U, LendingLimit: U, Maximum: U, Nodes: nodes}
	}
	two := opsNodeNames(c, 2)
	for _, tc := range []struct {
		name   string
		queues []QueueSpec
		a      string // the queue a's jobs are submitted to
	}{
		{"a pool", []QueueSpec{q("a", "", two), q("b", "", "")}, "a"},
		{"a parent whose child has a pool", []QueueSpec{q("p", "", ""), q("a", "p", two), q("b", "", "")}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Quotas.Queues = tc.queues
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
			require.NoError(t, err)
			for i := range 8 {
				require.NoError(t, e.Submit(Job{ID: fmt.Sprintf("a%d", i), Account: "x", Queue: tc.a, TimeLimit: time.Hour,
					Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, epoch))
			}
			for i := range 8 {
				require.NoError(t, e.Submit(Job{ID: fmt.Sprintf("b%d", i), Account: "x", Queue: "b", TimeLimit: time.Hour,
					Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, epoch.Add(time.Minute)))
			}
			p := startAll(t, e, epoch.Add(time.Minute))
			require.Equal(t, c.TotalGPUs(), e.UsedGPUs(), "GPUs outside a's pool left idle:\n%s", p.Describe(c, epoch))
			for _, s := range e.Queues() {
				if s.Name == "a" || s.Name == "p" {
					require.Equal(t, 16.0, s.Share, "queue %s", s.Name)
				}
			}
		})
	}
}

// TestQuotaShareLessKept: the guarantee a queue keeps idle from lending
// (its lending limit) is no one's weighted share. Queue k keeps its 32
// GPUs (lending limit 0) and runs nothing; a and b, equal weights, no
// guarantees, eight 1-node jobs each, a's first, share the 32 others: 16
// each. Before, a and b were each given half of all 64 GPUs, and a took
// all 32 that could be lent while b, below its share, got none.
func TestQuotaShareLessKept(t *testing.T) {
	c := opsCluster(t) // 64 GPUs
	U := Unlimited
	for _, tc := range []struct {
		name   string
		queues []QueueSpec
	}{
		{"a queue keeps its guarantee", []QueueSpec{{Name: "k", Guarantee: 32, Maximum: U},
			{Name: "a", BorrowingLimit: U, LendingLimit: U, Maximum: U}, {Name: "b", BorrowingLimit: U, LendingLimit: U, Maximum: U}}},
		{"a parent's child keeps its guarantee", []QueueSpec{{Name: "p", Guarantee: 32, LendingLimit: U, Maximum: U}, {Name: "k", Parent: "p", Guarantee: 32, Maximum: U},
			{Name: "a", BorrowingLimit: U, LendingLimit: U, Maximum: U}, {Name: "b", BorrowingLimit: U, LendingLimit: U, Maximum: U}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Quotas.Queues = tc.queues
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
			require.NoError(t, err)
			submitNodeJobs(t, e, epoch, time.Minute, []string{"a", "b"})
			p := startAll(t, e, epoch.Add(time.Minute))
			for _, s := range e.Queues() {
				if s.Name == "a" || s.Name == "b" {
					require.Equal(t, 16, s.Used, "queue %s:\n%s", s.Name, p.Describe(c, epoch))
					require.Equal(t, 16.0, s.Share, "queue %s", s.Name)
				}
			}
		})
	}
}

// TestQuotaShareInService: weighted shares divide the GPUs in service,
// not the cluster's. Half the nodes are drained (or down); a and b, equal
// weights, no guarantees, eight 1-node jobs each, a's first: each takes
// 16 of the 32 GPUs in service, its share. Before, each was given half of
// all 64 GPUs; a took all 32 in service while b, below its share of 32,
// got none. When the nodes return, the shares are 32 each again and b's
// waiting jobs take them.
func TestQuotaShareInService(t *testing.T) {
	c := opsCluster(t) // 8 nodes of 8 GPUs
	U := Unlimited
	for _, out := range []string{"drained", "down"} {
		t.Run(out, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Quotas.Queues = []QueueSpec{{Name: "a", BorrowingLimit: U, LendingLimit: U, Maximum: U},
				{Name: "b", BorrowingLimit: U, LendingLimit: U, Maximum: U}}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
			require.NoError(t, err)
			for n := topology.NodeID(4); n < 8; n++ {
				if out == "drained" {
					require.NoError(t, e.Drain(n, epoch))
				} else {
					_, err := e.NodeDown(n, epoch)
					require.NoError(t, err)
				}
			}
			submitNodeJobs(t, e, epoch, time.Minute, []string{"a", "b"})
			check := func(now time.Time, want int) {
				t.Helper()
				p := startAll(t, e, now)
				for _, s := range e.Queues() {
					require.Equal(t, want, s.Used, "queue %s:\n%s", s.Name, p.Describe(c, epoch))
					require.Equal(t, float64(want), s.Share, "queue %s", s.Name)
				}
			}
			check(epoch.Add(time.Minute), 16)
			for n := topology.NodeID(4); n < 8; n++ {
				if out == "drained" {
					require.NoError(t, e.Resume(n, epoch.Add(2*time.Minute)))
				} else {
					require.NoError(t, e.NodeUp(n, epoch.Add(2*time.Minute)))
				}
			}
			check(epoch.Add(2*time.Minute), 32)
		})
	}
}

// TestQuotaShareCappedByPoolInService: a queue's share is capped by the
// GPUs of its pool in service. Queue a is confined to nodes 0-3, two of
// them drained; b may use any node; equal weights, eight 1-node jobs
// each. a runs on its 16 GPUs in service and b on the other 32. Before,
// a's cap counted its drained nodes (32): the 48 GPUs in service were
// shared 24 and 24, a waited below its share with jobs that fit its
// nodes, and b was held to 24 GPUs with a node idle.
func TestQuotaShareCappedByPoolInService(t *testing.T) {
	c := opsCluster(t)
	U := Unlimited
	cfg := DefaultConfig()
	cfg.Quotas.Queues = []QueueSpec{{Name: "a", BorrowingLimit: U, LendingLimit: U, Maximum: U, Nodes: opsNodeNames(c, 4)},
		{Name: "b", BorrowingLimit: U, LendingLimit: U, Maximum: U}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	require.NoError(t, err)
	for _, n := range []topology.NodeID{2, 3} {
		require.NoError(t, e.Drain(n, epoch))
	}
	submitNodeJobs(t, e, epoch, time.Minute, []string{"a", "b"})
	p := startAll(t, e, epoch.Add(time.Minute))
	require.Equal(t, 48, e.UsedGPUs(), "GPUs in service left idle:\n%s", p.Describe(c, epoch))
	for _, s := range e.Queues() {
		want := map[string]float64{"a": 16, "b": 32}[s.Name]
		require.Equal(t, want, s.Share, "queue %s", s.Name)
	}
}

// TestQuotaShareSiblingsOnOnePool: siblings on one pool share its GPUs
// between them. Queues a and b are confined to nodes 0-1 (16 GPUs), c may
// use any node; equal weights, eight 1-node jobs each, a's first. a and
// b together have a share of 16 (8 each), c of the 48 others, and every
// GPU is used. Before, a and b were each capped by the whole pool (16
// each, 32 together, of which they could use 16), so c was held at 32
// while b waited below its share: 48 of the 64 GPUs were used. With a
// third sibling d on nodes 1-2, overlapping the pool (its jobs submitted
// before c's), the three share the 24 GPUs of the union.
func TestQuotaShareSiblingsOnOnePool(t *testing.T) {
	c := opsCluster(t)
	U := Unlimited
	two := opsNodeNames(c, 2)
	q := func(name, nodes string) QueueSpec {
		return QueueSpec{Name: name, BorrowingLimit: U, LendingLimit: U, Maximum: U, Nodes: nodes}
	}
	for _, tc := range []struct {
		name   string
		queues []QueueSpec
		shares map[string]float64
	}{
		{"two on one pool", []QueueSpec{q("a", two), q("b", two), q("c", "")},
			map[string]float64{"a": 8, "b": 8, "c": 48}},
		{"a third overlapping", []QueueSpec{q("a", two), q("b", two),
			q("d", c.NodeName(1)+","+c.NodeName(2)), q("c", "")},
			map[string]float64{"a": 8, "b": 8, "c": 40, "d": 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Quotas.Queues = tc.queues
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
			require.NoError(t, err)
			var names []string
			for _, spec := range tc.queues {
				names = append(names, spec.Name)
			}
			submitNodeJobs(t, e, epoch, time.Minute, names)
			p := startAll(t, e, epoch.Add(5*time.Minute))
			require.Equal(t, c.TotalGPUs(), e.UsedGPUs(), "GPUs left idle:\n%s", p.Describe(c, epoch))
			for _, s := range e.Queues() {
				require.InDelta(t, tc.shares[s.Name], s.Share, 1e-9, "queue %s", s.Name)
			}
		})
	}
}

// TestQuotaShareCoversKeptGuarantee: a parent's weighted share covers
// the guarantee a child keeps idle from lending as well as its other
// children's demand. Parent p guarantees 32 GPUs; its child k keeps its
// 16 (lending limit 0) and runs nothing; its children a and b, no
// guarantees, have two 8-GPU jobs each (a's first), and c, a top queue,
// eight. a and b each run 16 (p borrows 16 above its guarantee, as its
// weight gives it against c). Before, p's share was its demand within
// its guarantee (32), k's kept 16 took half of it, a and b were given 8
// each, and a was held to 8 ("past its weighted share of 8 while queue b
// waits below its own") while b, tested after a had stopped, ran 16.
// With p's Maximum at 32, what a and b use there, the shares are the
// same: a maximum bounds use, and k's guarantee kept idle is not use.
// With p's need (use plus kept) capped by its maximum, p's share fell to
// 16 and a was held to 8 while b ran 16 (a review's input).
func TestQuotaShareCoversKeptGuarantee(t *testing.T) {
	c := opsCluster(t)
	U := Unlimited
	for _, tc := range []struct {
		name string
		max  int // p's Maximum
	}{{"no maximum", U}, {"p's maximum at what a and b use", 32}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Quotas.Queues = []QueueSpec{
				{Name: "p", Guarantee: 32, BorrowingLimit: U, LendingLimit: U, Maximum: tc.max},
				{Name: "k", Parent: "p", Guarantee: 16, Maximum: U},
				{Name: "a", Parent: "p", BorrowingLimit: U, LendingLimit: U, Maximum: U},
				{Name: "b", Parent: "p", BorrowingLimit: U, LendingLimit: U, Maximum: U},
				{Name: "c", BorrowingLimit: U, LendingLimit: U, Maximum: U},
			}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
			require.NoError(t, err)
			submitNodeJobs(t, e, epoch, time.Minute, []string{"a", "b", "c"}, 2, 2, 8)
			p := startAll(t, e, epoch.Add(5*time.Minute))
			want := map[string]int{"p": 32, "k": 0, "a": 16, "b": 16, "c": 16}
			for _, s := range e.Queues() {
				require.Equal(t, want[s.Name], s.Used, "queue %s:\n%s", s.Name, p.Describe(c, epoch))
				require.InDelta(t, float64(want[s.Name]), s.Share, 1e-9, "queue %s's share", s.Name)
			}
		})
	}
}

// TestQuotaShareParentOfSiblingsOnOnePool: TestQuotaShareSiblingsOnOnePool's
// a and b one level down, under a parent p without a pool: p is capped
// by the 16 GPUs a and b can use together, and c runs on the other 48.
// With p's cap the sum of its children's (32), c was held at 32 while p
// waited below its share: 16 GPUs idle (a review's input).
func TestQuotaShareParentOfSiblingsOnOnePool(t *testing.T) {
	c := opsCluster(t)
	U := Unlimited
	two := opsNodeNames(c, 2)
	cfg := DefaultConfig()
	cfg.Quotas.Queues = []QueueSpec{
		{Name: "p", BorrowingLimit: U, LendingLimit: U, Maximum: U},
		{Name: "a", Parent: "p", BorrowingLimit: U, LendingLimit: U, Maximum: U, Nodes: two},
		{Name: "b", Parent: "p", BorrowingLimit: U, LendingLimit: U, Maximum: U, Nodes: two},
		{Name: "c", BorrowingLimit: U, LendingLimit: U, Maximum: U},
	}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	require.NoError(t, err)
	submitNodeJobs(t, e, epoch, time.Minute, []string{"a", "b", "c"})
	p := startAll(t, e, epoch.Add(5*time.Minute))
	require.Equal(t, c.TotalGPUs(), e.UsedGPUs(), "GPUs left idle:\n%s", p.Describe(c, epoch))
}

// TestQuotaShareDrainedNodesStillRunning: the GPUs that jobs still hold
// on drained nodes count as in service. a runs two 1-node jobs, whose
// nodes are then drained (the jobs run on); a then waits with four more
// jobs, b with six: equal weights, 32 each of the 64. With the drained
// nodes left out, the 48 others were shared 24 and 24 while a's 16 on
// the drained nodes counted in its use: a was held at 24 and b ran 40 (a
// review's input).
func TestQuotaShareDrainedNodesStillRunning(t *testing.T) {
	c := opsCluster(t)
	e := twoRunningThenDrained(t, c, "")
	submitNodeJobs(t, e, epoch.Add(2*time.Minute), time.Second, []string{"a", "b"}, 4, 6)
	p := startAll(t, e, epoch.Add(5*time.Minute))
	for _, s := range e.Queues() {
		require.Equal(t, 32, s.Used, "queue %s:\n%s", s.Name, p.Describe(c, epoch))
	}
}

// TestQuotaShareDrainedPoolStillRunning: the same for a pool. a is
// confined to nodes 0-3; its two jobs run on nodes 0-1, which are then
// drained; a waits with two more jobs (they fit nodes 2-3), b, with no
// pool, with eight: 32 each. With a's cap counting only nodes 2-3 (16),
// all of it taken by its jobs on the drained nodes, b took nodes 2-3 too
// (a review's input).
func TestQuotaShareDrainedPoolStillRunning(t *testing.T) {
	c := opsCluster(t)
	e := twoRunningThenDrained(t, c, opsNodeNames(c, 4))
	submitNodeJobs(t, e, epoch.Add(2*time.Minute), time.Second, []string{"a", "b"}, 2, 8)
	p := startAll(t, e, epoch.Add(5*time.Minute))
	want := map[string]int{"a": 32, "b": 32}
	for _, s := range e.Queues() {
		require.Equal(t, want[s.Name], s.Used, "queue %s:\n%s", s.Name, p.Describe(c, epoch))
	}
}

// twoRunningThenDrained returns an engine on c with two queues, a (on
// the nodes aNodes names; all when empty) and b, both free to borrow and
// lend, no maximum; a's two 1-node jobs r0 and r1 (8 GPUs, 5 hours'
// limit, preemptible with requeue), submitted and started at epoch; and
// their nodes drained a minute later, the jobs running on.
func twoRunningThenDrained(t *testing.T, c *topology.Cluster, aNodes string) *Engine {
	t.Helper()
	U := Unlimited
	cfg := DefaultConfig()
	cfg.Quotas.Queues = []QueueSpec{{Name: "a", BorrowingLimit: U, LendingLimit: U, Maximum: U, Nodes: aNodes},
		{Name: "b", BorrowingLimit: U, LendingLimit: U, Maximum: U}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	require.NoError(t, err)
	for k := range 2 {
		require.NoError(t, e.Submit(Job{ID: fmt.Sprintf("r%d", k), Account: "x", Queue: "a", TimeLimit: 5 * time.Hour,
			Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, epoch))
	}
	p := startAll(t, e, epoch)
	require.Len(t, p.Starts, 2)
	for _, s := range p.Starts {
		for n := range c.NumNodes() {
			if s.Allocation.OnNode(topology.NodeID(n)) {
				require.NoError(t, e.Drain(topology.NodeID(n), epoch.Add(time.Minute)))
			}
		}
	}
	return e
}

// submitNodeJobs submits, for each of queues in order, counts[i] jobs
// (8 each without counts) of one whole node of 8 GPUs, an hour's limit,
// preemptible with requeue, IDs the queue's name and 0, 1, ...: queue
// i's at first + i x step.
func submitNodeJobs(t testing.TB, e *Engine, first time.Time, step time.Duration, queues []string, counts ...int) {
	t.Helper()
	for i, q := range queues {
		n := 8
		if counts != nil {
			n = counts[i]
		}
		for k := range n {
			require.NoError(t, e.Submit(Job{ID: fmt.Sprintf("%s%d", q, k), Account: "x", Queue: q, TimeLimit: time.Hour,
				Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, first.Add(time.Duration(i)*step)))
		}
	}
}
