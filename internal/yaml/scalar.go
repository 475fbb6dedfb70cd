package yaml

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseQuoted parses a quoted scalar starting at text on line num; it may
// continue on later lines.
func (p *parser) parseQuoted(text string, num, parent int) (*Node, error) {
	joined, lastLine := text, num
	for {
		v, n, closed, err := scanQuoted(joined)
		if err != nil {
			return nil, p.errorf(num, "%v", err)
		}
		if closed {
			if after := strings.TrimLeft(joined[n:], " \t"); after != "" && after[0] != '#' {
				return nil, p.errorf(lastLine, "unexpected %q after a quoted string", after)
			}
			return &Node{Kind: Scalar, Line: num, Value: v, Quoted: true}, nil
		}
		if p.pos == len(p.lines) || p.lines[p.pos].body != "" && p.lines[p.pos].indent <= parent {
			return nil, p.errorf(num, "unterminated quoted string")
		}
		l := p.lines[p.pos]
		joined += "\n" + l.body
		lastLine = l.num
		p.pos++
	}
}

// scanQuoted reads the quoted scalar at the start of s, which may span
// lines joined by '\n' (indentation already removed), and returns its
// value, the bytes it took and whether it was closed. Line breaks fold as
// in YAML: one break is a space, each blank line a newline; a
// double-quoted break escaped with '\' disappears.
func scanQuoted(s string) (string, int, bool, error) {
	q := s[0]
	var b strings.Builder
	keep := 0 // b.Len() without trailing blanks that a line break drops
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == q:
			return b.String(), i + 1, true, nil
		case c == '\n':
			j := i
			for j+1 < len(s) && s[j+1] == '\n' {
				j++
			}
			out := b.String()[:keep]
			b.Reset()
			b.WriteString(out)
			b.WriteString(foldBreaks(j - i))
			i = j
		case c == '\\' && q == '"':
			if i+1 == len(s) {
				return "", len(s), false, nil // the break after it is still to come
			}
			if s[i+1] == '\n' {
				i++ // escaped line break: nothing, no fold
				keep = b.Len()
				continue
			}
			n, err := writeEscape(&b, s[i:])
			if err != nil {
				return "", 0, false, err
			}
			i += n - 1
		default:
			b.WriteByte(c)
			if c == ' ' || c == '\t' {
				continue
			}
		}
		keep = b.Len()
	}
	return "", len(s), false, nil
}

// writeEscape writes the double-quoted escape at the start of s ("\n",
// "\x41", "\u00e9", ...) and returns its length.
func writeEscape(b *strings.Builder, s string) (int, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("unterminated escape at the end of a quoted string")
	}
	simple := map[byte]string{
		'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v", 'f': "\f",
		'r': "\r", 'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\",
		'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029",
	}
	if v, ok := simple[s[1]]; ok {
		b.WriteString(v)
		return 2, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[1]]
	if width == 0 {
		return 0, fmt.Errorf("unsupported escape \\%c", s[1])
	}
	if len(s) < 2+width {
		return 0, fmt.Errorf("short escape %q", s)
	}
	r, err := strconv.ParseUint(s[2:2+width], 16, 32)
	if err != nil || !utf8.ValidRune(rune(r)) {
		return 0, fmt.Errorf("bad escape %q", s[:2+width])
	}
	b.WriteRune(rune(r))
	return 2 + width, nil
}

// parseBlockScalar parses a literal ("|") or folded (">") block scalar
// whose header is text on line num.
func (p *parser) parseBlockScalar(text string, num, parent int) (*Node, error) {
	chomp, explicit, err := blockHeader(text)
	if err != nil {
		return nil, p.errorf(num, "%v", err)
	}
	indent := -1
	if explicit > 0 {
		indent = max(parent, 0) + explicit
	}
	var lines []string
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.body == "" {
			lines = append(lines, "")
			p.pos++
			continue
		}
		if indent < 0 {
			if l.indent <= parent {
				break
			}
			indent = l.indent
		}
		if l.indent < indent {
			break
		}
		lines = append(lines, strings.Repeat(" ", l.indent-indent)+l.body)
		p.pos++
	}
	return &Node{Kind: Scalar, Line: num, Value: blockValue(lines, text[0] == '>', chomp), Quoted: true}, nil
}

// blockHeader reads "|", ">", with an optional chomping indicator ('-' or
// '+') and indentation digit in either order, and an optional comment.
func blockHeader(text string) (chomp byte, indent int, err error) {
	h := text[1:]
	if k := strings.IndexByte(h, '#'); k >= 0 {
		if k > 0 && h[k-1] != ' ' && h[k-1] != '\t' {
			return 0, 0, fmt.Errorf("bad block scalar header %q", text)
		}
		h = h[:k]
	}
	h = strings.TrimRight(h, " \t")
	for _, c := range []byte(h) {
		switch {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
		case c >= '1' && c <= '9' && indent == 0:
			indent = int(c - '0')
		default:
			return 0, 0, fmt.Errorf("bad block scalar header %q", text)
		}
	}
	return chomp, indent, nil
}

// blockValue joins the lines of a block scalar and applies chomping.
func blockValue(lines []string, folded bool, chomp byte) string {
	end := len(lines)
	for end > 0 && lines[end-1] == "" {
		end--
	}
	trailing := len(lines) - end
	var b strings.Builder
	for i, l := range lines[:end] {
		if i > 0 {
			prev := lines[i-1]
			plainPrev := prev != "" && prev[0] != ' '
			switch {
			case folded && plainPrev && l != "" && l[0] != ' ':
				b.WriteByte(' ')
			case folded && plainPrev && l == "":
				// The break before blank lines is folded away.
			default:
				b.WriteByte('\n')
			}
		}
		b.WriteString(l)
	}
	if end == 0 {
		return ""
	}
	switch chomp {
	case '-':
	case '+':
		b.WriteString(strings.Repeat("\n", trailing+1))
	default:
		b.WriteByte('\n')
	}
	return b.String()
}
