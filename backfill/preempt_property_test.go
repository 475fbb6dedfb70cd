package backfill

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/topology"
)

// preemptWatch checks every plan of a driven run with preemption on.
type preemptWatch struct {
	t      *testing.T
	d      *driver
	exempt time.Duration
	// allocs is where each active job started; victims the victims a
	// preemptor waits for; edges every preemptor -> victim pair.
	allocs  map[string]gang.Allocation
	victims map[string][]string
	edges   map[string][]string
	ever    map[string]bool // jobs preempted at least once
	stats   struct{ preemptions, claimStarts, tried int }
}

func newPreemptWatch(t *testing.T, d *driver, exempt time.Duration) *preemptWatch {
	w := &preemptWatch{t: t, d: d, exempt: exempt, allocs: map[string]gang.Allocation{}, victims: map[string][]string{},
		edges: map[string][]string{}, ever: map[string]bool{}}
	d.afterCycle = w.check
	return w
}

// check runs after every cycle (before its starts are confirmed).
func (w *preemptWatch) check(p *Plan) {
	e, at := w.d.e, p.Time.Sub(epoch)
	for _, x := range p.Preemptions {
		v, _ := e.JobSpec(x.Victim)
		pr, _ := e.JobSpec(x.Preemptor)
		switch {
		case v.Class >= pr.Class:
			w.t.Fatalf("cycle at %v: %s (class %d) preempted for %s of class %d", at, x.Victim, v.Class, x.Preemptor, pr.Class)
		case v.Preemption == preempt.Never:
			w.t.Fatalf("cycle at %v: %s preempted with policy never", at, x.Victim)
		case p.Time.Sub(w.d.started[x.Victim]) < w.exempt:
			w.t.Fatalf("cycle at %v: %s preempted %v after its start, inside its exempt time", at, x.Victim, p.Time.Sub(w.d.started[x.Victim]))
		}
		w.victims[x.Preemptor] = append(w.victims[x.Preemptor], x.Victim)
		w.edges[x.Preemptor] = append(w.edges[x.Preemptor], x.Victim)
		w.ever[x.Victim] = true
		w.stats.preemptions++
	}
	for _, s := range p.Starts {
		for _, v := range w.victims[s.Job] {
			if st, _ := e.Job(v); st.State == StatePreempting {
				w.t.Fatalf("cycle at %v: %s started while its victim %s still holds its GPUs", at, s.Job, v)
			}
		}
		if len(w.victims[s.Job]) > 0 {
			w.stats.claimStarts++
		}
		delete(w.victims, s.Job)
		// A victim that starts again has released the GPUs its
		// preemptor waited for: a later preemption of it is another's.
		for k, vs := range w.victims {
			w.victims[k] = slices.DeleteFunc(vs, func(v string) bool { return v == s.Job })
		}
		var a gang.Allocation
		s.Allocation.CopyTo(&a)
		w.allocs[s.Job] = a
	}
	for i := range p.Waiting {
		if p.Waiting[i].PreemptTried {
			w.stats.tried++
		}
	}
	w.wholeGangs(at)
}

// wholeGangs checks that every active job holds exactly the GPUs it
// started on: no gang is ever partly stopped.
func (w *preemptWatch) wholeGangs(at time.Duration) {
	for id, want := range w.allocs {
		got, ok := w.d.e.Allocation(id)
		if !ok {
			delete(w.allocs, id)
			continue
		}
		if d := cmp.Diff(want, got); d != "" {
			w.t.Fatalf("cycle at %v: %s holds a part of the gang it started (-started +now):\n%s", at, id, d)
		}
	}
}

// acyclic checks that the preemptor -> victim graph has no cycle.
func (w *preemptWatch) acyclic() {
	const (
		unseen = iota
		open
		done
	)
	mark := map[string]int{}
	var visit func(id string, path []string)
	visit = func(id string, path []string) {
		switch mark[id] {
		case open:
			w.t.Fatalf("preemption cycle: %v -> %s", path, id)
		case done:
			return
		}
		mark[id] = open
		for _, v := range w.edges[id] {
			visit(v, append(path, id))
		}
		mark[id] = done
	}
	for id := range w.edges {
		visit(id, nil)
	}
}

// preemptWorkload gives a random workload classes and policies.
func preemptWorkload(r *rand.Rand, jobs []Job) {
	for i := range jobs {
		preemptJob(r, &jobs[i])
	}
}

// preemptJob makes job j class 1 or 2 (never preempted) one time in five,
// or else class 0 with policy requeue, cancel or never.
func preemptJob(r *rand.Rand, j *Job) {
	switch k := r.IntN(20); {
	case k < 4:
		j.Class = 1 + r.IntN(2)
	case k < 14:
		j.Preemption = preempt.Requeue
	case k < 17:
		j.Preemption = preempt.Cancel
	}
}

// TestPreemptionProperties: over 500 seeded random workloads (30 jobs of
// classes 0 to 2 and policies never, requeue and cancel on 16 nodes; half
// the workloads with half the jobs without a time limit and hold mode
// on; depth 1, 16 and conservative in turn; exempt time 0 or 20 minutes,
// minimum gain 0 or 30 minutes; the host reports each victim released 0
// to 5 minutes, its grace, after the signal), driven exactly (a cycle at
// every event, every job running its limit or drawn duration):
//   - a victim is never of a class equal to or above its preemptor's,
//     never a job with policy never, never inside its exempt time;
//   - no gang is ever partly stopped: every active job holds exactly the
//     GPUs it started on until it releases all of them;
//   - a preemptor starts only once all its victims have released their
//     GPUs;
//   - the preemptor -> victim graph has no cycle;
//   - the backfill guarantee holds for every job not preempted: no
//     reservation moves later, and a reserved job starts no later than
//     its reservation's first planned start;
//   - every invariant holds after every event (one workload in ten).
func TestPreemptionProperties(t *testing.T) {
	workloads := 500
	if testing.Short() {
		workloads = 100
	}
	var total struct{ preemptions, claimStarts, tried, reserved int }
	for w := range workloads {
		r := rand.New(rand.NewPCG(uint64(w), 16))
		e, jobs, dur, exempt := preemptEngine(t, r, w)
		d := newDriver(t, e, jobs, dur)
		d.noMoves = true
		d.release = func() time.Duration { return time.Duration(r.IntN(6)) * time.Minute }
		e.checkEach = w%10 == 0
		watch := newPreemptWatch(t, d, exempt)
		d.run(time.Time{})
		if e.Pending() != 0 || e.Running() != 0 {
			t.Fatalf("workload %d: %d pending, %d running at the end", w, e.Pending(), e.Running())
		}
		watch.acyclic()
		for id, planned := range d.planned {
			if watch.ever[id] {
				continue
			}
			total.reserved++
			if got, ok := d.started[id]; !ok || got.After(planned) {
				t.Fatalf("workload %d: job %s, never preempted, started at %v (ok %v), later than its reservation's %v",
					w, id, got.Sub(epoch), ok, planned.Sub(epoch))
			}
		}
		total.preemptions += watch.stats.preemptions
		total.claimStarts += watch.stats.claimStarts
		total.tried += watch.stats.tried
	}
	t.Logf("%d preemptions, %d preemptors started on their claims, %d waiting jobs told why preemption did not help, %d reservations of jobs never preempted kept",
		total.preemptions, total.claimStarts, total.tried, total.reserved)
	if total.preemptions < workloads || total.claimStarts < workloads/2 || total.tried < workloads || total.reserved < workloads {
		t.Errorf("too easy: %+v over %d workloads", total, workloads)
	}
}

// preemptEngine builds workload w's engine and jobs.
func preemptEngine(t *testing.T, r *rand.Rand, w int) (*Engine, []Job, map[string]time.Duration, time.Duration) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReservationDepth = []int{1, 16, Conservative}[w%3]
	cfg.FairShare.HalfLife = time.Hour
	cfg.Hold.MinGPUs, cfg.Hold.MinWait = 16, 10*time.Minute
	mixed := w%2 == 1
	cfg.Hold.Enabled = mixed
	cfg.Preemption = PreemptionConfig{Enabled: true, ExemptTime: []time.Duration{0, 20 * time.Minute}[r.IntN(2)],
		Grace: 5 * time.Minute, MinGain: []time.Duration{0, 30 * time.Minute}[r.IntN(2)], MaxSearches: 16}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := randomWorkload(r, c, 30, true)
	preemptWorkload(r, jobs)
	dur := map[string]time.Duration{}
	if mixed {
		for i := range jobs {
			if r.IntN(2) == 0 {
				jobs[i].TimeLimit = 0
				dur[jobs[i].ID] = time.Duration(10+r.IntN(290)) * time.Minute
			}
		}
	}
	return e, jobs, dur, cfg.Preemption.ExemptTime
}

// TestPreemptionRestore: restoring the engine (snapshot, JSON, restore)
// after every cycle that leaves a claim or a preempting job changes
// nothing: over 60 seeded workloads with preemptions, the plans of a run
// restored in the middle of each preemption are byte-identical to those
// of a run never restored.
func TestPreemptionRestore(t *testing.T) {
	restores := 0
	for w := range 60 {
		var plans [2][]string
		for k, restore := range []bool{false, true} {
			r := rand.New(rand.NewPCG(uint64(w), 16))
			e, jobs, dur, _ := preemptEngine(t, r, w)
			d := newDriver(t, e, jobs, dur)
			d.release = func() time.Duration { return time.Duration(r.IntN(6)) * time.Minute }
			d.afterCycle = func(p *Plan) {
				data, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				plans[k] = append(plans[k], string(data))
				if restore && (len(d.e.book.claims) > 0 || slices.ContainsFunc(d.e.jobs.running, func(j *jobRec) bool { return j.phase == StatePreempting })) {
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
	t.Logf("%d restores in the middle of a preemption", restores)
	if restores < 60 {
		t.Errorf("only %d restores during preemptions", restores)
	}
}
