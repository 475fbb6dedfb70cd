package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/phalanx-sched/phalanx/internal/yaml"
)

// maxJSONDepth bounds the nesting of a JSON input.
const maxJSONDepth = 200

// decodeError is an input that is neither JSON nor YAML of the subset read
// here, at a line (0 when unknown).
type decodeError struct {
	line int
	msg  string
}

func (e *decodeError) Error() string { return e.msg }

// decode reads JSON (when the input starts with '{' or '[') or YAML into a
// node tree with line numbers. A leading UTF-8 byte order mark is dropped
// first, for both: encoding/json refuses it. fromJSON tells whether
// scalars carry JSON types (a quoted scalar is a string, an unquoted one
// a number, boolean or null).
func decode(data []byte) (root *yaml.Node, fromJSON bool, err error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, false, &decodeError{msg: "empty input, want the output of kubectl get nodes -o json or -o yaml"}
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		root, err := decodeJSON(data)
		return root, true, err
	}
	root, err = yaml.Parse(string(data))
	if err != nil {
		var ye *yaml.Error
		if errors.As(err, &ye) {
			return nil, false, &decodeError{line: ye.Line, msg: "not JSON, and not YAML of the subset read here: " + ye.Msg}
		}
		return nil, false, &decodeError{msg: err.Error()}
	}
	return root, false, nil
}

// jsonReader turns a JSON document into a node tree, tracking lines.
type jsonReader struct {
	dec      *json.Decoder
	newlines []int // offsets of '\n'
	data     []byte
}

func decodeJSON(data []byte) (*yaml.Node, error) {
	r := &jsonReader{dec: json.NewDecoder(bytes.NewReader(data)), data: data}
	r.dec.UseNumber()
	for i, c := range data {
		if c == '\n' {
			r.newlines = append(r.newlines, i)
		}
	}
	root, err := r.value(0)
	if err == nil {
		if _, err2 := r.dec.Token(); err2 != io.EOF {
			err = &decodeError{line: r.line(r.dec.InputOffset()), msg: "JSON: data after the top-level value"}
		}
	}
	if err != nil {
		return nil, r.explain(err)
	}
	return root, nil
}

// line returns the 1-based line of the byte before offset off (the last
// byte of the token just read).
func (r *jsonReader) line(off int64) int {
	p := int(off) - 1
	return 1 + sort.SearchInts(r.newlines, p)
}

// explain turns a decoder error into a decodeError with line and column.
func (r *jsonReader) explain(err error) error {
	var de *decodeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &de):
		return de
	case errors.As(err, &se):
		// The decoder's offset counts the bytes before the offending one.
		return &decodeError{line: r.line(se.Offset + 1), msg: fmt.Sprintf("JSON: %s: %v", r.where(se.Offset+1), se)}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		end := int64(len(bytes.TrimRight(r.data, " \t\r\n")))
		return &decodeError{line: r.line(end), msg: fmt.Sprintf("JSON: unexpected end of input after %s", r.where(end))}
	}
	return &decodeError{msg: "JSON: " + err.Error()}
}

// where renders the position of the byte before off: line, column (both
// 1-based) and byte offset.
func (r *jsonReader) where(off int64) string {
	p := max(0, min(int(off)-1, len(r.data)))
	line := 1 + bytes.Count(r.data[:p], []byte{'\n'})
	col := p - bytes.LastIndexByte(r.data[:p], '\n')
	return fmt.Sprintf("line %d, column %d (byte %d)", line, col, p)
}

// value reads one value.
func (r *jsonReader) value(depth int) (*yaml.Node, error) {
	tok, err := r.dec.Token()
	if err != nil {
		return nil, err
	}
	line := r.line(r.dec.InputOffset())
	switch v := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth {
			return nil, &decodeError{line: line, msg: fmt.Sprintf("JSON nested deeper than %d", maxJSONDepth)}
		}
		if v == '[' {
			return r.array(line, depth)
		}
		return r.object(line, depth)
	case string:
		return &yaml.Node{Kind: yaml.Scalar, Line: line, Value: v, Quoted: true}, nil
	case json.Number:
		return &yaml.Node{Kind: yaml.Scalar, Line: line, Value: v.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.Scalar, Line: line, Value: fmt.Sprint(v)}, nil
	}
	return &yaml.Node{Kind: yaml.Null, Line: line}, nil
}

func (r *jsonReader) array(line, depth int) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.Seq, Line: line}
	for r.dec.More() {
		item, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.Items = append(n.Items, item)
	}
	_, err := r.dec.Token() // ']'
	return n, err
}

func (r *jsonReader) object(line, depth int) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.Map, Line: line}
	for r.dec.More() {
		tok, err := r.dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		keyLine := r.line(r.dec.InputOffset())
		v, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		e := yaml.Entry{Key: key, Line: keyLine, Value: v}
		if i := indexKey(n, key); i >= 0 {
			n.Keys[i] = e // the last wins, as with encoding/json
		} else {
			n.Keys = append(n.Keys, e)
		}
	}
	_, err := r.dec.Token() // '}'
	return n, err
}

func indexKey(n *yaml.Node, key string) int {
	for i, e := range n.Keys {
		if e.Key == key {
			return i
		}
	}
	return -1
}
