package svgplot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Palette holds colours for up to eight series that a reader must tell
// apart (policies): the Okabe-Ito colour-blind-safe set without its black
// and yellow, then two of Paul Tol's. Every colour is saturated, so a
// series never looks like a grey axis or grid line.
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#882255", "#44AA99"}

// Categorical holds nine distinct colours for stacked layers (the
// Tableau 10 set without its grey); Other is the grey for a remainder
// layer.
var Categorical = []string{"#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F", "#EDC948", "#B07AA1", "#FF9DA7", "#9C755F"}

// Other is the colour of a remainder layer ("other").
const Other = "#BAB0AC"

// Colours of the chart furniture.
const (
	background = "#FFFFFF"
	border     = "#C8C8C8"
	gridColour = "#E8E8E8"
	axisColour = "#444444"
	textColour = "#222222"
)

// Rect is a region of a canvas in pixels, from its top-left corner.
type Rect struct{ X, Y, W, H float64 }

// Tick is one labelled position on an axis.
type Tick struct {
	At    float64
	Label string
}

// Axis is a linear or logarithmic (base 10) scale from Min to Max.
type Axis struct {
	Label    string
	Min, Max float64
	// Log makes the scale logarithmic; Min must then be positive, and
	// values at or below Min are drawn at Min.
	Log bool
	// Ticks, when set, replaces the automatic ticks (round numbers on a
	// linear axis, powers of ten on a log axis).
	Ticks []Tick
	// Format labels the automatic ticks (nil: the shortest decimal).
	Format func(float64) string
}

// Series is one line, one stacked layer or one set of bars. For bars, Y
// holds one value per category and X is unused.
type Series struct {
	Name   string
	Color  string
	X, Y   []float64
	Dashed bool
}

// Panel is one chart on a canvas: its rectangle (axis labels and title
// included), an optional title above the plot area, and its axes. For
// bars, X.Min, X.Max and X.Log are unused.
type Panel struct {
	Rect  Rect
	Title string
	X, Y  Axis
}

// Canvas is one SVG image being drawn.
type Canvas struct {
	id    string
	w, h  int
	body  strings.Builder
	clips int
	plots []Rect
}

// Margins between a panel's rectangle and its plot area.
const (
	marginLeft   = 66
	marginRight  = 14
	marginBottom = 44
	marginTop    = 10
	titleSpace   = 22
)

// New starts a canvas of w x h pixels with a white background, a one
// pixel grey border on its edge, and title at its top left. The ids of
// the elements it defines (clip paths) start with id: give every canvas
// of one HTML page its own.
func New(id string, w, h int, title string) *Canvas {
	c := &Canvas{id: id, w: w, h: h}
	fmt.Fprintf(&c.body, `<rect x="0.5" y="0.5" width="%d" height="%d" fill="%s" stroke="%s" stroke-width="1"/>`+"\n",
		w-1, h-1, background, border)
	if title != "" {
		fmt.Fprintf(&c.body, `<text class="title" x="14" y="24" font-size="17" font-weight="bold" fill="%s">%s</text>`+"\n",
			textColour, esc(title))
	}
	return c
}

// Bytes returns the SVG document drawn so far.
func (c *Canvas) Bytes() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Liberation Sans, Arial, sans-serif">`+"\n",
		c.w, c.h, c.w, c.h)
	b.WriteString(c.body.String())
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// Plots returns the plot areas (inside the axes) of the panels drawn so
// far, in drawing order.
func (c *Canvas) Plots() []Rect { return c.plots }

// Text writes a note at (x, y); anchor is "start", "middle" or "end".
func (c *Canvas) Text(x, y float64, anchor string, size int, s string) {
	fmt.Fprintf(&c.body, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d" fill="%s">%s</text>`+"\n",
		x, y, anchor, size, textColour, esc(s))
}

// Legend draws a swatch and the name of each series in a row from
// (x, y), the swatches' vertical centre, wrapping at the canvas edge. A
// line series gets a line swatch, others a filled square.
func (c *Canvas) Legend(x, y float64, series []Series, lines bool) {
	c.body.WriteString(`<g class="legend">` + "\n")
	x0 := x
	for _, s := range series {
		width := 30 + 7.2*float64(len([]rune(s.Name))) + 18
		if x+width > float64(c.w)-10 && x > x0 {
			x, y = x0, y+22
		}
		if lines {
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="6 4"`
			}
			fmt.Fprintf(&c.body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="4"%s/>`+"\n",
				x, y, x+24, y, s.Color, dash)
		} else {
			fmt.Fprintf(&c.body, `<rect x="%.1f" y="%.1f" width="24" height="12" fill="%s"/>`+"\n", x, y-6, s.Color)
		}
		fmt.Fprintf(&c.body, `<text x="%.1f" y="%.1f" font-size="13" fill="%s">%s</text>`+"\n", x+30, y+4.5, textColour, esc(s.Name))
		x += width
	}
	c.body.WriteString("</g>\n")
}

// scale maps data values to pixels along one axis.
type scale struct {
	lo, hi float64 // in data units (log10 of them on a log axis)
	log    bool
	min    float64 // the axis minimum, in data units
	p0, p1 float64 // pixels of lo and hi
}

func newScale(a Axis, p0, p1 float64) scale {
	s := scale{lo: a.Min, hi: a.Max, log: a.Log, min: a.Min, p0: p0, p1: p1}
	if a.Log {
		s.lo, s.hi = math.Log10(a.Min), math.Log10(a.Max)
	}
	if s.hi <= s.lo {
		s.hi = s.lo + 1
	}
	return s
}

// at returns the pixel of v.
func (s scale) at(v float64) float64 {
	if s.log {
		v = math.Log10(max(v, s.min))
	}
	return s.p0 + (v-s.lo)/(s.hi-s.lo)*(s.p1-s.p0)
}

// plotArea returns the plot area of p.
func plotArea(p Panel) Rect {
	top := float64(marginTop)
	if p.Title != "" {
		top += titleSpace
	}
	return Rect{X: p.Rect.X + marginLeft, Y: p.Rect.Y + top, W: p.Rect.W - marginLeft - marginRight, H: p.Rect.H - top - marginBottom}
}

// esc escapes s for SVG text and attribute values.
func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")
	return r.Replace(s)
}

// formatNumber renders v with as many decimals as step needs.
func formatNumber(v, step float64) string {
	dec := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	return strconv.FormatFloat(v, 'f', dec, 64)
}
