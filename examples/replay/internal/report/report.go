package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"

	"github.com/phalanx-sched/phalanx/benchmarks/sim"
	"github.com/phalanx-sched/phalanx/examples/replay/internal/svgplot"
)

// UsagePoints is the sim.Config.UsagePoints the report wants: at most
// 2,000 steps per series.
const UsagePoints = 2000

// Page geometry in CSS pixels.
const (
	PageWidth    = 1400 // the window width the page is laid out for
	pageMargin   = 20   // left margin of the column
	ColumnWidth  = PageWidth - 2*pageMargin
	headerHeight = 130
	figureGap    = 24
)

// ErrNoUsage is returned for a result recorded without usage series.
var ErrNoUsage = errors.New("report: result has no usage series (set sim.Config.UsagePoints)")

// Input is what a report shows.
type Input struct {
	// Title heads the page; Command is the command line that made it.
	Title, Command string
	// Results are the runs, in the order of the tables.
	Results []*sim.Result
}

// Layout says where the figures of a report land on its page, in CSS
// pixels from the page's top-left corner (a screenshot at device scale 1
// uses the same numbers).
type Layout struct {
	Width   int      `json:"width"`
	Height  int      `json:"height"` // bottom of the last figure
	Figures []Region `json:"figures"`
}

// Region is one figure: its rectangle, the colours of its series (each
// drawn in it at least in the legend), and its plot areas.
type Region struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	X      int      `json:"x"`
	Y      int      `json:"y"`
	W      int      `json:"w"`
	H      int      `json:"h"`
	Colors []string `json:"colors"`
	Plots  []Area   `json:"plots"`
}

// Area is a plot area in page pixels.
type Area struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

// figure is one drawn SVG figure.
type figure struct {
	id, title string
	canvas    *svgplot.Canvas
	w, h      int
	colors    []string
}

// Write writes dir/index.html and dir/layout.json for in, and each figure
// as a standalone SVG file (busy.svg, waits.svg, leaves.svg, shares.svg),
// creating dir.
func Write(dir string, in Input) (Layout, error) {
	if len(in.Results) == 0 {
		return Layout{}, errors.New("report: no results")
	}
	for _, r := range in.Results {
		if r.Usage == nil {
			return Layout{}, fmt.Errorf("%w: run %s/%s", ErrNoUsage, r.Policy, r.Placement)
		}
	}
	runs := newRuns(in.Results)
	figs := []figure{busyFigure(runs), waitFigure(runs), leavesFigure(runs), shareFigure(runs)}
	page, layout := renderPage(in, figs)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Layout{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), page, 0o644); err != nil {
		return Layout{}, err
	}
	for _, f := range figs {
		if err := os.WriteFile(filepath.Join(dir, f.id+".svg"), f.canvas.Bytes(), 0o644); err != nil {
			return Layout{}, err
		}
	}
	js, err := json.MarshalIndent(layout, "", "  ")
	if err != nil {
		return Layout{}, err
	}
	return layout, os.WriteFile(filepath.Join(dir, "layout.json"), append(js, '\n'), 0o644)
}

// style fixes every size the layout depends on.
const style = `*{box-sizing:border-box}
html,body{margin:0;padding:0;background:#fff;color:#222;font-family:"DejaVu Sans","Liberation Sans",Arial,sans-serif}
.page{position:absolute;left:20px;top:0;width:1360px}
header{height:130px;overflow:hidden;padding-top:14px}
header h1{margin:0 0 8px 0;font-size:24px;line-height:30px}
header p{margin:0 0 6px 0;font-size:14px;line-height:18px}
code{font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:13px;background:#f3f3f3;padding:1px 4px}
figure{margin:0;padding:0}
figure svg{display:block}
h2{font-size:19px;margin:28px 0 8px 0}
table{border-collapse:collapse;font-size:13px;margin-bottom:8px}
th,td{border:1px solid #d4d4d4;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#f3f3f3;white-space:normal;vertical-align:bottom}
td.l,th.l{text-align:left}
p.note{font-size:13px;color:#555;max-width:1100px}
`

// renderPage returns the HTML page and its layout.
func renderPage(in Input, figs []figure) ([]byte, Layout) {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>\n%s</style>\n</head>\n<body>\n<div class=\"page\">\n",
		html.EscapeString(in.Title), style)
	fmt.Fprintf(&b, "<header>\n<h1>%s</h1>\n<p><code>%s</code></p>\n<p>%s</p>\n<p>Runs: %s. Every figure is drawn from the same replay as the tables below.</p>\n</header>\n",
		html.EscapeString(in.Title), html.EscapeString(in.Command), html.EscapeString(sim.Header(in.Results)), html.EscapeString(runNames(in.Results)))
	layout := Layout{Width: PageWidth}
	y := headerHeight
	for _, f := range figs {
		fmt.Fprintf(&b, "<figure id=\"%s\" style=\"height:%dpx;margin-bottom:%dpx\">\n", f.id, f.h, figureGap)
		b.Write(f.canvas.Bytes())
		b.WriteString("</figure>\n")
		reg := Region{ID: f.id, Title: f.title, X: pageMargin, Y: y, W: f.w, H: f.h, Colors: f.colors}
		for _, p := range f.canvas.Plots() {
			reg.Plots = append(reg.Plots, Area{X: pageMargin + int(p.X), Y: y + int(p.Y), W: int(p.W), H: int(p.H)})
		}
		layout.Figures = append(layout.Figures, reg)
		y += f.h + figureGap
		layout.Height = y - figureGap
	}
	writeTables(&b, in.Results)
	b.WriteString("</div>\n</body>\n</html>\n")
	return []byte(b.String()), layout
}

// runNames lists the runs' labels.
func runNames(results []*sim.Result) string {
	var names []string
	for _, r := range newRuns(results) {
		names = append(names, r.label)
	}
	return strings.Join(names, ", ")
}
