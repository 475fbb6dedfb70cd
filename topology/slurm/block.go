package slurm

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/internal/defects"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// buildBlocks checks a block topology, collecting every defect, and lays
// its nodes out: base blocks at the lowest level, one aggregate level per
// further block size. where locates defects about the topology as a whole.
// The layout is valid only when col holds no defect afterwards.
func buildBlocks(defs []blockDef, sizes blockSizes, where pos, known *nodeList, col *defects.Collector) layout {
	if len(defs) == 0 {
		if sizes.set {
			where = sizes.at
		}
		col.Addf(where.file, where.line, topology.ErrInvalidSpec, "no blocks")
		return layout{}
	}
	blockNodes, listed := claimBlockNodes(defs, known, col)
	base := listed[0]
	factors, aggSizes := blockFactors(sizes, len(defs), col)
	if sizes.set && len(sizes.sizes) > 0 {
		base = sizes.sizes[0]
	}
	for i, d := range defs {
		if !sizes.bad && listed[i] > 0 && listed[i] < base {
			col.Addf(d.at.file, d.at.line, topology.ErrInvalidSpec, "block %q has %d nodes, fewer than the base block size %d", d.name, listed[i], base)
		}
	}
	depth := len(factors) + 1
	if depth > topology.MaxLevels {
		col.Addf(sizes.at.file, sizes.at.line, topology.ErrInvalidSpec, "%d block levels, at most %d", depth, topology.MaxLevels)
	}
	if col.Len() > 0 {
		return layout{}
	}
	return layBlocks(defs, blockNodes, factors, aggSizes)
}

// claimBlockNodes checks every block and expands its nodes; it returns the
// nodes each block keeps and how many it lists.
func claimBlockNodes(defs []blockDef, known *nodeList, col *defects.Collector) ([][]string, []int) {
	index := make(map[string]int, len(defs))
	owners := nodeOwners{owner: make(map[string]int32), known: known, col: col, kind: "block"}
	ownerAt := func(j int) (string, pos) { return defs[j].name, defs[j].nodesAt }
	blockNodes := make([][]string, len(defs))
	listed := make([]int, len(defs))
	for i, d := range defs {
		checkName("block", d.name, d.at, col)
		if j, dup := index[d.name]; dup {
			col.Addf(d.at.file, d.at.line, topology.ErrDuplicate, "block %q defined twice (first at %s)", d.name, defs[j].at)
		} else {
			index[d.name] = i
		}
		if !d.hasNodes {
			col.Addf(d.at.file, d.at.line, topology.ErrInvalidSpec, "block %q has no nodes", d.name)
			continue
		}
		names := expandList(d.nodesAt, fmt.Sprintf("block %q nodes", d.name), d.nodes, col)
		listed[i] = len(names)
		blockNodes[i] = owners.claim(i, d.name, d.nodesAt, names, ownerAt)
	}
	return blockNodes, listed
}

// blockFactors checks the block sizes: the base size, then the base times
// increasing powers of two. It returns, per aggregate level kept, the
// number of base blocks it joins and its size in nodes. Sizes past the
// first that spans every block are dropped, as in Slurm.
func blockFactors(sizes blockSizes, blocks int, col *defects.Collector) (factors, aggSizes []int) {
	if !sizes.set || sizes.bad {
		return nil, nil
	}
	if len(sizes.sizes) == 0 {
		col.Addf(sizes.at.file, sizes.at.line, topology.ErrInvalidSpec, "empty block size list")
		return nil, nil
	}
	base := sizes.sizes[0]
	prev, spanned := base, 1 // spanned: blocks per domain of the highest level so far
	for _, s := range sizes.sizes[1:] {
		if s <= prev || s%base != 0 || !isPowerOfTwo(s/base) {
			col.Addf(sizes.at.file, sizes.at.line, topology.ErrInvalidSpec,
				"block size %d is not the base size %d times a power of two larger than the previous size %d", s, base, prev)
			continue
		}
		prev = s
		if spanned >= blocks {
			continue // a lower level already spans every block
		}
		spanned = s / base
		factors = append(factors, spanned)
		aggSizes = append(aggSizes, s)
	}
	return factors, aggSizes
}

func isPowerOfTwo(n int) bool { return n > 0 && n&(n-1) == 0 }

// layBlocks places the nodes in file order. Levels run top to bottom: the
// largest aggregate first ("block<size>"), the base blocks last ("block").
// An aggregate joins an aligned run of consecutive blocks and is named
// after them as a hostlist.
func layBlocks(defs []blockDef, blockNodes [][]string, factors, aggSizes []int) layout {
	depth := len(factors) + 1
	lay := layout{levels: make([]string, depth)}
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
			aggNames[j] = append(aggNames[j], hostlist.Compress(members))
		}
	}
	for i, d := range defs {
		path := make([]string, depth)
		for j, f := range factors {
			path[depth-2-j] = aggNames[j][i/f]
		}
		path[depth-1] = d.name
		g := lay.addGroup(path, d.nodesAt.String())
		for _, name := range blockNodes[i] {
			lay.add(name, g)
		}
	}
	return lay
}
