package gang

import (
	"fmt"
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// FuzzLedgerOps decodes the input as a sequence of ledger operations on a
// small cluster (admit gangs of decoded shapes, release, node down, up,
// drain, snapshot and restore) and runs the ledger checker after each.
func FuzzLedgerOps(f *testing.F) {
	f.Add([]byte{0, 3, 8, 0, 0, 2, 4, 1, 1, 0, 0, 0, 2, 5, 0, 5, 0, 0})
	f.Add([]byte{0, 12, 8, 2, 0, 1, 1, 0, 3, 2, 0, 0, 4, 0, 0, 5, 0, 0})
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		f.Fatal(err)
	}
	levels := append([]string{""}, c.Levels()...)
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 1500 {
			return
		}
		l := NewLedger(c, Options{})
		next := 0
		for i := 0; i+2 < len(ops); i += 3 {
			op, a, b := ops[i]%6, int(ops[i+1]), int(ops[i+2])
			switch op {
			case 0: // admit: a = nodes, b = GPUs per node (0: whole) + level
				g := &Spec{ID: fmt.Sprint(next), Members: []Member{{Name: "m",
					Request: placement.Request{Nodes: 1 + a%c.NumNodes(), GPUsPerNode: b % 9, Required: levels[(b/9)%len(levels)]}}}}
				if a%5 == 0 {
					g.Members = append(g.Members, Member{Name: "x", Request: placement.TotalGPUs(1 + b%16)})
				}
				next++
				before := l.State().Clone()
				res, err := l.Admit(g)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Admitted && !l.State().Equal(before) {
					t.Fatalf("refused admission changed the state")
				}
			case 1:
				if ids := l.IDs(); len(ids) > 0 {
					if err := l.Release(ids[a%len(ids)]); err != nil {
						t.Fatal(err)
					}
				}
			case 2:
				if _, err := l.NodeDown(topology.NodeID(a % c.NumNodes())); err != nil {
					t.Fatal(err)
				}
			case 3:
				if err := l.NodeUp(topology.NodeID(a % c.NumNodes())); err != nil {
					t.Fatal(err)
				}
			case 4:
				if err := l.Drain(topology.NodeID(a % c.NumNodes())); err != nil {
					t.Fatal(err)
				}
			case 5:
				r, err := Restore(c, l.Snapshot(), Options{})
				if err != nil {
					t.Fatalf("restore of a valid snapshot: %v", err)
				}
				if !r.State().Equal(l.State()) {
					t.Fatal("restored state differs")
				}
				l = r
			}
			if err := l.check(); err != nil {
				t.Fatalf("op %d (%d %d %d): %v", i/3, op, a, b, err)
			}
		}
	})
}
