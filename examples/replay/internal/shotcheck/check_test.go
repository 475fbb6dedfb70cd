package main

import (
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/examples/replay/internal/report"
)

// testLayout is one figure of 400 x 300 at (20, 50) with one plot area
// and two series colours.
var testLayout = report.Layout{Width: 500, Height: 350, Figures: []report.Region{{
	ID: "busy", X: 20, Y: 50, W: 400, H: 300, Colors: []string{"#0072B2", "#E69F00"},
	Plots: []report.Area{{X: 90, Y: 120, W: 300, H: 180}},
}}}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
}

// paint draws what a browser would show for testLayout, offset by dy:
// white page, grey border, grey text block, legend swatches, and, when
// data, two lines in the plot area.
func paint(dy int, data bool) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, 500, 420))
	fill(img, img.Bounds(), color.RGBA{255, 255, 255, 255})
	f := testLayout.Figures[0]
	r := image.Rect(f.X, f.Y+dy, f.X+f.W, f.Y+f.H+dy)
	grey := color.RGBA{0xC8, 0xC8, 0xC8, 255}
	fill(img, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+1), grey)
	fill(img, image.Rect(r.Min.X, r.Max.Y-1, r.Max.X, r.Max.Y), grey)
	fill(img, image.Rect(r.Min.X, r.Min.Y, r.Min.X+1, r.Max.Y), grey)
	fill(img, image.Rect(r.Max.X-1, r.Min.Y, r.Max.X, r.Max.Y), grey)
	fill(img, image.Rect(r.Min.X+10, r.Min.Y+10, r.Min.X+300, r.Min.Y+30), color.RGBA{34, 34, 34, 255})
	blue, orange := color.RGBA{0x00, 0x72, 0xB2, 255}, color.RGBA{0xE6, 0x9F, 0x00, 255}
	green := color.RGBA{0x00, 0x9E, 0x73, 255}
	fill(img, image.Rect(r.Min.X+10, r.Min.Y+40, r.Min.X+34, r.Min.Y+52), blue)
	fill(img, image.Rect(r.Min.X+60, r.Min.Y+40, r.Min.X+84, r.Min.Y+52), orange)
	fill(img, image.Rect(r.Min.X+110, r.Min.Y+40, r.Min.X+134, r.Min.Y+52), green)
	if data {
		p := f.Plots[0]
		fill(img, image.Rect(p.X, p.Y+dy+50, p.X+p.W, p.Y+dy+52), blue)
		fill(img, image.Rect(p.X, p.Y+dy+90, p.X+p.W, p.Y+dy+92), orange)
	}
	return img
}

func TestCheck(t *testing.T) {
	blank := image.NewRGBA(image.Rect(0, 0, 500, 420))
	fill(blank, blank.Bounds(), color.RGBA{255, 255, 255, 255})
	tall := testLayout
	tall.Figures = []report.Region{testLayout.Figures[0]}
	tall.Figures[0].H = 500
	tests := []struct {
		name   string
		img    image.Image
		layout report.Layout
		want   []string // substrings of the problems; none: passes
	}{
		{"a drawn figure passes", paint(0, true), testLayout, nil},
		{"blank page", blank, testLayout, []string{"border", "inked", "saturated colours", "series colour #0072B2", "plot area 1"}},
		{"figure elsewhere on the page", paint(30, true), testLayout, []string{"border"}},
		{"empty plot area", paint(0, false), testLayout, []string{"plot area 1"}},
		{"figure below the screenshot", paint(0, true), tall, []string{"not inside the screenshot"}},
		{"empty layout", paint(0, true), report.Layout{}, []string{"no figures"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems, failed := check(tt.img, tt.layout)
			if (failed > 0) != (len(tt.want) > 0 && tt.layout.Figures != nil) {
				t.Errorf("%d figures failed", failed)
			}
			all := strings.Join(problems, "\n")
			if len(tt.want) == 0 && len(problems) > 0 {
				t.Fatalf("unexpected problems:\n%s", all)
			}
			if len(tt.want) > 0 && len(problems) == 0 {
				t.Fatal("no problem found")
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestRun runs the command on files: it passes a drawn figure and fails a
// blank one.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	layout := filepath.Join(dir, "layout.json")
	if _, err := report.Write(filepath.Join(dir, "unused"), report.Input{}); err == nil {
		t.Fatal("report.Write accepted no results")
	}
	js := `{"width":500,"height":350,"figures":[{"id":"busy","x":20,"y":50,"w":400,"h":300,"colors":["#0072B2","#E69F00"],"plots":[{"x":90,"y":120,"w":300,"h":180}]}]}`
	if err := os.WriteFile(layout, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		data bool
		ok   bool
	}{{"drawn", true, true}, {"no data", false, false}} {
		t.Run(tt.name, func(t *testing.T) {
			shot := filepath.Join(dir, tt.name+".png")
			f, err := os.Create(shot)
			if err != nil {
				t.Fatal(err)
			}
			if err := png.Encode(f, paint(0, tt.data)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			var out strings.Builder
			err = run([]string{"-png", shot, "-layout", layout}, &out)
			if (err == nil) != tt.ok {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			summary := "shotcheck: 1 passed, 0 failed\n"
			if !tt.ok {
				summary = "shotcheck: 0 passed, 1 failed\n"
			}
			if !strings.Contains(out.String(), "busy") || !strings.HasSuffix(out.String(), summary) {
				t.Errorf("no line for the figure or no %q:\n%s", summary, out.String())
			}
		})
	}
}
