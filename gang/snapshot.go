package gang

import (
	"errors"
	"fmt"

	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Snapshot is a ledger as plain data (JSON-serialisable): node statuses
// and the running gangs with their pods. A host scheduler that restarts
// builds one from its own source of truth (the Kubernetes API, slurmctld's
// state) and calls Restore.
type Snapshot struct {
	Down    []string     `json:"down,omitempty"`
	Drained []string     `json:"drained,omitempty"`
	Gangs   []GangRecord `json:"gangs"`
}

// GangRecord is one running gang.
type GangRecord struct {
	ID      string         `json:"id"`
	Members []MemberRecord `json:"members"`
}

// MemberRecord is one member of a running gang: what it asked for and
// where its pods run.
type MemberRecord struct {
	Name string `json:"name"`
	// Want is the pods the member asked for (Request.Nodes), or 0 when
	// it asked for a GPU total.
	Want int `json:"want,omitempty"`
	// Min is the elastic minimum (0: all of Want).
	Min int `json:"min,omitempty"`
	// GPUs is the GPU total asked for, when Want is 0.
	GPUs int         `json:"gpus,omitempty"`
	Pods []PodRecord `json:"pods"`
}

// PodRecord is one pod: its node and GPU indices. In a member that asked
// for a GPU total, one record per node.
type PodRecord struct {
	Node string `json:"node"`
	GPUs []int  `json:"gpus"`
}

// Snapshot exports the ledger: gangs sorted by ID, pods in placement order.
func (l *Ledger) Snapshot() Snapshot {
	var snap Snapshot
	for n := range l.c.NumNodes() {
		switch l.s.Status(topology.NodeID(n)) {
		case topology.Down:
			snap.Down = append(snap.Down, l.c.NodeName(topology.NodeID(n)))
		case topology.Drained:
			snap.Drained = append(snap.Drained, l.c.NodeName(topology.NodeID(n)))
		}
	}
	snap.Gangs = make([]GangRecord, 0, len(l.byID))
	for _, id := range l.IDs() {
		snap.Gangs = append(snap.Gangs, l.record(id))
	}
	return snap
}

// record returns the record of admitted gang id.
func (l *Ledger) record(id string) GangRecord {
	e := l.byID[id]
	return recordOf(l.c, &e.spec, &e.alloc)
}

// recordOf returns the record of gang spec running as alloc (members in
// the same order) on cluster c.
func recordOf(c *topology.Cluster, spec *Spec, alloc *Allocation) GangRecord {
	g := GangRecord{ID: alloc.ID}
	for i := range alloc.Members {
		ma, m := &alloc.Members[i], &spec.Members[i]
		mr := MemberRecord{Name: ma.Name, Want: m.Request.Nodes, Min: m.Min, GPUs: m.Request.GPUs}
		for _, x := range ma.Assignment {
			mr.Pods = append(mr.Pods, PodRecord{Node: c.NodeName(x.Node), GPUs: gpuList(x.GPUs)})
		}
		g.Members = append(g.Members, mr)
	}
	return g
}

func gpuList(m uint64) []int {
	var out []int
	for g := range 64 {
		if m&(1<<uint(g)) != 0 {
			out = append(out, g)
		}
	}
	return out
}

// Restore builds a ledger for cluster c from a snapshot. Everything is
// checked before anything is applied; the error lists every problem, each
// naming the gangs, nodes and GPUs involved: an unknown node, a GPU the
// node does not have, two gangs (or two pods) claiming the same GPU, a
// gang that is not whole (fewer pods than its minimum), more pods than a
// member asked for, a GPU total exceeded other than on whole nodes
// (Exclusive), pods of different sizes that are
// not each their whole node, sizes that are negative or both pods and a
// total, missing or duplicate gang or member names, a node both down and
// drained. Restored gangs keep their pods; their specs are rebuilt
// from the records (pod counts and per-node GPU counts, whole nodes where
// the pods differ in size, Exclusive for a total held on more GPUs; no
// topology constraints). A host that re-places pods (Ledger.ReplacePod, which keeps
// a pod inside its member's required domain and its gang's co-location)
// gives each gang its full spec back with Ledger.SetSpec.
func Restore(c *topology.Cluster, snap Snapshot, opts Options) (*Ledger, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	node := func(gang, name string) int {
		i, ok := c.LookupNode(name)
		if !ok {
			bad("gang %s: unknown node %q", gang, name)
			return -1
		}
		return int(i)
	}
	type claim struct{ gang, member string }
	owner := make(map[[2]int]claim)
	ids := make(map[string]bool)
	type built struct {
		spec  Spec
		alloc Allocation
	}
	gangs := make([]built, 0, len(snap.Gangs))
	for _, g := range snap.Gangs {
		if g.ID == "" {
			bad("a gang has no ID")
			continue
		}
		if ids[g.ID] {
			bad("gang %s listed twice", g.ID)
			continue
		}
		ids[g.ID] = true
		if len(g.Members) == 0 {
			bad("gang %s has no members", g.ID)
			continue
		}
		b := built{spec: Spec{ID: g.ID}, alloc: Allocation{ID: g.ID}}
		names := map[string]bool{}
		for _, m := range g.Members {
			switch {
			case m.Name == "":
				bad("gang %s: a member has no name", g.ID)
			case names[m.Name]:
				bad("gang %s: member %q listed twice", g.ID, m.Name)
			}
			names[m.Name] = true
			if m.Want < 0 || m.Min < 0 || m.GPUs < 0 || m.Want > 0 && m.GPUs > 0 || m.Min > 0 && m.Want == 0 {
				bad("gang %s member %s: asks for %d pods (minimum %d) and %d GPUs (pods, with an optional minimum below them, or a GPU total)", g.ID, m.Name, m.Want, m.Min, m.GPUs)
				continue
			}
			ma := MemberAllocation{Name: m.Name, Pods: len(m.Pods)}
			perNode, fewest, whole := 0, 0, true
			seen := map[int]bool{}
			gpus := 0
			for _, p := range m.Pods {
				n := node(g.ID, p.Node)
				if n < 0 {
					continue
				}
				if seen[n] {
					bad("gang %s member %s: two pods on node %s", g.ID, m.Name, p.Node)
				}
				seen[n] = true
				var mask uint64
				for _, x := range p.GPUs {
					if x < 0 || x >= c.NodeGPUs(topology.NodeID(n)) {
						bad("gang %s: node %s has no GPU %d (it has %d)", g.ID, p.Node, x, c.NodeGPUs(topology.NodeID(n)))
						continue
					}
					if prev, taken := owner[[2]int{n, x}]; taken {
						bad("node %s GPU %d claimed by gang %s (member %s) and gang %s (member %s)", p.Node, x, prev.gang, prev.member, g.ID, m.Name)
						continue
					}
					owner[[2]int{n, x}] = claim{g.ID, m.Name}
					mask |= 1 << uint(x)
				}
				if mask == 0 {
					bad("gang %s member %s: pod on node %s holds no GPU", g.ID, m.Name, p.Node)
					continue
				}
				k := bits.PopCount(mask)
				if perNode == 0 || k < fewest {
					fewest = k
				}
				perNode = max(perNode, k)
				whole = whole && k == c.NodeGPUs(topology.NodeID(n))
				gpus += k
				ma.Assignment = append(ma.Assignment, topology.NodeAlloc{Node: topology.NodeID(n), GPUs: mask})
			}
			want, min := m.Want, m.Min
			need := want
			if min > 0 && min < want {
				need = min
			}
			switch {
			case want == 0 && m.GPUs == 0:
				bad("gang %s member %s: asks for neither pods nor GPUs", g.ID, m.Name)
			case want > 0 && len(m.Pods) < need:
				bad("gang %s member %s is not whole: %d of %d pods (minimum %d)", g.ID, m.Name, len(m.Pods), want, need)
			case want > 0 && len(m.Pods) > want:
				bad("gang %s member %s: %d pods, above the %d it asked for", g.ID, m.Name, len(m.Pods), want)
			case want > 0 && fewest != perNode && !whole:
				bad("gang %s member %s: its pods hold %d to %d GPUs, and not each its whole node", g.ID, m.Name, fewest, perNode)
			case want == 0 && gpus < m.GPUs:
				bad("gang %s member %s is not whole: %d of %d GPUs", g.ID, m.Name, gpus, m.GPUs)
			case want == 0 && gpus > m.GPUs && !whole:
				// More than the total only on whole nodes (Exclusive).
				bad("gang %s member %s: holds %d GPUs, more than the %d it asked for, not on whole nodes", g.ID, m.Name, gpus, m.GPUs)
			}
			req := placement.Request{Nodes: want, GPUsPerNode: perNode}
			switch {
			case want == 0:
				req = placement.Request{GPUs: m.GPUs, Exclusive: gpus > m.GPUs}
			case fewest != perNode:
				req.GPUsPerNode = 0 // whole nodes of several sizes
			}
			b.spec.Members = append(b.spec.Members, Member{Name: m.Name, Request: req, Min: min})
			b.alloc.Members = append(b.alloc.Members, ma)
		}
		gangs = append(gangs, b)
	}
	down := make(map[int]bool, len(snap.Down))
	for _, name := range snap.Down {
		if n := node("(down list)", name); n >= 0 {
			down[n] = true
		}
	}
	for _, name := range snap.Drained {
		if n := node("(drained list)", name); n >= 0 && down[n] {
			bad("node %s listed both down and drained", name)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrRestore, errors.Join(errs...))
	}
	l := NewLedger(c, opts)
	for _, b := range gangs {
		for i := range b.alloc.Members {
			if err := l.s.Allocate(b.alloc.Members[i].Assignment); err != nil {
				panic(fmt.Sprintf("gang: checked snapshot refused: %v", err))
			}
		}
		e := &entry{alloc: b.alloc, spec: b.spec}
		l.byID[b.spec.ID] = e
	}
	for _, name := range snap.Down {
		i, _ := c.LookupNode(name)
		_ = l.s.SetStatus(i, topology.Down)
	}
	for _, name := range snap.Drained {
		i, _ := c.LookupNode(name)
		_ = l.s.SetStatus(i, topology.Drained)
	}
	return l, nil
}

// SetSpec replaces the spec of gang g.ID, which must be in the ledger,
// with g: the spec the gang was admitted with, for a ledger restored from
// a snapshot (Restore keeps only the members' sizes, so that ReplacePod
// would otherwise ignore required domains and co-location). g must agree
// with the gang's record (as Spec.CheckRecord checks it: the same
// members, pod counts and GPUs per pod; not where the pods run, which is
// where the gang runs). Errors wrap ErrUnknownGang or ErrBadSpec and name
// the gang; on error nothing changes. g is copied.
func (l *Ledger) SetSpec(g *Spec) error {
	if g == nil {
		return g.Validate(l.c)
	}
	if _, ok := l.byID[g.ID]; !ok {
		return fmt.Errorf("%w: %s", ErrUnknownGang, g.ID)
	}
	if err := g.Validate(l.c); err != nil {
		return err
	}
	rec := l.record(g.ID)
	if err := g.checkRecord(l.c, &rec, false); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	l.byID[g.ID].keepSpec(g)
	return nil
}
