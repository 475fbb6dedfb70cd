package backfill

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Plan is the outcome of one scheduling cycle: the jobs to start now and
// where, the reservations held for waiting jobs, and why every other job
// waits. The engine has already booked the starts; the caller launches
// them and reports back (Started, Finished, Failed).
type Plan struct {
	// Time is the cycle's time.
	Time time.Time
	// Starts lists the jobs to start now, in priority order.
	Starts []Start
	// Reservations lists every reservation after the cycle, by planned
	// start.
	Reservations []Reservation
	// Waiting lists every pending job that did not start, in priority
	// order (with queues, the jobs their queues' guarantees cover first),
	// with its reason; with Config.OnlyChangedWaits, only those whose
	// reason changed.
	Waiting []Waiting
	// Unchanged counts the waiting jobs Waiting leaves out because their
	// reason did not change (Config.OnlyChangedWaits; 0 otherwise).
	Unchanged int `json:",omitempty"`
	// Moves lists the reservations moved later or dropped this cycle,
	// each with its cause (a reservation moved earlier is not listed).
	Moves []Move
	// Overruns lists the active jobs past their time limit.
	Overruns []Overrun
	// Holds lists the holds after the cycle (hold mode).
	Holds []HoldStatus
	// HoldEnds lists the holds that ended since the last cycle without
	// their gang starting, and why.
	HoldEnds []HoldEnd
	// Preemptions lists the running jobs this cycle preempted, each with
	// the job it was preempted for: the host signals each victim now
	// (once), kills it by its Deadline, and reports its GPUs released
	// (Engine.Preempted). The victims are preempting until then.
	Preemptions []Preemption
	// PodChanges lists the changes to the pods of running jobs since the
	// last cycle (pods re-placed or given up on a node failure), in the
	// order they happened.
	PodChanges []PodChange
	// Tested counts the jobs tested this cycle.
	Tested int
	// Backlog names a waiting job that has waited past
	// Config.BacklogAfter (below ReservationMinGPUs, not held back by its
	// queue's quota) when the cycle planned as EASY backfill for that
	// reason (jobs refused a reservation are told NoSlot Backlog); empty
	// when it did not.
	Backlog string `json:",omitempty"`
	// HeldGPUSeconds is the running total of GPU-seconds held idle for
	// held jobs since the engine started.
	HeldGPUSeconds float64
}

// Start is a job to start now.
type Start struct {
	Job string
	// Allocation says where each member runs (node indices and GPU
	// masks; Plan.Describe and Hosts render names).
	Allocation gang.Allocation
}

// Reservation is a waiting job's planned start on planned GPUs.
type Reservation struct {
	Job string
	// Start is the planned start; End is Start plus the time limit (zero
	// without one).
	Start, End time.Time
	// FirstStart is the planned start the reservation had when it was
	// made. A reservation only moves earlier while its plan holds; it
	// moves later only when a job it waits for started late or overran,
	// or a node under it failed or was drained (Plan.Moves).
	FirstStart time.Time
	// Allocation is the planned placement.
	Allocation gang.Allocation
}

// Move is a reservation moved later, or dropped, with its cause. A
// reservation given up for quota (CauseQuota) is dropped in the cycle.
type Move struct {
	Job string `json:"job"`
	// From is the planned start before the move; To the new one (zero:
	// the reservation was dropped, no planned start remains).
	From  time.Time `json:"from"`
	To    time.Time `json:"to,omitzero"`
	Cause Cause     `json:"cause"`
	// By is the job or node that caused the move.
	By string `json:"by,omitempty"`
}

// Cause says why a reservation moved later.
type Cause uint8

// Causes of a move.
const (
	// CauseUnknown: no cause found. The engine's tests require that this
	// never happens.
	CauseUnknown Cause = iota + 1
	// CauseLateStart: a job it waits for started later than planned (the
	// host confirmed it late, or its own reservation started late), so it
	// ends later.
	CauseLateStart
	// CauseOverrun: a job it waits for ran past its time limit.
	CauseOverrun
	// CauseNodeDown: a node of its planned placement failed.
	CauseNodeDown
	// CauseNodeDrained: a node of its planned placement was drained.
	CauseNodeDrained
	// CauseQuota: the job's queue's quota has no room for it now (it
	// waits with WaitQuota, By names the queue whose limit binds), so it
	// gives up its reservation. Jobs of its queue, or of queues that
	// share a limit with it, started since its reservation was made.
	CauseQuota
	// CauseQuotaAhead: a reservation before it on shared GPUs was due with
	// its GPUs free, but its job's queue's quota had no room to start it
	// when the cycle kept the reservations up (By names that job), so that
	// one holds its GPUs on from the cycle's time and this one moves
	// behind it. That job may still start later in the cycle (a reclaim or
	// preemption made room), late; when it instead gives its reservation
	// up for quota (a CauseQuota move in the same plan), the GPUs come
	// back, and a later cycle moves this one earlier when it can.
	CauseQuotaAhead
	// CauseUpdated: the job's node sets were changed (Engine.Update) and
	// no longer allow its planned placement; the reservation is dropped
	// (To is zero when the cycle that reports it plans none) and the
	// next cycle plans the job anew on its new sets.
	CauseUpdated
)

var causeNames = [...]string{"", "unknown", "late start", "overrun", "node down", "node drained", "quota", "quota ahead", "updated"}

// String returns the cause's stable name.
func (c Cause) String() string {
	return enumName(causeNames[:], c, "Cause")
}

// MarshalText renders the cause's name.
func (c Cause) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses a cause's name.
func (c *Cause) UnmarshalText(b []byte) error {
	for i, n := range causeNames {
		if i > 0 && n == string(b) {
			*c = Cause(i)
			return nil
		}
	}
	return fmt.Errorf("unknown cause %q", b)
}

// Preemption is one running job stopped so that a waiting job of a higher
// class can start on its GPUs.
type Preemption struct {
	// Victim is the job stopped; Preemptor the job it is stopped for.
	Victim, Preemptor string
	// Policy is what happens to the victim once its GPUs are released:
	// preempt.Requeue (back to the queue with its submit time) or
	// preempt.Cancel.
	Policy preempt.Policy
	// Deadline is the end of the grace period (the cycle's time plus
	// PreemptionConfig.Grace): the victim is killed by then.
	Deadline time.Time
	// GPUs is what the victim holds; LostGPUSeconds the work it loses:
	// its GPUs times the time since it started or last checkpointed
	// (Engine.Checkpointed).
	GPUs           int
	LostGPUSeconds int64
	// Reason says it in a user's words: "preempted by X (class 2, above
	// this job's 0) for its 256-GPU gang, which had no planned start".
	Reason string
}

// Overrun is an active job past its time limit.
type Overrun struct {
	Job string
	// End is when its time limit ran out.
	End time.Time
}

// HoldStatus describes one hold of hold mode.
type HoldStatus struct {
	Job string `json:"job"`
	// Since is when the hold began.
	Since time.Time `json:"since"`
	// GPUs is the GPUs held idle now, of the Target GPUs of the placement
	// the hold builds up to, on Nodes (a hostlist).
	GPUs   int    `json:"gpus"`
	Target int    `json:"target"`
	Nodes  string `json:"nodes"`
	// SpentGPUHours is the GPU-time held idle so far, of BudgetGPUHours.
	SpentGPUHours  float64 `json:"spent_gpu_hours"`
	BudgetGPUHours float64 `json:"budget_gpu_hours"`
	// EstimatedStart is when the gang was estimated to fit on its target
	// when the target was chosen.
	EstimatedStart time.Time `json:"estimated_start"`
}

// WaitCode says why a job waits.
type WaitCode uint8

const (
	// WaitReserved: the job holds a reservation (planned start in Until).
	// Due (Until not after now) and not started: Blocker names a job run
	// past its time limit on its GPUs, or Detail says why its queue's
	// quota does not take it now beside the reservations it would run
	// with; it keeps its reservation.
	WaitReserved WaitCode = iota + 1
	// WaitHeld: GPUs are being held for the job as they free up (hold
	// mode); Hold says how many, where, and the budget left.
	WaitHeld
	// WaitPriority: a higher-priority job goes first (strict order, named in
	// Blocker), or the job was not tested this cycle. With Detail, Blocker
	// is the job this one was preempted for, which goes first on the GPUs
	// this one left: the preemptor's claim was dropped (a drain or a node
	// failure) and this job released before a cycle gave it another, so
	// that no claim keeps them (the next cycle is due at once).
	WaitPriority
	// WaitResources: the job does not fit the free GPUs now, and no
	// reservation was made for it (NoSlot says why, when a slot was
	// refused it).
	WaitResources
	// WaitReservation: the job would fit now, but only on GPUs reserved for
	// job Blocker from time Until.
	WaitReservation
	// WaitTopology: the job waits for a tighter placement (its patience).
	WaitTopology
	// WaitGang: some members of the job fit, but not all together.
	WaitGang
	// WaitHold: the job would fit now, but on GPUs held for job Blocker
	// (a hold since Until).
	WaitHold
	// WaitForHold: the job has no planned start (running jobs have no time
	// limit) and is to get a hold: from Until (Detail says why not
	// before), or once the holder Blocker gives its GPUs up.
	WaitForHold
	// WaitPreempting: the job preempted the jobs named in Detail (those
	// still holding GPUs); it starts on the GPUs claimed for it (kept
	// meanwhile: the victims' where it needs them, free ones elsewhere,
	// and a reclaim may preempt for quota alone) at the first cycle after
	// the host reports them all released, expected by Until (the end of
	// their grace period). A reclaim on pods growing jobs lend it alone
	// preempts none (Detail empty): the next cycle starts it, due at
	// once (NextEvent).
	WaitPreempting
	// WaitClaimed: the job would fit now, but on GPUs kept for job
	// Blocker, which preempted jobs to start there (since Until).
	WaitClaimed
	// WaitQuota: the job's queue has no quota for it now (Config.Quotas);
	// Detail names the queue and the limit that binds, Blocker the queue
	// (for a job restored into no queue, its queue's recorded name, which
	// the config no longer has, or "").
	// In a queue with QueueSpec.StrictOrder, a job ranked below one of
	// its queue that waits for quota waits with it: Blocker is then that
	// job, and Detail says so.
	WaitQuota
)

var codeNames = [...]string{"", "Reserved", "Held", "Priority", "Resources", "Reservation", "Topology", "Gang", "Hold", "ForHold", "Preempting", "Claimed", "Quota"}

// String returns the code's stable name.
func (c WaitCode) String() string {
	return enumName(codeNames[:], c, "WaitCode")
}

// MarshalText renders the code's name (for JSON plans).
func (c WaitCode) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses what MarshalText renders.
func (c *WaitCode) UnmarshalText(b []byte) error {
	return parseEnum(codeNames[:], b, "WaitCode", c)
}

// parseEnum sets *v to the code named b in names, or written typ(n) as
// enumName writes a value without a name.
func parseEnum[T ~uint8](names []string, b []byte, typ string, v *T) error {
	for i, n := range names {
		if i > 0 && n == string(b) {
			*v = T(i)
			return nil
		}
	}
	var n uint8
	if _, err := fmt.Sscanf(string(b), typ+"(%d)", &n); err == nil && fmt.Sprintf("%s(%d)", typ, n) == string(b) {
		*v = T(n)
		return nil
	}
	return fmt.Errorf("unknown %s %q", typ, b)
}

// enumName returns the name of v, a code numbered from 1, in names, or
// typ(v) for a value without one.
func enumName[T ~uint8](names []string, v T, typ string) string {
	if int(v) < len(names) && v > 0 {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}

// NoSlotCode says why a waiting job was refused a reservation slot
// (Config.ReservationDepth, Config.ReservationMinGPUs).
type NoSlotCode uint8

const (
	// SlotsTaken: every one of the ReservationDepth slots is held by
	// another job.
	SlotsTaken NoSlotCode = iota + 1
	// SmallSlotTaken: the job is below ReservationMinGPUs and has not
	// waited ReservationAnyAfter; the one slot such jobs share is held by
	// another job.
	SmallSlotTaken
	// SlotKept: a free slot is kept for a higher-priority job this cycle
	// passed without one (it is offered again, in priority order, at the
	// next cycle).
	SlotKept
	// Backlog: a job below ReservationMinGPUs (any job, with that rule
	// off) that its queue's quota does not hold back has waited
	// Config.BacklogAfter (Plan.Backlog names one), and until none has, a
	// job may take a new reservation only while no job ranked above it
	// holds one (EASY); one does.
	Backlog
)

var noSlotNames = [...]string{"", "SlotsTaken", "SmallSlotTaken", "SlotKept", "Backlog"}

// String returns the code's stable name.
func (c NoSlotCode) String() string {
	return enumName(noSlotNames[:], c, "NoSlotCode")
}

// MarshalText renders the code's name (for JSON plans).
func (c NoSlotCode) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses what MarshalText renders.
func (c *NoSlotCode) UnmarshalText(b []byte) error {
	return parseEnum(noSlotNames[:], b, "NoSlotCode", c)
}

// text says the code in a user's words.
func (c NoSlotCode) text() string {
	switch c {
	case SlotsTaken:
		return "; no reservation: every reservation slot is held by another job"
	case SmallSlotTaken:
		return "; no reservation: the one slot shared by jobs below ReservationMinGPUs is held by another job"
	case SlotKept:
		return "; no reservation: the free slot is kept for a higher-priority job, offered again next cycle"
	case Backlog:
		return "; no reservation: the queue has a backlog (a job has waited past BacklogAfter), and a job ranked above this one holds a reservation"
	}
	return ""
}

// Waiting is a job that did not start, and why.
type Waiting struct {
	Job      string
	Priority uint64
	Code     WaitCode
	// Until is the planned start (Reserved), the blocking reservation's
	// start (Reservation), the hold's start (Held) or the end of the
	// job's patience (Topology).
	Until time.Time `json:",omitzero"`
	// Blocker is the job holding the reservation (Reservation), the
	// higher-priority job ahead (Priority, strict order), the job past
	// its time limit that a due reservation waits for (Reserved), or the
	// queue whose limit binds or the job ahead in its queue's strict
	// order (Quota).
	Blocker string `json:",omitempty"`
	// Member and Reason give the placement failure (Resources, Gang,
	// Topology). A Reservation, Hold or Claimed wait carries its test's
	// failure on the GPUs the others' reservations, holds and claims
	// leave, which its message does not quote.
	Member string `json:",omitempty"`
	// Reason is the placement reason of the failing member. Its counts
	// ("the cluster has 1") are those of the state the plan leaves,
	// after the cycle's starts, reservations, holds and claims (see the
	// package doc for the kinds that keep the counts of the test).
	Reason placement.Reason `json:"-"`
	// Detail explains a failure that has no placement reason (a gang's
	// required co-location). Message and JSON render Reason otherwise.
	Detail string `json:",omitempty"`
	// Spans is, for Topology, the leaves the best placement now spans.
	Spans int `json:",omitempty"`
	// NoSlot says, for Resources and Gang, why the job got no
	// reservation although the config plans them (0 when it was not
	// refused a slot: reservations are off or unbounded, or a slot was
	// open and no start could be planned).
	NoSlot NoSlotCode `json:",omitempty"`
	// Hold describes the job's hold (Held).
	Hold *HoldStatus `json:",omitempty"`
	// PreemptTried reports that the job looked for victims to preempt
	// this cycle (its class is above some running job's, and it could
	// not start soon otherwise) and that no victim set helped; Preempt
	// says why (no lower-class victims in any domain that could hold it,
	// victims inside their exempt time, or protected). It reports too
	// that a reclaim of its queue's guarantee found no set
	// (PreemptReclaim), whatever the classes. JSON renders it as
	// PreemptDetail. A search by class tells the counts of the state the
	// plan leaves, its starts counted as running (a reclaim's, those of
	// the job's test).
	PreemptTried bool                `json:",omitempty"`
	Preempt      preempt.Explanation `json:"-"`
	// PreemptReclaim says that the search was a reclaim of the job's
	// queue's guarantee, among the gangs of queues that borrow, whatever
	// their class: Preempt's classes are then not the jobs' (the reason
	// names the borrowers).
	PreemptReclaim bool `json:",omitempty"`
	// PreemptPromised counts the lower-class running jobs (for a
	// reclaim, the jobs of borrowing queues) the search left out because
	// every GPU they hold is promised to a reservation or a hold of
	// another job (not a growing job left out because its GPUs not
	// promised are pods it lends the job, which the search counts free).
	PreemptPromised int `json:",omitempty"`
}

// Message renders the reason in a user's words, with times relative to
// epoch when it is not zero; a failed preemption attempt follows it.
func (w *Waiting) Message(epoch time.Time) string {
	m := w.message(epoch)
	if w.PreemptTried && w.PreemptReclaim {
		m += "; reclaim did not help: " + reclaimWords(w.Preempt)
		if w.PreemptPromised > 0 {
			m += fmt.Sprintf(" (%s of borrowing queues left out: every GPU they hold is promised to a reservation or a hold)", jobCount(w.PreemptPromised))
		}
	} else if w.PreemptTried {
		m += "; preemption did not help: " + w.Preempt.String()
		if w.PreemptPromised > 0 {
			m += fmt.Sprintf(" (%s of a lower class left out: every GPU they hold is promised to a reservation or a hold)", jobCount(w.PreemptPromised))
		}
	}
	return m
}

// reclaimWords renders a failed reclaim search's explanation: its
// candidates are the gangs of queues that borrow (searched as one class
// below the job's), not gangs of a lower class.
func reclaimWords(r preempt.Explanation) string {
	switch {
	case r.Code == preempt.NoVictims:
		return fmt.Sprintf("no borrowed GPUs in any domain that could hold it: with every gang of a borrowing queue stopped (%s), %s", gangCount(r.Lower), r.Admission)
	case r.Code == preempt.SearchBound:
		return fmt.Sprintf("no victim set found in %d trial admissions, though stopping every gang of a borrowing queue would make room", r.Work)
	case r.Code == preempt.NotPreemptible:
		return fmt.Sprintf("the only gangs of borrowing queues that would make room cannot be preempted (%s with policy never)", gangCount(r.Never))
	}
	return r.String()
}

func gangCount(n int) string {
	if n == 1 {
		return "1 gang"
	}
	return fmt.Sprintf("%d gangs", n)
}

func jobCount(n int) string {
	if n == 1 {
		return "1 job"
	}
	return fmt.Sprintf("%d jobs", n)
}

func (w *Waiting) message(epoch time.Time) string {
	at := func(t time.Time) string { return formatTime(t, epoch) }
	switch w.Code {
	case WaitReserved:
		if w.Blocker != "" {
			return fmt.Sprintf("reserved: due at %s, waiting for job %s, which has run past its time limit", at(w.Until), w.Blocker)
		}
		if w.Detail != "" {
			return fmt.Sprintf("reserved: due at %s, but its queue's quota does not take it now: %s", at(w.Until), w.Detail)
		}
		return "reserved: planned to start at " + at(w.Until)
	case WaitHeld:
		if h := w.Hold; h != nil {
			return fmt.Sprintf("hold since %s: %d of %d GPUs held on %s; %.1f of %.1f GPU-hours of its budget left; estimated start %s",
				at(h.Since), h.GPUs, h.Target, h.Nodes, h.BudgetGPUHours-h.SpentGPUHours, h.BudgetGPUHours, at(h.EstimatedStart))
		}
		return "hold since " + at(w.Until)
	case WaitHold:
		return fmt.Sprintf("would fit now, but on GPUs held for job %s (a hold since %s)", w.Blocker, at(w.Until))
	case WaitForHold:
		return w.forHold(at)
	case WaitPriority:
		if w.Blocker != "" && w.Detail != "" {
			return "waiting for job " + w.Blocker + ", " + w.Detail
		}
		if w.Blocker != "" {
			return "waiting for higher-priority job " + w.Blocker
		}
		return "not tested this cycle (MaxJobsTested); higher-priority jobs go first"
	case WaitResources:
		return "not enough free GPUs now: " + w.member() + w.NoSlot.text()
	case WaitReservation:
		return fmt.Sprintf("would fit now, but on GPUs reserved for job %s from %s", w.Blocker, at(w.Until))
	case WaitTopology:
		return fmt.Sprintf("waiting until %s for a tighter placement: %s", at(w.Until), w.member())
	case WaitGang:
		return "its members cannot all fit together: " + w.member() + w.NoSlot.text()
	case WaitPreempting:
		// The victims may hold GPUs it starts on or quota it needs
		// back (a reclaim), or both: the reason names what it waits for.
		if w.Detail == "" {
			return "GPUs claimed for it, on pods growing jobs lend it (no job preempted); it starts at the next cycle"
		}
		their := "its"
		if strings.HasPrefix(w.Detail, "jobs ") {
			their = "their"
		}
		return fmt.Sprintf("waiting for preempted %s to release %s GPUs (grace until %s); it starts at the next cycle after", w.Detail, their, at(w.Until))
	case WaitClaimed:
		return fmt.Sprintf("would fit now, but on GPUs kept for job %s, which preempted jobs to start there (since %s)", w.Blocker, at(w.Until))
	case WaitQuota:
		return w.Detail
	}
	return w.Code.String()
}

func (w *Waiting) forHold(at func(time.Time) string) string {
	s := "no planned start (running jobs have no time limit); "
	switch {
	case w.Blocker != "" && !w.Until.IsZero():
		return s + fmt.Sprintf("the GPUs it needs are held for lower-ranked job %s until %s, then they pass to it", w.Blocker, at(w.Until))
	case w.Blocker != "":
		return s + fmt.Sprintf("the GPUs it needs are held for job %s, which ranks higher", w.Blocker)
	case w.Detail != "":
		return s + fmt.Sprintf("%s: eligible for a hold at %s", w.Detail, at(w.Until))
	}
	return s + "eligible for a hold at " + at(w.Until)
}

func (w *Waiting) member() string {
	d := w.detail()
	if w.Member == "" {
		return d
	}
	return "member " + w.Member + ": " + d
}

func (w *Waiting) detail() string {
	if w.Reason.Code != 0 {
		return w.Reason.String()
	}
	return w.Detail
}

// MarshalJSON renders the waiting job with its reason's text in Detail
// and a failed preemption's in PreemptDetail. The rendering is one way:
// Reason and Preempt are written as text only, so a Waiting decoded from
// it has neither (read Detail and PreemptDetail from the JSON; its
// Message renders Detail but not the preemption's words).
func (w Waiting) MarshalJSON() ([]byte, error) {
	type plain Waiting
	out := struct {
		plain
		PreemptDetail string `json:",omitempty"`
	}{plain: plain(w)}
	out.Detail = w.detail()
	if w.PreemptTried {
		out.PreemptDetail = w.Preempt.String()
		if w.PreemptReclaim {
			out.PreemptDetail = reclaimWords(w.Preempt)
		}
	}
	return json.Marshal(out)
}

func formatTime(t, epoch time.Time) string {
	if t.IsZero() {
		return "never"
	}
	if epoch.IsZero() {
		return t.UTC().Format(time.RFC3339)
	}
	return "t+" + t.Sub(epoch).String()
}

// Describe renders the plan as text: a line for the cycle, one for a
// backlog (Backlog), then one per start, reservation, move, overrun,
// hold, preemption, pod change, hold end and waiting job, with node
// names as Slurm hostlists and times relative to epoch (absolute when
// epoch is zero).
func (p *Plan) Describe(c *topology.Cluster, epoch time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cycle at %s: %d started, %d reserved, %d waiting, %d tested\n",
		formatTime(p.Time, epoch), len(p.Starts), len(p.Reservations), len(p.Waiting)+p.Unchanged, p.Tested)
	if p.Unchanged > 0 {
		fmt.Fprintf(&b, "(%d waiting with an unchanged reason not listed)\n", p.Unchanged)
	}
	if p.Backlog != "" {
		fmt.Fprintf(&b, "backlog: %s has waited past BacklogAfter; new reservations one at a time (EASY)\n", p.Backlog)
	}
	for _, s := range p.Starts {
		fmt.Fprintf(&b, "start %s on %s\n", s.Job, Hosts(c, &s.Allocation))
	}
	for _, r := range p.Reservations {
		end := ""
		if !r.End.IsZero() {
			end = " until " + formatTime(r.End, epoch)
		}
		fmt.Fprintf(&b, "reserve %s at %s%s on %s\n", r.Job, formatTime(r.Start, epoch), end, Hosts(c, &r.Allocation))
	}
	for _, m := range p.Moves {
		if m.To.IsZero() {
			fmt.Fprintf(&b, "dropped the reservation of %s at %s: %s %s\n", m.Job, formatTime(m.From, epoch), m.Cause, m.By)
		} else {
			fmt.Fprintf(&b, "moved %s from %s to %s: %s %s\n", m.Job, formatTime(m.From, epoch), formatTime(m.To, epoch), m.Cause, m.By)
		}
	}
	for _, o := range p.Overruns {
		fmt.Fprintf(&b, "overrun %s: its limit ended at %s\n", o.Job, formatTime(o.End, epoch))
	}
	for _, h := range p.Holds {
		fmt.Fprintf(&b, "hold for %s since %s: %d of %d GPUs held on %s, %.1f of %.1f GPU-hours spent\n", h.Job,
			formatTime(h.Since, epoch), h.GPUs, h.Target, h.Nodes, h.SpentGPUHours, h.BudgetGPUHours)
	}
	for _, x := range p.Preemptions {
		fmt.Fprintf(&b, "preempt %s for %s (%s, grace until %s, %.1f GPU-hours lost): %s\n", x.Victim, x.Preemptor, x.Policy,
			formatTime(x.Deadline, epoch), float64(x.LostGPUSeconds)/3600, x.Reason)
	}
	for i := range p.PodChanges {
		fmt.Fprintf(&b, "%s\n", p.PodChanges[i].describe(c))
	}
	for _, h := range p.HoldEnds {
		by := ""
		if h.By != "" {
			by = " " + h.By
		}
		fmt.Fprintf(&b, "hold of %s ended (%s%s), %d GPUs released\n", h.Job, h.Cause, by, h.Held)
	}
	for i := range p.Waiting {
		w := &p.Waiting[i]
		fmt.Fprintf(&b, "wait %s %s: %s\n", w.Job, w.Code, w.Message(epoch))
	}
	return b.String()
}

// Hosts renders an allocation's nodes as Slurm hostlists per member, for
// example "worker=n[000-015]".
func Hosts(c *topology.Cluster, a *gang.Allocation) string {
	parts := make([]string, 0, len(a.Members))
	for _, m := range a.Members {
		names := make([]string, 0, len(m.Assignment))
		for _, x := range m.Assignment {
			names = append(names, c.NodeName(x.Node))
		}
		slices.Sort(names)
		parts = append(parts, m.Name+"="+topology.CompressHostlist(names))
	}
	return strings.Join(parts, " ")
}
