package report

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/benchmarks/sim"
	"github.com/phalanx-sched/phalanx/examples/replay/internal/svgplot"
	"github.com/phalanx-sched/phalanx/internal/baseline"
	"github.com/phalanx-sched/phalanx/topology"
)

// replay runs a seeded synthetic workload under three runs (two of them
// phalanx, so labels carry the placement), recording usage.
func replay(t *testing.T) []*sim.Result {
	t.Helper()
	jobs := sim.Synthetic(3, 300, 8*time.Hour, 8)
	c := topology.Default2000()
	var out []*sim.Result
	for _, cfg := range []sim.Config{
		{Policy: sim.GangFIFO, Placement: baseline.LeafPack},
		{Policy: sim.Phalanx, Placement: baseline.LeafPack},
		{Policy: sim.Phalanx, Placement: baseline.FirstFit},
	} {
		cfg.Cluster, cfg.ClusterName, cfg.Trace, cfg.Seed, cfg.UsagePoints = c, "default-2k", "synthetic", 1, UsagePoints
		res, err := sim.Run(cfg, jobs)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

// svgSeries decodes every <svg> of page as XML and returns, per SVG, its
// width, height and number of elements of class "series".
func svgSeries(t *testing.T, page string) [][3]int {
	t.Helper()
	var out [][3]int
	for _, doc := range regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1) {
		d := xml.NewDecoder(strings.NewReader(doc))
		var w, h, series int
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("SVG not well-formed: %v", err)
			}
			if se, ok := tok.(xml.StartElement); ok {
				for _, a := range se.Attr {
					switch {
					case se.Name.Local == "svg" && a.Name.Local == "width":
						w, _ = strconv.Atoi(a.Value)
					case se.Name.Local == "svg" && a.Name.Local == "height":
						h, _ = strconv.Atoi(a.Value)
					case a.Name.Local == "class" && a.Value == "series":
						series++
					}
				}
			}
		}
		out = append(out, [3]int{w, h, series})
	}
	return out
}

func TestWrite(t *testing.T) {
	results := replay(t)
	dir := t.TempDir()
	layout, err := Write(dir, Input{Title: "synthetic <test>", Command: "go run ./examples/replay -report out", Results: results})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	t.Run("self-contained", func(t *testing.T) { checkSelfContained(t, page) })
	t.Run("figures", func(t *testing.T) { checkFigures(t, page, layout, results) })
	t.Run("tables and labels", func(t *testing.T) {
		for _, w := range []string{"<h2>Metrics</h2>", "gang-fifo", "phalanx/leaf-pack", "phalanx/first-fit", sim.Header(results), "65-512 GPUs"} {
			if !strings.Contains(page, w) {
				t.Errorf("page lacks %q", w)
			}
		}
	})
	t.Run("standalone SVG files", func(t *testing.T) {
		for i, f := range layout.Figures {
			svg, err := os.ReadFile(filepath.Join(dir, f.ID+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			if got := svgSeries(t, string(svg)); len(got) != 1 || got[0] != svgSeries(t, page)[i] {
				t.Errorf("%s.svg: %v", f.ID, got)
			}
		}
	})
	t.Run("layout.json", func(t *testing.T) {
		js, err := os.ReadFile(filepath.Join(dir, "layout.json"))
		if err != nil {
			t.Fatal(err)
		}
		var got Layout
		if err := json.Unmarshal(js, &got); err != nil || !reflect.DeepEqual(got, layout) {
			t.Fatalf("layout.json %+v (%v), returned %+v", got, err, layout)
		}
	})
}

// checkSelfContained: nothing on the page loads anything, and text is
// escaped.
func checkSelfContained(t *testing.T, page string) {
	for _, bad := range []string{"<script", "<link", "src=", "@import", "<img", "<iframe"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if n, ns := strings.Count(page, "http"), strings.Count(page, `xmlns="http://www.w3.org/2000/svg"`); n != ns {
		t.Errorf("%d mentions of http, %d of them SVG namespaces", n, ns)
	}
	if strings.Contains(page, "<test>") || !strings.Contains(page, "synthetic &lt;test&gt;") {
		t.Error("title not escaped")
	}
}

// checkFigures: four SVGs, each the size and at the place the layout
// says, with one series per run (per run and class, per run and account
// layer) and one plot area per panel, inside the figure.
func checkFigures(t *testing.T, page string, layout Layout, results []*sim.Result) {
	classes := 0
	for _, w := range results[0].Waits {
		if w.Jobs > 0 {
			classes++
		}
	}
	layers := min(shareAccounts, len(results[0].Usage.Accounts))
	if len(results[0].Usage.Accounts) > shareAccounts {
		layers++
	}
	svgs := svgSeries(t, page)
	wantSeries := []int{3, 3 * classes, 3, 3 * layers}
	wantPlots := []int{1, classes, 1, 3}
	if len(svgs) != 4 || len(layout.Figures) != 4 {
		t.Fatalf("%d SVGs, %d figures in the layout, want 4", len(svgs), len(layout.Figures))
	}
	y := headerHeight
	for i, f := range layout.Figures {
		if svgs[i][0] != f.W || svgs[i][1] != f.H || f.Y != y || f.X != pageMargin {
			t.Errorf("%s: SVG %dx%d, layout %+v, want y %d", f.ID, svgs[i][0], svgs[i][1], f, y)
		}
		y += f.H + figureGap
		if svgs[i][2] != wantSeries[i] || len(f.Plots) != wantPlots[i] {
			t.Errorf("%s: %d series, %d plots; want %d, %d", f.ID, svgs[i][2], len(f.Plots), wantSeries[i], wantPlots[i])
		}
		for _, p := range f.Plots {
			if p.X < f.X || p.Y < f.Y || p.X+p.W > f.X+f.W || p.Y+p.H > f.Y+f.H {
				t.Errorf("%s: plot %+v outside the figure", f.ID, p)
			}
		}
	}
	if layout.Height != y-figureGap {
		t.Errorf("layout height %d, want %d", layout.Height, y-figureGap)
	}
}

func TestWriteErrors(t *testing.T) {
	res := replay(t)[0]
	res.Usage = nil
	if _, err := Write(t.TempDir(), Input{Results: []*sim.Result{res}}); !errors.Is(err, ErrNoUsage) {
		t.Fatalf("Write without usage: %v", err)
	}
	if _, err := Write(t.TempDir(), Input{}); err == nil {
		t.Fatal("Write without results succeeded")
	}
}

// TestShareLayers: each run's layers add up to 100% where GPUs were busy
// and to 0 where none were, in at most about sharePoints points.
func TestShareLayers(t *testing.T) {
	runs := newRuns(replay(t))
	top := topAccounts(runs, 3)
	u := runs[0].res.Usage
	if len(top) != 3 {
		t.Fatalf("top %v", top)
	}
	for _, r := range runs {
		legend := []svgplot.Series{{Name: u.Accounts[top[0]]}, {Name: u.Accounts[top[1]]}, {Name: u.Accounts[top[2]]}}
		layers := shareLayers(r, top, true, time.Hour, legend)
		if len(layers) != 4 || len(layers[0].Y) > sharePoints+1 {
			t.Fatalf("%d layers of %d points", len(layers), len(layers[0].Y))
		}
		for i := range layers[0].Y {
			sum := 0.0
			for _, l := range layers {
				sum += l.Y[i]
			}
			if math.Abs(sum-100) > 1e-6 && sum != 0 {
				t.Fatalf("%s: step %d: layers add up to %v%%", r.label, i, sum)
			}
		}
	}
}

func TestMergeSteps(t *testing.T) {
	got, mid := mergeSteps([]float64{2, 4, 6}, 2, 10, 25)
	// Steps [0,10) [10,20) [20,25): merged [0,20) and [20,25).
	if !reflect.DeepEqual(got, []float64{3, 6}) || !reflect.DeepEqual(mid, []float64{10, 22.5}) {
		t.Fatalf("merged %v at %v", got, mid)
	}
}

func TestShortDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{0, "0s"}, {45 * time.Second, "45s"}, {12 * time.Minute, "12m"}, {3*time.Hour + 12*time.Minute, "3.2h"}, {98 * time.Hour, "4.1d"}} {
		if got := shortDuration(tt.d); got != tt.want {
			t.Errorf("shortDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestCDFSeries: the CDF starts at the floor with the share of jobs at or
// under it, rises to 1 at the largest wait and stays there to the right
// edge, so a class whose jobs all started at once is still a line.
func TestCDFSeries(t *testing.T) {
	tests := []struct {
		name   string
		waits  []time.Duration
		xs, ys []float64
	}{
		{"no waits", []time.Duration{0, 0, 0}, []float64{60, 3600}, []float64{1, 1}},
		{"mixed", []time.Duration{0, 30 * time.Second, 10 * time.Minute, time.Hour},
			[]float64{60, 600, 3600}, []float64{0.5, 0.75, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs, ys := cdfSeries(tt.waits, 3600)
			if !reflect.DeepEqual(xs, tt.xs) || !reflect.DeepEqual(ys, tt.ys) {
				t.Fatalf("CDF %v %v, want %v %v", xs, ys, tt.xs, tt.ys)
			}
		})
	}
}

// TestDocsFigures: the figures committed under docs/ (made by the replay
// of Philly at load 3, see the README) are well-formed SVG with one
// series per policy.
func TestDocsFigures(t *testing.T) {
	for _, name := range []string{"replay-busy.svg", "replay-leaves.svg"} {
		svg, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := svgSeries(t, string(svg)); len(got) != 1 || got[0][2] != 4 {
			t.Errorf("%s: %v, want one SVG with 4 series", name, got)
		}
	}
}

// TestWaitClassesDiffer: runs that wait in different size classes (one
// rejected a 16-GPU gang that the other ran; here the second result is
// the first with the gang marked rejected) make a report, in either
// order, with the class drawn for the run that has it, instead of
// panicking (index out of range) or leaving the class out.
func TestWaitClassesDiffer(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []sim.TraceJob{
		{ID: "small", Account: "x", Duration: time.Minute, GPUs: 1, Nodes: 1, GPUsPerNode: 1},
		{ID: "gang", Account: "x", Duration: time.Minute, GPUs: 16, Nodes: 2, GPUsPerNode: 8},
	}
	ran, err := sim.Run(sim.Config{Cluster: c, ClusterName: "two", Trace: "t", Policy: sim.GangFIFO, UsagePoints: UsagePoints}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	rejected := *ran
	rejected.Policy, rejected.Outcomes = "rejecting", slices.Clone(ran.Outcomes)
	rejected.Outcomes[1] = sim.Outcome{ID: "gang", Account: "x", GPUs: 16, Nodes: 2, Rejected: true}
	for _, tt := range []struct {
		name    string
		results []*sim.Result
	}{
		{"rejecting run first", []*sim.Result{&rejected, ran}},
		{"rejecting run second", []*sim.Result{ran, &rejected}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Write(dir, Input{Title: "t", Command: "c", Results: tt.results}); err != nil {
				t.Fatal(err)
			}
			page, err := os.ReadFile(filepath.Join(dir, "index.html"))
			if err != nil {
				t.Fatal(err)
			}
			if want := "9-64 GPUs: 1 jobs"; !strings.Contains(string(page), want) {
				t.Fatalf("the wait figure lacks %q", want)
			}
		})
	}
}
