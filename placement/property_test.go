package placement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestReusedPlacerMatchesFresh: a Placer that has made many decisions (on
// other states and requests of its cluster) decides exactly as a fresh
// one, and Place leaves the state unchanged, for every request shape, on
// small random clusters and on the default cluster.
func TestReusedPlacerMatchesFresh(t *testing.T) {
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	r := rand.New(rand.NewPCG(3, 9))
	t.Run("small", func(t *testing.T) {
		for k := range rounds / 50 {
			c := randomCluster(r, 12)
			reused := map[strategy]*Placer{leafPack: New(c, Options{}), firstFit: newWith(c, firstFit, 0)}
			for j := range 50 {
				s := randomState(r, c)
				req := randomRequest(r, c)
				comparePlacers(t, fmt.Sprintf("cluster %d request %d", k, j), reused, s, &req)
			}
		}
	})
	t.Run("default2000", func(t *testing.T) {
		c := topology.Default2000()
		reused := map[strategy]*Placer{leafPack: New(c, Options{}), firstFit: newWith(c, firstFit, 0)}
		for j := range rounds / 5 {
			s := topology.NewState(c)
			testcluster.Fragment(s, r, r.Float64()*0.95)
			req := randomRequest(r, c)
			req.Nodes *= 1 + r.IntN(20)
			req.GPUs *= 1 + r.IntN(20)
			comparePlacers(t, fmt.Sprintf("request %d", j), reused, s, &req)
		}
	})
}

func comparePlacers(t *testing.T, name string, reused map[strategy]*Placer, s *topology.State, req *Request) {
	t.Helper()
	before := s.Clone()
	for st, p := range reused {
		got, errGot := p.Place(s, req, nil)
		got.Assignment = slices.Clone(got.Assignment)
		want, errWant := newWith(s.Cluster(), st, 0).Place(s, req, nil)
		if fmt.Sprint(errGot) != fmt.Sprint(errWant) {
			t.Fatalf("%s %s: %s: errors %v and %v", name, st, req.String(), errGot, errWant)
		}
		if diff := cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
			t.Fatalf("%s %s: %s: a reused placer differs from a fresh one (-fresh +reused):\n%s", name, st, req.String(), diff)
		}
		if !s.Equal(before) {
			t.Fatalf("%s %s: %s: Place changed the state", name, st, req.String())
		}
	}
	if err := access.CheckState(s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestShortcutsMatchReference: the failure path's shortcuts (the ideal
// cluster read from the layout, exclusions counted from the counters, the
// early stop when the root cannot hold a request, the Required level alone
// for unsegmented requests, a running top-k for domain limits, the
// domain search started at the lowest level where one holds) decide
// exactly as the long way, Reason included, on small random clusters
// (mixed node sizes), the default cluster and a 25,000-node fat tree.
func TestShortcutsMatchReference(t *testing.T) {
	rounds := 4000
	if testing.Short() {
		rounds = 600
	}
	r := rand.New(rand.NewPCG(5, 11))
	check := func(t *testing.T, name string, fast, ref *Placer, s *topology.State, req *Request) {
		t.Helper()
		got, errGot := fast.Place(s, req, nil)
		got.Assignment = slices.Clone(got.Assignment)
		want, errWant := ref.Place(s, req, nil)
		if fmt.Sprint(errGot) != fmt.Sprint(errWant) {
			t.Fatalf("%s: %s: errors %v and %v", name, req.String(), errGot, errWant)
		}
		if diff := cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
			t.Fatalf("%s: %s: shortcuts differ from the reference (-reference +shortcuts):\n%s", name, req.String(), diff)
		}
	}
	reference := func(c *topology.Cluster, opts Options) *Placer {
		p := New(c, opts)
		p.reference = true
		return p
	}
	t.Run("small", func(t *testing.T) {
		for k := range rounds / 40 {
			c := randomCluster(r, 12)
			fast, ref := New(c, Options{}), reference(c, Options{})
			for j := range 40 {
				s := randomState(r, c)
				req := randomRequest(r, c)
				check(t, fmt.Sprintf("cluster %d request %d", k, j), fast, ref, s, &req)
			}
		}
	})
	t.Run("GPU totals over several leaves", func(t *testing.T) {
		// A search whose greedy plan's leaves alone exceed the budget
		// gives up before it lists its leaves; the reference lists them
		// first. Both must decide alike, Approximate included.
		for _, name := range []string{"default", "fattree:10,10,25,8"} {
			c, err := testcluster.Generate(name)
			if err != nil {
				t.Fatal(err)
			}
			// Budgets of 2^10 to 2^14 cells, GPU totals of 9 to 1,200
			// (log-uniform): searches that run, near their budget, and
			// searches far beyond it.
			opts := Options{SearchBudget: 1 << (10 + r.IntN(5))}
			fast, ref := New(c, opts), reference(c, opts)
			for j := range rounds / 10 {
				s := topology.NewState(c)
				testcluster.Fragment(s, r, 0.2+r.Float64()*0.7)
				req := Request{GPUs: int(9 * math.Pow(1200.0/9, r.Float64()))}
				if r.IntN(2) == 0 {
					req.Preferred = c.LevelName(r.IntN(c.Depth()))
				}
				check(t, fmt.Sprintf("%s request %d", name, j), fast, ref, s, &req)
			}
			if fast.earlySkips == 0 {
				t.Fatalf("%s: no search gave up early: that path was not compared", name)
			}
			t.Logf("%s: %d searches gave up early", name, fast.earlySkips)
		}
	})
	for _, name := range []string{"default", "fattree:20,25,50,8"} {
		t.Run(name, func(t *testing.T) {
			c, err := testcluster.Generate(name)
			if err != nil {
				t.Fatal(err)
			}
			fast, ref := New(c, Options{}), reference(c, Options{})
			failed := 0
			for j := range rounds / 10 {
				s := topology.NewState(c)
				testcluster.Fragment(s, r, 0.5+r.Float64()*0.5)
				for range 1 + r.IntN(c.NumNodes()/50+1) {
					_ = s.SetStatus(topology.NodeID(r.IntN(c.NumNodes())), topology.NodeStatus(1+r.IntN(2)))
				}
				req := randomRequest(r, c)
				req.Nodes *= 1 + r.IntN(40)
				req.GPUs *= 1 + r.IntN(40)
				check(t, fmt.Sprintf("request %d", j), fast, ref, s, &req)
				if res, err := fast.Place(s, &req, nil); err == nil && !res.Placed {
					failed++
				}
			}
			if failed == 0 {
				t.Fatalf("no request failed: the failure path was not compared")
			}
		})
	}
}

// TestBufferRoomKeepsDecision: Place decides alike whatever room its
// buffer has (nil, so that every node is appended, or a buffer for every
// node of the cluster, so that whole leaves and classes are written in
// place), for every request shape on small random clusters (mixed node
// sizes) and the default cluster with many-node requests, exclusive ones
// included; the reference placer, which counts the GPUs of every leaf
// taken whole, agrees.
func TestBufferRoomKeepsDecision(t *testing.T) {
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	r := rand.New(rand.NewPCG(65, 14))
	check := func(t *testing.T, name string, c *topology.Cluster, fast, ref *Placer, s *topology.State, req *Request) {
		t.Helper()
		roomy := make([]topology.NodeAlloc, 0, c.NumNodes())
		want, errWant := fast.Place(s, req, nil)
		want.Assignment = slices.Clone(want.Assignment)
		for _, got := range []struct {
			who string
			p   *Placer
			buf []topology.NodeAlloc
		}{{"roomy buffer", fast, roomy}, {"reference, roomy buffer", ref, roomy}, {"reference, nil buffer", ref, nil}} {
			res, err := got.p.Place(s, req, got.buf)
			if fmt.Sprint(err) != fmt.Sprint(errWant) {
				t.Fatalf("%s: %s: %s: errors %v and %v", name, got.who, req.String(), err, errWant)
			}
			if diff := cmp.Diff(want, res, cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
				t.Fatalf("%s: %s: %s: differs from a nil buffer (-nil +%s):\n%s", name, got.who, req.String(), got.who, diff)
			}
		}
	}
	t.Run("small", func(t *testing.T) {
		for k := range rounds / 40 {
			c := randomCluster(r, 12)
			fast, ref := New(c, Options{}), New(c, Options{})
			ref.reference = true
			for j := range 40 {
				req := randomRequest(r, c)
				check(t, fmt.Sprintf("cluster %d request %d", k, j), c, fast, ref, randomState(r, c), &req)
			}
		}
	})
	t.Run("default2000", func(t *testing.T) {
		c := topology.Default2000()
		fast, ref := New(c, Options{}), New(c, Options{})
		ref.reference = true
		for j := range rounds / 5 {
			s := topology.NewState(c)
			testcluster.Fragment(s, r, r.Float64()*0.9)
			req := randomRequest(r, c)
			req.Nodes *= 1 + r.IntN(40)
			req.GPUs *= 1 + r.IntN(40)
			check(t, fmt.Sprintf("request %d", j), c, fast, ref, s, &req)
		}
	})
}
