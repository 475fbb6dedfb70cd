package gang

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestCheckWhere checks the domain limit, the segments and the required
// co-location in Spec.CheckAllocation, Ledger.Insert (which refuses what
// it refuses, changing nothing) and Spec.CheckRecord, on hand-made
// allocations of the 2,000-GPU cluster (leaves of 16 nodes, spines of 4
// leaves).
func TestCheckWhere(t *testing.T) {
	c := topology.Default2000()
	leaf, spine := c.Depth()-1, c.Depth()-2
	// nodes returns k nodes of each of the given domains of level l.
	nodes := func(l, k int, doms ...int) []topology.NodeAlloc {
		var out []topology.NodeAlloc
		for _, d := range doms {
			lo, _ := c.DomainRange(l, d)
			for i := range k {
				out = append(out, topology.NodeAlloc{Node: lo + topology.NodeID(i), GPUs: 0xff})
			}
		}
		return out
	}
	one := func(r placement.Request, as []topology.NodeAlloc) (*Spec, *Allocation) {
		return &Spec{ID: "g", Members: []Member{{Name: "w", Request: r}}},
			&Allocation{ID: "g", Members: []MemberAllocation{{Name: "w", Pods: len(as), Assignment: as}}}
	}
	two := func(col Colocation, a, b []topology.NodeAlloc) (*Spec, *Allocation) {
		r := func(n int) placement.Request { return placement.NodesOf(n, 8) }
		return &Spec{ID: "g", Colocate: col, Members: []Member{{Name: "a", Request: r(len(a))}, {Name: "b", Request: r(len(b))}}},
			&Allocation{ID: "g", Members: []MemberAllocation{{Name: "a", Pods: len(a), Assignment: a}, {Name: "b", Pods: len(b), Assignment: b}}}
	}
	limited := func(n, max int, lvl string) placement.Request {
		r := placement.NodesOf(n, 8)
		r.MaxDomains, r.MaxDomainsLevel = max, lvl
		return r
	}
	segmented := func(n int, layers ...placement.Segment) placement.Request {
		r := placement.NodesOf(n, 8)
		copy(r.Segments[:], layers)
		return r
	}
	oneLayer := placement.NodesOf(4, 8)
	oneLayer.SegmentSize = 2
	cases := []struct {
		name string
		mk   func() (*Spec, *Allocation)
		want string
	}{
		{"two leaves, at most two", func() (*Spec, *Allocation) { return one(limited(4, 2, ""), nodes(leaf, 2, 0, 1)) }, ""},
		{"three leaves, at most two", func() (*Spec, *Allocation) { return one(limited(6, 2, ""), nodes(leaf, 2, 0, 1, 5)) },
			"pods in 3 leaf domains, its request allows at most 2"},
		{"two leaves of one spine, at most one spine", func() (*Spec, *Allocation) { return one(limited(4, 1, "spine"), nodes(leaf, 2, 0, 1)) }, ""},
		{"two spines, at most one", func() (*Spec, *Allocation) { return one(limited(4, 1, "spine"), nodes(spine, 2, 0, 1)) },
			"pods in 2 spine domains, its request allows at most 1"},
		{"whole segments of 2 per leaf", func() (*Spec, *Allocation) { return one(oneLayer, nodes(leaf, 2, 3, 7)) }, ""},
		{"3 and 1 per leaf, segments of 2", func() (*Spec, *Allocation) {
			return one(oneLayer, append(nodes(leaf, 3, 3), nodes(leaf, 1, 7)...))
		}, "3 pods in leaf " + c.DomainName(leaf, 3) + ", not a whole number of its segments of 2"},
		{"4 per spine of 2 per leaf", func() (*Spec, *Allocation) {
			return one(segmented(8, placement.Segment{Size: 4, Level: "spine"}, placement.Segment{Size: 2}), nodes(leaf, 2, 0, 1, 4, 5))
		}, ""},
		{"2 in each of two spines, segments of 4 per spine", func() (*Spec, *Allocation) {
			return one(segmented(4, placement.Segment{Size: 4, Level: "spine"}, placement.Segment{Size: 2}), nodes(spine, 2, 0, 1))
		}, "2 pods in spine " + c.DomainName(spine, 0) + ", not a whole number of its segments of 4"},
		{"4 per spine, 3 and 1 per leaf", func() (*Spec, *Allocation) {
			return one(segmented(4, placement.Segment{Size: 4, Level: "spine"}, placement.Segment{Size: 2}), append(nodes(leaf, 3, 0), nodes(leaf, 1, 1)...))
		}, "3 pods in leaf " + c.DomainName(leaf, 0) + ", not a whole number of its segments of 2"},
		{"co-located in one spine", func() (*Spec, *Allocation) {
			return two(Colocation{Level: "spine", Required: true}, nodes(leaf, 2, 0), nodes(leaf, 2, 3))
		}, ""},
		{"members in two spines, co-location required", func() (*Spec, *Allocation) {
			return two(Colocation{Level: "spine", Required: true}, nodes(spine, 2, 0), nodes(spine, 2, 1))
		}, "member b has a pod in spine " + c.DomainName(spine, 1) + ", outside spine " + c.DomainName(spine, 0)},
		{"members in two spines, co-location preferred", func() (*Spec, *Allocation) {
			return two(Colocation{Level: "spine"}, nodes(spine, 2, 0), nodes(spine, 2, 1))
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, a := tc.mk()
			if err := g.Validate(c); err != nil {
				t.Fatalf("spec: %v", err)
			}
			check := func(what string, err error) {
				t.Helper()
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("%s: %v", what, err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("%s: got %v, want an error with %q", what, err, tc.want)
				}
			}
			check("CheckAllocation", g.CheckAllocation(c, a))
			l := NewLedger(c, Options{})
			before := l.State().Clone()
			err := l.Insert(g, a)
			check("Insert", err)
			if err != nil && (!l.State().Equal(before) || l.Len() != 0) {
				t.Errorf("a refused Insert changed the ledger")
			}
			// The record of the allocation, inserted under a spec
			// without the constraint, checked against the spec.
			loose := &Spec{ID: g.ID, Members: make([]Member, len(g.Members))}
			for i, m := range g.Members {
				loose.Members[i] = Member{Name: m.Name, Request: placement.NodesOf(m.Request.Nodes, 8)}
			}
			l = NewLedger(c, Options{})
			if err := l.Insert(loose, a); err != nil {
				t.Fatalf("loose insert: %v", err)
			}
			check("CheckRecord", g.CheckRecord(c, &l.Snapshot().Gangs[0]))
		})
	}
}

// TestAdmittedPassCheckAllocation admits random gangs with domain limits,
// segments (one layer or two, elastic minimums of whole segments) and
// co-location on random fills, replaces pods, grows and shrinks elastic
// members and releases gangs,
// and checks every allocation the ledger holds against its spec after
// every step: what the ledger makes, its own check accepts.
func TestAdmittedPassCheckAllocation(t *testing.T) {
	c := topology.Default2000()
	levels := c.Levels()
	steps := 3000
	if testing.Short() {
		steps = 600
	}
	r := rand.New(rand.NewPCG(5, 17))
	l := NewLedger(c, Options{})
	admitted, constrained, grown, shrunk := 0, 0, 0, 0
	for step := range steps {
		if l.State().UsedGPUs() > c.TotalGPUs()*9/10 {
			for _, id := range l.IDs()[:l.Len()/2] {
				if err := l.Release(id); err != nil {
					t.Fatal(err)
				}
			}
		}
		g := randomGang(r, c, fmt.Sprintf("g%d", step))
		for i := range g.Members {
			q := &g.Members[i].Request
			if q.GPUs > 0 {
				continue
			}
			switch r.IntN(3) {
			case 0:
				q.MaxDomains, q.MaxDomainsLevel = 1+r.IntN(3), levels[r.IntN(len(levels))]
			case 1:
				size := []int{2, 4}[r.IntN(2)]
				if q.Nodes%size != 0 {
					break
				}
				if r.IntN(2) == 0 {
					q.SegmentSize, q.SegmentLevel = size, levels[1+r.IntN(len(levels)-1)]
				} else { // two layers: size per spine (or core), 2 per leaf
					q.Segments[0] = placement.Segment{Size: size, Level: levels[r.IntN(len(levels)-1)]}
					q.Segments[1] = placement.Segment{Size: 2}
				}
				// An elastic minimum of whole segments, or none.
				g.Members[i].Step = 0
				if m := &g.Members[i]; m.Min > 0 {
					m.Min = max(size, m.Min/size*size)
					if m.Min >= q.Nodes {
						m.Min = 0
					}
				}
			}
		}
		if g.Validate(c) != nil {
			continue
		}
		res, err := l.Admit(g)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if res.Admitted {
			admitted++
			if q := &g.Members[0].Request; g.Colocate.Required || q.MaxDomains > 0 || q.SegmentStep() > 1 {
				constrained++
			}
			a, _ := l.Get(g.ID)
			m := r.IntN(len(a.Members))
			if a.Members[m].Pods > 0 {
				if _, err := l.ReplacePod(g.ID, a.Members[m].Name, r.IntN(a.Members[m].Pods), nil); err != nil {
					t.Fatalf("step %d: replace: %v", step, err)
				}
			}
			// An elastic member grows by a step when it can, or gives
			// up its last pods down to its minimum.
			if mem := &g.Members[m]; mem.Min > 0 && mem.Request.SegmentStep() <= 1 {
				switch spare, _ := l.Spare(g.ID, m); {
				case a.Members[m].Pods < mem.Request.Nodes && r.IntN(2) == 0:
					if _, err := l.GrowMember(g.ID, mem.Name, mem.step(), nil); err != nil {
						t.Fatalf("step %d: grow: %v", step, err)
					}
					grown++
				case spare > 0:
					k := spare / mem.step() * mem.step()
					ranks := make([]int, 0, k)
					for i := range k {
						ranks = append(ranks, a.Members[m].Pods-1-i)
					}
					if err := l.ReleasePods(g.ID, mem.Name, ranks...); err != nil {
						t.Fatalf("step %d: release %v: %v", step, ranks, err)
					}
					shrunk++
				}
			}
		}
		for _, id := range l.IDs() {
			a, _ := l.Get(id)
			e := l.byID[id]
			if err := e.spec.CheckAllocation(c, a); err != nil {
				t.Fatalf("step %d: the ledger holds %s, which its spec refuses: %v", step, id, err)
			}
		}
	}
	t.Logf("%d admitted, %d with a limit, segments or required co-location on their first member or gang, %d grown, %d shrunk", admitted, constrained, grown, shrunk)
	if constrained < steps/20 {
		t.Errorf("only %d constrained admissions in %d steps", constrained, steps)
	}
}

// TestCheckUnknownLevel: a spec never validated (as SpecRecord.Spec
// rebuilds it) that names an unknown level gets an error from the checks,
// not a panic.
func TestCheckUnknownLevel(t *testing.T) {
	c := topology.Default2000()
	as := []topology.NodeAlloc{{Node: 0, GPUs: 0xff}, {Node: 1, GPUs: 0xff}}
	for _, tc := range []struct {
		name string
		g    Spec
	}{
		{"domain limit", Spec{Members: []Member{{Name: "w", Request: placement.Request{Nodes: 2, GPUsPerNode: 8, MaxDomains: 1, MaxDomainsLevel: "rack"}}}}},
		{"segments", Spec{Members: []Member{{Name: "w", Request: placement.Request{Nodes: 2, GPUsPerNode: 8, SegmentSize: 2, SegmentLevel: "rack"}}}}},
		{"co-location", Spec{Colocate: Colocation{Level: "rack", Required: true}, Members: []Member{{Name: "w", Request: placement.NodesOf(2, 8)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.g.ID = "g"
			a := &Allocation{ID: "g", Members: []MemberAllocation{{Name: "w", Pods: 2, Assignment: as}}}
			if err := tc.g.CheckAllocation(c, a); !errors.Is(err, topology.ErrUnknownLevel) {
				t.Errorf("CheckAllocation = %v, want ErrUnknownLevel", err)
			}
		})
	}
}
