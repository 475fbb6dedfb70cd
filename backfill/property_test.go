package backfill

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// driver replays a workload against an engine in virtual time: submits at
// their times, finishes at start + time limit (or at a given duration),
// a cycle after every batch of events at one instant.
type driver struct {
	t        testing.TB
	e        *Engine
	events   eventQueue
	started  map[string]time.Time
	planned  map[string]time.Time // first planned start of each reservation
	plans    []*Plan
	dur      map[string]time.Duration
	check    bool
	noMoves  bool
	rejected int
	now      time.Time // time of the last cycle
	// With preemption: release draws how long after a plan's preemption
	// the host reports the victim released (nil: no preemptions
	// expected); runs counts each job's starts, so that the finish of a
	// run a preemption ended is dropped; afterCycle sees every plan.
	release    func() time.Duration
	runs       map[string]int
	afterCycle func(p *Plan)
}

type event struct {
	at      time.Time
	finish  bool
	release bool // the host reports preempted job id released
	job     *Job
	id      string
	run     int // the run of job id a finish ends
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	// Finishes and releases before submits at one instant.
	return q[i].job == nil && q[j].job != nil
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func newDriver(t testing.TB, e *Engine, jobs []Job, dur map[string]time.Duration) *driver {
	d := &driver{t: t, e: e, started: map[string]time.Time{}, planned: map[string]time.Time{}, dur: dur, runs: map[string]int{}}
	for i := range jobs {
		heap.Push(&d.events, event{at: jobs[i].Submit, job: &jobs[i]})
	}
	return d
}

// run processes events until none is left or the virtual time passes end.
func (d *driver) run(end time.Time) {
	for d.events.Len() > 0 {
		now := d.events[0].at
		if !end.IsZero() && now.After(end) {
			return
		}
		for d.events.Len() > 0 && d.events[0].at.Equal(now) {
			d.deliver(heap.Pop(&d.events).(event), now)
		}
		p, err := d.e.Schedule(now)
		if err != nil {
			d.t.Fatal(err)
		}
		d.now = now
		d.plans = append(d.plans, p)
		if d.noMoves && len(p.Moves) > 0 {
			d.t.Fatalf("cycle at %v: a reservation moved with exact driving: %+v", now.Sub(epoch), p.Moves)
		}
		if d.afterCycle != nil {
			d.afterCycle(p)
		}
		d.startAll(p, now)
		for _, r := range p.Reservations {
			if first, seen := d.planned[r.Job]; !seen {
				if !r.FirstStart.Equal(r.Start) {
					d.t.Fatalf("new reservation %s: first start %v, start %v", r.Job, r.FirstStart, r.Start)
				}
				d.planned[r.Job] = r.Start
			} else if !r.FirstStart.Equal(first) {
				d.t.Fatalf("reservation %s: first start changed", r.Job)
			}
			if r.Start.Before(now) {
				d.t.Fatalf("reservation %s planned in the past", r.Job)
			}
		}
		if d.check {
			if err := access.CheckLedger(d.e.ledger); err != nil {
				d.t.Fatal(err)
			}
		}
	}
}

// deliver reports one event to the engine at now.
func (d *driver) deliver(ev event, now time.Time) {
	switch {
	case ev.finish:
		if d.release != nil && ev.run != d.runs[ev.id] {
			return // a preemption ended that run
		}
		if err := d.e.Finished(ev.id, now); err != nil {
			d.t.Fatalf("finish %s at %v: %v", ev.id, now, err)
		}
	case ev.release:
		if st, _ := d.e.Job(ev.id); st.State != StatePreempting {
			return // it finished meanwhile
		}
		d.runs[ev.id]++ // its pending finish is void
		if err := d.e.Preempted(ev.id, now); err != nil {
			d.t.Fatalf("preempted %s at %v: %v", ev.id, now, err)
		}
	default:
		if err := d.e.Submit(*ev.job, now); err != nil {
			if !errors.Is(err, ErrNeverFits) {
				d.t.Fatalf("submit %s: %v", ev.job.ID, err)
			}
			d.rejected++
		}
	}
}

// startAll confirms a plan's starts (with preemption, so that the jobs can
// be preempted), queues their finishes, and queues the releases of the
// plan's victims.
func (d *driver) startAll(p *Plan, now time.Time) {
	for _, s := range p.Starts {
		d.started[s.Job] = now
		d.runs[s.Job]++
		if d.release != nil {
			if err := d.e.Started(s.Job, now); err != nil {
				d.t.Fatal(err)
			}
		}
		dur, ok := d.dur[s.Job]
		if !ok {
			j := d.e.jobs.byID[s.Job].job
			dur = j.TimeLimit
		}
		if dur > 0 {
			heap.Push(&d.events, event{at: now.Add(dur), finish: true, id: s.Job, run: d.runs[s.Job]})
		}
	}
	for _, x := range p.Preemptions {
		if d.release == nil {
			d.t.Fatalf("cycle at %v: unexpected preemption %+v", now.Sub(epoch), x)
		}
		heap.Push(&d.events, event{at: now.Add(d.release()), release: true, id: x.Victim})
		delete(d.planned, x.Victim) // requeued, it may get a new reservation
	}
}

func flatTree(t testing.TB, cfg fairshare.Config, accounts ...string) *fairshare.Tree {
	tree, err := fairshare.NewTree(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accounts {
		if err := tree.AddAccount(fairshare.RootName, a, 1); err != nil {
			t.Fatal(err)
		}
	}
	return tree
}

// randomWorkload makes n jobs over a few hours on cluster c.
func randomWorkload(r *rand.Rand, c *topology.Cluster, n int, limits bool) []Job {
	var jobs []Job
	for i := range n {
		j := Job{
			ID:      fmt.Sprintf("j%02d", i),
			Account: []string{"a", "b", "c"}[r.IntN(3)],
			Submit:  epoch.Add(time.Duration(r.IntN(6*60)) * time.Minute),
		}
		if limits {
			j.TimeLimit = time.Duration(10+r.IntN(300)) * time.Minute
		}
		var req placement.Request
		switch r.IntN(3) {
		case 0:
			req = placement.NodesOf(1, 1+r.IntN(c.MaxNodeGPUs()))
		default:
			req = placement.NodesOf(1+r.IntN(c.NumNodes()/2), c.MaxNodeGPUs())
		}
		if r.IntN(4) == 0 {
			req.Required = c.LevelName(r.IntN(c.Depth()))
		}
		j.Gang.Members = []gang.Member{{Name: "m", Request: req}}
		if r.IntN(5) == 0 {
			j.Gang.Members = append(j.Gang.Members, gang.Member{Name: "aux", Request: placement.NodesOf(1, 1)})
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// TestBackfillGuarantee: over seeded random workloads in which every job
// runs exactly its time limit and the host runs a cycle at every event,
// no job that held a reservation starts later than the start planned when
// the reservation was made, and no reservation ever moves later, with
// reservation depth 1 (EASY), 16 and conservative. TestLateCycleGuarantee
// drives the engine late. Priorities mix age and fair share, so the order
// of the queue changes as usage accrues.
func TestBackfillGuarantee(t *testing.T) {
	for _, mixed := range []bool{false, true} {
		for _, depth := range []int{1, 16, Conservative} {
			t.Run(fmt.Sprintf("mixed=%v/depth=%d", mixed, depth), func(t *testing.T) { guarantee(t, depth, mixed) })
		}
	}
}

// guarantee runs the guarantee over seeded workloads; mixed makes half
// the jobs run without a time limit (for 10 minutes to 5 hours) with hold
// mode on, so holds and jobs of unknown end mix with the reservations.
func guarantee(t *testing.T, depth int, mixed bool) {
	workloads := 1000
	if testing.Short() {
		workloads = 100
	}
	reserved, fitsLater, held := 0, 0, 0
	for w := range workloads {
		r := rand.New(rand.NewPCG(uint64(w), uint64(depth)))
		c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.ReservationDepth = depth
		cfg.FairShare.HalfLife = time.Hour
		cfg.Hold.MinGPUs, cfg.Hold.MinWait = 16, 10*time.Minute
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
		if err != nil {
			t.Fatal(err)
		}
		jobs := randomWorkload(r, c, 30, true)
		dur := map[string]time.Duration{}
		if mixed {
			for i := range jobs {
				if r.IntN(2) == 0 {
					jobs[i].TimeLimit = 0
					dur[jobs[i].ID] = time.Duration(10+r.IntN(290)) * time.Minute
				}
			}
		}
		d := newDriver(t, e, jobs, dur)
		d.check = w%50 == 0
		d.noMoves = true
		d.run(time.Time{})
		if e.Pending() != 0 || e.Running() != 0 {
			t.Fatalf("workload %d: %d pending, %d running at the end", w, e.Pending(), e.Running())
		}
		for _, p := range d.plans {
			held += len(p.Holds)
		}
		for id, planned := range d.planned {
			reserved++
			got, ok := d.started[id]
			if !ok {
				t.Fatalf("workload %d: reserved job %s never started", w, id)
			}
			if got.After(planned) {
				t.Fatalf("workload %d: job %s started at %v, later than its reservation's %v",
					w, id, got.Sub(epoch), planned.Sub(epoch))
			}
			if got.Before(planned) {
				fitsLater++
			}
		}
	}
	t.Logf("%d reservations checked (%d started earlier than planned), %d hold-cycles", reserved, fitsLater, held)
	if reserved < workloads || mixed && held == 0 {
		t.Errorf("only %d reservations and %d hold-cycles over %d workloads: the test is too easy", reserved, held, workloads)
	}
}
