package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/benchmarks/sim"
)

// sums returns a row as the table keeps it over seeds: each mean figure
// summed seed by seed (so a bound is met or missed as in a real run),
// util both over the window and before the drain, waits and counts as
// given.
func sums(seeds int, idlePct, util, share, idle, held float64, a agg) *agg {
	for range seeds {
		a.idlePct += idlePct
		a.util += util
		a.preDrain += util
		a.share += share
		a.idle += idle
		a.held += held
	}
	return &a
}

// TestCriteria reads made-up rows against both issues' criteria: a
// figure at its bound is met (over a range of values and seed counts, as
// the seeds' sums round), one past it missed, one better met; a trace
// without a job over 64 GPUs has no verdict on those waits; rows without
// a policy the criterion reads give none at all.
func TestCriteria(t *testing.T) {
	h := time.Hour
	limited := func(seeds int, idle, bound float64) map[string]*agg {
		return map[string]*agg{
			"greedy":   sums(seeds, bound-0.01, 0, 0.07, 0, 0, agg{p95: 18 * h, max: 19 * h}),
			"easy-age": sums(seeds, 0.04, 0, 0.075, 0, 0, agg{p95: 9 * h, max: 10 * h}),
			"default":  sums(seeds, idle, 0, 0.075, 0, 0, agg{p95: 9 * h, max: 10 * h}),
		}
	}
	unlimited := func(seeds int, util, greedy float64) map[string]*agg {
		return map[string]*agg{
			"fifo":    sums(seeds, 0, 0.74, 0, 0, 0, agg{p95Over64: 11 * h, maxOver64: 12 * h, over64: 3 * seeds}),
			"greedy":  sums(seeds, 0, greedy, 0, 3000, 0, agg{}),
			"default": sums(seeds, 0, util, 0, 4000, 1000, agg{p95Over64: 11 * h, maxOver64: 12 * h, over64: 3 * seeds}),
		}
	}
	missed := func(t *testing.T, rows map[string]*agg, seeds int, noLimits float64, want ...string) {
		t.Helper()
		issue, goals, why := criteria(rows, seeds, noLimits)
		if len(goals) != 4 || issue == "" || why != "" {
			t.Fatalf("%q: %d goals (%s), want 4", issue, len(goals), why)
		}
		var got []string
		for _, g := range goals {
			if !g.met && !g.na {
				got = append(got, g.what)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("missed %q, want goals with %q", got, want)
		}
		for i, m := range got {
			if !strings.Contains(m, want[i]) {
				t.Errorf("missed %q, want a goal with %q", m, want[i])
			}
		}
	}
	for _, seeds := range []int{1, 2, 3, 6} {
		t.Run(fmt.Sprintf("at the bounds/seeds=%d", seeds), func(t *testing.T) {
			for k := 1; k <= 99; k++ {
				b := float64(k) / 100
				missed(t, limited(seeds, b, b), seeds, 0)
				missed(t, unlimited(seeds, b, b+0.02), seeds, 1)
			}
		})
	}
	for _, tc := range []struct {
		name     string
		rows     map[string]*agg
		seeds    int
		noLimits float64
		missed   []string
	}{
		{"18 better on each", with(limited(3, 0.05, 0.06), "default", func(a *agg) { a.p95 -= h; a.max -= h; a.share -= 0.003 }), 3, 0, nil},
		{"18 idle past a point", limited(3, 0.0601, 0.06), 3, 0, []string{"idle"}},
		{"18 p95 a second longer", with(limited(3, 0.05, 0.06), "default", func(a *agg) { a.p95 += time.Second }), 3, 0, []string{"p95"}},
		{"18 max a second longer", with(limited(3, 0.05, 0.06), "default", func(a *agg) { a.max += time.Second }), 3, 0, []string{"max"}},
		{"18 share 0.0001 worse", with(limited(3, 0.05, 0.06), "default", func(a *agg) { a.share += 3 * 0.0001 }), 3, 0, []string{"share"}},
		{"13 better on each", with(unlimited(3, 0.81, 0.82), "default", func(a *agg) { a.p95Over64 -= h; a.maxOver64 -= h; a.idle -= 1 }), 3, 1, nil},
		{"13 utilisation past 2 points", unlimited(3, 0.7999, 0.82), 3, 1, []string{"utilisation"}},
		{"13 utilisation past 2 points before the drain only", with(unlimited(3, 0.81, 0.82), "default", func(a *agg) { a.preDrain -= 3 * 0.0101 }), 3, 1, []string{"utilisation"}},
		{"13 utilisation past 2 points over the window only", with(unlimited(3, 0.81, 0.82), "default", func(a *agg) { a.util -= 3 * 0.03 }), 3, 1, nil},
		{"13 waits longer than fifo's", with(unlimited(3, 0.8, 0.82), "default", func(a *agg) { a.p95Over64++; a.maxOver64++ }), 3, 1, []string{"p95", "max"}},
		{"13 idle over greedy's plus held", with(unlimited(3, 0.8, 0.82), "default", func(a *agg) { a.idle += 1 + 3*1000 }), 3, 1, []string{"idle"}},
	} {
		t.Run(tc.name, func(t *testing.T) { missed(t, tc.rows, tc.seeds, tc.noLimits, tc.missed...) })
	}
	t.Run("no job over 64 GPUs", func(t *testing.T) {
		rows := with(unlimited(2, 0.8, 0.82), "default", func(a *agg) { a.over64, a.p95Over64, a.maxOver64 = 0, 0, 0 })
		var b strings.Builder
		printCriteria(&b, rows, 2, 1)
		out := b.String()
		for _, want := range []string{": 2 of 2 met (2 not applicable)", "n/a    >64-GPU p95 no worse than fifo's (no job over 64 GPUs)"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("no verdict", func(t *testing.T) {
		rows := limited(2, 0.05, 0.06)
		delete(rows, "easy-age")
		for _, c := range []struct {
			rows     map[string]*agg
			noLimits float64
			why      string
		}{
			{rows, 0, "not run: easy-age"},
			{limited(2, 0.05, 0.06), 1, "not run: fifo"},
			{unlimited(2, 0.8, 0.82), 0, "not run: easy-age"},
			{limited(2, 0.05, 0.06), 0.5, "-no-limits 0"},
		} {
			var b strings.Builder
			printCriteria(&b, c.rows, 2, c.noLimits)
			if out := b.String(); !strings.Contains(out, "no verdict") || !strings.Contains(out, c.why) {
				t.Errorf("no-limits %v: %q; want no verdict, %q", c.noLimits, out, c.why)
			}
		}
	})
	t.Run("printed", func(t *testing.T) {
		var b strings.Builder
		printCriteria(&b, limited(3, 0.0601, 0.06), 3, 0)
		out := b.String()
		for _, want := range []string{"issue 18, acceptance 2", ": 3 of 4 met\n", "  missed idle while queued within 1 point of greedy's: 6.01% against 5.00% + 1 point", "  met    large max no worse than easy-age's: 10h0m0s against 10h0m0s"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		// Issue 13's utilisation reads the figure before the drain and
		// prints the window's beside it.
		b.Reset()
		printCriteria(&b, with(unlimited(3, 0.81, 0.82), "default", func(a *agg) { a.util -= 3 * 0.03 }), 3, 1)
		out = b.String()
		for _, want := range []string{"issue 13, acceptance 2", ": 4 of 4 met\n", "  met    utilisation (before the final drain) within 2 points of greedy's: 81.00% against 82.00% - 2 points (over the window with the drain: 78.00% against 82.00%)"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestAggWaits: agg.add takes the large-job waits over the trace's
// threshold from the outcomes, and issue 13's over 64 GPUs from the
// simulator's own figures, with the count of such jobs (from its size
// classes).
func TestAggWaits(t *testing.T) {
	// The simulator's size classes (sim.SizeClasses): 1, 2-8, 9-64,
	// 65-512, >512 GPUs.
	waits := []sim.ClassWait{{Jobs: 0}, {Jobs: 1}, {Jobs: 1}, {Jobs: 1}, {Jobs: 0}}
	r := &sim.Result{Makespan: 10 * time.Hour, End: 10 * time.Hour, LargeWaitP95: 2 * time.Hour, LargeWaitMax: 2 * time.Hour, Waits: waits, Outcomes: []sim.Outcome{
		{GPUs: 8, Started: true, Submit: 0, Start: 5 * time.Hour},
		{GPUs: 32, Started: true, Submit: 0, Start: 3 * time.Hour},
		{GPUs: 128, Started: true, Submit: time.Hour, Start: 3 * time.Hour},
	}}
	var a agg
	a.add(r, 16)
	if a.p95 != 3*time.Hour || a.max != 3*time.Hour || a.p95Over64 != 2*time.Hour || a.maxOver64 != 2*time.Hour || a.over64 != 1 {
		t.Errorf("large (>16) p95 %v, max %v; over 64 p95 %v, max %v, %d jobs; want 3h, 3h, 2h, 2h, 1", a.p95, a.max, a.p95Over64, a.maxOver64, a.over64)
	}
	if want := (seedFigures{p95: 3 * time.Hour, max: 3 * time.Hour, p95Over64: 2 * time.Hour, maxOver64: 2 * time.Hour, share: r.WorstShare}); len(a.perSeed) != 1 || a.perSeed[0] != want {
		t.Errorf("seed figures %+v, want one: %+v", a.perSeed, want)
	}
	// Every job's wait: 5h, 3h, 2h, and a job never started, submitted
	// at 6h, counted to the end of the run (10h): 4h. Mean 3h30m.
	r.Outcomes = append(r.Outcomes, sim.Outcome{GPUs: 1, Submit: 6 * time.Hour})
	r.MeanBoundedSlowdown = 2.5
	r.HeldForHoldGPUSeconds, r.ReservedFreeGPUSeconds = 7*3600, 300*3600
	// A second seed: 100,000 jobs that each waited two days, whose sum
	// overflows a Duration (292 years); slowdown 1.5.
	long := &sim.Result{Makespan: 100 * time.Hour, End: 100 * time.Hour, MeanBoundedSlowdown: 1.5, HeldForHoldGPUSeconds: 3 * 3600, ReservedFreeGPUSeconds: 100 * 3600, Outcomes: make([]sim.Outcome, 100000)}
	for i := range long.Outcomes {
		long.Outcomes[i] = sim.Outcome{GPUs: 1, Started: true, Submit: time.Hour, Start: 49 * time.Hour}
	}
	var b agg
	b.add(r, 16)
	b.add(long, 16)
	// The second seed's own figures, not the running maxima: no large job.
	if len(b.perSeed) != 2 || b.perSeed[1] != (seedFigures{}) || b.perSeed[0].max != 3*time.Hour {
		t.Errorf("seed figures %+v, want the first seed's (max 3h) then zeros", b.perSeed)
	}
	if b.meanWait != 51*time.Hour+30*time.Minute || b.bsld != 4 {
		t.Errorf("mean wait summed over two seeds %v, bounded slowdown %v; want 51h30m (3h30m + 48h), 4", b.meanWait, b.bsld)
	}
	var out strings.Builder
	b.print(&out, "p", 2)
	if !strings.Contains(out.String(), " 25h45m0s    2.0 ") {
		t.Errorf("printed row lacks the mean wait 25h45m0s and slowdown 2.0 per seed:\n%s", out.String())
	}
	// GPU-hours held by hold mode and free on reservations, per seed:
	// (7 + 3) / 2 and (300 + 100) / 2, in that order.
	if !strings.Contains(out.String(), " 0.0000          5        200 ") {
		t.Errorf("printed row lacks 5 held and 200 free on reservations GPU-hours per seed:\n%s", out.String())
	}
}

// with changes one row of rows and returns them.
func with(rows map[string]*agg, name string, f func(*agg)) map[string]*agg {
	f(rows[name])
	return rows
}

// TestPairedLine checks the seed-by-seed line under the criteria: each
// figure counted where the default's is lower, higher or equal on the
// same seed (at the table's precision), against easy-age with limits
// (waits and share gap) and fifo without (the >64-GPU waits); every
// field and seed has its own data, so a swapped field, a swapped count or
// seeds out of line change the counts. No line with one seed, without the
// reference row, with mixed limits, or without jobs over 64 GPUs (no
// limits); a line even when the verdict lacks another row.
func TestPairedLine(t *testing.T) {
	h, m := time.Hour, time.Minute
	type seed = seedFigures
	def := &agg{over64: 3, perSeed: []seed{
		{p95: 1 * h, max: 5 * h, p95Over64: 4 * h, maxOver64: 1 * h, share: 0.10},
		{p95: 2 * h, max: 6 * h, p95Over64: 4 * h, maxOver64: 2 * h, share: 0.20},
		{p95: 3 * h, max: 7 * h, p95Over64: 4 * h, maxOver64: 3 * h, share: 0.30},
		{p95: 4 * h, max: 8 * h, p95Over64: 4 * h, maxOver64: 4 * h, share: 0.40},
	}}
	// The default against it seed by seed: p95 lower, lower, higher, tied
	// (2/1/1); max lower, lower, higher, higher (2/2/0); share lower,
	// higher, tied at four places, tied (1/1/2); >64 p95 lower, tied,
	// higher, higher (1/2/1); >64 max tied within the minute, lower,
	// lower, lower (3/0/1).
	ref := &agg{over64: 3, perSeed: []seed{
		{p95: 2 * h, max: 6 * h, p95Over64: 5 * h, maxOver64: 1*h + 20*time.Second, share: 0.15},
		{p95: 3 * h, max: 7 * h, p95Over64: 4 * h, maxOver64: 3 * h, share: 0.10},
		{p95: 2 * h, max: 6 * h, p95Over64: 3 * h, maxOver64: 4 * h, share: 0.30004},
		{p95: 4 * h, max: 7 * h, p95Over64: 3*h + 59*m, maxOver64: 5 * h, share: 0.40},
	}}
	one := &agg{over64: 1, perSeed: def.perSeed[:1]}
	for _, tc := range []struct {
		name     string
		rows     map[string]*agg
		noLimits float64
		want     string
	}{
		{"limited", map[string]*agg{"default": def, "easy-age": ref}, 0,
			"  seed by seed, the default against easy-age (lower/higher/tied, of 4 seeds): large p95 2/1/1, large max 2/2/0, share gap 1/1/2"},
		{"unlimited", map[string]*agg{"default": def, "fifo": ref}, 1,
			"  seed by seed, the default against fifo (lower/higher/tied, of 4 seeds): >64-GPU p95 1/2/1, >64-GPU max 3/0/1"},
		{"no reference row", map[string]*agg{"default": def, "fifo": ref}, 0, ""},
		{"one seed", map[string]*agg{"default": one, "easy-age": one}, 0, ""},
		{"mixed", map[string]*agg{"default": def, "easy-age": ref}, 0.5, ""},
		{"none over 64", map[string]*agg{"default": {perSeed: def.perSeed}, "fifo": ref}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pairedLine(tc.rows, tc.noLimits); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	// Seeds out of line (the reference's reversed) change the counts.
	rev := &agg{over64: 3, perSeed: slices.Clone(ref.perSeed)}
	slices.Reverse(rev.perSeed)
	for _, limits := range []float64{0, 1} {
		other := map[float64]string{0: "easy-age", 1: "fifo"}[limits]
		if a, b := pairedLine(map[string]*agg{"default": def, other: ref}, limits), pairedLine(map[string]*agg{"default": def, other: rev}, limits); a == b {
			t.Errorf("no-limits %v: the line is the same with the reference's seeds reversed: %q", limits, a)
		}
	}
	// The line follows the goals in printCriteria's output, and the
	// "no verdict" line when a row the verdict reads was not run.
	for _, tc := range []struct {
		rows  map[string]*agg
		lines int
	}{
		{map[string]*agg{"default": def, "easy-age": ref, "greedy": &agg{perSeed: ref.perSeed}}, 6},
		{map[string]*agg{"default": def, "easy-age": ref}, 2},
	} {
		var out strings.Builder
		printCriteria(&out, tc.rows, 4, 0)
		if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != tc.lines || !strings.HasPrefix(lines[tc.lines-1], "  seed by seed") {
			t.Errorf("printCriteria printed %d lines, want %d ending with the seed-by-seed line:\n%s", len(lines), tc.lines, out.String())
		}
	}
}

// TestJobWaits: the mean wait and the large jobs' waits leave out jobs
// the simulator rejected, and count a job that never started up to the
// end of the run on the trace's clock (sim.Result.End), not up to the
// makespan (a length: with a late first submit, waits came out negative).
func TestJobWaits(t *testing.T) {
	h := time.Hour
	r := &sim.Result{End: 12 * h, Makespan: 2 * h, Outcomes: []sim.Outcome{
		{ID: "a", GPUs: 8, Submit: 10 * h, Start: 10 * h, End: 11 * h, Started: true, Finished: true},
		{ID: "b", GPUs: 128, Submit: 10 * h, Start: 11 * h, End: 12 * h, Started: true, Finished: true},
		{ID: "never", GPUs: 128, Submit: 10 * h},
		{ID: "rejected", GPUs: 1024, Submit: 10 * h, Rejected: true},
	}}
	if got, want := meanWait(r), time.Hour; got != want { // (0 + 1h + 2h) / 3
		t.Errorf("mean wait %v, want %v", got, want)
	}
	p95, mx := largeWaits(r, 64)
	if p95 != 2*h || mx != 2*h {
		t.Errorf("large waits p95 %v, max %v; want 2h, 2h", p95, mx)
	}
}

// TestNames: a trace or policy name that frontier does not know, or a
// key's value out of range, is an error naming it, not a table without
// its rows or with another policy's.
func TestNames(t *testing.T) {
	for _, tt := range []struct {
		name, traces, policies, err string
	}{
		{"known", "synthetic,philly3,philly4,itp", "greedy,default,all,fs=500+rmin=9", ""},
		{"unknown trace", "synthetic,philly", "default", `unknown trace "philly"`},
		{"empty trace", "synthetic,", "default", `unknown trace ""`},
		{"misspelt policy", "synthetic", "greedy,defualt", `unknown policy "defualt"`},
		{"empty policy", "synthetic", "greedy,", `unknown policy ""`},
		{"largest age", "synthetic", "age=11767033", ""},
		{"backlog free share", "synthetic", "backlogfree=0.1", ""},
		{"backlog free share above 1", "synthetic", "backlogfree=2", "BacklogFreeShare 2 not in [0, 1]"},
		{"age weight wraps around", "synthetic", "age=11767034", "policy age=11767034: age 11767034 per day: over 11767033"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := traces(strings.Split(tt.traces, ","), 1, 1, "data", 0)
			if err == nil {
				_, err = selectPolicies(tt.policies)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
}
