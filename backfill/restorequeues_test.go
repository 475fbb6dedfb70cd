package backfill

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
)

// requireRoundTrip checks that e's snapshot, restored under cfg and
// snapshotted again, gives the same bytes, and that the restored copy
// passes the invariant checker.
func requireRoundTrip(t *testing.T, e *Engine, cfg Config) {
	t.Helper()
	first, err := json.Marshal(e.Snapshot())
	require.NoError(t, err)
	r, err := Restore(e.c, cfg, snapshotCopy(t, e.Snapshot()))
	require.NoError(t, err)
	require.NoError(t, r.check())
	second, err := json.Marshal(r.Snapshot())
	require.NoError(t, err)
	require.True(t, bytes.Equal(first, second), "the round trip changed the snapshot:\n%s\n%s", first, second)
}

// TestQuotaRestoreAcrossQueueChanges: an operator renames or removes a
// queue, gives it children, or turns quotas on or off, and restarts the
// host from a snapshot taken under the old queues. The restore succeeds:
// without quotas every job's queue is dropped and jobs run and wait as
// without quotas; under queues, a running job whose queue is gone (or
// that has none) runs on where it runs, counted in no queue, and a
// waiting one waits for quota, told why in words, with no reservation,
// hold or claim and in no queue's demand, and never starts. Every
// restored engine passes the invariant checker after every event, and a
// Snapshot, Restore, Snapshot round trip gives the same bytes.
func TestQuotaRestoreAcrossQueueChanges(t *testing.T) {
	c := opsCluster(t) // 8 nodes of 8 GPUs
	queue := func(name, parent string) QueueSpec {
		return QueueSpec{Name: name, Parent: parent, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}
	}
	config := func(qs ...QueueSpec) Config {
		cfg := DefaultConfig()
		cfg.Hold.Enabled = false
		cfg.Quotas = QuotaConfig{Queues: qs}
		return cfg
	}
	ab := config(queue("a", ""), queue("b", ""))
	for _, tc := range []struct {
		name     string
		from, to Config
		// reason: the waiting job's reason under the new queues ("":
		// it is not unfit; it runs once the GPUs are free).
		reason string
	}{
		{"queue renamed", ab, config(queue("a2", ""), queue("b", "")), `queue "a" is not in the config (Config.Quotas): it cannot start unless it is submitted again to a queue`},
		{"queue removed", ab, config(queue("b", "")), `queue "a" is not in the config (Config.Quotas): it cannot start unless it is submitted again to a queue`},
		{"queue removed, strict order", ab, func() Config {
			cfg := config(queue("b", ""))
			cfg.Quotas.Queues[0].StrictOrder = true
			return cfg
		}(), `queue "a" is not in the config (Config.Quotas): it cannot start unless it is submitted again to a queue`},
		{"queue given children", ab, config(queue("a", ""), queue("a1", "a"), queue("b", "")),
			`queue "a" has queues below it now, and a job runs only in a queue without children: it cannot start unless it is submitted again to one of them`},
		{"quotas turned on", config(), ab, "the job has no queue, and queues are configured now (Config.Quotas): it cannot start unless it is submitted again to a queue"},
		{"quotas turned off", ab, config(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(c, tc.from, flatTree(t, tc.from.FairShare, "x"))
			require.NoError(t, err)
			e.checkEach = true
			job := func(id, q string, nodes int) Job {
				if len(tc.from.Quotas.Queues) == 0 {
					q = ""
				}
				return Job{ID: id, Account: "x", Queue: q, TimeLimit: time.Hour, Gang: member(placement.NodesOf(nodes, 8))}
			}
			// r (queue a, 16 GPUs) and rb (queue b, 8) run; w (queue a,
			// every node) waits, reserved at their end.
			require.NoError(t, e.Submit(job("r", "a", 2), epoch))
			require.NoError(t, e.Submit(job("rb", "b", 1), epoch))
			startAll(t, e, epoch)
			require.NoError(t, e.Submit(job("w", "a", 8), epoch))
			p, err := e.Schedule(epoch.Add(time.Minute))
			require.NoError(t, err)
			require.Len(t, p.Reservations, 1)
			ran, _ := e.Allocation("r")

			r, err := Restore(c, tc.to, snapshotCopy(t, e.Snapshot()))
			require.NoError(t, err)
			require.NoError(t, r.check())
			r.checkEach = true
			requireRoundTrip(t, r, tc.to)
			for _, id := range []string{"r", "rb"} {
				st, _ := r.Job(id)
				require.Equal(t, StateRunning, st.State, id)
			}
			now, _ := r.Allocation("r")
			require.Equal(t, ran, now, "the running gang moved")
			st, _ := r.Job("w")
			if tc.reason == "" {
				// Quotas off: every job runs as without quotas, its
				// queue's name kept; w keeps its reservation and starts
				// once the GPUs are free.
				for _, j := range r.Jobs() {
					require.NotEmpty(t, j.Queue, j.ID)
				}
				require.Equal(t, StateReserved, st.State)
				p, err = r.Schedule(epoch.Add(2 * time.Minute))
				require.NoError(t, err)
				require.Len(t, p.Reservations, 1)
				require.NoError(t, r.Finished("r", epoch.Add(3*time.Minute)))
				require.NoError(t, r.Finished("rb", epoch.Add(3*time.Minute)))
				p, err = r.Schedule(epoch.Add(3 * time.Minute))
				require.NoError(t, err)
				require.Len(t, p.Starts, 1)
				require.Equal(t, "w", p.Starts[0].Job)
				require.NoError(t, r.check())
				requireRoundTrip(t, r, tc.to)
				return
			}
			require.Equal(t, StatePending, st.State, "w kept its reservation")
			// r counts in no queue; w in no queue's demand.
			for _, q := range r.Queues() {
				require.Zero(t, q.Waiting, q.Name)
				if q.Name == "b" && len(tc.from.Quotas.Queues) > 0 {
					require.Equal(t, 8, q.Used)
				} else {
					require.Zero(t, q.Used, q.Name)
				}
			}
			for m := 2; m < 6; m++ {
				p, err = r.Schedule(epoch.Add(time.Duration(m) * time.Minute))
				require.NoError(t, err)
				checkStarts(t, r, p)
				require.Equal(t, tc.reason, reason(t, p, "w"))
				require.Empty(t, p.Reservations)
				require.Empty(t, p.Holds)
				require.Empty(t, p.Preemptions)
				require.NoError(t, r.check())
				requireRoundTrip(t, r, tc.to)
			}
			// Another job of queue b still runs beside r, counted in b.
			nb := job("nb", "b", 1)
			nb.Queue = "b"
			require.NoError(t, r.Submit(nb, epoch.Add(6*time.Minute)))
			p, err = r.Schedule(epoch.Add(6 * time.Minute))
			require.NoError(t, err)
			require.Len(t, p.Starts, 1)
			require.Equal(t, "nb", p.Starts[0].Job)
			require.NoError(t, r.Started("nb", epoch.Add(6*time.Minute)))
			nbUsed := 16
			if len(tc.from.Quotas.Queues) == 0 {
				nbUsed = 8 // rb had no queue
			}
			require.Equal(t, nbUsed, r.Queues()[slices.IndexFunc(r.Queues(), func(q QueueStatus) bool { return q.Name == "b" })].Used)
			// Every GPU free: w still never starts.
			for _, id := range []string{"r", "rb", "nb"} {
				require.NoError(t, r.Finished(id, epoch.Add(7*time.Minute)))
			}
			p, err = r.Schedule(epoch.Add(7 * time.Minute))
			require.NoError(t, err)
			require.Empty(t, p.Starts)
			require.Equal(t, tc.reason, reason(t, p, "w"))
			require.NoError(t, r.check())
			requireRoundTrip(t, r, tc.to)
			// Under the old queues it runs.
			back, err := Restore(c, tc.from, snapshotCopy(t, r.Snapshot()))
			require.NoError(t, err)
			p, err = back.Schedule(epoch.Add(8 * time.Minute))
			require.NoError(t, err)
			require.Len(t, p.Starts, 1)
			require.Equal(t, "w", p.Starts[0].Job)
		})
	}
}

// TestQuotaRestoreAcrossQueueChangesReclaim: b0's claim reclaims queue
// b's guarantee from two of queue a's gangs (reclaimingEngine). With
// quotas turned off the claim is dropped, its victims still stop, and
// the restored engine then runs as any without quotas. With queue a
// renamed the claim (queue b's) is kept: its victims, of no queue now,
// stop, and requeued they wait for quota, told their queue is gone; a's
// other gangs run on, counted in no queue, and a job of a higher class
// may preempt them (they take no queue's guarantee).
func TestQuotaRestoreAcrossQueueChangesReclaim(t *testing.T) {
	victims := func(e *Engine) []string {
		var out []string
		for _, j := range e.Jobs() {
			if j.State == StatePreempting {
				out = append(out, j.ID)
			}
		}
		return out
	}
	t.Run("quotas turned off", func(t *testing.T) {
		e := reclaimingEngine(t)
		vs := victims(e)
		require.Len(t, vs, 2)
		cfg := e.Config()
		cfg.Quotas = QuotaConfig{}
		r, err := Restore(e.c, cfg, snapshotCopy(t, e.Snapshot()))
		require.NoError(t, err)
		require.NoError(t, r.check())
		r.checkEach = true
		require.Empty(t, r.book.claims, "the reclaim claim was kept without queues")
		require.Equal(t, vs, victims(r), "the victims do not stop")
		requireRoundTrip(t, r, cfg)
		now := epoch.Add(time.Hour + time.Minute)
		for _, id := range vs {
			require.NoError(t, r.Preempted(id, now))
		}
		for m := range 3 {
			p, err := r.Schedule(now.Add(time.Duration(m) * time.Minute))
			require.NoError(t, err)
			for _, s := range p.Starts {
				require.NoError(t, r.Started(s.Job, now.Add(time.Duration(m)*time.Minute)))
			}
			require.NoError(t, r.check())
			requireRoundTrip(t, r, cfg)
		}
		require.Equal(t, 64, r.UsedGPUs())
	})
	t.Run("queue renamed", func(t *testing.T) {
		e := reclaimingEngine(t)
		vs := victims(e)
		cfg := e.Config()
		cfg.Quotas.Queues = slices.Clone(cfg.Quotas.Queues)
		cfg.Quotas.Queues[0].Name = "a2"
		cfg.Preemption.Enabled = true
		r, err := Restore(e.c, cfg, snapshotCopy(t, e.Snapshot()))
		require.NoError(t, err)
		require.NoError(t, r.check())
		r.checkEach = true
		require.Len(t, r.book.claims, 1, "queue b's claim was dropped")
		require.Equal(t, vs, victims(r))
		requireRoundTrip(t, r, cfg)
		qs := r.Queues()
		require.Equal(t, 0, qs[0].Used, "a2 counts the old queue's gangs")
		require.Equal(t, 16, qs[1].Used, "b counts its claim")
		now := epoch.Add(time.Hour + time.Minute)
		for _, id := range vs {
			require.NoError(t, r.Preempted(id, now))
		}
		p, err := r.Schedule(now)
		require.NoError(t, err)
		require.Len(t, p.Starts, 1)
		require.Equal(t, "b0", p.Starts[0].Job)
		require.NoError(t, r.Started("b0", now))
		for _, id := range vs {
			st, _ := r.Job(id)
			require.Equal(t, StateRequeued, st.State, id)
			require.Equal(t, `queue "a" is not in the config (Config.Quotas): it cannot start unless it is submitted again to a queue`, reason(t, p, id))
		}
		requireRoundTrip(t, r, cfg)
		// A job of a higher class in b preempts a gang of no queue.
		hi := Job{ID: "hi", Account: "x", Queue: "b", Class: 1, Gang: member(placement.NodesOf(1, 8))}
		require.NoError(t, r.Submit(hi, now.Add(time.Minute)))
		p, err = r.Schedule(now.Add(time.Minute))
		require.NoError(t, err)
		require.Len(t, p.Preemptions, 1, "%s", p.Describe(r.c, epoch))
		require.Equal(t, "hi", p.Preemptions[0].Preemptor)
		require.Equal(t, byte('a'), p.Preemptions[0].Victim[0], "a gang of no queue is the victim")
		require.NoError(t, r.check())
		requireRoundTrip(t, r, cfg)
		for _, id := range vs {
			require.NoError(t, r.Cancel(id, now.Add(2*time.Minute)))
		}
		require.NoError(t, r.check())
		requireRoundTrip(t, r, cfg)
	})
}

// TestQuotaRestoreOrphanDoesNotGrow: an elastic gang that grows
// (Job.Grow), held to one node by its queue's maximum, runs on after its
// queue is removed, counted in no queue; it takes no more GPUs (growth
// is bounded by a queue's quota, and it has none), though they are free.
func TestQuotaRestoreOrphanDoesNotGrow(t *testing.T) {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "a", BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: 8},
		{Name: "b", BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	require.NoError(t, err)
	g := Job{ID: "g", Account: "x", Queue: "a", Grow: true, TimeLimit: time.Hour, Gang: member(placement.NodesOf(4, 8))}
	g.Gang.Members[0].Min = 1
	require.NoError(t, e.Submit(g, epoch))
	startAll(t, e, epoch)
	a, _ := e.Allocation("g")
	require.Equal(t, 8, a.GPUs())
	to := cfg
	to.Quotas.Queues = cfg.Quotas.Queues[1:]
	r, err := Restore(c, to, snapshotCopy(t, e.Snapshot()))
	require.NoError(t, err)
	r.checkEach = true
	for m := 1; m <= 3; m++ {
		p, err := r.Schedule(epoch.Add(time.Duration(m) * time.Minute))
		require.NoError(t, err)
		require.Empty(t, p.PodChanges)
		require.NoError(t, r.check())
	}
	a, _ = r.Allocation("g")
	require.Equal(t, 8, a.GPUs(), "the gang of no queue grew")
	requireRoundTrip(t, r, to)
	// Under a config without queues it grows.
	to.Quotas = QuotaConfig{}
	r, err = Restore(c, to, snapshotCopy(t, r.Snapshot()))
	require.NoError(t, err)
	p, err := r.Schedule(epoch.Add(4 * time.Minute))
	require.NoError(t, err)
	require.NotEmpty(t, p.PodChanges)
}

// TestQuotaRestoreOrphanWindowed: under a window of one job tested per
// cycle (MaxJobsTested) and a queue in strict order, a waiting job whose
// queue was removed is passed over in some cycles (the strict order's
// head is looked for among such jobs: strictTested) and told why it can
// never start in the others; it never starts, nor holds back b's jobs.
func TestQuotaRestoreOrphanWindowed(t *testing.T) {
	c := opsCluster(t)
	queue := func(name string) QueueSpec {
		return QueueSpec{Name: name, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited, StrictOrder: true}
	}
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{queue("a"), queue("b")}}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "x"))
	require.NoError(t, err)
	job := func(id, q string, nodes int) Job {
		return Job{ID: id, Account: "x", Queue: q, TimeLimit: time.Hour, Gang: member(placement.NodesOf(nodes, 8))}
	}
	require.NoError(t, e.Submit(job("r", "a", 2), epoch))
	startAll(t, e, epoch)
	require.NoError(t, e.Submit(job("w", "a", 8), epoch))
	require.NoError(t, e.Submit(job("x1", "b", 7), epoch))
	require.NoError(t, e.Submit(job("x2", "b", 7), epoch))
	to := cfg
	to.Quotas.Queues = to.Quotas.Queues[1:]
	to.MaxJobsTested = 1
	r, err := Restore(c, to, snapshotCopy(t, e.Snapshot()))
	require.NoError(t, err)
	r.checkEach = true
	told := 0
	for m := 1; m <= 6; m++ {
		p, err := r.Schedule(epoch.Add(time.Duration(m) * time.Minute))
		require.NoError(t, err)
		require.Empty(t, p.Starts)
		if got := reason(t, p, "w"); strings.Contains(got, `queue "a" is not in the config`) {
			told++
		}
		require.NoError(t, r.check())
		requireRoundTrip(t, r, to)
	}
	require.NotZero(t, told, "w was never told why")
	require.NoError(t, r.Finished("r", epoch.Add(7*time.Minute)))
	p, err := r.Schedule(epoch.Add(7 * time.Minute))
	require.NoError(t, err)
	require.Len(t, p.Starts, 1, "%s", p.Describe(r.c, epoch))
	require.Equal(t, byte('x'), p.Starts[0].Job[0])
}
