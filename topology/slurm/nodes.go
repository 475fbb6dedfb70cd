package slurm

import (
	"errors"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/phalanx-sched/phalanx/internal/defects"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// SlurmConfNodes is what ReadSlurmConfNodes learns from a slurm.conf.
type SlurmConfNodes struct {
	// Nodes lists the NodeName= expressions in file order (without
	// NodeName=DEFAULT), ready for Options.Nodes.
	Nodes []string
	// GPUs maps each node whose Gres= (its own, or else the default of
	// the NodeName=DEFAULT lines before it) holds GPUs to its GPU count
	// (all GPU types summed), ready for Options.NodeGPUs.
	GPUs map[string]int
}

// ReadSlurmConfNodes reads the node definitions of the slurm.conf called
// name from fsys (following Include lines as ParseConf does, relative
// paths from the directory of name) so that a topology file can be
// checked against them: every "NodeName=..." line but NodeName=DEFAULT.
// As in Slurm, DEFAULT lines merge: the Gres= of the latest DEFAULT line
// that has one sets the default GPUs of the node lines after it, and a
// DEFAULT line without Gres= leaves that default as it was.
//
// GPU counts come from the Gres entries named "gpu", all summed, counted
// as Slurm counts them: "gpu:N" and "gpu:type:N" are N GPUs, "gpu" and
// "gpu:type" (no count) one GPU; the count is the field after the last
// ':' when it starts with a digit, and must then be a whole number
// (Slurm's K, M and G suffixes are not read). A trailing "(S:...)" socket
// binding is ignored. A node whose Gres= (or default) has no GPUs is not
// in SlurmConfNodes.GPUs. Other lines are not read. Defects (a NodeName
// line that is not Key=Value, a bad hostlist or GPU count, an unreadable
// include) are returned together in a *topology.Defects error.
func ReadSlurmConfNodes(fsys fs.FS, name string) (SlurmConfNodes, error) {
	col := defects.New(0)
	r := &nodeReader{out: SlurmConfNodes{GPUs: map[string]int{}}, col: col, defaultGPUs: -1}
	walkConf(fsys, name, col, r.line)
	if err := col.Err(); err != nil {
		return SlurmConfNodes{}, err
	}
	return r.out, nil
}

type nodeReader struct {
	out         SlurmConfNodes
	col         *defects.Collector
	defaultGPUs int // from NodeName=DEFAULT Gres=..., -1 when none
}

// line reads one logical line of slurm.conf.
func (r *nodeReader) line(at pos, text string) {
	t := strings.TrimLeft(text, " \t")
	if len(t) < 9 || !strings.EqualFold(t[:8], "nodename") {
		return
	}
	pairs, err := splitPairs(text)
	if err != nil || !strings.EqualFold(pairs[0].key, "nodename") {
		if err != nil {
			r.col.Addf(at.file, at.line, topology.ErrSyntax, "%v", err)
		}
		return
	}
	gpus := -1
	for _, p := range pairs[1:] {
		if strings.EqualFold(p.key, "gres") {
			gpus = r.gresGPUs(at, p.value)
		}
	}
	if strings.EqualFold(pairs[0].value, "default") {
		// DEFAULT lines merge, as in Slurm: one without Gres= keeps the
		// GPU count of the DEFAULT lines before it.
		if gpus >= 0 {
			r.defaultGPUs = gpus
		}
		return
	}
	names, err := hostlist.Expand(pairs[0].value)
	if err != nil {
		r.col.Addf(at.file, at.line, topology.ErrSyntax, "NodeName=: %v", err)
		return
	}
	r.out.Nodes = append(r.out.Nodes, pairs[0].value)
	if gpus < 0 {
		gpus = r.defaultGPUs
	}
	if gpus > 0 {
		for _, n := range names {
			r.out.GPUs[n] = gpus
		}
	}
}

// gresGPUs sums the GPU counts of a Gres= value ("gpu:a100:4,gpu:h100:4",
// "gpu:8(S:0-1)"); a value without GPUs has none. As in Slurm's gres.c,
// an entry's count is the field after its last ':' when that field starts
// with a digit; "gpu" alone and "gpu:<type>" (a field that does not start
// with a digit) count one GPU.
func (r *nodeReader) gresGPUs(at pos, v string) int {
	total := 0
	for _, g := range strings.Split(v, ",") {
		if k := strings.IndexByte(g, '('); k >= 0 {
			g = g[:k]
		}
		name, rest, typed := strings.Cut(g, ":")
		if name != "gpu" {
			continue
		}
		count := rest[strings.LastIndexByte(rest, ':')+1:]
		if !typed || count == "" || !isDigit(count[0]) {
			total++ // "gpu" or "gpu:<type>": one GPU
			continue
		}
		n, err := strconv.ParseUint(count, 10, 31)
		switch {
		case errors.Is(err, strconv.ErrRange):
			r.col.Addf(at.file, at.line, topology.ErrGPUCount, "Gres=%s: GPU count %q is too large", v, count)
			continue
		case err != nil:
			r.col.Addf(at.file, at.line, topology.ErrGPUCount, "Gres=%s: GPU count %q is not a whole number", v, count)
			continue
		}
		total += int(n)
	}
	return total
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// walkConf calls line for every logical line of the Slurm configuration
// file name and of the files it includes, in order, and reports whether
// name itself could be read. Relative Include paths resolve against the
// directory of name, at every depth.
func walkConf(fsys fs.FS, name string, col *defects.Collector, line func(pos, string)) bool {
	w := &confWalker{fsys: fsys, col: col, line: line, dir: path.Dir(name)}
	return w.file(name, pos{}, 0)
}

// confWalker reads a Slurm configuration file and its includes.
type confWalker struct {
	fsys  fs.FS
	col   *defects.Collector
	line  func(pos, string)
	dir   string   // directory of the top-level file, for relative includes
	stack []string // files being read, for include cycles
}

// file reads one file; from is the Include line that names it.
func (w *confWalker) file(name string, from pos, depth int) bool {
	w.col.File(name)
	at := from
	if at.file == "" {
		at = pos{file: name}
	}
	switch {
	case depth > MaxIncludeDepth:
		w.col.Addf(at.file, at.line, ErrInclude, "includes nested deeper than %d", MaxIncludeDepth)
		return false
	case containsString(w.stack, name):
		w.col.Addf(at.file, at.line, ErrInclude, "include cycle: %s -> %s", strings.Join(w.stack, " -> "), name)
		return false
	}
	data, err := fs.ReadFile(w.fsys, name)
	switch {
	case err != nil && from.file == "":
		w.col.Addf(name, 0, err, "cannot read the file")
		return false
	case err != nil:
		w.col.Addf(at.file, at.line, ErrInclude, "cannot read %s: %v", name, err)
		return false
	}
	w.stack = append(w.stack, name)
	for _, l := range logicalLines(string(data)) {
		w.logical(pos{file: name, line: l.num}, l.text, depth)
	}
	w.stack = w.stack[:len(w.stack)-1]
	return true
}

// logical handles one logical line: an Include, or a line for the caller.
func (w *confWalker) logical(at pos, text string, depth int) {
	target, ok, err := includeTarget(text)
	switch {
	case !ok:
		w.line(at, text)
	case err != nil:
		w.col.Addf(at.file, at.line, topology.ErrSyntax, "%v", err)
	default:
		p, err := includePath(w.dir, target)
		if err != nil {
			w.col.Addf(at.file, at.line, ErrInclude, "%v", err)
			return
		}
		w.file(p, at, depth+1)
	}
}
