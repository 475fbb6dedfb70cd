package gang

import (
	"errors"
	"fmt"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// SpecRecord is a gang Spec as plain, JSON-serialisable data (node sets
// as hostlists); the gang's ID is kept by whoever holds the record.
type SpecRecord struct {
	Members  []MemberSpecRecord `json:"members"`
	Colocate *ColocationRecord  `json:"colocate,omitempty"`
}

// MemberSpecRecord is one member of a SpecRecord.
type MemberSpecRecord struct {
	Name    string                  `json:"name"`
	Min     int                     `json:"min,omitempty"`
	Step    int                     `json:"step,omitempty"`
	Request placement.RequestRecord `json:"request"`
}

// ColocationRecord is a Colocation as data.
type ColocationRecord struct {
	Level    string `json:"level"`
	Required bool   `json:"required,omitempty"`
}

// Record returns the spec as a record, node sets named by c.
func (g *Spec) Record(c *topology.Cluster) SpecRecord {
	var r SpecRecord
	for i := range g.Members {
		m := &g.Members[i]
		r.Members = append(r.Members, MemberSpecRecord{Name: m.Name, Min: m.Min, Step: m.Step, Request: m.Request.Record(c)})
	}
	if g.Colocate.Level != "" {
		r.Colocate = &ColocationRecord{Level: g.Colocate.Level, Required: g.Colocate.Required}
	}
	return r
}

// Spec rebuilds the gang spec with ID id on cluster c; an unknown node
// name is an error naming the member. The spec is not otherwise validated.
func (r *SpecRecord) Spec(c *topology.Cluster, id string) (Spec, error) {
	g := Spec{ID: id}
	for _, m := range r.Members {
		req, err := m.Request.Request(c)
		if err != nil {
			return g, fmt.Errorf("gang %s member %s: %w", id, m.Name, err)
		}
		g.Members = append(g.Members, Member{Name: m.Name, Min: m.Min, Step: m.Step, Request: req})
	}
	if r.Colocate != nil {
		g.Colocate = Colocation{Level: r.Colocate.Level, Required: r.Colocate.Required}
	}
	return g, nil
}

// CheckRecord reports every way in which rec, a running gang's record,
// does not match what spec g asks for on cluster c: member names and
// order, pod counts (within the elastic minimum), GPUs per pod (all of a
// node's GPUs for whole or exclusive nodes), GPU totals.
func (g *Spec) CheckRecord(c *topology.Cluster, rec *GangRecord) error {
	if len(rec.Members) != len(g.Members) {
		return fmt.Errorf("gang %s: %d members recorded, the spec has %d", g.ID, len(rec.Members), len(g.Members))
	}
	var errs []error
	for i := range g.Members {
		if err := g.Members[i].checkRecord(c, &rec.Members[i]); err != nil {
			errs = append(errs, fmt.Errorf("gang %s: %w", g.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (m *Member) checkRecord(c *topology.Cluster, mr *MemberRecord) error {
	r := &m.Request
	if mr.Name != m.Name {
		return fmt.Errorf("member %s recorded as %s", m.Name, mr.Name)
	}
	if mr.Want != r.Nodes || mr.GPUs != r.GPUs || mr.Min != m.Min {
		return fmt.Errorf("member %s: recorded as %d pods (min %d) or %d GPUs, the spec asks for %d (min %d) or %d",
			m.Name, mr.Want, mr.Min, mr.GPUs, r.Nodes, m.Min, r.GPUs)
	}
	total := 0
	for _, p := range mr.Pods {
		n, ok := c.LookupNode(p.Node)
		if !ok {
			return fmt.Errorf("member %s: %w: %q", m.Name, topology.ErrUnknownNode, p.Node)
		}
		total += len(p.GPUs)
		if r.GPUs > 0 {
			continue
		}
		want := r.GPUsPerNode
		if want == 0 || r.Exclusive {
			want = c.NodeGPUs(n)
		}
		if len(p.GPUs) != want {
			return fmt.Errorf("member %s: pod on %s holds %d GPUs, the spec gives it %d", m.Name, p.Node, len(p.GPUs), want)
		}
	}
	min := r.Nodes
	if m.Min > 0 && m.Min < min {
		min = m.Min
	}
	switch {
	case r.GPUs > 0 && total != r.GPUs:
		return fmt.Errorf("member %s: %d GPUs recorded, the spec asks for %d", m.Name, total, r.GPUs)
	case r.GPUs == 0 && (len(mr.Pods) < min || len(mr.Pods) > r.Nodes):
		return fmt.Errorf("member %s: %d pods recorded, the spec asks for %d to %d", m.Name, len(mr.Pods), min, r.Nodes)
	}
	return nil
}
