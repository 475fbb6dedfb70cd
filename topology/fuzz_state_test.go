package topology

import "testing"

// FuzzStateOps decodes the input as a sequence of operations on the free
// state of a small cluster (allocate, release, status changes, copies) and
// checks every index against a recomputation after each one, and that a
// refused allocation or release changes nothing.
func FuzzStateOps(f *testing.F) {
	f.Add([]byte{0, 1, 0xff, 1, 1, 0xff, 2, 3, 1, 0, 2, 0x0f})
	f.Add([]byte{0, 0, 0x03, 0, 0, 0x06, 3, 0, 0, 2, 5, 2})
	f.Add([]byte{2, 7, 1, 0, 7, 0x01, 2, 7, 0, 1, 7, 0x01})
	c, err := FatTree(FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 3, GPUsPerNode: 8})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 3000 {
			return
		}
		s := NewState(c)
		spare := NewState(c)
		for i := 0; i+2 < len(ops); i += 3 {
			op, node, arg := ops[i]%4, int(ops[i+1])%(c.NumNodes()+1), ops[i+2]
			before := s.Clone()
			var err error
			switch op {
			case 0:
				err = s.Allocate([]NodeAlloc{{Node: NodeID(node), GPUs: uint64(arg)}})
			case 1:
				err = s.Release([]NodeAlloc{{Node: NodeID(node), GPUs: uint64(arg)}})
			case 2:
				if node < c.NumNodes() {
					err = s.SetStatus(NodeID(node), NodeStatus(arg%3))
				}
			case 3:
				if err := s.CopyInto(spare); err != nil {
					t.Fatal(err)
				}
				if !spare.Equal(s) {
					t.Fatal("CopyInto copy differs")
				}
			}
			if err != nil && !s.Equal(before) {
				t.Fatalf("op %d (%d %d %#x) failed with %v but changed the state", i/3, op, node, arg, err)
			}
			if err := s.checkInvariants(); err != nil {
				t.Fatalf("op %d (%d %d %#x): %v", i/3, op, node, arg, err)
			}
		}
	})
}
