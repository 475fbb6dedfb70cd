package svgplot

import (
	"fmt"
	"math"
	"strings"
)

// Lines draws each series as a line in panel p.
func (c *Canvas) Lines(p Panel, series []Series) {
	area, xs, ys := c.frame(p)
	clip := c.clip(area)
	for _, s := range series {
		var d strings.Builder
		pen := false
		for i := range min(len(s.X), len(s.Y)) {
			if math.IsNaN(s.Y[i]) || math.IsNaN(s.X[i]) {
				pen = false
				continue
			}
			cmd := 'L'
			if !pen {
				cmd, pen = 'M', true
			}
			fmt.Fprintf(&d, "%c%.1f %.1f", cmd, xs.at(s.X[i]), ys.at(s.Y[i]))
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&c.body, `<path class="series" data-name="%s" clip-path="url(#%s)" d="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"%s/>`+"\n",
			esc(s.Name), clip, d.String(), s.Color, dash)
	}
}

// Stacked draws the series as areas stacked from the Y axis minimum in
// panel p, the first series at the bottom. The series share the X values
// of the first one; a missing or NaN value counts as zero.
func (c *Canvas) Stacked(p Panel, series []Series) {
	area, xs, ys := c.frame(p)
	clip := c.clip(area)
	if len(series) == 0 {
		return
	}
	x := series[0].X
	lower := make([]float64, len(x))
	for i := range lower {
		lower[i] = p.Y.Min
	}
	upper := make([]float64, len(x))
	for _, s := range series {
		for i := range x {
			v := 0.0
			if i < len(s.Y) && !math.IsNaN(s.Y[i]) {
				v = s.Y[i]
			}
			upper[i] = lower[i] + v
		}
		var d strings.Builder
		for i := range x {
			cmd := 'L'
			if i == 0 {
				cmd = 'M'
			}
			fmt.Fprintf(&d, "%c%.1f %.1f", cmd, xs.at(x[i]), ys.at(upper[i]))
		}
		for i := len(x) - 1; i >= 0; i-- {
			fmt.Fprintf(&d, "L%.1f %.1f", xs.at(x[i]), ys.at(lower[i]))
		}
		d.WriteByte('Z')
		fmt.Fprintf(&c.body, `<path class="series" data-name="%s" clip-path="url(#%s)" d="%s" fill="%s" stroke="none"/>`+"\n",
			esc(s.Name), clip, d.String(), s.Color)
		lower, upper = upper, lower
	}
}

// Bars draws one group of bars per category in panel p, one bar per
// series in each group; series.Y[i] is the value of category i. Bars rise
// from the Y axis minimum.
func (c *Canvas) Bars(p Panel, categories []string, series []Series) {
	n := max(1, len(categories))
	p.X = Axis{Label: p.X.Label, Min: 0, Max: float64(n)}
	for i, name := range categories {
		p.X.Ticks = append(p.X.Ticks, Tick{At: float64(i) + 0.5, Label: name})
	}
	area, xs, ys := c.frame(p)
	clip := c.clip(area)
	group := area.W / float64(n)
	bar := group * 0.8 / float64(max(1, len(series)))
	for k, s := range series {
		fmt.Fprintf(&c.body, `<g class="series" data-name="%s" fill="%s" clip-path="url(#%s)">`+"\n", esc(s.Name), s.Color, clip)
		for i := range min(n, len(s.Y)) {
			if math.IsNaN(s.Y[i]) {
				continue
			}
			x := xs.at(float64(i)) + group*0.1 + float64(k)*bar
			top, base := ys.at(s.Y[i]), ys.at(p.Y.Min)
			fmt.Fprintf(&c.body, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`+"\n", x, math.Min(top, base), bar, math.Abs(base-top))
		}
		c.body.WriteString("</g>\n")
	}
}

// frame draws the panel title, grid, axes, ticks and axis labels of p,
// records its plot area and returns it with the two scales.
func (c *Canvas) frame(p Panel) (Rect, scale, scale) {
	area := plotArea(p)
	c.plots = append(c.plots, area)
	xs := newScale(p.X, area.X, area.X+area.W)
	ys := newScale(p.Y, area.Y+area.H, area.Y)
	if p.Title != "" {
		fmt.Fprintf(&c.body, `<text class="panel-title" x="%.1f" y="%.1f" font-size="14" font-weight="bold" fill="%s">%s</text>`+"\n",
			area.X, area.Y-8, textColour, esc(p.Title))
	}
	bottom, right := area.Y+area.H, area.X+area.W
	// Grid and ticks along X.
	c.body.WriteString(`<g class="axis x">` + "\n")
	for _, t := range ticks(p.X) {
		x := xs.at(t.At)
		fmt.Fprintf(&c.body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x, area.Y, x, bottom, gridColour)
		fmt.Fprintf(&c.body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x, bottom, x, bottom+5, axisColour)
		fmt.Fprintf(&c.body, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="12" fill="%s">%s</text>`+"\n", x, bottom+18, textColour, esc(t.Label))
	}
	fmt.Fprintf(&c.body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", area.X, bottom, right, bottom, axisColour)
	fmt.Fprintf(&c.body, `<text class="axis-label" x="%.1f" y="%.1f" text-anchor="middle" font-size="13" fill="%s">%s</text>`+"\n",
		area.X+area.W/2, bottom+37, textColour, esc(p.X.Label))
	c.body.WriteString("</g>\n")
	// Grid and ticks along Y.
	c.body.WriteString(`<g class="axis y">` + "\n")
	for _, t := range ticks(p.Y) {
		y := ys.at(t.At)
		fmt.Fprintf(&c.body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, area.X, y, right, y, gridColour)
		fmt.Fprintf(&c.body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, area.X-5, y, area.X, y, axisColour)
		fmt.Fprintf(&c.body, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="12" fill="%s">%s</text>`+"\n", area.X-8, y+4, textColour, esc(t.Label))
	}
	fmt.Fprintf(&c.body, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", area.X, area.Y, area.X, bottom, axisColour)
	fmt.Fprintf(&c.body, `<text class="axis-label" transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle" font-size="13" fill="%s">%s</text>`+"\n",
		p.Rect.X+16, area.Y+area.H/2, textColour, esc(p.Y.Label))
	c.body.WriteString("</g>\n")
	return area, xs, ys
}

// clip defines a clip path for area and returns its id.
func (c *Canvas) clip(area Rect) string {
	c.clips++
	id := fmt.Sprintf("%s-clip%d", c.id, c.clips)
	fmt.Fprintf(&c.body, `<clipPath id="%s"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>`+"\n",
		id, area.X, area.Y, area.W, area.H)
	return id
}

// ticks returns the axis's ticks: its own, or automatic ones.
func ticks(a Axis) []Tick {
	if a.Ticks != nil {
		var in []Tick
		for _, t := range a.Ticks {
			if t.At >= a.Min && t.At <= a.Max {
				in = append(in, t)
			}
		}
		return in
	}
	format := a.Format
	if a.Log {
		if a.Min <= 0 || a.Max <= a.Min {
			return nil
		}
		var out []Tick
		for e := math.Ceil(math.Log10(a.Min) - 1e-9); e <= math.Log10(a.Max)+1e-9; e++ {
			v := math.Pow(10, e)
			label := formatNumber(v, v)
			if format != nil {
				label = format(v)
			}
			out = append(out, Tick{At: v, Label: label})
		}
		return out
	}
	if !(a.Max > a.Min) {
		return nil
	}
	step := niceStep((a.Max - a.Min) / 6)
	var out []Tick
	for v := math.Ceil(a.Min/step-1e-9) * step; v <= a.Max+step*1e-9; v += step {
		v = math.Round(v/step)*step + 0 // + 0 turns -0 into 0
		label := formatNumber(v, step)
		if format != nil {
			label = format(v)
		}
		out = append(out, Tick{At: v, Label: label})
	}
	return out
}

// niceStep returns the round number (1, 2 or 5 times a power of ten)
// nearest to raw on a log scale.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	best := p
	for _, m := range []float64{2, 5, 10} {
		if math.Abs(math.Log(m*p/raw)) < math.Abs(math.Log(best/raw)) {
			best = m * p
		}
	}
	return best
}
