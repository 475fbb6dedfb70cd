package slurm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/phalanx-sched/phalanx/internal/defects"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// pos is a position in an input file.
type pos struct {
	file string
	line int
}

func (p pos) String() string { return fmt.Sprintf("%s:%d", p.file, p.line) }

// switchDef is one switch of a tree topology, from either file format.
// Hostlists are kept as written; the builder expands them.
type switchDef struct {
	name                  string
	at                    pos // the definition (SwitchName= or "switch:")
	nodes, switches       string
	nodesAt, switchesAt   pos
	hasNodes, hasSwitches bool
}

// blockDef is one base block of a block topology.
type blockDef struct {
	name     string
	at       pos
	nodes    string
	nodesAt  pos
	hasNodes bool
}

// blockSizes is the BlockSizes list of a block topology.
type blockSizes struct {
	sizes []int
	at    pos
	set   bool
	bad   bool // a size could not be read (already reported)
}

// layout is what the tree and block builders produce: level names and the
// nodes in topology order, each with the group (lowest-level domain) whose
// path and source it shares.
type layout struct {
	levels  []string
	names   []string
	group   []int32
	paths   [][]string
	sources []string
}

// addGroup starts a group of nodes sharing path and source.
func (l *layout) addGroup(path []string, source string) int32 {
	l.paths = append(l.paths, path)
	l.sources = append(l.sources, source)
	return int32(len(l.paths) - 1)
}

func (l *layout) add(name string, group int32) {
	l.names = append(l.names, name)
	l.group = append(l.group, group)
}

// spec returns the layout as a ClusterSpec, with GPU counts from gpus.
func (l *layout) spec(gpus func(string) int) topology.ClusterSpec {
	s := topology.ClusterSpec{Levels: slices.Clone(l.levels), Nodes: make([]topology.NodeSpec, len(l.names))}
	for i, name := range l.names {
		g := l.group[i]
		s.Nodes[i] = topology.NodeSpec{Name: name, GPUs: gpus(name), Path: l.paths[g], Source: l.sources[g]}
	}
	return s
}

// checkName rejects switch and block names that cannot be written in a
// hostlist (Slurm refers to switches and aggregate blocks by hostlists).
func checkName(kind, name string, at pos, col *defects.Collector) {
	switch {
	case name == "":
		col.Addf(at.file, at.line, topology.ErrSyntax, "%s with an empty name", kind)
	case strings.ContainsAny(name, ",[]") || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		col.Addf(at.file, at.line, topology.ErrSyntax, "%s name %q contains ',', '[', ']', white space or a control character", kind, name)
	}
}

// expandList expands a hostlist of a definition; a bad or empty one is a
// defect and gives no names.
func expandList(at pos, what, expr string, col *defects.Collector) []string {
	names, err := hostlist.Expand(expr)
	if err != nil {
		col.Addf(at.file, at.line, topology.ErrSyntax, "%s: %v", what, err)
		return nil
	}
	if len(names) == 0 {
		col.Addf(at.file, at.line, topology.ErrSyntax, "%s is empty", what)
	}
	return names
}

// nodeOwners records which definition lists each node, reporting nodes
// listed twice by one definition or by two.
type nodeOwners struct {
	owner map[string]int32
	known *nodeList
	col   *defects.Collector
	kind  string // "switch" or "block"
}

// claim gives names to definition i (named name, at at), keeping only the
// names no earlier definition holds and that slurm.conf defines.
func (o *nodeOwners) claim(i int, name string, at pos, names []string, ownerAt func(int) (string, pos)) []string {
	kept := names[:0:0]
	var twice, unknown []string
	clash := map[int][]string{}
	for _, n := range names {
		if j, ok := o.owner[n]; ok {
			if int(j) == i {
				twice = append(twice, n)
			} else {
				clash[int(j)] = append(clash[int(j)], n)
			}
			continue
		}
		if !o.known.has(n) {
			unknown = append(unknown, n)
			continue
		}
		o.owner[n] = int32(i)
		kept = append(kept, n)
	}
	if len(twice) > 0 {
		o.col.Addf(at.file, at.line, topology.ErrDuplicate, "%s %q lists node(s) %s twice", o.kind, name, hostlist.Compress(twice))
	}
	for _, j := range slices.Sorted(maps.Keys(clash)) {
		other, otherAt := ownerAt(j)
		o.col.Addf(at.file, at.line, topology.ErrNotTree, "node(s) %s under %s %q (%s) and %s %q (%s)",
			hostlist.Compress(clash[j]), o.kind, other, otherAt, o.kind, name, at)
	}
	if len(unknown) > 0 {
		o.col.Addf(at.file, at.line, topology.ErrUnknownNode, "%s %q lists %d node(s) that slurm.conf (Options.Nodes) does not define: %s",
			o.kind, name, len(unknown), hostlist.Compress(unknown))
	}
	return kept
}

// unplaced reports, as a warning at at, the nodes of slurm.conf that the
// file does not place; prefix names the topology when there are several.
func unplaced(known *nodeList, placed func(string) bool, at pos, prefix string, warn *defects.Collector) {
	var missing []string
	for _, n := range known.names {
		if !placed(n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		warn.Addf(at.file, at.line, topology.ErrUnknownNode, "%s%d node(s) of slurm.conf (Options.Nodes) are under no switch or block and are left out: %s",
			prefix, len(missing), hostlist.Compress(missing))
	}
}
