package placement

import (
	"errors"
	"fmt"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/topology"
)

// ErrBadRequest marks a request that is malformed whatever the state of the
// cluster (negative counts, both shapes given, an unknown level name, a
// segment larger than the cluster, a node set whose length is not the
// cluster's node count, ...). A request for more nodes or GPUs than the
// cluster has is well formed: it is not placed, for lack of capacity.
// A well-formed request that does not fit is not an error: Place returns a
// Result whose Placed is false and whose Reason says why.
var ErrBadRequest = errors.New("placement: bad request")

// Request is what one placement asks for. Give either Nodes (with
// GPUsPerNode) or GPUs.
//
// Every topology constraint is optional; level names are the cluster's
// (topology.Cluster.Levels).
type Request struct {
	// Nodes asks for this many distinct nodes with GPUsPerNode free GPUs
	// each.
	Nodes int
	// GPUsPerNode is the GPUs wanted on each node. Zero means whole nodes:
	// every GPU of idle nodes, whatever their size (implies Exclusive).
	GPUsPerNode int
	// GPUs asks instead for this many GPUs in total, laid out on as few
	// leaves and then as few nodes as possible (Slurm --gpus=G). Nodes
	// must be zero.
	GPUs int
	// Exclusive takes only idle nodes and assigns all their GPUs, so that
	// no other job shares them.
	Exclusive bool

	// Required, when set, names a level: the whole request must fit
	// inside one domain of that level, or it is not placed.
	Required string
	// Preferred names a level the request would like to fit inside.
	// Placement always looks for the lowest level that can hold the
	// request, so Preferred does not change the search; Result reports
	// whether the preference was met (for callers that wait for a tighter
	// placement, such as topology patience in the backfill scheduler).
	Preferred string
	// MaxDomains, when positive, caps the number of domains of level
	// MaxDomainsLevel the request may span (Slurm --switches=k). The
	// level defaults to the lowest one (leaf switches).
	MaxDomains      int
	MaxDomainsLevel string
	// SegmentSize, when above 1, makes the nodes come in segments of that
	// many nodes, each segment inside one domain of SegmentLevel (Slurm
	// --segment, Kueue slices). Nodes must be a multiple of it. The level
	// defaults to the lowest one.
	SegmentSize  int
	SegmentLevel string

	// Allowed, when non-nil, limits placement to these nodes (a partition,
	// a node feature). Excluded, when non-nil, removes nodes (reserved for
	// others). Both are node sets of the cluster (Cluster.NewNodeSet).
	Allowed, Excluded *bitset.BitSet
}

// WholeNodes returns a request for n whole, exclusive nodes.
func WholeNodes(n int) Request { return Request{Nodes: n, Exclusive: true} }

// NodesOf returns a request for n nodes with g free GPUs each.
func NodesOf(n, g int) Request { return Request{Nodes: n, GPUsPerNode: g} }

// TotalGPUs returns a request for g GPUs on as few nodes as possible.
func TotalGPUs(g int) Request { return Request{GPUs: g} }

// String describes the request in a user's words, for example "16 nodes x
// 8 GPUs, required leaf".
func (r *Request) String() string {
	var s string
	switch {
	case r.GPUs > 0:
		s = fmt.Sprintf("%d GPUs", r.GPUs)
	case r.GPUsPerNode == 0:
		s = fmt.Sprintf("%d whole nodes", r.Nodes)
	default:
		s = fmt.Sprintf("%d nodes x %d GPUs", r.Nodes, r.GPUsPerNode)
	}
	if r.Exclusive && r.GPUsPerNode != 0 {
		s += ", exclusive"
	}
	if r.Required != "" {
		s += ", required " + r.Required
	}
	if r.Preferred != "" {
		s += ", preferred " + r.Preferred
	}
	if r.MaxDomains > 0 {
		s += fmt.Sprintf(", at most %d %s", r.MaxDomains, orDefault(r.MaxDomainsLevel, "lowest-level domains"))
	}
	if r.SegmentSize > 1 {
		s += fmt.Sprintf(", segments of %d per %s", r.SegmentSize, orDefault(r.SegmentLevel, "lowest-level domain"))
	}
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// TotalGPUCount returns the GPUs the request asks for: GPUs, or Nodes x
// GPUsPerNode (0 for whole nodes of unknown size).
func (r *Request) TotalGPUCount() int {
	if r.GPUs > 0 {
		return r.GPUs
	}
	return r.Nodes * r.GPUsPerNode
}

// Validate checks the request against cluster c without looking at any
// free state: counts, shapes and level names. It allocates only when it
// returns an error.
func (r *Request) Validate(c *topology.Cluster) error {
	var pl plan
	return pl.resolve(c, r)
}

type mode uint8

const (
	modeNodes mode = iota
	modeGPUs
)

// phase is one packing pass: it spreads its items over domains of its unit
// level, fewest units first. Items are segments when seg is set, else
// nodes (or GPUs in GPU mode).
type phase struct {
	unitLi int
	seg    bool
}

// plan is a request resolved against a cluster: level names turned into
// internal level indices (0 is the virtual root above the top level,
// cluster level l is l+1).
type plan struct {
	mode   mode
	need   int // items in the outermost phase: nodes, segments or GPUs
	nodes  int
	g      int // GPUs per node (node mode); 0 = whole nodes
	excl   bool
	seg    int // segment size (1 = none)
	segLi  int // internal level of segments (valid when seg > 1)
	reqLi  int // internal level of Required (0 = none)
	prefLi int // internal level of Preferred (-1 = none)
	maxK   int
	maxLi  int
	leafLi int // internal index of the lowest level (0 for a flat cluster)

	phases  [3]phase
	nphases int
}

func levelLi(c *topology.Cluster, name, field string) (int, error) {
	l, ok := c.Level(name)
	if !ok {
		return 0, fmt.Errorf("%w: %w: %s %q (levels %v)", ErrBadRequest, topology.ErrUnknownLevel, field, name, c.Levels())
	}
	return l + 1, nil
}

func (pl *plan) resolve(c *topology.Cluster, r *Request) error {
	*pl = plan{seg: 1, prefLi: -1, leafLi: c.Depth()}
	switch {
	case r.Nodes < 0 || r.GPUs < 0 || r.GPUsPerNode < 0 || r.MaxDomains < 0 || r.SegmentSize < 0:
		return fmt.Errorf("%w: negative count in %s", ErrBadRequest, r)
	case r.Nodes > 0 && r.GPUs > 0:
		return fmt.Errorf("%w: give Nodes or GPUs, not both", ErrBadRequest)
	case r.Nodes == 0 && r.GPUs == 0:
		return fmt.Errorf("%w: asks for nothing (Nodes and GPUs are zero)", ErrBadRequest)
	case r.GPUs > 0 && r.GPUsPerNode > 0:
		return fmt.Errorf("%w: GPUsPerNode goes with Nodes, not with GPUs", ErrBadRequest)
	case r.GPUs > 0 && r.SegmentSize > 1:
		return fmt.Errorf("%w: segments go with Nodes, not with GPUs", ErrBadRequest)
	case r.GPUsPerNode > topology.MaxGPUsPerNode:
		return fmt.Errorf("%w: %d GPUs per node, at most %d", ErrBadRequest, r.GPUsPerNode, topology.MaxGPUsPerNode)
	case r.SegmentSize > c.NumNodes():
		return fmt.Errorf("%w: segments of %d nodes; the cluster has %d", ErrBadRequest, r.SegmentSize, c.NumNodes())
	case r.Allowed != nil && r.Allowed.Len() != uint(c.NumNodes()):
		return fmt.Errorf("%w: the Allowed node set has length %d; the cluster has %d nodes", ErrBadRequest, r.Allowed.Len(), c.NumNodes())
	case r.Excluded != nil && r.Excluded.Len() != uint(c.NumNodes()):
		return fmt.Errorf("%w: the Excluded node set has length %d; the cluster has %d nodes", ErrBadRequest, r.Excluded.Len(), c.NumNodes())
	}
	if r.GPUs > 0 {
		pl.mode, pl.need = modeGPUs, r.GPUs
	} else {
		pl.mode, pl.need, pl.nodes = modeNodes, r.Nodes, r.Nodes
	}
	pl.g = r.GPUsPerNode
	pl.excl = r.Exclusive || (pl.mode == modeNodes && r.GPUsPerNode == 0)
	var err error
	if r.Required != "" {
		if pl.reqLi, err = levelLi(c, r.Required, "Required"); err != nil {
			return err
		}
	}
	if r.Preferred != "" {
		if pl.prefLi, err = levelLi(c, r.Preferred, "Preferred"); err != nil {
			return err
		}
	}
	if r.SegmentSize > 1 {
		pl.seg, pl.segLi = r.SegmentSize, pl.leafLi
		if r.SegmentLevel != "" {
			if pl.segLi, err = levelLi(c, r.SegmentLevel, "SegmentLevel"); err != nil {
				return err
			}
		}
		if pl.nodes%pl.seg != 0 {
			return fmt.Errorf("%w: %d nodes is not a multiple of segment size %d", ErrBadRequest, pl.nodes, pl.seg)
		}
		if pl.reqLi >= pl.segLi {
			// The whole request sits in one domain at or below the
			// segment level: every segment does too.
			pl.seg = 1
		}
	} else if r.SegmentLevel != "" {
		if _, err = levelLi(c, r.SegmentLevel, "SegmentLevel"); err != nil {
			return err
		}
	}
	if r.MaxDomains > 0 {
		pl.maxK, pl.maxLi = r.MaxDomains, pl.leafLi
		if r.MaxDomainsLevel != "" {
			if pl.maxLi, err = levelLi(c, r.MaxDomainsLevel, "MaxDomainsLevel"); err != nil {
				return err
			}
		}
		if pl.reqLi >= pl.maxLi {
			pl.maxK = 0 // one domain at or below the level: at most one of it
		} else if pl.seg > 1 && pl.maxLi > pl.segLi {
			return fmt.Errorf("%w: MaxDomainsLevel %s is below SegmentLevel %s", ErrBadRequest, r.MaxDomainsLevel, orDefault(r.SegmentLevel, c.LevelName(c.Depth()-1)))
		}
	} else if r.MaxDomainsLevel != "" {
		if _, err = levelLi(c, r.MaxDomainsLevel, "MaxDomainsLevel"); err != nil {
			return err
		}
	}
	if pl.seg > 1 {
		pl.need = pl.nodes / pl.seg
	}
	// Phases, outermost first: [MaxDomains level] [segment level] [lowest
	// level]. Each packs its items into domains of its unit level; the
	// last one's units are lowest-level domains, where nodes are picked.
	segOn := pl.seg > 1
	inner := pl.leafLi
	if segOn {
		inner = pl.segLi
	}
	if pl.maxK > 0 && pl.maxLi < inner {
		pl.addPhase(pl.maxLi, segOn)
	}
	if segOn {
		pl.addPhase(pl.segLi, true)
	}
	if !segOn || pl.segLi < pl.leafLi {
		pl.addPhase(pl.leafLi, false)
	}
	return nil
}

func (pl *plan) addPhase(unitLi int, seg bool) {
	pl.phases[pl.nphases] = phase{unitLi: unitLi, seg: seg}
	pl.nphases++
}
