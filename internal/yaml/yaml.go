// Package yaml parses the subset of YAML that topology files use: Slurm's
// topology.yaml and the output of `kubectl get nodes -o yaml`. It has no
// dependency outside the standard library and keeps the line of every
// node, so that loaders can name the line of each defect.
//
// The subset: one document (an optional leading "---"); block mappings
// and sequences, a sequence may sit at its key's indentation and a
// compact "- key: value" item opens a mapping; plain scalars, also folded
// over several more-indented lines; single- and double-quoted scalars,
// also over several lines, with YAML's escapes; literal ("|") and folded
// (">") block scalars with chomping and indentation indicators; flow
// sequences and mappings ("[a, b]", "{k: v}", nested, on one line or
// continued on more-indented lines); comments. Anchors, aliases, tags,
// complex keys ("?"), directives, several documents, tabs in indentation
// and duplicate keys are errors naming the line. Scalars are not typed:
// a loader reads "8", "true" or "null" as it needs, with Quoted telling
// "8" from 8 (a plain "~", "null", "Null", "NULL" or empty value is Null).
//
// Parse is safe for concurrent use.
package yaml

import (
	"fmt"
	"strings"
)

// Kind is the kind of a Node.
type Kind int

// The kinds of nodes.
const (
	Null Kind = iota
	Scalar
	Seq
	Map
)

// String returns "null", "a scalar", "a list" or "a mapping", for messages.
func (k Kind) String() string {
	switch k {
	case Scalar:
		return "a scalar"
	case Seq:
		return "a list"
	case Map:
		return "a mapping"
	}
	return "null"
}

// Node is a parsed YAML value.
type Node struct {
	Kind Kind
	// Line is the 1-based line where the value starts.
	Line int
	// Value is a scalar's text (escapes resolved, lines folded).
	Value string
	// Quoted reports a scalar written in quotes (or, from JSON, a string).
	Quoted bool
	// Items are a sequence's items.
	Items []*Node
	// Keys are a mapping's entries in input order.
	Keys []Entry
}

// Entry is one key and value of a mapping.
type Entry struct {
	Key   string
	Line  int
	Value *Node
}

// Get returns the value of key in a mapping, or nil.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != Map {
		return nil
	}
	for _, e := range n.Keys {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}

// Error is a syntax error at a line.
type Error struct {
	Line int
	Msg  string
}

// Error returns "line N: message".
func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// MaxDepth bounds the nesting of collections.
const MaxDepth = 100

// line is one physical line of the input.
type line struct {
	num    int    // 1-based
	indent int    // leading spaces
	body   string // text after the indentation, trailing blanks removed
}

// blank reports a line with nothing but white space or a comment.
func (l *line) blank() bool { return l.body == "" || l.body[0] == '#' }

type parser struct {
	lines []line
	pos   int
	depth int
	// everyLine makes parseFlow try the parse after every line of a flow
	// collection, as it did before it followed the brackets: the tests'
	// reference.
	everyLine bool
}

func (p *parser) errorf(num int, format string, args ...any) error {
	return &Error{Line: num, Msg: fmt.Sprintf(format, args...)}
}

// Parse parses a document; an empty one (only comments and blank lines)
// gives nil and no error.
func Parse(text string) (*Node, error) {
	return parse(text, false)
}

// parse is Parse; everyLine is parser.everyLine.
func parse(text string, everyLine bool) (*Node, error) {
	p := &parser{everyLine: everyLine}
	if err := p.split(text); err != nil {
		return nil, err
	}
	p.skipBlank()
	if p.pos == len(p.lines) {
		return nil, nil
	}
	root, err := p.parseNode(p.lines[p.pos].indent, -1)
	if err != nil {
		return nil, err
	}
	p.skipBlank()
	if p.pos < len(p.lines) {
		return nil, p.errorf(p.lines[p.pos].num, "bad indentation or a second top-level value")
	}
	return root, nil
}

// split cuts the text into lines, checking characters, tabs in
// indentation and document markers.
func (p *parser) split(text string) error {
	text = strings.TrimPrefix(text, "\ufeff")
	started := false
	for i, raw := range strings.Split(text, "\n") {
		num := i + 1
		raw = strings.TrimSuffix(raw, "\r")
		body := strings.TrimLeft(raw, " ")
		indent := len(raw) - len(body)
		body = strings.TrimRight(body, " \t")
		for _, c := range body {
			if c < ' ' && c != '\t' || c == 0x7f || c == 0xfffd {
				return p.errorf(num, "control character or invalid UTF-8 %q", c)
			}
		}
		switch {
		case body != "" && body[0] == '\t':
			if rest := strings.TrimLeft(body, " \t"); rest != "" && rest[0] != '#' {
				return p.errorf(num, "tab in indentation")
			}
			body = ""
		case body == "---" || strings.HasPrefix(body, "--- "):
			if started || indent > 0 || strings.TrimSpace(body[3:]) != "" && body[4] != '#' {
				return p.errorf(num, "only one YAML document, with nothing after its \"---\", is supported")
			}
			started = true
			body = ""
		case body == "..." || body != "" && body[0] == '%':
			return p.errorf(num, "document end markers and directives are not supported")
		}
		if body != "" && body[0] != '#' {
			started = true
		}
		p.lines = append(p.lines, line{num: num, indent: indent, body: body})
	}
	return nil
}

// skipBlank moves past blank and comment lines.
func (p *parser) skipBlank() {
	for p.pos < len(p.lines) && p.lines[p.pos].blank() {
		p.pos++
	}
}

// next returns the next non-blank line without consuming it.
func (p *parser) next() (*line, bool) {
	p.skipBlank()
	if p.pos == len(p.lines) {
		return nil, false
	}
	return &p.lines[p.pos], true
}

func isSeqItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

// parseNode parses the block node whose first line is the current one,
// indented by indent; parent is the indentation of the key or dash that
// owns it (-1 at the top).
func (p *parser) parseNode(indent, parent int) (*Node, error) {
	if p.depth++; p.depth > MaxDepth {
		return nil, p.errorf(p.lines[p.pos].num, "nesting deeper than %d", MaxDepth)
	}
	defer func() { p.depth-- }()
	l := p.lines[p.pos]
	if l.body[0] == '\t' {
		return nil, p.errorf(l.num, "tab in indentation")
	}
	switch {
	case isSeqItem(l.body):
		return p.parseSeq(indent)
	case isKeyLine(l.body):
		return p.parseMap(indent)
	}
	p.pos++
	return p.parseValue(l.body, l.num, parent)
}

func (p *parser) parseSeq(indent int) (*Node, error) {
	node := &Node{Kind: Seq, Line: p.lines[p.pos].num}
	for {
		l, ok := p.next()
		if !ok || l.indent < indent {
			return node, nil
		}
		if l.indent > indent {
			return nil, p.errorf(l.num, "bad indentation")
		}
		if !isSeqItem(l.body) {
			return node, nil
		}
		item, err := p.parseItem(l, indent)
		if err != nil {
			return nil, err
		}
		node.Items = append(node.Items, item)
	}
}

// parseItem parses the sequence item starting on line l.
func (p *parser) parseItem(l *line, indent int) (*Node, error) {
	rest := strings.TrimLeft(l.body[1:], " ")
	col := l.indent + len(l.body) - len(rest)
	num := l.num
	switch {
	case rest == "" || rest[0] == '#':
		p.pos++
		if n, ok := p.next(); ok && n.indent > indent {
			return p.parseNode(n.indent, indent)
		}
		return &Node{Kind: Null, Line: num}, nil
	case isSeqItem(rest) || isKeyLine(rest):
		// The item's content starts on this line: parse it as a block
		// indented to where it starts.
		*l = line{num: num, indent: col, body: rest}
		return p.parseNode(col, indent)
	}
	p.pos++
	return p.parseValue(rest, num, indent)
}

func (p *parser) parseMap(indent int) (*Node, error) {
	node := &Node{Kind: Map, Line: p.lines[p.pos].num}
	for {
		l, ok := p.next()
		if !ok || l.indent < indent {
			return node, nil
		}
		if l.indent > indent {
			return nil, p.errorf(l.num, "bad indentation")
		}
		if isSeqItem(l.body) {
			return nil, p.errorf(l.num, "a list item where a key was expected")
		}
		key, rest, ok := splitKey(l.body)
		if !ok {
			return nil, p.errorf(l.num, "expected \"key: value\", found %q", l.body)
		}
		for _, e := range node.Keys {
			if e.Key == key {
				return nil, p.errorf(l.num, "key %q given twice (first at line %d)", key, e.Line)
			}
		}
		num := l.num
		p.pos++
		value, err := p.parseEntryValue(rest, num, indent)
		if err != nil {
			return nil, err
		}
		node.Keys = append(node.Keys, Entry{Key: key, Line: num, Value: value})
	}
}

// parseEntryValue parses the value of a key at indentation indent, whose
// text after the colon is rest.
func (p *parser) parseEntryValue(rest string, num, indent int) (*Node, error) {
	if rest != "" {
		return p.parseValue(rest, num, indent)
	}
	n, ok := p.next()
	switch {
	case ok && n.indent > indent:
		return p.parseNode(n.indent, indent)
	case ok && n.indent == indent && isSeqItem(n.body):
		return p.parseSeq(indent) // a list at its key's indentation
	}
	return &Node{Kind: Null, Line: num}, nil
}

// isKeyLine reports whether text starts with "key:".
func isKeyLine(text string) bool {
	_, _, ok := splitKey(text)
	return ok
}

// splitKey splits "key: rest" into the key and the rest (empty when only a
// comment follows).
func splitKey(text string) (key, rest string, ok bool) {
	var after string
	if text[0] == '"' || text[0] == '\'' {
		k, n, closed, err := scanQuoted(text)
		if err != nil || !closed {
			return "", "", false
		}
		key, after = k, strings.TrimLeft(text[n:], " ")
		if !strings.HasPrefix(after, ":") || (len(after) > 1 && after[1] != ' ') {
			return "", "", false
		}
		after = after[1:]
	} else {
		if strings.IndexByte("[]{}&*!|>%@`,?#", text[0]) >= 0 {
			return "", "", false
		}
		i := keyEnd(text)
		if i < 0 {
			return "", "", false
		}
		key, after = strings.TrimRight(text[:i], " \t"), text[i+1:]
		if key == "" || isSeqItem(key) {
			return "", "", false
		}
	}
	rest = strings.TrimLeft(after, " \t")
	if strings.HasPrefix(rest, "#") {
		rest = ""
	}
	return key, rest, true
}

// keyEnd returns the index of the colon ending a plain key, or -1.
func keyEnd(text string) int {
	for i := 0; i < len(text); i++ {
		switch {
		case text[i] == '#' && i > 0 && (text[i-1] == ' ' || text[i-1] == '\t'):
			return -1
		case text[i] == ':' && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\t'):
			return i
		}
	}
	return -1
}

// parseValue parses a value that starts on line num with text, owned by a
// key or dash at indentation parent; it may continue on later lines
// indented more than parent.
func (p *parser) parseValue(text string, num, parent int) (*Node, error) {
	switch c := text[0]; {
	case c == '"' || c == '\'':
		return p.parseQuoted(text, num, parent)
	case c == '[' || c == '{':
		return p.parseFlow(text, num, parent)
	case c == '|' || c == '>':
		return p.parseBlockScalar(text, num, parent)
	case strings.IndexByte("&*!%@`?", c) >= 0:
		return nil, p.errorf(num, "%q: anchors, aliases, tags and complex keys are not supported", text)
	case isSeqItem(text):
		return nil, p.errorf(num, "a list cannot start on its key's line")
	}
	return p.parsePlain(text, num, parent)
}

// parsePlain parses a plain scalar, folding continuation lines.
func (p *parser) parsePlain(text string, num, parent int) (*Node, error) {
	v, err := plainText(text)
	if err != nil {
		return nil, p.errorf(num, "%v", err)
	}
	var b strings.Builder
	b.WriteString(v)
	breaks, continued := 0, false
	for p.pos < len(p.lines) {
		l := &p.lines[p.pos]
		if l.body == "" {
			breaks++
			p.pos++
			continue
		}
		if l.indent <= parent || l.body[0] == '#' {
			break
		}
		more, err := plainText(l.body)
		if err != nil {
			return nil, p.errorf(l.num, "%v", err)
		}
		b.WriteString(foldBreaks(breaks))
		b.WriteString(more)
		breaks, continued = 0, true
		p.pos++
	}
	switch v = b.String(); {
	case continued:
	case v == "~", v == "null", v == "Null", v == "NULL":
		return &Node{Kind: Null, Line: num}, nil
	}
	return &Node{Kind: Scalar, Line: num, Value: v}, nil
}

// foldBreaks returns what a run of line breaks folds to: one space for a
// single break, else a newline per blank line.
func foldBreaks(breaks int) string {
	if breaks == 0 {
		return " "
	}
	return strings.Repeat("\n", breaks)
}

// plainText returns one line of a plain scalar without its comment,
// refusing text that would make it a mapping.
func plainText(text string) (string, error) {
	v := text
	if k := strings.Index(v, " #"); k >= 0 {
		v = v[:k]
	}
	if k := strings.Index(v, "\t#"); k >= 0 {
		v = v[:k]
	}
	v = strings.TrimRight(v, " \t")
	if strings.Contains(v, ": ") || strings.Contains(v, ":\t") || strings.HasSuffix(v, ":") {
		return "", fmt.Errorf("%q: a plain value cannot hold \": \"; quote it (or fix the indentation)", v)
	}
	return v, nil
}
