package backfill

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// minGPUsRig runs the same events on engines that must agree: the
// default paths, the reference paths (setNaive) and the default paths
// checking each skipped test, each with and without OnlyChangedWaits.
type minGPUsRig struct {
	t       *testing.T
	engines []*Engine
	now     time.Time
	// queues names the queue of the jobs submitted (by ID; none when
	// absent); edit, when set, changes each job before it is submitted.
	queues map[string]string
	edit   func(j *Job)
}

func newMinGPUsRig(t *testing.T, c *topology.Cluster, cfg Config) *minGPUsRig {
	t.Helper()
	r := &minGPUsRig{t: t, now: epoch}
	for i := range 6 {
		cfg := cfg
		cfg.OnlyChangedWaits = i >= 3
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "acct"))
		if err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 1:
			e.setNaive(true)
		case 2:
			e.checkEach = true
		}
		r.engines = append(r.engines, e)
	}
	return r
}

// submit submits a job of one member of n nodes with gpus GPUs each.
func (r *minGPUsRig) submit(id string, n, gpus int, limit time.Duration, qos float64) {
	r.t.Helper()
	j := Job{ID: id, Account: "acct", Queue: r.queues[id], TimeLimit: limit, Submit: r.now, QOS: qos,
		Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(n, gpus)}}}}
	if r.edit != nil {
		r.edit(&j)
	}
	for _, e := range r.engines {
		if err := e.Submit(j, r.now); err != nil {
			r.t.Fatal(err)
		}
	}
}

// schedule runs a cycle on every engine, starts what it starts, checks
// the engines' invariants and that their decisions agree (and their
// reasons, where every waiting job is listed), and returns the first
// engine's plan.
func (r *minGPUsRig) schedule() *Plan {
	r.t.Helper()
	var first *Plan
	for i, e := range r.engines {
		p := scheduleStarted(r.t, e, r.now)
		if err := e.check(); err != nil {
			r.t.Fatalf("engine %d at %v: %v", i, r.now.Sub(epoch), err)
		}
		if first == nil {
			first = p
			continue
		}
		a := &Plan{Starts: first.Starts, Reservations: first.Reservations, Moves: first.Moves, Backlog: first.Backlog}
		b := &Plan{Starts: p.Starts, Reservations: p.Reservations, Moves: p.Moves, Backlog: p.Backlog}
		if !e.cfg.OnlyChangedWaits { // these list every waiting job's reason
			a.Waiting, b.Waiting = first.Waiting, p.Waiting
		}
		if a, b := planJSON(r.t, a), planJSON(r.t, b); a != b {
			r.t.Fatalf("at %v engine %d's decisions differ:\n%s\n%s", r.now.Sub(epoch), i, a, b)
		}
	}
	return first
}

// reserved returns the planned starts of every engine's reservations
// (after checking they agree), as offsets from epoch.
func (r *minGPUsRig) reserved() map[string]time.Duration {
	r.t.Helper()
	var first map[string]time.Duration
	for i, e := range r.engines {
		m := map[string]time.Duration{}
		for _, js := range e.Jobs() {
			if !js.PlannedStart.IsZero() {
				m[js.ID] = js.PlannedStart.Sub(epoch)
			}
		}
		if first == nil {
			first = m
		} else if !maps.Equal(first, m) {
			r.t.Fatalf("engine %d reserves %v, engine 0 %v", i, m, first)
		}
	}
	return first
}

// TestReservationMinGPUs checks which waiting jobs get the reservation
// slots when Config.ReservationMinGPUs keeps all but one for large jobs.
// Two leaves of two 8-GPU nodes, every node busy until 1 to 4 hours from
// now; waiting in age order: two 1-node jobs (8 GPUs), then two 2-node
// jobs (16 GPUs), depth 3. Where L1 and L2 take the two slots past s1's,
// the book is full once the plan is applied, and s2, refused the small
// jobs' slot while a slot was still free at its test, is told SlotsTaken,
// as a repeat of the cycle tells it (recountWaits; it was told
// SmallSlotTaken before stop 68, a count of the book before the later
// reservations of the same walk).
func TestReservationMinGPUs(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		min     int
		after   time.Duration // ReservationAnyAfter
		want    []string      // jobs with a reservation
		waiting []string      // jobs without one, told what they lack now (WaitResources)
		noSlot  NoSlotCode    // and why they got no slot
	}{
		{"off", 0, 0, []string{"s1", "s2", "L1"}, []string{"L2"}, SlotsTaken},
		{"more than a node (MultiNode: 9)", MultiNode, 0, []string{"s1", "L1", "L2"}, []string{"s2"}, SlotsTaken},
		{"16 GPUs", 16, 0, []string{"s1", "L1", "L2"}, []string{"s2"}, SlotsTaken},
		{"17 GPUs: every job small", 17, 0, []string{"s1"}, []string{"s2", "L1", "L2"}, SmallSlotTaken},
		{"8 GPUs: every job large", 8, 0, []string{"s1", "s2", "L1"}, []string{"L2"}, SlotsTaken},
		// s1 has waited 4 minutes, s2 3: both past 2m30s take any slot
		// (s1's counting as the small jobs' one), and L2 finds none.
		{"both small jobs past ReservationAnyAfter", MultiNode, 150 * time.Second, []string{"s1", "s2", "L1"}, []string{"L2"}, SlotsTaken},
		// s1 alone is past 3m30s, and holds the small jobs' one slot.
		{"one small job past ReservationAnyAfter", MultiNode, 210 * time.Second, []string{"s1", "L1", "L2"}, []string{"s2"}, SlotsTaken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ReservationDepth, cfg.ReservationMinGPUs, cfg.ReservationAnyAfter = 3, tc.min, tc.after
			r := newMinGPUsRig(t, c, cfg)
			for i, id := range []string{"run1", "run2", "run3", "run4"} {
				r.submit(id, 1, 8, time.Duration(i+1)*time.Hour, 0)
			}
			if p := r.schedule(); len(p.Starts) != 4 {
				t.Fatalf("starts %+v, want the four running jobs", p.Starts)
			}
			for _, j := range []struct {
				id string
				n  int
			}{{"s1", 1}, {"s2", 1}, {"L1", 2}, {"L2", 2}} {
				r.now = r.now.Add(time.Minute)
				r.submit(j.id, j.n, 8, time.Hour, 0)
			}
			r.now = r.now.Add(time.Minute)
			p := r.schedule()
			got := slices.Sorted(maps.Keys(r.reserved()))
			if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(got, want) {
				t.Fatalf("reservations for %v, want %v", got, want)
			}
			var waiting []string
			for _, w := range p.Waiting {
				if w.Code == WaitResources {
					waiting = append(waiting, w.Job)
					if w.NoSlot != tc.noSlot {
						t.Errorf("%s told %v (%q), want %v", w.Job, w.NoSlot, w.Message(epoch), tc.noSlot)
					}
				}
			}
			if slices.Sort(waiting); !slices.Equal(waiting, slices.Sorted(slices.Values(tc.waiting))) {
				t.Fatalf("waiting for resources: %v, want %v", waiting, tc.waiting)
			}
		})
	}
}

// TestFreedSmallSlotGoesByRank is TestFreedSlotGoesByRank for the one
// slot of jobs below ReservationMinGPUs: when the small job holding it
// starts in the middle of a walk, a small job ranked below it must not
// take the slot from a small job ranked above it that wanted it; the
// slot waits for the next cycle (NextEvent at once), which gives it to
// the higher-ranked job.
//
// Four 16-GPU nodes (MultiNode: 17 GPUs), depth 2. short (8 GPUs, 1 h) and
// half (8 GPUs, 3 h) share a node, long holds the other three (3 h). r
// (8 GPUs, small) reserves the small slot at 1 h. a (a whole node,
// small, ranked above r by its QOS) and b (8 GPUs, small, ranked below)
// arrive; short ends at 30 m: the walk meets a (no whole node free), r
// (fits and starts), then b.
func TestFreedSmallSlotGoesByRank(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 16})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReservationDepth, cfg.ReservationMinGPUs = 2, MultiNode
	r := newMinGPUsRig(t, c, cfg)
	r.submit("long", 3, 16, 3*time.Hour, 0)
	r.submit("short", 1, 8, time.Hour, 0)
	r.submit("half", 1, 8, 3*time.Hour, 0)
	if p := r.schedule(); len(p.Starts) != 3 {
		t.Fatalf("starts %+v, want long, short and half", p.Starts)
	}
	r.now = r.now.Add(time.Minute)
	r.submit("r", 1, 8, time.Hour, 0)
	r.schedule()
	if got := r.reserved(); len(got) != 1 || got["r"] != time.Hour {
		t.Fatalf("reservations %v, want r's at 1h", got)
	}
	r.now = r.now.Add(time.Minute)
	r.submit("a", 1, 16, time.Hour, 1) // QOS: ranked above r
	r.now = r.now.Add(time.Minute)
	r.submit("b", 1, 8, time.Hour, 0)
	r.schedule()
	if got := r.reserved(); len(got) != 1 || got["r"] != time.Hour {
		t.Fatalf("with a and b waiting: reservations %v, want r's alone (the small slot is r's)", got)
	}

	r.now = epoch.Add(30 * time.Minute)
	for _, e := range r.engines {
		if err := e.Finished("short", r.now); err != nil {
			t.Fatal(err)
		}
	}
	p := r.schedule()
	if len(p.Starts) != 1 || p.Starts[0].Job != "r" {
		t.Fatalf("starts %+v, want r's alone", p.Starts)
	}
	if got := r.reserved(); len(got) != 0 {
		t.Fatalf("after r started: reservations %v, want none (the small slot freed behind a waits for the next cycle)", got)
	}
	// a was refused while r held the small slot; b after r started, the
	// slot then kept for a.
	if len(p.Waiting) != 2 {
		t.Errorf("waiting %+v, want a and b", p.Waiting)
	}
	for _, w := range p.Waiting {
		want := map[string]NoSlotCode{"a": SmallSlotTaken, "b": SlotKept}[w.Job]
		if w.Code != WaitResources || w.NoSlot != want {
			t.Errorf("%s: %v %v (%q), want Resources %v", w.Job, w.Code, w.NoSlot, w.Message(epoch), want)
		}
	}
	for i, e := range r.engines {
		if next, ok := e.NextEvent(); !ok || !next.Equal(r.now.Add(time.Nanosecond)) {
			t.Fatalf("engine %d: NextEvent %v %v, want a cycle at once", i, next, ok)
		}
	}
	r.now = r.now.Add(time.Nanosecond)
	r.schedule()
	if got := r.reserved(); len(got) != 1 || got["a"] != 3*time.Hour {
		t.Fatalf("next cycle: reservations %v, want a's at 3h (a whole node when long and half end)", got)
	}
}

// TestReservationMinGPUsValidate checks the ranges of
// ReservationMinGPUs and ReservationAnyAfter.
func TestReservationMinGPUsValidate(t *testing.T) {
	for _, tc := range []struct {
		min int
		ok  bool
	}{{MultiNode - 1, false}, {MultiNode, true}, {0, true}, {64, true}} {
		cfg := DefaultConfig()
		cfg.ReservationMinGPUs = tc.min
		if err := cfg.Validate(); (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("ReservationMinGPUs %d: %v", tc.min, err)
		}
	}
	for _, tc := range []struct {
		after time.Duration
		ok    bool
	}{{-time.Second, false}, {0, true}, {24 * time.Hour, true}, {MaxTimeLimit + 1, false}} {
		cfg := DefaultConfig()
		cfg.ReservationAnyAfter = tc.after
		if err := cfg.Validate(); (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("ReservationAnyAfter %v: %v", tc.after, err)
		}
	}
}

// TestSlotKeptForRefusedSmallJob: when the small job holding the small
// jobs' one slot starts in the middle of a walk that refused a small job
// ranked above it, the slot is kept for that job: neither a gang nor an
// aged small job ranked below it takes it, and the next cycle (NextEvent
// at once) gives it the slot, as when the holder left before the walk
// (the control). Four 16-GPU nodes: long (three nodes, 3 h), short and
// half (8 GPUs each on the fourth node, 1 h and 3 h); r (8 GPUs) holds
// the small slot from short's end; a (a whole node, ranked first) waits.
// At 30 minutes short ends and r starts in the walk. Found by review.
func TestSlotKeptForRefusedSmallJob(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		after   time.Duration // ReservationAnyAfter
		others  []string      // 2-node gangs (L...) or an aged small job (A), ranked below a
		control bool          // r is cancelled before the walk instead
		want    []string
		told    map[string]NoSlotCode // at 30m, why jobs got no slot
	}{
		// L1 holds a slot from the start; L2 and L3 arrive at 30m: L2
		// takes the free slot, L3 would take r's (kept for a); in the
		// control a takes it first, and L3 finds every slot held.
		{"gangs", 0, []string{"L1", "L2", "L3"}, false, []string{"a", "L1", "L2"}, map[string]NoSlotCode{"a": SmallSlotTaken, "L3": SlotKept}},
		{"gangs/control", 0, []string{"L1", "L2", "L3"}, true, []string{"a", "L1", "L2"}, map[string]NoSlotCode{"L3": SlotsTaken}},
		// A (a whole node) waited since 1m: aged from 26m; a only from
		// 35m.
		{"aged", 25 * time.Minute, []string{"A"}, false, []string{"a", "A"}, map[string]NoSlotCode{"a": SmallSlotTaken, "A": SlotKept}},
		{"aged/control", 25 * time.Minute, []string{"A"}, true, []string{"a", "A"}, map[string]NoSlotCode{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ReservationDepth, cfg.ReservationMinGPUs, cfg.ReservationAnyAfter = 3, MultiNode, tc.after
			cfg.Hold.Enabled = false
			r := newMinGPUsRig(t, c, cfg)
			r.submit("long", 3, 16, 3*time.Hour, 0)
			r.submit("short", 1, 8, time.Hour, 0)
			r.submit("half", 1, 8, 3*time.Hour, 0)
			r.schedule()
			r.now = r.now.Add(time.Minute)
			r.submit("r", 1, 8, time.Hour, 0.5)
			switch tc.others[0] {
			case "A":
				r.submit("A", 1, 16, time.Hour, 0)
			default:
				r.submit("L1", 2, 16, time.Hour, 0)
			}
			r.schedule()
			r.now = epoch.Add(10 * time.Minute)
			r.submit("a", 1, 16, time.Hour, 1) // ranked first
			r.schedule()
			// r holds the small slot from short's end; L1 a gang slot
			// (from 3 h), and A, small and not yet aged, none.
			before := map[string]time.Duration{"r": time.Hour}
			if tc.others[0] != "A" {
				before["L1"] = 3 * time.Hour
			}
			if got := r.reserved(); !maps.Equal(got, before) {
				t.Fatalf("before short ends: reservations %v, want %v", got, before)
			}
			r.now = epoch.Add(30 * time.Minute)
			for _, e := range r.engines {
				var err error
				if tc.control {
					err = e.Cancel("r", r.now)
				} else {
					err = e.Finished("short", r.now)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if tc.others[0] != "A" {
				r.submit("L2", 2, 16, time.Hour, 0)
				r.submit("L3", 2, 16, time.Hour, 0)
			}
			p := r.schedule()
			if !tc.control && (len(p.Starts) != 1 || p.Starts[0].Job != "r") {
				t.Fatalf("starts %+v, want r's", p.Starts)
			}
			told := map[string]NoSlotCode{}
			for _, w := range p.Waiting {
				if w.NoSlot != 0 {
					told[w.Job] = w.NoSlot
				}
			}
			if !maps.Equal(told, tc.told) {
				t.Errorf("at 30m jobs were told %v, want %v", told, tc.told)
			}
			if _, ok := r.reserved()["a"]; !ok && !tc.control {
				for i, e := range r.engines {
					if next, ok := e.NextEvent(); !ok || !next.Equal(r.now.Add(time.Nanosecond)) {
						t.Fatalf("engine %d: NextEvent %v %v, want a cycle at once for the slot kept for a", i, next, ok)
					}
				}
			}
			r.now = r.now.Add(time.Nanosecond)
			r.schedule()
			got := slices.Sorted(maps.Keys(r.reserved()))
			if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(got, want) {
				t.Fatalf("reservations for %v, want %v", got, want)
			}
		})
	}
}

// TestSmallSlotTakenRepeat: a small job refused the small jobs' slot
// while a slot was free is told SlotsTaken once a large job ranked below
// it takes the last free slot later in the walk (recountWaits), so that a
// cycle run again at the same time, nothing changed, which meets the full
// book at its test (noSlot names a full book first), tells it the same
// (the first cycle told it SmallSlotTaken, the repeat SlotsTaken). Two
// leaves of two 8-GPU nodes, all busy for 2 h; depth 2; s1 (one node)
// holds the small slot; a (one node, ranked first) and L (two nodes)
// arrive together.
func TestSmallSlotTakenRepeat(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReservationDepth, cfg.ReservationMinGPUs = 2, MultiNode
	cfg.Hold.Enabled = false
	r := newMinGPUsRig(t, c, cfg)
	r.submit("busy", 4, 8, 2*time.Hour, 0)
	if p := r.schedule(); len(p.Starts) != 1 {
		t.Fatalf("starts %+v, want busy", p.Starts)
	}
	r.now = r.now.Add(time.Minute)
	r.submit("s1", 1, 8, time.Hour, 0)
	r.schedule()
	if got := r.reserved(); len(got) != 1 || got["s1"] == 0 {
		t.Fatalf("reservations %v, want s1's alone", got)
	}
	r.now = r.now.Add(time.Minute)
	r.submit("a", 1, 8, time.Hour, 0.5)
	r.submit("L", 2, 8, time.Hour, 0)
	for _, name := range []string{"first", "repeat"} {
		p := r.schedule()
		if got := r.reserved(); len(got) != 2 || got["s1"] == 0 || got["L"] == 0 {
			t.Fatalf("%s: reservations %v, want s1's and L's", name, got)
		}
		var told []string
		for _, w := range p.Waiting {
			if w.Job != "a" {
				continue
			}
			told = append(told, w.Message(epoch))
			if w.Code != WaitResources || w.NoSlot != SlotsTaken {
				t.Errorf("%s cycle: a told %v %v (%q), want Resources SlotsTaken", name, w.Code, w.NoSlot, w.Message(epoch))
			}
		}
		if len(told) != 1 {
			t.Fatalf("%s cycle: a listed %d times, want once: %+v", name, len(told), p.Waiting)
		}
	}
}
