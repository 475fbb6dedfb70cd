package backfill

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// poolQueues is randomQueues with node pools and low maximums: each
// queue, with odds one in two, gets a random run of nodes (at least its
// guarantee's worth), so that a queue's jobs may be confined to a few
// nodes, nested pools cut each other, and a pool may leave a job of its
// queue no room at all; with odds one in three its maximum is at most
// two nodes above its guarantee (randomQueues' are four or more), so
// that a config drawn again often lowers it below the queue's use.
func poolQueues(r *rand.Rand, w int, c *topology.Cluster) QuotaConfig {
	cfg := randomQueues(r, w, c.NumNodes())
	for i := range cfg.Queues {
		q := &cfg.Queues[i]
		if r.IntN(3) == 0 {
			q.Maximum = q.Guarantee + 8*r.IntN(3)
		}
		if r.IntN(2) == 0 {
			continue
		}
		lo := r.IntN(c.NumNodes())
		hi := min(c.NumNodes()-1, lo+max(q.Guarantee/8, r.IntN(c.NumNodes()))) // inclusive
		if hi-lo+1 < q.Guarantee/8 {
			continue
		}
		q.Nodes = c.NodeName(topology.NodeID(lo))
		if hi > lo {
			q.Nodes = fmt.Sprintf("%s,%s", q.Nodes, c.NodeName(topology.NodeID(hi)))
			for n := lo + 1; n < hi; n++ {
				q.Nodes += "," + c.NodeName(topology.NodeID(n))
			}
		}
	}
	return cfg
}

// reconfigured returns the engine restored from e's snapshot (through
// JSON) under cfg, checking what a config change must keep: every job in
// its state but for plans (a reserved or held job may be waiting again),
// every running gang on its GPUs, and every invariant.
func reconfigured(t testing.TB, e *Engine, cfg Config) *Engine {
	t.Helper()
	r, err := Restore(e.c, cfg, snapshotCopy(t, e.Snapshot()))
	if err != nil {
		t.Fatalf("restore under queues %+v: %v", cfg.Quotas.Queues, err)
	}
	if err := r.check(); err != nil {
		t.Fatalf("restored under queues %+v: %v", cfg.Quotas.Queues, err)
	}
	was := func(st JobState) JobState {
		if st == StateReserved || st == StateHeld {
			return StatePending
		}
		return st
	}
	before, after := e.Jobs(), r.Jobs()
	if len(before) != len(after) {
		t.Fatalf("%d jobs before the restore, %d after", len(before), len(after))
	}
	for i, b := range before {
		a := after[i]
		if a.ID != b.ID || was(a.State) != was(b.State) && !(b.State.Waiting() && a.State.Waiting()) {
			t.Fatalf("job %s (%s) restored as %s (%s)", b.ID, b.State, a.ID, a.State)
		}
		if !b.State.Active() {
			continue
		}
		x, _ := e.Allocation(b.ID)
		y, _ := r.Allocation(b.ID)
		if d := cmp.Diff(x, y); d != "" {
			t.Fatalf("job %s moved across the restore:\n%s", b.ID, d)
		}
	}
	r.checkEach = e.checkEach
	return r
}

// checkStarts fails when a job the plan starts has a pod outside its
// queue's pool, or leaves its queue or a queue above it past its maximum
// or its own queue past its guarantee and borrowing limit (a queue
// restored above a limit starts nothing: the invariants allow it the
// excess it had, not a start). Effective use above the own queue is not
// checked: a start that does not raise it passes there.
func checkStarts(t testing.TB, e *Engine, p *Plan) {
	t.Helper()
	s := e.quota
	if s == nil {
		return
	}
	for _, st := range p.Starts {
		j := e.jobs.byID[st.Job]
		for a := j.queue; a >= 0; a = s.parent[a] {
			if s.used[a] > s.max[a] || a == j.queue && s.eff[a] > s.ceil[a] {
				t.Fatalf("job %s started, and queue %s is at %d GPUs (%d effective), above its maximum %d or its guarantee and borrowing limit %d",
					st.Job, s.names[a], s.used[a], s.eff[a], s.max[a], s.ceil[a])
			}
		}
		pool := s.pools[j.queue]
		if pool == nil {
			continue
		}
		for _, m := range st.Allocation.Members {
			for _, x := range m.Assignment {
				if !pool.Test(uint(x.Node)) {
					t.Fatalf("job %s of queue %s started on node %s, outside its pool", st.Job, j.job.Queue, e.c.NodeName(x.Node))
				}
			}
		}
	}
}

// FuzzReconfigure: FuzzQuotaEngine's random operations under random queue
// trees with node pools, where every restore step restores under a config
// drawn afresh (the same queues and parents; new guarantees, limits,
// lending and pools), as an operator changes quotas and restarts the
// host. The restore must succeed and keep every job (reconfigured); after
// it, every invariant holds after every step (queues restored above a
// lowered limit may stay above it, never rise again), a refused step
// changes nothing, and no start leaves its queue's new pool or limits
// (checkStarts).
//
//	go test ./backfill -run '^$' -fuzz FuzzReconfigure -fuzztime 5m -fuzzminimizetime 5s
func FuzzReconfigure(f *testing.F) {
	addWorkloadSeeds(f, rand.New(rand.NewPCG(7, 8)), 60)
	c := opsCluster(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 {
			return
		}
		data = data[:min(len(data), 1+6*400)]
		runReconfigure(t, c, data)
	})
}

// runReconfigure runs one FuzzReconfigure input.
func runReconfigure(t testing.TB, c *topology.Cluster, data []byte) {
	w := int(data[0])
	base := opsEngine(t, c, []int{1, 16, Conservative, 0}[w%4]).cfg
	draws := rand.New(rand.NewPCG(uint64(w), 43))
	var e *Engine
	var leaves []string
	for e == nil {
		cfg := base
		cfg.Quotas = poolQueues(draws, w, c)
		var err error
		if e, err = New(c, cfg, flatTree(t, cfg.FairShare, "a", "b")); err != nil {
			e = nil
			continue
		}
		for i, q := range cfg.Quotas.Queues {
			if e.quota.leaf[i] {
				leaves = append(leaves, q.Name)
			}
		}
	}
	e.checkEach = true
	now := epoch
	for i := 1; i+6 <= len(data); i += 6 {
		b := [6]byte(data[i : i+6])
		s := stepFrom(c, b)
		if s.kind == opSubmit {
			s.job.Queue = leaves[int(b[3]^b[4])%len(leaves)]
		}
		if s.restore || b[0]%29 == 0 {
			// Another config: the same queues, drawn again until New
			// takes it (a guarantee may not exceed its pool).
			cfg := e.cfg
			for {
				cfg.Quotas = poolQueues(draws, w, c)
				if _, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b")); err == nil {
					break
				}
			}
			e = reconfigured(t, e, cfg)
			if debugReconf {
				fmt.Printf("step %d restored under %+v\n", i/6, cfg.Quotas.Queues)
			}
		}
		now = later(now.Add(s.dt), e.Now())
		before := e.Snapshot()
		if s.kind == opSchedule {
			if debugReconf && e.quota != nil {
				fmt.Printf("step %d before schedule: used %v eff %v top %d grace %v %v %d keep %v\n", i/6, e.quota.used, e.quota.eff, e.quota.top, e.quota.graceMax, e.quota.graceCeil, e.quota.graceTop, e.quota.keep)
			}
			p, err := e.Schedule(now)
			if debugReconf {
				fmt.Printf("  plan: %d starts, %d preemptions\n", len(p.Starts), len(p.Preemptions))
			}
			if err != nil {
				t.Fatalf("step %d %v: %v", i/6, s, err)
			}
			checkStarts(t, e, p)
			continue
		}
		if _, err := s.apply(e, now); err != nil {
			if d := cmp.Diff(before, e.Snapshot()); d != "" {
				t.Fatalf("step %d %v: refused (%v) but changed the engine:\n%s", i/6, s, err, d)
			}
		}
	}
}

// TestReconfigureWorkloads runs FuzzReconfigure's check on 100 seeded
// inputs of 200 steps (the fuzz target's seeds run with the package's
// tests too).
func TestReconfigureWorkloads(t *testing.T) {
	c := opsCluster(t)
	r := rand.New(rand.NewPCG(11, 12))
	n := 100
	if testing.Short() {
		n = 30
	}
	for w := range n {
		data := make([]byte, 1+6*200)
		for k := range data {
			data[k] = byte(r.IntN(256))
		}
		data[0] = byte(w)
		t.Run(fmt.Sprint(w), func(t *testing.T) { runReconfigure(t, c, data) })
	}
}

var debugReconf = false

// TestRestoreUnderChangedConfig: an operator changes a queue's pool or
// limits and restarts the host from a snapshot. What runs keeps running
// where it is, the new config binds every start from then on, a plan the
// new pool no longer allows is dropped, and a job the new config can
// never run waits, told why, instead of the restore being refused.
func TestRestoreUnderChangedConfig(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	name := func(n int) string { return c.NodeName(topology.NodeID(n)) }
	config := func(pool string, max int) Config {
		cfg := DefaultConfig()
		cfg.Hold.Enabled = false
		cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
			{Name: "q", Maximum: max, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Nodes: pool},
			{Name: "o", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		}}
		return cfg
	}
	job := func(id string, nodes int) Job {
		return Job{ID: id, Account: "a", Queue: "q", TimeLimit: time.Hour, Gang: member(placement.NodesOf(nodes, 8))}
	}
	engine := func(cfg Config) *Engine {
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
		if err != nil {
			t.Fatal(err)
		}
		e.checkEach = true
		return e
	}
	restore := func(e *Engine, cfg Config) *Engine {
		t.Helper()
		r := reconfigured(t, e, cfg)
		r.checkEach = true
		return r
	}
	nodesOf := func(e *Engine, id string) []string {
		a, ok := e.Allocation(id)
		if !ok {
			t.Fatalf("job %s has no allocation", id)
		}
		var out []string
		for _, m := range a.Members {
			for _, x := range m.Assignment {
				out = append(out, e.c.NodeName(x.Node))
			}
		}
		return out
	}
	state := func(e *Engine, id string) JobState {
		st, ok := e.Job(id)
		if !ok {
			t.Fatalf("no job %s", id)
		}
		return st.State
	}
	schedule := func(e *Engine, at time.Time) *Plan {
		t.Helper()
		p, err := e.Schedule(at)
		if err != nil {
			t.Fatal(err)
		}
		checkStarts(t, e, p)
		return p
	}

	// bigWaits returns an engine under cfg running three one-node jobs of
	// queue o without time limits, with big (all four nodes, no limit)
	// submitted behind them.
	bigWaits := func(cfg Config) *Engine {
		e := engine(cfg)
		for _, id := range []string{"a", "b", "c"} {
			j := job(id, 1)
			j.Queue, j.TimeLimit = "o", 0
			require.NoError(t, e.Submit(j, epoch))
		}
		startAll(t, e, epoch)
		big := job("big", 4)
		big.TimeLimit = 0
		require.NoError(t, e.Submit(big, epoch))
		return e
	}

	t.Run("narrowed pool", func(t *testing.T) {
		// r runs on three nodes; w (all four) is reserved at r's end. The
		// pool shrinks to the fourth node: r runs on, w can never run in
		// the pool and loses its reservation, and a one-node job of q
		// starts only there.
		e := engine(config("", Unlimited))
		require.NoError(t, e.Submit(job("r", 3), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("w", 4), epoch))
		schedule(e, epoch.Add(time.Minute))
		require.Equal(t, StateReserved, state(e, "w"))
		ran := nodesOf(e, "r")
		free := name(3)
		require.NotContains(t, ran, free)
		r := restore(e, config(free, Unlimited))
		require.Equal(t, ran, nodesOf(r, "r"), "the running gang moved")
		require.Equal(t, StatePending, state(r, "w"), "the reservation outside the new pool was kept")
		require.NoError(t, r.Submit(job("one", 1), epoch.Add(2*time.Minute)))
		p := schedule(r, epoch.Add(2*time.Minute))
		require.Equal(t, []string{free}, nodesOf(r, "one"))
		require.Contains(t, reason(t, p, "w"), "queue q's nodes cannot run it even with every GPU free")
		require.Empty(t, p.Reservations, "a job that can never run in its pool was reserved")
		// Queues: w's GPUs are apart from what q waits for.
		spec, ok := r.JobSpec("w")
		require.True(t, ok)
		wGPUs := spec.Gang.MinGPUs(r.c)
		require.Positive(t, wGPUs)
		qs := r.Queues()[0]
		require.Equal(t, "q", qs.Name)
		require.Equal(t, 0, qs.Waiting, "a job that can never run counted as waiting")
		require.Equal(t, wGPUs, qs.NeverFits)
	})

	t.Run("widened pool", func(t *testing.T) {
		// q's pool is the first two nodes: r holds one, w (two nodes)
		// waits. The pool grows to all four: w starts at once on the
		// new nodes, which it could not have used had its record kept
		// the old pool as its own node set.
		pool := name(0) + "," + name(1)
		e := engine(config(pool, Unlimited))
		require.NoError(t, e.Submit(job("r", 1), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("w", 2), epoch))
		schedule(e, epoch.Add(time.Minute))
		require.True(t, state(e, "w").Waiting())
		r := restore(e, config(pool+","+name(2)+","+name(3), Unlimited))
		p := schedule(r, epoch.Add(2*time.Minute))
		require.Len(t, p.Starts, 1)
		require.Equal(t, "w", p.Starts[0].Job)
		spec, _ := r.JobSpec("w")
		require.Equal(t, uint(4), spec.Gang.Members[0].Request.Allowed.Count(), "w's nodes are not the new pool")
	})

	t.Run("lowered maximum", func(t *testing.T) {
		// q runs 24 GPUs; its maximum falls to 8. The restore keeps r
		// running, q takes nothing more while above 8 (a one-node job
		// waits for quota), and once r ends the job starts.
		e := engine(config("", Unlimited))
		require.NoError(t, e.Submit(job("r", 3), epoch))
		startAll(t, e, epoch)
		r := restore(e, config("", 8))
		require.Equal(t, 24, r.Queues()[0].Used)
		require.NoError(t, r.Submit(job("one", 1), epoch.Add(time.Minute)))
		p := schedule(r, epoch.Add(time.Minute))
		require.Empty(t, p.Starts)
		require.Contains(t, reason(t, p, "one"), "queue q: 24 of 8 GPUs, maximum reached")
		require.NoError(t, r.Finished("r", epoch.Add(30*time.Minute)))
		p = schedule(r, epoch.Add(30*time.Minute))
		require.Len(t, p.Starts, 1)
		require.Equal(t, "one", p.Starts[0].Job)
	})

	t.Run("a job the new pool cannot run asks for no wake", func(t *testing.T) {
		// Hold mode, no time limits: big (all four nodes) waits until it
		// may be held, an hour after its submit time. The pool shrinks to
		// two nodes before that: big can never run in it, so its
		// eligibility is no time the plan could change at, and NextEvent
		// asks for no cycle then (it did, once per such job).
		cfg := config("", Unlimited)
		cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MinWait: time.Hour, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
		e := bigWaits(cfg)
		schedule(e, epoch.Add(time.Minute))
		at, ok := e.NextEvent()
		require.True(t, ok)
		require.Equal(t, epoch.Add(time.Hour), at, "big's eligibility for a hold")
		narrowed := config(name(0)+","+name(1), Unlimited)
		narrowed.Hold = cfg.Hold
		r := restore(e, narrowed)
		schedule(r, epoch.Add(2*time.Minute))
		at, ok = r.NextEvent()
		require.False(t, ok, "a wake at %v for a job that can never run", at)
	})

	t.Run("a held job the new pool cannot run", func(t *testing.T) {
		// Hold mode, no time limits: big (all four nodes) is held while
		// three one-node jobs run. The pool shrinks to two nodes: the
		// hold is dropped at the restore, and no cycle holds GPUs for a
		// job that can never run in its pool.
		cfg := config("", Unlimited)
		cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 2}
		e := bigWaits(cfg)
		p := schedule(e, epoch.Add(time.Minute))
		require.Equal(t, StateHeld, state(e, "big"))
		require.NotEmpty(t, p.Holds)
		narrowed := config(name(0)+","+name(1), Unlimited)
		narrowed.Hold = cfg.Hold
		r := restore(e, narrowed)
		require.Equal(t, StatePending, state(r, "big"))
		for m := 2; m < 10; m++ {
			p = schedule(r, epoch.Add(time.Duration(m)*time.Minute))
			require.Empty(t, p.Holds, "minute %d", m)
		}
		require.Contains(t, reason(t, p, "big"), "queue q's nodes cannot run it even with every GPU free")
	})

	t.Run("a small job the new pool cannot run", func(t *testing.T) {
		// z may use only the first node; its queue's pool becomes the
		// last. It waits for quota, told that the pool cannot run it,
		// and does not keep the backlog rule (plan as EASY while a job
		// waits past BacklogAfter) on for ever.
		cfg := config("", Unlimited)
		cfg.BacklogAfter = time.Hour
		e := engine(cfg)
		z := job("z", 1)
		z.Gang.Members[0].Request.Allowed = c.NewNodeSet()
		z.Gang.Members[0].Request.Allowed.Set(0)
		require.NoError(t, e.Submit(z, epoch))
		narrowed := config(name(3), Unlimited)
		narrowed.BacklogAfter = cfg.BacklogAfter
		r := restore(e, narrowed)
		for _, at := range []time.Duration{time.Minute, 9 * time.Hour, 48 * time.Hour} {
			p := schedule(r, epoch.Add(at))
			require.Empty(t, p.Starts)
			require.Empty(t, p.Backlog, "at %v", at)
			require.Contains(t, reason(t, p, "z"), "queue q's nodes cannot run it even with every GPU free")
			require.Contains(t, reason(t, p, "z"), "it cannot start unless the queue's pool is widened")
		}
		// Under the old pool again it runs.
		p := schedule(restore(r, cfg), epoch.Add(49*time.Hour))
		require.Len(t, p.Starts, 1)
	})

	t.Run("an elastic gang is judged at its minimum", func(t *testing.T) {
		// q's maximum is 16 and 16 are in use: an elastic gang of 4
		// nodes, at least 1, waits for quota like any job (not told it
		// can never start); restored under a maximum of 4 GPUs, below
		// its minimum, it is.
		e := engine(config("", 16))
		require.NoError(t, e.Submit(job("r", 2), epoch))
		startAll(t, e, epoch)
		el := job("el", 4)
		el.Gang.Members[0].Min = 1
		require.NoError(t, e.Submit(el, epoch))
		p := schedule(e, epoch.Add(time.Minute))
		require.Equal(t, "queue q: 16 of 16 GPUs, maximum reached", reason(t, p, "el"))
		r := restore(e, config("", 4))
		p = schedule(r, epoch.Add(2*time.Minute))
		require.Contains(t, reason(t, p, "el"), "8 GPUs, above the maximum of queue q (4 GPUs): it cannot start unless the limit is raised")
	})

	t.Run("a job that cannot be preempted above a lowered guarantee", func(t *testing.T) {
		// n may not be preempted: it runs within q's guarantee (16).
		// The guarantee falls to 8: it waits, told it never starts so.
		guaranteed := func(g int) Config {
			cfg := config("", Unlimited)
			cfg.Quotas.Queues[0].Guarantee = g
			return cfg
		}
		e := engine(guaranteed(16))
		require.NoError(t, e.Submit(job("r", 2), epoch))
		startAll(t, e, epoch)
		n := job("n", 2)
		n.Preemption = preempt.Never
		require.NoError(t, e.Submit(n, epoch))
		schedule(e, epoch.Add(time.Minute))
		r := restore(e, guaranteed(8))
		p := schedule(r, epoch.Add(2*time.Minute))
		require.Contains(t, reason(t, p, "n"), "16 GPUs; a job that cannot be preempted runs within its queue's guarantee, and queue q has 8: it cannot start unless the guarantee is raised")
	})

	t.Run("a job the new maximum cannot run", func(t *testing.T) {
		// w (32 GPUs) waits; q's maximum falls to 8: w is kept, waits
		// with the limit in its reason, and runs once a restore under
		// the old config lifts it. Submitted now, it would be refused.
		e := engine(config("", Unlimited))
		require.NoError(t, e.Submit(job("r", 1), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("w", 4), epoch))
		schedule(e, epoch.Add(time.Minute))
		r := restore(e, config("", 8))
		require.ErrorIs(t, r.Submit(job("w2", 4), epoch.Add(2*time.Minute)), ErrNeverFits)
		p := schedule(r, epoch.Add(2*time.Minute))
		require.Contains(t, reason(t, p, "w"), "32 GPUs, above the maximum of queue q (8 GPUs): it cannot start unless the limit is raised")
		require.Empty(t, p.Reservations)
		require.NoError(t, r.Finished("r", epoch.Add(3*time.Minute)))
		p = schedule(r, epoch.Add(3*time.Minute))
		require.Empty(t, p.Starts)
		back := restore(r, config("", Unlimited))
		p = schedule(back, epoch.Add(4*time.Minute))
		require.Len(t, p.Starts, 1)
		require.Equal(t, "w", p.Starts[0].Job)
	})
}

// TestGraceNeverRises: a queue restored above a lowered maximum may stay
// above it, but once its use falls, the invariant checker refuses a rise
// back above the maximum (settle lowers the grace after every event).
func TestGraceNeverRises(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 4, GPUsPerNode: 8})
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{{Name: "q", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited}}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, e.Submit(Job{ID: id, Account: "a", Queue: "q", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch))
	}
	startAll(t, e, epoch)
	cfg.Quotas.Queues[0].Maximum = 8
	r := reconfigured(t, e, cfg)
	require.Equal(t, 24, r.quota.used[0])
	require.NoError(t, r.Finished("a", epoch.Add(time.Minute)))
	require.Empty(t, r.quota.limits(), "16 of 8 after 24 of 8")
	r.quota.add(0, 8) // as a start past the checks would
	require.NotEmpty(t, r.quota.limits(), "back to 24 of 8 after 16 of 8")
	r.quota.add(0, -8)
	require.Empty(t, r.quota.limits())
}

// TestRestoreOntoChangedClusterAndPool: onto another cluster, a waiting
// job that cannot fit it on the nodes it was submitted with is still
// refused (only a queue's pool or limits may leave a job no room), and a
// reservation the new pool does not contain is dropped, not kept to be
// refused by the ledger when it falls due.
func TestRestoreOntoChangedClusterAndPool(t *testing.T) {
	tree := func(leaves, nodes int) *topology.Cluster {
		c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: leaves, NodesPerLeaf: nodes, GPUsPerNode: 8})
		require.NoError(t, err)
		return c
	}
	queues := func(pool string) Config {
		cfg := DefaultConfig()
		cfg.Quotas = QuotaConfig{Queues: []QueueSpec{{Name: "q", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Nodes: pool}}}
		return cfg
	}
	job := func(id string, nodes int, required string) Job {
		req := placement.NodesOf(nodes, 8)
		req.Required = required
		return Job{ID: id, Account: "a", Queue: "q", TimeLimit: time.Hour, Gang: member(req)}
	}

	t.Run("a job the new cluster cannot fit", func(t *testing.T) {
		before := tree(2, 4)
		cfg := queues("")
		e, err := New(before, cfg, flatTree(t, cfg.FairShare, "a"))
		require.NoError(t, err)
		require.NoError(t, e.Submit(job("w", 4, "leaf"), epoch))
		_, err = Restore(tree(4, 2), cfg, snapshotCopy(t, e.Snapshot()))
		if !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), "job w: backfill: job can never fit the cluster") {
			t.Fatalf("a waiting job no leaf of the new cluster holds: %v", err)
		}
	})

	t.Run("a reservation outside the new pool", func(t *testing.T) {
		before, after := tree(1, 4), tree(1, 5)
		cfg := queues("")
		e, err := New(before, cfg, flatTree(t, cfg.FairShare, "a"))
		require.NoError(t, err)
		require.NoError(t, e.Submit(job("r", 4, ""), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("w", 1, ""), epoch))
		_, err = e.Schedule(epoch.Add(time.Minute))
		require.NoError(t, err)
		st, _ := e.Job("w")
		require.Equal(t, StateReserved, st.State)
		newNode := after.NodeName(4)
		r, err := Restore(after, queues(newNode), snapshotCopy(t, e.Snapshot()))
		require.NoError(t, err)
		r.checkEach = true
		st, _ = r.Job("w")
		require.Equal(t, StatePending, st.State, "the reservation outside the new pool was kept")
		p, err := r.Schedule(epoch.Add(2 * time.Minute))
		require.NoError(t, err)
		require.Len(t, p.Starts, 1)
		require.Equal(t, "m="+newNode, Hosts(after, &p.Starts[0].Allocation))
	})
}

// TestJobsTheQueuesCannotRun: a job restored under queues that can never
// run it (a lowered limit or pool) starts nowhere, holds and reserves
// nothing, and holds nobody else back: not other queues (its GPUs count
// in no demand), not elastic growth. A claim restored for such a job, or
// in a queue above a lowered limit, is dropped (its start would pass no
// limit's check).
func TestJobsTheQueuesCannotRun(t *testing.T) {
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	lowered := func(e *Engine, edit func([]QueueSpec)) Config {
		cfg := e.cfg
		cfg.Quotas.Queues = slices.Clone(cfg.Quotas.Queues)
		edit(cfg.Quotas.Queues)
		return cfg
	}
	started := func(p *Plan, id string) bool {
		return slices.ContainsFunc(p.Starts, func(s Start) bool { return s.Job == id })
	}

	t.Run("a claim above a lowered maximum", func(t *testing.T) {
		// E (16 GPUs) reclaims q's guarantee from O; q's maximum falls to
		// 8 before O is gone: E's claim is dropped, and E never starts.
		e, job := guaranteedPair(t)
		require.NoError(t, e.Submit(job("O", "o", 0, 4, 0, preempt.Requeue, 0), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("E", "q", 0, 2, 0, preempt.Requeue, time.Hour), at(time.Minute)))
		p := startAll(t, e, at(time.Minute))
		require.Len(t, p.Preemptions, 1)
		r := reconfigured(t, e, lowered(e, func(q []QueueSpec) { q[0].Guarantee, q[0].Maximum = 8, 8 }))
		require.Empty(t, r.book.claims)
		require.NoError(t, r.Preempted("O", at(2*time.Minute)))
		for m := 2; m < 5; m++ {
			p = startAll(t, r, at(time.Duration(m)*time.Minute))
			require.False(t, started(p, "E"), "E (16 GPUs) started in queue q of maximum 8")
		}
	})

	t.Run("a job the top queues can never hold", func(t *testing.T) {
		// o's guarantee (16) stops being lent: q's W (24 GPUs of the
		// cluster's 32) can never run. Busy or not, W is not reserved
		// or held, and says why.
		for _, hold := range []bool{false, true} {
			queues := []QueueSpec{
				{Name: "q", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
				{Name: "o", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
			}
			e, job := quotaRig(t, 4, queues, func(c *Config) {
				if hold {
					c.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 1, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 2}
				}
			})
			limit := time.Hour
			if hold {
				limit = 0
			}
			require.NoError(t, e.Submit(job("O", "o", 0, 2, 2, 0, preempt.Never, limit), epoch))
			startAll(t, e, epoch)
			require.NoError(t, e.Submit(job("W", "q", 0, 4, 3, 0, preempt.Requeue, time.Hour), at(time.Second)))
			r := reconfigured(t, e, lowered(e, func(q []QueueSpec) { q[1].LendingLimit = 0 }))
			require.ErrorIs(t, r.Submit(job("W2", "q", 0, 4, 3, 0, preempt.Requeue, time.Hour), at(2*time.Second)), ErrNeverFits)
			for m := 1; m < 5; m++ {
				p := startAll(t, r, at(time.Duration(m)*time.Minute))
				require.False(t, started(p, "W"))
				require.Empty(t, p.Reservations, "hold %v", hold)
				require.Empty(t, p.Holds, "hold %v", hold)
				require.Contains(t, reason(t, p, "W"), "24 GPUs, more than queue q could borrow with nothing in use")
			}
		}
	})

	t.Run("other queues are not held back", func(t *testing.T) {
		// N may not be preempted; q's guarantee falls below its size.
		// X of queue o, alone on an empty cluster, starts: N's GPUs do
		// not make q a queue waiting below its share.
		e, job := quotaRig(t, 4, []QueueSpec{
			{Name: "q", Guarantee: 16, Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
			{Name: "o", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
		}, nil)
		require.NoError(t, e.Submit(job("B", "o", 0, 4, 4, 0, preempt.Requeue, time.Hour), epoch))
		startAll(t, e, epoch)
		require.NoError(t, e.Submit(job("N", "q", 0, 4, 2, 0, preempt.Never, time.Hour), at(time.Minute)))
		r := reconfigured(t, e, lowered(e, func(q []QueueSpec) { q[0].Guarantee = 8 }))
		require.NoError(t, r.Finished("B", at(2*time.Minute)))
		require.NoError(t, r.Submit(job("X", "o", 0, 4, 3, 0, preempt.Requeue, time.Hour), at(2*time.Minute)))
		p := startAll(t, r, at(3*time.Minute))
		if !started(p, "X") {
			t.Fatalf("X waits: %s", reason(t, p, "X"))
		}
		require.False(t, started(p, "N"))
	})

	t.Run("elastic growth goes on", func(t *testing.T) {
		// U's pool shrinks to one node: U can never run, and G (elastic,
		// growing) still grows into the nodes K leaves.
		queues := func(pool string) []QueueSpec {
			return []QueueSpec{
				{Name: "q", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Nodes: pool},
				{Name: "o", Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited},
			}
		}
		e, job := quotaRig(t, 4, queues(""), nil)
		require.NoError(t, e.Submit(job("K", "o", 0, 4, 2, 0, preempt.Requeue, time.Hour), epoch))
		startAll(t, e, epoch)
		g := job("G", "o", 0, 4, 4, 1, preempt.Requeue, 0)
		g.Grow = true
		require.NoError(t, e.Submit(g, epoch))
		startAll(t, e, at(time.Second))
		before, _ := e.Allocation("G")
		require.NoError(t, e.Submit(job("U", "q", 0, 4, 3, 0, preempt.Requeue, time.Hour), at(time.Second)))
		r := reconfigured(t, e, lowered(e, func(q []QueueSpec) { q[0].Nodes = e.c.NodeName(3) }))
		require.NoError(t, r.Finished("K", at(time.Minute)))
		startAll(t, r, at(2*time.Minute))
		after, _ := r.Allocation("G")
		require.Greater(t, after.GPUs(), before.GPUs(), "G did not grow")
	})
}

// reason returns job id's reason in plan p.
func reason(t testing.TB, p *Plan, id string) string {
	t.Helper()
	for i := range p.Waiting {
		if w := &p.Waiting[i]; w.Job == id {
			return w.Message(p.Time)
		}
	}
	t.Fatalf("job %s is not waiting in the plan", id)
	return ""
}
