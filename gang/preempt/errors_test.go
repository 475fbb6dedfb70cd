package preempt

import (
	"errors"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"default", DefaultOptions(), true},
		{"no-exact", Options{MaxWork: 1}, true},
		{"max-exact", Options{MaxWork: 1, ExactCandidates: MaxExactCandidates}, true},
		{"zero-work", Options{}, false},
		{"negative-exact", Options{MaxWork: 8, ExactCandidates: -1}, false},
		{"too-exact", Options{MaxWork: 8, ExactCandidates: MaxExactCandidates + 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrOptions) {
				t.Fatalf("Validate: %v", err)
			}
			if _, err := NewSearcher(topology.Default2000(), tc.o); (err == nil) != tc.ok {
				t.Fatalf("NewSearcher: %v", err)
			}
		})
	}
	if _, err := NewSearcher(nil, DefaultOptions()); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("nil cluster: %v", err)
	}
}

// fullCluster returns the default cluster with a gang "batch" on one whole
// leaf and every other leaf full, so that a leaf-sized gang needs a victim.
func fullCluster(t *testing.T) (*topology.Cluster, *gang.Ledger) {
	c := topology.Default2000()
	l := gang.NewLedger(c, gang.Options{})
	job := &gang.Spec{ID: "batch", Members: []gang.Member{{Name: "w", Request: placement.Request{Nodes: 16, GPUsPerNode: 8, Required: "leaf"}}}}
	if res, err := l.Admit(job); err != nil || !res.Admitted {
		t.Fatal(err, res)
	}
	for lf := range c.NumDomains(2) {
		first, end := c.DomainRange(2, lf)
		if l.State().DomainFreeGPUs(2, lf) == 0 {
			continue // the batch job's leaf
		}
		spec := &gang.Spec{ID: c.DomainName(2, lf), Members: []gang.Member{{Name: "w", Request: placement.Request{Nodes: int(end - first), GPUsPerNode: 8, Allowed: c.DomainNodes(2, lf, nil)}}}}
		if res, err := l.Admit(spec); err != nil || !res.Admitted {
			t.Fatal(err, res)
		}
	}
	return c, l
}

// TestBadInput checks that every malformed request or candidate is an
// error naming the gang at fault, that the caller's state is left as it
// was, and that the searcher works normally afterwards.
func TestBadInput(t *testing.T) {
	c, l := fullCluster(t)
	alloc, _ := l.Get("batch")
	good := Candidate{ID: "batch", Alloc: alloc, Policy: Requeue, Cost: 100}
	ghost := &gang.Allocation{ID: "ghost", Members: []gang.MemberAllocation{{Name: "w", Pods: 1, Assignment: []topology.NodeAlloc{{Node: 200, GPUs: 0xff}}}}}
	far := &gang.Allocation{ID: "far", Members: []gang.MemberAllocation{{Name: "w", Pods: 1, Assignment: []topology.NodeAlloc{{Node: 9999, GPUs: 1}}}}}
	leaf := func(nodes int) *Preemptor {
		return &Preemptor{Class: 1, Gang: &gang.Spec{ID: "urgent", Members: []gang.Member{{Name: "w", Request: placement.Request{Nodes: nodes, GPUsPerNode: 8, Required: "leaf"}}}}}
	}
	other := topology.NewState(topology.NVL72Default())
	holey := l.State().Clone() // GPU 0 of node 200 free: ghost claims it
	if err := holey.Release([]topology.NodeAlloc{{Node: 200, GPUs: 1}}); err != nil {
		t.Fatal(err)
	}
	badMask := &gang.Allocation{ID: "wide", Members: []gang.MemberAllocation{{Name: "w", Pods: 1, Assignment: []topology.NodeAlloc{{Node: 200, GPUs: 0xff00}}}}}
	for _, tc := range []struct {
		name  string
		st    *topology.State
		req   *Preemptor
		cands []Candidate
		is    error
		names string
	}{
		{"other-cluster", other, leaf(16), []Candidate{good}, ErrBadRequest, ""},
		{"nil-request", nil, nil, []Candidate{good}, ErrBadRequest, ""},
		{"nil-gang", nil, &Preemptor{Class: 1}, []Candidate{good}, ErrBadRequest, ""},
		{"bad-spec", nil, &Preemptor{Class: 1, Gang: &gang.Spec{ID: "urgent"}}, []Candidate{good}, gang.ErrBadSpec, "urgent"},
		{"no-id", nil, leaf(16), []Candidate{{Alloc: alloc, Policy: Requeue}}, ErrBadCandidate, "candidate 0"},
		{"no-alloc", nil, leaf(16), []Candidate{{ID: "x", Policy: Requeue}}, ErrBadCandidate, "x"},
		{"negative-cost", nil, leaf(16), []Candidate{{ID: "x", Alloc: alloc, Policy: Requeue, Cost: -1}}, ErrBadCandidate, "x"},
		{"huge-cost", nil, leaf(16), []Candidate{{ID: "x", Alloc: alloc, Policy: Requeue, Cost: MaxCost + 1}}, ErrBadCandidate, "x"},
		{"bad-policy", nil, leaf(16), []Candidate{{ID: "x", Alloc: alloc, Policy: 9}}, ErrBadCandidate, "x"},
		{"not-allocated", holey, leaf(16), []Candidate{{ID: "ghost", Alloc: ghost, Policy: Requeue}}, topology.ErrConflict, "ghost"},
		{"bad-mask", nil, leaf(16), []Candidate{{ID: "wide", Alloc: badMask, Policy: Requeue}}, topology.ErrBadMask, "wide"},
		{"unknown-node", nil, leaf(16), []Candidate{{ID: "far", Alloc: far, Policy: Requeue}}, topology.ErrUnknownNode, "far"},
		{"claimed-twice", nil, leaf(16), []Candidate{good, {ID: "twin", Alloc: alloc, Policy: Cancel}}, topology.ErrConflict, "twin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			if st == nil {
				st = l.State()
			}
			before := st.Clone()
			s, _ := NewSearcher(c, DefaultOptions())
			var res Verdict
			err := s.Find(st, tc.req, tc.cands, &res)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.names) {
				t.Fatalf("error %v, want %v naming %q", err, tc.is, tc.names)
			}
			if !st.Equal(before) {
				t.Fatal("the state changed")
			}
			if err := s.Find(l.State(), leaf(16), []Candidate{good}, &res); err != nil || !res.Found || res.IDs[0] != "batch" {
				t.Fatalf("after the error: %v %+v", err, res)
			}
		})
	}
}
