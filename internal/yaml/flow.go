package yaml

import (
	"fmt"
	"strings"
)

// parseFlow parses a flow collection ("[a, b]", "{k: v}") that starts with
// text on line num and may continue on later lines indented more than
// parent. A scanner that reads the text as the parser does (brackets,
// quoted scalars, plain ones) follows the bracket depth line by line, so
// that the collection is parsed once its brackets close (or its lines
// end), not again after every line: a long one spread over many lines is
// read once.
func (p *parser) parseFlow(text string, num, parent int) (*Node, error) {
	var joined strings.Builder
	joined.WriteString(text)
	var sc flowScan
	sc.feed(text)
	for {
		if sc.depth <= 0 || p.everyLine || !p.continues(parent) {
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
		sc.feed(" ")
		sc.feed(p.lines[p.pos].body)
		p.pos++
	}
}

// continues reports whether the next line continues a flow collection
// begun under parent: it exists, is indented more, and is not blank or a
// comment.
func (p *parser) continues(parent int) bool {
	return p.pos < len(p.lines) && p.lines[p.pos].body != "" && p.lines[p.pos].indent > parent && p.lines[p.pos].body[0] != '#'
}

// flowScan follows the bracket depth of a flow collection fed in pieces,
// reading it as flowParser does: a quote opens a quoted scalar only where
// a value starts (after '[', '{', ',' or a mapping's ':'); inside a plain
// scalar it is text. depth is 0 once the outermost bracket has closed
// (what follows is for the parser); the scan then stops.
type flowScan struct {
	depth int
	mode  scanMode
	// skip: the next byte is escaped (a double-quoted '\'), or the
	// second of a single-quoted "''".
	skip   bool
	closed bool
	// colon: the last byte of a plain scalar was ':' (": " ends it, as
	// do ':' before ',', ']', '}' and the end of the text; not ':' before
	// a tab, as in the parser).
	colon bool
}

// scanMode is where flowScan is in the text.
type scanMode uint8

const (
	scanValue  scanMode = iota // before a value (spaces skipped)
	scanPlain                  // in a plain scalar
	scanDouble                 // in a double-quoted scalar
	scanSingle                 // in a single-quoted scalar
	scanAfter                  // after a value: ',', ':' or a closing bracket
)

// feed scans the next piece of the text.
func (sc *flowScan) feed(s string) {
	for i := 0; i < len(s) && !sc.closed; i++ {
		c := s[i]
		if sc.skip {
			sc.skip = false
			continue
		}
		switch sc.mode {
		case scanDouble:
			switch c {
			case '\\':
				sc.skip = true
			case '"':
				sc.mode = scanAfter
			}
			continue
		case scanSingle:
			if c == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					sc.skip = true
				} else {
					sc.mode = scanAfter
				}
			}
			continue
		case scanPlain:
			if sc.colon && c == ' ' {
				sc.mode, sc.colon = scanValue, false // "key: value"
				continue
			}
			sc.colon = c == ':'
			if c != ',' && c != '[' && c != '{' && c != ']' && c != '}' {
				continue
			}
		case scanValue:
			switch c {
			case ' ', '\t':
				continue
			case '"':
				sc.mode = scanDouble
				continue
			case '\'':
				sc.mode = scanSingle
				continue
			case ':':
				// A plain scalar starts here (": " ends it at once,
				// an empty key).
				sc.mode, sc.colon = scanPlain, true
				continue
			}
		}
		sc.bracket(c)
	}
}

// bracket scans byte c outside quoted scalars, where it may open or close
// a collection or separate values.
func (sc *flowScan) bracket(c byte) {
	sc.colon = false
	switch c {
	case '[', '{':
		sc.depth++
		sc.mode = scanValue
	case ']', '}':
		sc.depth--
		sc.mode = scanAfter
		if sc.depth <= 0 {
			sc.closed = true
		}
	case ',', ':':
		sc.mode = scanValue
	case ' ', '\t':
	default:
		sc.mode = scanPlain
	}
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
