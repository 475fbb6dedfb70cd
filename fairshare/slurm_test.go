package fairshare

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// t0 is the instant most tests charge at.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// week is the half-life most tests use.
const week = 7 * 24 * time.Hour

func testConfig(algo Algorithm) Config {
	c := DefaultConfig()
	c.Algorithm = algo
	return c
}

// slurmExample builds the tree of the worked example in Slurm's "Classic
// Fairshare Algorithm" documentation and charges its usage at t0:
//
//	root
//	├── A  40 shares
//	│   ├── B  30 shares ── u1  1 share   usage 0.20 of the machine
//	│   └── C  10 shares ─┬ u2  1 share   usage 0.25
//	│                     └ u3  1 share   usage 0
//	└── D  60 shares
//	    ├── E  25 shares ── u4  1 share   usage 0.25
//	    └── F  35 shares ── u5  1 share   usage 0
//
// The documentation normalises usage by the whole machine's, yet its
// users' usage adds up to 0.7 only; the remaining 0.3 belongs to no
// account in the figure, so it is charged to the root (it counts in the
// machine total and nowhere else). In GPU-seconds: u1 200, u2 250, u4 250,
// root 300, total 1000.
func slurmExample(t testing.TB, cfg Config) *Tree {
	t.Helper()
	tr, err := NewTree(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		parent, name string
		shares       float64
	}{
		{"", "A", 40}, {"", "D", 60},
		{"A", "B", 30}, {"A", "C", 10},
		{"D", "E", 25}, {"D", "F", 35},
		{"B", "u1", 1}, {"C", "u2", 1}, {"C", "u3", 1},
		{"E", "u4", 1}, {"F", "u5", 1},
	} {
		if err := tr.AddAccount(a.parent, a.name, a.shares); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		account string
		gpuSec  float64
	}{{"u1", 200}, {"u2", 250}, {"u4", 250}, {RootName, 300}} {
		if err := tr.Charge(c.account, c.gpuSec, t0); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// TestClassicSlurmExample reproduces the documentation's figures: the
// effective usage of every account and the five users' factors to six
// decimals. Decay scales every account's usage alike, so reading three
// half-lives later changes nothing.
func TestClassicSlurmExample(t *testing.T) {
	tr := slurmExample(t, testConfig(Classic))
	for _, at := range []time.Duration{0, 3 * week} {
		t.Run(fmt.Sprintf("after=%v", at), func(t *testing.T) {
			s, err := tr.View(t0.Add(at), nil)
			if err != nil {
				t.Fatal(err)
			}
			// Effective usage, from the documentation's worked lines.
			for name, want := range map[string]float64{
				"A": 0.45, "D": 0.25,
				"B": 0.3875, "C": 0.3, "E": 0.25, "F": 0.25 * 35 / 60,
				"u1": 0.3875, "u2": 0.275, "u3": 0.15, "u4": 0.25, "u5": 0.25 * 35 / 60,
			} {
				a, _ := s.Account(name)
				if math.Abs(a.EffectiveUsage-want) > 1e-12 {
					t.Errorf("%s effective usage = %.12f, want %.12f", name, a.EffectiveUsage, want)
				}
			}
			for _, w := range []struct {
				user       string
				normShares float64
				factor     string
			}{
				{"u1", 0.3, "0.408479"},
				{"u2", 0.05, "0.022097"},
				{"u3", 0.05, "0.125000"},
				{"u4", 0.25, "0.500000"},
				{"u5", 0.35, "0.749154"},
			} {
				a, _ := s.Account(w.user)
				if math.Abs(a.NormShares-w.normShares) > 1e-12 {
					t.Errorf("%s normalised shares = %v, want %v", w.user, a.NormShares, w.normShares)
				}
				f, err := s.Factor(w.user)
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprintf("%.6f", f); got != w.factor {
					t.Errorf("%s factor = %s, want %s", w.user, got, w.factor)
				}
			}
		})
	}
}

// TestFairTreeSlurmExample runs Fair Tree on the same tree. By hand
// (S = shares/siblings' shares, U = usage/parent's usage, LF = S/U):
//
//	root's children: A S=40/100=0.4 U=450/1000=0.45 LF=0.889
//	                 D S=60/100=0.6 U=250/1000=0.25 LF=2.4    -> D first
//	D's children:    F S=35/60 U=0/250 LF=+Inf
//	                 E S=25/60 U=250/250=1 LF=0.417           -> F first
//	F: u5 (sole user, U=0, LF=+Inf)                            rank 5
//	E: u4 (sole user, U=1, LF=1)                               rank 4
//	A's children:    B S=30/40=0.75 U=200/450 LF=1.6875
//	                 C S=10/40=0.25 U=250/450 LF=0.45          -> B first
//	B: u1 (sole user)                                          rank 3
//	C's children:    u3 S=0.5 U=0 LF=+Inf                      rank 2
//	                 u2 S=0.5 U=250/250=1 LF=0.5               rank 1
//
// With N = 5 users the factors are rank/5: u5 1.0, u4 0.8, u1 0.6,
// u3 0.4, u2 0.2 — the same order as classic's
// (0.749154 > 0.5 > 0.408479 > 0.125 > 0.022097).
func TestFairTreeSlurmExample(t *testing.T) {
	fair := slurmExample(t, testConfig(FairTree))
	classic := slurmExample(t, testConfig(Classic))
	fs, err := fair.View(t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := classic.View(t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		user   string
		rank   int
		factor float64
	}{{"u5", 5, 1.0}, {"u4", 4, 0.8}, {"u1", 3, 0.6}, {"u3", 2, 0.4}, {"u2", 1, 0.2}}
	for i, w := range want {
		a, _ := fs.Account(w.user)
		if a.Rank != w.rank || a.Factor != w.factor {
			t.Errorf("%s: rank %d factor %v, want rank %d factor %v", w.user, a.Rank, a.Factor, w.rank, w.factor)
		}
		if i == 0 {
			continue
		}
		prev := want[i-1].user
		cf, _ := cs.Factor(w.user)
		cp, _ := cs.Factor(prev)
		if !(cp > cf) {
			t.Errorf("classic puts %s (%.6f) not ahead of %s (%.6f), Fair Tree does", prev, cp, w.user, cf)
		}
	}
	for name, lf := range map[string]float64{
		"A": 0.4 / 0.45, "D": 2.4, "E": 25.0 / 60, "F": math.Inf(1),
		"B": 1.6875, "C": 0.45, "u2": 0.5, "u3": math.Inf(1),
	} {
		a, _ := fs.Account(name)
		if !(math.Abs(a.LevelFS-lf) < 1e-12 || a.LevelFS == lf) {
			t.Errorf("%s level fairshare = %v, want %v", name, a.LevelFS, lf)
		}
	}
}

// TestClassicDampening checks F = 2^(-UE/S/d): u1's exponent 0.3875/0.3
// halves with d = 2, and d = 0 means 1.
func TestClassicDampening(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    float64
		want float64
	}{
		{"d=0 means 1", 0, math.Exp2(-0.3875 / 0.3)},
		{"d=1", 1, math.Exp2(-0.3875 / 0.3)},
		{"d=2", 2, math.Exp2(-0.3875 / 0.3 / 2)},
		{"d=10", 10, math.Exp2(-0.3875 / 0.3 / 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(Classic)
			cfg.Dampening = tc.d
			f, err := slurmExample(t, cfg).Factor("u1", t0)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(f-tc.want) > 1e-12 {
				t.Errorf("factor = %v, want %v", f, tc.want)
			}
		})
	}
}

// TestZeroShares: an account with no shares gets factor 0 under classic,
// with or without usage, and so do the users of a parent whose children all
// have zero shares. Under Fair Tree a zero-share account ranks after its
// siblings (LF 0), but only among them: b is unused and has shares, so
// b1 and b2 (tied at LF 0 in b) still rank ahead of a1.
func TestZeroShares(t *testing.T) {
	spec, err := ParseText(`
		a shares=1
		a1 parent=a shares=1
		z shares=0
		z1 parent=z shares=5
		b shares=1
		b1 parent=b shares=0
		b2 parent=b shares=0
	`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		algo   Algorithm
		factor map[string]float64
	}{
		// Classic: a has S = 1/2 and all the usage: UE = 1, F = 2^-2.
		{Classic, map[string]float64{"a1": 0.25, "z1": 0, "b1": 0, "b2": 0}},
		// Fair Tree: root order b (+Inf), a (0.5), z (0); N = 4.
		{FairTree, map[string]float64{"b1": 1, "b2": 1, "a1": 0.5, "z1": 0.25}},
	} {
		t.Run(tc.algo.String(), func(t *testing.T) {
			tr, err := BuildTree(spec, testConfig(tc.algo))
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Charge("a1", 100, t0); err != nil {
				t.Fatal(err)
			}
			s, err := tr.View(t0, nil)
			if err != nil {
				t.Fatal(err)
			}
			for u, want := range tc.factor {
				if f, _ := s.Factor(u); f != want {
					t.Errorf("%s factor = %v, want %v\n%s", u, f, want, s)
				}
			}
		})
	}
}

// TestFairTreeTies pins down the tie rule documented in fairtree.go.
func TestFairTreeTies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tree  string
		usage map[string]float64
		want  map[string]int // ranks
	}{
		{
			// c unused (LF +Inf); a and b: S=1/4, U=10/50, LF=1.25 each;
			// d: S=1/4, U=30/50, LF=0.417. Competition ranking 4, 3, 3, 1.
			name:  "tied users share a rank",
			tree:  "p\n a parent=p\n b parent=p\n c parent=p\n d parent=p",
			usage: map[string]float64{"a": 10, "b": 10, "d": 30},
			want:  map[string]int{"c": 4, "a": 3, "b": 3, "d": 1},
		},
		{
			// X and Y both use half with half the shares: LF 1 each, tied,
			// so their users are pooled: x2 and y1 (LF 2) share rank 4,
			// x1 and y2 (LF 0.667) share rank 2. Without merging, X's
			// users would both outrank Y's by name alone.
			name:  "tied accounts are merged",
			tree:  "X\nY\nx1 parent=X\nx2 parent=X\ny1 parent=Y\ny2 parent=Y",
			usage: map[string]float64{"x1": 30, "x2": 10, "y1": 10, "y2": 30},
			want:  map[string]int{"x2": 4, "y1": 4, "x1": 2, "y2": 2},
		},
		{
			// u and A both LF 1: u comes first (rank 3) and A's best user
			// a2 (unused) shares it; a1 (LF 0.5) gets 1.
			name:  "a user tied with an account shares its rank with the account's best user",
			tree:  "u\nA\na1 parent=A\na2 parent=A",
			usage: map[string]float64{"u": 10, "a1": 10},
			want:  map[string]int{"u": 3, "a2": 3, "a1": 1},
		},
		{
			// Nothing used: every LF is +Inf, all tie, all rank N.
			name:  "an unused tree ranks everyone first",
			tree:  "A\nB\na1 parent=A\na2 parent=A\nb1 parent=B\nc",
			usage: nil,
			want:  map[string]int{"a1": 4, "a2": 4, "b1": 4, "c": 4},
		},
		{
			// Zero shares rank last even when unused (LF 0, not +Inf).
			name:  "zero shares rank last",
			tree:  "a\nb shares=0\nc",
			usage: map[string]float64{"a": 5},
			want:  map[string]int{"c": 3, "a": 2, "b": 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := ParseText(tc.tree)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := BuildTree(spec, testConfig(FairTree))
			if err != nil {
				t.Fatal(err)
			}
			for a, u := range tc.usage {
				if err := tr.Charge(a, u, t0); err != nil {
					t.Fatal(err)
				}
			}
			s, err := tr.View(t0, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := tr.Leaves()
			for name, rank := range tc.want {
				a, _ := s.Account(name)
				if a.Rank != rank || a.Factor != float64(rank)/float64(n) {
					t.Errorf("%s: rank %d factor %v, want rank %d factor %v\n%s",
						name, a.Rank, a.Factor, rank, float64(rank)/float64(n), s)
				}
			}
		})
	}
}
