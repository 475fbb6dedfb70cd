package placement

import (
	"fmt"
	"strings"

	"github.com/phalanx-sched/phalanx/topology"
)

// ReasonCode classifies why a request was not placed.
type ReasonCode uint8

const (
	// Placed means there is no failure.
	Placed ReasonCode = iota
	// NoCapacity: the allowed, schedulable nodes of the whole cluster do
	// not hold the request now.
	NoCapacity
	// RequiredLevel: no single domain of the required level holds it.
	RequiredLevel
	// TooManyDomains: every placement spans more domains of the limited
	// level than MaxDomains allows.
	TooManyDomains
	// NoSegments: the domains of the segment levels cannot hold enough
	// whole segments.
	NoSegments
)

var codeNames = [...]string{"placed", "no-capacity", "required-level", "too-many-domains", "no-segments"}

// String returns a short stable name for the code.
func (c ReasonCode) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint8(c))
}

// Exclusions counts the nodes of the cluster that were not candidates for
// a request, each under the first reason that applies, in this order.
type Exclusions struct {
	// Down and Drained count nodes that are down or drained.
	Down, Drained int
	// OutsideAllowed counts schedulable nodes outside Request.Allowed.
	OutsideAllowed int
	// InExcluded counts schedulable, allowed nodes in Request.Excluded.
	InExcluded int
	// ShortOfGPUs counts the other nodes that lack the free GPUs the
	// request needs on one node (or are not idle, for exclusive
	// requests).
	ShortOfGPUs int
}

// Total returns the number of excluded nodes.
func (e Exclusions) Total() int {
	return e.Down + e.Drained + e.OutsideAllowed + e.InExcluded + e.ShortOfGPUs
}

// String lists the nonzero counts, for example "3 down, 40 short of free
// GPUs".
func (e Exclusions) String() string { return e.format("") }

// format is String with the nodes outside Allowed described as label
// (Request.AllowedLabel; "outside Allowed" when empty).
func (e Exclusions) format(label string) string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(e.Down, "down")
	add(e.Drained, "drained")
	add(e.OutsideAllowed, allowedWords(label))
	add(e.InExcluded, "in Excluded")
	add(e.ShortOfGPUs, "short of free GPUs")
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Reason says why a request was not placed, naming the binding
// constraint, how many nodes were left out and why, and whether the
// request could ever fit. It is a plain value (Place allocates nothing to
// report it); String renders it for users, for example "needs 16 nodes
// with 8 free GPUs under one leaf; the best leaf has 12".
type Reason struct {
	// Code is the kind of failure.
	Code ReasonCode
	// Level names the binding level ("" for the whole cluster). Place
	// leaves it empty for NoCapacity and NoSegments; a caller that
	// confined the request to one domain through Allowed (package gang,
	// for a co-located member) names the domain's level, and Have then
	// counts the domain tried, not the cluster.
	Level string
	// Need and Have count the binding quantity: what the request needs and
	// the most the best domain offers (for TooManyDomains: the domain
	// limit and the fewest domains any placement needs).
	Need, Have int
	// Excluded counts the nodes that were not candidates, by reason.
	Excluded Exclusions
	// Unresolvable reports that the request cannot fit this cluster
	// whatever is freed: not even with every node up and every GPU free
	// (Allowed and Excluded still applying). A Kubernetes adapter maps it
	// to UnschedulableAndUnresolvable; otherwise the request may fit
	// later.
	Unresolvable bool
	// unit describes one counted item.
	unit unitDesc
	// allowedLabel is the request's AllowedLabel.
	allowedLabel string
	// counted is set by explain when Have and the nodes short of free
	// GPUs are the state's domain counters (Recount): at level lvl
	// (rootLevel: the cluster), for nodes with minFree free GPUs.
	counted bool
	lvl     level
	minFree int
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
		return fmt.Sprintf("idle %s with at least %d %s", node, u.g, pluralWord("GPU", u.g))
	}
	return fmt.Sprintf("%s with %d free %s", node, u.g, pluralWord("GPU", u.g))
}

// String renders the reason in a user's words.
func (r Reason) String() string {
	var s string
	switch r.Code {
	case Placed:
		return "placed"
	case NoCapacity:
		s = fmt.Sprintf("needs %s; %s has %d", r.unit.format(r.Need), r.scope(), r.Have)
	case RequiredLevel:
		s = fmt.Sprintf("needs %s under one %s; the best %s has %d", r.unit.format(r.Need), r.Level, r.Level, r.Have)
	case TooManyDomains:
		s = fmt.Sprintf("may span at most %d %s; the tightest placement spans %d", r.Need, plural(r.Level, r.Need), r.Have)
	case NoSegments:
		s = fmt.Sprintf("needs %s; %s has room for %d", r.unit.format(r.Need), r.scope(), r.Have)
	default:
		return r.Code.String()
	}
	if n := r.Excluded.Total(); n > 0 {
		s += fmt.Sprintf(" (%d %s left out: %s)", n, pluralWord("node", n), r.Excluded.format(r.allowedLabel))
	}
	if r.Unresolvable {
		s += "; it cannot fit this cluster even with every GPU free"
	}
	return s
}

// scope names what Have counts for NoCapacity and NoSegments: the
// cluster, or the one domain of Level the request was confined to.
func (r Reason) scope() string {
	if r.Level == "" {
		return "the cluster"
	}
	return "the " + r.Level + " tried"
}

func pluralWord(s string, n int) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

func plural(s string, n int) string {
	if n == 1 {
		return s
	}
	switch {
	case s == "":
		return "domains"
	case s == "leaf":
		return "leaves"
	case s[len(s)-1] == 'h' || s[len(s)-1] == 's':
		return s + "es"
	}
	return s + "s"
}

// Error lets a Reason be returned as an error by callers that want one.
func (r Reason) Error() string { return r.String() }

// Recount reads r's counts anew from state s, a state of the cluster the
// reason was given on: Have and the nodes short of free GPUs (and down
// and drained), as Place would count them for the same request on s;
// the code, Need and the rest stay. It reads the state's domain counters
// only (no placement, no allocation), and reports false, leaving r as it
// is, when r's counts are not such counters: a request with Allowed or
// Excluded, segments or a domain limit, a topology-blind strategy, a
// code other than NoCapacity and RequiredLevel, or a reason a caller
// changed (a gang's member confined to one domain). The caller decides
// whether the request still fails on s (Have below Need): a host that
// recounts, on the state a plan leaves, a reason given part-way through
// the plan tells what is true once the plan is applied.
func (r *Reason) Recount(s *topology.State) bool {
	if !r.counted || r.Level != "" && r.lvl == rootLevel {
		return false
	}
	c := s.Cluster()
	stride := c.MaxNodeGPUs() + 1
	r.Have = 0
	cand := 0
	if r.minFree < stride {
		if r.lvl == rootLevel {
			r.Have = r.levelCount(s, 0, false)
		} else {
			r.Have = r.levelCount(s, int(r.lvl), true)
		}
		if r.unit.excl {
			for _, n := range s.LevelIdleNodes(0) {
				cand += int(n)
			}
		} else {
			avail := s.LevelAvail(0)
			for d := range len(avail) / stride {
				cand += int(avail[d*stride+r.minFree])
			}
		}
	}
	r.Excluded.Down, r.Excluded.Drained = s.DownNodes(), s.DrainedNodes()
	r.Excluded.ShortOfGPUs = c.NumNodes() - r.Excluded.Down - r.Excluded.Drained - cand
	return true
}

// levelCount returns the base items of r's request that the counters of
// s count over the domains of level l: the most of one domain (best), or
// their sum.
func (r *Reason) levelCount(s *topology.State, l int, best bool) int {
	n := 0
	add := func(v int) {
		if best {
			n = max(n, v)
		} else {
			n += v
		}
	}
	var caps []int32
	switch {
	case r.unit.mode == modeGPUs && r.unit.excl:
		caps = s.LevelIdleGPUs(l)
	case r.unit.mode == modeGPUs:
		caps = s.LevelFreeGPUs(l)
	case r.unit.excl:
		caps = s.LevelIdleNodes(l)
	default:
		avail, stride := s.LevelAvail(l), s.Cluster().MaxNodeGPUs()+1
		for d := range len(avail) / stride {
			add(int(avail[d*stride+r.minFree]))
		}
		return n
	}
	for _, v := range caps {
		add(int(v))
	}
	return n
}
