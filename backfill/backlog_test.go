package backfill

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestBacklogAfter checks Config.BacklogAfter at depth 3, slots past the
// first kept for gangs: before a small job has waited BacklogAfter the
// gangs take the slots past the first; once one has (with time alone), a
// job may take a new reservation only while no job ranked above it holds
// one (the first in line takes one beyond the depth), the others are told
// why (Backlog), the plan names the small job (Plan.Backlog, and a line
// of Describe), and the reservations held are kept; once no small job
// has waited that long, the slots open again. The control (BacklogAfter
// 0) shows the slots rule alone. Four 8-GPU nodes, each busy until 1 to
// 4 hours from the start; six engines agree (naive, checked, listing
// changes).
func TestBacklogAfter(t *testing.T) {
	c := backlogCluster(t)
	for _, tc := range []struct {
		name    string
		backlog time.Duration
		at40    []string              // reservations after the cycle at 40m
		told40  map[string]NoSlotCode // why jobs got no slot at 40m
		at50    []string              // after s and T are cancelled at 50m
	}{
		{"backlog", 30 * time.Minute, []string{"G1", "G2", "T", "s"}, map[string]NoSlotCode{"G3": Backlog}, []string{"G1", "G2", "G3"}},
		{"control", 0, []string{"G1", "G2", "s"}, map[string]NoSlotCode{"T": SlotsTaken, "G3": SlotsTaken}, []string{"G1", "G2", "G3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newBacklogRig(t, c, tc.backlog)
			r.now = epoch.Add(time.Minute)
			r.submit("s", 1, 4, time.Hour, 0)
			r.submit("G1", 2, 8, time.Hour, 0)
			r.submit("G2", 2, 8, time.Hour, 0)
			r.schedule()
			if got, want := slices.Sorted(maps.Keys(r.reserved())), []string{"G1", "G2", "s"}; !slices.Equal(got, want) {
				t.Fatalf("at 1m (no backlog yet) reservations for %v, want %v", got, want)
			}
			// G3 arrives at 20m and finds the slots taken; at 35m, with
			// no event, s has waited 34m: the backlog begins with time
			// alone (the engines that list only changes must see it).
			r.now = epoch.Add(20 * time.Minute)
			r.submit("G3", 2, 8, time.Hour, 0)
			if got := toldNoSlot(r.schedule()); !maps.Equal(got, map[string]NoSlotCode{"G3": SlotsTaken}) {
				t.Errorf("at 20m jobs were told %v, want G3 SlotsTaken", got)
			}
			r.now = epoch.Add(35 * time.Minute)
			p35 := r.schedule()
			if got, want := toldNoSlot(p35), map[string]NoSlotCode{"G3": tc.told40["G3"]}; !maps.Equal(got, want) {
				t.Errorf("at 35m jobs were told %v, want %v", got, want)
			}
			// The plan names the job whose wait makes the backlog.
			wantBy, desc := "", p35.Describe(c, epoch)
			if tc.backlog > 0 {
				wantBy = "s"
			}
			if p35.Backlog != wantBy || strings.Contains(desc, "backlog: s has waited past BacklogAfter") != (wantBy != "") {
				t.Errorf("at 35m Plan.Backlog = %q, want %q; Describe:\n%s", p35.Backlog, wantBy, desc)
			}
			// At 40m T arrives, ranked first by its QOS (a small job).
			r.now = epoch.Add(40 * time.Minute)
			r.submit("T", 1, 4, time.Hour, 1)
			checkSlots(t, r, r.schedule(), "40m", tc.at40, tc.told40)
			// The small jobs leave: no job has waited 30m but the gangs
			// (not below ReservationMinGPUs), so the slots open again.
			r.now = epoch.Add(50 * time.Minute)
			for _, e := range r.engines {
				for _, id := range []string{"s", "T"} {
					if err := e.Cancel(id, r.now); err != nil {
						t.Fatal(err)
					}
				}
			}
			if p := r.schedule(); p.Backlog != "" {
				t.Errorf("at 50m Plan.Backlog = %q, want none", p.Backlog)
			}
			if got := slices.Sorted(maps.Keys(r.reserved())); !slices.Equal(got, tc.at50) {
				t.Errorf("at 50m reservations for %v, want %v", got, tc.at50)
			}
		})
	}
}

// TestBacklogNotQuota checks that a small job its queue's quota holds
// back does not make a backlog, however long it
// waits: a queue at its limit is no backlog of the cluster. Every node
// is busy (b1 to b4); small job q waits from 1m and gangs G1 and G2 take
// reservations at 1m. G3 arrives at 40m, after q has waited past
// BacklogAfter (30m): it takes the third slot unless there is a backlog.
// Cases: q in a queue at its maximum of 8 GPUs (b1 runs there); q in a
// queue at its borrowing limit of 8 (b1 again); q, which may not be
// preempted, in a queue whose guarantee of 8 b1 uses (the gangs' queue
// guarantees the other 24, and its jobs may be preempted); the control, q in
// the gangs' queue, waiting for GPUs only (it takes the small jobs'
// slot), which makes a backlog; and q an elastic gang whose queue's
// maximum takes its minimum but not its full size, which makes one too.
// Plan.Backlog names q where it makes the backlog, and the six engines
// agree on it.
func TestBacklogNotQuota(t *testing.T) {
	c := backlogCluster(t)
	open := func(name string, max int) QueueSpec {
		return QueueSpec{Name: name, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: max, Weight: 1}
	}
	for _, tc := range []struct {
		name   string
		queues []QueueSpec
		qOf    map[string]string // the queue of b1 to b4 and q; the gangs': "main"
		qCode  WaitCode          // why q waits at 1m
		want   []string          // reservations after the cycle at 40m
		told   map[string]NoSlotCode
		by     string // Plan.Backlog at 40m
		edit   func(j *Job)
	}{
		{"maximum", []QueueSpec{open("capped", 8), open("main", Unlimited)},
			map[string]string{"b1": "capped", "b2": "main", "b3": "main", "b4": "main", "q": "capped"},
			WaitQuota, []string{"G1", "G2", "G3"}, map[string]NoSlotCode{}, "", nil},
		{"borrowing", []QueueSpec{{Name: "lim", BorrowingLimit: 8, LendingLimit: Unlimited, Maximum: Unlimited}, open("main", Unlimited)},
			map[string]string{"b1": "lim", "b2": "main", "b3": "main", "b4": "main", "q": "lim"},
			WaitQuota, []string{"G1", "G2", "G3"}, map[string]NoSlotCode{}, "", nil},
		{"control", []QueueSpec{open("capped", 8), open("main", Unlimited)},
			map[string]string{"b1": "capped", "b2": "main", "b3": "main", "b4": "main", "q": "main"},
			WaitReserved, []string{"G1", "G2", "q"}, map[string]NoSlotCode{"G3": Backlog}, "q", nil},
		{"no-borrow", []QueueSpec{{Name: "guar", Guarantee: 8, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
			{Name: "main", Guarantee: 24, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited}},
			map[string]string{"b1": "guar", "b2": "main", "b3": "main", "b4": "main", "q": "guar"},
			WaitQuota, []string{"G1", "G2", "G3"}, map[string]NoSlotCode{}, "", func(j *Job) {
				if j.ID != "q" { // every job but q may borrow
					j.Preemption = preempt.Requeue
				}
			}},
		{"elastic", []QueueSpec{open("capped", 12), open("main", Unlimited)},
			map[string]string{"b1": "capped", "b2": "main", "b3": "main", "b4": "main", "q": "capped"},
			WaitReserved, []string{"G1", "G2", "q"}, map[string]NoSlotCode{"G3": Backlog}, "q", func(j *Job) {
				if j.ID == "q" { // 8 GPUs on 2 nodes, or 4 on 1: its quota takes the 4
					j.Gang.Members[0].Request, j.Gang.Members[0].Min = placement.NodesOf(2, 4), 1
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ReservationDepth, cfg.ReservationMinGPUs, cfg.ReservationAnyAfter, cfg.BacklogAfter = 3, MultiNode, 0, 30*time.Minute
			cfg.Hold.Enabled = false
			cfg.Quotas = QuotaConfig{Queues: tc.queues}
			r := newMinGPUsRig(t, c, cfg)
			r.edit = tc.edit
			r.queues = map[string]string{"G1": "main", "G2": "main", "G3": "main"}
			maps.Copy(r.queues, tc.qOf)
			for i, id := range []string{"b1", "b2", "b3", "b4"} {
				r.submit(id, 1, 8, time.Duration(i+1)*time.Hour, 0)
			}
			if p := r.schedule(); len(p.Starts) != 4 {
				t.Fatalf("%d jobs started, want the 4 that fill the cluster", len(p.Starts))
			}
			r.now = epoch.Add(time.Minute)
			r.submit("q", 1, 4, time.Hour, 0)
			r.submit("G1", 2, 8, time.Hour, 0)
			r.submit("G2", 2, 8, time.Hour, 0)
			if w := waitingOf(r.schedule(), "q"); w == nil || w.Code != tc.qCode {
				t.Fatalf("at 1m q waits %+v, want code %v", w, tc.qCode)
			}
			r.now = epoch.Add(40 * time.Minute)
			r.submit("G3", 2, 8, time.Hour, 0)
			p := r.schedule()
			checkSlots(t, r, p, "40m", tc.want, tc.told)
			if p.Backlog != tc.by {
				t.Errorf("at 40m Plan.Backlog = %q, want %q", p.Backlog, tc.by)
			}
		})
	}
}

// TestBacklogClaimCounts checks that a small job holding a claim (it
// reclaims borrowed GPUs and waits for its victim to release them) counts
// for the backlog: its quota has granted it, and its claim's GPUs are
// counted in its queue's use already. Queue guar guarantees and allows 4
// GPUs; main guarantees the other 28 and borrows guar's 4 with b1 to b4,
// which may be preempted. q (4 GPUs, guar) reclaims at 1m; the host never
// reports the victim's release, so q still waits, with its claim, at 40m,
// past BacklogAfter (30m): the plan names it as the backlog's cause.
func TestBacklogClaimCounts(t *testing.T) {
	c := backlogCluster(t)
	cfg := DefaultConfig()
	cfg.ReservationDepth, cfg.ReservationMinGPUs, cfg.ReservationAnyAfter, cfg.BacklogAfter = 3, MultiNode, 0, 30*time.Minute
	cfg.Hold.Enabled = false
	cfg.Quotas = QuotaConfig{Queues: []QueueSpec{
		{Name: "guar", Guarantee: 4, LendingLimit: Unlimited, Maximum: 4},
		{Name: "main", Guarantee: 28, BorrowingLimit: Unlimited, LendingLimit: Unlimited, Maximum: Unlimited},
	}}
	r := newMinGPUsRig(t, c, cfg)
	r.queues = map[string]string{"q": "guar"}
	r.edit = func(j *Job) {
		if j.ID != "q" {
			j.Preemption = preempt.Requeue
		}
	}
	for i, id := range []string{"b1", "b2", "b3", "b4"} {
		r.queues[id] = "main"
		r.submit(id, 1, 8, time.Duration(i+1)*time.Hour, 0)
	}
	if p := r.schedule(); len(p.Starts) != 4 {
		t.Fatalf("%d jobs started, want the 4 that fill the cluster", len(p.Starts))
	}
	r.now = epoch.Add(time.Minute)
	r.submit("q", 1, 4, time.Hour, 0)
	if p := r.schedule(); len(p.Preemptions) != 1 || p.Preemptions[0].Preemptor != "q" {
		t.Fatalf("at 1m preemptions %+v, want one for q", p.Preemptions)
	}
	r.now = epoch.Add(40 * time.Minute)
	p := r.schedule()
	if w := waitingOf(p, "q"); w == nil || w.Code == WaitQuota {
		t.Fatalf("at 40m q waits %+v: want it waiting with its claim, not for quota", w)
	}
	if p.Backlog != "q" {
		t.Errorf("at 40m Plan.Backlog = %q, want q (a job with a claim counts)", p.Backlog)
	}
}

// checkSlots checks the reservations every engine of r holds after the
// cycle of plan p (at when) and why jobs were refused a slot in it.
func checkSlots(t *testing.T, r *minGPUsRig, p *Plan, when string, resv []string, told map[string]NoSlotCode) {
	t.Helper()
	if got := slices.Sorted(maps.Keys(r.reserved())); !slices.Equal(got, resv) {
		t.Errorf("at %s reservations for %v, want %v", when, got, resv)
	}
	if got := toldNoSlot(p); !maps.Equal(got, told) {
		t.Errorf("at %s jobs were told %v, want %v", when, got, told)
	}
}

// waitingOf returns job id's entry in p.Waiting, or nil.
func waitingOf(p *Plan, id string) *Waiting {
	for i := range p.Waiting {
		if p.Waiting[i].Job == id {
			return &p.Waiting[i]
		}
	}
	return nil
}

// backlogCluster returns the backlog tests' cluster: four 8-GPU nodes,
// two leaves of two under one spine.
func backlogCluster(t *testing.T) *topology.Cluster {
	t.Helper()
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newBacklogRig returns the rig of the backlog tests at depth 3, slots
// past the first kept for gangs, BacklogAfter backlog, with every node
// busy (b1 to b4, one node each, for 1 to 4 hours).
func newBacklogRig(t *testing.T, c *topology.Cluster, backlog time.Duration) *minGPUsRig {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ReservationDepth, cfg.ReservationMinGPUs, cfg.ReservationAnyAfter, cfg.BacklogAfter = 3, MultiNode, 0, backlog
	cfg.Hold.Enabled = false
	r := newMinGPUsRig(t, c, cfg)
	for i, id := range []string{"b1", "b2", "b3", "b4"} {
		r.submit(id, 1, 8, time.Duration(i+1)*time.Hour, 0)
	}
	if p := r.schedule(); len(p.Starts) != 4 {
		t.Fatalf("%d jobs started, want the 4 that fill the cluster", len(p.Starts))
	}
	return r
}

// toldNoSlot returns why the waiting jobs of p got no slot (those told).
func toldNoSlot(p *Plan) map[string]NoSlotCode {
	told := map[string]NoSlotCode{}
	for _, w := range p.Waiting {
		if w.NoSlot != 0 {
			told[w.Job] = w.NoSlot
		}
	}
	return told
}

// TestBacklogNoSlotText checks the Backlog code's name and words.
func TestBacklogNoSlotText(t *testing.T) {
	if got := Backlog.String(); got != "Backlog" {
		t.Errorf("Backlog.String() = %q", got)
	}
	if got := Backlog.text(); !strings.Contains(got, "backlog") || !strings.Contains(got, "BacklogAfter") || !strings.Contains(got, "ranked above this one holds a reservation") {
		t.Errorf("Backlog.text() = %q: it should name the backlog, BacklogAfter and who may reserve", got)
	}
}

// TestBacklogFirstStartsNow: during a backlog, a first job in line that
// starts now holds no reservation, so the next job may take one (EASY).
// Four 8-GPU nodes busy for 1 to 4 hours; s waits from 1m (the backlog
// from 31m); at 36m the last node frees early, F (first in line) starts
// on it and H (second, a 2-node gang) takes the reservation.
func TestBacklogFirstStartsNow(t *testing.T) {
	c := backlogCluster(t)
	r := newBacklogRig(t, c, 30*time.Minute)
	r.now = epoch.Add(time.Minute)
	r.submit("s", 1, 8, time.Hour, 0) // a whole node: it cannot share F's
	r.schedule()
	r.now = epoch.Add(36 * time.Minute)
	for _, e := range r.engines {
		if err := e.Finished("b4", r.now); err != nil {
			t.Fatal(err)
		}
	}
	r.submit("F", 1, 4, 10*time.Minute, 1)
	r.submit("H", 2, 8, time.Hour, 0.9)
	p := r.schedule()
	if len(p.Starts) != 1 || p.Starts[0].Job != "F" {
		t.Fatalf("starts %+v, want F's", p.Starts)
	}
	if got, want := slices.Sorted(maps.Keys(r.reserved())), []string{"H", "s"}; !slices.Equal(got, want) {
		t.Errorf("reservations for %v, want %v (F, first in line, started: H, next, takes one)", got, want)
	}
	if told := toldNoSlot(p); len(told) != 0 {
		t.Errorf("jobs told %v, want none refused", told)
	}
}

// TestBacklogKeepsSkips checks that a plan listing only changes keeps
// passing over unchanged jobs during a backlog: in a cycle with nothing
// new, the jobs after the first one holding a reservation are passed over
// (by their marks or their classes) by the engine that lists changes, and
// the engine that checks each pass-over agrees with a real test. The
// cycle the backlog begins in passes over none. Every node is busy for
// hours (newBacklogRig); G, first in line, holds a reservation, and ten
// small jobs queue behind it (the first of them keeps the small jobs'
// slot it took before the backlog).
func TestBacklogKeepsSkips(t *testing.T) {
	c := backlogCluster(t)
	r := newBacklogRig(t, c, 30*time.Minute)
	r.now = epoch.Add(time.Minute)
	r.submit("G", 4, 8, time.Hour, 1) // ranked first by its QOS
	for i := range 10 {
		r.submit(fmt.Sprintf("s%d", i), 1, 4, time.Hour, 0)
	}
	fast, checked := r.engines[3], r.engines[5] // listing changes; and checking each skip
	passed := func() (int, int) {
		return fast.cyc.quietSkips + fast.cyc.classSkips, checked.cyc.quietChecked + checked.cyc.classChecked
	}
	steps := []struct {
		at       time.Duration
		backlog  bool
		passOver bool // the engines pass over (or would, checked) some jobs
	}{
		{2 * time.Minute, false, false}, // the jobs are new: each is tested
		{3 * time.Minute, false, true},  // nothing new: the usual skips
		{40 * time.Minute, true, false}, // the backlog begins with time alone: every job tested
		{41 * time.Minute, true, true},  // nothing new: the jobs behind G are passed over
		{42 * time.Minute, true, true},  // and again
	}
	for _, st := range steps {
		r.now = epoch.Add(st.at)
		f0, c0 := passed()
		p := r.schedule()
		f1, c1 := passed()
		if fast.cyc.backlog != st.backlog {
			t.Fatalf("at %v backlog %v, want %v", st.at, fast.cyc.backlog, st.backlog)
		}
		if len(p.Starts) != 0 {
			t.Fatalf("at %v %d jobs started; every node is busy", st.at, len(p.Starts))
		}
		if st.passOver != (f1 > f0) || st.passOver != (c1 > c0) {
			t.Errorf("at %v passed over %d (fast) and %d (checked) jobs; want some: %v", st.at, f1-f0, c1-c0, st.passOver)
		}
	}
}

// TestBacklogNotFromScatteredGPUs: a job of a whole node's GPUs that has
// waited past BacklogAfter while a twentieth of the cluster's GPUs or more
// stand free waits for a node to be wholly free (the free GPUs scattered
// one per node), not for a deep queue: it makes no backlog. Once the free
// GPUs are taken, it does; and a job smaller than a node makes one
// whatever is free. Eight nodes of 8 GPUs, each running a 7-GPU job (8
// GPUs free, one in eight). The share is Config.BacklogFreeShare (the
// default's twentieth): at one in eight exactly the job makes none, above
// it (a seventh) or with the rule off (0) it makes one.
func TestBacklogNotFromScatteredGPUs(t *testing.T) {
	c := opsCluster(t)
	for _, tc := range []struct {
		name  string
		fill  bool    // the scattered GPUs taken by single-GPU jobs
		size  int     // GPUs of the waiting job
		share float64 // Config.BacklogFreeShare (-1: the default's)
		want  string
	}{
		{"whole node, GPUs free", false, 8, -1, ""},
		{"whole node, none free", true, 8, -1, "w"},
		{"smaller than a node, GPUs free", false, 4, -1, "w"},
		{"whole node, GPUs free, rule off", false, 8, 0, "w"},
		// w's own reservation plans one of the eight free GPUs (a node
		// whose 7 GPUs run r0): seven count (unreservedFree).
		{"whole node, seven free beside w's reservation, the share 7/64", false, 8, 7.0 / 64, ""},
		{"whole node, seven free beside w's reservation, the share an eighth", false, 8, 1.0 / 8, "w"},
		// A tiny share is no share of 0 GPUs: the rule's tolerance
		// must not make a cluster with nothing free roomy.
		{"whole node, none free, a tiny share", true, 8, 1e-12, "w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Hold.Enabled = false
			cfg.BacklogAfter = 30 * time.Minute
			if tc.share >= 0 {
				cfg.BacklogFreeShare = tc.share
			}
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			e.checkEach = true
			for n := range 8 {
				if err := e.Submit(Job{ID: fmt.Sprintf("r%d", n), Account: "a", TimeLimit: 10 * time.Hour,
					Gang: member(placement.NodesOf(1, 7))}, epoch); err != nil {
					t.Fatal(err)
				}
			}
			startAll(t, e, epoch)
			if tc.fill {
				for n := range 8 {
					if err := e.Submit(Job{ID: fmt.Sprintf("f%d", n), Account: "a", TimeLimit: 10 * time.Hour,
						Gang: member(placement.NodesOf(1, 1))}, epoch); err != nil {
						t.Fatal(err)
					}
				}
				startAll(t, e, epoch)
			}
			if err := e.Submit(Job{ID: "w", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, tc.size))}, epoch); err != nil {
				t.Fatal(err)
			}
			startAll(t, e, epoch.Add(time.Minute))
			p := startAll(t, e, epoch.Add(time.Hour))
			if free := e.ledger.State().FreeGPUs(); free != map[bool]int{false: 8, true: 0}[tc.fill] {
				t.Fatalf("%d GPUs free, want the scattered 8 (or none once filled)", free)
			}
			if p.Backlog != tc.want {
				t.Errorf("Plan.Backlog = %q, want %q:\n%s", p.Backlog, tc.want, p.Describe(c, epoch))
			}
		})
	}
}

// TestBacklogNotRoomyOnReservedGPUs: GPUs free on GPUs a reservation
// plans to use do not make the cluster roomy (Config.BacklogFreeShare).
// Two nodes run a 6-GPU job each and six run 8-GPU jobs: 4 GPUs of 64
// are free, over the default's twentieth. A 16-GPU gang g and a
// whole-node job w wait. When the 6-GPU jobs end first, g and w reserve
// those two nodes, and the 4 free GPUs are theirs, kept for them: w's
// wait makes a backlog. (Counted as scattered, they kept it off: at
// Philly load 4 the reservations' own draining kept four slots open
// while 250 whole-node jobs had waited two days; benchmarks/README.md,
// "What makes the Philly load-4 p95 and max".) When the 8-GPU jobs end
// first, the two reserve among those nodes, the 4 free GPUs are
// scattered, and w's wait makes none.
func TestBacklogNotRoomyOnReservedGPUs(t *testing.T) {
	c := opsCluster(t)
	for _, tc := range []struct {
		name                 string
		sixLimit, eightLimit time.Duration
		want                 string
	}{
		{"free GPUs on the reserved nodes", 5 * time.Hour, 10 * time.Hour, "w"},
		{"free GPUs on other nodes", 10 * time.Hour, 5 * time.Hour, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Hold.Enabled = false
			cfg.BacklogAfter = 30 * time.Minute
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			e.checkEach = true
			for n := range 8 {
				gpus, limit := 8, tc.eightLimit
				if n < 2 {
					gpus, limit = 6, tc.sixLimit
				}
				if err := e.Submit(Job{ID: fmt.Sprintf("r%d", n), Account: "a", TimeLimit: limit,
					Gang: member(placement.NodesOf(1, gpus))}, epoch); err != nil {
					t.Fatal(err)
				}
			}
			startAll(t, e, epoch)
			if err := e.Submit(Job{ID: "g", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(2, 8))}, epoch); err != nil {
				t.Fatal(err)
			}
			if err := e.Submit(Job{ID: "w", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch); err != nil {
				t.Fatal(err)
			}
			startAll(t, e, epoch.Add(time.Minute))
			p := startAll(t, e, epoch.Add(time.Hour))
			if free := e.ledger.State().FreeGPUs(); free != 4 {
				t.Fatalf("%d GPUs free, want 4", free)
			}
			if len(p.Reservations) != 2 {
				t.Fatalf("%d reservations, want g's and w's:\n%s", len(p.Reservations), p.Describe(c, epoch))
			}
			if p.Backlog != tc.want {
				t.Errorf("Plan.Backlog = %q, want %q:\n%s", p.Backlog, tc.want, p.Describe(c, epoch))
			}
		})
	}
}
