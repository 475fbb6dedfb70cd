package gang

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestCheckMatchesAdmit is Check's contract on random gangs (one to three
// members, elastic, required levels, co-location) over random fills of
// two clusters: Check gives the same admission and the same placement as
// Admit on a copy of the state, and leaves its own state unchanged, for
// one-member gangs (placed without allocating) and the others (admitted
// and released) alike; the Admitter used for Check then admits as a fresh
// one does.
func TestCheckMatchesAdmit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     *topology.Cluster
		cases int
	}{
		{"nodes=250", topology.Default2000(), 3000},
		{"nodes=12500", topology.FatTree100k(), 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases := tc.cases
			if testing.Short() {
				cases /= 5
			}
			r := rand.New(rand.NewPCG(11, uint64(tc.c.NumNodes())))
			l := NewLedger(tc.c, Options{})
			checker := NewAdmitter(tc.c, Options{})
			var got, want Allocation
			single, admitted := 0, 0
			for i := range cases {
				// Keep the cluster between empty and nearly full.
				if l.State().UsedGPUs() > tc.c.TotalGPUs()*9/10 {
					for _, id := range l.IDs()[:l.Len()/2] {
						if err := l.Release(id); err != nil {
							t.Fatal(err)
						}
					}
				}
				fill := randomGang(r, tc.c, fmt.Sprintf("fill%d", i))
				if _, err := l.Admit(fill); err != nil {
					t.Fatal(err)
				}
				g := randomGang(r, tc.c, fmt.Sprintf("g%d", i))
				if r.IntN(2) == 0 {
					g.Members, g.Colocate = g.Members[:1], Colocation{}
				}
				s := l.State().Clone()
				before := s.Clone()
				res, err := checker.Check(s, g, &got)
				if err != nil {
					t.Fatalf("case %d: Check: %v", i, err)
				}
				if !s.Equal(before) {
					t.Fatalf("case %d: Check of %d member(s) changed the state", i, len(g.Members))
				}
				fresh := NewAdmitter(tc.c, Options{})
				wantRes, err := fresh.Admit(before, g, &want)
				if err != nil {
					t.Fatalf("case %d: Admit: %v", i, err)
				}
				// All of it, the reason's unexported unit description too.
				if d := cmp.Diff(wantRes, res, cmp.Exporter(func(reflect.Type) bool { return true })); d != "" {
					t.Fatalf("case %d: Check's admission differs from Admit's (-admit +check):\n%s", i, d)
				}
				if res.Admitted {
					admitted++
					if d := cmp.Diff(want, got); d != "" {
						t.Fatalf("case %d: Check's placement differs from Admit's (-admit +check):\n%s", i, d)
					}
				}
				if len(g.Members) == 1 && g.Colocate.Level == "" {
					single++
				}
			}
			if single == 0 || single == cases || admitted == 0 || admitted == cases {
				t.Fatalf("degenerate sample: %d cases, %d one-member, %d admitted", cases, single, admitted)
			}
		})
	}
}
