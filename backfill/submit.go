package backfill

import (
	"fmt"
	"slices"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/internal/sat"
	"github.com/phalanx-sched/phalanx/topology"
)

// checkSubmit checks job j submitted at now and builds its record; it
// changes nothing in the engine but, when it accepts the job, the table
// that numbers shapes (shapeid.go), which no decision depends on.
func (e *Engine) checkSubmit(j Job, now time.Time) (*jobRec, error) {
	if _, dup := e.jobs.lookup(j.ID, now, e.cfg.KeepEnded); dup && j.ID != "" {
		return nil, fmt.Errorf("%w: %s", ErrDuplicateJob, j.ID)
	}
	if j.Submit.IsZero() {
		j.Submit = now
	}
	if j.Submit.After(now) {
		return nil, fmt.Errorf("%w: job %s: submit time %s is after now (%s)", ErrBadJob, j.ID,
			j.Submit.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return e.validateJob(j, true)
}

// simpleShape reports whether g has one member, no co-location and no
// node sets.
func simpleShape(g *gang.Spec) bool {
	if len(g.Members) != 1 || g.Colocate.Level != "" {
		return false
	}
	r := &g.Members[0].Request
	return r.Allowed == nil && r.Excluded == nil
}

// validateJob validates a job as Submit does (every field in range, a valid
// gang that fits the cluster when empty) and builds its record. With fits
// false (a restore) a gang that fits the empty cluster on the nodes it was
// submitted with but not within its queue's nodes (marked unfit) or
// limits is accepted: the config may have changed since it was
// submitted, and it waits, told why, until it is cancelled or a config
// lets it run.
func (e *Engine) validateJob(j Job, fits bool) (*jobRec, error) {
	if err := e.checkFields(&j); err != nil {
		return nil, err
	}
	// The engine keeps its own copy: a caller that reuses its Job (its
	// members, its node sets) after Submit changes nothing here.
	j.Gang = cloneGang(j.Gang)
	j.Gang.ID = j.ID
	if err := j.Gang.Validate(e.c); err != nil {
		return nil, fmt.Errorf("%w: job %s: %w", ErrBadJob, j.ID, err)
	}
	rec := &jobRec{job: j, limit: j.TimeLimit, phase: StatePending, simple: simpleShape(&j.Gang), idKey: idPrefix(j.ID)}
	e.sizeJob(rec)
	var err error
	if rec.prep, err = e.tree.Prepare(e.fsJob(rec)); err != nil {
		return nil, fmt.Errorf("%w: job %s: %w", ErrBadJob, j.ID, err)
	}
	asked := rec.gpus
	if err := e.checkQueue(rec, fits); err != nil {
		return nil, err
	}
	if rec.gpus != asked { // its queue's pool left its whole nodes smaller
		if rec.prep, err = e.tree.Prepare(e.fsJob(rec)); err != nil {
			return nil, fmt.Errorf("%w: job %s: %w", ErrBadJob, j.ID, err)
		}
	}
	if err := e.checkPatience(rec); err != nil {
		return nil, err
	}
	// Never fits: no packing of the gang exists on an empty cluster. A
	// failure the admitter does not prove (a search cut at its bound, a
	// gang of more than gang.MaxSearchMembers members) is no verdict:
	// the job waits.
	res, err := e.adm.Check(e.empty, &rec.job.Gang, &e.alloc) // with its queue's nodes
	if err != nil {
		return nil, fmt.Errorf("%w: job %s: %w", ErrBadJob, j.ID, err)
	}
	if !res.Admitted && res.Proven {
		if fits || rec.ownAllowed == nil {
			return nil, fmt.Errorf("%w: job %s: %s", ErrNeverFits, j.ID, res)
		}
		// Restored: refused unless it is the queue's pool that leaves it
		// no room.
		own, err := e.adm.Check(e.empty, e.submittedGang(rec), &e.alloc)
		if err != nil {
			return nil, fmt.Errorf("%w: job %s: %w", ErrBadJob, j.ID, err)
		}
		if !own.Admitted && own.Proven {
			return nil, fmt.Errorf("%w: job %s: %s", ErrNeverFits, j.ID, own)
		}
		rec.unfit = fmt.Sprintf("%s's nodes cannot run it even with every GPU free (%s): it cannot start unless the queue's pool is widened", e.quota.name(rec.queue), res)
	}
	if !fits && rec.unfit == "" && e.quota != nil {
		rec.unfit = e.neverWhy(rec)
	}
	// Numbered last, once the job is accepted (a refused one takes no
	// slot), and after checkQueue, which sets the queue and may restrict
	// the nodes.
	if rec.simple {
		m := &rec.job.Gang.Members[0]
		hash := shapeHash(&j)
		if e.collide {
			hash &= 3
		}
		rec.shapeID = e.shapes.id(hash, &shapeFields{req: m.Request, min: m.Min, step: m.Step, class: rec.job.Class, queue: rec.queue})
	}
	return rec, nil
}

// sizeJob sets job j's gpus, minGPUs, leastGPUs and wholeG from its gang
// as it is (gang.Spec.GPUs and MinGPUs, each whole-node member's largest
// usable node counted once; leastGPUs its smallest usable nodes).
func (e *Engine) sizeJob(j *jobRec) {
	members := j.job.Gang.Members
	j.gpus, j.minGPUs, j.leastGPUs, j.wholeG = 0, 0, 0, nil
	for i := range members {
		m := &members[i]
		r := &m.Request
		per := r.GPUsPerNode
		if r.GPUs == 0 && per == 0 {
			if j.wholeG == nil {
				j.wholeG = make([]int, len(members))
			}
			per = m.WholeNodeGPUs(e.c)
			j.wholeG[i] = per
		}
		full, least, lower := r.GPUs, r.GPUs, r.GPUs
		if r.GPUs == 0 {
			pods := r.Nodes
			if m.Min > 0 && m.Min < pods {
				pods = m.Min
			}
			full, least = sat.Mul(r.Nodes, per), sat.Mul(pods, per)
			lower = least
			if r.GPUsPerNode == 0 {
				lower = e.smallestWhole(m, pods)
			}
		}
		j.gpus, j.minGPUs = sat.Add(j.gpus, full), sat.Add(j.minGPUs, least)
		j.leastGPUs = sat.Add(j.leastGPUs, lower)
	}
}

// smallestWhole returns the GPUs of the pods smallest nodes that
// whole-node member m may use (its Allowed set less Excluded): the fewest
// GPUs pods whole-node pods of m can hold, each on its own node (all its
// usable nodes' when it has fewer; the admitter refuses it then).
func (e *Engine) smallestWhole(m *gang.Member, pods int) int {
	r := &m.Request
	count := make([]int, e.c.MaxNodeGPUs()+1) // usable nodes by their GPUs
	for n := 0; n < e.c.NumNodes(); n++ {
		if (r.Allowed == nil || r.Allowed.Test(uint(n))) && (r.Excluded == nil || !r.Excluded.Test(uint(n))) {
			count[e.c.NodeGPUs(topology.NodeID(n))]++
		}
	}
	g := 0
	for size := 0; size < len(count) && pods > 0; size++ {
		k := min(count[size], pods)
		g, pods = sat.Add(g, sat.Mul(k, size)), pods-k
	}
	return g
}

// pooledShape reports whether g is simple but for its node set, which is
// its queue's pool (the pool's own set, shared by the queue's jobs).
func pooledShape(g *gang.Spec, pool *bitset.BitSet) bool {
	if len(g.Members) != 1 || g.Colocate.Level != "" {
		return false
	}
	r := &g.Members[0].Request
	return r.Allowed == pool && r.Excluded == nil
}

// cloneGang returns a copy of g that shares no memory with it: its
// members and their node sets copied.
func cloneGang(g gang.Spec) gang.Spec {
	g.Members = slices.Clone(g.Members)
	for i := range g.Members {
		r := &g.Members[i].Request
		if r.Allowed != nil {
			r.Allowed = r.Allowed.Clone()
		}
		if r.Excluded != nil {
			r.Excluded = r.Excluded.Clone()
		}
	}
	return g
}

// checkFields checks a job's own fields (not its gang).
func (e *Engine) checkFields(j *Job) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: job %s: %s", ErrBadJob, j.ID, fmt.Sprintf(format, args...))
	}
	switch {
	case j.ID == "":
		return fmt.Errorf("%w: no ID", ErrBadJob)
	case len(j.ID) > MaxIDLength:
		return fmt.Errorf("%w: an ID of %d bytes (at most %d)", ErrBadJob, len(j.ID), MaxIDLength)
	case j.Gang.ID != "" && j.Gang.ID != j.ID:
		return bad("gang ID %s differs", j.Gang.ID)
	case j.OnNodeFailure > Shrink:
		return bad("unknown OnNodeFailure %d", j.OnNodeFailure)
	case j.Preemption > preempt.Cancel:
		return bad("unknown Preemption policy %d", j.Preemption)
	}
	if err := checkTime("submit time", j.Submit); err != nil {
		return fmt.Errorf("%w: job %s: %w", ErrBadJob, j.ID, err) // both sentinels: errors.Is finds either
	}
	if err := checkDuration("time limit", j.TimeLimit); err != nil {
		return bad("%v", err)
	}
	if err := checkDuration("patience wait", j.Patience.Wait); err != nil {
		return bad("%v", err)
	}
	if p := j.Patience.MaxDomains; p < 0 || p > e.c.NumNodes() {
		return bad("patience of %d domains (at most %d)", p, e.c.NumNodes())
	}
	for i := range j.Gang.Members {
		m := &j.Gang.Members[i]
		if r := &m.Request; r.Nodes > e.c.NumNodes() || r.GPUs > e.c.TotalGPUs() {
			return bad("member %s asks for %s; the cluster has %d nodes and %d GPUs", m.Name, r, e.c.NumNodes(), e.c.TotalGPUs())
		}
	}
	return nil
}

// capImplies reports whether at most n domains of level l (a name, ""
// the lowest) imply at most m domains of level k: l lies at or below k
// (each domain of k used holds one of l used) and n <= m.
func (e *Engine) capImplies(n int, l string, m int, k string) bool {
	lowest := e.c.Depth() - 1
	li, ki := lowest, lowest
	if l != "" {
		li, _ = e.c.Level(l)
	}
	if k != "" {
		ki, _ = e.c.Level(k)
	}
	return li >= ki && n <= m
}

// checkPatience builds the tight spec of a job with patience: each
// member's cap becomes the patience's, unless the member has a cap that
// the patience's does not imply (a cap at a higher level, or more
// domains): such a member keeps its own, which the job's placement must
// meet whatever its patience.
func (e *Engine) checkPatience(rec *jobRec) error {
	j := &rec.job
	p := j.Patience
	if p.Level != "" { // checked even unused, as a request's MaxDomainsLevel is
		if _, ok := e.c.Level(p.Level); !ok {
			return fmt.Errorf("%w: job %s: patience level %q: %w", ErrBadJob, j.ID, p.Level, topology.ErrUnknownLevel)
		}
	}
	if p.MaxDomains == 0 {
		return nil
	}
	t := j.Gang
	t.Members = slices.Clone(j.Gang.Members)
	for i := range t.Members {
		r := &t.Members[i].Request
		if r.MaxDomains == 0 || e.capImplies(p.MaxDomains, p.Level, r.MaxDomains, r.MaxDomainsLevel) {
			r.MaxDomains, r.MaxDomainsLevel = p.MaxDomains, p.Level
		}
	}
	if err := t.Validate(e.c); err != nil {
		return fmt.Errorf("%w: job %s: with its patience: %w", ErrBadJob, j.ID, err)
	}
	rec.tight = &t
	return nil
}
