// Package report writes the replay's HTML report: one self-contained
// index.html (inline SVG and CSS, no script, nothing fetched from the
// network) with four figures and the replay's tables; beside it,
// layout.json giving where each figure and plot area lands on the page,
// and each figure as a standalone SVG file for embedding elsewhere.
//
// The figures: GPUs busy over time per run; the distribution of waits
// per job size class (a CDF per class, one line per run); the leaves each
// multi-node job ran on (a histogram per run); and each run's per-account
// share of the busy GPUs over time (the top accounts and "other").
//
// # Usage
//
//	res, _ := sim.Run(sim.Config{..., UsagePoints: report.UsagePoints}, jobs)
//	err := report.Write("out", report.Input{Title: "philly at load 3", Command: cmd, Results: results})
//
// Caller duties: every result comes from sim.Run with Config.UsagePoints
// positive (Write returns an error otherwise), and all results replay the
// same trace on the same cluster.
//
// The page geometry is fixed (figures of given pixel sizes in one column
// of a 1,400-pixel-wide page), so layout.json tells a screenshot checker
// where to look. Write is safe for concurrent use with distinct
// directories.
package report
