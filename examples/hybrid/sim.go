package main

import (
	"container/heap"
	"fmt"
	"math"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/benchmarks/sim"
	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// evKind is a simulation event.
type evKind uint8

const (
	evRelease evKind = iota // a preempted gang has released its GPUs
	evFinish                // a training run ends
	evSubmit                // a training job arrives
	evDemand                // serving demand is re-read
	evWake                  // the engine's NextEvent
)

type event struct {
	at   time.Time
	kind evKind
	id   string
	run  int // evFinish: the run it ends
	job  int // evSubmit: index in the trace
}

type eventQ []event

func (q eventQ) Len() int { return len(q) }
func (q eventQ) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].kind < q[j].kind
}
func (q eventQ) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQ) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQ) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// Kinds of jobs, for the busy counts: training on its nodes, serving,
// training borrowed onto serving's nodes.
const (
	kTrain = iota
	kServe
	kBorrowed
)

// job is the host's record of one job.
type job struct {
	// id is the trace's ID; cur the engine's ID now (a job moved between
	// queues is submitted again under a new one); moves counts them.
	id, cur    string
	moves      int
	kind       int
	req        placement.Request
	limit      time.Duration
	account    string
	serving    bool
	gpus       int
	dur        time.Duration // training: how long a run takes
	submit     time.Time
	firstStart time.Time
	run        int  // runs started
	active     bool // holds GPUs
	ended      bool
}

// host drives an engine through the workload in virtual time: a cycle
// after every batch of events at one instant and at the engine's
// NextEvent.
type host struct {
	o      options
	e      *backfill.Engine
	t0     time.Time
	end    time.Time
	events eventQ
	jobs   map[string]*job
	trace  []sim.TraceJob
	// serving: the replicas asked for and not withdrawn, in request
	// order.
	replicas []string
	nextRep  int
	last     time.Time
	busy     [3]int // GPUs held by kind
	out      *outcome
	accounts map[string]bool
	wake     time.Time
	// lend: serving lends its nodes (dynamic); training lists the
	// training jobs in submit order.
	lend     bool
	training []*job
}

// simulate runs policy p on the trace and returns its outcome.
func simulate(o options, p policy, trace []sim.TraceJob) (*outcome, error) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 5, LeavesPerSpine: 5, NodesPerLeaf: labNodes / 25, GPUsPerNode: 8})
	if err != nil {
		return nil, err
	}
	cfg := backfill.DefaultConfig()
	cfg.Quotas = p.quotas
	cfg.Preemption.Grace = o.grace
	tree, err := fairshare.NewTree(cfg.FairShare)
	if err != nil {
		return nil, err
	}
	e, err := backfill.New(c, cfg, tree)
	if err != nil {
		return nil, err
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &host{o: o, e: e, t0: t0, end: t0.Add(time.Duration(o.days * 24 * float64(time.Hour))), jobs: map[string]*job{},
		trace: trace, last: t0, out: &outcome{name: p.name, slo: o.slo}, accounts: map[string]bool{}}
	if err := h.account("serving"); err != nil {
		return nil, err
	}
	h.lend = p.lend
	for i, j := range trace {
		heap.Push(&h.events, event{at: t0.Add(j.Submit), kind: evSubmit, job: i})
	}
	heap.Push(&h.events, event{at: t0, kind: evDemand})
	if err := h.loop(); err != nil {
		return nil, err
	}
	h.finish()
	return h.out, nil
}

// account adds a fair-share account once.
func (h *host) account(name string) error {
	if h.accounts[name] {
		return nil
	}
	h.accounts[name] = true
	return h.e.AddAccount("", name, 1)
}

// loop processes events until the end of the window.
func (h *host) loop() error {
	plan := &backfill.Plan{}
	for h.events.Len() > 0 {
		now := h.events[0].at
		if !now.Before(h.end) {
			break
		}
		h.advance(now)
		for h.events.Len() > 0 && h.events[0].at.Equal(now) {
			if err := h.deliver(heap.Pop(&h.events).(event), now); err != nil {
				return err
			}
		}
		if err := h.e.ScheduleInto(now, plan); err != nil {
			return err
		}
		if err := h.apply(plan, now); err != nil {
			return err
		}
		if next, ok := h.e.NextEvent(); ok && next.After(now) && next.Before(h.end) && !next.Equal(h.wake) {
			h.wake = next
			heap.Push(&h.events, event{at: next, kind: evWake})
		}
	}
	h.advance(h.end)
	return nil
}

// deliver reports one event to the engine.
func (h *host) deliver(ev event, now time.Time) error {
	switch ev.kind {
	case evSubmit:
		return h.submit(ev.job, now)
	case evFinish:
		j := h.jobs[ev.id]
		if j.ended || !j.active || ev.run != j.run {
			return nil // a preemption ended that run
		}
		h.stop(ev.id, j, true)
		return h.e.Finished(ev.id, now)
	case evRelease:
		j := h.jobs[ev.id]
		if st, ok := h.e.Job(ev.id); !ok || st.State != backfill.StatePreempting {
			return nil
		}
		h.stop(ev.id, j, false)
		return h.e.Preempted(ev.id, now)
	case evDemand:
		heap.Push(&h.events, event{at: now.Add(5 * time.Minute), kind: evDemand})
		if err := h.demand(now); err != nil {
			return err
		}
		if h.lend {
			return h.lendNodes(now)
		}
	}
	return nil
}

// lendNodes moves waiting training jobs that have waited 5 minutes,
// oldest first, onto serving's nodes while serving's unused lendable
// quota holds them (none while a replica waits), and borrowed jobs that
// wait (reclaimed, or never started) back to training.
func (h *host) lendNodes(now time.Time) error {
	qs := h.e.Queues() // training, serving, borrowed
	serve, borrowed := qs[1], qs[2]
	spare := min(servingNodes*8-8*h.o.floorNodes, serve.Guarantee-serve.Used) - borrowed.Used
	if serve.Waiting > 0 {
		spare = 0
	}
	for _, j := range h.training {
		if j.active || j.ended {
			continue
		}
		switch {
		case j.kind == kBorrowed:
			if err := h.move(j, kTrain, now); err != nil {
				return err
			}
		case now.Sub(j.submit) >= 5*time.Minute && j.gpus <= spare && j.req.Nodes <= servingNodes-h.o.floorNodes:
			spare -= j.gpus
			if err := h.move(j, kBorrowed, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// move withdraws waiting training job j and submits it again, with its
// submit time, to the queue of kind k.
func (h *host) move(j *job, k int, now time.Time) error {
	if err := h.e.Cancel(j.cur, now); err != nil {
		return err
	}
	j.moves++
	j.kind = k
	j.cur = fmt.Sprintf("%s.%d", j.id, j.moves)
	h.jobs[j.cur] = j
	return h.submitJob(j, now)
}

// submitJob submits training job j under its current ID and kind.
func (h *host) submitJob(j *job, now time.Time) error {
	queue := "training"
	if j.kind == kBorrowed {
		queue = "borrowed"
		h.out.moves++
	}
	return h.e.Submit(backfill.Job{ID: j.cur, Account: j.account, Queue: queue, TimeLimit: j.limit, Submit: j.submit,
		Preemption: preempt.Requeue, Gang: gang.Spec{Members: []gang.Member{{Name: "worker", Request: j.req}}}}, now)
}

// submit queues training job i of the trace.
func (h *host) submit(i int, now time.Time) error {
	t := &h.trace[i]
	if err := h.account("t-" + t.Account); err != nil {
		return err
	}
	j := &job{id: "t" + t.ID, cur: "t" + t.ID, kind: kTrain, req: placement.NodesOf(t.Nodes, t.GPUsPerNode), limit: t.TimeLimit,
		account: "t-" + t.Account, gpus: t.Nodes * t.GPUsPerNode, dur: t.Duration, submit: now}
	if err := h.submitJob(j, now); err != nil {
		return err
	}
	h.jobs[j.cur] = j
	h.training = append(h.training, j)
	h.out.trainJobs++
	return nil
}

// demand asks for or withdraws serving replicas to follow the curve.
func (h *host) demand(now time.Time) error {
	want := servingDemand(h.o, now.Sub(h.t0))
	for len(h.replicas) < want {
		id := fmt.Sprintf("s%06d", h.nextRep)
		h.nextRep++
		err := h.e.Submit(backfill.Job{ID: id, Account: "serving", Queue: "serving",
			Gang: gang.Spec{Members: []gang.Member{{Name: "replica", Request: placement.NodesOf(1, 8)}}}}, now)
		if err != nil {
			return err
		}
		h.jobs[id] = &job{id: id, cur: id, kind: kServe, serving: true, gpus: 8, submit: now}
		h.replicas = append(h.replicas, id)
		h.out.serveAsked++
	}
	for len(h.replicas) > want {
		// Withdraw a waiting replica first, else the newest running one.
		k := len(h.replicas) - 1
		for i := len(h.replicas) - 1; i >= 0; i-- {
			if !h.jobs[h.replicas[i]].active {
				k = i
				break
			}
		}
		id := h.replicas[k]
		h.replicas = append(h.replicas[:k], h.replicas[k+1:]...)
		if err := h.withdraw(id, h.jobs[id], now); err != nil {
			return err
		}
	}
	return nil
}

// withdraw ends serving replica id (scaled down).
func (h *host) withdraw(id string, j *job, now time.Time) error {
	if j.active {
		h.stop(id, j, true)
		return h.e.Finished(id, now)
	}
	j.ended = true
	if now.Sub(j.submit) > h.o.slo {
		h.out.serveLate++ // it waited past the SLO and never ran
	}
	return h.e.Cancel(id, now)
}

// stop takes job id's GPUs out of the busy counts; done ends it.
func (h *host) stop(id string, j *job, done bool) {
	if j.active {
		h.busy[j.kind] -= j.gpus
		j.active = false
	}
	j.ended = done
}

// apply launches a plan's starts and schedules the releases of its
// victims.
func (h *host) apply(p *backfill.Plan, now time.Time) error {
	for _, s := range p.Starts {
		j := h.jobs[s.Job]
		if err := h.e.Started(s.Job, now); err != nil {
			return err
		}
		j.active, j.run = true, j.run+1
		h.busy[j.kind] += j.gpus
		if j.firstStart.IsZero() {
			j.firstStart = now
			h.out.started(j, now)
		}
		if !j.serving {
			heap.Push(&h.events, event{at: now.Add(j.dur), kind: evFinish, id: s.Job, run: j.run})
		}
	}
	for _, x := range p.Preemptions {
		h.out.preemptions++
		h.out.lostGPUHours += float64(x.LostGPUSeconds) / 3600
		heap.Push(&h.events, event{at: now.Add(h.o.release), kind: evRelease, id: x.Victim})
	}
	return nil
}

// advance integrates the busy GPUs from the last event to now, hour by
// hour of the day.
func (h *host) advance(now time.Time) {
	for h.last.Before(now) {
		next := h.last.Truncate(time.Hour).Add(time.Hour)
		if next.After(now) {
			next = now
		}
		secs := next.Sub(h.last).Seconds()
		hour := h.last.Hour()
		for k, b := range h.busy {
			h.out.gpuSeconds[k] += float64(b) * secs
			h.out.hourly[hour][k] += float64(b) * secs
		}
		h.out.hourly[hour][3] += float64(8*servingDemand(h.o, h.last.Sub(h.t0))) * secs
		h.out.hourSeconds[hour] += secs
		h.last = next
	}
}

// finish counts what was still waiting at the end.
func (h *host) finish() {
	h.out.span = h.end.Sub(h.t0)
	for _, j := range h.jobs {
		if !j.firstStart.IsZero() || j.ended {
			continue
		}
		if j.serving {
			if h.end.Sub(j.submit) > h.o.slo {
				h.out.serveLate++
			}
			continue
		}
		h.out.trainUnstarted++
	}
}

// servingDemand is the replicas serving asks for at time t of the
// simulation: from min at the quietest hour to max at the peak hour, a
// cosine over the day, rounded.
func servingDemand(o options, t time.Duration) int {
	hours := math.Mod(t.Hours(), 24)
	phase := 2 * math.Pi * (hours - o.peakHour) / 24
	return o.minServe + int(math.Round(float64(o.maxServe-o.minServe)*(1+math.Cos(phase))/2))
}
