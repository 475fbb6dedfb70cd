package backfill

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

var reasonRepeatSeeds = flag.Int("reason-repeat-seeds", 0, "workloads per mode of TestReasonRepeatProperty (0: its default)")

// TestReasonRepeatProperty: over seeded workloads on small clusters, in
// every mode (greedy, EASY, the default depth, conservative, hold mode
// with jobs without time limits, quotas; the default depth and greedy
// also with Config.OnlyChangedWaits), a host reports one event (a
// submit, a finish, a cancel), runs a cycle and confirms its starts, runs
// cycles at once while NextEvent asks for one, and then runs a second
// cycle at the same time with no event between. Where that cycle decides
// as the last did (it starts nothing, and plans the same backlog,
// reservations, holds and wait codes), every job that still waits must
// be told the same reason word for word (Message), so that a host
// writing reasons into pod status writes nothing new; with
// OnlyChangedWaits it must list none. A reason's placement counts ("the
// cluster has 1", Resources, Gang) and a quota reason's use ("32 of 48
// GPUs in use") describe the state the plan leaves, not the state met
// part-way through the walk (recountWaits), and a job refused a slot
// while one was free is told the book is full when a job ranked below it
// filled it later in the walk, as a repeat tells it at its test (noSlot).
// Without OnlyChangedWaits the placement reason itself (Member, Reason)
// must be the same too: a Reservation, Hold or Claimed wait carries one
// its message does not quote.
// Before recountWaits (main at stop 68, 100 workloads each), 100 greedy,
// 53 EASY, 59 default-depth and 15 quota workloads (100 and 59 with
// OnlyChangedWaits) told other words on some repeat.
//
// Each mode runs plain workloads (randomWorkload: one member, some with
// a one-GPU aux) and mixed ones: the same workloads with about a third
// of the jobs made gangs of two or three members of different shapes
// (mixGangs, from a rand source of its own, so the plain workloads'
// streams and tallies stay as they were), whose failing member may fail
// alone only in a later member order (jobRec.aloneLater, counted in the
// log). At stop 69 (300 workloads of each kind), before recountWaits
// read anew the reasons Reservation, Hold and Claimed waits carry, 2
// plain and 17 mixed EASY, 3 mixed default-depth and 1 mixed hold
// workloads told another reason, and 2 mixed with OnlyChangedWaits at
// the default depth listed one again.
//
// The preemption modes (greedy, the default depth, greedy with
// OnlyChangedWaits; stop 70) give the jobs classes and policies
// (preemptJob, from a rand source of their own), turn preemption on
// (exempt time 0 or 20 minutes) and release each victim at the next
// event: a failed victim search's reason (PreemptTried: "cannot be
// preempted (2 gangs ...)") counts the running gangs and the free GPUs
// the plan leaves, the jobs it starts among them (recountWaits,
// restatePreempt). A job that searched in one cycle and not in the other
// decided otherwise (decisions). Before restatePreempt (30 plain and 12
// mixed workloads), 4 plain and 3 mixed greedy, 13 and 9 default-depth
// and 4 and 3 greedy OnlyChangedWaits workloads told another reason; the
// default depth also needed a job told while a slot was open to it to be
// told the book is full when a job below it filled it (openSlotTaken).
//
// Three kinds of change are counted and logged, not failed: second
// cycles that decide otherwise (decisions, which other tests own); gang
// reasons whose failing member was placed after another member or by
// the packing search (jobRec.alone false: their counts are of a state
// with other members placed, which only a placement reads); and quota
// reasons not told anew (see repeat). reason-repeat-seeds sets the
// number of workloads of each kind per mode (default 30 plain and 12
// mixed, about the time 40 plain took); -short runs fewer, too few to
// require a reason from a later member order.
func TestReasonRepeatProperty(t *testing.T) {
	seeds, mixedSeeds := 30, 12
	if testing.Short() {
		seeds, mixedSeeds = 8, 4
	}
	if *reasonRepeatSeeds > 0 {
		seeds, mixedSeeds = *reasonRepeatSeeds, *reasonRepeatSeeds
	}
	hold := func(cfg *Config) {
		cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 8, MinWait: 10 * time.Minute, MaxShare: 1, CapWait: 20 * time.Minute,
			Budget: time.Hour, Hysteresis: 10 * time.Minute, MaxHolds: 2}
	}
	for _, m := range []struct {
		name    string
		depth   int
		hold    bool // jobs without time limits, hold mode on
		quotas  bool
		preempt bool // classes and policies (preemptJob), preemption on
		changes bool // Config.OnlyChangedWaits
		// later: the mixed workloads compare reasons of gangs whose
		// failing member failed alone only in a later member order.
		later bool
	}{
		{name: "greedy", depth: 0, later: true},
		{name: "EASY", depth: 1, later: true},
		{name: "default", depth: DefaultDepth, later: true},
		{name: "conservative", depth: Conservative},
		{name: "hold", depth: DefaultDepth, hold: true},
		{name: "quotas", depth: DefaultDepth, quotas: true},
		{name: "greedy changes only", depth: 0, changes: true},
		{name: "default changes only", depth: DefaultDepth, changes: true},
		{name: "preempt greedy", depth: 0, preempt: true},
		{name: "preempt default", depth: DefaultDepth, preempt: true},
		{name: "preempt changes only", depth: 0, preempt: true, changes: true},
	} {
		t.Run(m.name, func(t *testing.T) {
			for _, mixed := range []bool{false, true} {
				kind, n := "plain", seeds
				if mixed {
					kind, n = "mixed", mixedSeeds
				}
				var sum reasonRepeatDriver
				var failed []string
				for seed := range uint64(n) {
					d := newReasonRepeatDriver(t, seed, func(cfg *Config) {
						cfg.ReservationDepth, cfg.OnlyChangedWaits = m.depth, m.changes
						if m.hold {
							hold(cfg)
						}
					}, m.hold, m.quotas, m.preempt, mixed)
					if msg := d.run(); msg != "" {
						failed = append(failed, fmt.Sprintf("%s seed %d: %s", kind, seed, msg))
					}
					sum.cycles += d.cycles
					sum.compared += d.compared
					sum.counted += d.counted
					sum.later += d.later
					sum.decided += d.decided
					sum.packed += d.packed
					sum.quotaKept += d.quotaKept
					sum.preempts += d.preempts
				}
				for i, f := range failed {
					if i == 3 {
						break
					}
					t.Error(f)
				}
				if len(failed) > 0 {
					t.Errorf("%d of %d %s workloads told a different reason in a second cycle at the same time that decided the same", len(failed), n, kind)
				}
				t.Logf("%d %s workloads, %d repeated cycles (%d decided otherwise), %d reasons compared (%d quoting placement counts, %d of a gang failing alone in a later order, %d of a failed victim search), %d gang reasons from a packing and %d quota reasons not told anew with other words",
					n, kind, sum.cycles, sum.decided, sum.compared, sum.counted, sum.later, sum.preempts, sum.packed, sum.quotaKept)
				if m.preempt && !m.changes && sum.preempts < n {
					t.Errorf("too easy: %d reasons of a failed victim search compared over %d %s workloads", sum.preempts, n, kind)
				}
				if sum.cycles-sum.decided < 10*n || !m.changes && m.depth != Conservative && sum.counted < n/4 {
					t.Errorf("too easy: %d repeated cycles that decided the same, %d placement reasons compared, over %d %s workloads",
						sum.cycles-sum.decided, sum.counted, n, kind)
				}
				if mixed && m.later && !testing.Short() && sum.later == 0 {
					t.Errorf("too easy: no reason compared of a gang whose failing member failed alone only in a later order, over %d mixed workloads", n)
				}
			}
		})
	}
}

// reasonRepeatDriver is TestReasonRepeatProperty's host.
type reasonRepeatDriver struct {
	t    testing.TB
	r    *rand.Rand
	c    *topology.Cluster
	e    *Engine
	jobs []Job // to submit, by submit time
	now  time.Time
	// cycles counts the repeated cycles, decided those that decided
	// otherwise; compared the reasons compared (counted: those quoting
	// placement counts).
	// packed counts the gang reasons whose counts were not read anew
	// (jobRec.alone false) and changed, quotaKept the quota reasons not
	// told anew (jobRec.quotaAt, quotaShare) that changed.
	// later counts the compared reasons of gangs whose failing member
	// failed alone only in a later member order (jobRec.aloneLater).
	// preempts counts the compared reasons of a failed victim search
	// (PreemptTried).
	cycles, decided, compared, counted, later, packed, quotaKept, preempts int
	// told is each waiting job's reason as the host last heard it.
	told map[string]Waiting
}

// heard records the reasons plan p lists (all, or the changed ones).
func (d *reasonRepeatDriver) heard(p *Plan) {
	for _, s := range p.Starts {
		delete(d.told, s.Job)
	}
	for _, w := range p.Waiting {
		d.told[w.Job] = w
	}
}

func newReasonRepeatDriver(t testing.TB, seed uint64, tune func(*Config), hold, quotas, preemption, mixed bool) *reasonRepeatDriver {
	r := rand.New(rand.NewPCG(seed, 67))
	shapes := []topology.FatTreeConfig{
		{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8},
		{Spines: 1, LeavesPerSpine: 3, NodesPerLeaf: 2, GPUsPerNode: 8},
		{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8},
	}
	c, err := topology.FatTree(shapes[r.IntN(len(shapes))])
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.FairShare.HalfLife = time.Hour
	tune(&cfg)
	if quotas {
		cfg.Quotas = randomQueues(r, int(seed), c.NumNodes())
	}
	// Preemption draws from a rand source of its own, as mixGangs: the
	// workload's stream is the plain mode's.
	pr := rand.New(rand.NewPCG(seed, 70))
	if preemption {
		cfg.Preemption = PreemptionConfig{Enabled: true, ExemptTime: []time.Duration{0, 20 * time.Minute}[pr.IntN(2)],
			Grace: 5 * time.Minute, MinGain: []time.Duration{0, 30 * time.Minute}[pr.IntN(2)], MaxSearches: 16}
	}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	var leaves []string
	for i, q := range cfg.Quotas.Queues {
		if e.quota.leaf[i] {
			leaves = append(leaves, q.Name)
		}
	}
	jobs := randomWorkload(r, c, 12+r.IntN(10), !hold)
	for i := range jobs {
		if len(leaves) > 0 {
			jobs[i].Queue = leaves[r.IntN(len(leaves))]
		}
	}
	if mixed {
		mixGangs(rand.New(rand.NewPCG(seed, 69)), c, jobs)
	}
	if preemption {
		preemptWorkload(pr, jobs)
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return a.Submit.Compare(b.Submit) })
	return &reasonRepeatDriver{t: t, r: r, c: c, e: e, jobs: jobs, now: epoch, told: make(map[string]Waiting)}
}

// mixGangs makes about a third of jobs gangs of two or three members of
// different shapes drawn from r: whole nodes, half nodes, a few GPUs on
// each of several nodes, or a GPU total. Whole-node members beside
// partial ones fit in some member orders only, on a cluster that other
// jobs fragment. The first member keeps its name and required level. It
// draws only from r, so the workload's own stream (the cluster, submit
// times, the events the driver picks) is the plain workload's.
func mixGangs(r *rand.Rand, c *topology.Cluster, jobs []Job) {
	g, n := c.MaxNodeGPUs(), c.NumNodes()
	shape := func() placement.Request {
		switch r.IntN(4) {
		case 0:
			return placement.NodesOf(1+r.IntN(n/2), g)
		case 1:
			return placement.NodesOf(1+r.IntN(n/2), g/2)
		case 2:
			return placement.NodesOf(1+r.IntN(n), 1+r.IntN(g/2))
		default:
			return placement.TotalGPUs(1 + r.IntN(2*g))
		}
	}
	for i := range jobs {
		if r.IntN(3) != 0 {
			continue
		}
		first := jobs[i].Gang.Members[0]
		ms := []gang.Member{{Name: first.Name, Request: shape()}}
		ms[0].Request.Required = first.Request.Required
		for k := range 1 + r.IntN(2) {
			req := shape()
			for slices.ContainsFunc(ms, func(m gang.Member) bool {
				return m.Request.Nodes == req.Nodes && m.Request.GPUsPerNode == req.GPUsPerNode && m.Request.GPUs == req.GPUs
			}) {
				req = shape()
			}
			ms = append(ms, gang.Member{Name: []string{"w", "v"}[k], Request: req})
		}
		jobs[i].Gang.Members = ms
	}
}

// run drives the workload until nothing is left; it returns the first
// second cycle that told a job a different reason, described, or "".
func (d *reasonRepeatDriver) run() string {
	for step := 0; step < 300; step++ {
		next := d.now.Add(time.Duration(1+d.r.IntN(40)) * time.Minute)
		if len(d.jobs) > 0 {
			next = later(d.jobs[0].Submit, d.now)
		}
		at, ok := d.e.NextEvent()
		timed := ok && at.Before(next)
		if timed {
			next = at
		}
		if !timed && len(d.jobs) == 0 && d.e.Pending()+d.e.Running() == 0 {
			return ""
		}
		d.now = next
		if !timed && !d.event() {
			continue
		}
		if msg := d.repeat(); msg != "" {
			return msg
		}
	}
	return ""
}

// event reports one event at d.now: a victim's release (Preempted) when
// one is preempting, else the next submit when due, else a finish
// (mostly) or a cancel. It reports false when there was none.
func (d *reasonRepeatDriver) event() bool {
	var err error
	var running, waiting []string
	victim := ""
	for _, j := range d.e.jobs.running {
		running = append(running, j.job.ID)
		if j.phase == StatePreempting && victim == "" {
			victim = j.job.ID
		}
	}
	for _, j := range d.e.jobs.pending {
		waiting = append(waiting, j.job.ID)
	}
	switch {
	case victim != "":
		err = d.e.Preempted(victim, d.now)
	case len(d.jobs) > 0 && !d.jobs[0].Submit.After(d.now):
		err = d.e.Submit(d.jobs[0], d.now)
		d.jobs = d.jobs[1:]
	case len(running) > 0 && d.r.IntN(6) != 0:
		err = d.e.Finished(running[d.r.IntN(len(running))], d.now)
	case len(waiting) > 0:
		err = d.e.Cancel(waiting[d.r.IntN(len(waiting))], d.now)
	default:
		return false
	}
	if err != nil && !errors.Is(err, ErrNeverFits) {
		d.t.Fatalf("at %v: %v", d.now.Sub(epoch), err)
	}
	return true
}

// repeat runs the cycles at d.now, confirming each plan's starts: one,
// more while NextEvent asks for one at once, then a second at the same
// time; it returns the reasons the second told differently, described,
// or "".
func (d *reasonRepeatDriver) repeat() string {
	first := scheduleStarted(d.t, d.e, d.now)
	d.heard(first)
	for i := 0; ; i++ {
		if next, ok := d.e.NextEvent(); !ok || !next.Equal(d.now.Add(time.Nanosecond)) {
			break
		}
		if i == 8 {
			d.t.Fatalf("at %v: NextEvent still at once after %d cycles", d.now.Sub(epoch), i+1)
		}
		first = scheduleStarted(d.t, d.e, d.now)
		d.heard(first)
	}
	// Whether each waiting job's reason counts its state as its test
	// found it (jobRec.alone): a gang member's reason given after
	// another member was placed, or by the packing search, is not read
	// anew (recountWaits), and counted apart.
	// The same for a quota reason given other than at full size for its
	// queues' limits (quotaAt): one that counts reservations planned to
	// run with the job, an elastic gang gated at its minimum, a strict
	// order's head; and a weighted share's (quotaShare), told anew but
	// naming the queue waiting below its own as the walk's demand and
	// witnesses leave them, which the next walk may not (2 of 300
	// workloads at stop 68).
	alone := make(map[string]bool)
	aloneLater := make(map[string]bool)
	quotaKept := make(map[string]bool)
	for _, j := range d.e.jobs.pending {
		alone[j.job.ID] = j.alone
		aloneLater[j.job.ID] = j.aloneLater
		quotaKept[j.job.ID] = j.quotaAt.code == quotaFits
	}
	second := scheduleStarted(d.t, d.e, d.now)
	d.cycles++
	defer d.heard(second)
	changes := d.e.cfg.OnlyChangedWaits
	if len(second.Starts) > 0 || !slices.Equal(decisions(first, !changes), decisions(second, !changes)) {
		d.decided++
		return ""
	}
	var diff []string
	if changes {
		// Every job's reason is the one the first cycle left it with:
		// one listed anyway with another code or blocker is a decision.
		for i := range second.Waiting {
			w := &second.Waiting[i]
			was := d.told[w.Job]
			switch {
			case was.Code != w.Code || was.Blocker != w.Blocker || was.PreemptTried != w.PreemptTried || was.PreemptReclaim != w.PreemptReclaim:
				d.decided++
				return ""
			case !alone[w.Job] && was.Reason.Code != 0 && was.NoSlot == w.NoSlot:
				d.packed++
			case w.Code == WaitQuota && quotaKept[w.Job]:
				d.quotaKept++
			default:
				diff = append(diff, fmt.Sprintf("%s listed again; was: %s\n%s now: %s", w.Job, said(&was), w.Job, said(w)))
			}
		}
		d.compared += second.Unchanged
	} else {
		told := make(map[string]*Waiting)
		for i := range first.Waiting {
			told[first.Waiting[i].Job] = &first.Waiting[i]
		}
		for i := range second.Waiting {
			w := &second.Waiting[i]
			d.compared++
			if w.Reason.Code != 0 {
				d.counted++
			}
			if aloneLater[w.Job] {
				d.later++
			}
			if w.PreemptTried {
				d.preempts++
			}
			was, now := told[w.Job].Message(epoch), w.Message(epoch)
			switch {
			case was == now && told[w.Job].Member == w.Member && told[w.Job].Reason == w.Reason:
			case !alone[w.Job] && told[w.Job].Reason.Code != 0 && told[w.Job].NoSlot == w.NoSlot && told[w.Job].Code == w.Code:
				d.packed++
			case w.Code == WaitQuota && told[w.Job].Code == WaitQuota && quotaKept[w.Job]:
				d.quotaKept++
			default:
				diff = append(diff, fmt.Sprintf("%s was: %s\n%s now: %s", w.Job, said(told[w.Job]), w.Job, said(w)))
			}
		}
	}
	if len(diff) == 0 {
		return ""
	}
	return fmt.Sprintf("at %v a second cycle told:\n%s\nthe first:\n%s", d.now.Sub(epoch), strings.Join(diff, "\n"), first.Describe(d.c, epoch))
}

// said is w's message and, when it carries one, its placement reason
// (which a Reservation, Hold or Claimed message does not quote).
func said(w *Waiting) string {
	if w.Reason.Code == 0 {
		return w.Message(epoch)
	}
	return fmt.Sprintf("%s [placement: %s: %s]", w.Message(epoch), w.Member, w.Reason.String())
}

// decisions lists what a plan decided: its backlog, reservations and
// holds, and with codes each waiting job's code and blocker and whether
// it searched for victims (PreemptTried, PreemptReclaim: a job that
// searched in one cycle and not in the other, its search budget spent or
// its start not far, was not told the same search's reason), sorted.
func decisions(p *Plan, codes bool) []string {
	out := []string{"backlog " + p.Backlog}
	for _, r := range p.Reservations {
		out = append(out, fmt.Sprintf("reserve %s at %v on %v", r.Job, r.Start.Sub(epoch), r.Allocation.Members))
	}
	for _, h := range p.Holds {
		out = append(out, fmt.Sprintf("hold %s on %s, %d of %d", h.Job, h.Nodes, h.GPUs, h.Target))
	}
	for i := range p.Waiting {
		if w := &p.Waiting[i]; codes {
			out = append(out, fmt.Sprintf("wait %s %v %s searched %v %v", w.Job, w.Code, w.Blocker, w.PreemptTried, w.PreemptReclaim))
		}
	}
	slices.Sort(out)
	return out
}
