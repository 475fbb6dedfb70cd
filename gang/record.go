package gang

import (
	"errors"
	"fmt"

	"github.com/phalanx-sched/phalanx/internal/bits"
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
// node's GPUs for whole or exclusive nodes), GPU totals (an exclusive
// total: whole nodes holding at least the total), and where the pods run:
// on nodes the member's request allows (Allowed, not Excluded), within
// one domain of its Required level, in at most MaxDomains domains of its
// limit's level, whole segments in every domain of each segment layer's
// level, and all members inside one domain of the gang's required
// co-location level.
func (g *Spec) CheckRecord(c *topology.Cluster, rec *GangRecord) error {
	return g.checkRecord(c, rec, true)
}

// checkRecord is CheckRecord, checking where the pods run only with
// where.
func (g *Spec) checkRecord(c *topology.Cluster, rec *GangRecord, where bool) error {
	if len(rec.Members) != len(g.Members) {
		return fmt.Errorf("gang %s: %d members recorded, the spec has %d", g.ID, len(rec.Members), len(g.Members))
	}
	var errs []error
	var dc domainCount
	for i := range g.Members {
		if err := g.Members[i].checkRecord(c, &rec.Members[i], where, &dc); err != nil {
			errs = append(errs, fmt.Errorf("gang %s: %w", g.ID, err))
		}
	}
	if where && len(errs) == 0 {
		// Every pod's node is known (checkRecord).
		errs = append(errs, g.checkColocation(c, func(i int) int { return len(rec.Members[i].Pods) },
			func(i, k int) topology.NodeID { n, _ := c.LookupNode(rec.Members[i].Pods[k].Node); return n }))
	}
	return errors.Join(errs...)
}

func (m *Member) checkRecord(c *topology.Cluster, mr *MemberRecord, where bool, dc *domainCount) error {
	r := &m.Request
	if mr.Name != m.Name {
		return fmt.Errorf("member %s recorded as %s", m.Name, mr.Name)
	}
	if mr.Want != r.Nodes || mr.GPUs != r.GPUs || mr.Min != m.Min {
		return fmt.Errorf("member %s: recorded as %d pods (min %d) or %d GPUs, the spec asks for %d (min %d) or %d",
			m.Name, mr.Want, mr.Min, mr.GPUs, r.Nodes, m.Min, r.GPUs)
	}
	for _, p := range mr.Pods {
		if _, ok := c.LookupNode(p.Node); !ok {
			return fmt.Errorf("member %s: %w: %q", m.Name, topology.ErrUnknownNode, p.Node)
		}
	}
	return m.checkPods(c, len(mr.Pods), where, dc, func(i int) (topology.NodeID, int) {
		n, _ := c.LookupNode(mr.Pods[i].Node)
		return n, len(mr.Pods[i].GPUs)
	})
}

// checkPods checks the pods of a member of m's request: count pods, pod
// i on node and holding gpus of pod(i); with where, also their nodes
// (Allowed, Excluded, the Required domain). It allocates nothing unless
// it fails.
func (m *Member) checkPods(c *topology.Cluster, count int, where bool, dc *domainCount, pod func(i int) (node topology.NodeID, gpus int)) error {
	r := &m.Request
	total := 0
	required, domain := -1, -1
	if where && r.Required != "" {
		required, _ = c.Level(r.Required) // Validate checked the name
	}
	if n, ok := dc.twice(c, count, func(i int) topology.NodeID { n, _ := pod(i); return n }); ok {
		return fmt.Errorf("member %s: two pods on node %s", m.Name, c.NodeName(n))
	}
	for i := range count {
		n, gpus := pod(i)
		total += gpus
		if gpus <= 0 {
			return fmt.Errorf("member %s: a pod on %s holds no GPU", m.Name, c.NodeName(n))
		}
		if where && !mayUse(r, int(n)) {
			return fmt.Errorf("member %s: a pod on %s, a node its request does not allow", m.Name, c.NodeName(n))
		}
		if required >= 0 {
			d := c.NodeDomain(n, required)
			if domain >= 0 && d != domain {
				return fmt.Errorf("member %s: pods in two %s domains, its request requires one", m.Name, r.Required)
			}
			domain = d
		}
		if r.GPUs > 0 && !r.Exclusive {
			continue
		}
		want := r.GPUsPerNode
		if want == 0 || r.Exclusive {
			want = c.NodeGPUs(n)
		}
		if gpus != want {
			return fmt.Errorf("member %s: pod on %s holds %d GPUs, the spec gives it %d", m.Name, c.NodeName(n), gpus, want)
		}
	}
	if where {
		if err := m.checkDomains(c, count, dc, func(i int) topology.NodeID { n, _ := pod(i); return n }); err != nil {
			return err
		}
	}
	min := r.Nodes
	if m.Min > 0 && m.Min < min {
		min = m.Min
	}
	switch {
	case r.GPUs > 0 && r.Exclusive && total < r.GPUs:
		// Whole nodes: at least the total (pods replaced on larger
		// nodes may leave nodes to spare).
		return fmt.Errorf("member %s: %d GPUs recorded on %d whole nodes, the spec asks for %d", m.Name, total, count, r.GPUs)
	case r.GPUs > 0 && !r.Exclusive && total != r.GPUs:
		return fmt.Errorf("member %s: %d GPUs recorded, the spec asks for %d", m.Name, total, r.GPUs)
	case r.GPUs == 0 && (count < min || count > r.Nodes):
		return fmt.Errorf("member %s: %d pods recorded, the spec asks for %d to %d", m.Name, count, min, r.Nodes)
	case r.GPUs == 0 && count%m.step() != 0:
		return fmt.Errorf("member %s: %d pods recorded, the spec grows and shrinks it in steps of %d", m.Name, count, m.step())
	}
	return nil
}

// checkDomains checks the domains of the member's count pods, pod i on
// node(i): at most MaxDomains domains of its level, and in every domain of
// a segment layer's level a whole number of that layer's segments (which,
// the layers nesting, is all a partition into the segments needs). It
// counts with dc, in a time in count, and allocates nothing unless it
// fails or dc must grow.
func (m *Member) checkDomains(c *topology.Cluster, count int, dc *domainCount, node func(i int) topology.NodeID) error {
	r := &m.Request
	if c.Depth() == 0 {
		return nil // one domain, the cluster
	}
	if r.MaxDomains > 0 {
		l, err := levelOrLowest(c, r.MaxDomainsLevel)
		if err != nil {
			return fmt.Errorf("member %s: MaxDomainsLevel: %w", m.Name, err)
		}
		n := 0
		dc.each(c, l, count, node, func(int, int) { n++ })
		if n > r.MaxDomains {
			return fmt.Errorf("member %s: pods in %d %s domains, its request allows at most %d", m.Name, n, c.LevelName(l), r.MaxDomains)
		}
	}
	layers := r.Segments
	if r.SegmentSize > 1 {
		layers = [placement.MaxSegmentLayers]placement.Segment{{Size: r.SegmentSize, Level: r.SegmentLevel}}
	}
	for _, sg := range layers {
		if sg.Size <= 1 {
			continue
		}
		l, err := levelOrLowest(c, sg.Level)
		if err != nil {
			return fmt.Errorf("member %s: segment level: %w", m.Name, err)
		}
		bad, pods := -1, 0
		dc.each(c, l, count, node, func(d, n int) {
			if bad < 0 && n%sg.Size != 0 {
				bad, pods = d, n
			}
		})
		if bad >= 0 {
			return fmt.Errorf("member %s: %d pods in %s %s, not a whole number of its segments of %d", m.Name, pods, c.LevelName(l), c.DomainName(l, bad), sg.Size)
		}
	}
	return nil
}

// checkColocation checks that the pods of every member (count(i) of
// member i, pod k on node(i, k)) lie in one domain of the gang's required
// co-location level, if it has one. It allocates nothing unless it fails.
func (g *Spec) checkColocation(c *topology.Cluster, count func(i int) int, node func(i, k int) topology.NodeID) error {
	if !g.Colocate.Required || g.Colocate.Level == "" {
		return nil
	}
	l, ok := c.Level(g.Colocate.Level)
	if !ok {
		return fmt.Errorf("gang %s: co-location level %q: %w", g.ID, g.Colocate.Level, topology.ErrUnknownLevel)
	}
	first := -1
	for i := range g.Members {
		for k := range count(i) {
			d := c.NodeDomain(node(i, k), l)
			if first < 0 {
				first = d
			}
			if d != first {
				return fmt.Errorf("gang %s: member %s has a pod in %s %s, outside %s %s where its co-location keeps the gang",
					g.ID, g.Members[i].Name, g.Colocate.Level, c.DomainName(l, d), g.Colocate.Level, c.DomainName(l, first))
			}
		}
	}
	return nil
}

// levelOrLowest returns the level named name, the lowest level for "".
func levelOrLowest(c *topology.Cluster, name string) (int, error) {
	if name == "" {
		return c.Depth() - 1, nil
	}
	l, ok := c.Level(name)
	if !ok {
		return 0, fmt.Errorf("%w: %q", topology.ErrUnknownLevel, name)
	}
	return l, nil
}

// domainCount counts pods per domain of a level: counts[d] for the
// domains in touched, zero elsewhere between calls. Its buffers grow to
// the largest level counted and are then reused.
type domainCount struct {
	counts  []int32
	touched []int32
	nodes   []uint64 // a bit per node, all clear between calls (twice)
}

// twice returns a node that two of count pods, pod i on node(i), share.
// Up to 16 pods it compares them pairwise; above, it marks nodes in a
// bitset it keeps (and clears again), allocated on first use.
func (dc *domainCount) twice(c *topology.Cluster, count int, node func(i int) topology.NodeID) (topology.NodeID, bool) {
	if count <= 16 {
		for i := 1; i < count; i++ {
			n := node(i)
			for k := range i {
				if node(k) == n {
					return n, true
				}
			}
		}
		return 0, false
	}
	if w := bits.Words(c.NumNodes()); len(dc.nodes) < w {
		dc.nodes = make([]uint64, w)
	}
	dup, found := topology.NodeID(0), false
	marked := count
	for i := range count {
		n := int(node(i))
		if bits.Test(dc.nodes, n) {
			dup, found, marked = topology.NodeID(n), true, i
			break
		}
		bits.Set(dc.nodes, n)
	}
	for i := range marked {
		bits.Clear(dc.nodes, int(node(i)))
	}
	return dup, found
}

// each calls f(d, n) once for every domain d of level l that holds some
// of count pods, pod i on node(i), with n the pods in it, in the order of
// their first pods, in a time in count.
func (dc *domainCount) each(c *topology.Cluster, l, count int, node func(i int) topology.NodeID, f func(d, n int)) {
	if n := c.NumDomains(l); len(dc.counts) < n {
		dc.counts = make([]int32, n)
	}
	touched := dc.touched[:0]
	for i := range count {
		d := c.NodeDomain(node(i), l)
		if dc.counts[d] == 0 {
			touched = append(touched, int32(d))
		}
		dc.counts[d]++
	}
	for _, d := range touched {
		f(int(d), int(dc.counts[d]))
		dc.counts[d] = 0
	}
	dc.touched = touched
}

// CheckAllocation reports the first way in which a is not a whole
// placement of g on cluster c: its ID and members (names, order), each
// member's pods (as many as nodes in its assignment, every node known,
// within the elastic minimum), GPUs per pod, GPU totals, and where each
// member's pods run (nodes, required domain, domain limit, segments) and
// the gang's required co-location, as CheckRecord checks a record. It
// allocates nothing when a matches, except a count per domain when a
// member has a domain limit or segments (Ledger.Insert keeps one).
func (g *Spec) CheckAllocation(c *topology.Cluster, a *Allocation) error {
	var dc domainCount
	return g.checkAllocation(c, a, &dc)
}

// checkAllocation is CheckAllocation counting pods per domain with dc.
func (g *Spec) checkAllocation(c *topology.Cluster, a *Allocation, dc *domainCount) error {
	if a.ID != g.ID || len(a.Members) != len(g.Members) {
		return fmt.Errorf("gang %s: allocation %s has %d members, the spec %d", g.ID, a.ID, len(a.Members), len(g.Members))
	}
	for i := range g.Members {
		m, ma := &g.Members[i], &a.Members[i]
		if ma.Name != m.Name {
			return fmt.Errorf("gang %s: member %s recorded as %s", g.ID, m.Name, ma.Name)
		}
		if ma.Pods != len(ma.Assignment) {
			return fmt.Errorf("gang %s member %s: %d pods on %d nodes", g.ID, ma.Name, ma.Pods, len(ma.Assignment))
		}
		for _, x := range ma.Assignment {
			if int(x.Node) < 0 || int(x.Node) >= c.NumNodes() {
				return fmt.Errorf("gang %s member %s: %w: node %d", g.ID, ma.Name, topology.ErrUnknownNode, x.Node)
			}
		}
		err := m.checkPods(c, len(ma.Assignment), true, dc, func(k int) (topology.NodeID, int) {
			x := ma.Assignment[k]
			return x.Node, bits.PopCount(x.GPUs)
		})
		if err != nil {
			return fmt.Errorf("gang %s: %w", g.ID, err)
		}
	}
	return g.checkColocation(c, func(i int) int { return len(a.Members[i].Assignment) },
		func(i, k int) topology.NodeID { return a.Members[i].Assignment[k].Node })
}
