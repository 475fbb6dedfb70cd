package fairshare

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomTree builds a tree of depth 1 to 4 with 1 to 4 children per
// account, raw shares 0 to 10 (zero one time in ten), and integer usage
// (exact in float64, so sums do not round) on about two thirds of the
// accounts, inner ones included. It returns the tree and its text form.
func randomTree(t testing.TB, rng *rand.Rand, algo Algorithm) (*Tree, string) {
	t.Helper()
	tr, err := NewTree(testConfig(algo))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	depth := 1 + rng.IntN(4)
	var grow func(parent string, level int)
	grow = func(parent string, level int) {
		for i := range 1 + rng.IntN(4) {
			name := fmt.Sprintf("%s.%d", parent, i)
			if parent == "" {
				name = fmt.Sprintf("n%d", i)
			}
			shares := float64(1 + rng.IntN(10))
			if rng.IntN(10) == 0 {
				shares = 0
			}
			if err := tr.AddAccount(parent, name, shares); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s parent=%s shares=%g", name, parent, shares)
			if level < depth && rng.IntN(3) > 0 {
				b.WriteByte('\n')
				grow(name, level+1)
				continue
			}
			if rng.IntN(3) > 0 {
				u := float64(rng.IntN(1000))
				if err := tr.Charge(name, u, t0); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, " usage=%g", u)
			}
			b.WriteByte('\n')
		}
	}
	grow("", 1)
	return tr, b.String()
}

// TestPropertyGrowingUsageNeverGainsRank is acceptance point 4: for random
// trees and usage, a user whose usage only grows never gains rank against
// sibling users whose usage does not change: not ahead before means not
// ahead after, and (Fair Tree) behind before means behind after. Charges
// happen at one instant, so nothing decays. Fair Tree ranks are exact;
// classic factors with a 1e-12 slack for rounding, since siblings that tie
// mathematically may differ in the last bits.
func TestPropertyGrowingUsageNeverGainsRank(t *testing.T) {
	const trials = 400
	for _, algo := range []Algorithm{Classic, FairTree} {
		t.Run(algo.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2025, uint64(algo)))
			slack := 0.0
			if algo == Classic {
				slack = 1e-12
			}
			checked := 0
			for trial := range trials {
				tr, desc := randomTree(t, rng, algo)
				// Pick a leaf with at least one leaf sibling.
				var user string
				var sibs []string
				for name := range tr.st.index {
					i := tr.st.index[name]
					if !tr.st.isLeaf(i) {
						continue
					}
					var ss []string
					p := tr.st.nodes[i].parent
					for c := tr.st.nodes[p].firstChild; c != none; c = tr.st.nodes[c].nextSibling {
						if c != i && tr.st.isLeaf(c) {
							ss = append(ss, tr.st.nodes[c].name)
						}
					}
					if len(ss) > 0 && (user == "" || name < user) {
						user, sibs = name, ss
					}
				}
				if user == "" {
					continue
				}
				checked++
				prev, err := tr.View(t0, nil)
				if err != nil {
					t.Fatal(err)
				}
				for step := range 5 {
					add := float64(1 + rng.IntN(2000))
					if err := tr.Charge(user, add, t0); err != nil {
						t.Fatal(err)
					}
					cur, err := tr.View(t0, nil)
					if err != nil {
						t.Fatal(err)
					}
					fu0, _ := prev.Factor(user)
					fu1, _ := cur.Factor(user)
					for _, s := range sibs {
						fs0, _ := prev.Factor(s)
						fs1, _ := cur.Factor(s)
						behindBefore := fu0 < fs0 && fu1 >= fs1 && algo == FairTree
						if behindBefore || (fu0 <= fs0 && fu1 > fs1+slack) {
							t.Fatalf("trial %d step %d: %s (charged %g more) overtook sibling %s: "+
								"%v <= %v before, %v > %v after\ntree:\n%s\nbefore:\n%s\nafter:\n%s",
								trial, step, user, add, s, fu0, fs0, fu1, fs1, desc, prev, cur)
						}
					}
					prev = cur
				}
			}
			if checked < trials/2 {
				t.Fatalf("only %d of %d random trees had sibling users", checked, trials)
			}
		})
	}
}
