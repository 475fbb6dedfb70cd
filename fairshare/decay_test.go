package fairshare

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// relClose reports whether a and b agree within tol, relative to the larger
// magnitude (absolute below 1).
func relClose(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*max(1, math.Abs(a), math.Abs(b))
}

func mustUsage(t testing.TB, tr *Tree, account string, at time.Time) float64 {
	t.Helper()
	u, err := tr.Usage(account, at)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustFactor(t testing.TB, tr *Tree, account string, at time.Time) float64 {
	t.Helper()
	f, err := tr.Factor(account, at)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDecayHalfLife: after one half-life usage is halved (exactly: the
// multiplier is 2^-1), after two it is a quarter, and with no half-life
// it does not decay.
func TestDecayHalfLife(t *testing.T) {
	for _, tc := range []struct {
		name     string
		halfLife time.Duration
		after    time.Duration
		want     float64
	}{
		{"zero elapsed", week, 0, 1000},
		{"one half-life", week, week, 500},
		{"two half-lives", week, 2 * week, 250},
		{"half a half-life", week, week / 2, 1000 / math.Sqrt2},
		{"one-hour half-life, one day", time.Hour, 24 * time.Hour, 1000.0 / (1 << 24)},
		{"no decay", 0, 52 * week, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(Classic)
			cfg.HalfLife = tc.halfLife
			tr := slurmExample(t, cfg) // machine total 1000 at t0
			got := mustUsage(t, tr, RootName, t0.Add(tc.after))
			if !relClose(got, tc.want, 1e-15) {
				t.Errorf("usage = %.17g, want %.17g", got, tc.want)
			}
		})
	}
}

// TestChargesAtSameInstantAdd: charges at one instant add exactly, and
// count for every ancestor.
func TestChargesAtSameInstantAdd(t *testing.T) {
	tr := slurmExample(t, testConfig(Classic))
	for _, c := range []float64{10, 5, 0.25} {
		if err := tr.Charge("u3", c, t0); err != nil {
			t.Fatal(err)
		}
	}
	for account, want := range map[string]float64{"u3": 15.25, "C": 265.25, "A": 465.25, RootName: 1015.25} {
		if got := mustUsage(t, tr, account, t0); got != want {
			t.Errorf("usage of %s = %v, want %v", account, got, want)
		}
	}
}

// TestLatest: a fresh tree has been told no time; Latest then follows
// the latest charge (a late one does not move it back), Decay and
// SetUsage, and is the instant before which reads fail.
func TestLatest(t *testing.T) {
	fresh, err := NewTree(testConfig(Classic))
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := fresh.Latest(); ok {
		t.Fatalf("a fresh tree's Latest = %v, true", at)
	}
	tr := slurmExample(t, testConfig(Classic)) // charged at t0
	steps := []struct {
		name string
		do   func() error
		want time.Time
	}{
		{"charge", func() error { return tr.Charge("u3", 10, t0.Add(time.Hour)) }, t0.Add(time.Hour)},
		{"a late charge", func() error { return tr.Charge("u3", 10, t0) }, t0.Add(time.Hour)},
		{"decay", func() error { return tr.Decay(t0.Add(2 * time.Hour)) }, t0.Add(2 * time.Hour)},
		{"set usage", func() error {
			return tr.SetUsage([]UsageRecord{{Account: "u3", GPUSeconds: 1, At: t0.Add(3 * time.Hour)}})
		}, t0.Add(3 * time.Hour)},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if at, ok := tr.Latest(); !ok || !at.Equal(st.want) {
			t.Errorf("after %s: Latest = %v, %v; want %v", st.name, at, ok, st.want)
		}
		if _, err := tr.Usage("u3", st.want.Add(-1)); !errors.Is(err, ErrTimeTravel) {
			t.Errorf("after %s: a read just before Latest: %v, want ErrTimeTravel", st.name, err)
		}
	}
}

// TestDecayIndependentOfReads is acceptance point 3: usage and factor at
// t do not depend on how often they were read, or decayed into storage,
// between t0 and t, nor on charges being interleaved with those reads.
func TestDecayIndependentOfReads(t *testing.T) {
	const steps = 1000
	end := t0.Add(3 * week)
	// Charges at fixed instants between t0 and end, the same for all trees.
	charges := []struct {
		at      time.Duration
		account string
		gpuSec  float64
	}{
		{week / 3, "u3", 120}, {week, "u5", 400}, {2 * week, "u1", 75.5}, {2*week + time.Hour, "u2", 33},
	}
	for _, algo := range []Algorithm{Classic, FairTree} {
		t.Run(algo.String(), func(t *testing.T) {
			once := slurmExample(t, testConfig(algo))
			read := slurmExample(t, testConfig(algo))
			folded := slurmExample(t, testConfig(algo))
			ci := 0
			for i := 1; i < steps; i++ {
				at := t0.Add(time.Duration(i) * (end.Sub(t0) / steps))
				for ci < len(charges) && t0.Add(charges[ci].at).Before(at) {
					c := charges[ci]
					for _, tr := range []*Tree{once, read, folded} {
						if err := tr.Charge(c.account, c.gpuSec, t0.Add(c.at)); err != nil {
							t.Fatal(err)
						}
					}
					ci++
				}
				mustUsage(t, read, "u1", at)
				mustFactor(t, read, "u2", at)
				if err := folded.Decay(at); err != nil {
					t.Fatal(err)
				}
			}
			for _, account := range []string{"u1", "u2", "u3", "u4", "u5"} {
				u1, u2, u3 := mustUsage(t, once, account, end), mustUsage(t, read, account, end), mustUsage(t, folded, account, end)
				f1, f2, f3 := mustFactor(t, once, account, end), mustFactor(t, read, account, end), mustFactor(t, folded, account, end)
				if u1 != u2 || f1 != f2 {
					t.Errorf("%s: reading changed usage %v -> %v or factor %v -> %v", account, u1, u2, f1, f2)
				}
				if !relClose(u1, u3, 1e-9) || !relClose(f1, f3, 1e-9) {
					t.Errorf("%s: %d decays changed usage %v -> %v or factor %v -> %v", account, steps, u1, u3, f1, f3)
				}
			}
		})
	}
}

// TestLateCharges: a charge earlier than the account's last update is
// decayed from its own instant, so the order in which charges arrive does
// not matter.
func TestLateCharges(t *testing.T) {
	type charge struct {
		at     time.Duration
		gpuSec float64
	}
	var cs []charge
	rng := rand.New(rand.NewPCG(7, 11))
	for range 50 {
		cs = append(cs, charge{time.Duration(rng.Int64N(int64(4 * week))), float64(rng.IntN(1000))})
	}
	inOrder, shuffled := slurmExample(t, testConfig(Classic)), slurmExample(t, testConfig(Classic))
	sorted := append([]charge(nil), cs...)
	for i := range sorted { // insertion sort by time
		for j := i; j > 0 && sorted[j].at < sorted[j-1].at; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, c := range sorted {
		if err := inOrder.Charge("u3", c.gpuSec, t0.Add(c.at)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cs {
		if err := shuffled.Charge("u3", c.gpuSec, t0.Add(c.at)); err != nil {
			t.Fatal(err)
		}
	}
	end := t0.Add(5 * week)
	a, b := mustUsage(t, inOrder, "u3", end), mustUsage(t, shuffled, "u3", end)
	if !relClose(a, b, 1e-12) {
		t.Errorf("usage in order %v, shuffled %v", a, b)
	}
}

// TestTimeTravel: reads and decays before the latest update fail; charges
// before it do not.
func TestTimeTravel(t *testing.T) {
	tr := slurmExample(t, testConfig(FairTree))
	if err := tr.Charge("u1", 10, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	early := t0.Add(time.Minute)
	for name, err := range map[string]error{
		"Usage":    func() error { _, err := tr.Usage("u1", early); return err }(),
		"OwnUsage": func() error { _, err := tr.OwnUsage("u1", early); return err }(),
		"Factor":   func() error { _, err := tr.Factor("u1", early); return err }(),
		"View":     func() error { _, err := tr.View(early, nil); return err }(),
		"Prioritize": func() error {
			_, err := tr.Prioritize(nil, early, nil)
			return err
		}(),
		"Decay": tr.Decay(early),
	} {
		if !errors.Is(err, ErrTimeTravel) {
			t.Errorf("%s before the latest update: err = %v, want ErrTimeTravel", name, err)
		}
	}
	if err := tr.Charge("u4", 1, early); err != nil {
		t.Errorf("late charge: %v", err)
	}
	if _, err := tr.Usage("u1", t0.Add(time.Hour)); err != nil {
		t.Errorf("read at the latest update: %v", err)
	}
}

// TestBadTimes: the zero time and instants beyond int64 nanoseconds are
// rejected, naming the account.
func TestBadTimes(t *testing.T) {
	tr := slurmExample(t, testConfig(FairTree))
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"zero", time.Time{}},
		{"year 1600", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year 2300", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tr.Charge("u1", 1, tc.at)
			if !errors.Is(err, ErrBadTime) {
				t.Errorf("Charge: err = %v, want ErrBadTime", err)
			}
			if err != nil && !strings.Contains(err.Error(), `"u1"`) {
				t.Errorf("error %q does not name the account", err)
			}
			if _, err := tr.View(tc.at, nil); !errors.Is(err, ErrBadTime) {
				t.Errorf("View: err = %v, want ErrBadTime", err)
			}
		})
	}
}

// TestOwnUsageRestores: saving every account's own usage at one instant
// and charging it into a tree built from the TreeSpec restores usage and
// factors.
func TestOwnUsageRestores(t *testing.T) {
	src := slurmExample(t, testConfig(FairTree))
	if err := src.Charge("C", 40, t0.Add(time.Hour)); err != nil { // usage on an account itself
		t.Fatal(err)
	}
	at := t0.Add(2 * week)
	dst, err := BuildTree(src.Spec(), src.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{RootName}, accountNames(src)...) {
		u, err := src.OwnUsage(name, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := dst.Charge(name, u, at); err != nil {
			t.Fatal(err)
		}
	}
	later := at.Add(week)
	for _, name := range accountNames(src) {
		if a, b := mustUsage(t, src, name, later), mustUsage(t, dst, name, later); !relClose(a, b, 1e-12) {
			t.Errorf("%s usage %v, restored %v", name, a, b)
		}
	}
	for _, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
		if a, b := mustFactor(t, src, u, later), mustFactor(t, dst, u, later); a != b {
			t.Errorf("%s factor %v, restored %v", u, a, b)
		}
	}
}

func accountNames(tr *Tree) []string {
	var names []string
	for _, a := range tr.Spec().Accounts {
		names = append(names, a.Name)
	}
	return names
}

// TestUsageRecordsRestore: UsageRecords and SetUsage restore usage bit for
// bit, the root's own usage included (a charge may name the root, and
// under Classic it counts in the total every factor divides by).
func TestUsageRecordsRestore(t *testing.T) {
	for _, alg := range []Algorithm{Classic, FairTree} {
		t.Run(alg.String(), func(t *testing.T) {
			src := slurmExample(t, testConfig(alg))
			if err := src.Charge(RootName, 300, t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := src.Charge("C", 40, t0.Add(2*time.Hour)); err != nil {
				t.Fatal(err)
			}
			recs := src.UsageRecords()
			if len(recs) == 0 || recs[0].Account != RootName {
				t.Fatalf("records %+v: want the root's first", recs)
			}
			dst, err := BuildTree(src.Spec(), src.Config())
			if err != nil {
				t.Fatal(err)
			}
			if err := dst.SetUsage(recs); err != nil {
				t.Fatal(err)
			}
			later := t0.Add(week)
			for _, name := range append([]string{RootName}, accountNames(src)...) {
				if a, b := mustUsage(t, src, name, later), mustUsage(t, dst, name, later); a != b {
					t.Errorf("%s usage %v, restored %v", name, a, b)
				}
			}
			for _, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
				if a, b := mustFactor(t, src, u, later), mustFactor(t, dst, u, later); a != b {
					t.Errorf("%s factor %v, restored %v", u, a, b)
				}
			}
			twice := append(recs[:1:1], UsageRecord{Account: "", GPUSeconds: 1, At: t0})
			if err := dst.SetUsage(twice); !errors.Is(err, ErrBadCharge) || !strings.Contains(err.Error(), "given twice") {
				t.Errorf("the root named twice (as %q and %q): %v", RootName, "", err)
			}
		})
	}
}

// TestUsageBounded: usage and shares stay finite, so factors stay in
// [0, 1]: a charge that would take an account past MaxUsage is refused
// and changes nothing, and so is a record above it; shares above
// MaxShares are refused.
func TestUsageBounded(t *testing.T) {
	tr := slurmExample(t, testConfig(Classic))
	if err := tr.Charge("u1", 0.6e300, t0); err != nil {
		t.Fatal(err)
	}
	for _, g := range []float64{0.6e300, math.MaxFloat64} {
		if err := tr.Charge("u1", g, t0); !errors.Is(err, ErrBadCharge) || !strings.Contains(err.Error(), `account "u1" would take its usage past MaxUsage`) {
			t.Errorf("charge of %v: %v", g, err)
		}
	}
	if u := mustUsage(t, tr, "u1", t0); u != 0.6e300 {
		t.Errorf("usage %v after refused charges, want 0.6e300", u)
	}
	if f := mustFactor(t, tr, "u1", t0); !(f >= 0 && f <= 1) {
		t.Errorf("factor %v out of [0, 1]", f)
	}
	if err := tr.SetUsage([]UsageRecord{{Account: "u2", GPUSeconds: 2e300, At: t0}}); !errors.Is(err, ErrBadCharge) {
		t.Errorf("a record above MaxUsage: %v", err)
	}
	if err := tr.AddAccount(RootName, "big", MaxShares+1); !errors.Is(err, ErrBadShares) {
		t.Errorf("shares above MaxShares: %v", err)
	}
	if err := tr.AddAccount(RootName, "largest", MaxShares); err != nil {
		t.Errorf("shares of MaxShares: %v", err)
	}
}

// TestDecayedSeconds: the usage of one GPU used for d is the integral of
// the decay over d (checked against a fine Riemann sum), d itself without
// a half-life, nothing for d <= 0; and charging an interval in pieces,
// each piece's DecayedSeconds at its end, gives the usage of charging it
// whole, however it is cut.
func TestDecayedSeconds(t *testing.T) {
	hl := time.Hour
	for _, tc := range []struct {
		name string
		d    time.Duration
	}{
		{"a second", time.Second},
		{"a half-life", time.Hour},
		{"four half-lives", 4 * time.Hour},
		{"twenty half-lives", 20 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const steps = 200000
			dt := tc.d.Seconds() / steps
			var sum float64
			for i := range steps {
				age := (float64(i) + 0.5) * dt // midpoint, seconds before the end
				sum += dt * math.Exp2(-age/hl.Seconds())
			}
			if got := DecayedSeconds(tc.d, hl); !relClose(got, sum, 1e-6) {
				t.Errorf("DecayedSeconds(%v, %v) = %v, integral %v", tc.d, hl, got, sum)
			}
			if got := DecayedSeconds(tc.d, 0); got != tc.d.Seconds() {
				t.Errorf("without a half-life: %v, want %v", got, tc.d.Seconds())
			}
		})
	}
	if got, limit := DecayedSeconds(365*24*time.Hour, hl), hl.Seconds()/math.Ln2; !relClose(got, limit, 1e-12) {
		t.Errorf("a GPU used for a year counts %v, want the limit half-life/ln 2 = %v", got, limit)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if got := DecayedSeconds(d, hl); got != 0 {
			t.Errorf("DecayedSeconds(%v) = %v, want 0", d, got)
		}
	}

	t.Run("independent of how the interval is cut", func(t *testing.T) {
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		end := start.Add(4 * time.Hour)
		newTree := func() *Tree {
			cfg := DefaultConfig()
			cfg.HalfLife = hl
			tr, err := NewTree(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.AddAccount(RootName, "a", 1); err != nil {
				t.Fatal(err)
			}
			return tr
		}
		whole := newTree()
		if err := whole.Charge("a", 8*DecayedSeconds(end.Sub(start), hl), end); err != nil {
			t.Fatal(err)
		}
		want := mustUsage(t, whole, "a", end)
		rng := rand.New(rand.NewPCG(1, 2))
		for trial := range 20 {
			tr := newTree()
			last := start
			for last.Before(end) {
				at := last.Add(time.Duration(rng.Int64N(int64(time.Hour))) + time.Nanosecond)
				if at.After(end) {
					at = end
				}
				if err := tr.Charge("a", 8*DecayedSeconds(at.Sub(last), hl), at); err != nil {
					t.Fatal(err)
				}
				last = at
			}
			if got := mustUsage(t, tr, "a", end); !relClose(got, want, 1e-9) {
				t.Errorf("trial %d: usage %v, whole interval %v", trial, got, want)
			}
		}
	})
}
