package gang

import (
	"math/rand/v2"
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// segmentGang is provenGang with its first node-count member given
// segments: 2 nodes per leaf or per spine, or two layers (4 per spine
// made of 2 per leaf), at 2 or 4 nodes, sometimes elastic down to one
// segment.
func segmentGang(r *rand.Rand, c *topology.Cluster) *Spec {
	g := provenGang(r, c)
	for i := range g.Members {
		m := &g.Members[i]
		if m.Request.GPUs > 0 {
			continue
		}
		switch r.IntN(3) {
		case 0, 1:
			m.Request.Nodes = 2 * (1 + r.IntN(2))
			m.Request.SegmentSize = 2
			m.Request.SegmentLevel = []string{"", "spine"}[r.IntN(2)]
			m.Min = []int{0, 2}[r.IntN(2)]
		default:
			m.Request.Nodes = 4
			m.Request.Segments[0] = placement.Segment{Size: 4, Level: "spine"}
			m.Request.Segments[1] = placement.Segment{Size: 2}
			m.Min = 0
		}
		break
	}
	return g
}

// TestProvenFailureSegments: TestProvenFailure for gangs with a member
// with segments. The search gave such a member the placer's one answer
// per domain: a gang that fits only with the member's segments in other
// domains was refused (without SearchCut, so backfill let it wait
// forever), and no refusal of such a gang was ever proven. The search
// now enumerates how many nodes each segment domain gives: a refusal it
// did not cut is proven, and the brute force checks both ways.
func TestProvenFailureSegments(t *testing.T) {
	for _, tt := range []struct {
		name string
		used bool
		seed uint64
	}{
		{"empty cluster", false, 3},
		{"partly used", true, 4},
	} {
		t.Run(tt.name, func(t *testing.T) { checkProven(t, tt.used, tt.seed, segmentGang) })
	}
}
