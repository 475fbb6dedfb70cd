package fairshare

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Fair Tree ranking.
//
// Every leaf gets a rank from N (the number of leaves) down to 1 by a
// depth-first walk: the root's children are sorted by level fairshare,
// highest first; a leaf takes the next rank; an account is descended into
// before its next sibling is looked at. The factor is rank/N.
//
// Ties (equal level fairshare up to rounding: each within a relative
// tieTolerance of the one before it in the sorted group) are handled as
// Slurm's Fair Tree documentation describes; Slurm's code differs in not
// merging tied accounts. Equal charges arriving in another order, or
// decayed in other steps (Tree.Decay), round apart in the last bits; a
// tie compared exactly turned that into a whole rank. Within a sibling
// group sorted by level fairshare, a run of tied siblings is treated as
// one:
//
//  1. Tied leaves share a rank, the one the first of them would get; the
//     ranks after the run continue as if there were no tie (competition
//     ranking: 5, 5, 3).
//  2. Tied accounts are merged: their children are pooled into one group,
//     sorted together (each by its level fairshare within its own parent)
//     and walked as one.
//  3. When leaves and accounts tie, the leaves come first and the first
//     run of the pooled children shares the leaves' rank, so the best
//     users of the tied accounts rank with the tied leaves.
//
// The common case is accounts that have no usage: their level fairshare is
// +Inf, they tie, and their unused users all share one rank instead of
// being ordered by name. Names only fix the (factor-neutral) visiting
// order inside a run.

// rankFairTree fills rank and factor for every leaf.
func (s *View) rankFairTree() {
	n := s.st.leaves
	s.nextR = int32(n)
	k := 0
	for c := s.st.nodes[0].firstChild; c != none; c = s.st.nodes[c].nextSibling {
		s.work[k] = c
		k++
	}
	s.rankGroup(0, k, 0)
	for i := range s.st.nodes {
		if s.rank[i] > 0 {
			s.factor[i] = float64(s.rank[i]) / float64(n)
		}
	}
}

// rankGroup ranks the sibling group work[lo:hi]. Pooled groups below it
// are stacked from work[hi:]; the groups on one path from the root are
// disjoint sets of accounts, so work never needs more than one slot per
// account. A positive inherit is the rank that the group's first tied run
// shares (rule 3).
func (s *View) rankGroup(lo, hi int, inherit int32) {
	g := s.work[lo:hi]
	slices.SortFunc(g, s.cmpSiblings)
	for i := 0; i < len(g); {
		j := i + 1
		for j < len(g) && tied(s.level[g[j-1]], s.level[g[j]]) {
			j++
		}
		if j-i > 1 {
			// Leaves first, then by name, within the run.
			slices.SortFunc(g[i:j], s.cmpInRun)
		}
		rank := s.nextR
		shared := i == 0 && inherit > 0
		if shared {
			rank = inherit
		}
		// Leaves sort first within a run (rule 1).
		k := i
		for ; k < j && s.st.isLeaf(g[k]); k++ {
			s.rank[g[k]] = rank
			s.nextR--
		}
		shared = shared || k > i
		// Accounts of the run: pool their children (rule 2).
		top := hi
		for _, a := range g[k:j] {
			for c := s.st.nodes[a].firstChild; c != none; c = s.st.nodes[c].nextSibling {
				s.work[top] = c
				top++
			}
		}
		if top > hi {
			inh := int32(0)
			if shared {
				inh = rank
			}
			s.rankGroup(hi, top, inh)
		}
		i = j
	}
}

// tieTolerance is the relative difference within which two level
// fairshares tie: far above the rounding of the charges and decays that
// make them, far below any difference of usage that means something.
const tieTolerance = 1e-9

// tied reports whether level fairshares a and b tie (equal, both +Inf
// included, or within tieTolerance of each other).
func tied(a, b float64) bool {
	if a == b {
		return true
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false // one infinite, the other not (or of the other sign)
	}
	return math.Abs(a-b) <= tieTolerance*max(math.Abs(a), math.Abs(b))
}

// cmpSiblings orders a sibling group: level fairshare descending, leaves
// before accounts, then by name. (rankGroup then orders each run of tied
// levels by cmpInRun.)
func (s *View) cmpSiblings(a, b int32) int {
	if la, lb := s.level[a], s.level[b]; la != lb {
		return cmp.Compare(lb, la)
	}
	return s.cmpInRun(a, b)
}

// cmpInRun orders a run of tied siblings: leaves before accounts, then by
// name.
func (s *View) cmpInRun(a, b int32) int {
	if al, bl := s.st.isLeaf(a), s.st.isLeaf(b); al != bl {
		if al {
			return -1
		}
		return 1
	}
	return strings.Compare(s.st.nodes[a].name, s.st.nodes[b].name)
}
