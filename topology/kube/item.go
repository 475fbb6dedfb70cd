package kube

import (
	"fmt"
	"strconv"

	"github.com/phalanx-sched/phalanx/internal/yaml"
	"github.com/phalanx-sched/phalanx/topology"
)

// node is what one item tells about a node.
type node struct {
	name          string
	labels        map[string]string
	badLabels     map[string]bool // labels of the wrong type, already reported
	unschedulable bool
	allocatable   *yaml.Node
	capacity      *yaml.Node
	ready         string // the Ready condition's status, "" when none
	skip          bool   // not a node object, or no name: nothing more to check
}

// item reads item i and adds its node to the ClusterSpec or the Status.
func (p *parser) item(i int, n *yaml.Node) {
	nd := p.read(i, n)
	if nd.name != "" {
		if j, dup := p.seen[nd.name]; dup {
			p.errorf(n.Line, topology.ErrDuplicate, "item %d: node %q is also item %d", i, nd.name, j)
			return
		}
		p.seen[nd.name] = i
	}
	if nd.skip {
		return
	}
	// Selection: NodeSelector first, then GPUs, so that nodes left out
	// need no topology labels.
	if !selected(nd.labels, p.opts.NodeSelector) {
		p.st.Skipped = append(p.st.Skipped, nd.name)
		return
	}
	at := p.at(i, nd.name)
	gpus, okA := p.gpus(nd.allocatable, "allocatable", at)
	degraded := false
	if okA && gpus == 0 {
		var okC bool
		gpus, okC = p.gpus(nd.capacity, "capacity", at)
		okA = okC
		degraded = gpus > 0
	}
	switch {
	case !okA:
		return
	case gpus == 0 && p.opts.SkipNodesWithoutGPUs:
		p.st.Skipped = append(p.st.Skipped, nd.name)
		return
	case gpus == 0:
		p.noGPUs = append(p.noGPUs, nd.name)
		return
	}
	p.place(n.Line, at, nd, gpus, degraded)
}

// at names item i and its node for messages.
func (p *parser) at(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("item %d", i)
	}
	return fmt.Sprintf("item %d (node %q)", i, name)
}

// place adds a selected node with GPUs to the ClusterSpec.
func (p *parser) place(line int, at string, nd node, gpus int, degraded bool) {
	path := make([]string, len(p.lv.keys))
	for l, key := range p.lv.keys {
		v, ok := nd.labels[key]
		switch {
		case nd.badLabels[key]:
			return
		case !ok:
			p.errorf(line, topology.ErrInvalidSpec, "%s: no label %q for level %q", at, key, p.lv.names[l])
			return
		case v == "":
			p.errorf(line, topology.ErrInvalidSpec, "%s: label %q for level %q is empty", at, key, p.lv.names[l])
			return
		}
		path[l] = v
	}
	p.spec.Nodes = append(p.spec.Nodes, topology.NodeSpec{Name: nd.name, GPUs: gpus, Path: path, Source: fmt.Sprintf("%s:%d", p.src, line)})
	if nd.ready == "" {
		p.noReady++
	}
	switch {
	case degraded || nd.ready != "True":
		p.st.Down = append(p.st.Down, nd.name)
	case nd.unschedulable:
		p.st.Drained = append(p.st.Drained, nd.name)
	}
}

// read extracts the fields of item i, reporting type errors.
func (p *parser) read(i int, n *yaml.Node) node {
	var nd node
	if n.Kind != yaml.Map {
		p.errorf(n.Line, topology.ErrSyntax, "item %d is %s, want a Node object", i, found(n, p.fromJSON))
		return node{skip: true}
	}
	bad := func(v *yaml.Node, format string, args ...any) {
		p.errorf(v.Line, topology.ErrSyntax, "%s: %s", p.at(i, nd.name), fmt.Sprintf(format, args...))
	}
	meta := p.object(n, "metadata", bad)
	nameBad := false
	if name := meta.Get("name"); name != nil && name.Kind != yaml.Null {
		if s, ok := p.str(name); ok {
			nd.name = s
		} else {
			bad(name, "metadata.name is %s, want a string", found(name, p.fromJSON))
			nameBad = true
		}
	}
	if k := n.Get("kind"); k != nil && scalarText(k) != "Node" {
		bad(k, "kind %s, want Node", describe(k, p.fromJSON))
		nd.skip = true
	}
	if nd.name == "" && !nd.skip {
		if !nameBad {
			p.errorf(n.Line, topology.ErrInvalidSpec, "%s: no metadata.name", p.at(i, ""))
		}
		nd.skip = true
	}
	nd.labels, nd.badLabels = p.labels(p.object(meta, "labels", bad), bad)
	nd.unschedulable = p.boolean(p.object(n, "spec", bad).Get("unschedulable"), "spec.unschedulable", bad)
	status := p.object(n, "status", bad)
	nd.allocatable = p.object(status, "allocatable", bad)
	nd.capacity = p.object(status, "capacity", bad)
	nd.ready = p.ready(status.Get("conditions"), bad)
	return nd
}

// object returns the mapping under key (nil when absent or null).
func (p *parser) object(n *yaml.Node, key string, bad func(*yaml.Node, string, ...any)) *yaml.Node {
	v := n.Get(key)
	if v == nil || v.Kind == yaml.Null {
		return nil
	}
	if v.Kind != yaml.Map {
		bad(v, "field %s is %s, want an object", key, found(v, p.fromJSON))
		return nil
	}
	return v
}

// str returns a string scalar: any scalar in YAML, a quoted one in JSON.
func (p *parser) str(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.Scalar || p.fromJSON && !n.Quoted {
		return "", false
	}
	return n.Value, true
}

func describe(n *yaml.Node, fromJSON bool) string {
	if n.Kind == yaml.Scalar {
		return strconv.Quote(n.Value)
	}
	return found(n, fromJSON)
}

// labels reads metadata.labels; it also returns the labels of the wrong
// type, which it reports.
func (p *parser) labels(n *yaml.Node, bad func(*yaml.Node, string, ...any)) (map[string]string, map[string]bool) {
	out, wrong := map[string]string{}, map[string]bool{}
	if n == nil {
		return out, wrong
	}
	for _, e := range n.Keys {
		if e.Value.Kind == yaml.Null {
			continue
		}
		v, ok := p.str(e.Value)
		if !ok {
			bad(e.Value, "label %q is %s, want a string", e.Key, found(e.Value, p.fromJSON))
			wrong[e.Key] = true
			continue
		}
		out[e.Key] = v
	}
	return out, wrong
}

// boolean reads true or false (absent or null is false).
func (p *parser) boolean(n *yaml.Node, field string, bad func(*yaml.Node, string, ...any)) bool {
	if n == nil || n.Kind == yaml.Null {
		return false
	}
	if n.Kind == yaml.Scalar && !n.Quoted {
		switch n.Value {
		case "true", "True", "TRUE":
			return true
		case "false", "False", "FALSE":
			return false
		}
	}
	bad(n, "field %s is %s, want true or false", field, describe(n, p.fromJSON))
	return false
}

// ready returns the status of the Ready condition ("" when there is none).
func (p *parser) ready(n *yaml.Node, bad func(*yaml.Node, string, ...any)) string {
	if n == nil || n.Kind == yaml.Null {
		return ""
	}
	if n.Kind != yaml.Seq {
		bad(n, "field status.conditions is %s, want a list", found(n, p.fromJSON))
		return ""
	}
	for _, c := range n.Items {
		if c.Kind == yaml.Map && scalarText(c.Get("type")) == "Ready" {
			return scalarText(c.Get("status"))
		}
	}
	return ""
}

// gpus reads the GPU count of the resource from an allocatable or
// capacity mapping (field); missing or null is zero.
func (p *parser) gpus(m *yaml.Node, field, at string) (int, bool) {
	v := m.Get(p.res)
	if v == nil || v.Kind == yaml.Null {
		return 0, true
	}
	if v.Kind != yaml.Scalar || p.fromJSON && !v.Quoted && (v.Value == "true" || v.Value == "false") {
		p.errorf(v.Line, topology.ErrGPUCount, "%s: %s %q is %s, want a quantity such as \"8\"", at, field, p.res, found(v, p.fromJSON))
		return 0, false
	}
	q := v.Value
	whole := q != ""
	for i := 0; i < len(q); i++ {
		whole = whole && q[i] >= '0' && q[i] <= '9'
	}
	if !whole {
		p.errorf(v.Line, topology.ErrGPUCount, "%s: %s %q is %q, want a whole number of GPUs such as \"8\" (no unit or fraction)", at, field, p.res, q)
		return 0, false
	}
	n, err := strconv.Atoi(q)
	if err != nil || n > topology.MaxGPUsPerNode {
		p.errorf(v.Line, topology.ErrGPUCount, "%s: %s %q is %s GPUs, want 1 to %d", at, field, p.res, q, topology.MaxGPUsPerNode)
		return 0, false
	}
	return n, true
}
