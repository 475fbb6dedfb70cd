package slurm

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/phalanx-sched/phalanx/internal/defects"
	"github.com/phalanx-sched/phalanx/topology"
)

// ParseConf reads the Slurm topology.conf called name from fsys, for the
// topology/tree or the topology/block plugin, and returns the ClusterSpec of the
// cluster it describes and the warnings found. It reads nothing but name
// and the files its Include lines name, through fsys (os.DirFS("/etc/slurm")
// for a live system, fstest.MapFS in tests).
//
// # Syntax
//
// As in Slurm: parameter names are case-insensitive and may have spaces
// around "="; a value is a word or a double-quoted string
// (Nodes="gpu[1-4]"); "#" starts a comment unless escaped as "\#"; a line
// ending in an odd number of backslashes continues on the next line; other
// backslashes escape the next character. "Include <file>" reads another
// file in place. As in Slurm, a relative path is relative to the
// directory of the top-level file (name), not to that of the file holding
// the Include line: in an included "topo.d/a.conf", "Include topo.d/b.conf"
// reads topo.d/b.conf and "Include b.conf" reads the b.conf beside name.
// (Slurm resolves them against slurm.conf's directory, where it also
// looks for topology.conf.) An absolute path is opened from the root of
// fsys (its leading "/" removed). Globs and "%c" in Include paths are not
// supported, nor are includes nested deeper than MaxIncludeDepth or
// including themselves.
//
// # Tree
//
// Lines are "SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900" (a leaf switch)
// and "SwitchName=s4 Switches=s[0-3]". LinkSpeed is ignored, but must be
// a value Slurm's parser takes for a 32-bit count: a number in decimal,
// hex ("0x10") or octal ("017"), optionally followed by K (times 1024),
// at most 4294967295, or UNLIMITED or INFINITE. A switch has Nodes= or
// Switches=, not both; one with neither, or with no node under it, is
// left out with an ErrEmptyDomain warning, as Slurm accepts it. A switch's height is 0 if it holds nodes and one more
// than its highest child switch otherwise; the ClusterSpec has as many levels as
// the highest switch's height plus one, named top to bottom "leaf" (one
// level), "spine", "leaf" (two), "core", "spine", "leaf" (three), and
// "core", "spine1", ..., "spineK", "leaf" for more. A switch sits at the
// level of its height counted from the bottom.
//
// Slurm allows unbalanced trees, where a switch's parent is more than one
// level above it, or a root is lower than the top level (several roots form
// several top-level domains). A ClusterSpec needs every node to have a domain at
// every level, so a switch also stands for itself at each missing level
// above it: with "SwitchName=top Switches=agg,leafX", "SwitchName=agg
// Switches=leafA" and leafA, leafX holding nodes, leafX's nodes have the
// path top/leafX/leafX, leafA's nodes top/agg/leafA. Nodes come in
// depth-first order from the roots, roots in file order and children in
// the order listed.
//
// # Block
//
// Lines are "BlockName=b1 Nodes=node[1-18]" and at most one
// "BlockSizes=18,36,72". The first block size is the base block size (the
// planning unit); without BlockSizes it is the node count of the first
// block. Every block must have at least the base size of nodes, as in
// Slurm. Each further size must be the base size times a power of two,
// increasing, and adds an aggregate level above the base blocks: a size of
// 2^k times the base joins aligned runs of 2^k consecutive blocks in file
// order. A trailing run with fewer blocks still forms an aggregate (a
// smaller one). As in Slurm, sizes past the first that spans every block
// are dropped. Levels are named top to bottom "block<size>" for each
// aggregate size in nodes ("block72", "block36") and "block" for the base
// blocks. An aggregate domain is named after its blocks as a hostlist
// ("b[1-2]"). Without BlockSizes the cluster has the base level only
// (unlike Slurm, which then plans with aggregates of 2, 4, 8 and 16
// blocks). Nodes come in file order.
//
// # Defects
//
// Every defect is reported at once, up to opts.MaxDefects, in one
// *topology.Defects error; each names its file and line and wraps a
// sentinel: ErrSyntax (a line that is not Key=Value, an unknown key, a
// malformed hostlist or number, tree and block lines in one file),
// ErrDuplicate, ErrNotTree (a node or switch under two parents, a cycle),
// ErrInvalidSpec (an undefined child switch, a switch with both nodes and
// switches, a tree deeper than topology.MaxLevels, bad BlockSizes, a block
// smaller than the base size), ErrUnknownNode (a node slurm.conf does not
// define, a NodeGPUs entry for a node the file does not list), ErrGPUCount,
// ErrInclude. On error the ClusterSpec is empty.
func ParseConf(fsys fs.FS, name string, opts Options) (topology.ClusterSpec, []topology.Defect, error) {
	col, warn := defects.New(opts.MaxDefects), defects.New(opts.MaxDefects)
	known := expandNodes(&opts, col)
	r := &confReader{col: col}
	opened := walkConf(fsys, name, col, r.line)
	var lay layout
	switch {
	case len(r.switches) > 0:
		lay = buildTree(r.switches, &known, col, warn)
	case len(r.blocks) > 0 || r.sizes.set:
		lay = buildBlocks(r.blocks, r.sizes, pos{file: name}, &known, col)
	case opened && r.statements == 0 && col.Len() == 0:
		col.Addf(name, 0, topology.ErrInvalidSpec, "no SwitchName= or BlockName= lines")
	}
	if col.Len() == 0 && len(lay.names) == 0 {
		col.Addf(name, 0, topology.ErrInvalidSpec, "no switch holds a node")
		// The switches left out say why, on their lines (a warning
		// alone is lost with the error).
		for _, d := range warn.List() {
			col.Add(d)
		}
	}
	return finish(&lay, &known, name, &opts, col, warn)
}

// finish checks the GPU options and slurm.conf's nodes against a layout
// and returns its ClusterSpec, or every defect found.
func finish(lay *layout, known *nodeList, name string, opts *Options, col, warn *defects.Collector) (topology.ClusterSpec, []topology.Defect, error) {
	placed := make(map[string]bool, len(lay.names))
	for _, n := range lay.names {
		placed[n] = true
	}
	gpus := gpuCounts(opts, name, func(n string) bool {
		_, listed := known.index[n]
		return placed[n] || listed
	}, col)
	if err := col.Err(); err != nil {
		return topology.ClusterSpec{}, nil, err
	}
	unplaced(known, func(n string) bool { return placed[n] }, pos{file: name}, "", warn)
	return lay.spec(gpus), warn.List(), nil
}

// LoadConf reads a topology.conf with ParseConf and builds the cluster.
func LoadConf(fsys fs.FS, name string, opts Options) (*topology.Cluster, []topology.Defect, error) {
	spec, warnings, err := ParseConf(fsys, name, opts)
	if err != nil {
		return nil, nil, err
	}
	c, err := topology.Build(spec)
	if err != nil {
		return nil, nil, err
	}
	return c, warnings, nil
}

// confReader gathers the definitions of a topology.conf and its includes.
type confReader struct {
	col                   *defects.Collector
	switches              []switchDef
	blocks                []blockDef
	sizes                 blockSizes
	firstTree, firstBlock pos
	mixed                 bool // the mixed-kinds defect was reported
	statements            int  // logical lines other than Include
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// line handles one logical line (Include lines are handled by walkConf).
func (r *confReader) line(at pos, text string) {
	r.statements++
	pairs, err := splitPairs(text)
	if err != nil {
		r.col.Addf(at.file, at.line, topology.ErrSyntax, "%v", err)
		return
	}
	switch strings.ToLower(pairs[0].key) {
	case "switchname":
		if r.kind(at, &r.firstTree, "SwitchName", r.firstBlock, "BlockName/BlockSizes") {
			r.switchLine(at, pairs)
		}
	case "blockname", "blocksizes":
		if r.kind(at, &r.firstBlock, pairs[0].key, r.firstTree, "SwitchName") {
			r.blockLine(at, pairs)
		}
	default:
		r.col.Addf(at.file, at.line, topology.ErrSyntax, "unknown key %s=; a line starts with SwitchName=, BlockName=, BlockSizes= or Include", pairs[0].key)
	}
}

// kind records the first line of a kind and refuses a line of the other
// kind (reported once).
func (r *confReader) kind(at pos, first *pos, key string, other pos, otherKeys string) bool {
	if other.file != "" {
		if !r.mixed {
			r.col.Addf(at.file, at.line, topology.ErrSyntax, "%s= line in a file of %s lines (first at %s); tree and block topologies cannot be mixed", key, otherKeys, other)
			r.mixed = true
		}
		return false
	}
	if first.file == "" {
		*first = at
	}
	return true
}

func (r *confReader) switchLine(at pos, pairs []pair) {
	sw := switchDef{name: pairs[0].value, at: at}
	for _, p := range pairs[1:] {
		switch strings.ToLower(p.key) {
		case "nodes":
			sw.nodes, sw.nodesAt, sw.hasNodes = p.value, at, true
		case "switches":
			sw.switches, sw.switchesAt, sw.hasSwitches = p.value, at, true
		case "linkspeed":
			if _, ok := parseSlurmUint32(p.value); !ok {
				r.col.Addf(at.file, at.line, topology.ErrSyntax, "LinkSpeed=%s is not a number (want a 32-bit count in decimal, 0x hex or 0 octal, with an optional K suffix, or UNLIMITED or INFINITE)", p.value)
			}
		default:
			r.col.Addf(at.file, at.line, topology.ErrSyntax, "unknown key %s= in a SwitchName= line (want Switches=, Nodes= or LinkSpeed=)", p.key)
		}
	}
	r.switches = append(r.switches, sw)
}

func (r *confReader) blockLine(at pos, pairs []pair) {
	if strings.EqualFold(pairs[0].key, "blocksizes") {
		for _, p := range pairs[1:] {
			r.col.Addf(at.file, at.line, topology.ErrSyntax, "unknown key %s= in a BlockSizes= line", p.key)
		}
		if r.sizes.set {
			r.col.Addf(at.file, at.line, topology.ErrSyntax, "BlockSizes= given twice (first at %s)", r.sizes.at)
			return
		}
		r.sizes = parseBlockSizes(pairs[0].value, at, r.col)
		return
	}
	b := blockDef{name: pairs[0].value, at: at}
	for _, p := range pairs[1:] {
		if !strings.EqualFold(p.key, "nodes") {
			r.col.Addf(at.file, at.line, topology.ErrSyntax, "unknown key %s= in a BlockName= line (want Nodes=)", p.key)
			continue
		}
		b.nodes, b.nodesAt, b.hasNodes = p.value, at, true
	}
	r.blocks = append(r.blocks, b)
}

// parseSlurmUint32 parses a value the way Slurm's s_p_handle_uint32 does:
// strtoul with base 0 (leading blanks and a '+' allowed, "0x" for hex, a
// leading "0" for octal), then an optional 'K' or 'k' that multiplies by
// 1024, then nothing; or, failing that, UNLIMITED or INFINITE in any case
// (Slurm's INFINITE, 0xffffffff). As in Slurm a '-' sign, a number above
// 0xffffffff and trailing text are refused, and a lone "K" (no digits) is
// 0.
func parseSlurmUint32(v string) (uint32, bool) {
	if strings.EqualFold(v, "UNLIMITED") || strings.EqualFold(v, "INFINITE") {
		return 0xffffffff, true
	}
	s := strings.TrimLeft(v, " \t\n\v\f\r")
	if strings.HasPrefix(s, "-") {
		return 0, false
	}
	s = strings.TrimPrefix(s, "+")
	base := 10
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHexDigit(s[2]):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base = 8
	}
	end := 0
	for end < len(s) && digitValue(s[end]) < base {
		end++
	}
	var n uint64
	if end == 0 {
		s = v // strtoul read nothing: the rest is the whole value
	} else {
		var err error
		if n, err = strconv.ParseUint(s[:end], base, 64); err != nil {
			return 0, false // out of range
		}
		s = s[end:]
	}
	if s != "" && (s[0] == 'K' || s[0] == 'k') {
		if n > 0xffffffff/1024 {
			return 0, false
		}
		n *= 1024
		s = s[1:]
	}
	if s != "" || n > 0xffffffff {
		return 0, false
	}
	return uint32(n), true
}

// digitValue returns the value of c as a digit of base up to 16, or 16.
func digitValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return 16
}

func isHexDigit(c byte) bool { return digitValue(c) < 16 }

// parseBlockSizes parses "18,36,72".
func parseBlockSizes(v string, at pos, col *defects.Collector) blockSizes {
	sizes := blockSizes{at: at, set: true}
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 1 {
			col.Addf(at.file, at.line, topology.ErrSyntax, "block size %q in BlockSizes=%s is not a positive number", f, v)
			sizes.bad = true
			continue
		}
		sizes.sizes = append(sizes.sizes, int(n))
	}
	return sizes
}

// includePath resolves an Include target: a relative one against dir, the
// directory of the top-level file (as Slurm resolves every relative
// include against slurm.conf's directory, whichever file includes it), an
// absolute one from the root of the file system.
func includePath(dir, target string) (string, error) {
	if strings.ContainsAny(target, "*?[") {
		return "", fmt.Errorf("include %s: globs are not supported (Slurm skips them too)", target)
	}
	if strings.Contains(target, "%") {
		return "", fmt.Errorf("include %s: %%-substitutions such as %%c are not supported", target)
	}
	p := path.Join(dir, target)
	if strings.HasPrefix(target, "/") {
		p = strings.TrimPrefix(path.Clean(target), "/")
	}
	if !fs.ValidPath(p) || p == "." {
		return "", fmt.Errorf("include %s: the path leaves the file system the loader was given", target)
	}
	return p, nil
}
