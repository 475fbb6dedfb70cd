package backfill

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// host drives an engine the way a real host scheduler does: it wakes up
// late (0 s to 15 min after the event or planned start it wakes for, at
// irregular intervals), reports every event that happened meanwhile at its
// own time (several per cycle), runs one cycle, and confirms the starts at
// the cycle's time. Every job runs exactly its time limit.
type host struct {
	t      testing.TB
	e      *Engine
	r      *rand.Rand
	events eventQueue
	now    time.Time
	last   *Plan
	// What the host saw.
	started  map[string]time.Time // actual starts
	promised map[string]time.Time // a job's planned start when it started from a reservation
	first    map[string]time.Time // first planned start of each reservation
	final    map[string]time.Time // latest planned start seen
	moved    map[string]bool      // jobs whose reservation moved
	firstDue map[string]time.Time // first cycle at or after its planned start
	limits   map[string]time.Duration
	runs     map[string]time.Duration // how long each job runs: its limit, or a drawn time without one
	plans    [][]byte                 // each plan as JSON, when record is set
	record   bool
	cycles   int
	// Optional checks around each cycle.
	beforeCycle func()
	afterCycle  func(*Plan)
	reported    func() // after each event reported
	stats       struct{ reserved, moves, kept, preemptions, lateMoves, quotaMoves, quotaAhead int }
	// With preemption: release draws when the host reports a victim
	// released after its signal; startsOf counts each job's starts.
	release  func() time.Duration
	startsOf map[string]int
	// preempted marks the victims and the preemptors whose reservation
	// gave way to a claim: the late host reports releases late, so
	// their reservations promise nothing.
	preempted map[string]bool
	// quotaMoves lets moves with CauseQuota through checkMoves (a
	// reservation given up for quota: the caller checks them), a due
	// elastic gang its quota cut start on part of its planned GPUs, and a due
	// reservation wait for a reclaim of its queue's guarantee (whose
	// claim takes the GPUs the victim search finds, which may leave its
	// planned ones to others).
	quotaMoves bool
	// twice, when set, runs a second cycle at the same time after every
	// cycle whose NextEvent is not at once (no event between): it must
	// start nothing and leave every reservation as it was; each one that
	// does not is listed in again.
	twice bool
	again []string
	// waits is each waiting job's reason as the plans told it: the last
	// plan's list, or with Config.OnlyChangedWaits the latest listing of
	// each job that has not started since (an unchanged reason is not
	// listed again).
	waits map[string]Waiting
}

func newHost(t testing.TB, e *Engine, jobs []Job, seed uint64) *host {
	h := &host{t: t, e: e, r: rand.New(rand.NewPCG(seed, 99)),
		started: map[string]time.Time{}, promised: map[string]time.Time{}, first: map[string]time.Time{},
		final: map[string]time.Time{}, moved: map[string]bool{}, firstDue: map[string]time.Time{},
		limits: map[string]time.Duration{}, runs: map[string]time.Duration{}, startsOf: map[string]int{}, preempted: map[string]bool{},
		waits: map[string]Waiting{}}
	for i := range jobs {
		heap.Push(&h.events, event{at: jobs[i].Submit, job: &jobs[i]})
		h.limits[jobs[i].ID] = jobs[i].TimeLimit
		h.runs[jobs[i].ID] = jobs[i].TimeLimit
		if jobs[i].TimeLimit == 0 {
			h.runs[jobs[i].ID] = time.Duration(10+h.r.IntN(290)) * time.Minute
		}
	}
	return h
}

// lateness returns how late the host runs a cycle: on time, seconds late
// or minutes late (up to 15).
func (h *host) lateness() time.Duration {
	switch h.r.IntN(10) {
	case 0, 1, 2:
		return 0
	case 3, 4, 5:
		return time.Duration(1+h.r.IntN(59)) * time.Second
	}
	return time.Duration(1+h.r.IntN(15*60)) * time.Second
}

// wake returns when the host runs its next cycle, or false when nothing
// is left to do.
func (h *host) wake() (time.Time, bool) {
	var next time.Time
	if h.events.Len() > 0 {
		next = h.events[0].at
	}
	if t, ok := h.e.NextEvent(); ok && (next.IsZero() || t.Before(next)) {
		next = t
	}
	if next.IsZero() {
		return next, false
	}
	return later(next, h.now).Add(h.lateness()), true
}

// run drives the engine until every job has ended.
func (h *host) run() {
	for {
		at, ok := h.wake()
		if !ok {
			break
		}
		for h.events.Len() > 0 && !h.events[0].at.After(at) {
			h.report(heap.Pop(&h.events).(event))
		}
		h.cycle(at)
		if h.twice {
			h.cycleAgain(at)
		}
	}
	if h.e.Pending() != 0 || h.e.Running() != 0 {
		h.t.Fatalf("stuck: %d waiting, %d running, no event left", h.e.Pending(), h.e.Running())
	}
}

// cycleAgain runs a second cycle at time at unless NextEvent asked for
// one at once, and lists in again what it changed: a start, or a
// reservation made, moved or gone (twice), marked "(holds)" when either
// cycle's plan had a hold or ended one.
func (h *host) cycleAgain(at time.Time) {
	if next, ok := h.e.NextEvent(); ok && next.Equal(at.Add(time.Nanosecond)) {
		return
	}
	before := h.last
	h.cycle(at)
	p := h.last
	resv := func(p *Plan) map[string]string {
		m := map[string]string{}
		for _, r := range p.Reservations {
			m[r.Job] = fmt.Sprintf("%v on %v", r.Start.Sub(epoch), r.Allocation.Members)
		}
		return m
	}
	was, is := resv(before), resv(p)
	var what []string
	for _, s := range p.Starts {
		what = append(what, "start "+s.Job)
	}
	for id, r := range is {
		if was[id] != r {
			what = append(what, fmt.Sprintf("reserve %s at %s (was %q)", id, r, was[id]))
		}
	}
	for id := range was {
		if _, ok := is[id]; !ok {
			what = append(what, "unreserve "+id)
		}
	}
	if len(what) > 0 {
		if len(before.Holds)+len(before.HoldEnds)+len(p.Holds)+len(p.HoldEnds) > 0 {
			what = append(what, "(holds)")
		}
		h.again = append(h.again, fmt.Sprintf("at %v: %v\nthe first cycle:\n%s\nthe second:\n%s", at.Sub(epoch), what, before.Describe(h.e.c, epoch), p.Describe(h.e.c, epoch)))
	}
}

// report reports one event at its own time.
func (h *host) report(ev event) {
	var err error
	switch {
	case ev.finish && h.release != nil && ev.run != h.startsOf[ev.id]:
		return // a preemption ended that run
	case ev.finish:
		err = h.e.Finished(ev.id, ev.at)
	case ev.release:
		if st, _ := h.e.Job(ev.id); st.State != StatePreempting {
			return // it finished meanwhile
		}
		h.startsOf[ev.id]++
		err = h.e.Preempted(ev.id, ev.at)
	default:
		if err = h.e.Submit(*ev.job, ev.at); errors.Is(err, ErrNeverFits) {
			return // refused: the engine did not change
		}
	}
	if err != nil {
		h.t.Fatalf("event at %v: %v", ev.at.Sub(epoch), err)
	}
	if h.reported != nil {
		h.reported()
	}
}

// cycle runs one cycle at time at, confirms its starts and checks it.
func (h *host) cycle(at time.Time) {
	free := h.freeReservations(at)
	if h.beforeCycle != nil {
		h.beforeCycle()
	}
	p, err := h.e.Schedule(at)
	if err != nil {
		h.t.Fatal(err)
	}
	if h.afterCycle != nil {
		h.afterCycle(p)
	}
	h.now = at
	h.cycles++
	starts := map[string]*gang.Allocation{}
	for i := range p.Starts {
		s := &p.Starts[i]
		starts[s.Job] = &s.Allocation
		if err := h.e.Started(s.Job, at); err != nil {
			h.t.Fatal(err)
		}
		h.started[s.Job] = at
		if r, ok := h.reservation(s.Job); ok && r.Start.Before(at) {
			h.promised[s.Job] = r.Start
		}
		if due, ok := h.claimDue(s.Job); ok && due.Before(at) {
			h.promised[s.Job] = due
		}
		h.startsOf[s.Job]++
		delete(h.waits, s.Job)
		heap.Push(&h.events, event{at: at.Add(h.runs[s.Job]), finish: true, id: s.Job, run: h.startsOf[s.Job]})
	}
	for _, x := range p.Preemptions {
		if h.release == nil {
			h.t.Fatalf("unexpected preemption %+v", x)
		}
		h.stats.preemptions++
		h.preempted[x.Victim], h.preempted[x.Preemptor] = true, true
		heap.Push(&h.events, event{at: at.Add(h.release()), release: true, id: x.Victim})
	}
	if h.record {
		data, err := json.Marshal(p)
		if err != nil {
			h.t.Fatal(err)
		}
		h.plans = append(h.plans, data)
	}
	h.checkDue(at, p, starts, free)
	h.checkMoves(p)
	for _, r := range p.Reservations {
		if _, seen := h.first[r.Job]; !seen {
			h.first[r.Job] = r.FirstStart
			h.stats.reserved++
		}
		h.final[r.Job] = r.Start
	}
	h.last = p
	if !h.e.cfg.OnlyChangedWaits {
		clear(h.waits)
	}
	for _, w := range p.Waiting {
		h.waits[w.Job] = w
	}
}

// claimDue returns when job id, waiting for the jobs it preempted as the
// plans last told it, was due to start (the end of their grace).
func (h *host) claimDue(id string) (time.Time, bool) {
	if w, ok := h.waits[id]; ok && w.Code == WaitPreempting {
		return w.Until, true
	}
	return time.Time{}, false
}

// reservation returns job id's reservation in the last plan.
func (h *host) reservation(id string) (*Reservation, bool) {
	if h.last == nil {
		return nil, false
	}
	for i := range h.last.Reservations {
		if h.last.Reservations[i].Job == id {
			return &h.last.Reservations[i], true
		}
	}
	return nil, false
}

// freeReservations returns the jobs of the last plan's reservations due
// by at whose planned GPUs are all free before the cycle.
func (h *host) freeReservations(at time.Time) map[string]bool {
	free := map[string]bool{}
	if h.last == nil {
		return free
	}
	s := h.e.ledger.State()
	for _, r := range h.last.Reservations {
		if r.Start.After(at) {
			continue
		}
		if _, seen := h.firstDue[r.Job]; !seen {
			h.firstDue[r.Job] = at
		}
		if allAvailable(s, &r.Allocation) {
			free[r.Job] = true
		}
	}
	return free
}

// checkDue checks the promise to due reservations: a due reservation whose
// GPUs are free starts now, on them, unless the cycle moved it (a cycle
// late enough finds two due reservations on the same GPUs, one planned
// after the other's end: the first starts late on them, and the second
// moves, blamed on that late start, and may start elsewhere at once); no
// other job starts on the GPUs of a due reservation whose job did not
// start.
func (h *host) checkDue(at time.Time, p *Plan, starts map[string]*gang.Allocation, free map[string]bool) {
	if h.last == nil {
		return
	}
	for _, r := range h.last.Reservations {
		if r.Start.After(at) {
			continue
		}
		got, ok := starts[r.Job]
		switch {
		case free[r.Job] && !ok && !movedIn(p, r.Job) && !(h.quotaMoves && reclaiming(p, r.Job)):
			h.t.Fatalf("cycle at %v: reservation of %s due at %v has its GPUs free but neither started nor moved", at.Sub(epoch), r.Job, r.Start.Sub(epoch))
		case free[r.Job] && ok:
			d := cmp.Diff(&r.Allocation, got)
			if d != "" && h.quotaMoves && within(got, &r.Allocation) {
				d = "" // an elastic gang its quota cut: on part of its GPUs
			}
			if d != "" && !movedIn(p, r.Job) {
				h.t.Fatalf("cycle at %v: %s started off its reserved GPUs (-reserved +started):\n%s", at.Sub(epoch), r.Job, d)
			}
			// (Moved: a due reservation before it in planned-start
			// order started late on its GPUs, which the move blames
			// (checkMoves); it may then start elsewhere at once.)
			if d == "" {
				h.stats.kept++
			}
		case !ok && !movedIn(p, r.Job) && !(h.quotaMoves && reclaiming(p, r.Job)):
			for id, a := range starts {
				if intersects(a, &r.Allocation) {
					h.t.Fatalf("cycle at %v: %s started on GPUs of %s's due reservation", at.Sub(epoch), id, r.Job)
				}
			}
		}
	}
}

// within reports whether every GPU of a is one of b's.
func within(a, b *gang.Allocation) bool {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			var have uint64
			for k := range b.Members {
				for _, y := range b.Members[k].Assignment {
					if y.Node == x.Node {
						have |= y.GPUs
					}
				}
			}
			if x.GPUs&^have != 0 {
				return false
			}
		}
	}
	return true
}

// reclaiming reports whether plan p has job id wait for the GPUs it
// preempts (under quotas: a reclaim of its queue's guarantee, which a
// queue borrowing through the cluster's pool took, see quotapromise.go).
func reclaiming(p *Plan, id string) bool {
	for _, w := range p.Waiting {
		if w.Job == id && w.Code == WaitPreempting {
			return true
		}
	}
	return false
}

// heldDue reports whether job id held a due reservation in plan p: it is
// still there, due, or was given up for quota from a due start, or the
// job started in p (later in the cycle than the book's upkeep, which found
// its quota without room) on a reservation of the last plan due by then,
// or, from such a reservation, began a reclaim in p (it waits for its
// victims: CauseQuotaAhead's "a reclaim made room", its start to come).
func (h *host) heldDue(p *Plan, id string) bool {
	for _, st := range p.Starts {
		if st.Job == id {
			r, ok := h.reservation(id)
			return ok && !r.Start.After(p.Time)
		}
	}
	if reclaiming(p, id) {
		if r, ok := h.reservation(id); ok && !r.Start.After(p.Time) {
			return true
		}
	}
	for _, r := range p.Reservations {
		if r.Job == id && !r.Start.After(p.Time) {
			return true
		}
	}
	for _, m := range p.Moves {
		if m.Job == id && m.Cause == CauseQuota && !m.From.After(p.Time) {
			return true
		}
	}
	return false
}

// movedLaterIn reports whether job id's reservation moved later in plan p
// for a cause other than quota (it gave its reservation up: nothing is
// chained behind it).
func movedLaterIn(p *Plan, id string) bool {
	for _, m := range p.Moves {
		if m.Job == id && m.Cause != CauseQuota {
			return true
		}
	}
	return false
}

func movedIn(p *Plan, id string) bool {
	for _, m := range p.Moves {
		if m.Job == id {
			return true
		}
	}
	return false
}

// checkMoves checks that every later move has a true cause: a job that
// started later than its reservation planned, whose end bounds the move.
func (h *host) checkMoves(p *Plan) {
	for _, m := range p.Moves {
		h.stats.moves++
		h.moved[m.Job] = true
		if m.Cause == CauseQuota && h.quotaMoves {
			continue
		}
		if m.Cause == CauseQuotaAhead && h.quotaMoves {
			if !h.heldDue(p, m.By) {
				h.t.Fatalf("cycle at %v: %s moved from %v to %v behind %s, held back by its quota, which was not due\n%s",
					p.Time.Sub(epoch), m.Job, m.From.Sub(epoch), m.To.Sub(epoch), m.By, p.Describe(h.e.c, epoch))
			}
			continue
		}
		if m.Cause != CauseLateStart {
			h.t.Fatalf("cycle at %v: %s moved from %v to %v with cause %v (%s)", p.Time.Sub(epoch), m.Job, m.From.Sub(epoch), m.To.Sub(epoch), m.Cause, m.By)
		}
		if movedLaterIn(p, m.By) {
			continue // a chain: the reservation before it moved first, with its own cause
		}
		if h.quotaMoves && reclaiming(p, m.By) {
			continue // a due reservation before it turned into a reclaim of its queue's guarantee
		}
		if start, ok := h.started[m.By]; ok {
			if pr, late := h.promised[m.By]; !late || !start.After(pr) {
				h.t.Fatalf("cycle at %v: %s moved for the late start of %s, which was not late", p.Time.Sub(epoch), m.Job, m.By)
			}
			if end := start.Add(h.limits[m.By]); !m.To.IsZero() && m.To.After(end) {
				h.t.Fatalf("%s moved to %v, after the end %v of %s", m.Job, m.To.Sub(epoch), end.Sub(epoch), m.By)
			}
			continue
		}
		// A reservation before it on shared GPUs slipped: due and not
		// started, or moved later in this very cycle.
		var r *Reservation
		for i := range p.Reservations {
			if p.Reservations[i].Job == m.By {
				r = &p.Reservations[i]
			}
		}
		if r == nil || !r.Start.Before(m.To) && !m.To.IsZero() {
			h.t.Fatalf("cycle at %v: %s moved to %v for %s, which neither started late nor holds a reservation that slipped before it",
				p.Time.Sub(epoch), m.Job, m.To.Sub(epoch), m.By)
		}
		if !m.To.IsZero() && !r.End.IsZero() && m.To.After(r.End) {
			h.t.Fatalf("%s moved to %v, after the end %v of the reservation of %s", m.Job, m.To.Sub(epoch), r.End.Sub(epoch), m.By)
		}
	}
}

// finalCheck: every reservation whose plan never moved started at the
// first cycle at or after its planned start (or earlier).
func (h *host) finalCheck() {
	for id, first := range h.first {
		got, ok := h.started[id]
		if !ok {
			h.t.Fatalf("reserved job %s never started", id)
		}
		if h.moved[id] || h.preempted[id] {
			continue
		}
		due, ok := h.firstDue[id]
		if !ok {
			due = first // it started before it was due
		}
		if got.After(due) {
			h.t.Fatalf("job %s started at %v; its reservation, never moved, was due at %v (first cycle at or after %v)",
				id, got.Sub(epoch), due.Sub(epoch), first.Sub(epoch))
		}
	}
}

// TestLateCycleGuarantee: the reservation promise under real driving
// (late, irregular cycles, batched events), over seeded random workloads
// with patience and multi-member gangs, at depth 1 (EASY), 16 and
// conservative, every job ending at its limit:
//   - a due reservation whose planned GPUs are free starts in that cycle,
//     on them, however late the cycle runs;
//   - no other job ever starts on the GPUs of a due reservation;
//   - a reservation moves later only for the late start of a job it waits
//     for (a reserved job that the late host started after its planned
//     start), never past that job's end; no other cause appears;
//   - a reservation that never moved starts no later than the first cycle
//     at or after its first planned start.
func TestLateCycleGuarantee(t *testing.T) {
	workloads := 1000
	if testing.Short() {
		workloads = 60
	}
	for _, depth := range []int{1, 16, Conservative} {
		t.Run(fmt.Sprintf("depth=%d", depth), func(t *testing.T) {
			var total struct{ reserved, moves, kept, cycles int }
			for w := range workloads {
				h := lateHost(t, depth, uint64(w))
				h.e.checkEach = w%100 == 0
				h.run()
				h.finalCheck()
				total.reserved += h.stats.reserved
				total.moves += h.stats.moves
				total.kept += h.stats.kept
				total.cycles += h.cycles
			}
			t.Logf("%d cycles, %d reservations, %d started on their GPUs when due, %d moved for late starts",
				total.cycles, total.reserved, total.kept, total.moves)
			if total.reserved < workloads || total.kept < workloads/4 {
				t.Errorf("too easy: %d reservations, %d due starts over %d workloads", total.reserved, total.kept, workloads)
			}
		})
	}
}

// TestLateCyclePreemption: TestLateCycleGuarantee's late host with
// preemption on (classes 0 to 2, policies never, requeue and cancel,
// exempt 10 minutes, grace 5 minutes) reporting each victim released 0 to
// 20 minutes after its signal (often after its grace): every invariant
// holds after every event, the promise to due reservations holds, every
// move is blamed on a late start (a preemptor whose victims were released
// after their grace starts late), reservations of jobs that took no part
// in a preemption start by their first cycle, and every job ends.
func TestLateCyclePreemption(t *testing.T) {
	workloads := 200
	if testing.Short() {
		workloads = 40
	}
	preemptions, moves := 0, 0
	for w := range workloads {
		h := lateHost(t, []int{1, 16, Conservative}[w%3], uint64(w))
		cfg := h.e.cfg
		cfg.Preemption = PreemptionConfig{Enabled: true, ExemptTime: 10 * time.Minute, Grace: 5 * time.Minute, MinGain: 5 * time.Minute}
		e, err := New(h.e.c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
		if err != nil {
			t.Fatal(err)
		}
		e.checkEach = true
		h.e = e
		r := rand.New(rand.NewPCG(uint64(w), 77))
		h.release = func() time.Duration { return time.Duration(r.IntN(20*60)) * time.Second }
		for i := range h.events {
			if j := h.events[i].job; j != nil {
				preemptJob(r, j)
			}
		}
		h.run()
		h.finalCheck()
		preemptions += h.stats.preemptions
		moves += h.stats.moves
	}
	t.Logf("%d preemptions, %d moves blamed on late starts", preemptions, moves)
	if preemptions < workloads {
		t.Errorf("only %d preemptions over %d workloads", preemptions, workloads)
	}
}

func lateHost(t testing.TB, depth int, seed uint64) *host {
	r := rand.New(rand.NewPCG(seed, uint64(depth+2)))
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReservationDepth = depth
	cfg.FairShare.HalfLife = time.Hour
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := randomWorkload(r, c, 30, true)
	for i := range jobs {
		if r.IntN(6) == 0 {
			jobs[i].Patience = Patience{MaxDomains: 1, Wait: time.Duration(10+r.IntN(50)) * time.Minute}
		}
	}
	return newHost(t, e, jobs, seed)
}
