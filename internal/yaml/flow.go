package yaml

import (
	"fmt"
	"strings"
)

// parseFlow parses a flow collection ("[a, b]", "{k: v}") that starts with
// text on line num and may continue on later lines indented more than
// parent.
func (p *parser) parseFlow(text string, num, parent int) (*Node, error) {
	var joined strings.Builder
	joined.WriteString(text)
	// Without a quote character so far, the brackets are exact (a plain
	// scalar cannot hold one): the collection is parsed only once they
	// close, so that a long one spread over many lines is read once, not
	// again after every line. With a quote, after every line, as the
	// brackets may be inside quoted text.
	depth, quoted := flowDepth(text, 0)
	for {
		if quoted || depth <= 0 || !p.continues(parent) {
			f := flowParser{s: joined.String(), line: num, depth: p.depth}
			node, err := f.value()
			if err == nil {
				f.space()
				if f.i < len(f.s) && f.s[f.i] != '#' {
					return nil, p.errorf(num, "unexpected %q after a flow collection", f.s[f.i:])
				}
				return node, nil
			}
			if err != errFlowEnd {
				return nil, p.errorf(num, "%v", err)
			}
			if !p.continues(parent) {
				return nil, p.errorf(num, "unterminated flow collection %q", text)
			}
		}
		joined.WriteByte(' ')
		joined.WriteString(p.lines[p.pos].body)
		d, q := flowDepth(p.lines[p.pos].body, depth)
		depth, quoted = d, quoted || q
		p.pos++
	}
}

// continues reports whether the next line continues a flow collection
// begun under parent: it exists, is indented more, and is not blank or a
// comment.
func (p *parser) continues(parent int) bool {
	return p.pos < len(p.lines) && p.lines[p.pos].body != "" && p.lines[p.pos].indent > parent && p.lines[p.pos].body[0] != '#'
}

// flowDepth returns the bracket depth after text, from depth, and whether
// text holds a quote character (then the depth may count brackets inside
// quoted text).
func flowDepth(text string, depth int) (int, bool) {
	quoted := false
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return 0, quoted // closed: what follows is for the parser
			}
		case '"', '\'':
			quoted = true
		}
	}
	return depth, quoted
}

// errFlowEnd reports that a flow collection runs past the text so far.
var errFlowEnd = fmt.Errorf("flow collection not closed")

// flowParser reads flow collections from one string.
type flowParser struct {
	s     string
	i     int
	line  int
	depth int
}

func (f *flowParser) space() {
	for f.i < len(f.s) && (f.s[f.i] == ' ' || f.s[f.i] == '\t') {
		f.i++
	}
}

// value reads a scalar or collection at f.i.
func (f *flowParser) value() (*Node, error) {
	f.space()
	if f.i == len(f.s) {
		return nil, errFlowEnd
	}
	switch c := f.s[f.i]; {
	case c == '[' || c == '{':
		if f.depth++; f.depth > MaxDepth {
			return nil, fmt.Errorf("nesting deeper than %d", MaxDepth)
		}
		defer func() { f.depth-- }()
		if c == '[' {
			return f.seq()
		}
		return f.mapping()
	case c == '"' || c == '\'':
		v, n, closed, err := scanQuoted(f.s[f.i:])
		if err != nil {
			return nil, err
		}
		if !closed {
			return nil, errFlowEnd
		}
		f.i += n
		return &Node{Kind: Scalar, Line: f.line, Value: v, Quoted: true}, nil
	case strings.IndexByte("&*!|>%@`?#", c) >= 0:
		return nil, fmt.Errorf("%q is not supported in a flow collection", f.s[f.i:])
	case c == ',' || c == ']' || c == '}':
		return nil, fmt.Errorf("empty item in flow collection %q", f.s)
	}
	return f.plain()
}

// plain reads a plain scalar ending at ',', ']', '}' or ": ".
func (f *flowParser) plain() (*Node, error) {
	start := f.i
	for f.i < len(f.s) {
		c := f.s[f.i]
		if c == ',' || c == ']' || c == '}' || c == '[' || c == '{' {
			break
		}
		if c == ':' && (f.i+1 == len(f.s) || strings.IndexByte(" ,]}", f.s[f.i+1]) >= 0) {
			break
		}
		if c == '#' && f.i > start && f.s[f.i-1] == ' ' {
			return nil, fmt.Errorf("a comment inside a flow collection is not supported")
		}
		f.i++
	}
	v := strings.TrimRight(f.s[start:f.i], " \t")
	if f.i < len(f.s) && (f.s[f.i] == '[' || f.s[f.i] == '{') {
		return nil, fmt.Errorf("unexpected %q in flow collection %q", f.s[f.i], f.s)
	}
	switch v {
	case "~", "null", "Null", "NULL":
		return &Node{Kind: Null, Line: f.line}, nil
	}
	return &Node{Kind: Scalar, Line: f.line, Value: v}, nil
}

// seq reads "[...]".
func (f *flowParser) seq() (*Node, error) {
	node := &Node{Kind: Seq, Line: f.line}
	f.i++
	return node, f.items(']', func() error {
		v, err := f.value()
		if err == nil {
			node.Items = append(node.Items, v)
		}
		return err
	})
}

// mapping reads "{...}".
func (f *flowParser) mapping() (*Node, error) {
	node := &Node{Kind: Map, Line: f.line}
	f.i++
	return node, f.items('}', func() error {
		k, err := f.value()
		if err != nil {
			return err
		}
		if k.Kind != Scalar && k.Kind != Null {
			return fmt.Errorf("a flow mapping key must be a scalar")
		}
		f.space()
		if f.i == len(f.s) {
			return errFlowEnd
		}
		if f.s[f.i] != ':' {
			return fmt.Errorf("expected ':' after key %q in flow mapping %q", k.Value, f.s)
		}
		f.i++
		f.space()
		for _, e := range node.Keys {
			if e.Key == k.Value {
				return fmt.Errorf("key %q given twice", k.Value)
			}
		}
		if f.i < len(f.s) && (f.s[f.i] == ',' || f.s[f.i] == '}') {
			node.Keys = append(node.Keys, Entry{Key: k.Value, Line: f.line, Value: &Node{Kind: Null, Line: f.line}})
			return nil
		}
		v, err := f.value()
		if err == nil {
			node.Keys = append(node.Keys, Entry{Key: k.Value, Line: f.line, Value: v})
		}
		return err
	})
}

// items reads comma-separated items up to the closing byte.
func (f *flowParser) items(closing byte, item func() error) error {
	f.space()
	if f.i < len(f.s) && f.s[f.i] == closing {
		f.i++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		f.space()
		if f.i == len(f.s) {
			return errFlowEnd
		}
		switch f.s[f.i] {
		case closing:
			f.i++
			return nil
		case ',':
			f.i++
		default:
			return fmt.Errorf("expected ',' or %q in flow collection %q", closing, f.s)
		}
	}
}
