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

// MaxSegmentLayers is the most segment layers one request may nest (Kueue
// allows three).
const MaxSegmentLayers = 3

// Segment is one layer of segments: the request's nodes come in groups of
// Size nodes, each group inside one domain of Level ("" is the lowest
// level).
type Segment struct {
	Size  int    `json:"size"`
	Level string `json:"level,omitempty"`
}

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
	// level defaults to the lowest one (leaf switches). It must not lie
	// below a segment level. A cap no smaller than the level's number of
	// domains constrains nothing, and is planned as no cap.
	MaxDomains      int
	MaxDomainsLevel string
	// SegmentSize, when above 1, makes the nodes come in segments of that
	// many nodes, each segment inside one domain of SegmentLevel (Slurm
	// --segment, Kueue slices). Nodes must be a multiple of it. The level
	// defaults to the lowest one. It is the one-layer form of Segments.
	SegmentSize  int
	SegmentLevel string
	// Segments nests up to MaxSegmentLayers layers of segments, outermost
	// first, unused entries zero: for example {{48, "zone"}, {16, "rack"}}
	// asks for slices of 48 nodes inside one zone, each made of slices of
	// 16 inside one rack (Kueue's multi-layer slices). Each layer's level
	// lies below the previous one and its size divides the previous size;
	// Nodes is a multiple of the first size. Give Segments or SegmentSize,
	// not both. (An array, so that a Request stays comparable.)
	Segments [MaxSegmentLayers]Segment

	// Allowed, when non-nil, limits placement to these nodes (a partition,
	// a node feature). Excluded, when non-nil, removes nodes (reserved for
	// others). Both are node sets of the cluster (topology.Cluster.NewNodeSet).
	Allowed, Excluded *bitset.BitSet
	// AllowedLabel is how a Reason describes the nodes outside Allowed
	// ("12 outside Allowed" when empty), for a caller whose Allowed stands
	// for something its users know by another name: for example "outside
	// queue q's pool", or "rejected by the pod's node affinity". It changes
	// no decision.
	AllowedLabel string
}

// AllowedWords returns how a Reason describes the nodes outside Allowed:
// AllowedLabel, or "outside Allowed" when it is empty. A caller that
// names Allowed together with something else (a narrower domain, a pool)
// builds on it.
func (r *Request) AllowedWords() string { return allowedWords(r.AllowedLabel) }

func allowedWords(label string) string { return orDefault(label, "outside Allowed") }

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
		s = fmt.Sprintf("%d %s", r.GPUs, pluralWord("GPU", r.GPUs))
	case r.GPUsPerNode == 0:
		s = fmt.Sprintf("%d whole %s", r.Nodes, pluralWord("node", r.Nodes))
	default:
		s = fmt.Sprintf("%d %s x %d %s", r.Nodes, pluralWord("node", r.Nodes), r.GPUsPerNode, pluralWord("GPU", r.GPUsPerNode))
	}
	if r.Exclusive && (r.GPUsPerNode != 0 || r.GPUs > 0) {
		s += ", exclusive"
	}
	if r.Required != "" {
		s += ", required " + r.Required
	}
	if r.Preferred != "" {
		s += ", preferred " + r.Preferred
	}
	if r.MaxDomains > 0 {
		s += fmt.Sprintf(", at most %d %s", r.MaxDomains, plural(orDefault(r.MaxDomainsLevel, "lowest-level domain"), r.MaxDomains))
	}
	if r.SegmentSize > 1 {
		s += fmt.Sprintf(", segments of %d per %s", r.SegmentSize, orDefault(r.SegmentLevel, "lowest-level domain"))
	}
	for _, seg := range r.Segments {
		if seg.Size != 0 {
			s += fmt.Sprintf(", segments of %d per %s", seg.Size, orDefault(seg.Level, "lowest-level domain"))
		}
	}
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// SegmentStep returns the size of the outermost segment layer (1 when the
// request has no segments): the node counts the request may take, as in an
// elastic gang's sizes, are its multiples.
func (r *Request) SegmentStep() int {
	if r.Segments[0].Size != 0 {
		return max(r.Segments[0].Size, 1)
	}
	return max(r.SegmentSize, 1)
}

// Validate checks the request against cluster c without looking at any
// free state: counts, shapes and level names. It allocates only when it
// returns an error.
func (r *Request) Validate(c *topology.Cluster) error {
	var pl plan
	return pl.resolve(c, r)
}
