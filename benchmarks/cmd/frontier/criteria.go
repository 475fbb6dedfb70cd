package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// goal is one figure of an issue's acceptance criterion: met or not, or
// not applicable (na: the trace has no job it reads).
type goal struct {
	what      string
	met, na   bool
	got, want string
}

// slack absorbs the rounding of a mean summed over seeds against a bound
// in points, so that a figure at its bound counts as met.
const slack = 1e-9

// criteria returns the goals of the criterion a trace's rows are read
// against, and the issue it comes from: with every job limited (noLimits
// 0), issue 18's (the default's GPU-hours idle while queued within 1
// point of greedy's, its large-job p95 and max wait and share gap no
// worse than EASY in age order's); without limits (noLimits 1), issue
// 13's (its >64-GPU p95 and max wait no worse than strict FIFO's, its
// utilisation within 2 points of greedy's, its GPU-hours idle while
// queued no more than greedy's plus those it held). The utilisation read
// is the one before the final drain (sim.Result.UtilisationBeforeDrain,
// the table's pre-drain column): the one over the whole active window
// ends when the last job ends, so on a finite trace it is set by one long
// job's run time after the last start, which no scheduler without time
// limits knows (benchmarks/README.md, "Utilisation and the final drain"
// and "What ends the window"); the goal prints that figure beside it.
// Waits are the worst
// over the seeds, the rest means, as in the table; a figure equal to its
// bound is met. Without a goal, it says why instead: a row the criterion
// reads was not run, or the trace mixes jobs with and without limits.
func criteria(rows map[string]*agg, seeds int, noLimits float64) (issue string, goals []goal, why string) {
	n := float64(seeds)
	need := func(names ...string) string {
		var missing []string
		for _, name := range names {
			if rows[name] == nil {
				missing = append(missing, name)
			}
		}
		if missing == nil {
			return ""
		}
		return fmt.Sprintf("it reads the %s rows; not run: %s", strings.Join(names, ", "), strings.Join(missing, ", "))
	}
	def := rows["default"]
	switch noLimits {
	case 0:
		issue = "issue 18, acceptance 2 (the default against greedy and easy-age)"
		if why := need("greedy", "easy-age", "default"); why != "" {
			return issue, nil, why
		}
		g, e := rows["greedy"], rows["easy-age"]
		return issue, []goal{
			{what: "idle while queued within 1 point of greedy's", met: def.idlePct <= g.idlePct+(0.01+slack)*n,
				got: pct(def.idlePct / n), want: pct(g.idlePct/n) + " + 1 point"},
			{what: "large p95 no worse than easy-age's", met: def.p95 <= e.p95, got: dur(def.p95), want: dur(e.p95)},
			{what: "large max no worse than easy-age's", met: def.max <= e.max, got: dur(def.max), want: dur(e.max)},
			{what: "share gap no worse than easy-age's", met: def.share <= e.share, got: fmt.Sprintf("%.4f", def.share/n), want: fmt.Sprintf("%.4f", e.share/n)},
		}, ""
	case 1:
		issue = "issue 13, acceptance 2 (the default against fifo and greedy, no time limits)"
		if why := need("fifo", "greedy", "default"); why != "" {
			return issue, nil, why
		}
		g, f := rows["greedy"], rows["fifo"]
		na := def.over64 == 0
		jobs := fmt.Sprintf(" (%.0f jobs over 64 GPUs a seed)", float64(def.over64)/n)
		if na {
			jobs = " (no job over 64 GPUs)"
		}
		return issue, []goal{
			{what: ">64-GPU p95 no worse than fifo's" + jobs, met: !na && def.p95Over64 <= f.p95Over64, na: na, got: dur(def.p95Over64), want: dur(f.p95Over64)},
			{what: ">64-GPU max no worse than fifo's" + jobs, met: !na && def.maxOver64 <= f.maxOver64, na: na, got: dur(def.maxOver64), want: dur(f.maxOver64)},
			{what: "utilisation (before the final drain) within 2 points of greedy's", met: def.preDrain >= g.preDrain-(0.02+slack)*n,
				got: pct(def.preDrain / n), want: pct(g.preDrain/n) + " - 2 points" + fmt.Sprintf(" (over the window with the drain: %s against %s)", pct(def.util/n), pct(g.util/n))},
			{what: "idle while queued no more than greedy's plus the GPU-hours held", met: def.idle <= g.idle+def.held,
				got: fmt.Sprintf("%.0f GPU-h", def.idle/n), want: fmt.Sprintf("%.0f + %.0f", g.idle/n, def.held/n)},
		}, ""
	}
	return "", nil, "the criteria read runs with every job limited (-no-limits 0, issue 18) or none (-no-limits 1, issue 13)"
}

// printCriteria prints the criterion's goals under a trace's table (or
// why there are none).
func printCriteria(w io.Writer, rows map[string]*agg, seeds int, noLimits float64) {
	issue, goals, why := criteria(rows, seeds, noLimits)
	if goals == nil {
		if issue == "" {
			issue = "criteria"
		}
		fmt.Fprintf(w, "%s: no verdict: %s\n", issue, why)
		if line := pairedLine(rows, noLimits); line != "" {
			fmt.Fprintln(w, line)
		}
		return
	}
	met, apply := 0, 0
	for _, g := range goals {
		if !g.na {
			apply++
		}
		if g.met {
			met++
		}
	}
	fmt.Fprintf(w, "%s: %d of %d met", issue, met, apply)
	if apply < len(goals) {
		fmt.Fprintf(w, " (%d not applicable)", len(goals)-apply)
	}
	fmt.Fprintln(w)
	for _, g := range goals {
		verdict := "missed"
		switch {
		case g.na:
			verdict = "n/a"
		case g.met:
			verdict = "met"
		}
		fmt.Fprintf(w, "  %-6s %s: %s against %s\n", verdict, g.what, g.got, g.want)
	}
	if line := pairedLine(rows, noLimits); line != "" {
		fmt.Fprintln(w, line)
	}
}

// pairedLine compares the default with the policy the criterion's waits
// read (easy-age with limits, fifo without) seed by seed: on how many
// seeds the default's figure is lower than, higher than or equal to the
// other's on the same seed, at the table's precision (waits to the
// minute, the share gap to four places). With limits it counts the
// large-job p95 and max and the share gap; without, the >64-GPU p95 and
// max (none when no job is over 64 GPUs, as the verdict says n/a). The
// verdict on a wait compares each policy's worst seed, which may be
// different seeds, and the share gap's verdict reads the means: the
// counts show how often each policy is ahead, not by how much. Empty
// with fewer than two seeds, without the default's or the other row,
// or for traces that mix limited and unlimited jobs.
func pairedLine(rows map[string]*agg, noLimits float64) string {
	ref := map[float64]string{0: "easy-age", 1: "fifo"}[noLimits]
	def, other := rows["default"], rows[ref]
	if ref == "" || def == nil || other == nil || len(def.perSeed) < 2 || len(def.perSeed) != len(other.perSeed) {
		return ""
	}
	type figure struct {
		name string
		of   func(seedFigures) float64
	}
	minutes := func(d time.Duration) float64 { return float64(d.Round(time.Minute)) }
	figures := []figure{
		{"large p95", func(s seedFigures) float64 { return minutes(s.p95) }},
		{"large max", func(s seedFigures) float64 { return minutes(s.max) }},
		{"share gap", func(s seedFigures) float64 { return math.Round(s.share * 1e4) }},
	}
	if noLimits == 1 {
		if def.over64 == 0 {
			return ""
		}
		figures = []figure{
			{">64-GPU p95", func(s seedFigures) float64 { return minutes(s.p95Over64) }},
			{">64-GPU max", func(s seedFigures) float64 { return minutes(s.maxOver64) }},
		}
	}
	parts := make([]string, 0, len(figures))
	for _, f := range figures {
		lower, higher, tied := 0, 0, 0
		for i := range def.perSeed {
			switch a, b := f.of(def.perSeed[i]), f.of(other.perSeed[i]); {
			case a < b:
				lower++
			case a > b:
				higher++
			default:
				tied++
			}
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d", f.name, lower, higher, tied))
	}
	return fmt.Sprintf("  seed by seed, the default against %s (lower/higher/tied, of %d seeds): %s",
		ref, len(def.perSeed), strings.Join(parts, ", "))
}

func pct(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

func dur(d time.Duration) string { return d.Round(time.Second).String() }
