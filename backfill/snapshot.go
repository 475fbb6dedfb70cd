package backfill

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// ErrRestore marks an engine snapshot that cannot be restored.
var ErrRestore = errors.New("backfill: cannot restore")

// Snapshot is the whole engine as plain, JSON-serialisable data: jobs,
// running allocations, reservations, hold, fair-share accounts and usage.
// A host scheduler saves it (or rebuilds it from its own source of truth)
// and calls Restore after a restart.
type Snapshot struct {
	Time           time.Time           `json:"time"`
	Seq            uint64              `json:"seq"`
	Cursor         int                 `json:"cursor,omitempty"`
	LastCycle      time.Time           `json:"last_cycle,omitzero"`
	HeldGPUSeconds float64             `json:"held_gpu_seconds,omitempty"`
	Jobs           []JobRecord         `json:"jobs"`
	Ledger         gang.Snapshot       `json:"ledger"`
	Accounts       fairshare.Spec      `json:"accounts"`
	Usage          []AccountUsage      `json:"usage,omitempty"`
	Reservations   []ReservationRecord `json:"reservations,omitempty"`
	Hold           *HoldRecord         `json:"hold,omitempty"`
}

// JobRecord is one job of a Snapshot.
type JobRecord struct {
	Job        Job       `json:"job"`
	Seq        uint64    `json:"seq"`
	Running    bool      `json:"running,omitempty"`
	Start      time.Time `json:"start,omitzero"`
	LastCharge time.Time `json:"last_charge,omitzero"`
	Confirmed  bool      `json:"confirmed,omitempty"`
	HoldExpiry time.Time `json:"hold_expiry,omitzero"`
}

// AccountUsage is an account's own decayed usage (GPU-seconds) at the
// snapshot's time.
type AccountUsage struct {
	Account    string  `json:"account"`
	GPUSeconds float64 `json:"gpu_seconds"`
}

// ReservationRecord is one reservation of a Snapshot.
type ReservationRecord struct {
	Job        string            `json:"job"`
	Start      time.Time         `json:"start"`
	End        time.Time         `json:"end,omitzero"`
	FirstStart time.Time         `json:"first_start"`
	Members    []gang.GangRecord `json:"placement"`
}

// HoldRecord is the hold of a Snapshot.
type HoldRecord struct {
	Job    string            `json:"job"`
	Since  time.Time         `json:"since"`
	Target []gang.GangRecord `json:"target"`
}

// Snapshot exports the engine at time now (usage is read at now).
func (e *Engine) Snapshot(now time.Time) (*Snapshot, error) {
	if err := e.tick(now); err != nil {
		return nil, err
	}
	e.chargeAll(now)
	s := &Snapshot{Time: now, Seq: e.seq, Cursor: e.cursor, LastCycle: e.lastCycle,
		HeldGPUSeconds: e.heldGPUSeconds, Ledger: e.ledger.Snapshot(), Accounts: e.tree.Spec()}
	all := make([]*jobRec, 0, len(e.jobs))
	for _, j := range e.jobs {
		all = append(all, j)
	}
	slices.SortFunc(all, func(a, b *jobRec) int { return int(a.seq) - int(b.seq) })
	for _, j := range all {
		s.Jobs = append(s.Jobs, JobRecord{Job: j.job, Seq: j.seq, Running: j.state == running,
			Start: j.start, LastCharge: j.lastCharge, Confirmed: j.confirmed, HoldExpiry: j.holdExpiry})
	}
	for _, a := range s.Accounts.Accounts {
		u, err := e.tree.OwnUsage(a.Name, now)
		if err != nil {
			return nil, err
		}
		if u != 0 {
			s.Usage = append(s.Usage, AccountUsage{a.Name, u})
		}
	}
	for _, r := range e.resv {
		s.Reservations = append(s.Reservations, ReservationRecord{Job: r.job.job.ID, Start: r.start, End: r.end,
			FirstStart: r.firstStart, Members: e.records(&r.alloc)})
	}
	if h := e.hold; h != nil {
		s.Hold = &HoldRecord{Job: h.job.job.ID, Since: h.since, Target: e.records(&h.target)}
	}
	return s, nil
}

// records renders an allocation as one gang record (node names).
func (e *Engine) records(a *gang.Allocation) []gang.GangRecord {
	g := gang.GangRecord{ID: a.ID}
	for _, m := range a.Members {
		mr := gang.MemberRecord{Name: m.Name, Want: m.Pods}
		for _, x := range m.Assignment {
			pr := gang.PodRecord{Node: e.c.NodeName(int(x.Node))}
			for k := range 64 {
				if x.GPUs&(1<<uint(k)) != 0 {
					pr.GPUs = append(pr.GPUs, k)
				}
			}
			mr.Pods = append(mr.Pods, pr)
		}
		g.Members = append(g.Members, mr)
	}
	return []gang.GangRecord{g}
}

// allocation turns records back into an allocation.
func (e *Engine) allocation(recs []gang.GangRecord) (gang.Allocation, error) {
	var a gang.Allocation
	if len(recs) != 1 {
		return a, fmt.Errorf("want one placement record, got %d", len(recs))
	}
	a.ID = recs[0].ID
	for _, m := range recs[0].Members {
		ma := gang.MemberAllocation{Name: m.Name, Pods: m.Want}
		for _, p := range m.Pods {
			n, ok := e.c.NodeIndex(p.Node)
			if !ok {
				return a, fmt.Errorf("%w: %q", topology.ErrUnknownNode, p.Node)
			}
			var mask uint64
			for _, g := range p.GPUs {
				if g < 0 || g >= e.c.NodeGPUs(n) {
					return a, fmt.Errorf("node %s has no GPU %d", p.Node, g)
				}
				mask |= 1 << uint(g)
			}
			ma.Assignment = append(ma.Assignment, topology.NodeAlloc{Node: int32(n), GPUs: mask})
		}
		a.Members = append(a.Members, ma)
	}
	return a, nil
}

// Restore rebuilds an engine for cluster c with config cfg from a
// snapshot. Everything is checked before the engine is returned: the
// running allocations (as gang.Restore checks them), every job (as Submit
// checks it), that running jobs and ledger gangs match, and that
// reservations name pending jobs and known nodes. The error names each
// problem.
func Restore(c *topology.Cluster, cfg Config, snap *Snapshot) (*Engine, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	tree, err := fairshare.BuildTree(snap.Accounts, cfg.FairShare)
	if err != nil {
		return nil, fmt.Errorf("%w: accounts: %w", ErrRestore, err)
	}
	for _, u := range snap.Usage {
		if err := tree.Charge(u.Account, u.GPUSeconds, snap.Time); err != nil {
			bad("usage of %s: %v", u.Account, err)
		}
	}
	e, err := New(c, cfg, tree)
	if err != nil {
		return nil, err
	}
	ledger, err := gang.Restore(c, snap.Ledger, cfg.gangOptions())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRestore, err)
	}
	e.ledger = ledger
	e.seq, e.cursor, e.lastCycle, e.heldGPUSeconds = snap.Seq, snap.Cursor, snap.LastCycle, snap.HeldGPUSeconds
	isRunning := map[string]bool{}
	for _, r := range snap.Jobs {
		j, err := e.check(r.Job)
		if err != nil {
			bad("job %s: %v", r.Job.ID, err)
			continue
		}
		if _, dup := e.jobs[j.job.ID]; dup {
			bad("job %s listed twice", j.job.ID)
			continue
		}
		j.seq, j.holdExpiry = r.Seq, r.HoldExpiry
		e.jobs[j.job.ID] = j
		if !r.Running {
			e.pending = append(e.pending, j)
			continue
		}
		a, ok := e.ledger.Get(j.job.ID)
		if !ok {
			bad("running job %s has no allocation", j.job.ID)
			continue
		}
		j.alloc, j.used = a, a.GPUs()
		isRunning[j.job.ID] = true
		j.state, j.confirmed, j.lastCharge = running, r.Confirmed, r.LastCharge
		e.setEnd(j, r.Start)
		e.running = append(e.running, j)
	}
	for _, id := range e.ledger.IDs() {
		if !isRunning[id] {
			bad("allocation of gang %s belongs to no running job", id)
		}
	}
	for _, rr := range snap.Reservations {
		j, ok := e.jobs[rr.Job]
		if !ok || j.state != pending {
			bad("reservation for %s, which is not pending", rr.Job)
			continue
		}
		a, err := e.allocation(rr.Members)
		if err != nil {
			bad("reservation for %s: %v", rr.Job, err)
			continue
		}
		r := &reservation{job: j, start: rr.Start, end: rr.End, firstStart: rr.FirstStart, alloc: a}
		j.resv = r
		e.resv = append(e.resv, r)
		e.resvVersion++
	}
	if h := snap.Hold; h != nil {
		j, ok := e.jobs[h.Job]
		a, err := e.allocation(h.Target)
		switch {
		case !ok || j.state != pending:
			bad("hold for %s, which is not pending", h.Job)
		case err != nil:
			bad("hold for %s: %v", h.Job, err)
		default:
			e.hold = &hold{job: j, since: h.Since, target: a}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrRestore, errors.Join(errs...))
	}
	e.last = snap.Time
	return e, nil
}
