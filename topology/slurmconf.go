package topology

import (
	"fmt"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SlurmOptions configures the Slurm topology loaders
// (ParseSlurmTopologyConf, LoadSlurmTopologyConf, ParseSlurmTopologyYAML).
// Slurm files list node names only, so GPU counts come from here.
type SlurmOptions struct {
	// DefaultGPUs is the GPU count of every node without an override in
	// NodeGPUs; 0 means 8.
	DefaultGPUs int
	// NodeGPUs overrides the GPU count of single nodes. Every count must be
	// 1 to MaxGPUsPerNode, and every node named must appear in the file,
	// else the load fails.
	NodeGPUs map[string]int
	// Source names the file in error messages and NodeSpec.Source
	// ("topology.conf:12"); empty means "topology.conf" or "topology.yaml".
	Source string
	// Nodes lists the nodes of a flat topology of topology.yaml, as hostlist
	// expressions ("gpu[001-128]", "login1"). Slurm's flat topology holds
	// every node of the cluster, which topology.yaml does not list; when
	// Nodes is empty a flat topology holds the union of the nodes of the
	// file's other topologies. topology.conf ignores Nodes.
	Nodes []string
}

// ParseSlurmTopologyConf reads a Slurm topology.conf for the topology/tree
// or the topology/block plugin and returns the Spec of the cluster it
// describes. Parameter names are case-insensitive, "#" starts a comment,
// and node and switch lists are hostlists (see ExpandHostlist). Line
// continuations and Include lines are not supported.
//
// # Tree
//
// Lines are "SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900" (a leaf switch)
// and "SwitchName=s4 Switches=s[0-3]"; LinkSpeed must be a number and is
// ignored. Every switch has exactly one of Nodes= and Switches=. A switch's
// height is 0 if it holds nodes and one more than its highest child switch
// otherwise; the Spec has as many levels as the highest switch's height
// plus one, named top to bottom "leaf" (one level), "spine", "leaf" (two),
// "core", "spine", "leaf" (three), and "core", "spine1", ..., "spineK",
// "leaf" for more. A switch sits at the level of its height counted from
// the bottom, so every switch holding nodes is at the "leaf" level.
//
// Slurm allows unbalanced trees, where a switch's parent is more than one
// level above it, or where a root is lower than the top level (several
// roots are allowed and then form several top-level domains). A Spec needs
// every node to have a domain at every level, so a switch also stands for
// itself at each missing level above it: the domain at a gap level is named
// after the switch below the gap and holds exactly its nodes. For example
// with "SwitchName=top Switches=agg,leafX", "SwitchName=agg Switches=leafA"
// and leafA, leafX holding nodes, leafX's nodes have the path
// top/leafX/leafX, leafA's nodes top/agg/leafA.
//
// Nodes listed under no switch are not in the cluster. Nodes come in
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
// order (blocks 0..2^k-1, then 2^k..2^(k+1)-1, ...). A trailing run with
// fewer blocks still forms an aggregate (a smaller one). As in Slurm, sizes
// past the first that spans every block are dropped, since they would only
// repeat it. Levels are named top to bottom "block<size>" for each
// aggregate size in nodes ("block72", "block36") and "block" for the base
// blocks. An aggregate domain is named after its blocks as a hostlist
// ("b[1-2]"). Without BlockSizes the cluster has the base level only
// (unlike Slurm, which then plans with aggregates of 2, 4, 8 and 16
// blocks). Nodes come in file order.
//
// # Errors
//
// Errors wrap a sentinel (ErrSyntax, ErrDuplicate, ErrNotTree,
// ErrInvalidSpec, ErrGPUCount, ErrUnknownNode) and start with
// "file:line:", naming the token at fault: an unknown key, a malformed
// line or hostlist, a switch or block defined twice, a node under two
// switches or blocks (both named with their lines), a switch under two
// parents, an undefined child switch, a cycle of switches (named), a switch
// with both or neither of Nodes= and Switches=, a tree deeper than
// MaxLevels, bad BlockSizes, a block smaller than the base size, tree and
// block lines in one file, a GPU count outside 1..64, or a NodeGPUs entry
// for a node the file does not list. On error the Spec is empty.
func ParseSlurmTopologyConf(r io.Reader, opts SlurmOptions) (Spec, error) {
	src := opts.Source
	if src == "" {
		src = "topology.conf"
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", src, err)
	}
	conf, err := parseSlurmConfLines(string(data), src)
	if err != nil {
		return Spec{}, err
	}
	var lay slurmLayout
	switch {
	case len(conf.switches) > 0:
		lay, err = buildSlurmTree(conf.switches)
	case len(conf.blocks) > 0 || conf.sizes.set:
		lay, err = buildSlurmBlocks(conf.blocks, conf.sizes, src)
	default:
		err = fmt.Errorf("%s: %w: no SwitchName= or BlockName= lines", src, ErrInvalidSpec)
	}
	if err != nil {
		return Spec{}, err
	}
	gpus, err := slurmGPUs(opts, src, lay.has)
	if err != nil {
		return Spec{}, err
	}
	return lay.spec(gpus), nil
}

// LoadSlurmTopologyConf reads a Slurm topology.conf with
// ParseSlurmTopologyConf and builds the cluster.
func LoadSlurmTopologyConf(r io.Reader, opts SlurmOptions) (*Cluster, error) {
	spec, err := ParseSlurmTopologyConf(r, opts)
	if err != nil {
		return nil, err
	}
	return Build(spec)
}

// slurmSwitch is one switch of a tree topology, from either file format.
// Hostlists are kept as written; the builder expands them.
type slurmSwitch struct {
	name        string
	pos         string // "file:line" of the definition
	nodes       string
	nodesPos    string
	hasNodes    bool
	switches    string
	switchesPos string
	hasSwitches bool
}

// slurmBlock is one base block of a block topology.
type slurmBlock struct {
	name     string
	pos      string
	nodes    string
	nodesPos string
	hasNodes bool
}

// slurmBlockSizes is the BlockSizes list of a block topology.
type slurmBlockSizes struct {
	sizes []int
	pos   string
	set   bool
}

// slurmLayout is what the tree and block builders produce: level names
// and nodes with their paths, in topology order.
type slurmLayout struct {
	levels []string
	nodes  []slurmNode
	index  map[string]bool
}

type slurmNode struct {
	name string
	path []string
	pos  string
}

func (l *slurmLayout) add(name, pos string, path []string) {
	l.nodes = append(l.nodes, slurmNode{name: name, path: path, pos: pos})
	if l.index == nil {
		l.index = make(map[string]bool)
	}
	l.index[name] = true
}

func (l *slurmLayout) has(name string) bool { return l.index[name] }

// spec returns the layout as a Spec, with GPU counts from gpus.
func (l *slurmLayout) spec(gpus func(string) int) Spec {
	s := Spec{Levels: slices.Clone(l.levels), Nodes: make([]NodeSpec, len(l.nodes))}
	for i, n := range l.nodes {
		s.Nodes[i] = NodeSpec{Name: n.name, GPUs: gpus(n.name), Path: n.path, Source: n.pos}
	}
	return s
}

// slurmGPUs validates the GPU options against the nodes a file lists and
// returns the GPU count of each node.
func slurmGPUs(opts SlurmOptions, src string, known func(string) bool) (func(string) int, error) {
	def := opts.DefaultGPUs
	if def == 0 {
		def = 8
	}
	if def < 1 || def > MaxGPUsPerNode {
		return nil, fmt.Errorf("%s: %w: SlurmOptions.DefaultGPUs is %d, want 1 to %d", src, ErrGPUCount, opts.DefaultGPUs, MaxGPUsPerNode)
	}
	names := slices.Sorted(maps.Keys(opts.NodeGPUs))
	var unknown []string
	for _, name := range names {
		if g := opts.NodeGPUs[name]; g < 1 || g > MaxGPUsPerNode {
			return nil, fmt.Errorf("%s: %w: SlurmOptions.NodeGPUs[%q] is %d, want 1 to %d", src, ErrGPUCount, name, g, MaxGPUsPerNode)
		}
		if !known(name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: %w: SlurmOptions.NodeGPUs names %d nodes that the file does not list: %s", src, ErrUnknownNode, len(unknown), CompressHostlist(unknown))
	}
	return func(name string) int {
		if g, ok := opts.NodeGPUs[name]; ok {
			return g
		}
		return def
	}, nil
}

// slurmConf is the content of a topology.conf before building.
type slurmConf struct {
	switches []slurmSwitch
	blocks   []slurmBlock
	sizes    slurmBlockSizes
}

// parseSlurmConfLines splits a topology.conf into switch or block
// definitions, checking keys and values but not the topology.
func parseSlurmConfLines(text, src string) (slurmConf, error) {
	var conf slurmConf
	firstTree, firstBlock := "", ""
	for i, raw := range strings.Split(text, "\n") {
		pos := fmt.Sprintf("%s:%d", src, i+1)
		if k := strings.IndexByte(raw, '#'); k >= 0 {
			raw = raw[:k]
		}
		fields := strings.Fields(raw)
		if len(fields) == 0 {
			continue
		}
		keys := make([]string, len(fields))
		values := make([]string, len(fields))
		for j, f := range fields {
			k, v, ok := strings.Cut(f, "=")
			if !ok || k == "" {
				return slurmConf{}, fmt.Errorf("%s: %w: %q is not Key=Value", pos, ErrSyntax, f)
			}
			if v == "" {
				return slurmConf{}, fmt.Errorf("%s: %w: %s= has no value", pos, ErrSyntax, k)
			}
			for _, prev := range keys[:j] {
				if strings.EqualFold(prev, k) {
					return slurmConf{}, fmt.Errorf("%s: %w: key %s= given twice", pos, ErrSyntax, k)
				}
			}
			keys[j], values[j] = k, v
		}
		mixed := func(other, otherPos string) error {
			return fmt.Errorf("%s: %w: %s= line in a file of %s lines (first at %s); tree and block topologies cannot be mixed",
				pos, ErrSyntax, keys[0], other, otherPos)
		}
		switch strings.ToLower(keys[0]) {
		case "switchname":
			if firstBlock != "" {
				return slurmConf{}, mixed("BlockName/BlockSizes", firstBlock)
			}
			if firstTree == "" {
				firstTree = pos
			}
			sw := slurmSwitch{name: values[0], pos: pos}
			for j := 1; j < len(keys); j++ {
				switch strings.ToLower(keys[j]) {
				case "nodes":
					sw.nodes, sw.nodesPos, sw.hasNodes = values[j], pos, true
				case "switches":
					sw.switches, sw.switchesPos, sw.hasSwitches = values[j], pos, true
				case "linkspeed":
					if _, err := strconv.ParseUint(values[j], 10, 32); err != nil {
						return slurmConf{}, fmt.Errorf("%s: %w: LinkSpeed=%s is not a number", pos, ErrSyntax, values[j])
					}
				default:
					return slurmConf{}, fmt.Errorf("%s: %w: unknown key %s= in a SwitchName= line (want Switches=, Nodes= or LinkSpeed=)", pos, ErrSyntax, keys[j])
				}
			}
			conf.switches = append(conf.switches, sw)
		case "blockname", "blocksizes":
			if firstTree != "" {
				return slurmConf{}, mixed("SwitchName", firstTree)
			}
			if firstBlock == "" {
				firstBlock = pos
			}
			if strings.EqualFold(keys[0], "blocksizes") {
				if len(keys) > 1 {
					return slurmConf{}, fmt.Errorf("%s: %w: unknown key %s= in a BlockSizes= line", pos, ErrSyntax, keys[1])
				}
				if conf.sizes.set {
					return slurmConf{}, fmt.Errorf("%s: %w: BlockSizes= given twice (first at %s)", pos, ErrSyntax, conf.sizes.pos)
				}
				sizes, err := parseSlurmBlockSizes(values[0], pos)
				if err != nil {
					return slurmConf{}, err
				}
				conf.sizes = slurmBlockSizes{sizes: sizes, pos: pos, set: true}
				continue
			}
			b := slurmBlock{name: values[0], pos: pos}
			for j := 1; j < len(keys); j++ {
				if !strings.EqualFold(keys[j], "nodes") {
					return slurmConf{}, fmt.Errorf("%s: %w: unknown key %s= in a BlockName= line (want Nodes=)", pos, ErrSyntax, keys[j])
				}
				b.nodes, b.nodesPos, b.hasNodes = values[j], pos, true
			}
			conf.blocks = append(conf.blocks, b)
		default:
			return slurmConf{}, fmt.Errorf("%s: %w: unknown key %s=; a line starts with SwitchName=, BlockName= or BlockSizes=", pos, ErrSyntax, keys[0])
		}
	}
	return conf, nil
}

// parseSlurmBlockSizes parses "18,36,72".
func parseSlurmBlockSizes(v, pos string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %w: block size %q in BlockSizes=%s is not a positive number", pos, ErrSyntax, f, v)
		}
		sizes = append(sizes, int(n))
	}
	return sizes, nil
}

// checkSlurmName rejects switch and block names that cannot be written in
// a hostlist (Slurm refers to switches and aggregate blocks by hostlists).
func checkSlurmName(kind, name, pos string) error {
	if name == "" {
		return fmt.Errorf("%s: %w: %s with an empty name", pos, ErrSyntax, kind)
	}
	if strings.ContainsAny(name, ",[]") || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("%s: %w: %s name %q contains ',', '[', ']', white space or a control character", pos, ErrSyntax, kind, name)
	}
	return nil
}

// expandSlurmList expands a hostlist of a definition, naming where it is.
func expandSlurmList(pos, what, expr string) ([]string, error) {
	names, err := hostlist.Expand(expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w: %w", pos, what, ErrSyntax, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: %w: %s is empty", pos, ErrSyntax, what)
	}
	return names, nil
}

// slurmTreeLevels names the levels of a tree of depth d, top to bottom.
func slurmTreeLevels(d int) []string {
	switch d {
	case 1:
		return []string{"leaf"}
	case 2:
		return []string{"spine", "leaf"}
	case 3:
		return []string{"core", "spine", "leaf"}
	}
	levels := []string{"core"}
	for k := 1; k <= d-2; k++ {
		levels = append(levels, fmt.Sprintf("spine%d", k))
	}
	return append(levels, "leaf")
}

// buildSlurmTree checks a switch tree and lays its nodes out by level.
func buildSlurmTree(defs []slurmSwitch) (slurmLayout, error) {
	n := len(defs)
	index := make(map[string]int, n)
	for i, d := range defs {
		if err := checkSlurmName("switch", d.name, d.pos); err != nil {
			return slurmLayout{}, err
		}
		if j, dup := index[d.name]; dup {
			return slurmLayout{}, fmt.Errorf("%s: %w: switch %q defined twice (first at %s)", d.pos, ErrDuplicate, d.name, defs[j].pos)
		}
		index[d.name] = i
		switch {
		case d.hasNodes && d.hasSwitches:
			return slurmLayout{}, fmt.Errorf("%s: %w: switch %q has both nodes and child switches", d.pos, ErrInvalidSpec, d.name)
		case !d.hasNodes && !d.hasSwitches:
			return slurmLayout{}, fmt.Errorf("%s: %w: switch %q has neither nodes nor child switches", d.pos, ErrInvalidSpec, d.name)
		}
	}

	// Link nodes and switches to their parents.
	parent := make([]int, n)
	for i := range parent {
		parent[i] = -1
	}
	children := make([][]int, n)
	leafNodes := make([][]string, n)
	nodeOwner := make(map[string]int)
	for i, d := range defs {
		if d.hasNodes {
			names, err := expandSlurmList(d.nodesPos, fmt.Sprintf("switch %q nodes", d.name), d.nodes)
			if err != nil {
				return slurmLayout{}, err
			}
			for _, name := range names {
				if j, ok := nodeOwner[name]; ok {
					if j == i {
						return slurmLayout{}, fmt.Errorf("%s: %w: node %q listed twice under switch %q", d.nodesPos, ErrDuplicate, name, d.name)
					}
					return slurmLayout{}, fmt.Errorf("%s: %w: node %q is under switch %q (%s) and switch %q (%s)",
						d.nodesPos, ErrNotTree, name, defs[j].name, defs[j].nodesPos, d.name, d.nodesPos)
				}
				nodeOwner[name] = i
			}
			leafNodes[i] = names
			continue
		}
		names, err := expandSlurmList(d.switchesPos, fmt.Sprintf("switch %q child switches", d.name), d.switches)
		if err != nil {
			return slurmLayout{}, err
		}
		for _, name := range names {
			c, ok := index[name]
			if !ok {
				return slurmLayout{}, fmt.Errorf("%s: %w: switch %q lists switch %q, which is not defined", d.switchesPos, ErrInvalidSpec, d.name, name)
			}
			if p := parent[c]; p >= 0 {
				if p == i {
					return slurmLayout{}, fmt.Errorf("%s: %w: switch %q lists switch %q twice", d.switchesPos, ErrDuplicate, d.name, name)
				}
				return slurmLayout{}, fmt.Errorf("%s: %w: switch %q is under switch %q (%s) and switch %q (%s)",
					d.switchesPos, ErrNotTree, name, defs[p].name, defs[p].switchesPos, d.name, d.switchesPos)
			}
			parent[c] = i
			children[i] = append(children[i], c)
		}
	}

	// Every switch has at most one parent, so a cycle is a loop of parent
	// links; walk up from every switch.
	state := make([]int8, n) // 0 unseen, 1 on the current walk, 2 done
	for i := range defs {
		var walk []int
		j := i
		for j >= 0 && state[j] == 0 {
			state[j] = 1
			walk = append(walk, j)
			j = parent[j]
		}
		if j >= 0 && state[j] == 1 {
			// Parent first, from the switch defined first.
			cycle := walk[slices.Index(walk, j):]
			slices.Reverse(cycle)
			k := slices.Index(cycle, slices.Min(cycle))
			cycle = append(cycle[k:], cycle[:k]...)
			names := make([]string, 0, len(cycle)+1)
			for _, c := range cycle {
				names = append(names, defs[c].name)
			}
			names = append(names, names[0])
			first := defs[cycle[0]]
			return slurmLayout{}, fmt.Errorf("%s: %w: switch cycle %s (each lists the next as a child switch)",
				first.switchesPos, ErrNotTree, strings.Join(names, " -> "))
		}
		for _, w := range walk {
			state[w] = 2
		}
	}

	// Heights: 0 for switches with nodes, else one more than the highest
	// child. Children before parents: reverse of a depth-first preorder.
	var roots []int
	for i := range defs {
		if parent[i] < 0 {
			roots = append(roots, i)
		}
	}
	var order []int
	stack := slices.Clone(roots)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		order = append(order, i)
		stack = append(stack, children[i]...)
	}
	height := make([]int, n)
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		for _, c := range children[i] {
			height[i] = max(height[i], height[c]+1)
		}
	}
	depth := 0
	for _, r := range roots {
		if height[r]+1 > MaxLevels {
			return slurmLayout{}, fmt.Errorf("%s: %w: switch %q heads a tree of %d levels, at most %d", defs[r].pos, ErrInvalidSpec, defs[r].name, height[r]+1, MaxLevels)
		}
		depth = max(depth, height[r]+1)
	}

	// Lay nodes out depth first. At level l a node's domain is the highest
	// switch on its path whose own level is l or below.
	lay := slurmLayout{levels: slurmTreeLevels(depth)}
	level := func(i int) int { return depth - 1 - height[i] }
	var chain []int
	var visit func(i int)
	visit = func(i int) {
		chain = append(chain, i)
		for _, name := range leafNodes[i] {
			path := make([]string, depth)
			k := 0
			for l := range path {
				for level(chain[k]) < l {
					k++
				}
				path[l] = defs[chain[k]].name
			}
			lay.add(name, defs[i].nodesPos, path)
		}
		for _, c := range children[i] {
			visit(c)
		}
		chain = chain[:len(chain)-1]
	}
	for _, r := range roots {
		visit(r)
	}
	return lay, nil
}

// buildSlurmBlocks checks a block topology and lays its nodes out: base
// blocks at the lowest level, one aggregate level per further block size.
// where locates errors about the file as a whole.
func buildSlurmBlocks(defs []slurmBlock, sizes slurmBlockSizes, where string) (slurmLayout, error) {
	if len(defs) == 0 {
		if sizes.set {
			where = sizes.pos
		}
		return slurmLayout{}, fmt.Errorf("%s: %w: no blocks", where, ErrInvalidSpec)
	}
	index := make(map[string]int, len(defs))
	nodeOwner := make(map[string]int)
	blockNodes := make([][]string, len(defs))
	for i, d := range defs {
		if err := checkSlurmName("block", d.name, d.pos); err != nil {
			return slurmLayout{}, err
		}
		if j, dup := index[d.name]; dup {
			return slurmLayout{}, fmt.Errorf("%s: %w: block %q defined twice (first at %s)", d.pos, ErrDuplicate, d.name, defs[j].pos)
		}
		index[d.name] = i
		if !d.hasNodes {
			return slurmLayout{}, fmt.Errorf("%s: %w: block %q has no nodes", d.pos, ErrInvalidSpec, d.name)
		}
		names, err := expandSlurmList(d.nodesPos, fmt.Sprintf("block %q nodes", d.name), d.nodes)
		if err != nil {
			return slurmLayout{}, err
		}
		for _, name := range names {
			if j, ok := nodeOwner[name]; ok {
				if j == i {
					return slurmLayout{}, fmt.Errorf("%s: %w: node %q listed twice in block %q", d.nodesPos, ErrDuplicate, name, d.name)
				}
				return slurmLayout{}, fmt.Errorf("%s: %w: node %q is in block %q (%s) and block %q (%s)",
					d.nodesPos, ErrNotTree, name, defs[j].name, defs[j].nodesPos, d.name, d.nodesPos)
			}
			nodeOwner[name] = i
		}
		blockNodes[i] = names
	}

	// Block sizes: the base size, then base times increasing powers of two.
	base := len(blockNodes[0])
	var factors, aggSizes []int
	if sizes.set {
		if len(sizes.sizes) == 0 {
			return slurmLayout{}, fmt.Errorf("%s: %w: empty block size list", sizes.pos, ErrInvalidSpec)
		}
		base = sizes.sizes[0]
		prev, spanned := base, 1 // spanned: blocks per domain of the highest level so far
		for _, s := range sizes.sizes[1:] {
			if s <= prev || s%base != 0 || !isPowerOfTwo(s/base) {
				return slurmLayout{}, fmt.Errorf("%s: %w: block size %d is not the base size %d times a power of two larger than the previous size %d",
					sizes.pos, ErrInvalidSpec, s, base, prev)
			}
			prev = s
			if spanned >= len(defs) {
				continue // a lower level already spans every block
			}
			spanned = s / base
			factors = append(factors, spanned)
			aggSizes = append(aggSizes, s)
		}
	}
	for i, d := range defs {
		if len(blockNodes[i]) < base {
			return slurmLayout{}, fmt.Errorf("%s: %w: block %q has %d nodes, fewer than the base block size %d", d.pos, ErrInvalidSpec, d.name, len(blockNodes[i]), base)
		}
	}

	// Levels top to bottom: the largest aggregate first, the base last.
	depth := len(factors) + 1
	if depth > MaxLevels {
		return slurmLayout{}, fmt.Errorf("%s: %w: %d block levels, at most %d", sizes.pos, ErrInvalidSpec, depth, MaxLevels)
	}
	lay := slurmLayout{levels: make([]string, depth)}
	for j, s := range aggSizes {
		lay.levels[depth-2-j] = fmt.Sprintf("block%d", s)
	}
	lay.levels[depth-1] = "block"
	aggNames := make([][]string, len(factors)) // per aggregate level, per run
	for j, f := range factors {
		for first := 0; first < len(defs); first += f {
			end := min(first+f, len(defs))
			members := make([]string, 0, end-first)
			for _, d := range defs[first:end] {
				members = append(members, d.name)
			}
			aggNames[j] = append(aggNames[j], CompressHostlist(members))
		}
	}
	for i, d := range defs {
		for _, name := range blockNodes[i] {
			path := make([]string, depth)
			for j, f := range factors {
				path[depth-2-j] = aggNames[j][i/f]
			}
			path[depth-1] = d.name
			lay.add(name, d.nodesPos, path)
		}
	}
	return lay, nil
}

func isPowerOfTwo(n int) bool { return n > 0 && n&(n-1) == 0 }
