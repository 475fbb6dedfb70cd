package slurm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/phalanx-sched/phalanx/internal/defects"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// treeLevels names the levels of a tree of depth d, top to bottom.
func treeLevels(d int) []string {
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

// treeBuilder checks a switch tree, collecting every defect, and lays its
// nodes out by level.
type treeBuilder struct {
	defs     []switchDef
	col      *defects.Collector // errors
	warn     *defects.Collector // warnings
	known    *nodeList
	index    map[string]int // switch name -> its first definition
	dropped  []bool         // definitions left out (duplicates)
	leaf     [][]string     // nodes of each leaf switch
	parent   []int
	children [][]int
	owners   nodeOwners
	empty    []bool // switches with no node under them
	height   []int
}

// buildTree checks defs and lays the tree out; the layout is valid only
// when col holds no defect afterwards.
func buildTree(defs []switchDef, known *nodeList, col, warn *defects.Collector) layout {
	n := len(defs)
	b := &treeBuilder{
		defs: defs, col: col, warn: warn, known: known,
		index: make(map[string]int, n), dropped: make([]bool, n), leaf: make([][]string, n),
		parent: make([]int, n), children: make([][]int, n), empty: make([]bool, n), height: make([]int, n),
		owners: nodeOwners{owner: make(map[string]int32), known: known, col: col, kind: "switch"},
	}
	for i := range b.parent {
		b.parent[i] = -1
	}
	b.register()
	b.claimNodes()
	b.link()
	b.breakCycles()
	b.markEmpty()
	depth := b.heights()
	return b.lay(depth)
}

// register indexes the switches by name and checks each definition.
func (b *treeBuilder) register() {
	for i, d := range b.defs {
		checkName("switch", d.name, d.at, b.col)
		if j, dup := b.index[d.name]; dup {
			b.col.Addf(d.at.file, d.at.line, topology.ErrDuplicate, "switch %q defined twice (first at %s)", d.name, b.defs[j].at)
			b.dropped[i] = true
			continue
		}
		b.index[d.name] = i
		if d.hasNodes && d.hasSwitches {
			b.col.Addf(d.at.file, d.at.line, topology.ErrInvalidSpec, "switch %q has both nodes and child switches", d.name)
			b.defs[i].hasSwitches = false // checked as a leaf from here on
		}
	}
}

// claimNodes expands the node lists of the leaf switches.
func (b *treeBuilder) claimNodes() {
	ownerAt := func(j int) (string, pos) { return b.defs[j].name, b.defs[j].nodesAt }
	for i, d := range b.defs {
		if b.dropped[i] || !d.hasNodes {
			continue
		}
		names := expandList(d.nodesAt, fmt.Sprintf("switch %q nodes", d.name), d.nodes, b.col)
		b.leaf[i] = b.owners.claim(i, d.name, d.nodesAt, names, ownerAt)
	}
}

// link connects switches to their children.
func (b *treeBuilder) link() {
	for i, d := range b.defs {
		if b.dropped[i] || !d.hasSwitches {
			continue
		}
		names := expandList(d.switchesAt, fmt.Sprintf("switch %q child switches", d.name), d.switches, b.col)
		var undefined, twice []string
		for _, name := range names {
			c, ok := b.index[name]
			switch {
			case !ok:
				undefined = append(undefined, name)
			case b.parent[c] == i:
				twice = append(twice, name)
			case b.parent[c] >= 0:
				p := b.parent[c]
				b.col.Addf(d.switchesAt.file, d.switchesAt.line, topology.ErrNotTree, "switch %q is under switch %q (%s) and switch %q (%s)",
					name, b.defs[p].name, b.defs[p].switchesAt, d.name, d.switchesAt)
			default:
				b.parent[c] = i
				b.children[i] = append(b.children[i], c)
			}
		}
		if len(undefined) > 0 {
			b.col.Addf(d.switchesAt.file, d.switchesAt.line, topology.ErrInvalidSpec, "switch %q lists switch(es) %s, which are not defined",
				d.name, hostlist.Compress(undefined))
		}
		if len(twice) > 0 {
			b.col.Addf(d.switchesAt.file, d.switchesAt.line, topology.ErrDuplicate, "switch %q lists switch(es) %s twice", d.name, hostlist.Compress(twice))
		}
	}
}

// breakCycles reports every cycle of parent links once and cuts it, so
// that the checks after it see a forest.
func (b *treeBuilder) breakCycles() {
	state := make([]int8, len(b.defs)) // 0 unseen, 1 on the current walk, 2 done
	for i := range b.defs {
		var walk []int
		j := i
		for j >= 0 && state[j] == 0 {
			state[j] = 1
			walk = append(walk, j)
			j = b.parent[j]
		}
		if j >= 0 && state[j] == 1 {
			b.reportCycle(walk[slices.Index(walk, j):])
		}
		for _, w := range walk {
			state[w] = 2
		}
	}
}

// reportCycle reports the cycle of switches in walk (each the child of the
// next) from the switch defined first, parent first, and cuts it there.
func (b *treeBuilder) reportCycle(walk []int) {
	cycle := slices.Clone(walk)
	slices.Reverse(cycle)
	k := slices.Index(cycle, slices.Min(cycle))
	cycle = append(cycle[k:], cycle[:k]...)
	names := make([]string, 0, len(cycle)+1)
	for _, c := range cycle {
		names = append(names, b.defs[c].name)
	}
	names = append(names, names[0])
	first := b.defs[cycle[0]]
	b.col.Addf(first.switchesAt.file, first.switchesAt.line, topology.ErrNotTree, "switch cycle %s (each lists the next as a child switch)", strings.Join(names, " -> "))
	// Cut the link into the first switch: it becomes a root.
	head := cycle[0]
	if p := b.parent[head]; p >= 0 {
		b.children[p] = slices.DeleteFunc(b.children[p], func(c int) bool { return c == head })
		b.parent[head] = -1
	}
}

// order returns the switches children first (the reverse of a depth-first
// preorder from the roots).
func (b *treeBuilder) order() []int {
	var pre []int
	var stack []int
	for i := len(b.defs) - 1; i >= 0; i-- {
		if !b.dropped[i] && b.parent[i] < 0 {
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		pre = append(pre, i)
		stack = append(stack, b.children[i]...)
	}
	slices.Reverse(pre)
	return pre
}

// markEmpty finds the switches with no node under them and warns about
// each: Slurm accepts them, a Cluster has no empty domains.
func (b *treeBuilder) markEmpty() {
	for _, i := range b.order() {
		b.empty[i] = len(b.leaf[i]) == 0
		for _, c := range b.children[i] {
			b.empty[i] = b.empty[i] && b.empty[c]
		}
	}
	for i, d := range b.defs {
		if b.dropped[i] || !b.empty[i] {
			continue
		}
		what := "has neither nodes nor child switches"
		switch {
		case d.hasNodes:
			what = "keeps no node"
		case d.hasSwitches:
			what = "has no node under its child switches"
		}
		b.warn.Addf(d.at.file, d.at.line, topology.ErrEmptyDomain, "switch %q %s; it is left out", d.name, what)
	}
}

// heights sets each switch's height (0 for a switch with nodes, else one
// more than its highest non-empty child), reports trees deeper than
// topology.MaxLevels and returns the depth of the deepest tree.
func (b *treeBuilder) heights() int {
	for _, i := range b.order() {
		for _, c := range b.children[i] {
			if !b.empty[c] {
				b.height[i] = max(b.height[i], b.height[c]+1)
			}
		}
	}
	depth := 0
	for i, d := range b.defs {
		if b.dropped[i] || b.parent[i] >= 0 || b.empty[i] {
			continue
		}
		if h := b.height[i] + 1; h > topology.MaxLevels {
			b.col.Addf(d.at.file, d.at.line, topology.ErrInvalidSpec, "switch %q heads a tree of %d levels, at most %d", d.name, h, topology.MaxLevels)
		} else {
			depth = max(depth, h)
		}
	}
	return depth
}

// lay places the nodes depth first from the roots, roots in file order and
// children in the order listed. At level l a node's domain is the highest
// switch on its path whose own level is l or below, so a switch stands for
// itself at the levels missing above it.
func (b *treeBuilder) lay(depth int) layout {
	lay := layout{levels: treeLevels(depth)}
	if b.col.Len() > 0 || depth == 0 {
		return lay
	}
	level := func(i int) int { return depth - 1 - b.height[i] }
	var chain []int
	var visit func(i int)
	visit = func(i int) {
		chain = append(chain, i)
		if len(b.leaf[i]) > 0 {
			path := make([]string, depth)
			k := 0
			for l := range path {
				for level(chain[k]) < l {
					k++
				}
				path[l] = b.defs[chain[k]].name
			}
			g := lay.addGroup(path, b.defs[i].nodesAt.String())
			for _, name := range b.leaf[i] {
				lay.add(name, g)
			}
		}
		for _, c := range b.children[i] {
			if !b.empty[c] {
				visit(c)
			}
		}
		chain = chain[:len(chain)-1]
	}
	for i := range b.defs {
		if !b.dropped[i] && b.parent[i] < 0 && !b.empty[i] {
			visit(i)
		}
	}
	return lay
}
