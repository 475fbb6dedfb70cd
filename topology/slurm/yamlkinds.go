package slurm

import (
	"fmt"
	"strconv"

	"github.com/phalanx-sched/phalanx/internal/yaml"
	"github.com/phalanx-sched/phalanx/topology"
)

// tree reads "tree: {switches: [...]}" and builds its layout.
func (d *yamlDoc) tree(e yaml.Entry) layout {
	var defs []switchDef
	for _, k := range d.entries(e.Value, "tree", "switches") {
		for _, it := range d.list(k.Value) {
			if sw, ok := d.switchDef(it); ok {
				defs = append(defs, sw)
			}
		}
	}
	if len(defs) == 0 {
		d.errorf(e.Line, topology.ErrInvalidSpec, "tree without switches")
		return layout{}
	}
	return buildTree(defs, &d.known, d.col, d.warn)
}

// switchDef reads one switch mapping.
func (d *yamlDoc) switchDef(it *yaml.Node) (switchDef, bool) {
	sw := switchDef{at: d.at(it.Line)}
	named := false
	for _, f := range d.entries(it, "a switch", "switch", "children", "nodes") {
		v, ok := d.str(f.Value, f.Key)
		if !ok || f.Value.Kind == yaml.Null && f.Key != "switch" {
			continue // null: as if absent
		}
		switch f.Key {
		case "switch":
			sw.name, sw.at, named = v, d.at(f.Line), true
		case "children":
			sw.switches, sw.switchesAt, sw.hasSwitches = v, d.at(f.Line), true
		case "nodes":
			sw.nodes, sw.nodesAt, sw.hasNodes = v, d.at(f.Line), true
		}
	}
	if !named {
		d.errorf(it.Line, topology.ErrSyntax, "a switch without switch: (its name)")
	}
	return sw, named
}

// block reads "block: {block_sizes: [...], blocks: [...]}" and builds its
// layout.
func (d *yamlDoc) block(e yaml.Entry) layout {
	var defs []blockDef
	var sizes blockSizes
	for _, k := range d.entries(e.Value, "block", "block_sizes", "blocks") {
		if k.Key == "block_sizes" {
			sizes = d.blockSizes(k)
			continue
		}
		for _, it := range d.list(k.Value) {
			if b, ok := d.blockDef(it); ok {
				defs = append(defs, b)
			}
		}
	}
	return buildBlocks(defs, sizes, d.at(e.Line), &d.known, d.col)
}

// blockSizes reads a list of block sizes, or a single one.
func (d *yamlDoc) blockSizes(k yaml.Entry) blockSizes {
	sizes := blockSizes{at: d.at(k.Line), set: k.Value.Kind != yaml.Null}
	for _, it := range d.list(k.Value) {
		v, ok := d.str(it, "block_sizes")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			d.errorf(it.Line, topology.ErrSyntax, "block size %q is not a positive number", v)
			sizes.bad = true
			continue
		}
		sizes.sizes = append(sizes.sizes, int(n))
	}
	return sizes
}

// blockDef reads one block mapping.
func (d *yamlDoc) blockDef(it *yaml.Node) (blockDef, bool) {
	b := blockDef{at: d.at(it.Line)}
	named := false
	for _, f := range d.entries(it, "a block", "block", "nodes") {
		v, ok := d.str(f.Value, f.Key)
		if !ok || f.Value.Kind == yaml.Null && f.Key != "block" {
			continue
		}
		if f.Key == "block" {
			b.name, b.at, named = v, d.at(f.Line), true
		} else {
			b.nodes, b.nodesAt, b.hasNodes = v, d.at(f.Line), true
		}
	}
	if !named {
		d.errorf(it.Line, topology.ErrSyntax, "a block without block: (its name)")
	}
	return b, named
}

// assemble fills flat topologies, checks the GPU options and slurm.conf's
// nodes, and returns the topologies.
func (d *yamlDoc) assemble(topos []yamlTopology, opts *Options) *Topologies {
	placed := map[string]bool{}
	var union []string
	for _, t := range topos {
		for _, n := range t.lay.names {
			if !placed[n] {
				placed[n] = true
				union = append(union, n)
			}
		}
	}
	flat := d.known.names
	if flat == nil {
		flat = union
	}
	known := func(n string) bool {
		_, listed := d.known.index[n]
		return placed[n] || listed
	}
	gpus := gpuCounts(opts, d.file, known, d.col)
	out := &Topologies{Kinds: map[string]string{}, Specs: map[string]topology.ClusterSpec{}, Default: d.defaultOf}
	for _, t := range topos {
		switch t.kind {
		case "flat":
			if len(flat) == 0 {
				d.errorf(t.at.line, topology.ErrInvalidSpec, "flat topology %q has no nodes: set Options.Nodes", t.name)
				continue
			}
			t.lay = layout{}
			g := t.lay.addGroup(nil, t.at.String())
			for _, n := range flat {
				t.lay.add(n, g)
			}
		default:
			if d.col.Len() == 0 && len(t.lay.names) == 0 {
				d.errorf(t.at.line, topology.ErrInvalidSpec, "topology %q: no switch or block holds a node", t.name)
			}
			d.unplaced(t)
		}
		out.Names = append(out.Names, t.name)
		out.Kinds[t.name] = t.kind
		out.Specs[t.name] = t.lay.spec(gpus)
	}
	if out.Default == "" && len(out.Names) > 0 {
		out.Default = out.Names[0]
	}
	return out
}

// unplaced warns about the nodes of slurm.conf that a tree or block
// topology leaves out.
func (d *yamlDoc) unplaced(t yamlTopology) {
	if len(d.known.names) == 0 || len(t.lay.names) == 0 {
		return
	}
	in := make(map[string]bool, len(t.lay.names))
	for _, n := range t.lay.names {
		in[n] = true
	}
	unplaced(&d.known, func(n string) bool { return in[n] }, t.at, fmt.Sprintf("topology %q: ", t.name), d.warn)
}
