package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/topology"
)

// Spread summarises how a set of jobs (running or planned) lies on the
// tree.
type Spread struct {
	Jobs int
	// MeanLeaves and MaxLeaves: leaf switches spanned per job.
	MeanLeaves float64
	MaxLeaves  int
	// InLeaf is the share of all the jobs inside one leaf.
	InLeaf float64
	// Small counts the jobs of 2 to leafSize nodes (each fits one leaf);
	// SmallInLeaf the share of them inside one leaf.
	Small       int
	SmallInLeaf float64
	// MeanExcess is leaves spanned minus the fewest possible
	// (ceil(nodes/leafSize)), per job.
	MeanExcess float64
	// FitSpine counts the jobs that fit one spine; CrossSpine the share of
	// them that span more than one.
	FitSpine   int
	CrossSpine float64
}

// Geometry is what the metrics need from the cluster.
type Geometry struct {
	c                  *topology.Cluster
	leaf, spine        int // level indices (spine -1 without one)
	leafSize, spineCap int // smallest leaf and spine, in nodes
}

func newGeometry(c *topology.Cluster) (*Geometry, error) {
	g := &Geometry{c: c, spine: -1}
	var ok bool
	if g.leaf, ok = c.Level("leaf"); !ok {
		return nil, fmt.Errorf("cluster has no leaf level (levels %v)", c.Levels())
	}
	smallest := func(l int) int {
		m := c.NumNodes()
		for d := range c.NumDomains(l) {
			first, end := c.DomainRange(l, d)
			m = min(m, int(end-first))
		}
		return m
	}
	g.leafSize = smallest(g.leaf)
	if s, ok := c.Level("spine"); ok {
		g.spine, g.spineCap = s, smallest(s)
	}
	return g, nil
}

func (g *Geometry) domains(names []string, level int) int {
	seen := map[int]bool{}
	for _, n := range names {
		i, _ := g.c.LookupNode(n)
		seen[g.c.NodeDomain(i, level)] = true
	}
	return len(seen)
}

// Spread measures the jobs in set (job -> nodes).
func (g *Geometry) Spread(set map[string][]string) Spread {
	var s Spread
	var leaves, excess, oneLeaf, inLeaf, cross int
	for _, nodes := range set {
		n := len(nodes)
		l := g.domains(nodes, g.leaf)
		s.Jobs++
		leaves += l
		s.MaxLeaves = max(s.MaxLeaves, l)
		if l == 1 {
			oneLeaf++
		}
		excess += l - (n+g.leafSize-1)/g.leafSize
		if n >= 2 && n <= g.leafSize {
			s.Small++
			if l == 1 {
				inLeaf++
			}
		}
		if g.spine >= 0 && n <= g.spineCap {
			s.FitSpine++
			if g.domains(nodes, g.spine) > 1 {
				cross++
			}
		}
	}
	if s.Jobs > 0 {
		s.MeanLeaves = float64(leaves) / float64(s.Jobs)
		s.MeanExcess = float64(excess) / float64(s.Jobs)
		s.InLeaf = float64(oneLeaf) / float64(s.Jobs)
	}
	if s.Small > 0 {
		s.SmallInLeaf = float64(inLeaf) / float64(s.Small)
	}
	if s.FitSpine > 0 {
		s.CrossSpine = float64(cross) / float64(s.FitSpine)
	}
	return s
}

// Summary is one column of the comparison.
type Summary struct {
	Name             string
	Running          Spread
	RunningFromQueue int    // running jobs that came from the pending stream
	Backfilled       Spread // those jobs alone
	Planned          Spread
	Pending          int
	MeanPlannedStart time.Duration
	MaxPlannedStart  time.Duration
	CycleFirst       time.Duration
	CycleMean        time.Duration
	CycleMax         time.Duration
	CycleDepth       int
	Cycles           int
}

// Summarize reduces an outcome to its column.
func Summarize(g *Geometry, o *Outcome, queue []string) Summary {
	s := Summary{Name: o.Name, Pending: o.Pending,
		Running: g.Spread(o.Running), Planned: g.Spread(o.Planned),
		CycleFirst: o.CycleFirst, CycleMean: o.CycleMean, CycleMax: o.CycleMax,
		CycleDepth: o.CycleDepth, Cycles: o.Cycles}
	fromQueue := map[string][]string{}
	for _, id := range queue {
		if nodes, ok := o.Running[id]; ok {
			fromQueue[id] = nodes
		}
	}
	s.RunningFromQueue = len(fromQueue)
	s.Backfilled = g.Spread(fromQueue)
	var sum time.Duration
	for _, d := range o.PlannedStart {
		sum += d
		s.MaxPlannedStart = max(s.MaxPlannedStart, d)
	}
	if len(o.PlannedStart) > 0 {
		s.MeanPlannedStart = sum / time.Duration(len(o.PlannedStart))
	}
	return s
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func hours(d time.Duration) string { return fmt.Sprintf("%.1f h", d.Hours()) }

// WriteTable prints the comparison as a Markdown table.
func WriteTable(w io.Writer, g *Geometry, cols []Summary) {
	head := []string{"metric"}
	for _, c := range cols {
		head = append(head, c.Name)
	}
	rows := [][]string{head, slices.Repeat([]string{"---"}, len(head))}
	row := func(label string, f func(s Summary) string) {
		r := []string{label}
		for _, c := range cols {
			r = append(r, f(c))
		}
		rows = append(rows, r)
	}
	leaf := fmt.Sprintf("%d", g.leafSize)
	row("running jobs at the end", func(s Summary) string { return fmt.Sprint(s.Running.Jobs) })
	row("leaves per running job: mean (max); share inside one leaf", func(s Summary) string {
		return fmt.Sprintf("%.2f (%d); %s", s.Running.MeanLeaves, s.Running.MaxLeaves, pct(s.Running.InLeaf))
	})
	row("running 2-"+leaf+"-node jobs inside one leaf", func(s Summary) string {
		return fmt.Sprintf("%s of %d", pct(s.Running.SmallInLeaf), s.Running.Small)
	})
	row("running jobs: leaves beyond the fewest possible, mean", func(s Summary) string {
		return fmt.Sprintf("%.2f", s.Running.MeanExcess)
	})
	row("running jobs crossing a spine", func(s Summary) string { return pct(s.Running.CrossSpine) })
	row("pending-stream jobs started (backfilled): count, leaves mean", func(s Summary) string {
		return fmt.Sprintf("%d, %.2f", s.RunningFromQueue, s.Backfilled.MeanLeaves)
	})
	row("pending jobs", func(s Summary) string { return fmt.Sprint(s.Pending) })
	row("pending jobs with a planned start", func(s Summary) string { return fmt.Sprint(s.Planned.Jobs) })
	row("leaves per planned job: mean (max); share inside one leaf", func(s Summary) string {
		return fmt.Sprintf("%.2f (%d); %s", s.Planned.MeanLeaves, s.Planned.MaxLeaves, pct(s.Planned.InLeaf))
	})
	row("planned 2-"+leaf+"-node jobs inside one leaf", func(s Summary) string {
		return fmt.Sprintf("%s of %d", pct(s.Planned.SmallInLeaf), s.Planned.Small)
	})
	row("planned jobs: leaves beyond the fewest possible, mean", func(s Summary) string {
		return fmt.Sprintf("%.2f", s.Planned.MeanExcess)
	})
	row("planned jobs crossing a spine", func(s Summary) string { return pct(s.Planned.CrossSpine) })
	row("planned start after first submit: mean (max)", func(s Summary) string {
		if s.Planned.Jobs == 0 {
			return "-"
		}
		return fmt.Sprintf("%s (%s)", hours(s.MeanPlannedStart), hours(s.MaxPlannedStart))
	})
	row("backfill cycle: Slurm last sdiag cycle / Phalanx first Schedule", func(s Summary) string { return ms(s.CycleFirst) })
	row("Slurm: all sdiag cycles / Phalanx: later Schedule calls, mean (max)", func(s Summary) string {
		return fmt.Sprintf("%s (%s)", ms(s.CycleMean), ms(s.CycleMax))
	})
	row("jobs tested in the last cycle", func(s Summary) string { return fmt.Sprint(s.CycleDepth) })
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}
