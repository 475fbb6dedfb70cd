package fairshare

import (
	"fmt"
	"iter"
	"math"
	"strings"
	"time"
)

// View holds every account's shares, usage and fair-share factor at
// one instant, computed once in O(accounts) (plus a sort per sibling group
// under Fair Tree). Rank jobs against it with Prioritize. Snapshots come
// from Tree.View; a zero View is only good as its into argument.
//
// A View is immutable once returned: any number of goroutines may use
// it at once, and later changes to its Tree (charges, new accounts, a new
// Config) do not show in it. The only exception is passing it back to
// Tree.View for reuse, which overwrites it.
type View struct {
	st     *structure
	cfg    Config
	now    int64
	nowT   time.Time
	usage  []float64 // decayed usage of the subtree
	sum    []float64 // sum of the children's raw shares (per parent)
	norm   []float64 // normalised shares: fraction of the machine
	eff    []float64 // classic effective usage
	level  []float64 // Fair Tree level fairshare
	factor []float64 // fair-share factor of the active algorithm
	sc     scorer    // the configuration's constants for priorities
	rank   []int32   // Fair Tree rank (leaves), N for the first
	work   []int32   // Fair Tree scratch: sibling groups, stacked
	nextR  int32     // Fair Tree: rank the next untied leaf gets
}

// View computes the fair-share state of every account at now. If into
// is not nil its storage is reused and it is returned, so a scheduler that
// keeps one View recomputes without allocating; otherwise a new one is
// allocated. Errors wrap ErrBadTime or ErrTimeTravel.
func (t *Tree) View(now time.Time, into *View) (*View, error) {
	ns, err := t.checkRead(now)
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	s := into
	if s == nil {
		s = new(View)
	}
	t.shared.Store(true)
	s.st, s.cfg, s.now, s.nowT = t.st, t.cfg, ns, now
	s.sc = newScorer(&s.cfg)
	n := len(t.st.nodes)
	s.usage = resize(s.usage, n)
	s.sum = resize(s.sum, n)
	s.norm = resize(s.norm, n)
	s.eff = resize(s.eff, n)
	s.level = resize(s.level, n)
	s.factor = resize(s.factor, n)
	s.rank = resize(s.rank, n)
	s.work = resize(s.work, n)
	s.compute(t.own)
	return s, nil
}

func resize[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// compute fills the view from the tree's usage records. Index order is
// parents first, so one backward pass sums usage up the tree and one
// forward pass carries shares and effective usage down.
func (s *View) compute(own []usageRec) {
	nodes := s.st.nodes
	hl := s.cfg.HalfLife
	for i := range nodes {
		s.usage[i] = own[i].valueAt(s.now, hl)
	}
	for i := len(nodes) - 1; i > 0; i-- {
		p := nodes[i].parent
		s.usage[p] += s.usage[i]
		s.sum[p] += nodes[i].shares
	}
	total := s.usage[0]
	d := s.cfg.dampening()
	s.norm[0], s.eff[0] = 1, 1
	for i := 1; i < len(nodes); i++ {
		nd := &nodes[i]
		p := nd.parent
		// Shares relative to the siblings' (Fair Tree's S), and of the
		// whole machine (classic's S): the product down the tree.
		levelS := 0.0
		if s.sum[p] > 0 {
			levelS = nd.shares / s.sum[p]
		}
		s.norm[i] = s.norm[p] * levelS
		// Classic: normalised usage U, then effective usage
		// UE = U + (UE_parent - U) * shares/siblings' shares, except just
		// below the root, where UE = U.
		u := 0.0
		if total > 0 {
			u = s.usage[i] / total
		}
		if p == 0 {
			s.eff[i] = u
		} else {
			s.eff[i] = u + (s.eff[p]-u)*levelS
		}
		// Fair Tree: level fairshare LF = S/U with U the usage relative
		// to the parent's; no shares gives 0, no usage (with shares) +Inf.
		switch {
		case levelS == 0:
			s.level[i] = 0
		case s.usage[p] == 0 || s.usage[i] == 0:
			s.level[i] = math.Inf(1)
		default:
			s.level[i] = levelS / (s.usage[i] / s.usage[p])
		}
		if s.cfg.Algorithm == Classic {
			if s.norm[i] > 0 {
				s.factor[i] = math.Exp2(-s.eff[i] / s.norm[i] / d)
			} else {
				s.factor[i] = 0
			}
		}
	}
	if s.cfg.Algorithm == FairTree {
		s.rankFairTree()
	}
}

// Time returns the instant the view was taken at.
func (s *View) Time() time.Time { return s.nowT }

// Config returns the configuration the view was computed with.
func (s *View) Config() Config { return s.cfg }

// Factor returns the fair-share factor of a leaf account, in [0, 1].
// Errors wrap ErrUnknownAccount or ErrNotLeaf.
func (s *View) Factor(account string) (float64, error) {
	i, ok := s.st.index[account]
	if !ok {
		return 0, fmt.Errorf("%w: factor of %q", ErrUnknownAccount, account)
	}
	if !s.st.isLeaf(i) {
		return 0, fmt.Errorf("%w: factor of %q, which has sub-accounts", ErrNotLeaf, account)
	}
	return s.factor[i], nil
}

// AccountInfo is one account's row of a View, the figures Slurm's
// sshare shows.
type AccountInfo struct {
	// Name and Parent name the account and its parent (RootName for the
	// root's children; "" for the root itself).
	Name, Parent string
	// Depth is 0 for the root, 1 for its children, and so on.
	Depth int
	// Leaf reports whether the account may take jobs.
	Leaf bool
	// RawShares are the shares as configured.
	RawShares float64
	// LevelShares are the raw shares over the siblings' raw shares
	// (Fair Tree's S).
	LevelShares float64
	// NormShares is the fraction of the machine: the product of
	// LevelShares from the root down (classic's S).
	NormShares float64
	// Usage is the decayed usage of the account and its descendants in
	// GPU-seconds.
	Usage float64
	// NormUsage is Usage over the machine total (classic's U).
	NormUsage float64
	// LevelUsage is Usage over the parent's Usage (Fair Tree's U).
	LevelUsage float64
	// EffectiveUsage is classic's effective usage UE.
	EffectiveUsage float64
	// LevelFS is Fair Tree's level fairshare LevelShares/LevelUsage:
	// above 1 under-served, below 1 over-served, +Inf unused.
	LevelFS float64
	// Rank is the leaf's Fair Tree rank: N (the number of leaves) for the
	// first, 1 for the last, equal for ties. 0 for accounts and under
	// Classic.
	Rank int
	// Factor is the fair-share factor: for leaves, the one jobs get; for
	// other accounts, the classic formula's value under Classic and 0
	// under Fair Tree. The root's row has shares and usage only: its
	// LevelFS and Factor are 0.
	Factor float64
}

// info builds the row of node i at the given depth.
func (s *View) info(i int32, depth int) AccountInfo {
	nd := &s.st.nodes[i]
	a := AccountInfo{
		Name: nd.name, Depth: depth, Leaf: s.st.isLeaf(i),
		RawShares: nd.shares, NormShares: s.norm[i], Usage: s.usage[i],
		EffectiveUsage: s.eff[i], LevelFS: s.level[i], Rank: int(s.rank[i]),
		Factor: s.factor[i],
	}
	if s.usage[0] > 0 {
		a.NormUsage = s.usage[i] / s.usage[0]
	}
	if i == 0 {
		// The root has all shares and all usage, and no factor.
		a.LevelShares, a.EffectiveUsage, a.LevelFS, a.Factor = 1, a.NormUsage, 0, 0
		a.LevelUsage = a.NormUsage
		return a
	}
	p := nd.parent
	a.Parent = s.st.nodes[p].name
	if s.sum[p] > 0 {
		a.LevelShares = nd.shares / s.sum[p]
	}
	if s.usage[p] > 0 {
		a.LevelUsage = s.usage[i] / s.usage[p]
	}
	return a
}

// Account returns the row of one account (RootName for the root).
func (s *View) Account(name string) (AccountInfo, bool) {
	i, ok := s.st.lookup(name)
	if !ok {
		return AccountInfo{}, false
	}
	depth := 0
	for j := i; j != 0; j = s.st.nodes[j].parent {
		depth++
	}
	return s.info(i, depth), true
}

// Accounts yields the root and every account, depth first, children in
// the order they were added.
func (s *View) Accounts() iter.Seq[AccountInfo] {
	return func(yield func(AccountInfo) bool) {
		s.walk(0, 0, yield)
	}
}

func (s *View) walk(i int32, depth int, yield func(AccountInfo) bool) bool {
	if !yield(s.info(i, depth)) {
		return false
	}
	for c := s.st.nodes[i].firstChild; c != none; c = s.st.nodes[c].nextSibling {
		if !s.walk(c, depth+1, yield) {
			return false
		}
	}
	return true
}

// String draws the view as a table in the manner of sshare: one row
// per account, indented by depth, with usage in GPU-seconds.
func (s *View) String() string {
	width := len("account")
	for a := range s.Accounts() {
		width = max(width, a.Depth+len(a.Name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s %8s %11s %12s %10s %10s %10s %5s %8s\n", width,
		"account", "shares", "norm shares", "usage", "norm usage", "eff usage", "level fs", "rank", "factor")
	for a := range s.Accounts() {
		rank := ""
		if a.Rank > 0 {
			rank = fmt.Sprint(a.Rank)
		}
		fmt.Fprintf(&b, "%-*s %8g %11.6f %12.6g %10.6f %10.6f %10.6f %5s %8.6f\n", width,
			strings.Repeat(" ", a.Depth)+a.Name, a.RawShares, a.NormShares, a.Usage,
			a.NormUsage, a.EffectiveUsage, a.LevelFS, rank, a.Factor)
	}
	return b.String()
}
