// Package svgplot writes small, self-contained SVG charts: line charts,
// stacked areas and grouped bars, with axes, ticks, grid lines, panel
// titles and legends. It has no dependency beyond the standard library
// and draws nothing on its own initiative: the caller lays out panels in
// pixels on a canvas of fixed size.
//
// # Usage
//
//	c := svgplot.New("busy", 800, 400, "GPUs busy over time")
//	p := svgplot.Panel{Rect: svgplot.Rect{X: 0, Y: 40, W: 800, H: 360},
//		X: svgplot.Axis{Label: "days", Max: 10}, Y: svgplot.Axis{Label: "GPUs", Max: 2000}}
//	c.Lines(p, []svgplot.Series{{Name: "phalanx", Color: svgplot.Palette[0], X: xs, Y: ys}})
//	c.Legend(60, 30, series)
//	os.WriteFile("busy.svg", c.Bytes(), 0o644)
//
// Every series becomes one element with class "series" (a path for lines
// and areas, a group of rects for bars), every axis a group with class
// "axis", and every axis label a text with class "axis-label", so tests
// can count what was drawn. Values outside an axis range are clipped to
// the panel; a NaN in a line series breaks the line.
//
// Caller duties: X values of a line or stacked series ascend; stacked
// series share their X values. Colours are CSS colours; Palette and
// Categorical hold colour-blind-safe and distinct choices.
//
// A Canvas is not safe for concurrent use; separate canvases are
// independent.
package svgplot
