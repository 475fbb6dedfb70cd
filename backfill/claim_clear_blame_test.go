package backfill

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/phalanx-sched/phalanx/topology/slurm"
)

// blockConf is NVIDIA topograph's topology/block test fixture (Apache-2.0):
// 12 NVLink blocks of 8 nodes, block sizes 8, 16 and 32.
const blockConf = `BlockName=rack11 Nodes=srv[1101-1108]
BlockName=rack12 Nodes=srv[1201-1208]
BlockName=rack21 Nodes=srv[2101-2108]
BlockName=rack22 Nodes=srv[2201-2208]
BlockName=rack31 Nodes=srv[3101-3108]
BlockName=rack32 Nodes=srv[3201-3208]
BlockName=rack41 Nodes=srv[4101-4108]
BlockName=rack42 Nodes=srv[4201-4208]
BlockName=rack51 Nodes=srv[5101-5108]
BlockName=rack52 Nodes=srv[5201-5208]
BlockName=rack61 Nodes=srv[6101-6108]
BlockName=rack62 Nodes=srv[6201-6208]
BlockSizes=8,16,32
`

// TestClaimMovesBlameTheirCause checks that every reservation a claim
// moves later (clearClaim) is blamed on a job, also one that slips behind
// a reservation the upkeep had placed anew in the same cycle.
//
// The snapshot (testdata/claim_clear_blame.json, taken from a random
// workload under two queues) is one cycle before job j143's due
// reservation reclaims its queue's guarantee: its claim runs 5 minutes
// (the grace) past its planned end, so j129's reservation, which the
// upkeep had moved earlier to that end, moves 5 minutes later, and j78's,
// planned behind j129 in the walk, too. j78's move was CauseUnknown with
// no job: j129's reservation still counted as placed anew, not slipped.
func TestClaimMovesBlameTheirCause(t *testing.T) {
	c, _, err := slurm.LoadConf(fstest.MapFS{"topology.conf": {Data: []byte(blockConf)}}, "topology.conf", slurm.Options{DefaultGPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/claim_clear_blame.json")
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Config   Config
		Snapshot Snapshot
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	e, err := Restore(c, in.Config, &in.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Schedule(in.Snapshot.Time)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Move{
		"j129": {Cause: CauseLateStart, By: "j143"},
		"j78":  {Cause: CauseLateStart, By: "j129"},
	}
	seen := 0
	for _, m := range p.Moves {
		t.Run(m.Job+" from "+strings.ReplaceAll(m.From.Format("15:04"), ":", ""), func(t *testing.T) {
			if m.Cause == CauseUnknown || m.By == "" {
				t.Errorf("move %+v has no cause", m)
			}
			if w, ok := want[m.Job]; ok && m.Cause == w.Cause && m.By == w.By && m.To.Sub(m.From) == in.Config.Preemption.Grace {
				seen++
			}
		})
	}
	if seen != len(want) {
		t.Errorf("moves %+v; want j129 and j78 moved by the %v grace, blamed on j143 and j129", p.Moves, in.Config.Preemption.Grace)
	}
}
