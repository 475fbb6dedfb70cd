package placement

import "fmt"

// Code classifies why a request was not placed.
type Code uint8

const (
	// Placed means there is no failure.
	Placed Code = iota
	// NoCapacity: the allowed, schedulable nodes of the whole cluster do
	// not hold the request now.
	NoCapacity
	// RequiredLevel: no single domain of the required level holds it.
	RequiredLevel
	// TooManyDomains: every placement spans more domains of the limited
	// level than MaxDomains allows.
	TooManyDomains
	// NoSegments: the domains of the segment level cannot hold enough
	// whole segments.
	NoSegments
)

var codeNames = [...]string{"placed", "no-capacity", "required-level", "too-many-domains", "no-segments"}

// String returns a short stable name for the code.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint8(c))
}

// Reason says why a request was not placed, naming the binding
// constraint. It is a plain value (Place allocates nothing to report it);
// String renders it for users, for example "needs 16 nodes with 8 free
// GPUs under one leaf; the best leaf has 12".
type Reason struct {
	// Code is the kind of failure.
	Code Code
	// Level names the binding level ("" for the whole cluster).
	Level string
	// Need and Have count the binding quantity: what the request needs and
	// the most the best domain offers (for TooManyDomains: the domain
	// limit and the fewest domains any placement needs).
	Need, Have int
	// Unit describes one counted item.
	unit unitDesc
}

type unitDesc struct {
	mode    mode
	g       int
	excl    bool
	seg     int
	segName string
}

func (u unitDesc) format(n int) string {
	plural := func(s string) string {
		if n == 1 {
			return s
		}
		return s + "s"
	}
	switch {
	case u.seg > 1:
		return fmt.Sprintf("%d %s of %d %s inside one %s", n, plural("segment"), u.seg, u.nodeWords(u.seg), u.segName)
	case u.mode == modeGPUs && u.excl:
		return fmt.Sprintf("%d GPUs on idle nodes", n)
	case u.mode == modeGPUs:
		return fmt.Sprintf("%d free GPUs", n)
	}
	return fmt.Sprintf("%d %s", n, u.nodeWords(n))
}

func (u unitDesc) nodeWords(n int) string {
	node := "nodes"
	if n == 1 {
		node = "node"
	}
	switch {
	case u.g == 0:
		return "idle " + node
	case u.excl:
		return fmt.Sprintf("idle %s with at least %d GPUs", node, u.g)
	}
	return fmt.Sprintf("%s with %d free GPUs", node, u.g)
}

// String renders the reason in a user's words.
func (r Reason) String() string {
	switch r.Code {
	case Placed:
		return "placed"
	case NoCapacity:
		return fmt.Sprintf("needs %s; the cluster has %d", r.unit.format(r.Need), r.Have)
	case RequiredLevel:
		return fmt.Sprintf("needs %s under one %s; the best %s has %d", r.unit.format(r.Need), r.Level, r.Level, r.Have)
	case TooManyDomains:
		return fmt.Sprintf("may span at most %d %s; the tightest placement spans %d", r.Need, plural(r.Level, r.Need), r.Have)
	case NoSegments:
		return fmt.Sprintf("needs %s; the cluster has room for %d", r.unit.format(r.Need), r.Have)
	}
	return r.Code.String()
}

func plural(s string, n int) string {
	if n == 1 {
		return s
	}
	if s == "" {
		return "domains"
	}
	if s[len(s)-1] == 'h' || s[len(s)-1] == 's' {
		return s + "es"
	}
	return s + "s"
}

// Error lets a Reason be returned as an error by callers that want one.
func (r Reason) Error() string { return r.String() }
