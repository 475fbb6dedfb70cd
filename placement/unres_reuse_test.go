package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestUnresolvableReusedPlacer: the oracle builds a Placer per case, so
// the verdicts a Placer remembers between requests are never read there.
// Here one Placer per cluster decides many random requests on many random
// states, and each failure's Unresolvable verdict and exclusion counts
// must still match the brute force.
func TestUnresolvableReusedPlacer(t *testing.T) {
	for _, tt := range []struct {
		name  string
		masks bool // keep the random Allowed and Excluded sets
		seed  uint64
	}{
		{"without node sets (remembered verdicts)", false, 31},
		{"with node sets", true, 32},
	} {
		t.Run(tt.name, func(t *testing.T) { checkReusedPlacer(t, tt.masks, tt.seed) })
	}
}

func checkReusedPlacer(t *testing.T, masks bool, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	failed, never := 0, 0
	for k := range 200 {
		c := randomCluster(r, 12)
		p := New(c, Options{})
		for q := range 60 {
			s := randomState(r, c)
			req := randomRequest(r, c)
			if !masks {
				req.Allowed, req.Excluded = nil, nil
			}
			res, err := p.Place(s, &req, nil)
			if err != nil {
				if !errors.Is(err, ErrBadRequest) {
					t.Fatal(err)
				}
				continue
			}
			if res.Placed {
				continue
			}
			failed++
			b := newBrute(c, s, req)
			want := !b.anyValid(true, false)
			if want {
				never++
			}
			ctx := fmt.Sprintf("cluster %d request %d: %s\n%s%s", k, q, req.String(), c.Describe(), s.Describe())
			if res.Reason.Unresolvable != want {
				t.Fatalf("%s\nunresolvable %v, brute force %v (%s)", ctx, res.Reason.Unresolvable, want, res.Reason)
			}
			if e := b.exclusions(); res.Reason.Excluded != e {
				t.Fatalf("%s\nexclusions %+v, brute force %+v", ctx, res.Reason.Excluded, e)
			}
		}
	}
	t.Logf("%d failures, %d unresolvable", failed, never)
	if never < failed/10 || never > failed*9/10 {
		t.Errorf("unbalanced cases: %d failures, %d unresolvable", failed, never)
	}
}
