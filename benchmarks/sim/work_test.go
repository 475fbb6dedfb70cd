package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestEntitleMaxMin checks the share gap's entitlement on random demands
// against what defines a max-min fair division of the busy GPUs: the
// parts add up to the busy GPUs, none exceeds its account's demand, and
// an account short of its demand gets no less than any other (else the
// other could give it some). Those three fix the division.
func TestEntitleMaxMin(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 1))
	for c := range 2000 {
		n := 1 + r.IntN(8)
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprint("a", i)
		}
		w := &work{acctNames: names, acctBusy: make([]int, n), acctQueued: make([]int, n), acctJobs: make([]int, n), entitledSecs: make([]float64, n)}
		for a := range n {
			if r.IntN(4) == 0 {
				continue // no work
			}
			w.acctBusy[a], w.acctQueued[a], w.acctJobs[a] = r.IntN(3)*r.IntN(600), r.IntN(2)*(1+r.IntN(600)), 1
			if w.demand(a) == 0 {
				w.acctQueued[a] = 1 + r.IntN(8)
			}
			w.busy += w.acctBusy[a]
			w.byDemand = append(w.byDemand, a)
		}
		w.entitle(1)
		sum, level := 0.0, 0.0
		for _, a := range w.byDemand {
			e := w.entitledSecs[a]
			sum += e
			level = max(level, e)
			if e < -1e-9 || e > float64(w.demand(a))+1e-9 {
				t.Fatalf("case %d: %s asks for %d, entitled to %v", c, names[a], w.demand(a), e)
			}
		}
		if math.Abs(sum-float64(w.busy)) > 1e-6 {
			t.Fatalf("case %d: entitlements add up to %v of %d busy GPUs", c, sum, w.busy)
		}
		for _, a := range w.byDemand {
			if e := w.entitledSecs[a]; e < float64(w.demand(a))-1e-9 && e < level-1e-6 {
				t.Fatalf("case %d: %s asks for %d, entitled to %v, below another's %v", c, names[a], w.demand(a), e, level)
			}
		}
	}
}
