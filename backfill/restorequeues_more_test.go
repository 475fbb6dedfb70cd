package backfill

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestRestoreQueueChangesRandom: random quota workloads restored mid-run
// under a changed queue config, then driven on with requeues and round
// trips; every cycle the invariants hold (a review's stress test).
func TestRestoreQueueChangesRandom(t *testing.T) {
	n := 60
	for w := range n {
		w := w
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(w), 58))
			e, jobs, cfg := quotaEngineWith(t, r, w, w%2 == 0, func(c *Config) {
				if w%4 == 3 {
					for i := range c.Quotas.Queues {
						q := c.Quotas.Queues[i].Name
						if !slices.ContainsFunc(c.Quotas.Queues, func(x QueueSpec) bool { return x.Parent == q }) {
							c.Quotas.Queues[i].StrictOrder = true
						}
					}
				}
				c.Preemption.Enabled = true
			})
			for i := range jobs {
				if r.IntN(4) == 0 {
					m := &jobs[i].Gang.Members[0]
					if m.Request.Nodes > 1 {
						m.Min = 1
						jobs[i].Grow = r.IntN(2) == 0
					}
				}
			}
			d := newDriver(t, e, jobs, map[string]time.Duration{})
			d.release = func() time.Duration { return time.Duration(r.IntN(6)) * time.Minute }
			e.checkEach = true
			d.afterCycle = func(p *Plan) {
				for _, x := range p.Reservations {
					d.planned[x.Job] = x.FirstStart
				}
			}
			d.run(epoch.Add(time.Duration(60+r.IntN(120)) * time.Minute))
			// Change the queues.
			to := cfg
			to.Quotas.Queues = slices.Clone(cfg.Quotas.Queues)
			var leaves []int
			for i := range to.Quotas.Queues {
				if e.quota.leaf[i] {
					leaves = append(leaves, i)
				}
			}
			k := leaves[r.IntN(len(leaves))]
			kind := w % 4
			switch kind {
			case 0: // rename
				to.Quotas.Queues[k].Name += "x"
			case 1: // remove
				to.Quotas.Queues = slices.Delete(to.Quotas.Queues, k, k+1)
			case 2: // give children
				q := to.Quotas.Queues[k]
				to.Quotas.Queues = append(to.Quotas.Queues, QueueSpec{Name: q.Name + "c", Parent: q.Name, Guarantee: q.Guarantee,
					BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited, Weight: 1})
			case 3: // quotas off
				to.Quotas = QuotaConfig{}
			}
			snap := snapshotCopy(t, e.Snapshot())
			re, err := Restore(e.c, to, snap)
			if err != nil {
				t.Skipf("restore: %v", err)
			}
			re.checkEach = true
			orph := 0
			for _, j := range re.jobs.byID {
				if re.quota != nil && j.queue < 0 {
					orph++
				}
			}
			t.Logf("kind %d: %d in no queue, %d running %d pending claims %d", kind, orph, len(re.jobs.running), len(re.jobs.pending), len(re.book.claims))
			if err := re.check(); err != nil {
				t.Fatal(err)
			}
			d.e = re
			// Future submits to gone queues go to a live leaf.
			for i := range d.events {
				j := d.events[i].job
				if j == nil {
					continue
				}
				if re.quota == nil {
					j.Queue = ""
					continue
				}
				if q, ok := re.quota.index[j.Queue]; !ok || !re.quota.leaf[q] {
					for a := range re.quota.names {
						if re.quota.leaf[a] {
							j.Queue = re.quota.names[a]
							break
						}
					}
				}
			}
			cycles := 0
			d.afterCycle = func(p *Plan) {
				cycles++
				for _, x := range p.Reservations {
					d.planned[x.Job] = x.FirstStart
				}
				if err := d.e.check(); err != nil {
					t.Fatalf("cycle %d: %v", cycles, err)
				}
				// Fail (requeue) a running job now and then.
				if r.IntN(3) == 0 {
					for _, j := range d.e.jobs.running {
						if j.phase == StateRunning && !slices.ContainsFunc(p.Starts, func(s Start) bool { return s.Job == j.job.ID }) {
							id := j.job.ID
							if err := d.e.Failed(id, d.now, true); err != nil {
								t.Fatalf("failed %s: %v", id, err)
							}
							d.runs[id]++
							break
						}
					}
				}
				if cycles%5 == 0 {
					first, err := json.Marshal(d.e.Snapshot())
					if err != nil {
						t.Fatal(err)
					}
					x, err := Restore(d.e.c, to, snapshotCopy(t, d.e.Snapshot()))
					if err != nil {
						t.Fatalf("cycle %d: same-config restore: %v", cycles, err)
					}
					second, _ := json.Marshal(x.Snapshot())
					if !bytes.Equal(first, second) {
						t.Fatalf("cycle %d: round trip changed the snapshot", cycles)
					}
				}
			}
			d.run(time.Time{})
			// Every job not in no queue ends.
			for _, j := range d.e.jobs.pending {
				if j.unfit == "" {
					t.Logf("left waiting: %s (%s) %+v", j.job.ID, j.job.Queue, j.wait)
				}
			}
		})
	}
}

// TestRestoreQuotasOffAndBack: an operator restarts once with quotas off
// (Config.Quotas empty) and then again with the queues as they were:
// every job is back in its queue. Before, the first restore dropped every
// job's queue, so at the second every waiting job was in no queue and
// could never start (a review's input).
func TestRestoreQuotasOffAndBack(t *testing.T) {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "a", Guarantee: 0, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
		{Name: "b", Guarantee: 0, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	job := func(id, q string, nodes int) Job {
		return Job{ID: id, Account: "x", Queue: q, TimeLimit: time.Hour, Gang: member(placement.NodesOf(nodes, 8))}
	}
	if err := e.Submit(job("r", "a", 2), epoch); err != nil {
		t.Fatal(err)
	}
	startAll(t, e, epoch)
	if err := e.Submit(job("w", "a", 8), epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schedule(epoch.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	off := cfg
	off.Quotas = QuotaConfig{}
	mid, err := Restore(c, off, snapshotCopy(t, e.Snapshot()))
	if err != nil {
		t.Fatal(err)
	}
	back, err := Restore(c, cfg, snapshotCopy(t, mid.Snapshot()))
	if err != nil {
		t.Fatal(err)
	}
	if used := back.Queues()[0].Used; used != 16 {
		t.Errorf("queue a counts %d GPUs after quotas were turned off and on again, want r's 16", used)
	}
	if err := back.Finished("r", epoch.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	p, err := back.Schedule(epoch.Add(2 * time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Starts) != 1 {
		t.Fatalf("w, of queue a, does not start on a free cluster under its own queues: %q", reason(t, p, "w"))
	}
}

// TestRestoreOwnQueueReclaimRefused: a reclaim claim with a victim of
// its own queue (by the names recorded) is refused under any config.
// Before, with quotas off or the claimant's queue gone, the corrupt claim
// was dropped as stale and the restore succeeded (a review's input).
func TestRestoreOwnQueueReclaimRefused(t *testing.T) {
	e := reclaimingEngine(t)
	good := e.Snapshot()
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"same queues", func(*Config) {}},
		{"quotas off", func(c *Config) { c.Quotas = QuotaConfig{} }},
		{"claimant's queue renamed", func(c *Config) {
			c.Quotas.Queues = slices.Clone(c.Quotas.Queues)
			c.Quotas.Queues[1].Name = "b2"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshotCopy(t, good)
			for i := range snap.Jobs {
				if snap.Jobs[i].State == StatePreempting {
					snap.Jobs[i].Queue = "b" // a victim of b0's own queue
				}
			}
			cfg := e.Config()
			tc.cfg(&cfg)
			if _, err := Restore(e.c, cfg, snap); err == nil {
				t.Fatal("a reclaim claim with a victim of its own queue was restored")
			}
		})
	}
}

// TestRestoreStaleRecordStillChecked: a reservation record that Restore
// refuses (its end is not a time limit after its start) is refused too
// when its job is in no queue and the reservation would be dropped as
// stale. Before, restorer.stale ran before the record's own checks (a
// review's input).
func TestRestoreStaleRecordStillChecked(t *testing.T) {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "a", BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
		{Name: "b", BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, nodes int) Job {
		return Job{ID: id, Account: "x", Queue: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(nodes, 8))}
	}
	if err := e.Submit(job("r", 2), epoch); err != nil {
		t.Fatal(err)
	}
	startAll(t, e, epoch)
	if err := e.Submit(job("w", 8), epoch); err != nil {
		t.Fatal(err)
	}
	if p, err := e.Schedule(epoch.Add(time.Minute)); err != nil || len(p.Reservations) != 1 {
		t.Fatalf("%v %v", err, p)
	}
	snap := snapshotCopy(t, e.Snapshot())
	snap.Reservations[0].End = snap.Reservations[0].Start.Add(time.Minute) // not a time limit after its start
	if _, err := Restore(c, cfg, snapshotCopy(t, snap)); err == nil {
		t.Fatal("the same config takes the bad reservation")
	}
	renamed := cfg
	renamed.Quotas.Queues = slices.Clone(cfg.Quotas.Queues)
	renamed.Quotas.Queues[0].Name = "a2"
	if _, err := Restore(c, renamed, snapshotCopy(t, snap)); err == nil {
		t.Fatal("a bad reservation record was accepted because its job is in no queue")
	}
}

// TestRestoreOrphansReclaimed: queue c borrows 48 GPUs (no time limits)
// while a, guaranteed 32, is idle. c is renamed at a restart: its gangs
// run on in no queue. a's 32-GPU job, which its guarantee covers,
// reclaims them as it would under the old config. Before, no reclaim
// took a gang of no queue back and a's job waited for good (a review's
// input).
func TestRestoreOrphansReclaimed(t *testing.T) {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "a", Guarantee: 32, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
		{Name: "c", BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		j := Job{ID: fmt.Sprintf("c%d", i), Account: "x", Queue: "c", Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}
		if err := e.Submit(j, epoch); err != nil {
			t.Fatal(err)
		}
	}
	startAll(t, e, epoch)
	now := epoch.Add(time.Hour)
	snap := e.Snapshot()
	want := Job{ID: "a0", Account: "x", Queue: "a", Gang: member(placement.NodesOf(4, 8))}
	for _, tc := range []struct {
		name string
		to   Config
	}{{"same config", cfg}, {"c renamed", func() Config {
		to := cfg
		to.Quotas.Queues = slices.Clone(cfg.Quotas.Queues)
		to.Quotas.Queues[1].Name = "c2"
		return to
	}()}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Restore(c, tc.to, snapshotCopy(t, snap))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Submit(want, now); err != nil {
				t.Fatal(err)
			}
			p, err := r.Schedule(now)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Preemptions) == 0 {
				t.Fatalf("a's job, within a's guarantee, reclaims nothing: %q", reason(t, p, "a0"))
			}
		})
	}
}

// TestRestoreRequeuedOrphanKeepsMark: a running gang of no queue failed
// with requeue, or on a node that goes down, waits told its queue is
// gone (a review's test).
func TestRestoreRequeuedOrphanKeepsMark(t *testing.T) {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "a", BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
		{Name: "b", BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2"} {
		if err := e.Submit(Job{ID: id, Account: "x", Queue: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch); err != nil {
			t.Fatal(err)
		}
	}
	startAll(t, e, epoch)
	to := cfg
	to.Quotas.Queues = cfg.Quotas.Queues[1:]
	r, err := Restore(c, to, snapshotCopy(t, e.Snapshot()))
	if err != nil {
		t.Fatal(err)
	}
	r.checkEach = true
	now := epoch.Add(time.Minute)
	if err := r.Failed("r1", now, true); err != nil {
		t.Fatal(err)
	}
	a, _ := r.Allocation("r2")
	if _, err := r.NodeDown(a.Members[0].Assignment[0].Node, now); err != nil {
		t.Fatal(err)
	}
	p, err := r.Schedule(now)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2"} {
		if got := reason(t, p, id); got != `queue "a" is not in the config (Config.Quotas): it cannot start unless it is submitted again to a queue` {
			t.Errorf("%s: %q", id, got)
		}
	}
	if len(p.Starts) != 0 {
		t.Fatal("an orphan started")
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreOrphansOutOfShares: the GPUs jobs in no queue hold are no
// queue's to share. Queue c runs four 1-node gangs without time limits
// (32 of 64 GPUs); it is removed at a restart, and a and b, equal
// weights, no guarantees, wait with eight 1-node jobs each (a's first).
// Each is given 16 of the 32 free GPUs and runs 16. Before, the shares
// divided all 64 (32 each): a took the 32 free, b none.
func TestRestoreOrphansOutOfShares(t *testing.T) {
	c := opsCluster(t)
	U := Unlimited
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "a", BorrowingLimit: U, LendingLimit: U, Maximum: U},
		{Name: "b", BorrowingLimit: U, LendingLimit: U, Maximum: U},
		{Name: "c", BorrowingLimit: U, LendingLimit: U, Maximum: U}}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	require.NoError(t, err)
	for i := range 4 {
		require.NoError(t, e.Submit(Job{ID: fmt.Sprintf("c%d", i), Account: "x", Queue: "c", Preemption: preempt.Requeue,
			Gang: member(placement.NodesOf(1, 8))}, epoch))
	}
	startAll(t, e, epoch)
	to := cfg
	to.Quotas.Queues = slices.Clone(cfg.Quotas.Queues[:2])
	r, err := Restore(c, to, snapshotCopy(t, e.Snapshot()))
	require.NoError(t, err)
	r.checkEach = true
	now := epoch.Add(time.Minute)
	submitNodeJobs(t, r, now, time.Second, []string{"a", "b"})
	p := startAll(t, r, now.Add(time.Minute))
	require.NoError(t, r.check())
	for _, s := range r.Queues() {
		require.Equal(t, 16, s.Used, "queue %s:\n%s", s.Name, p.Describe(c, epoch))
		require.InDelta(t, 16.0, s.Share, 1e-9, "queue %s's share", s.Name)
	}
}

// TestRestoreOrphansOutOfPools: the GPUs jobs in no queue hold are out of
// the pools they are in too, not only out of the cluster's shares. Queue
// c, on nodes 0-1, runs two 1-node gangs (16 GPUs) and is removed at a
// restart; a is confined to nodes 0-3 (half of which c's orphans fill),
// b may use any node; equal weights, eight 1-node jobs each, a's first.
// a can use 16 GPUs, so its share is 16 and b's the 32 other free ones:
// every GPU is used. Before, a's pool counted all 32 of its GPUs, a was
// given 24, held 8 back from b that it could never use, and 8 stood
// idle. With a second queue d on a's pool (a group of siblings), the
// group's union loses the orphans' GPUs the same way.
func TestRestoreOrphansOutOfPools(t *testing.T) {
	c := opsCluster(t)
	U := Unlimited
	q := func(name, nodes string) QueueSpec {
		return QueueSpec{Name: name, BorrowingLimit: U, LendingLimit: U, Maximum: U, Nodes: nodes}
	}
	four, two := opsNodeNames(c, 4), opsNodeNames(c, 2)
	for _, tc := range []struct {
		name   string
		queues []QueueSpec
		shares map[string]float64
	}{
		{"one queue on the pool", []QueueSpec{q("a", four), q("b", "")}, map[string]float64{"a": 16, "b": 32}},
		{"a group on the pool", []QueueSpec{q("a", four), q("d", four), q("b", "")}, map[string]float64{"a": 8, "d": 8, "b": 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Hold.Enabled = false
			cfg.Quotas.Queues = append(slices.Clone(tc.queues), q("c", two))
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
			require.NoError(t, err)
			submitNodeJobs(t, e, epoch, time.Second, []string{"c"}, 2)
			startAll(t, e, epoch)
			to := cfg
			to.Quotas.Queues = tc.queues
			r, err := Restore(c, to, snapshotCopy(t, e.Snapshot()))
			require.NoError(t, err)
			r.checkEach = true
			now := epoch.Add(time.Minute)
			var names []string
			for _, s := range tc.queues {
				names = append(names, s.Name)
			}
			submitNodeJobs(t, r, now, time.Second, names)
			p := startAll(t, r, now.Add(time.Minute))
			require.NoError(t, r.check())
			require.Equal(t, 64, r.UsedGPUs(), "GPUs left idle:\n%s", p.Describe(c, epoch))
			for _, s := range r.Queues() {
				require.InDelta(t, tc.shares[s.Name], s.Share, 1e-9, "queue %s's share", s.Name)
				require.Equal(t, int(tc.shares[s.Name]), s.Used, "queue %s's use", s.Name)
			}
		})
	}
}

// TestRestoreOrphanVictimInItsClaim: a gang of no queue that a reclaim
// preempts counts in no queue's use any more (its GPUs are in the claim,
// counted for the claimer's queue), so it is out of noQueueUsed: it must
// not be taken out of its pools' caps either, or the claimer's queue
// loses the claimed GPUs twice. c fills the cluster with eight 1-node
// gangs and is removed at a restart; a (guarantee 8, on nodes 0-3)
// reclaims one of them for a0, and another on a's pool ends while the
// victim is still being preempted. a's pool can then run 16 GPUs (the
// claim's 8 and the node freed), so with b, equal weights, a's share is
// 12 (its guarantee and half of the 8 above it), as it is once the
// victim has gone.
func TestRestoreOrphanVictimInItsClaim(t *testing.T) {
	c := opsCluster(t)
	U := Unlimited
	four := opsNodeNames(c, 4)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas.Queues = []QueueSpec{
		{Name: "a", Guarantee: 8, BorrowingLimit: U, LendingLimit: U, Maximum: U, Nodes: four},
		{Name: "b", BorrowingLimit: U, LendingLimit: U, Maximum: U},
		{Name: "c", BorrowingLimit: U, LendingLimit: U, Maximum: U}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	require.NoError(t, err)
	submitNodeJobs(t, e, epoch, time.Second, []string{"c"})
	startAll(t, e, epoch)
	require.Equal(t, 64, e.UsedGPUs())
	to := cfg
	to.Quotas.Queues = slices.Clone(cfg.Quotas.Queues[:2])
	r, err := Restore(c, to, snapshotCopy(t, e.Snapshot()))
	require.NoError(t, err)
	r.checkEach = true
	now := epoch.Add(time.Hour)
	submitNodeJobs(t, r, now, time.Second, []string{"a"}, 1)
	p := startAll(t, r, now)
	require.Len(t, p.Preemptions, 1, p.Describe(c, epoch))
	victim := p.Preemptions[0].Victim
	// Another gang of no queue on a's pool ends.
	var ended string
	for i := range 8 {
		id := fmt.Sprintf("c%d", i)
		a, ok := r.Allocation(id)
		if ok && id != victim && a.Members[0].Assignment[0].Node < 4 {
			ended = id
			break
		}
	}
	require.NotEmpty(t, ended)
	now = now.Add(time.Minute)
	require.NoError(t, r.Finished(ended, now))
	for _, q := range []string{"a", "b"} {
		for k := range 4 {
			require.NoError(t, r.Submit(Job{ID: fmt.Sprintf("%s-more%d", q, k), Account: "x", Queue: q, TimeLimit: time.Hour,
				Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, now))
		}
	}
	p, err = r.Schedule(now)
	require.NoError(t, err)
	require.NoError(t, r.check())
	for _, s := range r.Queues() {
		if s.Name == "a" {
			require.InDelta(t, 12.0, s.Share, 1e-9, "a's share while its claim waits for the victim:\n%s", p.Describe(c, epoch))
		}
	}
}

// TestRestoreOutsidePoolInCap: a queue's gangs restored under a narrowed
// pool run on outside it, counted in its use; its pool's cap must count
// them too, or its share is capped below what it already uses. a ran two
// 1-node gangs on nodes 4-5 and is narrowed to nodes 0-1 at a restart; b
// is on nodes 2-7. a waits with two more, b with eight: a can run 32
// (16 on, 16 on its pool), b the 32 free of its pool, every GPU. With
// the cap at a's pool alone, a's share was 16, all it used, and while b
// waited below its own a's jobs waited and nodes 0-1 stood idle.
func TestRestoreOutsidePoolInCap(t *testing.T) {
	c := opsCluster(t)
	U := Unlimited
	nodes := func(lo, hi int) string {
		var names []string
		for n := lo; n < hi; n++ {
			names = append(names, c.NodeName(topology.NodeID(n)))
		}
		return topology.CompressHostlist(names)
	}
	q := func(name, nodes string) QueueSpec {
		return QueueSpec{Name: name, BorrowingLimit: U, LendingLimit: U, Maximum: U, Nodes: nodes}
	}
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas.Queues = []QueueSpec{q("a", nodes(4, 6)), q("b", nodes(2, 8))}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	require.NoError(t, err)
	for i := range 2 {
		require.NoError(t, e.Submit(Job{ID: fmt.Sprintf("old%d", i), Account: "x", Queue: "a", TimeLimit: 2 * time.Hour,
			Preemption: preempt.Requeue, Gang: member(placement.NodesOf(1, 8))}, epoch))
	}
	startAll(t, e, epoch)
	to := cfg
	to.Quotas.Queues = []QueueSpec{q("a", nodes(0, 2)), q("b", nodes(2, 8))}
	r, err := Restore(c, to, snapshotCopy(t, e.Snapshot()))
	require.NoError(t, err)
	r.checkEach = true
	now := epoch.Add(time.Minute)
	submitNodeJobs(t, r, now, time.Second, []string{"a", "b"}, 2, 8)
	p := startAll(t, r, now.Add(time.Minute))
	require.NoError(t, r.check())
	require.Equal(t, 64, r.UsedGPUs(), "GPUs left idle:\n%s", p.Describe(c, epoch))
}
