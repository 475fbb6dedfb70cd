package slurm

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/phalanx-sched/phalanx/internal/defects"
	"github.com/phalanx-sched/phalanx/internal/yaml"
	"github.com/phalanx-sched/phalanx/topology"
)

// Topologies is the content of a Slurm topology.yaml (Slurm 25.05 and
// later): several named topologies, one of them the cluster default.
type Topologies struct {
	// Names lists the topologies in file order.
	Names []string
	// Default names the cluster default: the first topology with
	// "cluster_default: true", or the first one when none has it.
	Default string
	// Kinds maps each topology to "tree", "block" or "flat".
	Kinds map[string]string
	// Specs maps each topology to its ClusterSpec.
	Specs map[string]topology.ClusterSpec
	// Warnings lists what the file does that Slurm accepts but that
	// changes the cluster: switches with no nodes, nodes of slurm.conf
	// under no switch, a second cluster default.
	Warnings []topology.Defect
}

// Cluster builds the named topology; the empty name means the default.
// An unknown name is an ErrUnknownTopology error.
func (t *Topologies) Cluster(name string) (*topology.Cluster, error) {
	if name == "" {
		name = t.Default
	}
	spec, ok := t.Specs[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopology, name)
	}
	return topology.Build(spec)
}

// ParseYAML reads the Slurm topology.yaml called name from fsys and
// returns its topologies. The file is a list of topologies, as Slurm
// documents it:
//
//   - topology: topo1        # the name; must be the first key
//     cluster_default: true  # optional
//     tree:
//     switches:
//   - switch: sw_root
//     children: s[1-2]  # hostlist of child switches
//   - switch: s1
//     nodes: node[01-02]  # hostlist of nodes
//   - topology: topo2
//     block:
//     block_sizes: [4, 16]  # optional
//     blocks:
//   - block: b1
//     nodes: node[01-04]
//   - topology: topo3
//     flat: true
//
// It also reads the forms Slurm 25.05's parser accepts beyond that
// example: a single topology mapping instead of a list, a single switch or
// block mapping instead of a list, a single block size instead of a list,
// booleans written yes/no, on/off, y/n, t/f or true/false in any case and
// quoted or not, a null value for an absent one, and an empty "tree: {}" or
// "block: {}" (which selects nothing, as in Slurm). Two topologies marked
// cluster_default give a warning; the first is the default, as Slurm
// documents. The YAML is read by the subset parser of internal/yaml (no
// anchors, aliases or tags).
//
// Each topology has exactly one of tree, block and "flat: true". Trees and
// blocks follow the rules of ParseConf (levels, their names, unbalanced
// trees, empty switches, block aggregates, the slurm.conf cross-check). A
// flat topology has no levels; its nodes are opts.Nodes or, when that is
// empty, the union of the nodes of the file's other topologies in file
// order. NodeGPUs may name any node of any topology.
//
// Every defect is reported at once, up to opts.MaxDefects, in one
// *topology.Defects error naming file and line: ErrSyntax for YAML outside
// the subset (the parse stops at the first), unknown keys and wrong value
// types; ErrDuplicate for two topologies with one name; ErrInvalidSpec for
// no topology or not exactly one kind; and every defect of ParseConf. On
// error the result is nil.
func ParseYAML(fsys fs.FS, name string, opts Options) (*Topologies, error) {
	col, warn := defects.New(opts.MaxDefects), defects.New(opts.MaxDefects)
	col.File(name)
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		col.Addf(name, 0, err, "cannot read the file")
		return nil, col.Err()
	}
	root, err := yaml.Parse(string(data))
	if err != nil {
		if ye, ok := err.(*yaml.Error); ok {
			col.Addf(name, ye.Line, topology.ErrSyntax, "%s", ye.Msg)
		} else {
			col.Addf(name, 0, topology.ErrSyntax, "%v", err)
		}
		return nil, col.Err()
	}
	d := &yamlDoc{file: name, col: col, warn: warn, known: expandNodes(&opts, col)}
	topos := d.topologies(root)
	out := d.assemble(topos, &opts)
	if err := col.Err(); err != nil {
		return nil, err
	}
	out.Warnings = warn.List()
	return out, nil
}

// yamlDoc reads the topology.yaml schema from parsed YAML, collecting
// defects.
type yamlDoc struct {
	file       string
	col, warn  *defects.Collector
	known      nodeList
	defaultPos pos
	defaultOf  string
}

// yamlTopology is one topology of the file.
type yamlTopology struct {
	name, kind string
	at         pos
	lay        layout
}

func (d *yamlDoc) at(line int) pos { return pos{file: d.file, line: line} }

func (d *yamlDoc) errorf(line int, sentinel error, format string, args ...any) {
	d.col.Addf(d.file, line, sentinel, format, args...)
}

// topologies reads the list of topologies (or a single one).
func (d *yamlDoc) topologies(root *yaml.Node) []yamlTopology {
	var items []*yaml.Node
	switch {
	case root == nil || root.Kind == yaml.Null || root.Kind == yaml.Seq && len(root.Items) == 0:
		d.errorf(0, topology.ErrInvalidSpec, "no topology")
		return nil
	case root.Kind == yaml.Map:
		items = []*yaml.Node{root} // a single topology, as Slurm accepts
	case root.Kind == yaml.Seq:
		items = root.Items
	default:
		d.errorf(root.Line, topology.ErrSyntax, "the file must be a list of topologies, not %s", root.Kind)
		return nil
	}
	var topos []yamlTopology
	seen := map[string]pos{}
	for _, item := range items {
		t, ok := d.topology(item)
		if !ok {
			continue
		}
		if first, dup := seen[t.name]; dup {
			d.errorf(t.at.line, topology.ErrDuplicate, "topology %q defined twice (first at %s)", t.name, first)
			continue
		}
		seen[t.name] = t.at
		topos = append(topos, t)
	}
	return topos
}

// topology reads one topology mapping.
func (d *yamlDoc) topology(item *yaml.Node) (yamlTopology, bool) {
	if item.Kind != yaml.Map {
		d.errorf(item.Line, topology.ErrSyntax, "a topology must be a mapping, not %s", item.Kind)
		return yamlTopology{}, false
	}
	if len(item.Keys) == 0 {
		d.errorf(item.Line, topology.ErrInvalidSpec, "a topology without keys (want topology: and one of tree, block and flat)")
		return yamlTopology{}, false
	}
	first := item.Keys[0]
	if first.Key != "topology" {
		d.errorf(first.Line, topology.ErrSyntax, "the first key of a topology must be topology:, not %s:", first.Key)
		return yamlTopology{}, false
	}
	name, ok := d.str(first.Value, "topology")
	if ok && name == "" {
		d.errorf(first.Line, topology.ErrSyntax, "empty topology name")
		ok = false
	}
	t := yamlTopology{name: name, at: d.at(first.Line)}
	before := d.col.Len()
	var kinds []string
	for _, e := range item.Keys[1:] {
		kind := d.topologyKey(e, &t)
		if kind != "" {
			kinds = append(kinds, kind)
		}
	}
	if len(kinds) != 1 {
		if ok && d.col.Len() == before {
			d.errorf(first.Line, topology.ErrInvalidSpec, "topology %q must have exactly one of tree, block and flat: true, has %d", name, len(kinds))
		}
		return t, false
	}
	t.kind = kinds[0]
	return t, ok
}

// topologyKey reads one key of a topology and returns the kind it selects.
func (d *yamlDoc) topologyKey(e yaml.Entry, t *yamlTopology) string {
	switch e.Key {
	case "cluster_default":
		if def, ok := d.boolean(e.Value, e.Key); ok && def {
			if d.defaultOf != "" {
				d.warn.Addf(d.file, e.Line, topology.ErrInvalidSpec, "topologies %q and %q are both cluster_default; the first (%s) is the default", d.defaultOf, t.name, d.defaultPos)
			} else {
				d.defaultOf, d.defaultPos = t.name, d.at(e.Line)
			}
		}
	case "tree":
		if emptyOrNull(e.Value) {
			return "" // an empty tree selects nothing, as in Slurm; null is absent
		}
		t.lay = d.tree(e)
		return "tree"
	case "block":
		if emptyOrNull(e.Value) {
			return ""
		}
		t.lay = d.block(e)
		return "block"
	case "flat":
		if flat, ok := d.boolean(e.Value, e.Key); ok && flat {
			return "flat"
		}
	default:
		d.errorf(e.Line, topology.ErrSyntax, "unknown key %s: in topology %q (want cluster_default, tree, block or flat)", e.Key, t.name)
	}
	return ""
}

// emptyOrNull reports whether a tree or block value selects nothing: an
// empty map, or null (an absent value).
func emptyOrNull(n *yaml.Node) bool {
	return n.Kind == yaml.Null || n.Kind == yaml.Map && len(n.Keys) == 0
}

// str returns a scalar's text; null is the empty string.
func (d *yamlDoc) str(n *yaml.Node, key string) (string, bool) {
	switch n.Kind {
	case yaml.Scalar:
		return n.Value, true
	case yaml.Null:
		return "", true
	}
	d.errorf(n.Line, topology.ErrSyntax, "%s: wants a string, not %s", key, n.Kind)
	return "", false
}

// boolean reads a boolean the way Slurm converts strings: y, yes, t, true,
// on, n, no, f, false, off, in any case, quoted or not.
func (d *yamlDoc) boolean(n *yaml.Node, key string) (bool, bool) {
	if n.Kind == yaml.Null {
		return false, true // a null value is an absent one
	}
	if n.Kind == yaml.Scalar {
		switch strings.ToLower(n.Value) {
		case "y", "yes", "t", "true", "on":
			return true, true
		case "n", "no", "f", "false", "off":
			return false, true
		}
	}
	d.errorf(n.Line, topology.ErrSyntax, "%s: wants true or false, not %s", key, describe(n))
	return false, false
}

// describe names a value for messages.
func describe(n *yaml.Node) string {
	if n.Kind == yaml.Scalar {
		return strconv.Quote(n.Value)
	}
	return n.Kind.String()
}

// entries returns a mapping's entries, reporting keys not allowed.
func (d *yamlDoc) entries(n *yaml.Node, what string, allowed ...string) []yaml.Entry {
	if n.Kind != yaml.Map {
		d.errorf(n.Line, topology.ErrSyntax, "%s wants a mapping, not %s", what, n.Kind)
		return nil
	}
	var out []yaml.Entry
	for _, e := range n.Keys {
		if !containsString(allowed, e.Key) {
			d.errorf(e.Line, topology.ErrSyntax, "unknown key %s: in %s (want %s)", e.Key, what, strings.Join(allowed, ", "))
			continue
		}
		out = append(out, e)
	}
	return out
}

// list returns a sequence's items; a single mapping or scalar is a list of
// one, as in Slurm, and null the empty list.
func (d *yamlDoc) list(n *yaml.Node) []*yaml.Node {
	switch n.Kind {
	case yaml.Seq:
		return n.Items
	case yaml.Null:
		return nil
	}
	return []*yaml.Node{n}
}

// LoadDir loads the topology of a Slurm configuration directory the way
// Slurm picks its file: topology.yaml when fsys has one (its default
// topology), else topology.conf.
func LoadDir(fsys fs.FS, opts Options) (*topology.Cluster, []topology.Defect, error) {
	if _, err := fs.Stat(fsys, "topology.yaml"); err == nil {
		t, err := ParseYAML(fsys, "topology.yaml", opts)
		if err != nil {
			return nil, nil, err
		}
		c, err := t.Cluster("")
		return c, t.Warnings, err
	}
	return LoadConf(fsys, "topology.conf", opts)
}
