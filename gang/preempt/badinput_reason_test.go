package preempt

import (
	"testing"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestFindErrorReason: after Find returned an error, the verdict's reason
// read "victims found" (code Found, the zero Explanation, or the partial
// outcome of a search an unallocated candidate cut short) while Found was
// false, and a verdict reused from a search that found victims kept
// them. The verdict now says no search was made: Found false, code
// BadInput, no victims, whichever stage refused the input.
func TestFindErrorReason(t *testing.T) {
	c, l := fullCluster(t)
	alloc, _ := l.Get("batch")
	good := Candidate{ID: "batch", Alloc: alloc, Policy: Requeue, Cost: 100}
	ghost := &gang.Allocation{ID: "ghost", Members: []gang.MemberAllocation{{Name: "w", Pods: 1, Assignment: []topology.NodeAlloc{{Node: 200, GPUs: 0xff}}}}}
	leaf := &Preemptor{Class: 1, Gang: &gang.Spec{ID: "urgent", Members: []gang.Member{{Name: "w", Request: placement.Request{Nodes: 16, GPUsPerNode: 8, Required: "leaf"}}}}}
	holey := l.State().Clone() // GPU 0 of node 200 free: ghost claims it
	if err := holey.Release([]topology.NodeAlloc{{Node: 200, GPUs: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		st    *topology.State
		req   *Preemptor
		cands []Candidate
		class int // the reason's class
	}{
		{"other-cluster", topology.NewState(topology.NVL72Default()), leaf, []Candidate{good}, 1},
		{"nil-request", nil, nil, []Candidate{good}, 0},
		{"bad-spec", nil, &Preemptor{Class: 3, Gang: &gang.Spec{ID: "urgent"}}, []Candidate{good}, 3},
		{"no-id", nil, leaf, []Candidate{{Alloc: alloc, Policy: Requeue}}, 1},
		{"not-allocated, found mid-search", holey, leaf, []Candidate{{ID: "ghost", Alloc: ghost, Policy: Requeue}}, 1},
		{"claimed-twice, found mid-search", nil, leaf, []Candidate{good, {ID: "twin", Alloc: alloc, Policy: Cancel}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			if st == nil {
				st = l.State()
			}
			s, _ := NewSearcher(c, DefaultOptions())
			var res Verdict
			// A verdict reused from a search that found a victim.
			if err := s.Find(l.State(), leaf, []Candidate{good}, &res); err != nil || !res.Found || len(res.Victims) != 1 {
				t.Fatalf("the first search: %v %+v", err, res)
			}
			if err := s.Find(st, tc.req, tc.cands, &res); err == nil {
				t.Fatal("no error")
			}
			if res.Found || res.Reason.Code != BadInput || res.Reason.Class != tc.class {
				t.Fatalf("after the error: Found %v, code %v, class %d; want false, %v, %d", res.Found, res.Reason.Code, res.Reason.Class, BadInput, tc.class)
			}
			if got, want := res.Reason.String(), "no search: the request or a candidate was refused"; got != want {
				t.Fatalf("reason %q, want %q", got, want)
			}
			if len(res.Victims)+len(res.IDs)+len(res.Allocation.Members) != 0 || res.GPUs != 0 || res.Cost != 0 || res.Exact {
				t.Fatalf("a victim set or placement left after the error: %+v", res)
			}
		})
	}
	if BadInput.String() != "bad-input" {
		t.Fatalf("code name %q", BadInput.String())
	}
}
