package placement

import (
	"errors"
	"math"
	mathbits "math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/topology"
)

// FuzzPlace: any request, however malformed, gets an ErrBadRequest error
// or a decision, never a panic; a placement is valid on the state (free
// GPUs, nodes up and not drained, Allowed and not Excluded), gives what
// the request asks for and lies within its Required domain and its
// domain limit; a refusal says why; and Place leaves the state
// unchanged. The fuzz input seeds a random small cluster, state and
// request (as the oracle draws them), then sets up to four of its fields
// to values a caller could pass by mistake: negative, zero, huge, one past
// the cluster, an unknown or empty level name, node sets of the wrong
// length.
//
//	go test ./placement -run '^$' -fuzz FuzzPlace -fuzztime 2m
func FuzzPlace(f *testing.F) {
	for i := range 16 {
		f.Add(uint64(i), []byte{byte(i), byte(7 * i), byte(13 * i), byte(31 * i)})
	}
	f.Fuzz(func(t *testing.T, seed uint64, edits []byte) {
		r := rand.New(rand.NewPCG(seed, 17))
		c := randomCluster(r, 12)
		s := randomState(r, c)
		req := randomRequest(r, c)
		for i := 0; i+1 < len(edits) && i < 8; i += 2 {
			editRequest(&req, c, edits[i], edits[i+1])
		}
		before := s.Clone()
		res, err := New(c, Options{}).Place(s, &req, nil)
		if !s.Equal(before) {
			t.Fatalf("%s: Place changed the state", req.String())
		}
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("%s: an error that is not ErrBadRequest: %v", req.String(), err)
			}
			if res.Placed {
				t.Fatalf("%s: placed with an error: %v", req.String(), err)
			}
			return
		}
		if !res.Placed {
			if res.Reason.String() == "" {
				t.Fatalf("%s: refused without a reason", req.String())
			}
			return
		}
		checkPlacement(t, s, &req, &res)
	})
}

// editRequest sets one field of req, picked by which, to a value from v.
func editRequest(req *Request, c *topology.Cluster, which, v byte) {
	ints := []int{-1, 0, 1, 2, c.NumNodes(), c.NumNodes() + 1, c.TotalGPUs(), c.TotalGPUs() + 1,
		topology.MaxGPUsPerNode, topology.MaxGPUsPerNode + 1, 1 << 40, math.MaxInt, math.MinInt}
	n := ints[int(v)%len(ints)]
	names := slices.Concat(c.Levels(), []string{"", "no-such-level"})
	name := names[int(v)%len(names)]
	mask := func() *bitset.BitSet {
		switch v % 4 {
		case 0:
			return nil
		case 1:
			return bitset.New(uint(c.NumNodes() + 1)) // wrong length
		case 2:
			return bitset.New(uint(c.NumNodes())) // no node
		}
		b := bitset.New(uint(c.NumNodes()))
		for i := range c.NumNodes() {
			if (int(v)>>2+i)%3 != 0 {
				b.Set(uint(i))
			}
		}
		return b
	}
	seg := &req.Segments[int(v)%MaxSegmentLayers]
	switch which % 16 {
	case 0:
		req.Nodes = n
	case 1:
		req.GPUs = n
	case 2:
		req.GPUsPerNode = n
	case 3:
		req.MaxDomains = n
	case 4:
		req.MaxDomainsLevel = name
	case 5:
		req.SegmentSize = n
	case 6:
		req.SegmentLevel = name
	case 7:
		seg.Size = n
	case 8:
		seg.Level = name
	case 9:
		req.Required = name
	case 10:
		req.Preferred = name
	case 11:
		req.Exclusive = !req.Exclusive
	case 12:
		req.Allowed = mask()
	case 13:
		req.Excluded = mask()
	case 14:
		req.Nodes, req.GPUs = 0, 0
	default:
		req.Nodes, req.GPUs = n, n
	}
}

// checkPlacement checks a placement against the state and the request.
func checkPlacement(t *testing.T, s *topology.State, req *Request, res *Result) {
	t.Helper()
	c := s.Cluster()
	if err := s.CanAllocate(res.Assignment); err != nil {
		t.Fatalf("%s: invalid assignment: %v", req.String(), err)
	}
	gpus, nodes := 0, map[topology.NodeID]bool{}
	for _, a := range res.Assignment {
		n := a.Node
		if nodes[n] {
			t.Fatalf("%s: node %d listed twice", req.String(), n)
		}
		nodes[n] = true
		gpus += mathbits.OnesCount64(a.GPUs)
		if s.Status(n) != topology.Up {
			t.Fatalf("%s: node %s is %v", req.String(), c.NodeName(n), s.Status(n))
		}
		if req.Allowed != nil && !req.Allowed.Test(uint(n)) || req.Excluded != nil && req.Excluded.Test(uint(n)) {
			t.Fatalf("%s: node %s is not allowed", req.String(), c.NodeName(n))
		}
		if (req.Exclusive || req.Nodes > 0 && req.GPUsPerNode == 0) && (a.GPUs != s.Free(n) || s.FreeCount(n) != c.NodeGPUs(n)) {
			t.Fatalf("%s: node %s is not given whole, or not idle", req.String(), c.NodeName(n))
		}
	}
	if gpus != res.GPUs || len(nodes) != res.Nodes {
		t.Fatalf("%s: result says %d GPUs on %d nodes, the assignment has %d on %d", req.String(), res.GPUs, res.Nodes, gpus, len(nodes))
	}
	switch {
	case req.GPUs > 0 && (req.Exclusive && gpus < req.GPUs || !req.Exclusive && gpus != req.GPUs):
		t.Fatalf("%s: %d GPUs given", req.String(), gpus)
	case req.Nodes > 0 && len(nodes) != req.Nodes:
		t.Fatalf("%s: %d nodes given", req.String(), len(nodes))
	}
	if req.Nodes > 0 && req.GPUsPerNode > 0 {
		for _, a := range res.Assignment {
			if g := mathbits.OnesCount64(a.GPUs); g < req.GPUsPerNode || !req.Exclusive && g != req.GPUsPerNode {
				t.Fatalf("%s: node %s gets %d GPUs", req.String(), c.NodeName(a.Node), g)
			}
		}
	}
	if req.Required != "" {
		l, _ := c.Level(req.Required)
		d := -1
		for n := range nodes {
			if x := c.NodeDomain(n, l); d >= 0 && x != d {
				t.Fatalf("%s: crosses the required %s", req.String(), req.Required)
			} else {
				d = x
			}
		}
	}
	if req.MaxDomains > 0 && c.Depth() > 0 {
		l := c.Depth() - 1
		if req.MaxDomainsLevel != "" {
			l, _ = c.Level(req.MaxDomainsLevel)
		}
		ds := map[int]bool{}
		for n := range nodes {
			ds[c.NodeDomain(n, l)] = true
		}
		if len(ds) > req.MaxDomains {
			t.Fatalf("%s: %d domains of level %s", req.String(), len(ds), c.LevelName(l))
		}
	}
	if err := access.CheckState(s); err != nil {
		t.Fatal(err)
	}
}
