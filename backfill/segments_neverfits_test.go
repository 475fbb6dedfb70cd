package backfill

import (
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestSubmitSegmentsNeverFits: a gang with a member asking for segments
// that no packing fits on the empty cluster is refused with ErrNeverFits.
// The cluster has two spines of one leaf each, an 8-GPU and a 4-GPU node
// per leaf. m0 (2 nodes x 4 GPUs, one segment of 2 inside a leaf) takes
// half of an 8-GPU node whichever leaf it uses, so m1 (2 nodes x 8 GPUs)
// never finds both 8-GPU nodes free. The admitter gave a member with
// segments only the placer's answer and never proved such a refusal:
// Submit accepted the job, which waited forever. A gang that fits is
// still accepted.
func TestSubmitSegmentsNeverFits(t *testing.T) {
	c := spineLeafCluster(t, []spineLeafNode{{8, "s0", "l0"}, {4, "s0", "l0"}, {8, "s1", "l1"}, {4, "s1", "l1"}})
	segs := placement.NodesOf(2, 4)
	segs.SegmentSize = 2
	checkSubmitVerdicts(t, c, []submitVerdict{
		{"segments leave no two 8-GPU nodes", gangOfRequests(segs, placement.NodesOf(2, 8)), ErrNeverFits, ""},
		{"segments and one 8-GPU node fit", gangOfRequests(segs, placement.NodesOf(1, 8)), nil, ""},
	})
}
