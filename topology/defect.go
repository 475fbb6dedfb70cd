package topology

import (
	"errors"
	"fmt"
	"strings"
)

// ErrEmptyDomain marks a switch, block or other domain of an input that
// holds no nodes. Loaders report it as a warning and leave the domain out,
// since a Cluster has no empty domains.
var ErrEmptyDomain = errors.New("topology: domain without nodes")

// Defect is one problem a loader found in its input: where it is and what
// is wrong. A loader reports every defect it finds in one run: errors
// together as a *Defects error, warnings (problems that do not stop the
// load) as a []Defect beside the result.
type Defect struct {
	// File names the input as the caller named it ("topology.conf",
	// "nodes.json"), or the option at fault ("slurm.Options.NodeGPUs").
	File string
	// Line is the 1-based line of the defect, or 0 when it concerns the
	// input as a whole or an option.
	Line int
	// Err is the sentinel that classifies the defect (ErrSyntax,
	// ErrDuplicate, ErrUnknownNode, ...); errors.Is on a Defect or on a
	// *Defects holding it finds it.
	Err error
	// Msg says what is wrong, naming the token, node, switch or item at
	// fault.
	Msg string
}

// Error returns "file:line: sentinel: message", without the line when it
// is 0 and without the sentinel when Err is nil.
func (d Defect) Error() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d", d.Line)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if d.Err != nil {
		b.WriteString(d.Err.Error())
		b.WriteString(": ")
	}
	b.WriteString(d.Msg)
	return b.String()
}

// Unwrap returns the defect's sentinel.
func (d Defect) Unwrap() error { return d.Err }

// Defects is the error of a load that found defects: every one found, in
// input order (file, then line), up to the loader's bound.
type Defects struct {
	// List holds the defects reported.
	List []Defect
	// More counts the defects found beyond the bound and not listed.
	More int
}

// Error returns the single defect's message, or "N defects:" followed by
// one defect per line.
func (e *Defects) Error() string {
	if len(e.List) == 1 && e.More == 0 {
		return e.List[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d defects:", len(e.List)+e.More)
	for _, d := range e.List {
		b.WriteString("\n")
		b.WriteString(d.Error())
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n(and %d more, not listed)", e.More)
	}
	return b.String()
}

// Unwrap returns the listed defects, so that errors.Is and errors.As look
// into each of them.
func (e *Defects) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, d := range e.List {
		out[i] = d
	}
	return out
}
