package report

import (
	"fmt"
	"time"

	"github.com/phalanx-sched/phalanx/examples/replay/internal/svgplot"
)

// shareAccounts is how many accounts the share figure shows by name; the
// rest are summed as "other".
const shareAccounts = 8

// sharePoints bounds the points of each stacked layer.
const sharePoints = 500

// shareFigure: per run, each top account's share of the busy GPUs over
// time as stacked areas, the other accounts summed on top.
func shareFigure(runs []run) figure {
	const w, cols, panelH = ColumnWidth, 2, 300
	top := topAccounts(runs, shareAccounts)
	u0 := runs[0].res.Usage
	var legend []svgplot.Series
	for i, a := range top {
		legend = append(legend, svgplot.Series{Name: u0.Accounts[a], Color: svgplot.Categorical[i%len(svgplot.Categorical)]})
	}
	hasOther := len(u0.Accounts) > len(top)
	if hasOther {
		legend = append(legend, svgplot.Series{Name: fmt.Sprintf("other (%d accounts)", len(u0.Accounts)-len(top)), Color: svgplot.Other})
	}
	var end time.Duration
	for _, r := range runs {
		end = max(end, r.res.Usage.End-r.res.Usage.Start)
	}
	unit, unitName := timeUnit(end)
	rows := (len(runs) + cols - 1) / cols
	h := panelTop + rows*panelH
	c := newCanvas("shares", w, h, "Per-account share over time",
		fmt.Sprintf("Each account's share of the busy GPUs, stacked; the %d accounts with the most GPU time over all runs by name. Empty where nothing ran.", len(top)))
	c.Legend(80, legendY, legend, false)
	pw := float64(w) / cols
	for k, r := range runs {
		layers := shareLayers(r, top, hasOther, unit, legend)
		c.Stacked(svgplot.Panel{Rect: svgplot.Rect{X: float64(k%cols) * pw, Y: float64(panelTop + k/cols*panelH), W: pw, H: panelH}, Title: r.label,
			X: svgplot.Axis{Label: "time since the first submit (" + unitName + ")", Max: float64(end) / float64(unit)},
			Y: svgplot.Axis{Label: "share of busy GPUs (%)", Max: 100}}, layers)
	}
	var cs []string
	for _, l := range legend {
		cs = append(cs, l.Color)
	}
	return figure{id: "shares", title: "Per-account share over time", canvas: c, w: w, h: h, colors: cs}
}

// shareLayers returns run r's stacked layers: the top accounts, then the
// others summed when hasOther, in percent of the busy GPUs, merged into at
// most about sharePoints steps.
func shareLayers(r run, top []int, hasOther bool, unit time.Duration, legend []svgplot.Series) []svgplot.Series {
	u := r.res.Usage
	merge := max(1, (len(u.Busy)+sharePoints-1)/sharePoints)
	busy, xs := mergeSteps(u.Busy, merge, u.Step, u.End-u.Start)
	inTop := map[int]bool{}
	var layers []svgplot.Series
	for i, a := range top {
		inTop[a] = true
		v, _ := mergeSteps(u.ByAccount[a], merge, u.Step, u.End-u.Start)
		layers = append(layers, svgplot.Series{Name: legend[i].Name, Color: legend[i].Color, Y: v})
	}
	if hasOther {
		other := make([]float64, len(u.Busy))
		for a, s := range u.ByAccount {
			if !inTop[a] {
				for i, v := range s {
					other[i] += v
				}
			}
		}
		v, _ := mergeSteps(other, merge, u.Step, u.End-u.Start)
		layers = append(layers, svgplot.Series{Name: "other", Color: svgplot.Other, Y: v})
	}
	for i := range xs {
		xs[i] /= float64(unit)
	}
	for k := range layers {
		layers[k].X = xs
		for i, v := range layers[k].Y {
			layers[k].Y[i] = 0
			if busy[i] > 1e-9 {
				layers[k].Y[i] = 100 * v / busy[i]
			}
		}
	}
	return layers
}

// mergeSteps merges every m consecutive steps of a series of means (steps
// of width step, the last one ending at span) into their time-weighted
// mean, and returns the merged means with the midpoints of the merged
// steps (as durations in float64 nanoseconds).
func mergeSteps(means []float64, m int, step, span time.Duration) ([]float64, []float64) {
	var out, mid []float64
	for i := 0; i < len(means); i += m {
		sum, width := 0.0, 0.0
		from := time.Duration(i) * step
		to := from
		for j := i; j < min(i+m, len(means)); j++ {
			to = min(time.Duration(j+1)*step, span)
			d := float64(to - time.Duration(j)*step)
			sum += means[j] * d
			width += d
		}
		v := 0.0
		if width > 0 {
			v = sum / width
		}
		out = append(out, v)
		mid = append(mid, float64(from+to)/2)
	}
	return out, mid
}
