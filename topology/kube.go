package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// This file reads a Kubernetes node list (the output of
// `kubectl get nodes -o json`) into a Spec, the way Kueue's
// Topology-Aware Scheduling sees a cluster: an ordered list of node label
// keys, top to bottom, where a domain is identified by the path of label
// values from the top. Only encoding/json is used; the module does not
// depend on Kubernetes.

// Well-known Kubernetes node label keys, for KubeOptions.Levels and
// KubeOptions.NodeSelector.
const (
	// KubeLabelHostname is the node's own host name. As the last entry
	// of KubeOptions.Levels it stands for the node itself and adds no
	// level.
	KubeLabelHostname = "kubernetes.io/hostname"
	// KubeLabelZone is the cloud availability zone of a node.
	KubeLabelZone = "topology.kubernetes.io/zone"
	// KubeLabelGKEBlock is the GKE (Compute Engine) topology block: the
	// largest group of hosts with a low-latency network between them.
	KubeLabelGKEBlock = "cloud.google.com/gce-topology-block"
	// KubeLabelGKESubblock is the GKE topology sub-block: a group of
	// hosts inside one block, closer to each other (about a rack).
	KubeLabelGKESubblock = "cloud.google.com/gce-topology-subblock"
	// KubeLabelGKEHost is the GKE physical host a VM runs on.
	KubeLabelGKEHost = "cloud.google.com/gce-topology-host"
	// KubeLabelAWSLayer1 is the top (farthest from the instance) EC2
	// network node of an EKS node, from EC2 instance topology.
	KubeLabelAWSLayer1 = "topology.k8s.aws/network-node-layer-1"
	// KubeLabelAWSLayer2 is the middle EC2 network node of an EKS node.
	KubeLabelAWSLayer2 = "topology.k8s.aws/network-node-layer-2"
	// KubeLabelAWSLayer3 is the EC2 network node an EKS node connects to
	// directly (the lowest layer).
	KubeLabelAWSLayer3 = "topology.k8s.aws/network-node-layer-3"
	// KubeLabelNVLinkClique is set by NVIDIA GPU Feature Discovery on
	// nodes of a multi-node NVLink system (such as GB200 NVL72): nodes
	// with equal values share one NVLink fabric. The value is
	// "<cluster UUID>.<clique ID>".
	KubeLabelNVLinkClique = "nvidia.com/gpu.clique"
)

// KubeDefaultGPUResource is the extended resource counted as GPUs when
// KubeOptions.GPUResource is empty.
const KubeDefaultGPUResource = "nvidia.com/gpu"

// KubeOptions says how ParseKubeNodes turns Kubernetes nodes into a Spec.
// The zero value reads a flat cluster of every node with NVIDIA GPUs.
type KubeOptions struct {
	// Levels lists node label keys, top to bottom, like the levels of a
	// Kueue Topology: for example {"cloud.provider.com/topology-block",
	// "cloud.provider.com/topology-rack", "kubernetes.io/hostname"}. Each
	// key becomes one level of the Spec and a node's label values become
	// its Path. A domain is identified by its path of values (Kueue's
	// rule): rack "r1" under block "b1" and rack "r1" under block "b2"
	// are two domains. KubeLabelHostname may only be the last key; it
	// names the node itself and adds no level. Empty Levels is a flat
	// cluster. At most MaxLevels levels.
	Levels []string
	// LevelNames optionally names the Spec's levels, one entry per entry
	// of Levels (the entry for a trailing KubeLabelHostname is ignored).
	// When LevelNames is empty, a level is named after its key: the part
	// after the last '/', then after the last '.' ("rack" for
	// "example.com/rack", "clique" for "nvidia.com/gpu.clique"); if two
	// levels would get the same name, every level is named by its full
	// key instead.
	LevelNames []string
	// GPUResource is the extended resource whose count is a node's GPU
	// count; KubeDefaultGPUResource when empty.
	GPUResource string
	// NodeSelector, when not empty, keeps only the nodes that carry all
	// of its labels with exactly these values (like the node labels of a
	// Kueue ResourceFlavor); other nodes are skipped. Selected nodes must
	// have every level label.
	NodeSelector map[string]string
	// SkipNodesWithoutGPUs skips nodes that have no GPUs (CPU-only
	// nodes, control-plane nodes). Without it such a node is an
	// ErrGPUCount error. Skipped nodes need no level labels.
	SkipNodesWithoutGPUs bool
	// Source names the input in errors and in NodeSpec.Source, for
	// example the file name "nodes.json".
	Source string
}

// KubePresetGKE returns options for GKE clusters with compact placement
// or reservations: levels block, subblock and host from the
// cloud.google.com/gce-topology-* labels. A host is one physical machine;
// with one GPU VM per machine each host domain holds one node.
func KubePresetGKE() KubeOptions {
	return KubeOptions{
		Levels:     []string{KubeLabelGKEBlock, KubeLabelGKESubblock, KubeLabelGKEHost},
		LevelNames: []string{"block", "subblock", "host"},
	}
}

// KubePresetAWS returns options for EKS clusters: levels layer1, layer2
// and layer3 from the topology.k8s.aws/network-node-layer-* labels (EC2
// instance topology), top to bottom; layer3 is the network node the
// instances attach to.
func KubePresetAWS() KubeOptions {
	return KubeOptions{
		Levels:     []string{KubeLabelAWSLayer1, KubeLabelAWSLayer2, KubeLabelAWSLayer3},
		LevelNames: []string{"layer1", "layer2", "layer3"},
	}
}

// KubePresetNVLinkClique returns options with one level, clique, from the
// nvidia.com/gpu.clique label that NVIDIA GPU Feature Discovery sets: each
// domain is one multi-node NVLink domain (for GB200 NVL72, 18 nodes of 4
// GPUs). Every selected node must carry the label; use NodeSelector or
// SkipNodesWithoutGPUs to leave other nodes out.
func KubePresetNVLinkClique() KubeOptions {
	return KubeOptions{
		Levels:     []string{KubeLabelNVLinkClique},
		LevelNames: []string{"clique"},
	}
}

// KubePresetZone returns options with one level, zone, from the
// topology.kubernetes.io/zone label: a coarse topology for clusters whose
// nodes carry no network topology labels.
func KubePresetZone() KubeOptions {
	return KubeOptions{
		Levels:     []string{KubeLabelZone},
		LevelNames: []string{"zone"},
	}
}

// KubeStatus reports what ParseKubeNodes learned besides the Spec: which
// nodes cannot take work now and which nodes were left out. Names are in
// input order; each node is in at most one list.
type KubeStatus struct {
	// Down lists nodes of the Spec that cannot run work: their Ready
	// condition is not "True" (False, Unknown or missing), or they report
	// no allocatable GPUs although their capacity has some (the device
	// plugin is not serving them). A scheduler marks them down.
	Down []string
	// Drained lists nodes of the Spec that are cordoned
	// (spec.unschedulable) and not Down: running work may finish, nothing
	// new starts. A scheduler marks them drained.
	Drained []string
	// Skipped lists nodes left out of the Spec: those NodeSelector does
	// not match and, with SkipNodesWithoutGPUs, those without GPUs.
	Skipped []string
}

// Validate checks the options: level keys non-empty and distinct,
// KubeLabelHostname only as the last key, at most MaxLevels levels, and
// LevelNames, when given, one non-empty distinct name per entry of Levels
// (the name of a trailing hostname key may be empty). Errors
// wrap ErrInvalidSpec or ErrDuplicate.
func (o KubeOptions) Validate() error {
	_, err := o.resolve()
	return err
}

// kubeLevels is KubeOptions.Levels resolved: the label key and Spec level
// name of each level, without a trailing hostname key.
type kubeLevels struct {
	keys  []string
	names []string
}

func (o KubeOptions) resolve() (kubeLevels, error) {
	keys := o.Levels
	for i, k := range keys {
		if k == "" {
			return kubeLevels{}, fmt.Errorf("%w: kube level %d has no label key", ErrInvalidSpec, i)
		}
		for _, prev := range keys[:i] {
			if prev == k {
				return kubeLevels{}, fmt.Errorf("%w: kube level label %q listed twice", ErrDuplicate, k)
			}
		}
		if k == KubeLabelHostname && i != len(keys)-1 {
			return kubeLevels{}, fmt.Errorf("%w: kube level label %q must be the last level (it names the node itself)", ErrInvalidSpec, k)
		}
	}
	if len(o.LevelNames) != 0 && len(o.LevelNames) != len(keys) {
		return kubeLevels{}, fmt.Errorf("%w: %d kube level names for %d levels", ErrInvalidSpec, len(o.LevelNames), len(keys))
	}
	if n := len(keys); n > 0 && keys[n-1] == KubeLabelHostname {
		keys = keys[:n-1]
	}
	if len(keys) > MaxLevels {
		return kubeLevels{}, fmt.Errorf("%w: %d kube levels, at most %d", ErrInvalidSpec, len(keys), MaxLevels)
	}
	names := make([]string, len(keys))
	if len(o.LevelNames) != 0 {
		copy(names, o.LevelNames)
		for i, n := range names {
			if n == "" {
				return kubeLevels{}, fmt.Errorf("%w: kube level %q has an empty name", ErrInvalidSpec, keys[i])
			}
			for _, prev := range names[:i] {
				if prev == n {
					return kubeLevels{}, fmt.Errorf("%w: kube level name %q given twice", ErrDuplicate, n)
				}
			}
		}
	} else {
		clash := false
		for i, k := range keys {
			names[i] = kubeShortName(k)
			for _, prev := range names[:i] {
				clash = clash || prev == names[i]
			}
		}
		if clash {
			copy(names, keys)
		}
	}
	return kubeLevels{keys: keys, names: names}, nil
}

// kubeShortName derives a level name from a label key: the part after
// the last '/', then after the last '.'; the whole key if that is empty.
func kubeShortName(key string) string {
	name := key[strings.LastIndexByte(key, '/')+1:]
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	if name == "" {
		return key
	}
	return name
}

// kubeNode holds the fields of a Kubernetes Node object that matter here.
type kubeNode struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool `json:"unschedulable"`
	} `json:"spec"`
	Status struct {
		Capacity    map[string]json.RawMessage `json:"capacity"`
		Allocatable map[string]json.RawMessage `json:"allocatable"`
		Conditions  []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// kubeDoc is the top-level object: a List or NodeList with items, or a
// single Node (whose fields are then read again as a kubeNode).
type kubeDoc struct {
	Kind  string            `json:"kind"`
	Items []json.RawMessage `json:"items"`
}

// ParseKubeNodes reads Kubernetes nodes as JSON, the output of
// `kubectl get nodes -o json` (an object of kind List or NodeList with
// items), a bare JSON array of Node objects, or a single Node object, and
// returns the Spec of the cluster they form, with LocalDomainNames set,
// and the nodes' status.
//
// For each node, in input order:
//   - nodes NodeSelector does not match are skipped;
//   - the GPU count is status.allocatable[GPUResource], a whole number
//     such as "8" (a JSON string or number); when that is missing or zero
//     but status.capacity[GPUResource] is not, the node keeps its capacity
//     and is reported Down (its device plugin is not serving GPUs), so
//     the topology does not change while it recovers; a node with no GPUs
//     in either is skipped with SkipNodesWithoutGPUs and is an ErrGPUCount
//     error otherwise;
//   - the node's Path is the values of its Levels labels, which must be
//     present and non-empty;
//   - a node whose Ready condition is not "True" is reported Down, a
//     cordoned node (spec.unschedulable) Drained.
//
// The node name is metadata.name; the kubernetes.io/hostname label is not
// read. Errors wrap ErrSyntax (malformed JSON, with its line, column and
// byte offset; a wrong kind or field type), ErrInvalidSpec (bad options,
// a missing level label or node name, no nodes), ErrDuplicate (a node
// name twice) or ErrGPUCount (a GPU count that is not a whole number, is
// above MaxGPUsPerNode, or is zero), and name the item index and node. A
// read error from r is returned wrapped, as is.
func ParseKubeNodes(r io.Reader, opts KubeOptions) (Spec, KubeStatus, error) {
	lv, err := opts.resolve()
	if err != nil {
		return Spec{}, KubeStatus{}, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return Spec{}, KubeStatus{}, fmt.Errorf("%s: %w", kubeSource(opts.Source), err)
	}
	items, err := kubeItems(data, opts.Source)
	if err != nil {
		return Spec{}, KubeStatus{}, err
	}
	res := opts.GPUResource
	if res == "" {
		res = KubeDefaultGPUResource
	}

	spec := Spec{Levels: lv.names, LocalDomainNames: true}
	var st KubeStatus
	seen := make(map[string]int, len(items))
	var noGPUs []string
	for i, raw := range items {
		var n kubeNode
		err := json.Unmarshal(raw, &n)
		name := n.Metadata.Name
		at := kubeAt(opts.Source, i, name)
		if err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				if te.Field == "metadata.labels" {
					return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: %s", ErrSyntax, at, kubeBadLabel(raw))
				}
				if te.Field == "" {
					return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: JSON %s, want a Node object", ErrSyntax, at, te.Value)
				}
				return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: field %s is JSON %s, want %s", ErrSyntax, at, te.Field, te.Value, kubeJSONType(te))
			}
			return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: %v", ErrSyntax, at, err)
		}
		if n.Kind != "" && n.Kind != "Node" {
			return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: kind %q, want Node", ErrSyntax, at, n.Kind)
		}
		if name == "" {
			return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: no metadata.name", ErrInvalidSpec, at)
		}
		if j, dup := seen[name]; dup {
			return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: node %q is item %d and item %d", ErrDuplicate, kubeSource(opts.Source), name, j, i)
		}
		seen[name] = i

		// Selection: NodeSelector first, then GPUs, so that nodes left
		// out need no topology labels.
		if !kubeSelected(n.Metadata.Labels, opts.NodeSelector) {
			st.Skipped = append(st.Skipped, name)
			continue
		}
		gpus, err := kubeGPUs(n.Status.Allocatable, res, "allocatable", at)
		if err != nil {
			return Spec{}, KubeStatus{}, err
		}
		degraded := false
		if gpus == 0 {
			gpus, err = kubeGPUs(n.Status.Capacity, res, "capacity", at)
			if err != nil {
				return Spec{}, KubeStatus{}, err
			}
			degraded = gpus > 0
		}
		if gpus == 0 {
			if opts.SkipNodesWithoutGPUs {
				st.Skipped = append(st.Skipped, name)
			} else {
				noGPUs = append(noGPUs, name)
			}
			continue
		}

		path := make([]string, len(lv.keys))
		for l, key := range lv.keys {
			v, ok := n.Metadata.Labels[key]
			if !ok {
				return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: no label %q for level %q", ErrInvalidSpec, at, key, lv.names[l])
			}
			if v == "" {
				return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: label %q for level %q is empty", ErrInvalidSpec, at, key, lv.names[l])
			}
			path[l] = v
		}
		spec.Nodes = append(spec.Nodes, NodeSpec{Name: name, GPUs: gpus, Path: path, Source: kubeAt(opts.Source, i, "")})

		switch {
		case degraded || !kubeReady(&n):
			st.Down = append(st.Down, name)
		case n.Spec.Unschedulable:
			st.Drained = append(st.Drained, name)
		}
	}
	if len(noGPUs) > 0 {
		return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: %d node(s) without %q: %s (set SkipNodesWithoutGPUs to leave them out)",
			ErrGPUCount, kubeSource(opts.Source), len(noGPUs), res, kubeNameList(noGPUs, 5))
	}
	if len(spec.Nodes) == 0 {
		if len(st.Skipped) > 0 {
			return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: no nodes (%d skipped: %s)", ErrInvalidSpec, kubeSource(opts.Source), len(st.Skipped), kubeNameList(st.Skipped, 5))
		}
		return Spec{}, KubeStatus{}, fmt.Errorf("%w: %s: no nodes", ErrInvalidSpec, kubeSource(opts.Source))
	}
	return spec, st, nil
}

// LoadKubeNodes reads Kubernetes nodes with ParseKubeNodes and builds the
// Cluster. Use ParseKubeNodes and Build instead to learn which nodes are
// down, drained or skipped.
func LoadKubeNodes(r io.Reader, opts KubeOptions) (*Cluster, error) {
	spec, _, err := ParseKubeNodes(r, opts)
	if err != nil {
		return nil, err
	}
	return Build(spec)
}

// kubeItems splits the input into its node objects.
func kubeItems(data []byte, src string) ([]json.RawMessage, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: %s: empty input, want the JSON of kubectl get nodes -o json", ErrSyntax, kubeSource(src))
	}
	var items []json.RawMessage
	var err error
	switch trimmed[0] {
	case '[':
		err = json.Unmarshal(data, &items)
	case '{':
		var doc kubeDoc
		err = json.Unmarshal(data, &doc)
		if err == nil {
			switch doc.Kind {
			case "", "List", "NodeList":
				items = doc.Items
			case "Node":
				items = []json.RawMessage{json.RawMessage(data)}
			default:
				return nil, fmt.Errorf("%w: %s: kind %q, want List, NodeList or Node", ErrSyntax, kubeSource(src), doc.Kind)
			}
		}
	default:
		var v json.RawMessage
		if err = json.Unmarshal(data, &v); err == nil {
			return nil, fmt.Errorf("%w: %s: want a JSON object or array", ErrSyntax, kubeSource(src))
		}
	}
	if err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%w: %s: %s: %v", ErrSyntax, kubeSource(src), kubePos(data, se.Offset), se)
		case errors.As(err, &te):
			what := "top level"
			if te.Field != "" {
				what = "field " + te.Field
			}
			return nil, fmt.Errorf("%w: %s: %s: %s is JSON %s, want %s", ErrSyntax, kubeSource(src), kubePos(data, te.Offset), what, te.Value, kubeJSONType(te))
		default:
			return nil, fmt.Errorf("%w: %s: %v", ErrSyntax, kubeSource(src), err)
		}
	}
	return items, nil
}

// kubeGPUs reads the GPU count of resource res from a node's allocatable
// or capacity map (field). Missing or null is zero.
func kubeGPUs(m map[string]json.RawMessage, res, field, at string) (int, error) {
	raw := bytes.TrimSpace(m[res])
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var q string
	switch {
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &q); err != nil {
			return 0, fmt.Errorf("%w: %s: %s %q: %v", ErrSyntax, at, field, res, err)
		}
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		q = string(raw)
	default:
		return 0, fmt.Errorf("%w: %s: %s %q is JSON %s, want a quantity such as \"8\"", ErrGPUCount, at, field, res, kubeJSONKind(raw))
	}
	whole := q != ""
	for i := 0; i < len(q); i++ {
		whole = whole && q[i] >= '0' && q[i] <= '9'
	}
	if !whole {
		return 0, fmt.Errorf("%w: %s: %s %q is %q, want a whole number of GPUs such as \"8\" (no unit or fraction)", ErrGPUCount, at, field, res, q)
	}
	n, err := strconv.Atoi(q)
	if err != nil || n > MaxGPUsPerNode {
		return 0, fmt.Errorf("%w: %s: %s %q is %s GPUs, want 1 to %d", ErrGPUCount, at, field, res, q, MaxGPUsPerNode)
	}
	return n, nil
}

// kubeBadLabel names the label of a node object whose value is not a
// string (the first in key order), for an error about it.
func kubeBadLabel(raw []byte) string {
	var n struct {
		Metadata struct {
			Labels map[string]json.RawMessage `json:"labels"`
		} `json:"metadata"`
	}
	if json.Unmarshal(raw, &n) == nil {
		keys := slices.Sorted(maps.Keys(n.Metadata.Labels))
		for _, k := range keys {
			if v := bytes.TrimSpace(n.Metadata.Labels[k]); len(v) > 0 && v[0] != '"' && string(v) != "null" {
				return fmt.Sprintf("label %q is JSON %s, want a string", k, kubeJSONKind(v))
			}
		}
	}
	return "metadata.labels has a value that is not a string"
}

// kubeJSONKind names the kind of a JSON value from its first byte.
func kubeJSONKind(v []byte) string {
	switch {
	case len(v) == 0:
		return "nothing"
	case v[0] == '{':
		return "object"
	case v[0] == '[':
		return "array"
	case v[0] == '"':
		return "string"
	case v[0] == 't' || v[0] == 'f':
		return "boolean"
	case v[0] == 'n':
		return "null"
	}
	return "number"
}

// kubeReady reports whether the node's Ready condition is "True".
func kubeReady(n *kubeNode) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// kubeSelected reports whether labels carry every entry of sel.
func kubeSelected(labels, sel map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func kubeSource(src string) string {
	if src == "" {
		return "kube nodes"
	}
	return src
}

// kubeAt names item i (and its node, when known) for errors.
func kubeAt(src string, i int, name string) string {
	s := fmt.Sprintf("%s: item %d", kubeSource(src), i)
	if name != "" {
		s += fmt.Sprintf(" (node %q)", name)
	}
	return s
}

// kubePos renders the position of a JSON error that occurred after
// reading off bytes: line and column (1-based) and byte offset (0-based)
// of the offending byte.
func kubePos(data []byte, off int64) string {
	p := int(off) - 1
	p = max(0, min(p, len(data)))
	line := 1 + bytes.Count(data[:p], []byte{'\n'})
	col := p - bytes.LastIndexByte(data[:p], '\n')
	return fmt.Sprintf("line %d, column %d (byte %d)", line, col, p)
}

// kubeJSONType describes the JSON a Go type wants, for type errors.
func kubeJSONType(te *json.UnmarshalTypeError) string {
	if te.Type == nil {
		return "another type"
	}
	switch te.Type.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return te.Type.String()
}

// kubeNameList renders up to limit names, then how many more.
func kubeNameList(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}
