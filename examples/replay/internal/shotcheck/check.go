package main

import (
	"fmt"
	"image"
	"image/color"
	"strconv"

	"github.com/phalanx-sched/phalanx/examples/replay/internal/report"
)

// Thresholds of the checks.
const (
	borderColour    = 0xC8C8C8 // svgplot's canvas border
	borderTolerance = 16       // per channel
	borderShare     = 0.9      // of the edge samples that must match
	minInked        = 0.03     // share of a figure's pixels not near white
	minColours      = 3        // distinct saturated colours in a figure
	colourPixels    = 20       // pixels that make a colour count as shown
	colourTolerance = 10       // per channel, for series colours
	minPlotPixels   = 100      // saturated pixels in every plot area, at least
	minPlotShare    = 0.002    // and at least this share of its area
)

// check returns a summary line per figure, the problems found and the
// number of figures that failed.
func check(img image.Image, layout report.Layout) (lines, problems []string, failed int) {
	b := img.Bounds()
	if len(layout.Figures) == 0 {
		return nil, []string{"layout has no figures"}, 0
	}
	for _, f := range layout.Figures {
		r := image.Rect(f.X, f.Y, f.X+f.W, f.Y+f.H)
		if !r.In(b) {
			problems = append(problems, fmt.Sprintf("%s: figure %v is not inside the screenshot %v (use a larger window)", f.ID, r, b))
			failed++
			continue
		}
		line, p := checkFigure(img, f)
		lines = append(lines, line)
		problems = append(problems, p...)
		if len(p) > 0 {
			failed++
		}
	}
	return lines, problems, failed
}

// checkFigure checks one figure inside the image.
func checkFigure(img image.Image, f report.Region) (string, []string) {
	var problems []string
	fail := func(format string, a ...any) { problems = append(problems, f.ID+": "+fmt.Sprintf(format, a...)) }
	if share := borderMatch(img, f); share < borderShare {
		fail("only %.0f%% of its border is where layout.json puts it: the page was laid out differently", 100*share)
	}
	r := image.Rect(f.X, f.Y, f.X+f.W, f.Y+f.H)
	inked, colours := 0, map[uint32]int{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := rgb(img.At(x, y))
			if !nearWhite(c) {
				inked++
			}
			if saturated(c) {
				colours[quantise(c)]++
			}
		}
	}
	inkShare := float64(inked) / float64(r.Dx()*r.Dy())
	if inkShare < minInked {
		fail("%.1f%% of its pixels are inked, want at least %.0f%%", 100*inkShare, 100*minInked)
	}
	distinct := 0
	for _, n := range colours {
		if n >= colourPixels {
			distinct++
		}
	}
	if distinct < minColours {
		fail("%d distinct saturated colours, want at least %d", distinct, minColours)
	}
	shown := 0
	for _, hex := range f.Colors {
		if n := countColour(img, r, hex); n >= colourPixels {
			shown++
		} else {
			fail("series colour %s drawn on %d pixels", hex, n)
		}
	}
	minData := -1
	for i, p := range f.Plots {
		a := image.Rect(p.X, p.Y, p.X+p.W, p.Y+p.H)
		n := countSaturated(img, a)
		if want := max(minPlotPixels, int(minPlotShare*float64(a.Dx()*a.Dy()))); n < want {
			fail("plot area %d %v has %d data pixels, want at least %d", i+1, a, n, want)
		}
		if minData < 0 || n < minData {
			minData = n
		}
	}
	line := fmt.Sprintf("%-7s %4dx%-4d at y=%-5d %5.1f%% inked, %3d saturated colours, %d/%d series colours, %d plot areas (fewest data pixels %d)",
		f.ID, f.W, f.H, f.Y, 100*inkShare, distinct, shown, len(f.Colors), len(f.Plots), minData)
	return line, problems
}

// borderMatch returns the share of samples along the figure's edges that
// have the border colour.
func borderMatch(img image.Image, f report.Region) float64 {
	want := hexColour(borderColour)
	match, total := 0, 0
	sample := func(x, y int) {
		total++
		if near(rgb(img.At(x, y)), want, borderTolerance) {
			match++
		}
	}
	for x := f.X + 4; x < f.X+f.W-4; x += 4 {
		sample(x, f.Y)
		sample(x, f.Y+f.H-1)
	}
	for y := f.Y + 4; y < f.Y+f.H-4; y += 4 {
		sample(f.X, y)
		sample(f.X+f.W-1, y)
	}
	return float64(match) / float64(max(1, total))
}

// countColour counts the pixels of r within colourTolerance of hex
// ("#RRGGBB").
func countColour(img image.Image, r image.Rectangle, hex string) int {
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if len(hex) != 7 || hex[0] != '#' || err != nil {
		return 0
	}
	want := hexColour(uint32(v))
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if near(rgb(img.At(x, y)), want, colourTolerance) {
				n++
			}
		}
	}
	return n
}

// countSaturated counts the saturated pixels of r.
func countSaturated(img image.Image, r image.Rectangle) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if saturated(rgb(img.At(x, y))) {
				n++
			}
		}
	}
	return n
}

// rgb8 is a colour with 8-bit channels.
type rgb8 struct{ r, g, b int }

func rgb(c color.Color) rgb8 {
	r, g, b, _ := c.RGBA()
	return rgb8{int(r >> 8), int(g >> 8), int(b >> 8)}
}

func hexColour(v uint32) rgb8 { return rgb8{int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)} }

func nearWhite(c rgb8) bool { return c.r >= 240 && c.g >= 240 && c.b >= 240 }

// saturated: a colour, not a grey (axes, grid, text and border are grey).
func saturated(c rgb8) bool {
	return max(c.r, c.g, c.b)-min(c.r, c.g, c.b) > 40
}

// quantise keeps 4 bits per channel, so anti-aliasing shades of one
// colour mostly fall together.
func quantise(c rgb8) uint32 { return uint32(c.r>>4)<<8 | uint32(c.g>>4)<<4 | uint32(c.b>>4) }

func near(a, b rgb8, tol int) bool {
	return abs(a.r-b.r) <= tol && abs(a.g-b.g) <= tol && abs(a.b-b.b) <= tol
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
