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
	ends, unlimited := 0, 0
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
			if a, ok := e.ledger.Get(id); !ok || a != j.alloc || j.used != a.GPUs() {
				bad("active job %s does not match its ledger record", id)
			}
			if !j.end.IsZero() {
				ends++
				if _, ok := e.prof.ends.Get(endItem{end: j.end, seq: j.seq}); !ok {
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
	if unlimited != e.jobs.unlimited {
		bad("%d active jobs without a limit, counted %d", unlimited, e.jobs.unlimited)
	}
	if ends != e.prof.ends.Len() {
		bad("%d ends indexed for %d active jobs with a limit", e.prof.ends.Len(), ends)
	}
	if e.ledger.Len() != len(running) {
		bad("%d gangs in the ledger for %d active jobs", e.ledger.Len(), len(running))
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

// sortJobs sorts jobs by sequence number.
func sortJobs(list []*jobRec) {
	slices.SortFunc(list, func(a, b *jobRec) int { return bySeq(a, b.seq) })
}
