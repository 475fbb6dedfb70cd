package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/phalanx-sched/phalanx/benchmarks/sim"
	"github.com/phalanx-sched/phalanx/examples/replay/internal/svgplot"
)

// run is one result with its label and colour.
type run struct {
	res   *sim.Result
	label string
	color string
}

// newRuns labels each result by its policy, adding the placement when a
// policy appears more than once.
func newRuns(results []*sim.Result) []run {
	count := map[string]int{}
	for _, r := range results {
		count[r.Policy]++
	}
	runs := make([]run, len(results))
	for i, r := range results {
		label := r.Policy
		if count[r.Policy] > 1 {
			label += "/" + r.Placement
		}
		runs[i] = run{res: r, label: label, color: svgplot.Palette[i%len(svgplot.Palette)]}
	}
	return runs
}

// colors returns the runs' colours.
func colors(runs []run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.color)
	}
	return out
}

// timeUnit picks hours or days for a span.
func timeUnit(span time.Duration) (time.Duration, string) {
	if span <= 3*24*time.Hour {
		return time.Hour, "hours"
	}
	return 24 * time.Hour, "days"
}

// Figure geometry: the title and subtitle take the top of a canvas, a
// legend row follows, then the panels.
const (
	subtitleY = 44
	legendY   = 66
	panelTop  = 80
)

// newCanvas starts a figure canvas with a title and a one-line subtitle.
func newCanvas(id string, w, h int, title, subtitle string) *svgplot.Canvas {
	c := svgplot.New(id, w, h, title)
	c.Text(14, subtitleY, "start", 13, subtitle)
	return c
}

// busyFigure: GPUs busy over time, one line per run.
func busyFigure(runs []run) figure {
	const w, h = ColumnWidth, 460
	var end time.Duration
	for _, r := range runs {
		end = max(end, r.res.Usage.End-r.res.Usage.Start)
	}
	unit, unitName := timeUnit(end)
	u0 := runs[0].res.Usage
	c := newCanvas("busy", w, h, "GPUs busy over time",
		fmt.Sprintf("Mean GPUs in running jobs per step of %s, from the first submit; the cluster has %d GPUs.", shortDuration(u0.Step), runs[0].res.ClusterGPUs))
	var series []svgplot.Series
	for _, r := range runs {
		u := r.res.Usage
		s := svgplot.Series{Name: fmt.Sprintf("%s (util %.1f%%)", r.label, 100*r.res.Utilisation), Color: r.color}
		for i, v := range u.Busy {
			s.X = append(s.X, (float64(i)+0.5)*float64(u.Step)/float64(unit))
			s.Y = append(s.Y, v)
		}
		series = append(series, s)
	}
	c.Legend(80, legendY, series, true)
	c.Lines(svgplot.Panel{Rect: svgplot.Rect{Y: panelTop, W: w, H: h - panelTop},
		X: svgplot.Axis{Label: "time since the first submit (" + unitName + ")", Max: float64(end) / float64(unit)},
		Y: svgplot.Axis{Label: "GPUs busy", Max: float64(runs[0].res.ClusterGPUs)}}, series)
	return figure{id: "busy", title: "GPUs busy over time", canvas: c, w: w, h: h, colors: colors(runs)}
}

// classWaits returns the sorted waits of one run's jobs in size class
// (GPUs in [lo, hi]) and how many never started, by the rule of the
// wait table: a job that never started counts with its wait up to the
// end of the run.
func classWaits(res *sim.Result, lo, hi int) ([]time.Duration, int) {
	var waits []time.Duration
	notStarted := 0
	end := res.Usage.End
	for _, o := range res.Outcomes {
		if o.GPUs < lo || o.GPUs > hi || o.Submit > end || o.Rejected {
			continue // a rejected job never waited
		}
		if o.Started || o.Finished {
			waits = append(waits, o.Start-o.Submit)
		} else {
			waits = append(waits, end-o.Submit)
			notStarted++
		}
	}
	slices.Sort(waits)
	return waits, notStarted
}

// waitFloor is the smallest wait the wait figure shows apart; shorter
// waits are drawn at it.
const waitFloor = time.Minute

// cdfSeries returns the empirical CDF of sorted waits (seconds on X) in at
// most about 400 points, from the wait floor to right (seconds), where it
// is 1.
func cdfSeries(waits []time.Duration, right float64) ([]float64, []float64) {
	n := len(waits)
	atFloor, _ := slices.BinarySearch(waits, waitFloor+1)
	xs := []float64{waitFloor.Seconds()}
	ys := []float64{float64(atFloor) / float64(n)}
	stride := max(1, n/400)
	for i := atFloor; i < n; i++ {
		if (i+1)%stride != 0 && i != n-1 {
			continue
		}
		xs = append(xs, waits[i].Seconds())
		ys = append(ys, float64(i+1)/float64(n))
	}
	if right > xs[len(xs)-1] {
		xs = append(xs, right)
		ys = append(ys, 1)
	}
	return xs, ys
}

// waitTicks label a log axis of seconds with durations.
var waitTicks = []svgplot.Tick{{At: 60, Label: "1m"}, {At: 600, Label: "10m"}, {At: 3600, Label: "1h"},
	{At: 6 * 3600, Label: "6h"}, {At: 86400, Label: "1d"}, {At: 7 * 86400, Label: "1w"}, {At: 30 * 86400, Label: "30d"}}

// waitFigure: per size class, the CDF of waits, one line per run.
func waitFigure(runs []run) figure {
	type class struct {
		name   string
		lo, hi int
		jobs   int
	}
	var classes []class
	maxWait := time.Hour
	// A class shows when any run waited in it: the runs may reject
	// different jobs (pod by pod queues a gang no set of nodes can
	// hold, which the engine rejects).
	for _, sc := range sim.SizeClasses {
		jobs := 0
		for _, r := range runs {
			if w, _ := classWaits(r.res, sc.Min, sc.Max); len(w) > 0 {
				jobs = max(jobs, len(w))
				maxWait = max(maxWait, w[len(w)-1])
			}
		}
		if jobs > 0 {
			classes = append(classes, class{sc.Name, sc.Min, sc.Max, jobs})
		}
	}
	const w, cols, panelH = ColumnWidth, 3, 300
	rows := max(1, (len(classes)+cols-1)/cols)
	h := panelTop + rows*panelH
	c := newCanvas("waits", w, h, "Waits by job size",
		"Share of jobs (y) that waited at most a given time (x, log scale; waits under a minute drawn at 1m). Higher and further left is better.")
	legend := make([]svgplot.Series, len(runs))
	for i, r := range runs {
		legend[i] = svgplot.Series{Name: r.label, Color: r.color}
	}
	c.Legend(80, legendY, legend, true)
	right := maxWait.Seconds() * 1.2
	for k, cl := range classes {
		var series []svgplot.Series
		notStarted := 0
		for _, r := range runs {
			waits, ns := classWaits(r.res, cl.lo, cl.hi)
			if len(waits) == 0 {
				continue // no line: this run has no such job
			}
			notStarted = max(notStarted, ns)
			xs, ys := cdfSeries(waits, right)
			series = append(series, svgplot.Series{Name: r.label, Color: r.color, X: xs, Y: ys})
		}
		unit := " GPUs"
		if cl.hi == 1 {
			unit = " GPU"
		}
		title := fmt.Sprintf("%s%s: %d jobs", cl.name, unit, cl.jobs)
		if notStarted > 0 {
			title += fmt.Sprintf(", up to %d never started", notStarted)
		}
		pw := float64(w) / cols
		c.Lines(svgplot.Panel{Rect: svgplot.Rect{X: float64(k%cols) * pw, Y: float64(panelTop + k/cols*panelH), W: pw, H: panelH}, Title: title,
			X: svgplot.Axis{Label: "wait (start minus submit)", Min: waitFloor.Seconds(), Max: right, Log: true, Ticks: waitTicks},
			Y: svgplot.Axis{Label: "share of jobs", Max: 1.04, Ticks: fractionTicks}}, series)
	}
	return figure{id: "waits", title: "Waits by job size", canvas: c, w: w, h: h, colors: colors(runs)}
}

// fractionTicks label a 0..1 axis.
var fractionTicks = []svgplot.Tick{{At: 0, Label: "0"}, {At: 0.25, Label: "0.25"}, {At: 0.5, Label: "0.5"}, {At: 0.75, Label: "0.75"}, {At: 1, Label: "1"}}

// leafBin is a bin of the leaves histogram: [lo, hi] leaves.
type leafBin struct {
	name   string
	lo, hi int
}

// leafBins are the bins of the leaves histogram.
var leafBins = []leafBin{{"1", 1, 1}, {"2", 2, 2}, {"3", 3, 3}, {"4", 4, 4}, {"5-8", 5, 8}, {"9-16", 9, 16}, {"17-32", 17, 32}, {">32", 33, math.MaxInt}}

// leavesFigure: per run, the share of its started multi-node jobs that
// ran on each number of leaves.
func leavesFigure(runs []run) figure {
	const w, h = ColumnWidth, 420
	counts := make([][]int, len(runs))
	last := 0
	for i, r := range runs {
		counts[i] = make([]int, len(leafBins))
		for _, o := range r.res.Outcomes {
			if o.Nodes < 2 || !o.Started && !o.Finished {
				continue
			}
			b := slices.IndexFunc(leafBins, func(b leafBin) bool { return o.Leaves >= b.lo && o.Leaves <= b.hi })
			if b >= 0 {
				counts[i][b]++
				last = max(last, b)
			}
		}
	}
	c := newCanvas("leaves", w, h, "Leaves per multi-node job",
		"Share of each run's started multi-node jobs by the number of leaf switches they ran on. Fewer leaves means less traffic through the spines.")
	var series []svgplot.Series
	for i, r := range runs {
		s := svgplot.Series{Name: fmt.Sprintf("%s (%d jobs, mean %.2f)", r.label, r.res.MultiNodeJobs, r.res.MeanLeaves), Color: r.color}
		for b := 0; b <= last; b++ {
			s.Y = append(s.Y, 100*float64(counts[i][b])/float64(max(1, r.res.MultiNodeJobs)))
		}
		series = append(series, s)
	}
	var cats []string
	for b := 0; b <= last; b++ {
		cats = append(cats, leafBins[b].name)
	}
	c.Legend(80, legendY, series, false)
	c.Bars(svgplot.Panel{Rect: svgplot.Rect{Y: panelTop, W: w, H: h - panelTop},
		X: svgplot.Axis{Label: "leaves the job ran on"}, Y: svgplot.Axis{Label: "share of multi-node jobs (%)", Max: 100}}, cats, series)
	return figure{id: "leaves", title: "Leaves per multi-node job", canvas: c, w: w, h: h, colors: colors(runs)}
}

// topAccounts returns the indexes (into Usage.Accounts) of the k accounts
// with the most GPU time over all runs, most first.
func topAccounts(runs []run, k int) []int {
	u0 := runs[0].res.Usage
	total := make([]float64, len(u0.Accounts))
	for _, r := range runs {
		for a, s := range r.res.Usage.ByAccount {
			for _, v := range s {
				total[a] += v
			}
		}
	}
	idx := make([]int, len(total))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(total[b], total[a]) })
	return idx[:min(k, len(idx))]
}
