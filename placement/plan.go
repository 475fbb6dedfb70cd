package placement

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/topology"
)

// level is a level of the cluster as the placer sees it: 0 is the
// cluster's top level and depth-1 its lowest, as in package topology;
// rootLevel stands for the whole cluster, one domain above the top level.
// A larger level is a deeper one.
type level int8

const (
	// rootLevel is the whole cluster.
	rootLevel level = -1
	// noLevel marks an absent Preferred level.
	noLevel level = -2
)

// mode says what the request counts: nodes or GPUs.
type mode uint8

const (
	modeNodes mode = iota
	modeGPUs
)

// layer is one resolved segment layer: size nodes inside one domain of lvl.
type layer struct {
	size int
	lvl  level
}

// phase is one packing pass: it spreads its items over the domains of its
// unit level (the units). Items are segments of layer seg, or base items
// (nodes, or GPUs in GPU mode) when seg is -1. A limited phase may use at
// most plan.limit units.
type phase struct {
	unit    level
	seg     int
	limited bool
}

// plan is a request resolved against a cluster: level names turned into
// levels, implied constraints dropped, and the packing phases laid out.
type plan struct {
	mode      mode
	nodes     int // node mode: nodes wanted
	gpus      int // GPU mode: GPUs wanted
	perNode   int // node mode: GPUs per node; 0 is whole nodes
	exclusive bool
	required  level // rootLevel when none
	preferred level // noLevel when none
	limit     int   // most domains of limitLvl (0: none)
	limitLvl  level
	leaf      level // the cluster's lowest level (rootLevel when flat)
	layers    [MaxSegmentLayers]layer
	nlayers   int
	phases    [MaxSegmentLayers + 2]phase
	nphases   int
}

// resolve checks r against c and fills the plan. It allocates only when it
// returns an error.
func (pl *plan) resolve(c *topology.Cluster, r *Request) error {
	*pl = plan{required: rootLevel, preferred: noLevel, leaf: level(c.Depth() - 1)}
	if err := pl.resolveShape(r); err != nil {
		return err
	}
	if err := checkBounds(c, r); err != nil {
		return err
	}
	var err error
	if r.Required != "" {
		if pl.required, err = levelOf(c, r.Required, "Required"); err != nil {
			return err
		}
	}
	if r.Preferred != "" {
		if pl.preferred, err = levelOf(c, r.Preferred, "Preferred"); err != nil {
			return err
		}
	}
	if err = pl.resolveSegments(c, r); err != nil {
		return err
	}
	if err = pl.resolveLimit(c, r); err != nil {
		return err
	}
	pl.layOutPhases()
	return nil
}

// resolveShape checks the counts and sets the mode.
func (pl *plan) resolveShape(r *Request) error {
	if r.Nodes|r.GPUs|r.GPUsPerNode|r.MaxDomains|r.SegmentSize < 0 {
		return negativeCount(r)
	}
	switch {
	case r.Nodes > 0 && r.GPUs > 0:
		return fmt.Errorf("%w: give Nodes or GPUs, not both", ErrBadRequest)
	case r.Nodes == 0 && r.GPUs == 0:
		return fmt.Errorf("%w: asks for nothing (Nodes and GPUs are zero)", ErrBadRequest)
	case r.GPUs > 0 && r.GPUsPerNode > 0:
		return fmt.Errorf("%w: GPUsPerNode goes with Nodes, not with GPUs", ErrBadRequest)
	case r.GPUs > 0 && (r.SegmentSize > 1 || r.Segments[0].Size != 0):
		return fmt.Errorf("%w: segments go with Nodes, not with GPUs", ErrBadRequest)
	case r.GPUsPerNode > topology.MaxGPUsPerNode:
		return fmt.Errorf("%w: %d GPUs per node, at most %d", ErrBadRequest, r.GPUsPerNode, topology.MaxGPUsPerNode)
	}
	if r.GPUs > 0 {
		pl.mode, pl.gpus = modeGPUs, r.GPUs
	} else {
		pl.mode, pl.nodes = modeNodes, r.Nodes
	}
	pl.perNode = r.GPUsPerNode
	pl.exclusive = r.Exclusive || (pl.mode == modeNodes && r.GPUsPerNode == 0)
	return nil
}

// negativeCount returns the error for the first negative count of r (one
// of them is negative).
func negativeCount(r *Request) error {
	for _, f := range [...]struct {
		name string
		v    int
	}{{"Nodes", r.Nodes}, {"GPUs", r.GPUs}, {"GPUsPerNode", r.GPUsPerNode}, {"MaxDomains", r.MaxDomains}, {"SegmentSize", r.SegmentSize}} {
		if f.v < 0 {
			return fmt.Errorf("%w: negative count: %s is %d", ErrBadRequest, f.name, f.v)
		}
	}
	return fmt.Errorf("%w: negative count", ErrBadRequest) // not reached
}

// checkBounds refuses segments larger than the cluster and node sets of
// another length than its node count. (More nodes or GPUs than the
// cluster has is not malformed: it fails on capacity, as unresolvable.)
func checkBounds(c *topology.Cluster, r *Request) error {
	n := c.NumNodes()
	if r.SegmentSize > n {
		return fmt.Errorf("%w: segments of %d nodes; the cluster has %d", ErrBadRequest, r.SegmentSize, n)
	}
	for i := range r.Segments {
		if s := r.Segments[i].Size; s > n {
			return fmt.Errorf("%w: segments of %d nodes; the cluster has %d", ErrBadRequest, s, n)
		}
	}
	if r.Allowed != nil && r.Allowed.Len() != uint(n) {
		return fmt.Errorf("%w: the Allowed node set has length %d; the cluster has %d nodes", ErrBadRequest, r.Allowed.Len(), n)
	}
	if r.Excluded != nil && r.Excluded.Len() != uint(n) {
		return fmt.Errorf("%w: the Excluded node set has length %d; the cluster has %d nodes", ErrBadRequest, r.Excluded.Len(), n)
	}
	return nil
}

func levelOf(c *topology.Cluster, name, field string) (level, error) {
	l, ok := c.Level(name)
	if !ok {
		return 0, fmt.Errorf("%w: %w: %s %q (levels %v)", ErrBadRequest, topology.ErrUnknownLevel, field, name, c.Levels())
	}
	return level(l), nil
}

// levelOrLeaf resolves a level name that defaults to the lowest level.
func (pl *plan) levelOrLeaf(c *topology.Cluster, name, field string) (level, error) {
	if name == "" {
		return pl.leaf, nil
	}
	return levelOf(c, name, field)
}

// resolveSegments checks the segment layers and keeps those the Required
// level does not already imply.
func (pl *plan) resolveSegments(c *topology.Cluster, r *Request) error {
	n := 0
	for n < len(r.Segments) && !r.Segments[n].empty() {
		n++
	}
	for i := n; i < len(r.Segments); i++ {
		if !r.Segments[i].empty() {
			return fmt.Errorf("%w: segment layer %d follows an empty one", ErrBadRequest, n)
		}
	}
	if r.SegmentSize > 1 || r.SegmentLevel != "" {
		if n > 0 {
			return fmt.Errorf("%w: give Segments or SegmentSize, not both", ErrBadRequest)
		}
		if r.SegmentSize <= 1 {
			// A level without a size: check the name, nothing to place.
			_, err := pl.levelOrLeaf(c, r.SegmentLevel, "SegmentLevel")
			return err
		}
		return pl.addLayer(c, r, Segment{Size: r.SegmentSize, Level: r.SegmentLevel}, 0)
	}
	for i, s := range r.Segments[:n] {
		if err := pl.addLayer(c, r, s, i); err != nil {
			return err
		}
	}
	return nil
}

// addLayer checks layer i of the request and keeps it unless implied.
func (pl *plan) addLayer(c *topology.Cluster, r *Request, s Segment, i int) error {
	lvl, err := pl.levelOrLeaf(c, s.Level, "segment level")
	if err != nil {
		return err
	}
	switch {
	case s.Size < 1:
		return fmt.Errorf("%w: segment size %d", ErrBadRequest, s.Size)
	case i == 0 && r.Nodes%s.Size != 0:
		return fmt.Errorf("%w: %d nodes is not a multiple of segment size %d", ErrBadRequest, r.Nodes, s.Size)
	case i > 0 && (lvl <= level(pl.prevLevel(c, r, i)) || r.Segments[i-1].Size%s.Size != 0):
		return fmt.Errorf("%w: segment layer %d (%d per %s) must lie below the layer before it and divide its size", ErrBadRequest, i, s.Size, orDefault(s.Level, "lowest level"))
	}
	if s.Size == 1 || lvl <= pl.required {
		// One node, or the whole request sits in one domain at or below
		// the segment level: every segment does too.
		return nil
	}
	pl.layers[pl.nlayers] = layer{size: s.Size, lvl: lvl}
	pl.nlayers++
	return nil
}

// empty reports whether s is an unused entry of Request.Segments.
func (s *Segment) empty() bool { return s.Size == 0 && s.Level == "" }

// prevLevel returns the level of layer i-1 of r.Segments.
func (pl *plan) prevLevel(c *topology.Cluster, r *Request, i int) level {
	l, _ := pl.levelOrLeaf(c, r.Segments[i-1].Level, "")
	return l
}

// resolveLimit checks MaxDomains and keeps it unless implied.
func (pl *plan) resolveLimit(c *topology.Cluster, r *Request) error {
	if r.MaxDomains == 0 {
		if r.MaxDomainsLevel != "" {
			_, err := levelOf(c, r.MaxDomainsLevel, "MaxDomainsLevel")
			return err
		}
		return nil
	}
	lvl, err := pl.levelOrLeaf(c, r.MaxDomainsLevel, "MaxDomainsLevel")
	if err != nil {
		return err
	}
	if lvl <= pl.required {
		return nil // one domain at or below the level: at most one of it
	}
	if pl.nlayers > 0 && lvl > pl.layers[0].lvl {
		return fmt.Errorf("%w: MaxDomainsLevel %s is below the segment level %s", ErrBadRequest,
			orDefault(r.MaxDomainsLevel, c.LevelName(int(lvl))), c.LevelName(int(pl.layers[0].lvl)))
	}
	if r.MaxDomains >= c.NumDomains(int(lvl)) {
		return nil // no placement uses more domains of the level than it has
	}
	pl.limit, pl.limitLvl = r.MaxDomains, lvl
	return nil
}

// layOutPhases builds the phases, outermost first: the domain limit (when
// above every segment level), the segment layers, then the lowest level,
// where nodes are picked.
func (pl *plan) layOutPhases() {
	add := func(unit level, seg int) {
		pl.phases[pl.nphases] = phase{unit: unit, seg: seg}
		pl.nphases++
	}
	inner := pl.leaf
	if pl.nlayers > 0 {
		inner = pl.layers[0].lvl
	}
	if pl.limit > 0 && pl.limitLvl < inner {
		// A phase of its own, counting the next phase's items.
		seg := -1
		if pl.nlayers > 0 {
			seg = 0
		}
		add(pl.limitLvl, seg)
	}
	for i := range pl.nlayers {
		add(pl.layers[i].lvl, i)
	}
	if pl.nlayers == 0 || pl.layers[pl.nlayers-1].lvl < pl.leaf {
		add(pl.leaf, -1)
	}
	for p := range pl.nphases {
		ph := &pl.phases[p]
		if pl.limit > 0 && ph.unit == pl.limitLvl {
			ph.limited = true
		}
	}
}

// need returns the items of phase p the whole request needs.
func (pl *plan) need(p int) int {
	if s := pl.phases[p].seg; s >= 0 {
		return pl.nodes / pl.layers[s].size
	}
	if pl.mode == modeGPUs {
		return pl.gpus
	}
	return pl.nodes
}

// ratio returns how many items of phase p+1 one item of phase p holds.
func (pl *plan) ratio(p int) int {
	a, b := pl.itemNodes(p), pl.itemNodes(p+1)
	return a / b
}

// itemNodes returns the nodes of one item of phase p (1 for base items).
func (pl *plan) itemNodes(p int) int {
	if s := pl.phases[p].seg; s >= 0 {
		return pl.layers[s].size
	}
	return 1
}

// firstPhase returns the outermost phase whose units lie strictly below
// level l: inside one domain of level l, the phases at or above it hold
// trivially.
func (pl *plan) firstPhase(l level) int {
	for p := range pl.nphases {
		if pl.phases[p].unit > l {
			return p
		}
	}
	return pl.nphases - 1
}

// requestGPUs returns the GPUs the request asks for, given the nodes'
// sizes for whole-node requests (taken is the GPUs of the nodes taken).
func (pl *plan) requestGPUs(taken int) int {
	switch {
	case pl.mode == modeGPUs:
		return pl.gpus
	case pl.perNode == 0:
		return taken
	}
	return pl.nodes * pl.perNode
}
