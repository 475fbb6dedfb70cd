package placement

import (
	"math/rand/v2"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestRecountProperty: a failure reason recounted on another state of the
// same cluster (more GPUs taken, nodes drained or down) tells the counts
// Place's reason tells there, whenever Place fails there with the same
// code, for every reason Recount accepts; and Recount accepts only
// NoCapacity and RequiredLevel reasons of requests without node sets.
func TestRecountProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(68, 1))
	accepted, compared := 0, 0
	for i := range 3000 {
		c := randomCluster(r, 40)
		p := New(c, Options{})
		req := randomRequest(r, c)
		if r.IntN(2) == 0 {
			req.Segments, req.SegmentSize, req.MaxDomains = [MaxSegmentLayers]Segment{}, 0, 0
		}
		if r.IntN(4) != 0 {
			req.Allowed, req.Excluded = nil, nil
		}
		s := randomState(r, c)
		res, err := p.Place(s, &req, nil)
		if err != nil || res.Placed {
			continue
		}
		// A later state: some free GPUs taken, now and then a node down
		// or drained.
		s2 := s.Clone()
		for range 1 + r.IntN(6) {
			x := topology.NodeID(r.IntN(c.NumNodes()))
			if r.IntN(8) == 0 {
				_ = s2.SetStatus(x, topology.NodeStatus(1+r.IntN(2)))
				continue
			}
			if m := s2.Free(x) & r.Uint64(); m != 0 && s2.Status(x) == topology.Up {
				if err := s2.Allocate([]topology.NodeAlloc{{Node: x, GPUs: m}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		got := res.Reason
		// (A domain limit at or above Required binds nothing, and Place
		// drops it: such a reason is counters too.)
		countable := (got.Code == NoCapacity || got.Code == RequiredLevel) && req.Allowed == nil && req.Excluded == nil
		ok := got.Recount(s2)
		if ok {
			accepted++
		}
		if ok && !countable {
			t.Fatalf("case %d: %v on %v: Recount accepted %v", i, req, c, res.Reason)
		}
		if !ok {
			if got != res.Reason {
				t.Fatalf("case %d: Recount declined and changed the reason: %+v, was %+v", i, got, res.Reason)
			}
			continue
		}
		res2, err := p.Place(s2, &req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res2.Placed || res2.Reason.Code != got.Code {
			continue
		}
		compared++
		want := res2.Reason
		if got.Have != want.Have || got.Need != want.Need || got.Excluded != want.Excluded || got.String() != want.String() {
			t.Fatalf("case %d: %v: recounted %q (%+v), Place says %q (%+v)", i, req, got, got, want, want)
		}
	}
	t.Logf("%d reasons recounted, %d compared with Place's", accepted, compared)
	if compared < 300 {
		t.Fatalf("too easy: %d reasons compared", compared)
	}
}
