package main

import (
	"fmt"
	"io"
	"time"
)

// goal is one figure of an issue's acceptance criterion, met or not.
type goal struct {
	what      string
	met       bool
	got, want string
}

// criteria returns the goals of the criterion a trace's rows are read
// against, and the issue it comes from: with every job limited (noLimits
// 0), issue 18's (the default's GPU-hours idle while queued within 1
// point of greedy's, its large-job p95 and max wait and share gap no
// worse than EASY in age order's); without limits (noLimits 1), issue
// 13's (its >64-GPU p95 and max wait no worse than strict FIFO's, its
// utilisation within 2 points of greedy's, its GPU-hours idle while
// queued no more than greedy's plus those it held). Waits are the worst
// over the seeds, the rest means, as in the table. It returns no goals
// when the rows lack a policy the criterion reads, or for mixed traces.
func criteria(rows map[string]*agg, seeds int, noLimits float64) (string, []goal) {
	n := float64(seeds)
	def := rows["default"]
	switch noLimits {
	case 0:
		g, e := rows["greedy"], rows["easy-age"]
		if def == nil || g == nil || e == nil {
			return "", nil
		}
		return "issue 18, acceptance 2 (the default against greedy and easy-age)", []goal{
			{"idle while queued within 1 point of greedy's", def.idlePct <= g.idlePct+0.01*n,
				pct(def.idlePct / n), pct(g.idlePct/n) + " + 1 point"},
			{"large p95 no worse than easy-age's", def.p95 <= e.p95, dur(def.p95), dur(e.p95)},
			{"large max no worse than easy-age's", def.max <= e.max, dur(def.max), dur(e.max)},
			{"share gap no worse than easy-age's", def.share <= e.share, fmt.Sprintf("%.4f", def.share/n), fmt.Sprintf("%.4f", e.share/n)},
		}
	case 1:
		g, f := rows["greedy"], rows["fifo"]
		if def == nil || g == nil || f == nil {
			return "", nil
		}
		return "issue 13, acceptance 2 (the default against fifo and greedy, no time limits)", []goal{
			{">64-GPU p95 no worse than fifo's", def.p95Over64 <= f.p95Over64, dur(def.p95Over64), dur(f.p95Over64)},
			{">64-GPU max no worse than fifo's", def.maxOver64 <= f.maxOver64, dur(def.maxOver64), dur(f.maxOver64)},
			{"utilisation within 2 points of greedy's", def.util >= g.util-0.02*n, pct(def.util / n), pct(g.util/n) + " - 2 points"},
			{"idle while queued no more than greedy's plus the GPU-hours held", def.idle <= g.idle+def.held,
				fmt.Sprintf("%.0f GPU-h", def.idle/n), fmt.Sprintf("%.0f + %.0f", g.idle/n, def.held/n)},
		}
	}
	return "", nil
}

// printCriteria prints the criterion's goals under a trace's table.
func printCriteria(w io.Writer, rows map[string]*agg, seeds int, noLimits float64) {
	issue, goals := criteria(rows, seeds, noLimits)
	if goals == nil {
		return
	}
	met := 0
	for _, g := range goals {
		if g.met {
			met++
		}
	}
	fmt.Fprintf(w, "%s: %d of %d met\n", issue, met, len(goals))
	for _, g := range goals {
		verdict := "missed"
		if g.met {
			verdict = "met"
		}
		fmt.Fprintf(w, "  %-6s %s: %s against %s\n", verdict, g.what, g.got, g.want)
	}
}

func pct(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

func dur(d time.Duration) string { return d.Round(time.Minute).String() }
