package fairshare

import (
	"errors"
	"math"
	"testing"
	"time"
)

// TestFairTreeTiesUpToRounding: equal charges arriving in another order,
// or decayed in other steps (Decay), round apart in the last bits of the
// usage; Fair Tree compared level fairshares exactly, so siblings that tie
// got ranks a whole rank apart (factor 0.5 against 1, and 1 against 0.667,
// found by a helper's probe). They tie up to rounding now.
func TestFairTreeTiesUpToRounding(t *testing.T) {
	day := 24 * time.Hour
	t.Run("arrival order", func(t *testing.T) {
		tr, err := NewTree(DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"a", "b"} {
			if err := tr.AddAccount("", n, 1); err != nil {
				t.Fatal(err)
			}
		}
		charges := []struct {
			at time.Duration
			g  float64
		}{{5 * day, 200}, {4 * day, 500}, {1 * day, 500}}
		for _, c := range charges { // a: late charges after later ones
			if err := tr.Charge("a", c.g, t0.Add(c.at)); err != nil {
				t.Fatal(err)
			}
		}
		for i := len(charges) - 1; i >= 0; i-- { // b: in time order
			if err := tr.Charge("b", charges[i].g, t0.Add(charges[i].at)); err != nil {
				t.Fatal(err)
			}
		}
		now := t0.Add(20 * day)
		ua, _ := tr.Usage("a", now)
		ub, _ := tr.Usage("b", now)
		if ua == ub {
			t.Fatalf("usages %v and %v round alike: the case no longer tests a tie up to rounding", ua, ub)
		}
		fa, _ := tr.Factor("a", now)
		fb, _ := tr.Factor("b", now)
		if fa != fb || fa != 1 {
			t.Fatalf("same charges in another order: factors %v and %v, want 1 and 1 (usages %v and %v)", fa, fb, ua, ub)
		}
	})
	t.Run("decay steps", func(t *testing.T) {
		cfg := DefaultConfig()
		h := cfg.HalfLife
		build := func() *Tree {
			tr, err := NewTree(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"a", "b", "c"} {
				if err := tr.AddAccount("", n, 1); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []struct {
				who string
				g   float64
				at  time.Time
			}{{"a", 100, t0}, {"b", 50, t0.Add(h)}, {"c", 500, t0.Add(h)}} {
				if err := tr.Charge(c.who, c.g, c.at); err != nil {
					t.Fatal(err)
				}
			}
			return tr
		}
		plain, folded := build(), build()
		for _, d := range []time.Duration{h + h/3, h + h/2, h + 2*h/3} {
			if err := folded.Decay(t0.Add(d)); err != nil {
				t.Fatal(err)
			}
		}
		now := t0.Add(2 * h)
		up, _ := plain.Usage("a", now)
		uf, _ := folded.Usage("a", now)
		if up == uf {
			t.Fatalf("usages %v and %v round alike: the case no longer tests a tie up to rounding", up, uf)
		}
		for _, n := range []string{"a", "b", "c"} {
			fp, _ := plain.Factor(n, now)
			ff, _ := folded.Factor(n, now)
			if fp != ff {
				t.Fatalf("%s: factor %v, and %v after Decay", n, fp, ff)
			}
		}
		// a (100 charged a half-life earlier) and b (50) tie: both rank
		// above c.
		fa, _ := plain.Factor("a", now)
		fb, _ := plain.Factor("b", now)
		fc, _ := plain.Factor("c", now)
		if fa != 1 || fb != 1 || fc >= fa {
			t.Fatalf("factors a %v, b %v, c %v; want a and b 1, c below", fa, fb, fc)
		}
	})
	t.Run("no usage is no tie with usage", func(t *testing.T) {
		if tied(math.Inf(1), 1.5) || tied(1.5, math.Inf(1)) || !tied(math.Inf(1), math.Inf(1)) {
			t.Fatal("an infinite level fairshare (no usage) ties only with another")
		}
	})
}

// TestSetUsageListsEveryBadRecord: a record of an unknown account between
// two of the root reset the root's "seen" mark (an unknown account looks
// up as index 0, the root's), so the root given twice went unreported
// (found by a helper's probe). Both are listed, whatever the order.
func TestSetUsageListsEveryBadRecord(t *testing.T) {
	tr, err := NewTree(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.AddAccount("", "a", 1); err != nil {
		t.Fatal(err)
	}
	root1 := UsageRecord{Account: RootName, GPUSeconds: 1, At: t0}
	root2 := UsageRecord{Account: RootName, GPUSeconds: 2, At: t0}
	unknown := UsageRecord{Account: "nope", GPUSeconds: 1, At: t0}
	for name, recs := range map[string][]UsageRecord{
		"unknown last":    {root1, root2, unknown},
		"unknown between": {root1, unknown, root2},
		"unknown first":   {unknown, root1, root2},
	} {
		t.Run(name, func(t *testing.T) {
			err := tr.SetUsage(recs)
			j, ok := err.(interface{ Unwrap() []error })
			if !ok || len(j.Unwrap()) != 2 || !errors.Is(err, ErrBadCharge) || !errors.Is(err, ErrUnknownAccount) {
				t.Fatalf("want the unknown account and the root given twice, got %v", err)
			}
		})
	}
}
