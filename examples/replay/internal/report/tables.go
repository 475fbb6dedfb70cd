package report

import (
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/benchmarks/sim"
)

// writeTables writes the replay's two tables (the ones sim.Table prints)
// as HTML.
func writeTables(b *strings.Builder, results []*sim.Result) {
	b.WriteString("<h2>Metrics</h2>\n<table id=\"metrics\">\n<tr>")
	for i, h := range []string{"policy", "placement", "util", "util before drain", "idle GPU-h while queued", "deadlock GPU-h", "hold GPU-h", "mean JCT", "makespan",
		"multi-node in 1 leaf", "mean leaves", "worst share gap", "cycle p50", "cycle p99", "done / running / waiting / rejected"} {
		cell(b, "th", i < 2, h)
	}
	b.WriteString("</tr>\n")
	for _, r := range results {
		b.WriteString("<tr>")
		for i, v := range []string{r.Policy, r.Placement, fmt.Sprintf("%.1f%%", 100*r.Utilisation),
			fmt.Sprintf("%.1f%%", 100*r.UtilisationBeforeDrain), fmt.Sprintf("%.0f", r.IdleWhileQueuedGPUSeconds/3600),
			fmt.Sprintf("%.0f", r.DeadlockGPUSeconds/3600), fmt.Sprintf("%.0f", r.HeldForHoldGPUSeconds/3600),
			shortDuration(r.MeanJCT), shortDuration(r.Makespan), fmt.Sprintf("%.1f%%", 100*r.MultiNodeInOneLeaf),
			fmt.Sprintf("%.2f", r.MeanLeaves), fmt.Sprintf("%.3f", r.WorstShare),
			r.CycleP50.Round(time.Microsecond).String(), r.CycleP99.Round(time.Microsecond).String(),
			fmt.Sprintf("%d / %d / %d / %d", r.Finished, r.Running, r.Pending, r.Rejected)} {
			cell(b, "td", i < 2, v)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n<p class=\"note\">util: busy GPU-seconds over capacity over the active window (while work ran or was queued), which runs on through the final drain (once the last job has started, until the last one ends). util before drain: the same up to the last start. idle GPU-h while queued: GPU-hours left idle while jobs were queued, at most the GPUs they asked for. deadlock: GPU-hours held by jobs that cannot run. hold: GPU-hours kept idle by hold mode for a waiting gang. Cycle times are the scheduler's measured CPU time per cycle (the one figure that varies between runs).</p>\n")
	b.WriteString("<h2>Waits by job size</h2>\n<table id=\"waits\">\n<tr>")
	cell(b, "th", true, "policy")
	cell(b, "th", true, "placement")
	for _, c := range sim.SizeClasses {
		cell(b, "th", false, c.Name+" GPUs")
	}
	b.WriteString("</tr>\n")
	for _, r := range results {
		b.WriteString("<tr>")
		cell(b, "td", true, r.Policy)
		cell(b, "td", true, r.Placement)
		for _, w := range r.Waits {
			v := "-"
			if w.Jobs > 0 {
				v = fmt.Sprintf("%s / %s / %s", shortDuration(w.P50), shortDuration(w.P95), shortDuration(w.Max))
				if w.NotStarted > 0 {
					v += fmt.Sprintf(" (%d never started)", w.NotStarted)
				}
			}
			cell(b, "td", false, v)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n<p class=\"note\">Wait (start minus submit) p50 / p95 / max per job size; a job that never started counts with its wait up to the end of the run.</p>\n")
}

// cell writes one table cell, left-aligned when left.
func cell(b *strings.Builder, tag string, left bool, text string) {
	class := ""
	if left {
		class = ` class="l"`
	}
	fmt.Fprintf(b, "<%s%s>%s</%s>", tag, class, html.EscapeString(text), tag)
}

// shortDuration renders a duration compactly: 0s, 45s, 12m, 3.2h, 4.1d.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1fh", d.Hours())
	}
	return fmt.Sprintf("%.1fd", d.Hours()/24)
}
