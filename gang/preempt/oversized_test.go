package preempt

import (
	"math"
	"testing"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestOversizedPreemptor checks that a preemptor asking for more GPUs than
// an int holds (a valid spec: more than the cluster has is not malformed)
// gets a verdict that no victim set helps because it can never fit, and
// neither a panic nor a wrapped-around GPU count.
func TestOversizedPreemptor(t *testing.T) {
	huge := math.MaxInt/8 + 1 // huge x 8 GPUs wraps around
	cases := []struct {
		name    string
		members []gang.Member
	}{
		{"nodes x GPUs", []gang.Member{{Name: "w", Request: placement.NodesOf(huge, 8)}}},
		{"whole nodes", []gang.Member{{Name: "w", Request: placement.WholeNodes(huge)}}},
		{"elastic at a huge minimum", []gang.Member{{Name: "w", Request: placement.NodesOf(huge+1, 8), Min: huge}}},
		{"second member", []gang.Member{
			{Name: "l", Request: placement.NodesOf(1, 1)},
			{Name: "w", Request: placement.NodesOf(huge, 8)},
		}},
		{"members summing past an int", []gang.Member{
			{Name: "a", Request: placement.TotalGPUs(math.MaxInt)},
			{Name: "b", Request: placement.NodesOf(huge, 8)},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, l := fullCluster(t)
			spec := &gang.Spec{ID: "big", Members: tc.members}
			if err := spec.Validate(c); err != nil {
				t.Fatalf("Validate: %v (want a valid spec)", err)
			}
			a, _ := l.Get("batch")
			cands := []Candidate{{ID: "batch", Alloc: a, Policy: Requeue, Cost: 100}}
			s, err := NewSearcher(c, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			var v Verdict
			var findErr error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("Find panicked: %v", r)
					}
				}()
				findErr = s.Find(l.State(), &Preemptor{Gang: spec, Class: 1}, cands, &v)
			}()
			if findErr != nil {
				t.Fatalf("Find: %v", findErr)
			}
			if v.Found || v.Reason.Code != NoVictims || !v.Reason.Admission.Reason.Unresolvable {
				t.Errorf("verdict found=%v %v (code %v); want no victims, the gang can never fit", v.Found, v.Reason, v.Reason.Code)
			}
		})
	}
}
