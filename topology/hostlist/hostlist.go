package hostlist

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSyntax marks a malformed hostlist expression.
var ErrSyntax = errors.New("hostlist: syntax error")

// MaxNames is the largest number of names one hostlist expression
// may expand to (about a million). Expand computes the size of an
// expression before it allocates anything and rejects larger ones with an
// ErrSyntax error, so a typo such as "n[0-99999999]" cannot exhaust memory.
const MaxNames = 1 << 20

// MaxBytes bounds the text one expression may expand to, counted as each
// element's names times its longest name: a short expression of long
// names ("<256 letters>[0-1048575]") cannot allocate gigabytes either.
const MaxBytes = 64 << 20

// maxHostlistDigits bounds the digits of one number in a bracket, so that
// every bound fits a uint64 with room for arithmetic.
const maxHostlistDigits = 18

// hostRange is one "lo" or "lo-hi" item of a bracket group. Every number of
// the range is printed zero-padded to width, the width of lo as written.
type hostRange struct {
	lo, hi uint64
	width  int
}

// hostPart is a piece of a hostlist element: literal text, or a bracket
// group when ranges is not nil.
type hostPart struct {
	literal string
	ranges  []hostRange
}

// Expand expands a Slurm hostlist expression into host names, as
// `scontrol show hostnames` does.
//
// The expression is a comma-separated list of elements; commas inside
// brackets belong to the bracket. An element is literal text with any
// number of bracket groups, each a comma-separated list of numbers and
// ascending ranges: "node[001-016,020]", "gpu-[1-4]", "[1-3]",
// "n[1-2]-ib". Several groups in one element form a cartesian product,
// leftmost group varying slowest: "rack[0-1]_blade[0-2]" gives rack0_blade0,
// rack0_blade1, rack0_blade2, rack1_blade0, and so on. Names come out in
// the order written, duplicates kept.
//
// Zero padding comes from the width of the first bound of each range as
// written: "n[01-3]" gives n01 n02 n03, "n[098-100]" gives n098 n099 n100.
// The width of the second bound is ignored, so "n[1-03]" gives n1 n2 n3.
//
// The empty expression expands to no names. Everything else that is not
// the above is an error wrapping ErrSyntax that quotes the expression and
// the offending token with its byte offset: a descending range "n[5-3]",
// empty brackets "n[]", a non-numeric range "n[a-c]", an unterminated
// bracket "n[1-" (which Slurm silently misreads), a stray "]", nested
// brackets, an empty element ("a,,b", a leading or trailing comma), a
// number of more than 18 digits, white space or control characters, and
// an expression of more than MaxNames names or MaxBytes of them.
func Expand(expr string) ([]string, error) {
	elems, total, err := parseHostlist(expr)
	if err != nil || elems == nil {
		return nil, err
	}
	out := make([]string, 0, total)
	for _, parts := range elems {
		out = expandHostlistElement(out, parts, hostlistElementSize(parts))
	}
	return out, nil
}

// Count returns the number of names expr expands to, without expanding it,
// or the error Expand would return.
func Count(expr string) (int, error) {
	_, total, err := parseHostlist(expr)
	return total, err
}

// parseHostlist parses every element of expr and counts their names,
// refusing more than MaxNames before anything is expanded.
func parseHostlist(expr string) ([][]hostPart, int, error) {
	if expr == "" {
		return nil, 0, nil
	}
	var elems [][]hostPart
	total, bytes := 0, 0
	for start := 0; ; {
		parts, end, err := parseHostlistElement(expr, start)
		if err != nil {
			return nil, 0, err
		}
		size := hostlistElementSize(parts)
		total += size
		if total > MaxNames {
			return nil, 0, fmt.Errorf("%w: %q expands to more than %d names", ErrSyntax, expr, MaxNames)
		}
		bytes += size * hostlistNameLength(parts) // at most MaxNames times the expression's length: no overflow
		if bytes > MaxBytes {
			return nil, 0, fmt.Errorf("%w: %q expands to more than %d bytes of names", ErrSyntax, expr, MaxBytes)
		}
		elems = append(elems, parts)
		if end == len(expr) {
			break
		}
		start = end + 1 // skip the comma
	}
	return elems, total, nil
}

func hostlistError(expr string, off int, format string, args ...any) error {
	return fmt.Errorf("%w: %q at offset %d: %s", ErrSyntax, expr, off, fmt.Sprintf(format, args...))
}

// parseHostlistElement parses the element starting at start and returns
// its parts and the offset of the comma that ends it (or len(expr)).
func parseHostlistElement(expr string, start int) ([]hostPart, int, error) {
	var parts []hostPart
	lit := start
	i := start
	for i < len(expr) && expr[i] != ',' {
		switch c := expr[i]; {
		case c == '[':
			if i > lit {
				parts = append(parts, hostPart{literal: expr[lit:i]})
			}
			ranges, end, err := parseHostlistGroup(expr, i)
			if err != nil {
				return nil, 0, err
			}
			parts = append(parts, hostPart{ranges: ranges})
			i, lit = end, end
		case c == ']':
			return nil, 0, hostlistError(expr, i, "stray %q", "]")
		case c <= ' ' || c == 0x7f:
			return nil, 0, hostlistError(expr, i, "white space or control character %q", string(c))
		default:
			i++
		}
	}
	if i > lit {
		parts = append(parts, hostPart{literal: expr[lit:i]})
	}
	if len(parts) == 0 {
		return nil, 0, hostlistError(expr, start, "empty element")
	}
	return parts, i, nil
}

// parseHostlistGroup parses the bracket group opening at expr[open] and
// returns its ranges and the offset just past its closing bracket.
func parseHostlistGroup(expr string, open int) ([]hostRange, int, error) {
	var ranges []hostRange
	i := open + 1
	for {
		tok := i
		for i < len(expr) && expr[i] != ',' && expr[i] != ']' && expr[i] != '[' {
			i++
		}
		if i == len(expr) {
			return nil, 0, hostlistError(expr, open, "unterminated %q", expr[open:])
		}
		if expr[i] == '[' {
			return nil, 0, hostlistError(expr, i, "nested %q", "[")
		}
		if i == tok {
			if expr[i] == ']' && len(ranges) == 0 {
				return nil, 0, hostlistError(expr, open, "empty brackets %q", "[]")
			}
			return nil, 0, hostlistError(expr, tok, "empty range in %q", hostBracketText(expr, open))
		}
		r, err := parseHostRange(expr, tok, expr[tok:i])
		if err != nil {
			return nil, 0, err
		}
		ranges = append(ranges, r)
		if expr[i] == ']' {
			return ranges, i + 1, nil
		}
		i++ // skip the comma
	}
}

// hostBracketText returns the bracket group opening at open, for messages.
func hostBracketText(expr string, open int) string {
	if end := strings.IndexByte(expr[open:], ']'); end >= 0 {
		return expr[open : open+end+1]
	}
	return expr[open:]
}

func parseHostRange(expr string, off int, tok string) (hostRange, error) {
	loText, hiText, isRange := strings.Cut(tok, "-")
	if !isRange {
		hiText = loText
	}
	lo, err := parseHostNumber(expr, off, tok, loText)
	if err != nil {
		return hostRange{}, err
	}
	hi, err := parseHostNumber(expr, off, tok, hiText)
	if err != nil {
		return hostRange{}, err
	}
	if hi < lo {
		return hostRange{}, hostlistError(expr, off, "descending range %q", tok)
	}
	return hostRange{lo: lo, hi: hi, width: len(loText)}, nil
}

func parseHostNumber(expr string, off int, tok, num string) (uint64, error) {
	if num == "" || strings.Trim(num, "0123456789") != "" {
		return 0, hostlistError(expr, off, "non-numeric range %q", tok)
	}
	if len(num) > maxHostlistDigits {
		return 0, hostlistError(expr, off, "number %q has more than %d digits", num, maxHostlistDigits)
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil { // cannot happen after the checks above
		return 0, hostlistError(expr, off, "bad number %q", num)
	}
	return v, nil
}

// hostlistElementSize returns the number of names of an element, or
// MaxNames+1 if it is larger than that.
// hostlistNameLength returns the length of the longest name the element
// of parts expands to: its literal text and, for each bracket group, the
// widest number it writes.
func hostlistNameLength(parts []hostPart) int {
	n := 0
	for _, p := range parts {
		if p.ranges == nil {
			n += len(p.literal)
			continue
		}
		widest := 0
		for _, r := range p.ranges {
			widest = max(widest, r.width, len(strconv.FormatUint(r.hi, 10)))
		}
		n += widest
	}
	return n
}

func hostlistElementSize(parts []hostPart) int {
	const over = MaxNames + 1
	size := 1
	for _, p := range parts {
		if p.ranges == nil {
			continue
		}
		n := 0
		for _, r := range p.ranges {
			if r.hi-r.lo >= over {
				return over
			}
			n += int(r.hi-r.lo) + 1
			if n >= over {
				return over
			}
		}
		size *= n // both factors are at most over, so this cannot overflow
		if size >= over {
			return over
		}
	}
	return size
}

// expandHostlistElement appends the size names of one element to out.
// The names are written one after the other into one buffer and cut out of
// a single string, so an element costs a few allocations however many
// names it has.
func expandHostlistElement(out []string, parts []hostPart, size int) []string {
	var cur, all []byte
	starts := make([]int, 0, size)
	var walk func(k int)
	walk = func(k int) {
		if k == len(parts) {
			starts = append(starts, len(all))
			all = append(all, cur...)
			return
		}
		mark := len(cur)
		if p := parts[k]; p.ranges == nil {
			cur = append(cur, p.literal...)
			walk(k + 1)
		} else {
			for _, r := range p.ranges {
				for v := r.lo; ; v++ {
					cur = appendHostNumber(cur[:mark], v, r.width)
					walk(k + 1)
					if v == r.hi {
						break
					}
				}
			}
		}
		cur = cur[:mark]
	}
	walk(0)
	names := string(all)
	for i, start := range starts {
		end := len(names)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		out = append(out, names[start:end])
	}
	return out
}

// appendHostNumber appends v in decimal, zero-padded to width digits.
func appendHostNumber(b []byte, v uint64, width int) []byte {
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], v, 10)
	for k := len(d); k < width; k++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// padHostNumber formats v in decimal, zero-padded to width digits.
func padHostNumber(v uint64, width int) string {
	s := strconv.FormatUint(v, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

// Compress writes names as a hostlist expression, as
// `scontrol show hostlist` does, such that Expand gives back
// exactly names, in the same order and with the same duplicates.
//
// A name's number is its last run of digits; the text before it is its
// prefix and the text after it its suffix. Only names adjacent in the
// given order are merged: a name joins the bracket group of the name
// before it when both have the same prefix, suffix and zero-padding width
// (a number written without leading zeros has no padding), and it extends
// the group's last range when its number is one more: "n1,n2,n3,n7" gives
// "n[1-3,7]", "n01,n02,n10-ib" gives "n[01-02],n10-ib", "n2,n1" gives
// "n[2,1]". The list is not sorted first: sort it for the shortest form.
// Names without digits, and numbers of more than 18 digits, are written as
// they are. The empty list gives "".
//
// A hostlist has no way to write a name containing ',', '[', ']', white
// space or a control character, nor the empty name. Compress writes each
// such name as it is, as an element of its own: it is never merged with
// its neighbours, which are compressed as usual ("n1,n2,a[1,n3" gives
// "n[1-2],a[1,n3"). The result then does not round-trip: Expand splits
// such a name at its commas, reads its brackets as ranges or refuses
// them, and refuses blanks, control characters and empty elements. Only
// a list without such names is guaranteed to expand back to itself.
func Compress(names []string) string {
	var w hostlistWriter
	var g hostGroup
	for _, name := range names {
		h, ok := splitHostName(name)
		if !ok {
			g.flush(&w)
			w.item()
			w.b.WriteString(name)
			continue
		}
		if !g.add(h) {
			g.flush(&w)
			g.start(h)
		}
	}
	g.flush(&w)
	return w.b.String()
}

// hostlistWriter writes comma-separated hostlist elements.
type hostlistWriter struct {
	b       strings.Builder
	started bool
}

// item starts a new element.
func (w *hostlistWriter) item() {
	if w.started {
		w.b.WriteByte(',')
	}
	w.started = true
}

// hostName is a host name split around its last run of digits.
type hostName struct {
	prefix, digits, suffix string
	value                  uint64
}

// splitHostName splits name around its last run of digits. It refuses a
// name without digits, one whose number has more than maxHostlistDigits
// digits, and one that a hostlist cannot write (see hostlistWritable):
// such names are written as they are.
func splitHostName(name string) (hostName, bool) {
	if !Writable(name) {
		return hostName{}, false
	}
	end := len(name)
	for end > 0 && !isHostDigit(name[end-1]) {
		end--
	}
	if end == 0 {
		return hostName{}, false
	}
	start := end
	for start > 0 && isHostDigit(name[start-1]) {
		start--
	}
	digits := name[start:end]
	if len(digits) > maxHostlistDigits {
		return hostName{}, false
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return hostName{}, false
	}
	return hostName{prefix: name[:start], digits: digits, suffix: name[end:], value: v}, true
}

func isHostDigit(c byte) bool { return c >= '0' && c <= '9' }

// Writable reports whether a hostlist can hold name, so that Expand gives
// it back from what Compress writes: a name that is not empty and holds no
// ',', '[', ']', white space or control character.
func Writable(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == ',' || c == '[' || c == ']' || c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// hostPadWidth returns the zero-padding width of a number as written: its
// length if it has a leading zero, else 0 (no padding).
func hostPadWidth(digits string) int {
	if len(digits) > 1 && digits[0] == '0' {
		return len(digits)
	}
	return 0
}

// hostGroup accumulates adjacent names that share one bracket group.
type hostGroup struct {
	active         bool
	prefix, suffix string
	width          int // padding width shared by the group's numbers
	ranges         []hostGroupRange
}

type hostGroupRange struct {
	lo     string // the first number exactly as written
	hi     uint64
	single bool
}

func (g *hostGroup) start(h hostName) {
	g.active = true
	g.prefix, g.suffix = h.prefix, h.suffix
	g.width = hostPadWidth(h.digits)
	g.ranges = append(g.ranges[:0], hostGroupRange{lo: h.digits, hi: h.value, single: true})
}

// add appends h to the group if it belongs there.
func (g *hostGroup) add(h hostName) bool {
	if !g.active || h.prefix != g.prefix || h.suffix != g.suffix || padHostNumber(h.value, g.width) != h.digits {
		return false
	}
	last := &g.ranges[len(g.ranges)-1]
	if last.hi+1 == h.value && padHostNumber(h.value, len(last.lo)) == h.digits {
		last.hi = h.value
		last.single = false
		return true
	}
	g.ranges = append(g.ranges, hostGroupRange{lo: h.digits, hi: h.value, single: true})
	return true
}

func (g *hostGroup) flush(w *hostlistWriter) {
	if !g.active {
		return
	}
	g.active = false
	w.item()
	b := &w.b
	if len(g.ranges) == 1 && g.ranges[0].single {
		b.WriteString(g.prefix + g.ranges[0].lo + g.suffix)
		return
	}
	b.WriteString(g.prefix)
	b.WriteByte('[')
	for i, r := range g.ranges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.lo)
		if !r.single {
			b.WriteByte('-')
			b.WriteString(padHostNumber(r.hi, len(r.lo)))
		}
	}
	b.WriteByte(']')
	b.WriteString(g.suffix)
}
