// Package defects collects the defects a topology loader finds, up to a
// bound, and returns them in input order as one *topology.Defects error.
// It is for the loaders of this module (topology/slurm, topology/kube).
//
// A Collector is not safe for concurrent use.
package defects

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/phalanx-sched/phalanx/topology"
)

// DefaultMax is the bound on listed defects when a loader's option is 0.
const DefaultMax = 100

// Collector gathers defects. The zero value is not usable; call New.
type Collector struct {
	max   int
	files map[string]int
	list  []topology.Defect
	more  int
}

// New returns a collector that lists up to max defects (DefaultMax when max
// is 0 or less) and counts the rest.
func New(max int) *Collector {
	if max <= 0 {
		max = DefaultMax
	}
	return &Collector{max: max, files: make(map[string]int)}
}

// File registers an input file, so that defects sort by the order in
// which files were registered (the main file first, then its includes).
func (c *Collector) File(name string) {
	if _, ok := c.files[name]; !ok {
		c.files[name] = len(c.files)
	}
}

// Addf records a defect at file:line. Past the bound it is only counted,
// and the message is not formatted.
func (c *Collector) Addf(file string, line int, sentinel error, format string, args ...any) {
	if len(c.list) >= c.max {
		c.more++
		return
	}
	c.list = append(c.list, topology.Defect{File: file, Line: line, Err: sentinel, Msg: fmt.Sprintf(format, args...)})
}

// Add records a defect.
func (c *Collector) Add(d topology.Defect) {
	if len(c.list) >= c.max {
		c.more++
		return
	}
	c.list = append(c.list, d)
}

// Len returns the number of defects found, listed or not.
func (c *Collector) Len() int { return len(c.list) + c.more }

// List returns the listed defects in input order: by registered file (then
// unregistered names in the order first seen), then line, then the order
// they were found.
func (c *Collector) List() []topology.Defect {
	rank := make(map[string]int, len(c.files))
	for f, r := range c.files {
		rank[f] = r
	}
	for _, d := range c.list {
		if _, ok := rank[d.File]; !ok {
			rank[d.File] = len(rank)
		}
	}
	out := slices.Clone(c.list)
	slices.SortStableFunc(out, func(a, b topology.Defect) int {
		return cmp.Or(cmp.Compare(rank[a.File], rank[b.File]), cmp.Compare(a.Line, b.Line))
	})
	return out
}

// Err returns nil when nothing was found, else a *topology.Defects with
// every listed defect in input order.
func (c *Collector) Err() error {
	if c.Len() == 0 {
		return nil
	}
	return &topology.Defects{List: c.List(), More: c.more}
}
