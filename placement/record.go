package placement

import (
	"fmt"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// RequestRecord is a Request as plain, JSON-serialisable data, with node
// sets written as Slurm hostlists of node names, so that a record saved on
// one cluster reads back on another that names its nodes the same way.
type RequestRecord struct {
	Nodes           int    `json:"nodes,omitempty"`
	GPUsPerNode     int    `json:"gpus_per_node,omitempty"`
	GPUs            int    `json:"gpus,omitempty"`
	Exclusive       bool   `json:"exclusive,omitempty"`
	Required        string `json:"required,omitempty"`
	Preferred       string `json:"preferred,omitempty"`
	MaxDomains      int    `json:"max_domains,omitempty"`
	MaxDomainsLevel string `json:"max_domains_level,omitempty"`
	SegmentSize     int    `json:"segment_size,omitempty"`
	SegmentLevel    string `json:"segment_level,omitempty"`
	// Segments lists Request.Segments's layers up to the last one that is
	// not zero, outermost first.
	Segments []Segment `json:"segments,omitempty"`
	// Allowed and Excluded are hostlists; nil means no such set (an
	// empty string is an empty set).
	Allowed  *string `json:"allowed,omitempty"`
	Excluded *string `json:"excluded,omitempty"`
	// AllowedLabel is Request.AllowedLabel.
	AllowedLabel string `json:"allowed_label,omitempty"`
}

// Record returns r as a record, its node sets named by c.
func (r *Request) Record(c *topology.Cluster) RequestRecord {
	rec := RequestRecord{
		Nodes: r.Nodes, GPUsPerNode: r.GPUsPerNode, GPUs: r.GPUs, Exclusive: r.Exclusive,
		Required: r.Required, Preferred: r.Preferred,
		MaxDomains: r.MaxDomains, MaxDomainsLevel: r.MaxDomainsLevel,
		SegmentSize: r.SegmentSize, SegmentLevel: r.SegmentLevel,
		Allowed: nodeSetRecord(c, r.Allowed), Excluded: nodeSetRecord(c, r.Excluded),
		AllowedLabel: r.AllowedLabel,
	}
	for i := len(r.Segments); i > 0; i-- {
		if r.Segments[i-1] != (Segment{}) {
			rec.Segments = append([]Segment(nil), r.Segments[:i]...)
			break
		}
	}
	return rec
}

// Request rebuilds the request on cluster c. A node name c does not have
// is an error naming it (wrapping topology.ErrUnknownNode), and so are
// more than MaxSegmentLayers segment layers (wrapping ErrBadRequest);
// the request is not otherwise validated.
func (rr *RequestRecord) Request(c *topology.Cluster) (Request, error) {
	r := Request{
		Nodes: rr.Nodes, GPUsPerNode: rr.GPUsPerNode, GPUs: rr.GPUs, Exclusive: rr.Exclusive,
		Required: rr.Required, Preferred: rr.Preferred,
		MaxDomains: rr.MaxDomains, MaxDomainsLevel: rr.MaxDomainsLevel,
		SegmentSize: rr.SegmentSize, SegmentLevel: rr.SegmentLevel,
		AllowedLabel: rr.AllowedLabel,
	}
	if len(rr.Segments) > MaxSegmentLayers {
		return r, fmt.Errorf("%w: %d segment layers, at most %d", ErrBadRequest, len(rr.Segments), MaxSegmentLayers)
	}
	copy(r.Segments[:], rr.Segments)
	var err error
	if r.Allowed, err = nodeSetOf(c, "allowed", rr.Allowed); err != nil {
		return r, err
	}
	if r.Excluded, err = nodeSetOf(c, "excluded", rr.Excluded); err != nil {
		return r, err
	}
	return r, nil
}

func nodeSetRecord(c *topology.Cluster, s *bitset.BitSet) *string {
	if s == nil {
		return nil
	}
	var names []string
	for i, ok := s.NextSet(0); ok && int(i) < c.NumNodes(); i, ok = s.NextSet(i + 1) {
		names = append(names, c.NodeName(topology.NodeID(i)))
	}
	h := topology.CompressHostlist(names)
	return &h
}

func nodeSetOf(c *topology.Cluster, field string, h *string) (*bitset.BitSet, error) {
	if h == nil {
		return nil, nil
	}
	if *h == "" {
		return c.NewNodeSet(), nil
	}
	names, err := hostlist.Expand(*h)
	if err != nil {
		return nil, fmt.Errorf("%s nodes: %w", field, err)
	}
	s, err := c.NodeSet(names...)
	if err != nil {
		return nil, fmt.Errorf("%s nodes: %w", field, err)
	}
	return s, nil
}
