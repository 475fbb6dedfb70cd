package backfill

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// fifoConfig orders jobs by age only (first come, first served).
func fifoConfig(depth int) Config {
	cfg := DefaultConfig()
	cfg.ReservationDepth = depth
	cfg.FairShare.Weights = fairshare.Weights{Age: 1000}
	cfg.FairShare.MaxAge = 30 * 24 * time.Hour
	return cfg
}

func member(req placement.Request) gang.Spec {
	return gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}
}

// stream is a steady stream of 1-node, 8-GPU jobs: three a minute for the
// given time, each running 60 to 120 minutes (demand of about 270 nodes on
// 250: the cluster stays full), plus one gang of half the default cluster
// (125 nodes) submitted after two hours, running 2 hours.
func stream(r *rand.Rand, span time.Duration, limits bool) ([]Job, map[string]time.Duration) {
	var jobs []Job
	dur := map[string]time.Duration{}
	n := 0
	for t := time.Duration(0); t < span; t += time.Minute {
		for range 3 {
			id := fmt.Sprintf("s%05d", n)
			n++
			d := time.Duration(60+r.IntN(61)) * time.Minute
			j := Job{ID: id, Account: "a", Submit: epoch.Add(t), Gang: member(placement.NodesOf(1, 8))}
			if limits {
				j.TimeLimit = d
			}
			dur[id] = d
			jobs = append(jobs, j)
		}
	}
	big := Job{ID: "big", Account: "a", Submit: epoch.Add(2 * time.Hour), Gang: member(placement.NodesOf(125, 8))}
	if limits {
		big.TimeLimit = 2 * time.Hour
	}
	dur["big"] = 2 * time.Hour
	jobs = append(jobs, big)
	return jobs, dur
}

// TestLargeGangDoesNotStarve: with reservations the half-cluster gang
// starts by its planned time; with reservations off (greedy backfill) the
// small jobs keep taking the freed nodes and it waits for the whole
// stream.
func TestLargeGangDoesNotStarve(t *testing.T) {
	span := 12 * time.Hour
	for _, tc := range []struct {
		name  string
		depth int
	}{{"reservations", 1}, {"no-reservations", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c := topology.Default2000()
			cfg := fifoConfig(tc.depth)
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			jobs, dur := stream(rand.New(rand.NewPCG(5, 5)), span, true)
			d := newDriver(t, e, jobs, dur)
			d.run(time.Time{})
			start, ok := d.started["big"]
			if !ok {
				t.Fatal("big never started")
			}
			switch tc.depth {
			case 1:
				planned, ok := d.planned["big"]
				if !ok {
					t.Fatal("big never got a reservation")
				}
				if start.After(planned) {
					t.Fatalf("big started at %v, after its planned %v", start.Sub(epoch), planned.Sub(epoch))
				}
				if start.Sub(epoch) > 6*time.Hour {
					t.Fatalf("big started at %v: too late", start.Sub(epoch))
				}
				t.Logf("big planned for %v, started at %v", planned.Sub(epoch), start.Sub(epoch))
			case 0:
				if start.Before(epoch.Add(span)) {
					t.Fatalf("big started at %v, during the stream", start.Sub(epoch))
				}
				t.Logf("big started at %v, after the stream ended at %v", start.Sub(epoch), span)
			}
		})
	}
}

// TestHoldMode: the same stream with no time limits. Nothing can be
// planned, so hold mode keeps the GPUs of big's target placement as they
// free up; big starts, and the held GPU-time stays within its budget.
// Without hold mode big waits for the whole stream.
func TestHoldMode(t *testing.T) {
	span := 12 * time.Hour
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("hold=%v", on), func(t *testing.T) {
			c := topology.Default2000()
			cfg := fifoConfig(1)
			cfg.Hold = DefaultConfig().Hold
			cfg.Hold.Enabled = on
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			e.checkEach = true
			jobs, dur := stream(rand.New(rand.NewPCG(5, 5)), span, false)
			d := newDriver(t, e, jobs, dur)
			d.run(time.Time{})
			start, ok := d.started["big"]
			if !ok {
				t.Fatal("big never started")
			}
			held := e.HeldGPUSeconds()
			budget := cfg.Hold.Budget.Seconds() * 1000
			if !on {
				if start.Before(epoch.Add(span)) || held != 0 {
					t.Fatalf("without hold, big started at %v (held %v GPU-s)", start.Sub(epoch), held)
				}
				return
			}
			if start.Sub(epoch) > 5*time.Hour {
				t.Fatalf("big started at %v", start.Sub(epoch))
			}
			if held <= 0 || held > budget {
				t.Fatalf("held %.0f GPU-seconds, budget %.0f", held, budget)
			}
			held1 := 0
			for _, p := range d.plans {
				for _, h := range p.Holds {
					if h.Job == "big" {
						held1++
					}
				}
			}
			if held1 == 0 {
				t.Fatal("no plan reports big's hold")
			}
			t.Logf("big started at %v; %.0f GPU-hours held (budget %.0f)", start.Sub(epoch), held/3600, budget/3600)
		})
	}
}

// TestReservationIsTopologyPacked: on the full default cluster, leaf03's
// first 8 nodes free up at t+1h, as does one node in each other leaf. A
// 64-GPU job's reservation goes inside leaf03; a topology-blind placement
// spreads it.
func TestReservationIsTopologyPacked(t *testing.T) {
	for _, strat := range []string{"leaf-pack", "first-fit"} {
		t.Run(strat, func(t *testing.T) {
			c := topology.Default2000()
			cfg := fifoConfig(1)
			e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
			if err != nil {
				t.Fatal(err)
			}
			if strat == "first-fit" { // the baseline of internal/baseline
				access.SetPlacerStrategy(access.PlacerOf(e.ledger), 1, 0)
				access.SetPlacerStrategy(access.PlacerOf(e.adm), 1, 0)
			}
			// One single-node job per node, pinned to it.
			for n := range topology.NodeID(c.NumNodes()) {
				leaf := c.NodeDomain(n, 2)
				first, _ := c.DomainRange(2, leaf)
				limit := 3 * time.Hour
				if leaf == 3 && n-first < 8 || n == first+15 {
					limit = time.Hour
				}
				set, _ := c.NodeSet(c.NodeName(topology.NodeID(n)))
				j := Job{ID: fmt.Sprintf("fill%03d", n), Account: "a", TimeLimit: limit,
					Gang: member(placement.Request{Nodes: 1, GPUsPerNode: 8, Allowed: set})}
				if err := e.Submit(j, epoch); err != nil {
					t.Fatal(err)
				}
			}
			if p, _ := e.Schedule(epoch); len(p.Starts) != c.NumNodes() {
				t.Fatalf("%d fill jobs started", len(p.Starts))
			}
			job := Job{ID: "j64", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(8, 8))}
			if err := e.Submit(job, epoch.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			p, err := e.Schedule(epoch.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Reservations) != 1 {
				t.Fatalf("reservations: %+v", p.Reservations)
			}
			r := p.Reservations[0]
			leaves := map[int]bool{}
			for _, x := range r.Allocation.Members[0].Assignment {
				leaves[c.NodeDomain(x.Node, 2)] = true
			}
			t.Logf("%s: reserved at %v on %s (%d leaves)", strat, r.Start.Sub(epoch), Hosts(c, &r.Allocation), len(leaves))
			if !r.Start.Equal(epoch.Add(time.Hour)) {
				t.Fatalf("planned at %v, want t+1h", r.Start.Sub(epoch))
			}
			switch strat {
			case "leaf-pack":
				if len(leaves) != 1 || !leaves[3] {
					t.Fatalf("reservation spans leaves %v, want leaf03 only", leaves)
				}
			case "first-fit":
				if len(leaves) == 1 {
					t.Fatal("first fit packed the reservation: the scenario does not discriminate")
				}
			}
		})
	}
}

// TestDeterminism: two engines fed the same events produce identical plans.
func TestDeterminism(t *testing.T) {
	run := func() ([]byte, string) {
		c := topology.Default2000()
		cfg := DefaultConfig()
		cfg.FairShare.HalfLife = time.Hour
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
		if err != nil {
			t.Fatal(err)
		}
		jobs := randomWorkload(rand.New(rand.NewPCG(9, 9)), c, 300, true)
		d := newDriver(t, e, jobs, nil)
		d.run(time.Time{})
		data, err := json.Marshal(d.plans)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, p := range d.plans {
			text.WriteString(p.Describe(c, epoch))
		}
		return data, text.String()
	}
	j1, t1 := run()
	j2, t2 := run()
	if diff := cmp.Diff(string(j1), string(j2)); diff != "" {
		t.Fatalf("two runs of the same events produced different plans (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(t1, t2); diff != "" {
		t.Fatalf("two runs of the same events described different plans (-first +second):\n%s", diff)
	}
	if len(j1) < 1000 || !strings.Contains(t1, "reserve ") || !strings.Contains(t1, "start ") {
		t.Fatalf("plans too thin to compare (%d bytes)", len(j1))
	}
}

func TestSubmitErrors(t *testing.T) {
	c := topology.Default2000()
	cfg := DefaultConfig()
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	if err != nil {
		t.Fatal(err)
	}
	ok := Job{ID: "ok", Account: "a", Gang: member(placement.NodesOf(1, 8))}
	if err := e.Submit(ok, epoch); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		j    Job
		want error
		msg  string
	}{
		{"no id", Job{Account: "a", Gang: member(placement.NodesOf(1, 8))}, ErrBadJob, "no ID"},
		{"duplicate", ok, ErrDuplicateJob, "ok"},
		{"unknown account", Job{ID: "x", Account: "zz", Gang: member(placement.NodesOf(1, 8))}, ErrBadJob, "zz"},
		{"bad gang", Job{ID: "x", Account: "a"}, ErrBadJob, "no members"},
		{"too big", Job{ID: "x", Account: "a", Gang: member(placement.NodesOf(251, 8))}, ErrBadJob, "member m asks for 251 nodes x 8 GPUs; the cluster has 250 nodes and 2000 GPUs"},
		{"never meets its level", Job{ID: "x", Account: "a", Gang: member(placement.Request{Nodes: 17, GPUsPerNode: 8, Required: "leaf"})}, ErrNeverFits, "under one leaf; the best leaf has 16"},
		{"negative limit", Job{ID: "x", Account: "a", TimeLimit: -1, Gang: member(placement.NodesOf(1, 8))}, ErrBadJob, "time limit -1ns is not in [0, 87600h0m0s]"},
		{"unknown preemption policy", Job{ID: "x", Account: "a", Preemption: 7, Gang: member(placement.NodesOf(1, 8))}, ErrBadJob, "unknown Preemption policy 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.Submit(tt.j, epoch)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Submit = %v; want %v mentioning %q", err, tt.want, tt.msg)
			}
		})
	}
	if e.Pending() != 1 {
		t.Fatalf("%d pending after refused submissions", e.Pending())
	}
	if _, err := e.Schedule(epoch.Add(-time.Second)); !errors.Is(err, ErrTimeTravel) {
		t.Fatalf("Schedule in the past: %v", err)
	}
}

// TestSnapshotRestore: an engine exported mid-run (through JSON) and
// restored makes the same plans as the original from then on.
func TestSnapshotRestore(t *testing.T) {
	c := topology.Default2000()
	cfg := DefaultConfig()
	cfg.FairShare.HalfLife = 2 * time.Hour
	e1, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := randomWorkload(rand.New(rand.NewPCG(4, 2)), c, 400, true)
	// Some jobs without limits, so that hold mode and unknown ends appear.
	for i := range jobs {
		if i%7 == 0 {
			jobs[i].TimeLimit = 0
		}
	}
	dur := map[string]time.Duration{}
	for _, j := range jobs {
		if j.TimeLimit == 0 {
			dur[j.ID] = 90 * time.Minute
		}
	}
	d1 := newDriver(t, e1, jobs, dur)
	d1.run(epoch.Add(3 * time.Hour))
	if e1.Running() == 0 || e1.Pending() == 0 || len(e1.book.resv) == 0 {
		t.Fatalf("mid-run state too thin: %d running, %d pending, %d reservations", e1.Running(), e1.Pending(), len(e1.book.resv))
	}
	snap := e1.Snapshot()
	data, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	e2, err := Restore(c, cfg, &back)
	if err != nil {
		t.Fatal(err)
	}
	if err := access.CheckLedger(e2.ledger); err != nil {
		t.Fatal(err)
	}
	d2 := newDriver(t, e2, nil, dur)
	d2.events = append(eventQueue(nil), d1.events...)
	for k, v := range d1.planned {
		d2.planned[k] = v
	}
	n1 := len(d1.plans)
	d1.run(time.Time{})
	d2.run(time.Time{})
	var p1, p2 strings.Builder
	for _, p := range d1.plans[n1:] {
		p1.WriteString(p.Describe(c, epoch))
	}
	for _, p := range d2.plans {
		p2.WriteString(p.Describe(c, epoch))
	}
	if p1.String() != p2.String() {
		a, b := strings.Split(p1.String(), "\n"), strings.Split(p2.String(), "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("plans diverge at line %d:\noriginal: %s\nrestored: %s", i, a[i], b[i])
			}
		}
		t.Fatalf("plans differ in length: %d and %d lines", len(a), len(b))
	}
	t.Run("bad snapshot", func(t *testing.T) {
		bad := back
		bad.Reservations = append(slicesClone(bad.Reservations), ReservationRecord{Job: "nope"})
		bad.Jobs = append(slicesClone(bad.Jobs), bad.Jobs[0])
		_, err := Restore(c, cfg, &bad)
		if !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), "a reservation for nope, which is not waiting") ||
			!strings.Contains(err.Error(), "listed twice") {
			t.Fatalf("Restore = %v", err)
		}
	})
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }
