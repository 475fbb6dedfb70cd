package svgplot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// element is one decoded SVG element: its name, attributes and text.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

// decode parses doc as XML, failing the test when it is not well formed,
// and returns its elements in document order.
func decode(t *testing.T, doc []byte) []element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var out []element
	var open []int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			open = append(open, len(out)-1)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(tok)
			}
		}
	}
	if len(out) == 0 || out[0].name != "svg" || out[0].attrs["xmlns"] != "http://www.w3.org/2000/svg" {
		t.Fatalf("root is not an svg element: %+v", out)
	}
	return out
}

// withClass returns the elements whose class list holds class.
func withClass(els []element, class string) []element {
	var out []element
	for _, e := range els {
		if slices.Contains(strings.Fields(e.attrs["class"]), class) {
			out = append(out, e)
		}
	}
	return out
}

// texts returns the text of every text element.
func texts(els []element) []string {
	var out []string
	for _, e := range els {
		if e.name == "text" {
			out = append(out, e.text)
		}
	}
	return out
}

// chartCase is one drawing and what its SVG must hold.
type chartCase struct {
	name        string
	draw        func(c *Canvas)
	series      int    // elements of class "series"
	seriesElem  string // their element name
	wantTexts   []string
	plots       int // panels drawn
	wantInPaths []string
}

func TestCharts(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4}
	three := []Series{
		{Name: "a <&> b", Color: Palette[0], X: x, Y: []float64{1, 2, 3, 2, 1}},
		{Name: "second", Color: Palette[1], X: x, Y: []float64{2, 2, math.NaN(), 1, 0}, Dashed: true},
		{Name: "third", Color: Palette[2], X: x, Y: []float64{0, 1, 0, 1, 0}},
	}
	panel := Panel{Rect: Rect{X: 0, Y: 40, W: 600, H: 300}, Title: "panel one",
		X: Axis{Label: "time (days)", Min: 0, Max: 4}, Y: Axis{Label: "GPUs busy", Min: 0, Max: 6}}
	logPanel := panel
	logPanel.Y = Axis{Label: "wait", Min: 1, Max: 1e4, Log: true}
	tests := []chartCase{
		{"lines", func(c *Canvas) { c.Lines(panel, three); c.Legend(80, 30, three, true) }, 3, "path",
			[]string{"time (days)", "GPUs busy", "panel one", "a <&> b", "second", "0", "2", "4", "6"}, 1, nil},
		{"stacked", func(c *Canvas) { c.Stacked(panel, three) }, 3, "path",
			[]string{"time (days)", "GPUs busy"}, 1, []string{"Z"}},
		{"bars", func(c *Canvas) { c.Bars(panel, []string{"1", "2-4", ">4"}, three[:2]) }, 2, "g",
			[]string{"1", "2-4", ">4", "time (days)", "GPUs busy"}, 1, nil},
		{"log axis", func(c *Canvas) { c.Lines(logPanel, three[:1]) }, 1, "path",
			[]string{"1", "10", "100", "1000", "10000", "wait"}, 1, nil},
		{"two panels", func(c *Canvas) {
			c.Lines(panel, three[:1])
			p := panel
			p.Rect.X = 600
			c.Stacked(p, three)
		}, 4, "path", []string{"panel one"}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New("t", 1200, 360, "chart title")
			tt.draw(c)
			checkChart(t, c, tt)
		})
	}
}

// checkChart checks the SVG of c against tt: well-formed, the series
// elements, two axes and two axis labels per panel, the texts, ids with
// the canvas prefix, the plot areas and the path contents.
func checkChart(t *testing.T, c *Canvas, tt chartCase) {
	els := decode(t, c.Bytes())
	series := withClass(els, "series")
	if len(series) != tt.series {
		t.Fatalf("%d series elements, want %d", len(series), tt.series)
	}
	for _, s := range series {
		if s.name != tt.seriesElem {
			t.Errorf("series element %s, want %s", s.name, tt.seriesElem)
		}
		for _, w := range tt.wantInPaths {
			if !strings.Contains(s.attrs["d"], w) {
				t.Errorf("path %q lacks %q", s.attrs["d"], w)
			}
		}
	}
	if got := len(withClass(els, "axis")); got != 2*tt.plots {
		t.Errorf("%d axes, want %d", got, 2*tt.plots)
	}
	all := texts(els)
	for _, w := range append([]string{"chart title"}, tt.wantTexts...) {
		if !slices.Contains(all, w) {
			t.Errorf("no text %q in %q", w, all)
		}
	}
	if labels := texts(withClass(els, "axis-label")); len(labels) != 2*tt.plots {
		t.Errorf("axis labels %q", labels)
	}
	ids := map[string]bool{}
	for _, e := range els {
		if id, ok := e.attrs["id"]; ok {
			if !strings.HasPrefix(id, "t-") || ids[id] {
				t.Errorf("id %q repeated or without the canvas prefix", id)
			}
			ids[id] = true
		}
	}
	if got := len(c.Plots()); got != tt.plots {
		t.Errorf("%d plot areas, want %d", got, tt.plots)
	}
}

// TestLineGeometry: points land where the scales put them, a NaN breaks
// the line, values on a log axis at or below its minimum sit on it.
func TestLineGeometry(t *testing.T) {
	p := Panel{Rect: Rect{X: 0, Y: 0, W: 180, H: 154}, X: Axis{Min: 0, Max: 10}, Y: Axis{Min: 1, Max: 100, Log: true}}
	// Plot area: x from 66 to 166 (100 px), y from 10 to 110 (100 px).
	c := New("g", 200, 200, "")
	c.Lines(p, []Series{{Name: "s", Color: "red", X: []float64{0, 5, 6, 10}, Y: []float64{0.5, 10, math.NaN(), 100}}})
	paths := withClass(decode(t, c.Bytes()), "series")
	if want := "M66.0 110.0L116.0 60.0M166.0 10.0"; paths[0].attrs["d"] != want {
		t.Fatalf("d = %q, want %q", paths[0].attrs["d"], want)
	}
	if got := c.Plots(); len(got) != 1 || got[0] != (Rect{X: 66, Y: 10, W: 100, H: 100}) {
		t.Fatalf("plot area %v", got)
	}
}

func TestTicks(t *testing.T) {
	tests := []struct {
		name string
		axis Axis
		want string
	}{
		{"GPUs", Axis{Min: 0, Max: 2000}, "0 500 1000 1500 2000"},
		{"fraction", Axis{Min: 0, Max: 1}, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{"offset", Axis{Min: 3, Max: 17}, "4 6 8 10 12 14 16"},
		{"log", Axis{Min: 0.5, Max: 2000, Log: true}, "1 10 100 1000"},
		{"given", Axis{Min: 0, Max: 10, Ticks: []Tick{{0, "zero"}, {5, "five"}, {20, "out"}}}, "zero five"},
		{"formatted", Axis{Min: 0, Max: 20, Format: func(v float64) string { return fmt.Sprintf("%gd", v) }}, "0d 5d 10d 15d 20d"},
		{"empty range", Axis{Min: 1, Max: 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tk := range ticks(tt.axis) {
				got = append(got, tk.Label)
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("ticks %q, want %q", got, tt.want)
			}
		})
	}
}

// Example draws one line chart and counts its series.
func Example() {
	c := New("busy", 640, 320, "GPUs busy")
	s := []Series{{Name: "phalanx", Color: Palette[0], X: []float64{0, 1, 2}, Y: []float64{10, 40, 20}}}
	c.Lines(Panel{Rect: Rect{Y: 40, W: 640, H: 280}, X: Axis{Label: "days", Max: 2}, Y: Axis{Label: "GPUs", Max: 50}}, s)
	c.Legend(80, 30, s, true)
	fmt.Println(strings.Count(string(c.Bytes()), `class="series"`), "series;", len(c.Plots()), "plot area")
	// Output: 1 series; 1 plot area
}
