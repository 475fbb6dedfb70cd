package topology

import (
	"errors"
	"fmt"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
	"io"
	"strconv"
	"strings"
)

// ErrUnknownTopology marks a topology name that a topology.yaml does not
// define.
var ErrUnknownTopology = errors.New("topology: unknown topology")

// SlurmTopologies is the content of a Slurm topology.yaml (Slurm 25.05 and
// later): several named topologies, one of them the cluster default.
type SlurmTopologies struct {
	// Names lists the topologies in file order.
	Names []string
	// Default names the cluster default: the topology with
	// "cluster_default: true", or the first one when none has it.
	Default string
	// Kinds maps each topology to "tree", "block" or "flat".
	Kinds map[string]string
	// Specs maps each topology to its Spec.
	Specs map[string]Spec
}

// Cluster builds the named topology; the empty name means the default.
// An unknown name is an ErrUnknownTopology error.
func (t *SlurmTopologies) Cluster(name string) (*Cluster, error) {
	if name == "" {
		name = t.Default
	}
	spec, ok := t.Specs[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopology, name)
	}
	return Build(spec)
}

// ParseSlurmTopologyYAML reads a Slurm topology.yaml and returns its
// topologies, each checked by building it once. The file is a list of
// topologies:
//
//	# topology.yaml
//	- topology: topo1        # the name; must be the first key
//	  cluster_default: true  # optional, true or false
//	  tree:
//	    switches:
//	      - switch: sw_root
//	        children: s[1-2]  # hostlist of child switches
//	      - switch: s1
//	        nodes: node[01-02]  # hostlist of nodes
//	- topology: topo2
//	  block:
//	    block_sizes: [4, 16]  # optional
//	    blocks:
//	      - block: b1
//	        nodes: node[01-04]
//	- topology: topo3
//	  flat: true
//
// Each topology has exactly one of tree, block and "flat: true". Trees and
// blocks follow the rules of ParseSlurmTopologyConf (levels, their names,
// unbalanced trees, block aggregates). A flat topology has no levels; its
// nodes are opts.Nodes or, when that is empty, the union of the nodes of
// the file's other topologies in file order. NodeGPUs may name any node of
// any topology.
//
// The file is read by a small strict parser for the part of YAML these
// files use: block mappings and sequences (a sequence may sit at its key's
// indentation), plain, single- and double-quoted scalars on one line, flow
// sequences of scalars ("[4, 16]"), comments and a leading "---". Anchors,
// aliases, tags, block scalars, flow mappings, multi-line values, tabs in
// indentation and duplicate keys are errors naming the line. Booleans are
// true/false in lower, title or upper case. A hostlist that starts with
// "[" must be quoted, or YAML reads it as a list.
//
// Errors wrap a sentinel and start with "file:line:": ErrSyntax for YAML
// outside the subset, unknown keys and wrong value types; ErrDuplicate for
// two topologies with one name; ErrInvalidSpec for no topology, two
// defaults, or not exactly one kind; and every error of
// ParseSlurmTopologyConf. On error the result is nil.
func ParseSlurmTopologyYAML(r io.Reader, opts SlurmOptions) (*SlurmTopologies, error) {
	src := opts.Source
	if src == "" {
		src = "topology.yaml"
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	root, err := parseYAMLSubset(string(data), src)
	if err != nil {
		return nil, err
	}
	d := slurmYAMLDoc{src: src}
	if root == nil || root.kind == yamlNull || (root.kind == yamlSeq && len(root.items) == 0) {
		return nil, fmt.Errorf("%s: %w: no topology", src, ErrInvalidSpec)
	}
	if root.kind != yamlSeq {
		return nil, d.errorf(root.line, ErrSyntax, "the file must be a list of topologies, not %s", root.kind)
	}

	type topo struct {
		name, kind, pos string
		layout          slurmLayout
	}
	var topos []topo
	out := &SlurmTopologies{Kinds: make(map[string]string), Specs: make(map[string]Spec)}
	defaultPos := ""
	for _, item := range root.items {
		if item.kind != yamlMap {
			return nil, d.errorf(item.line, ErrSyntax, "a topology must be a mapping, not %s", item.kind)
		}
		first := item.keys[0]
		if first.key != "topology" {
			return nil, d.errorf(first.line, ErrSyntax, "the first key of a topology must be topology:, not %s:", first.key)
		}
		name, err := d.str(first.value, "topology")
		if err != nil {
			return nil, err
		}
		pos := d.pos(first.line)
		if name == "" {
			return nil, d.errorf(first.line, ErrSyntax, "empty topology name")
		}
		for _, prev := range topos {
			if prev.name == name {
				return nil, d.errorf(first.line, ErrDuplicate, "topology %q defined twice (first at %s)", name, prev.pos)
			}
		}
		t := topo{name: name, pos: pos}
		var kinds []string
		for _, e := range item.keys[1:] {
			switch e.key {
			case "cluster_default":
				def, err := d.boolean(e.value, e.key)
				if err != nil {
					return nil, err
				}
				if def {
					if defaultPos != "" {
						return nil, d.errorf(e.line, ErrInvalidSpec, "topologies %q and %q are both cluster_default (first at %s)", out.Default, name, defaultPos)
					}
					out.Default, defaultPos = name, d.pos(e.line)
				}
			case "tree":
				kinds = append(kinds, "tree")
				t.layout, err = d.tree(e)
			case "block":
				kinds = append(kinds, "block")
				t.layout, err = d.block(e)
			case "flat":
				flat, err := d.boolean(e.value, e.key)
				if err != nil {
					return nil, err
				}
				if flat {
					kinds = append(kinds, "flat")
				}
			default:
				err = d.errorf(e.line, ErrSyntax, "unknown key %s: in topology %q (want cluster_default, tree, block or flat)", e.key, name)
			}
			if err != nil {
				return nil, err
			}
		}
		if len(kinds) != 1 {
			return nil, d.errorf(first.line, ErrInvalidSpec, "topology %q must have exactly one of tree, block and flat: true, has %d", name, len(kinds))
		}
		t.kind = kinds[0]
		topos = append(topos, t)
	}

	// Flat topologies: the nodes of opts.Nodes, or of every other topology.
	var flatNodes []string
	known := make(map[string]bool)
	if len(opts.Nodes) > 0 {
		for _, expr := range opts.Nodes {
			names, err := hostlist.Expand(expr)
			if err != nil {
				return nil, fmt.Errorf("%s: SlurmOptions.Nodes: %w: %w", src, ErrSyntax, err)
			}
			for _, n := range names {
				if known[n] {
					return nil, fmt.Errorf("%s: %w: SlurmOptions.Nodes lists node %q twice", src, ErrDuplicate, n)
				}
				known[n] = true
				flatNodes = append(flatNodes, n)
			}
		}
	}
	for _, t := range topos {
		for _, n := range t.layout.nodes {
			if !known[n.name] {
				known[n.name] = true
				if len(opts.Nodes) == 0 {
					flatNodes = append(flatNodes, n.name)
				}
			}
		}
	}
	gpus, err := slurmGPUs(opts, src, func(name string) bool { return known[name] })
	if err != nil {
		return nil, err
	}
	for _, t := range topos {
		if t.kind == "flat" {
			if len(flatNodes) == 0 {
				return nil, fmt.Errorf("%s: %w: flat topology %q has no nodes: set SlurmOptions.Nodes", t.pos, ErrInvalidSpec, t.name)
			}
			for _, n := range flatNodes {
				t.layout.add(n, t.pos, nil)
			}
		}
		spec := t.layout.spec(gpus)
		if _, err := Build(spec); err != nil {
			return nil, fmt.Errorf("%s: topology %q: %w", t.pos, t.name, err)
		}
		out.Names = append(out.Names, t.name)
		out.Kinds[t.name] = t.kind
		out.Specs[t.name] = spec
	}
	if out.Default == "" {
		out.Default = out.Names[0]
	}
	return out, nil
}

// slurmYAMLDoc reads the topology.yaml schema from parsed YAML nodes.
type slurmYAMLDoc struct {
	src string
}

func (d *slurmYAMLDoc) pos(line int) string { return fmt.Sprintf("%s:%d", d.src, line) }

func (d *slurmYAMLDoc) errorf(line int, sentinel error, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %w: %s", d.src, line, sentinel, fmt.Sprintf(format, args...))
}

// str returns a scalar's text.
func (d *slurmYAMLDoc) str(n *yamlNode, key string) (string, error) {
	if n.kind != yamlScalar {
		return "", d.errorf(n.line, ErrSyntax, "%s: wants a string, not %s", key, n.kind)
	}
	return n.value, nil
}

// boolean returns an unquoted true or false.
func (d *slurmYAMLDoc) boolean(n *yamlNode, key string) (bool, error) {
	if n.kind == yamlScalar && !n.quoted {
		switch n.value {
		case "true", "True", "TRUE":
			return true, nil
		case "false", "False", "FALSE":
			return false, nil
		}
	}
	return false, d.errorf(n.line, ErrSyntax, "%s: wants true or false", key)
}

// entries returns a mapping's entries after checking their keys.
func (d *slurmYAMLDoc) entries(n *yamlNode, what string, allowed ...string) ([]yamlEntry, error) {
	if n.kind != yamlMap {
		return nil, d.errorf(n.line, ErrSyntax, "%s wants a mapping, not %s", what, n.kind)
	}
	for _, e := range n.keys {
		ok := false
		for _, a := range allowed {
			ok = ok || e.key == a
		}
		if !ok {
			return nil, d.errorf(e.line, ErrSyntax, "unknown key %s: in %s (want %s)", e.key, what, strings.Join(allowed, ", "))
		}
	}
	return n.keys, nil
}

// list returns a sequence's items; null is the empty list.
func (d *slurmYAMLDoc) list(n *yamlNode, key string) ([]*yamlNode, error) {
	switch n.kind {
	case yamlSeq:
		return n.items, nil
	case yamlNull:
		return nil, nil
	}
	return nil, d.errorf(n.line, ErrSyntax, "%s: wants a list, not %s", key, n.kind)
}

func (d *slurmYAMLDoc) tree(e yamlEntry) (slurmLayout, error) {
	keys, err := d.entries(e.value, "tree", "switches")
	if err != nil {
		return slurmLayout{}, err
	}
	var defs []slurmSwitch
	for _, k := range keys {
		items, err := d.list(k.value, k.key)
		if err != nil {
			return slurmLayout{}, err
		}
		for _, it := range items {
			fields, err := d.entries(it, "a switch", "switch", "children", "nodes")
			if err != nil {
				return slurmLayout{}, err
			}
			sw := slurmSwitch{pos: d.pos(it.line)}
			named := false
			for _, f := range fields {
				v, err := d.str(f.value, f.key)
				if err != nil {
					return slurmLayout{}, err
				}
				switch f.key {
				case "switch":
					sw.name, sw.pos, named = v, d.pos(f.line), true
				case "children":
					sw.switches, sw.switchesPos, sw.hasSwitches = v, d.pos(f.line), true
				case "nodes":
					sw.nodes, sw.nodesPos, sw.hasNodes = v, d.pos(f.line), true
				}
			}
			if !named {
				return slurmLayout{}, d.errorf(it.line, ErrSyntax, "a switch without switch: (its name)")
			}
			defs = append(defs, sw)
		}
	}
	if len(defs) == 0 {
		return slurmLayout{}, d.errorf(e.line, ErrInvalidSpec, "tree without switches")
	}
	return buildSlurmTree(defs)
}

func (d *slurmYAMLDoc) block(e yamlEntry) (slurmLayout, error) {
	keys, err := d.entries(e.value, "block", "block_sizes", "blocks")
	if err != nil {
		return slurmLayout{}, err
	}
	var defs []slurmBlock
	var sizes slurmBlockSizes
	for _, k := range keys {
		items, err := d.list(k.value, k.key)
		if err != nil {
			return slurmLayout{}, err
		}
		if k.key == "block_sizes" {
			sizes = slurmBlockSizes{pos: d.pos(k.line), set: true}
			for _, it := range items {
				v, err := d.str(it, "block_sizes")
				if err != nil {
					return slurmLayout{}, err
				}
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil || n < 1 || it.quoted {
					return slurmLayout{}, d.errorf(it.line, ErrSyntax, "block size %q is not a positive number", v)
				}
				sizes.sizes = append(sizes.sizes, int(n))
			}
			continue
		}
		for _, it := range items {
			fields, err := d.entries(it, "a block", "block", "nodes")
			if err != nil {
				return slurmLayout{}, err
			}
			b := slurmBlock{pos: d.pos(it.line)}
			named := false
			for _, f := range fields {
				v, err := d.str(f.value, f.key)
				if err != nil {
					return slurmLayout{}, err
				}
				if f.key == "block" {
					b.name, b.pos, named = v, d.pos(f.line), true
				} else {
					b.nodes, b.nodesPos, b.hasNodes = v, d.pos(f.line), true
				}
			}
			if !named {
				return slurmLayout{}, d.errorf(it.line, ErrSyntax, "a block without block: (its name)")
			}
			defs = append(defs, b)
		}
	}
	return buildSlurmBlocks(defs, sizes, d.pos(e.line))
}

// The YAML subset.

type yamlKind int

const (
	yamlNull yamlKind = iota
	yamlScalar
	yamlSeq
	yamlMap
)

func (k yamlKind) String() string {
	switch k {
	case yamlScalar:
		return "a scalar"
	case yamlSeq:
		return "a list"
	case yamlMap:
		return "a mapping"
	}
	return "null"
}

// yamlNode is a parsed YAML value.
type yamlNode struct {
	kind   yamlKind
	line   int
	value  string      // yamlScalar
	quoted bool        // yamlScalar written in quotes
	items  []*yamlNode // yamlSeq
	keys   []yamlEntry // yamlMap, in file order
}

type yamlEntry struct {
	key   string
	line  int
	value *yamlNode
}

// yamlLine is a non-blank, non-comment line: its number, its indentation
// and the text after the indentation.
type yamlLine struct {
	num, indent int
	text        string
}

type yamlParser struct {
	src   string
	lines []yamlLine
	pos   int
}

func (p *yamlParser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %w: %s", p.src, line, ErrSyntax, fmt.Sprintf(format, args...))
}

// parseYAMLSubset parses a YAML document of the subset described at
// ParseSlurmTopologyYAML; an empty document gives nil.
func parseYAMLSubset(text, src string) (*yamlNode, error) {
	p := &yamlParser{src: src}
	text = strings.TrimPrefix(text, "\ufeff")
	for i, raw := range strings.Split(text, "\n") {
		num := i + 1
		raw = strings.TrimSuffix(raw, "\r")
		body := strings.TrimLeft(raw, " ")
		indent := len(raw) - len(body)
		body = strings.TrimRight(body, " \t")
		switch {
		case body == "" || body[0] == '#':
			continue
		case body[0] == '\t':
			return nil, p.errorf(num, "tab in indentation")
		case body == "---" || strings.HasPrefix(body, "--- #"):
			if len(p.lines) > 0 || indent > 0 {
				return nil, p.errorf(num, "only one YAML document is supported")
			}
			continue
		case body == "...":
			return nil, p.errorf(num, "document end marker is not supported")
		}
		for _, c := range body {
			if c < ' ' && c != '\t' || c == 0x7f {
				return nil, p.errorf(num, "control character %q", c)
			}
		}
		p.lines = append(p.lines, yamlLine{num: num, indent: indent, text: body})
	}
	if len(p.lines) == 0 {
		return nil, nil
	}
	root, err := p.parseNode(p.lines[0].indent)
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.lines) {
		return nil, p.errorf(p.lines[p.pos].num, "bad indentation")
	}
	return root, nil
}

func isYAMLSeqItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

// parseNode parses the block node whose first line is the current line,
// indented by indent.
func (p *yamlParser) parseNode(indent int) (*yamlNode, error) {
	l := p.lines[p.pos]
	switch {
	case isYAMLSeqItem(l.text):
		return p.parseSeq(indent)
	case isYAMLKeyLine(l.text):
		return p.parseMap(indent)
	}
	// A one-line value on its own line ("key:" then "  value" below it).
	n, err := p.parseValue(l.text, l.num)
	if err != nil {
		return nil, err
	}
	p.pos++
	if p.pos < len(p.lines) && p.lines[p.pos].indent >= indent {
		return nil, p.errorf(p.lines[p.pos].num, "a value spanning several lines is not supported")
	}
	return n, nil
}

func (p *yamlParser) parseSeq(indent int) (*yamlNode, error) {
	node := &yamlNode{kind: yamlSeq, line: p.lines[p.pos].num}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, p.errorf(l.num, "bad indentation")
		}
		if !isYAMLSeqItem(l.text) {
			break
		}
		rest := strings.TrimLeft(l.text[1:], " ")
		col := l.indent + len(l.text) - len(rest)
		var item *yamlNode
		var err error
		switch {
		case rest == "" || rest[0] == '#':
			p.pos++
			item = &yamlNode{kind: yamlNull, line: l.num}
			if p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
				item, err = p.parseNode(p.lines[p.pos].indent)
			}
		case isYAMLSeqItem(rest) || isYAMLKeyLine(rest):
			// The item's content starts on this line: parse it as a block
			// indented to where it starts.
			p.lines[p.pos] = yamlLine{num: l.num, indent: col, text: rest}
			item, err = p.parseNode(col)
		default:
			item, err = p.parseValue(rest, l.num)
			p.pos++
		}
		if err != nil {
			return nil, err
		}
		node.items = append(node.items, item)
	}
	return node, nil
}

func (p *yamlParser) parseMap(indent int) (*yamlNode, error) {
	node := &yamlNode{kind: yamlMap, line: p.lines[p.pos].num}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, p.errorf(l.num, "bad indentation")
		}
		if isYAMLSeqItem(l.text) {
			return nil, p.errorf(l.num, "a list item where a key was expected")
		}
		key, rest, err := p.splitKey(l)
		if err != nil {
			return nil, err
		}
		for _, e := range node.keys {
			if e.key == key {
				return nil, p.errorf(l.num, "key %q given twice (first at line %d)", key, e.line)
			}
		}
		p.pos++
		var value *yamlNode
		switch {
		case rest != "":
			value, err = p.parseValue(rest, l.num)
		case p.pos < len(p.lines) && p.lines[p.pos].indent > indent:
			value, err = p.parseNode(p.lines[p.pos].indent)
		case p.pos < len(p.lines) && p.lines[p.pos].indent == indent && isYAMLSeqItem(p.lines[p.pos].text):
			value, err = p.parseSeq(indent) // a list at its key's indentation
		default:
			value = &yamlNode{kind: yamlNull, line: l.num}
		}
		if err != nil {
			return nil, err
		}
		node.keys = append(node.keys, yamlEntry{key: key, line: l.num, value: value})
	}
	return node, nil
}

// isYAMLKeyLine reports whether text starts with "key:".
func isYAMLKeyLine(text string) bool {
	_, _, ok := splitYAMLKey(text)
	return ok
}

// splitYAMLKey splits "key: rest" into the key and the rest (without a
// trailing comment).
func splitYAMLKey(text string) (key, rest string, ok bool) {
	var after string
	if text[0] == '"' || text[0] == '\'' {
		k, n, err := parseYAMLQuoted(text)
		if err != nil {
			return "", "", false
		}
		key, after = k, strings.TrimLeft(text[n:], " ")
		if !strings.HasPrefix(after, ":") || (len(after) > 1 && after[1] != ' ') {
			return "", "", false
		}
		after = after[1:]
	} else {
		if strings.ContainsRune("[]{}&*!|>%@`,?#", rune(text[0])) {
			return "", "", false
		}
		i := 0
		for ; i < len(text); i++ {
			if text[i] == '#' && i > 0 && text[i-1] == ' ' {
				return "", "", false
			}
			if text[i] == ':' && (i+1 == len(text) || text[i+1] == ' ') {
				break
			}
		}
		if i == len(text) {
			return "", "", false
		}
		key, after = strings.TrimRight(text[:i], " "), text[i+1:]
		if key == "" || isYAMLSeqItem(key) {
			return "", "", false
		}
	}
	rest = strings.TrimLeft(after, " ")
	if strings.HasPrefix(rest, "#") {
		rest = ""
	}
	return key, rest, true
}

func (p *yamlParser) splitKey(l yamlLine) (string, string, error) {
	key, rest, ok := splitYAMLKey(l.text)
	if !ok {
		return "", "", p.errorf(l.num, "expected \"key: value\", found %q", l.text)
	}
	return key, rest, nil
}

// parseValue parses a value written on one line after "key:" or "- ".
func (p *yamlParser) parseValue(text string, line int) (*yamlNode, error) {
	switch c := text[0]; {
	case c == '"' || c == '\'':
		v, n, err := parseYAMLQuoted(text)
		if err != nil {
			return nil, p.errorf(line, "%v", err)
		}
		if after := strings.TrimLeft(text[n:], " "); after != "" && after[0] != '#' {
			return nil, p.errorf(line, "unexpected %q after a quoted string", after)
		}
		return &yamlNode{kind: yamlScalar, line: line, value: v, quoted: true}, nil
	case c == '[':
		return p.parseFlowSeq(text, line)
	case c == '{':
		return nil, p.errorf(line, "flow mappings ({...}) are not supported")
	case strings.ContainsRune("&*!|>%@`?", rune(c)):
		return nil, p.errorf(line, "%q: anchors, aliases, tags, block scalars and complex keys are not supported", text)
	case isYAMLSeqItem(text):
		return nil, p.errorf(line, "a list cannot start on its key's line")
	}
	v := text
	if k := strings.Index(v, " #"); k >= 0 {
		v = v[:k]
	}
	v = strings.TrimRight(v, " \t")
	if strings.Contains(v, ": ") || strings.HasSuffix(v, ":") {
		return nil, p.errorf(line, "%q: a plain value cannot hold \": \"; quote it", v)
	}
	switch v {
	case "~", "null", "Null", "NULL":
		return &yamlNode{kind: yamlNull, line: line}, nil
	}
	return &yamlNode{kind: yamlScalar, line: line, value: v}, nil
}

// parseFlowSeq parses "[a, 'b', 3]", a one-line list of scalars.
func (p *yamlParser) parseFlowSeq(text string, line int) (*yamlNode, error) {
	node := &yamlNode{kind: yamlSeq, line: line}
	i := 1
	skip := func() {
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
	}
	unterminated := func() error {
		return p.errorf(line, "unterminated flow list %q (it must end on its line)", text)
	}
	skip()
	if i < len(text) && text[i] == ']' {
		i++
	} else {
		for {
			skip()
			if i == len(text) {
				return nil, unterminated()
			}
			switch c := text[i]; {
			case c == '"' || c == '\'':
				v, n, err := parseYAMLQuoted(text[i:])
				if err != nil {
					return nil, p.errorf(line, "%v", err)
				}
				node.items = append(node.items, &yamlNode{kind: yamlScalar, line: line, value: v, quoted: true})
				i += n
			case c == '[' || c == '{':
				return nil, p.errorf(line, "nested flow collections are not supported: %q", text)
			case c == ',' || c == ']':
				return nil, p.errorf(line, "empty item in flow list %q", text)
			default:
				j := i
				for j < len(text) && text[j] != ',' && text[j] != ']' {
					j++
				}
				v := strings.TrimRight(text[i:j], " \t")
				if strings.Contains(v, ": ") || strings.HasSuffix(v, ":") || strings.Contains(v, " #") ||
					strings.ContainsAny(v[:1], "&*!|>%@`?#{}[") {
					return nil, p.errorf(line, "%q is not supported in a flow list", v)
				}
				node.items = append(node.items, &yamlNode{kind: yamlScalar, line: line, value: v})
				i = j
			}
			skip()
			if i == len(text) {
				return nil, unterminated()
			}
			if text[i] == ']' {
				i++
				break
			}
			if text[i] != ',' {
				return nil, p.errorf(line, "expected ',' or ']' in flow list %q", text)
			}
			i++
		}
	}
	if after := strings.TrimLeft(text[i:], " \t"); after != "" && after[0] != '#' {
		return nil, p.errorf(line, "unexpected %q after a flow list", after)
	}
	return node, nil
}

// parseYAMLQuoted parses the quoted scalar at the start of s and returns
// its value and the number of bytes it took.
func parseYAMLQuoted(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\' && q == '"':
			if i+1 == len(s) {
				return "", 0, fmt.Errorf("unterminated quoted string %s", s)
			}
			i++
			switch s[i] {
			case '"', '\\', '/':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return "", 0, fmt.Errorf("unsupported escape \\%c in %s", s[i], s)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated quoted string %s (multi-line strings are not supported)", s)
}
