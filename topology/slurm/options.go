package slurm

import (
	"errors"
	"maps"
	"slices"

	"github.com/phalanx-sched/phalanx/internal/defects"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// Errors of this package; defects wrap them or one of topology's
// sentinels (ErrSyntax, ErrDuplicate, ErrNotTree, ErrInvalidSpec,
// ErrGPUCount, ErrUnknownNode, ErrEmptyDomain).
var (
	// ErrInclude marks an Include line whose file cannot be read, an
	// include cycle, or includes nested too deep.
	ErrInclude = errors.New("slurm: include failed")
	// ErrUnknownTopology marks a topology name that a topology.yaml does
	// not define.
	ErrUnknownTopology = errors.New("slurm: unknown topology")
)

// MaxIncludeDepth bounds the nesting of Include lines.
const MaxIncludeDepth = 16

// DefaultGPUs is the GPU count of a node when Options.DefaultGPUs is 0.
const DefaultGPUs = 8

// Options configures the loaders. Slurm topology files list node names
// only, so GPU counts come from here; Nodes carries slurm.conf's node list
// for the cross-check.
type Options struct {
	// DefaultGPUs is the GPU count of every node without an override in
	// NodeGPUs; 0 means DefaultGPUs (8).
	DefaultGPUs int
	// NodeGPUs overrides the GPU count of single nodes. Every count must be
	// 1 to topology.MaxGPUsPerNode and every node named must be in the
	// file or in Nodes, else the load fails.
	NodeGPUs map[string]int
	// Nodes is slurm.conf's node list, as hostlist expressions
	// ("gpu[001-128]", "login1"), for example from ReadSlurmConfNodes.
	// When it is not empty, the file is checked against it: a node the
	// file lists that Nodes does not is an ErrUnknownNode defect (a range
	// that lost its prefix, a typo); a node of Nodes that no switch or
	// block lists is left out of the cluster, as in Slurm, with a
	// warning. A flat topology of topology.yaml holds exactly these
	// nodes; without Nodes it holds the union of the nodes of the file's
	// other topologies.
	Nodes []string
	// MaxDefects bounds the defects listed in an error (the rest are
	// counted); 0 means 100.
	MaxDefects int
}

// nodeList is Options.Nodes expanded: the names in order and their index.
type nodeList struct {
	names []string
	index map[string]int32
}

// expandNodes expands Options.Nodes, reporting bad expressions and
// duplicates as defects of the option.
func expandNodes(opts *Options, col *defects.Collector) nodeList {
	var nl nodeList
	if len(opts.Nodes) == 0 {
		return nl
	}
	nl.index = make(map[string]int32)
	bad := false
	for _, expr := range opts.Nodes {
		names, err := hostlist.Expand(expr)
		if err != nil {
			col.Addf("Options.Nodes", 0, topology.ErrSyntax, "%v", err)
			bad = true
			continue
		}
		var dups []string
		for _, n := range names {
			if _, dup := nl.index[n]; dup {
				dups = append(dups, n)
				continue
			}
			nl.index[n] = int32(len(nl.names))
			nl.names = append(nl.names, n)
		}
		if len(dups) > 0 {
			col.Addf("Options.Nodes", 0, topology.ErrDuplicate, "%d node(s) listed twice: %s", len(dups), hostlist.Compress(dups))
		}
	}
	if bad {
		return nodeList{} // a partial list would flag good names: no check
	}
	return nl
}

// has reports whether name is in the list; an empty list has every name.
func (nl *nodeList) has(name string) bool {
	if nl.index == nil {
		return true
	}
	_, ok := nl.index[name]
	return ok
}

// gpuCounts checks DefaultGPUs and NodeGPUs against the nodes a file
// lists (known) and returns the GPU count of a node.
func gpuCounts(opts *Options, file string, known func(string) bool, col *defects.Collector) func(string) int {
	def := opts.DefaultGPUs
	if def == 0 {
		def = DefaultGPUs
	}
	if def < 1 || def > topology.MaxGPUsPerNode {
		col.Addf(file, 0, topology.ErrGPUCount, "Options.DefaultGPUs is %d, want 1 to %d", opts.DefaultGPUs, topology.MaxGPUsPerNode)
	}
	var unknown []string
	for _, name := range slices.Sorted(maps.Keys(opts.NodeGPUs)) {
		if g := opts.NodeGPUs[name]; g < 1 || g > topology.MaxGPUsPerNode {
			col.Addf(file, 0, topology.ErrGPUCount, "Options.NodeGPUs[%q] is %d, want 1 to %d", name, g, topology.MaxGPUsPerNode)
		}
		if !known(name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		col.Addf(file, 0, topology.ErrUnknownNode, "Options.NodeGPUs names %d node(s) that the file does not list: %s", len(unknown), hostlist.Compress(unknown))
	}
	return func(name string) int {
		if g, ok := opts.NodeGPUs[name]; ok {
			return g
		}
		return def
	}
}
