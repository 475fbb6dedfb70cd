package backfill

import (
	"errors"
	"fmt"
	"slices"

	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/topology"
)

// check verifies every invariant of the engine from scratch: the ledger's
// books, the job lists against the job states, the ends index, the GPU
// owners, the node facts against the free state, and the book. Tests run
// it after every call (checkEach); it allocates.
func (e *Engine) check() error {
	errs := []error{access.CheckLedger(e.ledger), e.book.check(e.c)}
	errs = append(errs, e.checkJobs()...)
	errs = append(errs, e.checkOwners()...)
	errs = append(errs, e.checkClaims()...)
	errs = append(errs, e.checkQuotas()...)
	errs = append(errs, e.checkCover())
	for n, st := range e.nodes {
		if st.down() != (e.ledger.State().Status(topology.NodeID(n)) == topology.Down) {
			errs = append(errs, fmt.Errorf("node %s is %s, the free state says %s", e.c.NodeName(topology.NodeID(n)), st, e.ledger.State().Status(topology.NodeID(n))))
		}
	}
	return errors.Join(errs...)
}

// checkJobs checks the job lists and records.
func (e *Engine) checkJobs() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	var pending, running []*jobRec
	ends, unlimited, growers := 0, 0, 0
	for id, j := range e.jobs.byID {
		switch {
		case j.job.ID != id:
			bad("job %s filed as %s", j.job.ID, id)
		case j.seq == 0 || j.seq > e.seq:
			bad("job %s has sequence number %d of %d", id, j.seq, e.seq)
		case j.phase == StatePending:
			pending = append(pending, j)
		case j.phase.Active():
			running = append(running, j)
			if j.job.TimeLimit == 0 {
				unlimited++
			}
			if j.job.Grow {
				growers++
			}
			if a, ok := e.ledger.Get(id); !ok || a != j.alloc || j.used != a.GPUs() {
				bad("active job %s does not match its ledger record", id)
			}
			if !j.end.IsZero() {
				ends++
				if !e.prof.hasEnd(j) {
					bad("active job %s missing from the ends", id)
				}
			}
		}
	}
	sortJobs(pending)
	sortJobs(running)
	if !slices.Equal(pending, e.jobs.pending) || !slices.Equal(running, e.jobs.running) {
		bad("the queue or the running list disagrees with the job states")
	}
	patient := 0
	for _, j := range pending {
		if j.tight != nil {
			patient++
		}
	}
	if e.roundFrom > e.tests || e.eventAt > e.tests {
		bad("the windows' round began after test %d and the last event came after test %d, of %d", e.roundFrom, e.eventAt, e.tests)
	}
	for _, j := range pending {
		if j.tested > e.tests {
			bad("waiting job %s tested as test %d of %d", j.job.ID, j.tested, e.tests)
		}
		// Nothing is owed once every job that waited at the last event
		// was tested since, or a cycle without a window tested them all.
		if !e.owed && e.roundFrom != e.tests && j.tested <= e.eventAt {
			bad("waiting job %s is owed a test (tested as test %d, the last event after test %d), but none is asked for", j.job.ID, j.tested, e.eventAt)
		}
	}
	if patient != e.jobs.patient {
		bad("%d waiting jobs with patience, counted %d", patient, e.jobs.patient)
	}
	if growers != e.jobs.growers {
		bad("%d active jobs that grow, counted %d", growers, e.jobs.growers)
	}
	if unlimited != e.jobs.unlimited {
		bad("%d active jobs without a limit, counted %d", unlimited, e.jobs.unlimited)
	}
	if !slices.IsSortedFunc(e.prof.ends, endCmp) {
		bad("the ends are not in order")
	}
	if ends != len(e.prof.ends) {
		bad("%d ends indexed for %d active jobs with a limit", len(e.prof.ends), ends)
	}
	if e.ledger.Len() != len(running) {
		bad("%d gangs in the ledger for %d active jobs", e.ledger.Len(), len(running))
	}
	t := &e.jobs
	if len(t.bill) != len(t.running) {
		bad("%d billing entries for %d active jobs", len(t.bill), len(t.running))
	} else {
		for i, j := range t.running {
			if b := t.bill[i]; b != (billing{seq: j.seq, used: int32(j.used), acct: int32(j.acct)}) {
				bad("active job %s billed as %+v", j.job.ID, b)
			}
			if j.lastCharge.After(t.chargedAt) && !slices.Contains(t.fresh, j) {
				bad("active job %s last charged at %v, after every job's at %v, but not listed", j.job.ID, j.lastCharge, t.chargedAt)
			}
		}
	}
	return errs
}

// checkOwners checks that every GPU's owner is the active job whose
// allocation holds it.
func (e *Engine) checkOwners() []error {
	want := make([]*jobRec, len(e.jobs.owners))
	for _, j := range e.jobs.running {
		forGPUs(j.alloc, func(n, g int) { want[n*e.jobs.maxG+g] = j })
	}
	for i, o := range e.jobs.owners {
		if o != want[i] {
			return []error{fmt.Errorf("GPU %d of node %s: owner index disagrees with the allocations", i%e.jobs.maxG, e.c.NodeName(topology.NodeID(i/e.jobs.maxG)))}
		}
	}
	return nil
}

// checkClaims checks the claims against the jobs: every GPU of a claim is
// on a node in service and free or held by one of its victims; a victim is
// preempting, of a class below its preemptor's, and points back at the
// claim; only preempting jobs have a preemptor; a job's claim is in the
// book.
func (e *Engine) checkClaims() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	s := e.ledger.State()
	for _, cl := range e.book.claims {
		id := cl.job.job.ID
		for _, v := range cl.victims {
			if v.phase != StatePreempting || v.victimOf != cl || v.job.Class >= cl.job.job.Class && !cl.reclaim || v.preemptedBy != id {
				bad("job %s, %s of class %d, is a victim of %s (class %d) but not preempting for it", v.job.ID, v.phase, v.job.Class, id, cl.job.job.Class)
			}
		}
		forGPUs(&cl.alloc, func(n, g int) {
			o := e.jobs.owner(n, g)
			if s.Status(topology.NodeID(n)) != topology.Up || o != nil && !slices.Contains(cl.victims, o) {
				bad("GPU %d of node %s is claimed for %s but out of service or held by another job", g, e.c.NodeName(topology.NodeID(n)), id)
			}
		})
	}
	claimless := 0
	for _, j := range e.jobs.running {
		preempting := j.phase == StatePreempting
		if preempting && j.victimOf == nil {
			claimless++
		}
		switch {
		case preempting && (j.preemptedAt.IsZero() || j.preemptedBy == ""):
			bad("preempting job %s has no preemptor or signal time", j.job.ID)
		case !preempting && (j.victimOf != nil || j.preemptedBy != ""):
			bad("job %s, %s, has a preemptor", j.job.ID, j.phase)
		case j.victimOf != nil && (!slices.Contains(e.book.claims, j.victimOf) || !slices.Contains(j.victimOf.victims, j)):
			bad("preempting job %s points at a claim that does not list it", j.job.ID)
		case j.yieldTo != nil:
			bad("job %s, %s, yields to %s as a requeued job", j.job.ID, j.phase, j.yieldTo.job.ID)
		}
	}
	if claimless != e.book.claimless {
		bad("%d jobs preempt without a claim, counted %d", claimless, e.book.claimless)
	}
	for _, j := range e.jobs.pending {
		if j.claim != nil && !slices.Contains(e.book.claims, j.claim) {
			bad("job %s has a claim not in the book", j.job.ID)
		}
		// A job yields to its preemptor (released for it without a
		// claim) only requeued, until a walk would test it with its
		// preemptor's claim gone.
		if p := j.yieldTo; p != nil && (j.requeues == 0 || p == j || e.jobs.byID[p.job.ID] != p && p.phase == StatePending) {
			bad("waiting job %s yields to %s, but was never requeued, or that is itself, or a waiting job not the engine's of its ID", j.job.ID, p.job.ID)
		}
		// (Exact, as Restore derives it: a stale mark changes which
		// victim searches run.)
		if own := slices.ContainsFunc(e.jobs.running, func(r *jobRec) bool { return orphanOf(r, j) }); own != j.orphans { // (not hasOrphans: it trusts the count)
			bad("waiting job %s is marked %t for victims preempting for it without a claim; it has %t", j.job.ID, j.orphans, own)
		}
	}
	return errs
}

// sortJobs sorts jobs by sequence number.
func sortJobs(list []*jobRec) {
	slices.SortFunc(list, func(a, b *jobRec) int { return bySeq(a, b.seq) })
}
