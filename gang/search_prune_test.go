package gang

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// pruneTally counts, over the cases compareSearches saw, the searches
// the plain search stopped at its bound that the pruned one finished.
type pruneTally struct {
	cases, searched, plainCut, prunedCut, finished int
	plainSteps, prunedSteps                        int
}

// compareSearches checks one (state, gang) case against the plain search
// (packSearch.plain: without the bounds and the symmetry that prune
// subtrees without a packing): when the plain search was not cut, the
// pruned one is not either and gives the same answer (admitted, proven,
// the member and reason, the same placement) in no more steps; when it
// was cut, the pruned one may finish, and then its refusal is proven.
func compareSearches(t *testing.T, c *topology.Cluster, s *topology.State, g *Spec, ctx func() string, tally *pruneTally) {
	t.Helper()
	plain, pruned := NewAdmitter(c, Options{}), NewAdmitter(c, Options{})
	plain.pack.plain = true
	var outP, outN Allocation
	sp, sn := s.Clone(), s.Clone()
	resP, err := plain.Admit(sp, g, &outP)
	if err != nil {
		t.Fatalf("%s: %v", ctx(), err)
	}
	resN, err := pruned.Admit(sn, g, &outN)
	if err != nil {
		t.Fatalf("%s: %v", ctx(), err)
	}
	tally.cases++
	if !resP.Searched {
		if !reflect.DeepEqual(resP, resN) {
			t.Fatalf("%s\nno search, yet plain %+v, pruned %+v", ctx(), resP, resN)
		}
		return
	}
	tally.searched++
	tally.plainSteps += resP.SearchSteps
	tally.prunedSteps += resN.SearchSteps
	if resP.SearchCut {
		tally.plainCut++
	}
	if resN.SearchCut {
		tally.prunedCut++
	}
	switch {
	case !resP.SearchCut:
		if resN.SearchCut || resN.SearchSteps > resP.SearchSteps {
			t.Fatalf("%s\nplain search: %d steps, not cut; pruned: %d steps, cut %v", ctx(), resP.SearchSteps, resN.SearchSteps, resN.SearchCut)
		}
		resN.SearchSteps = resP.SearchSteps
		if !reflect.DeepEqual(resP, resN) {
			t.Fatalf("%s\nplain %+v\npruned %+v", ctx(), resP, resN)
		}
		// A member the pruned search never placed keeps a nil
		// assignment where the plain one placed and released it
		// (empty): the same allocation.
		if !cmp.Equal(outP, outN, cmpopts.EquateEmpty()) || !sp.Equal(sn) {
			t.Fatalf("%s\nplain placed %+v\npruned placed %+v", ctx(), outP, outN)
		}
	case !resN.SearchCut:
		tally.finished++
		if !resN.Admitted && !resN.Proven {
			t.Fatalf("%s\nthe pruned search finished (%d steps) without a proof", ctx(), resN.SearchSteps)
		}
	}
}

// TestSearchPruneSameAnswers: the bounds and the symmetry of the exact
// search only skip subtrees that hold no packing. On random small
// clusters (the gangs of TestProvenFailure and
// TestProvenFailureSegments) and on the searched admissions of
// BenchmarkAdmitSearch (the default cluster, fragmented), whenever the
// plain search finishes within SearchWork the pruned one finishes too
// with the same answer and placement, in no more steps; and it finishes
// (admits, or proves the refusal) some searches the plain one cut.
func TestSearchPruneSameAnswers(t *testing.T) {
	t.Run("small", func(t *testing.T) { smallPruneCases(t, 65, false) })
	// The bounds count the free GPUs and nodes of schedulable nodes only,
	// as placements use them: some nodes down or drained.
	t.Run("small_down_drained", func(t *testing.T) { smallPruneCases(t, 66, true) })
	t.Run("default_cluster", func(t *testing.T) {
		c := topology.Default2000()
		var tally pruneTally
		// Seed 4's pair 97 (segments) leaves a member the pruned search
		// never placed with a nil assignment, the plain one an empty one.
		for _, seed := range []uint64{1, 4} {
			for _, segments := range []bool{false, true} {
				for i, p := range searchBenchPairs(t, c, segments, 100, seed) {
					ctx := func() string {
						return fmt.Sprintf("seed %d segments %v pair %d: gang %s", seed, segments, i, describeGang(p.g))
					}
					compareSearches(t, c, p.s, p.g, ctx, &tally)
				}
			}
		}
		t.Logf("%+v", tally)
		if tally.finished == 0 || tally.prunedCut >= tally.plainCut {
			t.Errorf("the pruned search finished none of the %d searches the plain one cut (%d cut)", tally.plainCut, tally.prunedCut)
		}
	})
}

// TestSearchTwinLeaves: on the default cluster with every leaf alike (3
// idle nodes, the others with 2 GPUs free), a gang of three members of
// 12 whole nodes each inside one spine (a domain limit) and one of 10
// whole nodes in segments of 2 per leaf cannot fit: the segments need 5
// leaves, so two spines, and only two spines are then left whole. The
// free GPUs and the idle nodes (46 of 48) do not show it; the search,
// which takes the segment member first (it has a Required level), has to
// try the ways of taking 2 nodes from 5 of the 16 leaves. Without merging
// twin leaves (siblings alike for every member) it tried them one by one
// and stopped at SearchWork (the plain search still does); up to
// symmetry it proves the refusal.
func TestSearchTwinLeaves(t *testing.T) {
	c := topology.Default2000()
	s := topology.NewState(c)
	for i := range c.NumNodes() {
		if i%topology.DefaultNodesPerLeaf >= 3 {
			if err := s.Allocate([]topology.NodeAlloc{{Node: topology.NodeID(i), GPUs: 0x3f}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	seg := placement.NodesOf(10, 0)
	seg.SegmentSize, seg.Required = 2, "core"
	spine := placement.NodesOf(12, 0)
	spine.MaxDomains, spine.MaxDomainsLevel = 1, "spine"
	g := &Spec{ID: "g", Members: []Member{
		{Name: "seg", Request: seg},
		{Name: "a", Request: spine},
		{Name: "b", Request: spine},
		{Name: "c", Request: spine},
	}}
	for _, plain := range []bool{true, false} {
		a := NewAdmitter(c, Options{})
		a.pack.plain = plain
		var out Allocation
		res, err := a.Check(s, g, &out)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("plain %v: searched %v, admitted %v, proven %v, cut %v after %d steps", plain, res.Searched, res.Admitted, res.Proven, res.SearchCut, res.SearchSteps)
		if !plain && (!res.Searched || res.Admitted || !res.Proven) {
			t.Fatalf("searched %v, admitted %v, proven %v, cut %v after %d steps (%s); want a proven refusal", res.Searched, res.Admitted, res.Proven, res.SearchCut, res.SearchSteps, res)
		}
	}
}

// smallPruneCases runs compareSearches on random small clusters (the
// gangs of TestProvenFailure and TestProvenFailureSegments) drawn from
// seed, until enough admissions searched; with statuses, each state has
// a node or two down or drained.
func smallPruneCases(t *testing.T, seed uint64, statuses bool) {
	// Most admissions pass greedily: draw until this many searched.
	searched := 800
	if testing.Short() {
		searched = 150
	}
	draw := pruneCaseDraw(t, seed, statuses)
	var tally pruneTally
	for k := 0; tally.searched < searched; k++ {
		if k > 100*searched {
			t.Fatalf("%d searched admissions in %d cases", tally.searched, k)
		}
		c, s, g := draw()
		if g == nil {
			continue
		}
		ctx := func() string {
			return fmt.Sprintf("case %d: gang %s co-located %q\n%s%s", k, describeGang(g), g.Colocate.Level, c.Describe(), s.Describe())
		}
		compareSearches(t, c, s, g, ctx, &tally)
	}
	t.Logf("%+v", tally)
}

// pruneCaseDraw returns the generator of smallPruneCases' cases for seed:
// each call draws the next random small cluster, state (some nodes down
// or drained when statuses) and gang, alternately of TestProvenFailure
// and TestProvenFailureSegments; the gang is nil when it does not
// validate. The draws depend on the seed alone, so case k can be drawn
// again without admitting the cases before it.
func pruneCaseDraw(t *testing.T, seed uint64, statuses bool) func() (*topology.Cluster, *topology.State, *Spec) {
	r := rand.New(rand.NewPCG(seed, 1))
	k := 0
	return func() (*topology.Cluster, *topology.State, *Spec) {
		c := packCluster(r)
		gen := provenGang
		if k%2 == 1 {
			gen = segmentGang
		}
		k++
		g := gen(r, c)
		if g.Validate(c) != nil {
			return c, nil, nil
		}
		s := topology.NewState(c)
		if r.IntN(3) > 0 {
			s = packState(r, c)
		}
		if statuses {
			for range 1 + r.IntN(2) {
				st := []topology.NodeStatus{topology.Down, topology.Drained}[r.IntN(2)]
				if err := s.SetStatus(topology.NodeID(r.IntN(c.NumNodes())), st); err != nil {
					t.Fatal(err)
				}
			}
		}
		return c, s, g
	}
}

// TestColocatedSearchReported: a co-located gang's Admission reports
// the searches of every domain tried, not only the last attempt's. Case
// 10668 of smallPruneCases(104, with statuses) is a gang required in one
// leaf whose plain search (without the prunings) is cut at SearchWork in
// the first leaf tried and then admitted greedily in the other: the
// admission must say a search ran and was cut, with its steps (before
// stop 66 it reported no search at all, and TestSearchPruneSameAnswers'
// comparison then took the two searches' different placements for a
// defect).
func TestColocatedSearchReported(t *testing.T) {
	draw := pruneCaseDraw(t, 104, true)
	var (
		c *topology.Cluster
		s *topology.State
		g *Spec
	)
	for range 10668 + 1 {
		c, s, g = draw()
	}
	if g == nil || g.Colocate.Level == "" || !g.Colocate.Required {
		t.Fatalf("case 10668 is no longer a gang required in one domain: %v", g)
	}
	plain := NewAdmitter(c, Options{})
	plain.pack.plain = true
	var out Allocation
	res, err := plain.Admit(s.Clone(), g, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Admitted || !res.Colocated || !res.Searched || !res.SearchCut || res.SearchSteps < SearchWork {
		t.Fatalf("gang %s: %+v; want admitted, co-located, searched and cut after at least %d steps", describeGang(g), res, SearchWork)
	}
	pruned := NewAdmitter(c, Options{})
	res, err = pruned.Admit(s.Clone(), g, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Admitted || !res.Searched || res.SearchCut {
		t.Fatalf("gang %s: pruned %+v; want admitted by a search not cut", describeGang(g), res)
	}
}

// TestSearchBenchCutPairs: the searches of BenchmarkAdmitSearch's pairs
// that stopped at SearchWork before stop 66 finish. Each had a member
// whose choices were enumerated in full although no choice left room
// for the rest:
//   - a GPU total that only one leaf holds, and a later node-count
//     member that only that leaf holds, with too few nodes left there
//     whichever split the total takes (laterFitAfter);
//   - a GPU total with a limit of one leaf inside its Required spine
//     that only one leaf holds, and a later GPU total needing that leaf
//     (laterFitAfter, the limit's single domain);
//   - members taking whole nodes, or pods or GPUs that the partly used
//     nodes of their domains cannot hold, needing more nodes with every
//     GPU free than the cluster has (fullNodesFit);
//   - a GPU total pinned to one leaf leaving too few nodes there for a
//     later member with segments (segRoom, nested layers);
//   - a GPU total with a limit of two leaves whose split was enumerated
//     node by node although no two leaves left hold it (the domain
//     capacities in splitGPUs).
func TestSearchBenchCutPairs(t *testing.T) {
	c := topology.Default2000()
	pairs := map[bool][]searchPair{
		false: searchBenchPairs(t, c, false, 100, 1),
		true:  searchBenchPairs(t, c, true, 100, 1),
	}
	for _, tt := range []struct {
		segments bool
		pair     int
		admitted bool
	}{
		{false, 1, false},
		{false, 98, false},
		{true, 3, false},
		{true, 21, false},
		{true, 29, false},
		{true, 47, false},
		{true, 65, true},
	} {
		t.Run(fmt.Sprintf("segments=%v/pair=%d", tt.segments, tt.pair), func(t *testing.T) {
			p := pairs[tt.segments][tt.pair]
			a := NewAdmitter(c, Options{})
			var out Allocation
			res, err := a.Check(p.s, p.g, &out)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("gang %s: %d steps", describeGang(p.g), res.SearchSteps)
			if !res.Searched || res.SearchCut || res.Admitted != tt.admitted || res.Proven == tt.admitted || res.SearchSteps > SearchWork/8 {
				t.Fatalf("searched %v, cut %v after %d steps, admitted %v, proven %v; want admitted %v within %d steps", res.Searched, res.SearchCut, res.SearchSteps, res.Admitted, res.Proven, tt.admitted, SearchWork/8)
			}
		})
	}
}
