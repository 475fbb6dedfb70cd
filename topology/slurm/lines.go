package slurm

import (
	"fmt"
	"strings"
)

// logicalLine is a line of a Slurm configuration file after comments,
// continuations and escapes: its text and the number of its first
// physical line.
type logicalLine struct {
	num  int
	text string
}

// logicalLines splits a file the way Slurm's parser reads it: on each
// physical line a "#" preceded by an even number of backslashes starts a
// comment; a line that then ends (before trailing blanks) in an odd number
// of backslashes continues on the next; in the joined text a backslash
// escapes the character after it. Blank lines are dropped.
func logicalLines(data string) []logicalLine {
	var out []logicalLine
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(data, "\n") {
		if cur.Len() == 0 {
			start = i + 1
		}
		text, more := continued(stripComment(strings.TrimSuffix(raw, "\r")))
		cur.WriteString(text)
		if more {
			continue
		}
		if s := unescape(cur.String()); strings.TrimSpace(s) != "" {
			out = append(out, logicalLine{num: start, text: s})
		}
		cur.Reset()
	}
	if s := unescape(cur.String()); strings.TrimSpace(s) != "" {
		out = append(out, logicalLine{num: start, text: s}) // continued past the end
	}
	return out
}

// stripComment cuts a line at its first unescaped "#".
func stripComment(line string) string {
	backslashes := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '#':
			if backslashes%2 == 0 {
				return line[:i]
			}
			backslashes = 0
		case '\\':
			backslashes++
		default:
			backslashes = 0
		}
	}
	return line
}

// continued removes a continuation backslash (an odd run at the end,
// before trailing blanks) and reports whether there was one.
func continued(line string) (string, bool) {
	trimmed := strings.TrimRight(line, " \t")
	n := len(trimmed) - len(strings.TrimRight(trimmed, "\\"))
	if n%2 == 1 {
		return trimmed[:len(trimmed)-1], true
	}
	return line, false
}

// unescape replaces every "\c" by "c".
func unescape(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// pair is one Key=Value of a line.
type pair struct {
	key, value string
}

func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.'
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// splitPairs splits a logical line into Key=Value pairs. As in Slurm, a
// key is letters, digits, '_' and '.', there may be blanks around "=", and
// a value is a double-quoted string (which may hold blanks) or a word.
// Keys given twice, empty values, "+=" and friends and unterminated quotes
// are errors.
func splitPairs(text string) ([]pair, error) {
	var out []pair
	i := 0
	for {
		for i < len(text) && isBlank(text[i]) {
			i++
		}
		if i == len(text) {
			return out, nil
		}
		p, next, err := readPair(text, i)
		if err != nil {
			return nil, err
		}
		for _, prev := range out {
			if strings.EqualFold(prev.key, p.key) {
				return nil, fmt.Errorf("key %s= given twice", p.key)
			}
		}
		out = append(out, p)
		i = next
	}
}

// readPair reads the pair starting at text[i] and returns the offset after
// it.
func readPair(text string, i int) (pair, int, error) {
	start := i
	for i < len(text) && isKeyByte(text[i]) {
		i++
	}
	key := text[start:i]
	word := text[start:]
	if k := strings.IndexFunc(word, func(r rune) bool { return r < 128 && isBlank(byte(r)) }); k >= 0 {
		word = word[:k]
	}
	for i < len(text) && isBlank(text[i]) {
		i++
	}
	if i < len(text) && strings.IndexByte("+-*/", text[i]) >= 0 && i+1 < len(text) && text[i+1] == '=' {
		return pair{}, 0, fmt.Errorf("%s%c= is not supported in topology files", key, text[i])
	}
	if key == "" || i == len(text) || text[i] != '=' {
		return pair{}, 0, fmt.Errorf("%q is not Key=Value", word)
	}
	i++
	for i < len(text) && isBlank(text[i]) {
		i++
	}
	value, next, err := readValue(text, i)
	if err != nil {
		return pair{}, 0, fmt.Errorf("%s=: %w", key, err)
	}
	if value == "" {
		return pair{}, 0, fmt.Errorf("%s= has no value", key)
	}
	return pair{key: key, value: value}, next, nil
}

// readValue reads a quoted or plain value at text[i].
func readValue(text string, i int) (string, int, error) {
	if i == len(text) {
		return "", i, nil
	}
	if text[i] == '"' {
		end := strings.IndexByte(text[i+1:], '"')
		if end < 0 {
			return "", 0, fmt.Errorf("unterminated quoted value %s", text[i:])
		}
		next := i + 1 + end + 1
		if next < len(text) && !isBlank(text[next]) {
			return "", 0, fmt.Errorf("text %q right after the quoted value", strings.Fields(text[next:])[0])
		}
		return text[i+1 : i+1+end], next, nil
	}
	start := i
	for i < len(text) && !isBlank(text[i]) {
		i++
	}
	return text[start:i], i, nil
}

// includeTarget recognises an "Include <file>" line (the keyword in any
// case, followed by blanks) and returns the file.
func includeTarget(text string) (string, bool, error) {
	t := strings.TrimLeft(text, " \t")
	if len(t) < 8 || !strings.EqualFold(t[:7], "include") || !isBlank(t[7]) {
		return "", false, nil
	}
	fields := strings.Fields(t[8:])
	switch len(fields) {
	case 0:
		return "", true, fmt.Errorf("include line without a file")
	case 1:
		return fields[0], true, nil
	}
	return "", true, fmt.Errorf("text %q after the Include file %s", strings.Join(fields[1:], " "), fields[0])
}
