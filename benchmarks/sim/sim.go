package sim

import (
	"container/heap"
	"errors"
	"fmt"
	mathbits "math/bits"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/internal/baseline"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Policy is a scheduling policy the simulator compares.
type Policy uint8

const (
	// PodByPod binds pods one at a time with no gang semantics (the stock
	// Kubernetes scheduler model, internal/baseline.PodByPod).
	PodByPod Policy = iota
	// GangFIFO admits gangs whole, in strict submit order, no backfill.
	GangFIFO
	// GangBackfill admits gangs whole in submit order and starts any job
	// that fits (greedy backfill, no reservations).
	GangBackfill
	// Phalanx is the default engine: gang admission, reservation
	// backfill (depth 16), fair share, hold mode.
	Phalanx
)

var policyNames = [...]string{"pod-by-pod", "gang-fifo", "gang-backfill", "phalanx"}

// String returns the policy's name as used on command lines.
func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Policies lists every policy.
var Policies = []Policy{PodByPod, GangFIFO, GangBackfill, Phalanx}

// ParsePolicy returns the policy named s.
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if n == s {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("sim: unknown policy %q (known: %v)", s, policyNames)
}

// Config describes one simulation run.
type Config struct {
	// Cluster is the cluster; ClusterName describes it in reports.
	Cluster     *topology.Cluster
	ClusterName string
	// Trace names the trace in reports; LoadFactor is the one used to
	// read it (reported only).
	Trace      string
	LoadFactor float64
	Policy     Policy
	// Placement is the placement strategy for the gang policies.
	Placement baseline.Placement
	// Seed seeds random placement and node failures.
	Seed uint64
	// Interval adds a scheduling cycle at this period while jobs are
	// pending (0: cycles on events and at the engine's NextEvent only).
	Interval time.Duration
	// NodeMTBF, when positive, fails each node after an exponential time
	// with this mean; it comes back after Repair.
	NodeMTBF, Repair time.Duration
	// OnNodeFailure is what a node failure does to a running job under a
	// gang policy: backfill.Requeue (the default) stops it and queues it
	// again, and it restarts from scratch; backfill.Replace moves its pods
	// on the node to spare nodes of its domain, and it restarts at once
	// from its last checkpoint (requeued when no node is spare);
	// backfill.Shrink makes every multi-node job elastic down to half its
	// nodes: on a failure it gives up its pods there and runs on, slower,
	// from its last checkpoint (single-node jobs are replaced).
	OnNodeFailure backfill.FailurePolicy
	// Checkpoint is how often a running job saves its work: a replaced
	// job restarts from the last multiple of Checkpoint since it started
	// (0: from scratch).
	Checkpoint time.Duration
	// Horizon stops the run at this time after the first submit (0: when
	// every job has finished or nothing can change any more); the metrics
	// count up to it, except the GPU-hours hold mode kept idle, which the
	// engine counts at its cycles (up to the last one before it).
	Horizon time.Duration
	// Engine optionally overrides the backfill config of the Phalanx
	// policy (nil: backfill.DefaultConfig).
	Engine *backfill.Config
	// Progress, when set, is called every ProgressEvery cycles (0: 4096)
	// with the virtual time reached and the jobs finished so far. Each
	// call counts the finished jobs, a pass over the trace.
	Progress      func(now time.Duration, finished, total int)
	ProgressEvery int
	// UsagePoints, when positive, records GPU use over time in
	// Result.Usage, in at most this many steps per series (one series
	// for the total, one per account).
	UsagePoints int
	// Preemption, when set, makes a share of the jobs urgent and lets
	// them preempt the others (gang policies only).
	Preemption *Preemption
}

// Outcome is what happened to one job.
type Outcome struct {
	ID, Account string
	GPUs        int
	// Nodes is the node count of the job's gang shape.
	Nodes  int
	Submit time.Duration
	// Start and End are zero when the job did not start or finish. A job
	// stopped and requeued (by a node failure or a preemption) has
	// Started false until it starts again, and Start keeps its last
	// start meanwhile.
	Start, End time.Duration
	Started    bool
	Finished   bool
	// Rejected marks a job that could never fit the cluster: it never
	// queued, and no wait counts it.
	Rejected bool
	// Leaves is the number of lowest-level domains the job ran on.
	Leaves int
	// Requeues counts node-failure requeues.
	Requeues int
	// Urgent marks a job of class 1 (Config.Preemption); Preemptions
	// counts the times the job was preempted (and requeued).
	Urgent      bool
	Preemptions int
	// GPUSeconds is the GPU time the job used, over all its runs.
	GPUSeconds float64
}

type evKind uint8

const (
	evFinish evKind = iota
	evRelease
	evRepair
	evFail
	evSubmit
	evTick
)

type event struct {
	at   time.Duration
	kind evKind
	job  int // index into jobs
	gen  int // start generation, to drop stale finishes
	node int
}

type eventQ []event

func (q eventQ) Len() int { return len(q) }
func (q eventQ) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].kind < q[j].kind
}
func (q eventQ) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQ) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQ) Pop() any {
	o := *q
	x := o[len(o)-1]
	*q = o[:len(o)-1]
	return x
}

// epoch is the virtual time zero given to the engine.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// runner is one simulation's state.
type runner struct {
	cfg      Config
	jobs     []TraceJob
	out      []Outcome
	gen      []int
	q        eventQ
	now      time.Duration
	m        *Result
	leafLvl  int
	running  int
	pending  int
	busy     int // GPUs busy in running jobs
	lastAcct time.Duration
	held     int // GPUs bound to incomplete pod-by-pod jobs
	rng      *rand.Rand
	usage    *usageRecorder // nil unless Config.UsagePoints > 0
	work     *work
	nextAt   time.Duration // the queued NextEvent tick, or -1
	index    map[string]int
	// Per job, for replacements: when its current segment of work
	// started (its start, or its last restart) and the work saved
	// before it (in time at full size).
	segment, saved []time.Duration
	// Per job, for shrinks (Config.OnNodeFailure backfill.Shrink): the
	// GPUs its run holds now, and the GPU time of its run before its
	// last change of size (since is when that size began).
	gpus  []int
	spent []float64
	since []time.Duration
	// Per job, the GPU time of its current run already counted lost to
	// failures (replacements and shrinks), so that a whole-gang restart
	// of that run counts the rest of it only.
	lostRun []float64
	// At the last start so far: the busy GPU-seconds and the active
	// seconds (Result.UtilisationBeforeDrain).
	busyAtStart, activeAtStart float64
	// resvFree is the GPUs free and planned for reservations after the
	// last cycle (Result.ReservedFreeGPUSeconds); resvState and resvMask
	// are its scratch: the engine's free state and, per node, the GPUs
	// some reservation plans to use.
	resvFree  int
	resvState *topology.State
	resvMask  []uint64
}

// Run simulates jobs (sorted by submit time) under cfg and returns the
// metrics and per-job outcomes. The run is deterministic for a given
// config and trace, except for the measured scheduler CPU times.
func Run(cfg Config, jobs []TraceJob) (*Result, error) {
	if cfg.Cluster == nil || len(jobs) == 0 {
		return nil, errors.New("sim: no cluster or no jobs")
	}
	if err := checkJobs(jobs); err != nil {
		return nil, err
	}
	if cfg.Horizon < 0 {
		return nil, fmt.Errorf("sim: negative Horizon %v (0: run to the end)", cfg.Horizon)
	}
	r := &runner{cfg: cfg, jobs: jobs, out: make([]Outcome, len(jobs)), gen: make([]int, len(jobs)),
		m: newResult(cfg), leafLvl: cfg.Cluster.Depth() - 1, rng: rand.New(rand.NewPCG(cfg.Seed, 0x51)),
		work: newWork(cfg.Cluster.TotalGPUs(), jobs), nextAt: -1,
		segment: make([]time.Duration, len(jobs)), saved: make([]time.Duration, len(jobs)),
		gpus: make([]int, len(jobs)), spent: make([]float64, len(jobs)), since: make([]time.Duration, len(jobs)),
		lostRun: make([]float64, len(jobs))}
	for i, j := range jobs {
		r.out[i] = Outcome{ID: j.ID, Account: j.Account, GPUs: j.GPUs, Nodes: j.Nodes, Submit: j.Submit}
		heap.Push(&r.q, event{at: j.Submit, kind: evSubmit, job: i})
	}
	if err := r.drawUrgent(); err != nil {
		return nil, err
	}
	if cfg.UsagePoints > 0 {
		r.usage = newUsageRecorder(jobs, cfg.UsagePoints)
	}
	if cfg.NodeMTBF > 0 {
		for n := range cfg.Cluster.NumNodes() {
			heap.Push(&r.q, event{at: r.expo(cfg.NodeMTBF), kind: evFail, node: n})
		}
	}
	var err error
	if cfg.Policy == PodByPod {
		err = r.runPodByPod()
	} else {
		err = r.runEngine()
	}
	if err != nil {
		return nil, err
	}
	r.m.finish(r)
	return r.m, nil
}

// checkJobs refuses jobs Run would simulate wrongly rather than refuse:
// out of submit order (the makespan, the horizon and Usage count from the
// first job's submit), a negative duration or limit (negative busy time),
// or a shape of no node or GPU.
func checkJobs(jobs []TraceJob) error {
	for i := range jobs {
		j := &jobs[i]
		switch {
		case i > 0 && j.Submit < jobs[i-1].Submit:
			return fmt.Errorf("sim: job %s submitted at %v, before job %s at %v: jobs must be sorted by submit time", j.ID, j.Submit, jobs[i-1].ID, jobs[i-1].Submit)
		case j.Duration < 0 || j.TimeLimit < 0:
			return fmt.Errorf("sim: job %s: negative duration %v or time limit %v", j.ID, j.Duration, j.TimeLimit)
		case j.GPUs < 1 || j.Nodes < 1 || j.GPUsPerNode < 0:
			return fmt.Errorf("sim: job %s: %d GPUs on %d nodes of %d: want at least one GPU and one node", j.ID, j.GPUs, j.Nodes, j.GPUsPerNode)
		}
	}
	return nil
}

func (r *runner) expo(mean time.Duration) time.Duration {
	return time.Duration(r.rng.ExpFloat64() * float64(mean))
}

// progress calls Config.Progress every 4096 cycles.
func (r *runner) progress() {
	every := r.cfg.ProgressEvery
	if every <= 0 {
		every = 4096
	}
	if r.cfg.Progress != nil && len(r.m.cycleTimes)%every == 0 {
		done := 0
		for i := range r.out {
			if r.out[i].Finished {
				done++
			}
		}
		r.cfg.Progress(r.now, done, len(r.jobs))
	}
}

// addBusy adds job i's GPUs to the busy count (sign +1 when it starts,
// and leaves the queue; -1 when it stops) at r.now.
func (r *runner) addBusy(i, sign int) {
	if sign > 0 { // it leaves the queue, at full size
		r.work.queued(r.jobs[i].Account, -r.jobs[i].shapeGPUs())
		// Both integrals run up to r.now (account was called for it).
		r.busyAtStart, r.activeAtStart = r.m.BusyGPUSeconds, r.work.activeSecs
	}
	r.addRunning(i, sign*r.gpus[i])
}

// addRunning counts d more GPUs busy in job i's run.
func (r *runner) addRunning(i, d int) {
	r.busy += d
	r.work.running(r.jobs[i].Account, d)
	if r.usage != nil {
		r.usage.add(r.jobs[i].Account, r.now, d)
	}
}

// runGPUSeconds is the GPU time job i's current run has used by now.
func (r *runner) runGPUSeconds(i int, now time.Duration) float64 {
	return r.spent[i] + float64(r.gpus[i])*(now-r.since[i]).Seconds()
}

// account integrates busy and held GPU-time up to now.
func (r *runner) account(now time.Duration) {
	r.work.advance(now)
	dt := (now - r.lastAcct).Seconds()
	r.m.BusyGPUSeconds += float64(r.busy) * dt
	r.m.DeadlockGPUSeconds += float64(r.held) * dt
	r.m.ReservedFreeGPUSeconds += float64(r.resvFree) * dt
	r.lastAcct = now
}

// reservedFree sets resvFree after a cycle: the GPUs free now (after the
// plan's starts) on nodes in service that some reservation of the plan
// will use, each counted once however many reservations plan it.
func (r *runner) reservedFree(e *backfill.Engine, plan *backfill.Plan) error {
	r.resvFree = 0
	if len(plan.Reservations) == 0 {
		return nil
	}
	if r.resvState == nil {
		r.resvState = topology.NewState(r.cfg.Cluster)
		r.resvMask = make([]uint64, r.cfg.Cluster.NumNodes())
	}
	if err := e.CopyState(r.resvState); err != nil {
		return err
	}
	planned := func(f func(x topology.NodeAlloc)) {
		for i := range plan.Reservations {
			a := &plan.Reservations[i].Allocation
			for m := range a.Members {
				for _, x := range a.Members[m].Assignment {
					f(x)
				}
			}
		}
	}
	planned(func(x topology.NodeAlloc) { r.resvMask[x.Node] |= x.GPUs })
	planned(func(x topology.NodeAlloc) {
		if r.resvState.Schedulable(x.Node) {
			r.resvFree += mathbits.OnesCount64(r.resvMask[x.Node] & r.resvState.Free(x.Node))
		}
		r.resvMask[x.Node] = 0 // counted once
	})
	return nil
}

// enqueue counts job i as submitted and queued.
func (r *runner) enqueue(i int) {
	r.pending++
	r.work.job(r.jobs[i].Account, +1)
	r.work.queued(r.jobs[i].Account, r.jobs[i].shapeGPUs())
}

// leave counts job i as gone from the system (finished or failed).
func (r *runner) leave(i int) { r.work.job(r.jobs[i].Account, -1) }

// stop reports whether the run ends before now (Config.Horizon after the
// first submit), and then sets the run's end to the horizon, so that
// every metric counts up to it.
func (r *runner) stop(now time.Duration) bool {
	if r.cfg.Horizon <= 0 {
		return false
	}
	h := r.jobs[0].Submit + r.cfg.Horizon
	if now <= h {
		return false
	}
	r.account(h)
	r.now = h
	return true
}

// reject counts job i as one that never fits the cluster.
func (r *runner) reject(i int) {
	r.m.Rejected++
	r.out[i].Rejected = true
}

func (r *runner) leaves(a *gang.Allocation) int {
	if r.leafLvl < 0 {
		return 1
	}
	seen := map[int]bool{}
	for _, m := range a.Members {
		for _, x := range m.Assignment {
			seen[r.cfg.Cluster.NodeDomain(x.Node, r.leafLvl)] = true
		}
	}
	return len(seen)
}

// engineConfig returns the backfill config of a gang policy.
func (r *runner) engineConfig() backfill.Config {
	cfg := backfill.DefaultConfig()
	if r.cfg.Engine != nil {
		cfg = *r.cfg.Engine
	}
	fifo := func() {
		cfg.FairShare.Weights = fairshare.Weights{Age: 1000}
		cfg.FairShare.MaxAge = 365 * 24 * time.Hour
		cfg.Hold.Enabled = false
	}
	switch r.cfg.Policy {
	case GangFIFO:
		fifo()
		cfg.Strict, cfg.ReservationDepth = true, 0
	case GangBackfill:
		fifo()
		cfg.ReservationDepth = 0
	}
	cfg.Preemption.Enabled = r.cfg.Preemption != nil && !r.cfg.Preemption.Off
	// The simulator reads no waiting reasons: plans list only the ones
	// that changed (the decisions are the same).
	cfg.OnlyChangedWaits = true
	return cfg
}

func (r *runner) runEngine() error {
	e, err := r.newEngine()
	if err != nil {
		return err
	}
	plan := &backfill.Plan{}
	r.index = make(map[string]int, len(r.jobs))
	for i, j := range r.jobs {
		r.index[j.ID] = i
	}
	for r.q.Len() > 0 {
		now := r.q[0].at
		if r.stop(now) {
			break
		}
		r.account(now)
		r.now = now
		tick := false
		for r.q.Len() > 0 && r.q[0].at == now {
			ev := heap.Pop(&r.q).(event)
			tick = tick || ev.kind == evTick && ev.node == 0
			if err := r.engineEvent(e, ev); err != nil {
				return err
			}
		}
		t0 := time.Now()
		if err := e.ScheduleInto(epoch.Add(now), plan); err != nil {
			return err
		}
		r.m.cycleTimes = append(r.m.cycleTimes, time.Since(t0))
		r.progress()
		r.m.HeldForHoldGPUSeconds = plan.HeldGPUSeconds
		if err := r.applyPlan(e, plan); err != nil {
			return err
		}
		if err := r.reservedFree(e, plan); err != nil {
			return err
		}
		if r.cfg.Interval > 0 && r.pending > 0 && (tick || !r.hasTick()) {
			heap.Push(&r.q, event{at: now + r.cfg.Interval, kind: evTick})
		}
		r.wakeAt(e)
		if r.idle() {
			break
		}
	}
	return nil
}

// newEngine builds the engine of a gang policy, with an account per
// trace account.
func (r *runner) newEngine() (*backfill.Engine, error) {
	cfg := r.engineConfig()
	tree, err := fairshare.NewTree(cfg.FairShare)
	if err != nil {
		return nil, err
	}
	accounts := map[string]bool{}
	for _, j := range r.jobs {
		if !accounts[j.Account] {
			accounts[j.Account] = true
			if err := tree.AddAccount(fairshare.RootName, j.Account, 1); err != nil {
				return nil, err
			}
		}
	}
	r.m.Accounts = len(accounts)
	e, err := backfill.New(r.cfg.Cluster, cfg, tree)
	if err != nil {
		return nil, err
	}
	baseline.Use(e, r.cfg.Placement, r.cfg.Seed)
	return e, nil
}

// engineEvent reports one event to the engine.
func (r *runner) engineEvent(e *backfill.Engine, ev event) error {
	now, abs := ev.at, epoch.Add(ev.at)
	switch ev.kind {
	case evSubmit:
		return r.submit(e, ev.job, abs)
	case evFinish:
		if ev.gen != r.gen[ev.job] || !r.out[ev.job].Started || r.out[ev.job].Finished {
			return nil
		}
		if err := e.Finished(r.jobs[ev.job].ID, abs); err != nil {
			return err
		}
		r.out[ev.job].End, r.out[ev.job].Finished = now, true
		r.out[ev.job].GPUSeconds += r.runGPUSeconds(ev.job, now)
		r.running--
		r.addBusy(ev.job, -1)
		r.leave(ev.job)
	case evRelease:
		return r.release(e, ev.job, abs)
	case evFail:
		return r.failNode(e, ev.node, abs)
	case evRepair:
		if err := e.NodeUp(topology.NodeID(ev.node), abs); err != nil {
			return err
		}
		r.work.down -= r.cfg.Cluster.NodeGPUs(topology.NodeID(ev.node))
		heap.Push(&r.q, event{at: now + r.expo(r.cfg.NodeMTBF), kind: evFail, node: ev.node})
	case evTick:
		if ev.at == r.nextAt {
			r.nextAt = -1
		}
	}
	return nil
}

// submit submits job i at abs (a job that can never fit is rejected).
func (r *runner) submit(e *backfill.Engine, i int, abs time.Time) error {
	j := r.jobs[i]
	job := backfill.Job{ID: j.ID, Account: j.Account, TimeLimit: j.TimeLimit, Submit: abs, OnNodeFailure: r.cfg.OnNodeFailure,
		Gang: gang.Spec{Members: []gang.Member{{Name: "main", Request: placement.NodesOf(j.Nodes, j.GPUsPerNode)}}}}
	if r.cfg.OnNodeFailure == backfill.Shrink && j.Nodes > 1 {
		job.Gang.Members[0].Min = (j.Nodes + 1) / 2 // elastic down to half its nodes
	}
	if r.cfg.Preemption != nil {
		job.Class, job.Preemption = 0, preempt.Requeue
		if r.out[i].Urgent {
			job.Class, job.Preemption = 1, preempt.Never
		}
	}
	if j.Nodes > r.cfg.Cluster.NumNodes() {
		// More nodes than the cluster has: never fits (Submit would call
		// the job malformed).
		r.reject(i)
		return nil
	}
	if err := e.Submit(job, abs); err != nil {
		if errors.Is(err, backfill.ErrNeverFits) {
			r.reject(i)
			return nil
		}
		return err
	}
	r.enqueue(i)
	return nil
}

// failNode fails node n at abs: its jobs stop (requeued or failed), and
// its repair is queued.
func (r *runner) failNode(e *backfill.Engine, n int, abs time.Time) error {
	now := abs.Sub(epoch)
	evs, err := e.NodeDown(topology.NodeID(n), abs)
	if err != nil {
		return err
	}
	r.m.NodeFailures++
	for _, x := range evs {
		i := r.index[x.Job]
		if x.Replaced || x.Shrunk { // kept running, its pods replaced or fewer
			g := r.gpus[i]
			if x.Shrunk {
				a, _ := e.Allocation(x.Job)
				g = a.GPUs()
			}
			r.restart(i, now, g)
			continue
		}
		r.m.FailureRestarts++
		// The whole run is lost, part of it already at replacements or
		// shrinks.
		r.m.FailureLostGPUSeconds += r.runGPUSeconds(i, now) - r.lostRun[i]
		r.stopRun(i)
		if x.Requeued {
			r.out[i].Requeues++
			r.requeue(i)
		} else {
			r.out[i].End, r.out[i].Finished = now, true
			r.leave(i)
		}
	}
	r.work.down += r.cfg.Cluster.NodeGPUs(topology.NodeID(n))
	heap.Push(&r.q, event{at: now + r.cfg.Repair, kind: evRepair, node: n})
	return nil
}

// restart restarts job i, whose pods on a failed node were replaced or
// given up, at now from its last checkpoint on g GPUs: the work since is
// lost, and its finish moves later by as much, and by the time the rest
// of its work takes on fewer GPUs (work is in time at full size; a job
// on half its GPUs progresses at half the speed), at most to its time
// limit.
func (r *runner) restart(i int, now time.Duration, g int) {
	if g == r.gpus[i] {
		r.m.Replacements++
	} else {
		r.m.Shrinks++
	}
	full, old := r.jobs[i].shapeGPUs(), r.gpus[i]
	run := now - r.segment[i]
	kept := time.Duration(0)
	if c := r.cfg.Checkpoint; c > 0 {
		kept = run / c * c
	}
	lost := float64(old) * (run - kept).Seconds()
	r.m.FailureLostGPUSeconds += lost
	r.lostRun[i] += lost
	r.saved[i] += time.Duration(float64(kept) * float64(old) / float64(full))
	r.segment[i] = now
	if g != old {
		r.spent[i], r.since[i] = r.runGPUSeconds(i, now), now
		r.addRunning(i, g-old)
		r.gpus[i] = g
	}
	r.gen[i]++
	end := now + time.Duration(float64(r.jobs[i].Duration-r.saved[i])*float64(full)/float64(g))
	if l := r.jobs[i].TimeLimit; l > 0 && end > r.out[i].Start+l {
		end = r.out[i].Start + l // killed at its limit
	}
	heap.Push(&r.q, event{at: end, kind: evFinish, job: i, gen: r.gen[i]})
}

// stopRun ends job i's current run at r.now before it finished: its
// pending finish is dropped, and the work it did stays counted as busy
// time.
func (r *runner) stopRun(i int) {
	r.gen[i]++
	r.running--
	r.addBusy(i, -1)
	r.out[i].GPUSeconds += r.runGPUSeconds(i, r.now)
}

// requeue puts a stopped job back in the queue.
func (r *runner) requeue(i int) {
	r.out[i].Started = false
	r.pending++
	r.work.queued(r.jobs[i].Account, r.jobs[i].shapeGPUs())
}

// applyPlan starts a plan's jobs (confirming them when preemption is on,
// so that they can be preempted) and queues their finishes, and queues
// the release of each victim of a preemption.
func (r *runner) applyPlan(e *backfill.Engine, plan *backfill.Plan) error {
	now := r.now
	for _, s := range plan.Starts {
		i := r.index[s.Job]
		o := &r.out[i]
		o.Start, o.Started = now, true
		r.segment[i], r.saved[i] = now, 0
		r.gpus[i], r.spent[i], r.since[i] = s.Allocation.GPUs(), 0, now // an elastic job may start smaller
		r.lostRun[i] = 0
		o.Leaves = r.leaves(&s.Allocation)
		r.running++
		r.pending--
		r.addBusy(i, +1)
		if e.Config().Preemption.Enabled {
			if err := e.Started(s.Job, epoch.Add(now)); err != nil {
				return err
			}
		}
		// Its run time is at full size: the GPUs of its shape (a job of 12
		// GPUs runs on two whole 8-GPU nodes), not the GPUs it asked for.
		d := time.Duration(float64(r.jobs[i].Duration) * float64(r.jobs[i].shapeGPUs()) / float64(r.gpus[i]))
		if l := r.jobs[i].TimeLimit; l > 0 && d > l {
			d = l // killed at its limit
		}
		heap.Push(&r.q, event{at: now + d, kind: evFinish, job: i, gen: r.gen[i]})
	}
	for _, x := range plan.Preemptions {
		heap.Push(&r.q, event{at: now + r.releaseDelay(e), kind: evRelease, job: r.index[x.Victim]})
	}
	return nil
}

// wakeAt queues a cycle at the engine's next event (a reservation's start,
// a hold's eligibility, a time limit), as a host that sleeps until then
// would, unless one is queued at or before it. The tick is marked (node 1)
// so that it is not taken for an Interval tick.
func (r *runner) wakeAt(e *backfill.Engine) {
	t, ok := e.NextEvent()
	if !ok {
		return
	}
	at := t.Sub(epoch)
	if r.nextAt >= 0 && r.nextAt <= at {
		return
	}
	r.nextAt = at
	heap.Push(&r.q, event{at: at, kind: evTick, node: 1})
}

// hasTick reports whether an Interval tick event is queued.
func (r *runner) hasTick() bool {
	return slices.ContainsFunc(r.q, func(e event) bool { return e.kind == evTick && e.node == 0 })
}

// idle reports whether the run is over: nothing runs, no submit or finish
// is queued, and either nothing waits or no node is being repaired (so
// nothing can change for the waiting jobs).
func (r *runner) idle() bool {
	if r.running > 0 {
		return false
	}
	repair := false
	for _, e := range r.q {
		switch e.kind {
		case evFinish:
			if e.gen == r.gen[e.job] {
				return false
			}
			// A finish cancelled by a restart (a failure under Fail,
			// requeue, replace or shrink) is no work to come.
		case evSubmit, evRelease:
			return false
		case evRepair:
			repair = true
		}
	}
	return r.pending == 0 || !repair
}
