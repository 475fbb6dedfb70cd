package kube

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/phalanx-sched/phalanx/internal/defects"
	"github.com/phalanx-sched/phalanx/internal/yaml"
	"github.com/phalanx-sched/phalanx/topology"
)

// ErrNoReadyCondition classifies the warning that no node has a Ready
// condition.
var ErrNoReadyCondition = errors.New("kube: no Ready condition")

// ErrAllDown classifies the warning that every node is down.
var ErrAllDown = errors.New("kube: every node down")

// Parse reads Kubernetes nodes, as `kubectl get nodes -o json` or
// `kubectl get nodes -o yaml` prints them (an object of kind List or
// NodeList with items), a bare JSON array of Node objects, or a single
// Node object in JSON or YAML, and returns the ClusterSpec of the cluster they
// form, with LocalDomainNames set, and the nodes' status. A leading UTF-8
// byte order mark is skipped, in JSON as in YAML (byte offsets and line-1
// columns in messages then count from after it). Input that then starts
// with '{' or '[' (after blanks) is read as JSON, anything else as YAML
// (the subset of internal/yaml, which covers what kubectl writes).
//
// For each node, in input order:
//   - nodes NodeSelector does not match are skipped;
//   - the GPU count is status.allocatable[GPUResource], a whole number
//     such as "8" (a string or a number); when that is missing or zero
//     but status.capacity[GPUResource] is not, the node keeps its capacity
//     and is reported Down (its device plugin is not serving GPUs), so
//     the topology does not change while it recovers; a node with no GPUs
//     in either is skipped with SkipNodesWithoutGPUs and is a defect
//     otherwise;
//   - the node's Path is the values of its Levels labels, which must be
//     present and non-empty;
//   - a node whose Ready condition is not "True" is reported Down, a
//     cordoned node (spec.unschedulable) Drained.
//
// The node name is metadata.name; the kubernetes.io/hostname label is not
// read. Every defect is reported at once, up to opts.MaxDefects, in one
// *topology.Defects error naming the line and item: ErrSyntax (input that
// is neither, a document that is not a node list, naming what it is; a
// wrong kind or field type), ErrInvalidSpec (a missing level label or
// node name, no nodes), ErrDuplicate (a node name twice), ErrGPUCount (a
// GPU count that is not a whole number, is above topology.MaxGPUsPerNode,
// or is zero). Bad options are an error of their own (see Validate), and a
// read error from r is returned wrapped.
func Parse(r io.Reader, opts Options) (topology.ClusterSpec, Status, error) {
	lv, err := opts.resolve()
	if err != nil {
		return topology.ClusterSpec{}, Status{}, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return topology.ClusterSpec{}, Status{}, fmt.Errorf("%s: %w", source(opts.Source), err)
	}
	p := &parser{opts: &opts, lv: lv, src: source(opts.Source), col: defects.New(opts.MaxDefects), warn: defects.New(opts.MaxDefects)}
	p.res = opts.GPUResource
	if p.res == "" {
		p.res = DefaultGPUResource
	}
	p.seen = map[string]int{}
	p.spec = topology.ClusterSpec{Levels: lv.names, LocalDomainNames: true}
	if items, ok := p.items(data); ok {
		for i, item := range items {
			p.item(i, item)
		}
		p.finish()
	}
	if err := p.col.Err(); err != nil {
		return topology.ClusterSpec{}, Status{}, err
	}
	p.st.Warnings = p.warn.List()
	return p.spec, p.st, nil
}

// Load reads Kubernetes nodes with Parse and builds the Cluster. The
// Status says which nodes to mark down or drained.
func Load(r io.Reader, opts Options) (*topology.Cluster, Status, error) {
	spec, st, err := Parse(r, opts)
	if err != nil {
		return nil, Status{}, err
	}
	c, err := topology.Build(spec)
	if err != nil {
		return nil, Status{}, err
	}
	return c, st, nil
}

func source(src string) string {
	if src == "" {
		return "kube nodes"
	}
	return src
}

// parser holds one Parse call's state.
type parser struct {
	opts      *Options
	lv        levels
	src, res  string
	col, warn *defects.Collector
	fromJSON  bool
	spec      topology.ClusterSpec
	st        Status
	seen      map[string]int // node name -> item index
	noGPUs    []string
	noReady   int // selected nodes without a Ready condition
}

func (p *parser) errorf(line int, sentinel error, format string, args ...any) {
	p.col.Addf(p.src, line, sentinel, format, args...)
}

// items finds the node objects of the document.
func (p *parser) items(data []byte) ([]*yaml.Node, bool) {
	root, fromJSON, err := decode(data)
	p.fromJSON = fromJSON
	if err != nil {
		var de *decodeError
		errors.As(err, &de)
		p.errorf(de.line, topology.ErrSyntax, "%s", de.msg)
		return nil, false
	}
	const want = "want the output of kubectl get nodes -o json or -o yaml (a NodeList), a List of Nodes, a list of Nodes or a single Node"
	switch {
	case root == nil:
		p.errorf(0, topology.ErrSyntax, "empty input; %s", want)
		return nil, false
	case root.Kind == yaml.Seq:
		return root.Items, true
	case root.Kind != yaml.Map:
		p.errorf(root.Line, topology.ErrSyntax, "found %s; %s", found(root, p.fromJSON), want)
		return nil, false
	}
	kind := scalarText(root.Get("kind"))
	items := root.Get("items")
	switch {
	case kind == "Node":
		return []*yaml.Node{root}, true
	case kind != "" && kind != "List" && kind != "NodeList":
		p.errorf(root.Line, topology.ErrSyntax, "found an object of kind %q%s; %s", kind, apiVersion(root), want)
		return nil, false
	case items == nil && kind == "":
		p.errorf(root.Line, topology.ErrSyntax, "found a mapping with keys %s and no kind or items; %s", keyList(root), want)
		return nil, false
	case items == nil || items.Kind == yaml.Null:
		return nil, true
	case items.Kind != yaml.Seq:
		p.errorf(items.Line, topology.ErrSyntax, "field items is %s, want a list of Nodes", found(items, p.fromJSON))
		return nil, false
	}
	return items.Items, true
}

// found names what a value is, for messages.
func found(n *yaml.Node, fromJSON bool) string {
	switch {
	case n.Kind == yaml.Scalar && fromJSON && !n.Quoted:
		if n.Value == "true" || n.Value == "false" {
			return "a boolean"
		}
		return "a number"
	case n.Kind == yaml.Scalar:
		return "a string " + strconv.Quote(clip(n.Value, 40))
	}
	return n.Kind.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func scalarText(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.Scalar {
		return ""
	}
	return n.Value
}

func apiVersion(n *yaml.Node) string {
	if v := scalarText(n.Get("apiVersion")); v != "" {
		return " (apiVersion " + v + ")"
	}
	return ""
}

// keyList names up to six keys of a mapping.
func keyList(n *yaml.Node) string {
	var keys []string
	for _, e := range n.Keys {
		keys = append(keys, e.Key)
	}
	if len(keys) == 0 {
		return "(none)"
	}
	if len(keys) > 6 {
		return strings.Join(keys[:6], ", ") + fmt.Sprintf(" and %d more", len(keys)-6)
	}
	return strings.Join(keys, ", ")
}

// finish reports what concerns the node list as a whole.
func (p *parser) finish() {
	if len(p.noGPUs) > 0 {
		p.errorf(0, topology.ErrGPUCount, "%d node(s) without %q: %s (set SkipNodesWithoutGPUs to leave them out)",
			len(p.noGPUs), p.res, nameList(p.noGPUs, 5))
	}
	n := len(p.spec.Nodes)
	switch {
	case n == 0 && len(p.st.Skipped) > 0 && p.col.Len() == 0:
		p.errorf(0, topology.ErrInvalidSpec, "no nodes (%d skipped: %s)", len(p.st.Skipped), nameList(p.st.Skipped, 5))
	case n == 0 && p.col.Len() == 0:
		p.errorf(0, topology.ErrInvalidSpec, "no nodes")
	case p.noReady == n && n > 0:
		p.warn.Addf(p.src, 0, ErrNoReadyCondition, "none of the %d nodes has a Ready condition, so every one is reported Down; is this the output of kubectl get nodes?", n)
	case len(p.st.Down) == n && n > 0:
		p.warn.Addf(p.src, 0, ErrAllDown, "all %d nodes are down (not Ready, or no allocatable GPUs)", n)
	}
}

// nameList renders up to limit names, then how many more.
func nameList(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}

// selected reports whether labels carry every entry of sel.
func selected(labels map[string]string, sel map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
