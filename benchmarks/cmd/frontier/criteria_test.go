package main

import (
	"strings"
	"testing"
	"time"
)

// TestCriteria reads made-up rows (sums over two seeds, as the table
// keeps them) against both issues' criteria: a figure equal to its bound
// is met, one just past it missed, and rows without a policy the
// criterion reads give no verdict.
func TestCriteria(t *testing.T) {
	h := time.Hour
	limited := func() map[string]*agg {
		return map[string]*agg{
			"greedy":   {idlePct: 2 * 0.05, p95: 18 * h, max: 19 * h, share: 2 * 0.07},
			"easy-age": {idlePct: 2 * 0.04, p95: 9 * h, max: 10 * h, share: 2 * 0.075},
			"default":  {idlePct: 2 * 0.06, p95: 9 * h, max: 10 * h, share: 2 * 0.075},
		}
	}
	unlimited := func() map[string]*agg {
		return map[string]*agg{
			"fifo":    {util: 2 * 0.74, p95Over64: 11 * h, maxOver64: 12 * h},
			"greedy":  {util: 2 * 0.82, idle: 2 * 3000},
			"default": {util: 2 * 0.80, idle: 2 * 4000, held: 2 * 1000, p95Over64: 11 * h, maxOver64: 12 * h},
		}
	}
	for _, tc := range []struct {
		name     string
		rows     map[string]*agg
		noLimits float64
		missed   []string // goals that miss, by a word of their text
	}{
		{"18 at every bound", limited(), 0, nil},
		{"18 idle past a point", with(limited(), "default", func(a *agg) { a.idlePct += 0.0002 }), 0, []string{"idle"}},
		{"18 max a minute longer", with(limited(), "default", func(a *agg) { a.max += time.Minute }), 0, []string{"max"}},
		{"18 share 0.0001 worse", with(limited(), "default", func(a *agg) { a.share += 2 * 0.0001 }), 0, []string{"share"}},
		{"13 at every bound", unlimited(), 1, nil},
		{"13 utilisation past 2 points", with(unlimited(), "default", func(a *agg) { a.util -= 2 * 0.0001 }), 1, []string{"utilisation"}},
		{"13 waits longer than fifo's", with(unlimited(), "default", func(a *agg) { a.p95Over64++; a.maxOver64++ }), 1, []string{"p95", "max"}},
		{"13 idle over greedy's plus held", with(unlimited(), "default", func(a *agg) { a.idle++ }), 1, []string{"idle"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			issue, goals := criteria(tc.rows, 2, tc.noLimits)
			if len(goals) != 4 || issue == "" {
				t.Fatalf("%q: %d goals, want 4", issue, len(goals))
			}
			var missed []string
			for _, g := range goals {
				if !g.met {
					missed = append(missed, g.what)
				}
			}
			if len(missed) != len(tc.missed) {
				t.Fatalf("missed %q, want goals with %q", missed, tc.missed)
			}
			for i, m := range missed {
				if !strings.Contains(m, tc.missed[i]) {
					t.Errorf("missed %q, want a goal with %q", m, tc.missed[i])
				}
			}
		})
	}
	t.Run("no verdict", func(t *testing.T) {
		rows := limited()
		delete(rows, "easy-age")
		for _, c := range []struct {
			rows     map[string]*agg
			noLimits float64
		}{{rows, 0}, {limited(), 1}, {unlimited(), 0}, {limited(), 0.5}} {
			if issue, goals := criteria(c.rows, 2, c.noLimits); goals != nil || issue != "" {
				t.Errorf("no-limits %v: %q, %d goals; want none", c.noLimits, issue, len(goals))
			}
		}
	})
}

// with changes one row of rows and returns them.
func with(rows map[string]*agg, name string, f func(*agg)) map[string]*agg {
	f(rows[name])
	return rows
}
