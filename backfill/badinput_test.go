package backfill

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// richEngine returns an engine on 2 leaves x 4 nodes x 8 GPUs with every
// kind of state: running and starting jobs, a reservation, a waiting job,
// a down node, a drained node and an ended job. Its clock is at t+30m.
func richEngine(t *testing.T) *Engine {
	t.Helper()
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.KeepEnded = time.Hour
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	e.checkEach = true
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	job := func(id string, nodes int, limit time.Duration) Job {
		return Job{ID: id, Account: "a", TimeLimit: limit, Gang: member(placement.NodesOf(nodes, 8))}
	}
	must(e.Submit(job("run", 3, 2*time.Hour), epoch))
	must(e.Submit(job("short", 1, time.Hour), epoch))
	must(e.Submit(job("done", 1, time.Hour), epoch))
	_, err = e.Schedule(epoch)
	must(err)
	must(e.Started("run", epoch))
	must(e.Finished("done", epoch.Add(5*time.Minute)))
	must(e.Submit(job("big", 7, time.Hour), epoch.Add(10*time.Minute)))
	must(e.Submit(job("wait", 4, time.Hour), epoch.Add(10*time.Minute)))
	_, err = e.Schedule(epoch.Add(10 * time.Minute))
	must(err)
	_, err = e.NodeDown(7, epoch.Add(20*time.Minute))
	must(err)
	must(e.Drain(6, epoch.Add(25*time.Minute)))
	_, err = e.Schedule(epoch.Add(30 * time.Minute))
	must(err)
	if e.Running() != 2 || e.Pending() != 2 || len(e.book.resv) == 0 {
		t.Fatalf("rich engine too thin: %d running, %d waiting, %d reservations\n%s", e.Running(), e.Pending(), len(e.book.resv), FormatJobs(e.Jobs(), epoch))
	}
	return e
}

// TestBadInputChangesNothing: every bad call gets an error wrapping the
// right sentinel and naming what is wrong, and leaves the engine exactly
// as it was (its snapshot, clock included, is unchanged).
func TestBadInputChangesNothing(t *testing.T) {
	at := epoch.Add(40 * time.Minute)
	valid := func() Job {
		return Job{ID: "new", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}
	}
	with := func(f func(j *Job)) Job { j := valid(); f(&j); return j }
	submit := func(j Job) func(e *Engine) error { return func(e *Engine) error { return e.Submit(j, at) } }
	tests := []struct {
		name string
		call func(e *Engine) error
		want error
		msg  string
	}{
		{"Started twice", func(e *Engine) error { return e.Started("run", at) }, ErrTransition, "job run is running; Started needs starting"},
		{"Finished while reserved", func(e *Engine) error { return e.Finished("wait", at) }, ErrTransition, "job wait is reserved; Finished needs starting, running"},
		{"Finished twice", func(e *Engine) error { return e.Finished("done", at) }, ErrTransition, "job done is finished"},
		{"Cancel of an ended job", func(e *Engine) error { return e.Cancel("done", at) }, ErrTransition, "job done is finished"},
		{"Failed while pending", func(e *Engine) error { return e.Failed("big", at, true) }, ErrTransition, "job big is pending"},
		{"unknown job", func(e *Engine) error { return e.Finished("nope", at) }, ErrUnknownJob, `"nope"`},
		{"ended job forgotten", func(e *Engine) error { return e.Finished("done", epoch.Add(2*time.Hour)) }, ErrUnknownJob, `"done"`},
		{"NodeDown of a down node", func(e *Engine) error { _, err := e.NodeDown(7, at); return err }, ErrTransition, "node node00007 is down; NodeDown needs up or drained"},
		{"NodeUp of an up node", func(e *Engine) error { return e.NodeUp(0, at) }, ErrTransition, "node node00000 is up; NodeUp needs down"},
		{"Drain of a drained node", func(e *Engine) error { return e.Drain(6, at) }, ErrTransition, "node node00006 is drained"},
		{"Resume of an up node", func(e *Engine) error { return e.Resume(0, at) }, ErrTransition, "node node00000 is up; Resume needs drained"},
		{"unknown node", func(e *Engine) error { return e.Drain(99, at) }, topology.ErrUnknownNode, "Drain of node 99 (the cluster has 8)"},
		{"time before the last", func(e *Engine) error { return e.Cancel("wait", epoch) }, ErrTimeTravel, "is before"},
		{"time far in the future", func(e *Engine) error { _, err := e.Schedule(time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC)); return err }, ErrBadTime, "2400-01-01"},
		{"zero time", func(e *Engine) error { return e.Submit(valid(), time.Time{}) }, ErrBadTime, "0001-01-01"},
		{"nil plan", func(e *Engine) error { return e.ScheduleInto(at, nil) }, ErrBadArgument, "nil plan"},
		{"duplicate ID", submit(with(func(j *Job) { j.ID = "wait" })), ErrDuplicateJob, "wait"},
		{"ended ID still remembered", submit(with(func(j *Job) { j.ID = "done" })), ErrDuplicateJob, "done"},
		{"no ID", submit(with(func(j *Job) { j.ID = "" })), ErrBadJob, "no ID"},
		{"huge ID", submit(with(func(j *Job) { j.ID = strings.Repeat("x", MaxIDLength+1) })), ErrBadJob, "an ID of 513 bytes"},
		{"unknown account", submit(with(func(j *Job) { j.Account = "zz" })), ErrBadJob, `"zz"`},
		{"negative limit", submit(with(func(j *Job) { j.TimeLimit = -time.Second })), ErrBadJob, "time limit -1s is not in"},
		{"limit beyond the bound", submit(with(func(j *Job) { j.TimeLimit = MaxTimeLimit + 1 })), ErrBadJob, "time limit"},
		{"NaN QOS", submit(with(func(j *Job) { j.QOS = math.NaN() })), ErrBadJob, "QOS factor NaN"},
		{"infinite partition", submit(with(func(j *Job) { j.Partition = math.Inf(1) })), ErrBadJob, "partition factor +Inf"},
		{"submit time after now", submit(with(func(j *Job) { j.Submit = at.Add(time.Minute) })), ErrBadJob, "is after now"},
		{"submit time out of range", submit(with(func(j *Job) { j.Submit = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC) })), ErrBadJob, "submit time 1900"},
		{"submit time out of range is a bad time too", submit(with(func(j *Job) { j.Submit = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC) })), ErrBadTime, "submit time 1900"},
		{"unknown failure policy", submit(with(func(j *Job) { j.OnNodeFailure = 7 })), ErrBadJob, "OnNodeFailure 7"},
		{"negative patience", submit(with(func(j *Job) { j.Patience.MaxDomains = -1 })), ErrBadJob, "patience of -1 domains"},
		{"patience level unknown", submit(with(func(j *Job) { j.Patience = Patience{MaxDomains: 1, Level: "rack", Wait: time.Hour} })), ErrBadJob, `patience level "rack"`},
		{"patience level unknown, no limit", submit(with(func(j *Job) { j.Patience = Patience{Level: "rack", Wait: time.Hour} })), ErrBadJob, `patience level "rack"`},
		{"node count 2^31", submit(with(func(j *Job) { j.Gang = member(placement.NodesOf(1<<31, 8)) })), ErrBadJob, "asks for 2147483648 nodes"},
		{"GPU count 2^40", submit(with(func(j *Job) { j.Gang = member(placement.TotalGPUs(1 << 40)) })), ErrBadJob, "asks for 1099511627776 GPUs"},
		{"more nodes than the cluster", submit(with(func(j *Job) { j.Gang = member(placement.NodesOf(9, 8)) })), ErrBadJob, "the cluster has 8 nodes"},
		{"node set of the wrong length", submit(with(func(j *Job) {
			j.Gang = member(placement.Request{Nodes: 1, GPUsPerNode: 8, Allowed: bitset.New(100)})
		})), ErrBadJob, "Allowed node set has length 100"},
		{"never fits its level", submit(with(func(j *Job) {
			j.Gang = member(placement.Request{Nodes: 5, GPUsPerNode: 8, Required: "leaf"})
		})), ErrNeverFits, "under one leaf"},
		{"gang ID differs", submit(with(func(j *Job) { j.Gang.ID = "other" })), ErrBadJob, "gang ID other differs"},
		{"no members", submit(with(func(j *Job) { j.Gang = gang.Spec{} })), ErrBadJob, "no members"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := richEngine(t)
			before := e.Snapshot()
			err := tt.call(e)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v; want %v mentioning %q", err, tt.want, tt.msg)
			}
			if d := cmp.Diff(before, e.Snapshot()); d != "" {
				t.Fatalf("a refused call changed the engine (-before +after):\n%s", d)
			}
			if err := e.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBadConfigAndArguments: New and Restore refuse bad configs and nil
// arguments with an error, never a panic.
func TestBadConfigAndArguments(t *testing.T) {
	c := topology.Default2000()
	tree := func() *fairshare.Tree { return flatTree(t, fairshare.DefaultConfig(), "a") }
	cfgWith := func(f func(c *Config)) Config { cfg := DefaultConfig(); f(&cfg); return cfg }
	tests := []struct {
		name string
		make func() error
		want error
		msg  string
	}{
		{"nil cluster", func() error { _, err := New(nil, DefaultConfig(), tree()); return err }, ErrBadArgument, "no cluster"},
		{"nil tree", func() error { _, err := New(c, DefaultConfig(), nil); return err }, ErrBadArgument, "no fair-share tree"},
		{"Restore(nil)", func() error { _, err := Restore(c, DefaultConfig(), nil); return err }, ErrRestore, "no snapshot"},
		{"NaN hold share", func() error {
			_, err := New(c, cfgWith(func(c *Config) { c.Hold.MaxShare = math.NaN() }), tree())
			return err
		}, ErrConfig, "Hold.MaxShare NaN"},
		{"hold share above 1", func() error { _, err := New(c, cfgWith(func(c *Config) { c.Hold.MaxShare = 1.5 }), tree()); return err }, ErrConfig, "Hold.MaxShare 1.5"},
		{"NaN backlog free share", func() error {
			_, err := New(c, cfgWith(func(c *Config) { c.BacklogFreeShare = math.NaN() }), tree())
			return err
		}, ErrConfig, "BacklogFreeShare NaN"},
		{"negative backlog free share", func() error {
			_, err := New(c, cfgWith(func(c *Config) { c.BacklogFreeShare = -0.1 }), tree())
			return err
		}, ErrConfig, "BacklogFreeShare -0.1"},
		{"negative hold budget", func() error { _, err := New(c, cfgWith(func(c *Config) { c.Hold.Budget = -1 }), tree()); return err }, ErrConfig, "Hold.Budget"},
		{"no holds allowed", func() error { _, err := New(c, cfgWith(func(c *Config) { c.Hold.MaxHolds = 0 }), tree()); return err }, ErrConfig, "Hold.MaxHolds 0"},
		{"negative depth", func() error {
			_, err := New(c, cfgWith(func(c *Config) { c.ReservationDepth = -5 }), tree())
			return err
		}, ErrConfig, "ReservationDepth -5"},
		{"negative jobs tested", func() error { _, err := New(c, cfgWith(func(c *Config) { c.MaxJobsTested = -1 }), tree()); return err }, ErrConfig, "MaxJobsTested -1"},
		{"negative keep", func() error { _, err := New(c, cfgWith(func(c *Config) { c.KeepEnded = -1 }), tree()); return err }, ErrConfig, "KeepEnded"},
		{"negative backlog", func() error { _, err := New(c, cfgWith(func(c *Config) { c.BacklogAfter = -1 }), tree()); return err }, ErrConfig, "BacklogAfter"},
		{"negative grace", func() error {
			_, err := New(c, cfgWith(func(c *Config) { c.Preemption.Grace = -time.Second }), tree())
			return err
		}, ErrConfig, "Preemption.Grace"},
		{"exempt time too long", func() error {
			_, err := New(c, cfgWith(func(c *Config) { c.Preemption.ExemptTime = 2 * MaxTimeLimit }), tree())
			return err
		}, ErrConfig, "Preemption.ExemptTime"},
		{"negative searches", func() error {
			_, err := New(c, cfgWith(func(c *Config) { c.Preemption.MaxSearches = -1 }), tree())
			return err
		}, ErrConfig, "Preemption.MaxSearches -1"},
		{"NaN dampening", func() error {
			_, err := New(c, cfgWith(func(c *Config) { c.FairShare.Dampening = math.NaN() }), tree())
			return err
		}, ErrConfig, "Dampening NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.make()
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v; want %v mentioning %q", err, tt.want, tt.msg)
			}
		})
	}
}

// TestChargeBounds: the fair-share tree refuses NaN, infinite and
// negative charges, and times out of range, changing nothing.
func TestChargeBounds(t *testing.T) {
	tree := flatTree(t, fairshare.DefaultConfig(), "a")
	if err := tree.Charge("a", 10, epoch); err != nil {
		t.Fatal(err)
	}
	before := tree.UsageRecords()
	for _, v := range []float64{math.NaN(), math.Inf(1), -1} {
		if err := tree.Charge("a", v, epoch); !errors.Is(err, fairshare.ErrBadCharge) {
			t.Errorf("charge %v: %v", v, err)
		}
	}
	if err := tree.SetUsage([]fairshare.UsageRecord{{Account: "a", GPUSeconds: math.NaN(), At: epoch}, {Account: "zz", GPUSeconds: 1, At: epoch}}); err == nil ||
		!strings.Contains(err.Error(), "NaN") || !strings.Contains(err.Error(), `"zz"`) {
		t.Errorf("SetUsage with bad records: %v", err)
	}
	if d := cmp.Diff(before, tree.UsageRecords()); d != "" {
		t.Errorf("refused charges changed the usage:\n%s", d)
	}
}

// TestAddAccountBelowBusyLeaf: a leaf account that jobs the engine knows
// name (waiting, active, or ended and remembered, which a snapshot holds)
// cannot get a sub-account: it could no longer hold them, the next cycle
// could not rank them and a restore would refuse them. The error names
// the account and its jobs, nothing changes, and the engine schedules
// on. A leaf without such jobs can, and the engine still restores from
// its snapshot.
func TestAddAccountBelowBusyLeaf(t *testing.T) {
	e := richEngine(t)
	before := e.Snapshot()
	err := e.AddAccount("a", "a1", 1)
	// 2 waiting, 2 active and 1 ended within KeepEnded.
	if !errors.Is(err, ErrBadArgument) || !strings.Contains(err.Error(), "account a has 5 jobs") {
		t.Fatalf("AddAccount below a busy leaf: %v, want ErrBadArgument naming account a and its 5 jobs", err)
	}
	if diff := cmp.Diff(before, e.Snapshot()); diff != "" {
		t.Fatalf("a refused AddAccount changed the engine (-before +after):\n%s", diff)
	}
	if _, err := e.Schedule(e.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.AddAccount("b", "b1", 1); err != nil {
		t.Fatalf("AddAccount below leaf b, which has no jobs: %v", err)
	}
	if _, err := e.Schedule(e.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(e.Cluster(), e.Config(), e.Snapshot()); err != nil {
		t.Fatalf("restore after AddAccount: %v", err)
	}
}

// TestAddAccountBelowEndedJobs: an ended job still remembered counts (a
// restore would check it against its account); once forgotten it does
// not.
func TestAddAccountBelowEndedJobs(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.KeepEnded = time.Hour
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.Submit(Job{ID: "x", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch))
	_, err = e.Schedule(epoch)
	must(err)
	must(e.Started("x", epoch))
	must(e.Finished("x", epoch.Add(10*time.Minute)))
	if err := e.AddAccount("a", "a1", 1); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("AddAccount below a leaf with a remembered ended job: %v, want ErrBadArgument", err)
	}
	_, err = e.Schedule(epoch.Add(2 * time.Hour)) // x is forgotten
	must(err)
	must(e.AddAccount("a", "a1", 1))
	if _, err := Restore(c, e.Config(), e.Snapshot()); err != nil {
		t.Fatalf("restore after AddAccount: %v", err)
	}
}

// TestSubmitKeepsItsOwnCopy: the engine keeps its own copy of a submitted
// job. A caller that reuses its Job after Submit (its members slice, its
// node sets), or changes the copy JobSpec returns, changes nothing in the
// engine: job a, one node of 8 GPUs allowed only on node 5 and kept off
// node 4, starts there with the GPUs it asked for, and JobSpec still
// returns it as submitted.
func TestSubmitKeepsItsOwnCopy(t *testing.T) {
	tests := []struct {
		name   string
		change func(j *Job, e *Engine)
	}{
		{"members slice reused", func(j *Job, _ *Engine) {
			j.Gang.Members[0].Request.Nodes, j.Gang.Members[0].Request.GPUsPerNode = 3, 2
		}},
		{"allowed set changed", func(j *Job, _ *Engine) {
			j.Gang.Members[0].Request.Allowed.ClearAll().Set(2)
		}},
		{"excluded set changed", func(j *Job, _ *Engine) {
			j.Gang.Members[0].Request.Excluded.Set(5)
		}},
		{"JobSpec's copy changed", func(_ *Job, e *Engine) {
			spec, _ := e.JobSpec("a")
			r := &spec.Gang.Members[0].Request
			r.Nodes = 3
			r.Allowed.ClearAll()
			r.Excluded.Set(5)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := opsCluster(t)
			e, err := New(c, DefaultConfig(), flatTree(t, DefaultConfig().FairShare, "x"))
			if err != nil {
				t.Fatal(err)
			}
			allowed, excluded := bitset.New(uint(c.NumNodes())), bitset.New(uint(c.NumNodes()))
			allowed.Set(4).Set(5)
			excluded.Set(4)
			j := Job{ID: "a", Account: "x", Gang: member(placement.Request{Nodes: 1, GPUsPerNode: 8, Allowed: allowed, Excluded: excluded})}
			want := cloneGang(j.Gang)
			if err := e.Submit(j, epoch); err != nil {
				t.Fatal(err)
			}
			tc.change(&j, e)
			p, err := e.Schedule(epoch)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Starts) != 1 || p.Starts[0].Allocation.Members[0].Assignment[0].Node != 5 || bits.OnesCount64(p.Starts[0].Allocation.Members[0].Assignment[0].GPUs) != 8 {
				t.Fatalf("job a did not start on node 5 with 8 GPUs: %s", p.Describe(c, epoch))
			}
			spec, _ := e.JobSpec("a")
			want.ID = "a"
			if diff := cmp.Diff(want, spec.Gang, cmp.Comparer(func(a, b *bitset.BitSet) bool { return a.Equal(b) })); diff != "" {
				t.Errorf("JobSpec after the change (-submitted +returned):\n%s", diff)
			}
		})
	}
}

// TestNewKeepsItsOwnConfig: the engine keeps its own copy of its config's
// queues. Changing the caller's config after New, or the copy Config
// returns, changes neither what Queues reports nor what Config returns.
func TestNewKeepsItsOwnConfig(t *testing.T) {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.Quotas.Queues = []QueueSpec{{Name: "a", Guarantee: 32, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Quotas.Queues[0].Guarantee, cfg.Quotas.Queues[0].Name = 8, "b"
	got := e.Config()
	got.Quotas.Queues[0].Maximum = 16
	if q := e.Queues(); len(q) != 1 || q[0].Name != "a" || q[0].Guarantee != 32 || q[0].Maximum != Unlimited {
		t.Errorf("Queues after the caller changed its config: %+v", q)
	}
	if q := e.Config().Quotas.Queues[0]; q.Name != "a" || q.Guarantee != 32 || q.Maximum != Unlimited {
		t.Errorf("Config after the caller changed its config: %+v", q)
	}
}

// TestNewAndTheTree: a refused New leaves the caller's fair-share tree as
// it was (its config not replaced), and an accepted one starts its clock
// at the tree's latest charge: a cycle before it is ErrTimeTravel (it
// panicked reading the tree), one at it plans.
func TestNewAndTheTree(t *testing.T) {
	c := opsCluster(t) // 64 GPUs
	cfg := DefaultConfig()
	treeCfg := fairshare.DefaultConfig()
	tree := flatTree(t, treeCfg, "x")
	cfg.Quotas.Queues = []QueueSpec{{Name: "a", Guarantee: 1000, Maximum: Unlimited}}
	if _, err := New(c, cfg, tree); !errors.Is(err, ErrConfig) {
		t.Fatalf("New with a guarantee above the cluster: %v", err)
	}
	if got := tree.Config(); got != treeCfg {
		t.Errorf("a refused New changed the tree's config:\n%+v\nwas\n%+v", got, treeCfg)
	}
	cfg.Quotas.Queues = nil
	charged := epoch.Add(time.Hour)
	require.NoError(t, tree.Charge("x", 3600, charged))
	e, err := New(c, cfg, tree)
	require.NoError(t, err)
	if got := e.Now(); !got.Equal(charged) {
		t.Errorf("Now = %v, want the tree's latest charge %v", got, charged)
	}
	if _, err := e.Schedule(epoch); !errors.Is(err, ErrTimeTravel) {
		t.Errorf("a cycle before the tree's latest charge: %v, want ErrTimeTravel", err)
	}
	require.NoError(t, e.Submit(Job{ID: "j", Account: "x", Gang: member(placement.NodesOf(1, 8))}, charged))
	if p, err := e.Schedule(charged); err != nil || len(p.Starts) != 1 {
		t.Errorf("a cycle at the tree's latest charge: %v, %v", p, err)
	}
	// Validate agrees with New: FairShare.ClusterGPUs 0 is the
	// cluster's GPU count, also with a job-size weight.
	cfg.FairShare.Weights.JobSize = 1000
	_, errNew := New(c, cfg, flatTree(t, fairshare.DefaultConfig(), "x"))
	if err := cfg.Validate(); err != nil || errNew != nil {
		t.Errorf("a job-size weight without ClusterGPUs: Validate %v, New %v; want both to accept it", err, errNew)
	}
	cfg.FairShare.ClusterGPUs = -1
	if err := cfg.Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("ClusterGPUs -1: Validate %v", err)
	}
}

// TestSnapshotSharesNothing: a snapshot is the caller's own. Changing a
// job record's pending move (a reservation a drain dropped, reported at
// the next cycle if the job's new planned start is later) changes nothing
// in the engine: moved a day earlier in the snapshot, it would be
// reported as a move later; the engine reports none, as its new
// reservation starts when the old one did.
func TestSnapshotSharesNothing(t *testing.T) {
	e := richEngine(t)
	now := epoch.Add(30 * time.Minute)
	r := e.book.resv[0] // richEngine has one
	victim := r.job.job.ID
	if err := e.Drain(r.alloc.Members[0].Assignment[0].Node, now); err != nil {
		t.Fatal(err)
	}
	snap := e.Snapshot()
	changed := 0
	for i := range snap.Jobs {
		if m := snap.Jobs[i].Moved; m != nil {
			m.From, m.By = m.From.Add(-24*time.Hour), "someone else"
			changed++
		}
	}
	if changed == 0 {
		t.Fatalf("no pending move in the snapshot after draining job %s's node", victim)
	}
	p, err := e.Schedule(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Moves) != 0 || len(p.Reservations) != 1 || p.Reservations[0].Job != victim {
		t.Errorf("after the snapshot was changed: moves %+v, reservations %+v", p.Moves, p.Reservations)
	}
}

// TestPlanSharesNothing: a plan is the caller's own. Changing a held
// job's hold status in the plan's list of waiting jobs changes nothing in
// the engine: the job's status reads as before.
func TestPlanSharesNothing(t *testing.T) {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 1, Budget: 4 * time.Hour, MaxHolds: 1}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.NumNodes() {
		if err := e.Submit(Job{ID: fmt.Sprintf("s%d", i), Account: "x", Gang: member(placement.NodesOf(1, 8))}, epoch); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.Schedule(epoch)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Starts {
		if err := e.Started(s.Job, epoch); err != nil {
			t.Fatal(err)
		}
	}
	now := epoch.Add(time.Hour)
	if err := e.Finished("s0", now); err != nil {
		t.Fatal(err)
	}
	if err := e.Submit(Job{ID: "big", Account: "x", Gang: member(placement.Request{Nodes: 4, GPUsPerNode: 8, Required: "leaf"})}, now); err != nil {
		t.Fatal(err)
	}
	if p, err = e.Schedule(now); err != nil {
		t.Fatal(err)
	}
	before, _ := e.Job("big")
	held := 0
	for i := range p.Waiting {
		if h := p.Waiting[i].Hold; h != nil {
			h.GPUs, h.Nodes, h.Target = 99, "elsewhere", 999
			held++
		}
	}
	if held == 0 {
		t.Fatalf("big holds nothing: %s", p.Describe(c, now))
	}
	if after, _ := e.Job("big"); after.Reason != before.Reason {
		t.Errorf("big's status changed with the plan:\nbefore %s\nafter  %s", before.Reason, after.Reason)
	}
}
