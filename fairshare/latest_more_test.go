package fairshare

import (
	"math"
	"testing"
	"time"
)

// TestLatestAtEarliestInstant: the earliest instant the package accepts,
// time.Unix(0, math.MinInt64) (1677-09-21), is the value the tree used to
// mean "told no time yet", so a tree told only that instant, by Charge,
// Decay or SetUsage, answered Latest with false, as if never told, and so
// did its clones.
func TestLatestAtEarliestInstant(t *testing.T) {
	earliest := time.Unix(0, math.MinInt64)
	for _, tc := range []struct {
		name string
		tell func(*Tree) error
	}{
		{"charge", func(tr *Tree) error { return tr.Charge("a", 1, earliest) }},
		{"zero charge", func(tr *Tree) error { return tr.Charge("a", 0, earliest) }},
		{"decay", func(tr *Tree) error { return tr.Decay(earliest) }},
		{"set usage", func(tr *Tree) error {
			return tr.SetUsage([]UsageRecord{{Account: "a", GPUSeconds: 1, At: earliest}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := NewTree(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.AddAccount("", "a", 1); err != nil {
				t.Fatal(err)
			}
			if _, ok := tr.Latest(); ok {
				t.Fatal("a fresh tree reports a latest instant")
			}
			if err := tc.tell(tr); err != nil {
				t.Fatal(err)
			}
			for who, x := range map[string]*Tree{"tree": tr, "clone": tr.Clone()} {
				at, ok := x.Latest()
				if !ok || !at.Equal(earliest) {
					t.Errorf("%s: Latest() = %v, %v; want %v, true", who, at, ok, earliest.UTC())
				}
			}
		})
	}
	t.Run("empty set usage tells nothing", func(t *testing.T) {
		tr, err := NewTree(DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.SetUsage(nil); err != nil {
			t.Fatal(err)
		}
		if at, ok := tr.Latest(); ok {
			t.Fatalf("Latest() = %v, true after SetUsage(nil)", at)
		}
	})
}
