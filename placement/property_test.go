package placement

import (
	"fmt"
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
