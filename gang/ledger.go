package gang

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Ledger keeps the books of a cluster: the free state and every admitted
// gang with its allocation. Every change is all-or-nothing. A Ledger is
// not safe for concurrent use.
type Ledger struct {
	c     *topology.Cluster
	s     *topology.State
	adm   *Admitter
	byID  map[string]*entry
	pool  []*entry // released entries, reused by Admit
	spare Allocation
	// scope and near are node sets for ReplacePod, made at its first
	// call.
	scope, near *bitset.BitSet
	req         placement.Request
	// dc counts pods per domain for Insert's check.
	dc domainCount
}

type entry struct {
	alloc Allocation
	spec  Spec
	// sets holds the node sets of spec's members (Allowed and Excluded
	// of member i at 2i and 2i+1): the ledger's own copies.
	sets []bitset.BitSet
}

// keepSpec makes e.spec a copy of g that shares no memory with it (its
// members and their node sets), reusing e's buffers: once they are large
// enough it allocates nothing.
func (e *entry) keepSpec(g *Spec) {
	members := append(e.spec.Members[:0], g.Members...)
	e.spec = Spec{ID: g.ID, Members: members, Colocate: g.Colocate}
	if n := 2 * len(members); cap(e.sets) < n {
		e.sets = make([]bitset.BitSet, n)
	} else {
		e.sets = e.sets[:n]
	}
	for i := range members {
		r := &members[i].Request
		if r.Allowed != nil {
			r.Allowed.CopyFull(&e.sets[2*i])
			r.Allowed = &e.sets[2*i]
		}
		if r.Excluded != nil {
			r.Excluded.CopyFull(&e.sets[2*i+1])
			r.Excluded = &e.sets[2*i+1]
		}
	}
}

// NewLedger returns an empty ledger for cluster c: every node up, every
// GPU free. Its admissions use an Admitter built with opts.
func NewLedger(c *topology.Cluster, opts Options) *Ledger {
	return &Ledger{c: c, s: topology.NewState(c), adm: NewAdmitter(c, opts), byID: make(map[string]*entry)}
}

// Cluster returns the ledger's cluster.
func (l *Ledger) Cluster() *topology.Cluster { return l.c }

// State returns the ledger's free state. Callers may read it, clone it or
// copy it for what-if work; they must change it only through the ledger.
func (l *Ledger) State() *topology.State { return l.s }

// Len returns the number of admitted gangs.
func (l *Ledger) Len() int { return len(l.byID) }

// Get returns the allocation of gang id (shared; do not modify).
func (l *Ledger) Get(id string) (*Allocation, bool) {
	e, ok := l.byID[id]
	if !ok {
		return nil, false
	}
	return &e.alloc, true
}

// IDs returns the admitted gang IDs in sorted order.
func (l *Ledger) IDs() []string {
	ids := make([]string, 0, len(l.byID))
	for id := range l.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Admit places gang g on the ledger's state, all members or none, and
// records it. A failed admission changes nothing and its Admission says which
// member failed and why. Admitting an ID already held is ErrDuplicateID.
// In the steady state (IDs admitted and released again) it allocates
// nothing beyond what the spec's first admission needed. The ledger keeps
// its own copy of g (members and node sets): changing g afterwards
// changes nothing in the ledger.
func (l *Ledger) Admit(g *Spec) (Admission, error) {
	if g == nil {
		return Admission{}, g.Validate(l.c)
	}
	if _, dup := l.byID[g.ID]; dup {
		return Admission{}, fmt.Errorf("%w: %s", ErrDuplicateID, g.ID)
	}
	res, err := l.adm.Admit(l.s, g, &l.spare)
	if err != nil || !res.Admitted {
		return res, err
	}
	e := l.newEntry()
	// Swap the spare allocation in, keeping the entry's old buffers as
	// the next spare.
	e.alloc, l.spare = l.spare, e.alloc
	e.keepSpec(g)
	l.byID[g.ID] = e
	return res, nil
}

func (l *Ledger) newEntry() *entry {
	if n := len(l.pool); n > 0 {
		e := l.pool[n-1]
		l.pool = l.pool[:n-1]
		return e
	}
	return &entry{}
}

// Release returns every GPU of gang id and forgets it.
func (l *Ledger) Release(id string) error {
	e, ok := l.byID[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownGang, id)
	}
	for i := range e.alloc.Members {
		if err := l.s.Release(e.alloc.Members[i].Assignment); err != nil {
			panic(fmt.Sprintf("gang: ledger and state disagree on %s: %v", id, err))
		}
	}
	delete(l.byID, id)
	e.spec = Spec{Members: e.spec.Members[:0]} // buffers kept for reuse
	l.pool = append(l.pool, e)
	return nil
}

// NodeDown marks node n down and releases, whole, every gang with a member
// on it (a gang with a dead rank is dead). It returns their IDs, sorted,
// for the caller to requeue or fail.
func (l *Ledger) NodeDown(n topology.NodeID) ([]string, error) {
	if n < 0 || int(n) >= l.c.NumNodes() {
		return nil, fmt.Errorf("%w: node ID %d (the cluster has %d nodes)", topology.ErrUnknownNode, n, l.c.NumNodes())
	}
	var dead []string
	for id, e := range l.byID {
		if e.alloc.OnNode(n) {
			dead = append(dead, id)
		}
	}
	slices.Sort(dead)
	for _, id := range dead {
		_ = l.Release(id)
	}
	return dead, l.s.SetStatus(topology.NodeID(n), topology.Down)
}

// NodeUp marks node n up: it is offered to placement again.
func (l *Ledger) NodeUp(n topology.NodeID) error { return l.s.SetStatus(n, topology.Up) }

// Drain marks node n drained: no new work; running gangs stay.
func (l *Ledger) Drain(n topology.NodeID) error { return l.s.SetStatus(n, topology.Drained) }

// GangsOn returns the IDs of the gangs with a member on node n, sorted.
func (l *Ledger) GangsOn(n topology.NodeID) []string {
	var ids []string
	for id, e := range l.byID {
		if e.alloc.OnNode(n) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// check verifies the books against the state: every allocated GPU belongs
// to exactly one admitted gang, free plus allocated equals the total, no
// gang is partly present (every member has the pods it records, between
// its minimum and its Request.Nodes), and the
// state's own indexes are consistent. It is for tests; it allocates.
func (l *Ledger) check() error {
	var errs []error
	owner := make([]map[int]string, l.c.NumNodes())
	used := make([]uint64, l.c.NumNodes())
	for _, id := range l.IDs() {
		e := l.byID[id]
		if e.alloc.ID != id {
			errs = append(errs, fmt.Errorf("gang %s recorded as %s", id, e.alloc.ID))
		}
		if len(e.alloc.Members) != len(e.spec.Members) {
			errs = append(errs, fmt.Errorf("gang %s: %d of %d members present", id, len(e.alloc.Members), len(e.spec.Members)))
			continue
		}
		for i := range e.alloc.Members {
			ma, m := &e.alloc.Members[i], &e.spec.Members[i]
			if min := m.Min; ma.Pods < m.Request.Nodes && (min <= 0 || ma.Pods < min) || ma.Pods == 0 && m.Request.GPUs == 0 {
				errs = append(errs, fmt.Errorf("gang %s member %s: %d pods, not whole", id, ma.Name, ma.Pods))
			}
			if m.Request.GPUs == 0 && ma.Pods > m.Request.Nodes {
				errs = append(errs, fmt.Errorf("gang %s member %s: %d pods, above its %d", id, ma.Name, ma.Pods, m.Request.Nodes))
			}
			if m.Request.GPUs == 0 && len(ma.Assignment) != ma.Pods {
				errs = append(errs, fmt.Errorf("gang %s member %s: %d pods on %d nodes", id, ma.Name, ma.Pods, len(ma.Assignment)))
			}
			for _, x := range ma.Assignment {
				n := int(x.Node)
				if used[n]&x.GPUs != 0 {
					for g := range 64 {
						if x.GPUs&used[n]&(1<<uint(g)) != 0 {
							errs = append(errs, fmt.Errorf("node %s GPU %d given to %s and %s", l.c.NodeName(topology.NodeID(n)), g, owner[n][g], id))
						}
					}
				}
				used[n] |= x.GPUs
				if owner[n] == nil {
					owner[n] = map[int]string{}
				}
				for g := range 64 {
					if x.GPUs&(1<<uint(g)) != 0 {
						owner[n][g] = id
					}
				}
			}
		}
	}
	for n := range used {
		if free := l.s.Free(topology.NodeID(n)); free&used[n] != 0 || (free|used[n]) != bits.Ones(l.c.NodeGPUs(topology.NodeID(n))) {
			errs = append(errs, fmt.Errorf("node %s: free %s and allocated %s do not partition its %d GPUs",
				l.c.NodeName(topology.NodeID(n)), topology.FormatGPUs(free), topology.FormatGPUs(used[n]), l.c.NodeGPUs(topology.NodeID(n))))
		}
	}
	if err := access.CheckState(l.s); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Describe lists the admitted gangs, one line each, with their members'
// nodes as Slurm hostlists.
func (l *Ledger) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d gangs, %d of %d GPUs allocated\n", len(l.byID), l.s.UsedGPUs(), l.c.TotalGPUs())
	for _, id := range l.IDs() {
		e := l.byID[id]
		fmt.Fprintf(&b, "%s:", id)
		for i := range e.alloc.Members {
			ma := &e.alloc.Members[i]
			names := make([]string, 0, len(ma.Assignment))
			for _, x := range ma.Assignment {
				names = append(names, l.c.NodeName(x.Node))
			}
			slices.Sort(names)
			fmt.Fprintf(&b, " %s=%d pods on %s", ma.Name, ma.Pods, topology.CompressHostlist(names))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Insert records gang g with an allocation computed elsewhere (by an
// Admitter on a what-if copy of the state, say), allocating exactly its
// GPUs on the ledger's state. g must be valid (Spec.Validate) and a a
// whole placement of it (Spec.CheckAllocation); otherwise the error wraps
// ErrBadSpec. Every GPU is checked first; on an error nothing changes. g
// and a are copied.
func (l *Ledger) Insert(g *Spec, a *Allocation) error {
	if err := g.Validate(l.c); err != nil {
		return err
	}
	if a == nil {
		return fmt.Errorf("%w: gang %s: no allocation (nil)", ErrBadSpec, g.ID)
	}
	if _, dup := l.byID[g.ID]; dup {
		return fmt.Errorf("%w: %s", ErrDuplicateID, g.ID)
	}
	if err := g.checkAllocation(l.c, a, &l.dc); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	for i := range a.Members {
		if err := l.s.Allocate(a.Members[i].Assignment); err != nil {
			for j := range i {
				_ = l.s.Release(a.Members[j].Assignment)
			}
			return fmt.Errorf("gang %s member %s: %w", g.ID, a.Members[i].Name, err)
		}
	}
	e := l.newEntry()
	a.CopyTo(&e.alloc)
	e.keepSpec(g)
	l.byID[g.ID] = e
	return nil
}

func init() {
	access.CheckLedger = func(x any) error { return x.(*Ledger).check() }
	access.PlacerOf = func(x any) any {
		switch v := x.(type) {
		case *Ledger:
			return v.adm.p
		case *Admitter:
			return v.p
		}
		panic(fmt.Sprintf("gang: PlacerOf(%T)", x))
	}
}
