package preempt

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/access"
	"github.com/phalanx-sched/phalanx/internal/sat"
	"github.com/phalanx-sched/phalanx/topology"
)

// Searcher finds victim sets on the states of one cluster. It holds
// scratch space sized for the cluster (and grown to the largest candidate
// list seen), so that a search allocates nothing in the steady state. A
// Searcher is not safe for concurrent use; give each goroutine its own.
type Searcher struct {
	c   *topology.Cluster
	opt Options
	adm *gang.Admitter
	ws  *topology.State // the work state: the caller's state with victims released
	// words are ws's raw words.
	words access.Words
	low   int // the lowest level (-1 on a flat cluster)
	// minNodeGPUs is the smallest node's GPU count; levelGPUs[l] the
	// largest domain's GPU count at level l.
	minNodeGPUs int
	levelGPUs   []int

	// One search's inputs and budget.
	st    *topology.State
	req   *Preemptor
	cands []Candidate
	need  int // a lower bound of the GPUs the preemptor needs
	// lead is the member asking for the most GPUs when it asks for
	// nodes (-1 otherwise): it needs pods nodes at its minimum, each with
	// perPod free GPUs (0: an idle node), inside one domain of podLevel
	// when that is not -1.
	lead, pods, perPod, podLevel int
	// segSize and segLevel are the lead member's segments (size 0 or 1:
	// none; level -1: anywhere).
	segSize, segLevel int
	reqLevel          int // the level one domain of which must hold the gang, or -1
	budget            int // trial admissions left for the search stages
	tries             int // trial admissions made
	lastFail          gang.Admission

	// Candidates: eligible ones (preemptible by the preemptor) sorted by
	// class then index; pool is how many of them have a class at most the
	// lowest class that makes room.
	elig []int32
	pool int
	gpus []int32 // per candidate: GPUs on schedulable nodes
	// flat holds the entries of the candidates flattened so far:
	// candidate i's are flat[fOff[i]:fEnd[i]], those on nodes that are
	// down from fLive[i].
	flat              []topology.NodeAlloc
	fOff, fLive, fEnd []int32
	// flatStamp[i] is findID when candidate i is flattened in this search.
	flatStamp []uint32
	findID    uint32
	// eligCls holds the classes of elig while it is being sorted.
	eligCls []int
	// classes and elig2 are scratch for sorting by class.
	classes    []int
	classCount [maxClassBuckets + 1]int32
	elig2      []int32
	rel        []bool   // per candidate: released on the work state
	stamp      []uint32 // per candidate: set membership by epoch
	epoch      uint32
	// relList lists the released candidates.
	relList []int32

	trial gang.Allocation // the last trial admission's placement
	guide gang.Allocation // the placement with the whole pool released
	best  victimSet
	cur   []int32 // scratch sets
	trim  []int32

	nodeMask []uint64 // per node: GPUs of a marked placement
	domMark  []uint32 // per lowest-level domain: seen in domainsOf
	domEpoch uint32

	sc    scopeScratch
	ex    exactScratch
	rspec gang.Spec
	allow []*bitset.BitSet
}

// victimSet is a feasible set with its key and the preemptor's placement.
type victimSet struct {
	ok    bool
	set   []int32
	key   key
	alloc gang.Allocation
}

// NewSearcher returns a Searcher for cluster c with options o (see
// Options.Validate).
func NewSearcher(c *topology.Cluster, o Options) (*Searcher, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil cluster", ErrBadRequest)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Searcher{
		c: c, opt: o, adm: gang.NewAdmitter(c, gang.Options{}), ws: topology.NewState(c),
		classes: make([]int, 0, maxClassBuckets),
		low:     c.Depth() - 1, minNodeGPUs: c.MaxNodeGPUs(),
		nodeMask: make([]uint64, c.NumNodes()),
	}
	s.words = access.StateWords(s.ws)
	for i := range c.NumNodes() {
		s.minNodeGPUs = min(s.minNodeGPUs, c.NodeGPUs(topology.NodeID(i)))
	}
	s.levelGPUs = make([]int, c.Depth())
	for l := range c.Depth() {
		for d := range c.NumDomains(l) {
			s.levelGPUs[l] = max(s.levelGPUs[l], c.Domain(l, d).GPUs)
		}
	}
	if s.low >= 0 {
		s.domMark = make([]uint32, c.NumDomains(s.low))
	}
	s.sc.init(c)
	s.ex.init(c, o.ExactCandidates)
	return s, nil
}

// Cluster returns the searcher's cluster.
func (s *Searcher) Cluster() *topology.Cluster { return s.c }

// Options returns the searcher's options.
func (s *Searcher) Options() Options { return s.opt }

// Find searches for the victims that let req's gang be admitted on st.
// It reads st and cands and changes neither. The outcome goes into out
// (its slices reused): the victims, the preemptor's allocation once they
// are released, the cost, or the reason no victim set helps.
//
// A malformed request or candidate is an error (ErrBadRequest,
// ErrBadCandidate) naming the gang at fault; a candidate's allocation is
// checked against st only when the search releases it. The search's
// stages are described in the package doc. After an error out holds no
// victims, Found is false and Reason.Code is BadInput.
func (s *Searcher) Find(st *topology.State, req *Preemptor, cands []Candidate, out *Verdict) error {
	out.reset()
	defer s.end()
	if err := s.find(st, req, cands, out); err != nil {
		// Not the partial outcome of a search cut short (a zero Reason
		// would read "victims found").
		out.reset()
		out.Reason.Code = BadInput
		if req != nil {
			out.Reason.Class = req.Class
		}
		return err
	}
	return nil
}

// find is Find, its outcome left as it is at an error.
func (s *Searcher) find(st *topology.State, req *Preemptor, cands []Candidate, out *Verdict) error {
	if err := s.begin(st, req, cands); err != nil {
		return err
	}
	out.Reason.Class = req.Class
	// 1. Fits: no victims needed.
	if s.admit(req.Gang) {
		s.trial.CopyTo(&out.Allocation)
		out.Found, out.Exact, out.Reason.Code, out.Work = true, true, Fits, s.tries
		return nil
	}
	exact := len(s.elig) > 0 && len(s.elig) <= s.opt.ExactCandidates
	// 2. Lowest class: the pool, and the placement that guides stage 3.
	room, err := s.lowestClass(exact)
	if err != nil {
		return err
	}
	// 3-5. Guided set, scopes, minimality.
	if room {
		s.resetWork()
		s.tryGuided()
		s.searchScopes()
		s.minimise()
	}
	// 6. Exact: every better set, when few gangs are preemptible.
	if exact {
		out.Exact = s.exactSearch()
	}
	if !s.best.ok {
		return s.explain(room, out)
	}
	s.fill(out)
	return nil
}

// begin validates the inputs, copies the state and lists the eligible
// candidates with their GPUs.
func (s *Searcher) begin(st *topology.State, req *Preemptor, cands []Candidate) error {
	if st == nil || st.Cluster() != s.c {
		return fmt.Errorf("%w: %w", ErrBadRequest, topology.ErrOtherCluster)
	}
	if req == nil || req.Gang == nil {
		return fmt.Errorf("%w: no gang", ErrBadRequest)
	}
	if err := req.Gang.Validate(s.c); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	s.st, s.req, s.cands = st, req, cands
	s.growCands(len(cands))
	s.elig, s.eligCls, s.flat = s.elig[:0], s.eligCls[:0], s.flat[:0]
	s.nextFind()
	for i := range cands {
		if err := checkCandidate(i, &cands[i]); err != nil {
			return err
		}
		if !cands[i].Preemptible(req.Class) {
			continue
		}
		s.elig = append(s.elig, int32(i))
		s.eligCls = append(s.eligCls, cands[i].Class)
	}
	s.sortByClass()
	s.need, s.reqLevel = s.needGPUs(req.Gang)
	s.podShape(req.Gang)
	s.budget, s.tries, s.pool = s.opt.MaxWork, 0, 0
	s.best.ok = false
	s.relList = s.relList[:0]
	s.resetWork()
	return nil
}

// end drops the references to the caller's data.
func (s *Searcher) end() {
	for _, i := range s.relList {
		s.rel[i] = false
	}
	s.relList = s.relList[:0]
	s.st, s.req, s.cands = nil, nil, nil
	s.lastFail = gang.Admission{}
}

func checkCandidate(i int, c *Candidate) error {
	switch {
	case c.ID == "":
		return fmt.Errorf("%w: candidate %d has no ID", ErrBadCandidate, i)
	case c.Alloc == nil:
		return fmt.Errorf("%w: %s has no allocation", ErrBadCandidate, c.ID)
	case c.Cost < 0 || c.Cost > MaxCost:
		return fmt.Errorf("%w: %s: cost %d GPU-seconds out of [0, %d]", ErrBadCandidate, c.ID, c.Cost, MaxCost)
	case c.Policy > Cancel:
		return fmt.Errorf("%w: %s: unknown policy %d", ErrBadCandidate, c.ID, c.Policy)
	}
	return nil
}

// growCands sizes the per-candidate scratch for n candidates.
func (s *Searcher) nextFind() {
	s.findID++
	if s.findID == 0 {
		clear(s.flatStamp)
		s.findID = 1
	}
}

func (s *Searcher) growCands(n int) {
	if len(s.gpus) >= n {
		return
	}
	n = max(n, 2*len(s.gpus))
	s.gpus = make([]int32, n)
	s.fOff, s.fLive, s.fEnd = make([]int32, n), make([]int32, n), make([]int32, n)
	s.flatStamp, s.findID = make([]uint32, n), 0
	s.rel = make([]bool, n)
	s.stamp = make([]uint32, n)
	s.epoch = 0
}

// maxClassBuckets is how many distinct classes sortByClass sorts by
// counting; beyond, it sorts by comparison.
const maxClassBuckets = 64

// sortByClass orders the eligible candidates by class, keeping index
// order within a class: a counting sort over the few distinct classes.
func (s *Searcher) sortByClass() {
	cl := s.classes[:0]
	for _, c := range s.eligCls {
		if classRank(cl, c) >= 0 {
			continue
		}
		if len(cl) == maxClassBuckets {
			slices.SortStableFunc(s.elig, func(a, b int32) int { return cmp.Compare(s.cands[a].Class, s.cands[b].Class) })
			return
		}
		k, _ := slices.BinarySearch(cl, c)
		cl = slices.Insert(cl, k, c)
	}
	s.classes = cl
	count := s.classCount[:len(cl)+1]
	clear(count)
	for _, c := range s.eligCls {
		count[classRank(cl, c)+1]++
	}
	for k := 1; k < len(count); k++ {
		count[k] += count[k-1]
	}
	s.elig2 = slices.Grow(s.elig2[:0], len(s.elig))[:len(s.elig)]
	for j, i := range s.elig {
		k := classRank(cl, s.eligCls[j])
		s.elig2[count[k]] = i
		count[k]++
	}
	s.elig, s.elig2 = s.elig2, s.elig
}

// classRank returns the position of class c in the sorted list cl, or -1.
func classRank(cl []int, c int) int {
	for k, x := range cl {
		if x == c {
			return k
		}
	}
	return -1
}

// needGPUs returns a lower bound of the GPUs gang g needs at its minimum
// size, and the level one domain of which must hold all of it (-1 when
// none must): a required co-location, or a single member's required
// level.
func (s *Searcher) needGPUs(g *gang.Spec) (int, int) {
	n := 0
	for i := range g.Members {
		m := &g.Members[i]
		r := &m.Request
		if r.GPUs > 0 {
			n = sat.Add(n, r.GPUs)
			continue
		}
		pods := r.Nodes
		if m.Min > 0 && m.Min < pods {
			pods = m.Min
		}
		per := r.GPUsPerNode
		if per == 0 {
			per = s.minNodeGPUs
		}
		n = sat.Add(n, sat.Mul(pods, per))
	}
	level := -1
	if g.Colocate.Required && g.Colocate.Level != "" {
		level, _ = s.c.Level(g.Colocate.Level)
	} else if len(g.Members) == 1 && g.Members[0].Request.Required != "" {
		level, _ = s.c.Level(g.Members[0].Request.Required)
	}
	return n, level
}

// podShape finds the lead member: the one asking for the most GPUs, when
// it asks for nodes.
func (s *Searcher) podShape(g *gang.Spec) {
	s.lead, s.pods, s.perPod, s.podLevel, s.segSize, s.segLevel = -1, 0, 0, -1, 0, -1
	best := -1
	for i := range g.Members {
		r := &g.Members[i].Request
		n := r.GPUs
		if r.Nodes > 0 {
			per := r.GPUsPerNode
			if per == 0 {
				per = s.c.MaxNodeGPUs()
			}
			n = sat.Mul(r.Nodes, per)
		}
		if n > best {
			best, s.lead = n, i
		}
	}
	m := &g.Members[s.lead]
	if m.Request.Nodes == 0 {
		s.lead = -1
		return
	}
	s.pods = m.Request.Nodes
	if m.Min > 0 && m.Min < s.pods {
		s.pods = m.Min
	}
	if !m.Request.Exclusive {
		s.perPod = m.Request.GPUsPerNode
	}
	if m.Request.SegmentSize > 1 {
		s.segSize, s.segLevel = m.Request.SegmentSize, s.low
		if m.Request.SegmentLevel != "" {
			s.segLevel, _ = s.c.Level(m.Request.SegmentLevel)
		}
	}
	s.podLevel = s.reqLevel
	if m.Request.Required != "" {
		s.podLevel, _ = s.c.Level(m.Request.Required)
	}
}

// lowestClass releases the eligible candidates class by class, lowest
// first, and tries the preemptor after each class: the first class after
// which it fits is the lowest highest-victim-class any victim set can
// have (when admission is monotone: releasing more never hurts). The pool
// is then the eligible candidates up to that class, and s.guide the
// placement with the whole pool released. With all set it releases every
// eligible candidate (checking each allocation against the state).
func (s *Searcher) lowestClass(all bool) (bool, error) {
	room := false
	for i := 0; i < len(s.elig); {
		j := i
		for ; j < len(s.elig) && s.cands[s.elig[j]].Class == s.cands[s.elig[i]].Class; j++ {
			if err := s.releaseCand(s.elig[j]); err != nil {
				return false, err
			}
		}
		if !room && s.boundOK() && s.admit(s.req.Gang) {
			room, s.pool = true, j
			s.trial.CopyTo(&s.guide)
			if !all {
				break
			}
		}
		i = j
	}
	return room, nil
}

// tryGuided considers the pool members that the placement found with the
// whole pool released overlaps: a feasible set when admission is exact.
func (s *Searcher) tryGuided() {
	s.markAlloc(&s.guide)
	s.cur = s.cur[:0]
	for _, i := range s.elig[:s.pool] {
		if s.overlaps(i) {
			s.cur = append(s.cur, i)
		}
	}
	s.unmarkAlloc(&s.guide)
	s.consider(s.cur)
}

// consider tests set (one unit of the budget) and keeps it when it is
// feasible and better than the best so far. It reports whether it was
// feasible.
func (s *Searcher) consider(set []int32) bool {
	if s.best.ok && sameSet(set, s.best.set) {
		return true
	}
	s.mustApply(set)
	if !s.boundOK() || !s.spend() || !s.admit(s.req.Gang) {
		return false
	}
	k := s.keyOf(set)
	if !s.best.ok || k.less(s.best.key) {
		s.keep(set, k)
	}
	return true
}

// keep makes set the best, with the placement of the last trial.
func (s *Searcher) keep(set []int32, k key) {
	s.best.ok, s.best.key = true, k
	s.best.set = append(s.best.set[:0], set...)
	s.trial.CopyTo(&s.best.alloc)
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// minimise drops, most expensive first, every victim of the best set
// without which the preemptor still fits, so that the set is minimal:
// removing any one victim leaves the preemptor out. It costs at most one
// admission per victim and is not limited by the budget.
func (s *Searcher) minimise() {
	if !s.best.ok || len(s.best.set) < 2 {
		return
	}
	set := s.best.set
	slices.SortFunc(set, func(a, b int32) int {
		if c := cmp.Compare(s.cands[b].Cost, s.cands[a].Cost); c != 0 {
			return c
		}
		if c := cmp.Compare(s.cands[b].Class, s.cands[a].Class); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	s.mustApply(set)
	for k := 0; k < len(set); {
		v := set[k]
		s.restoreOne(v)
		if s.boundOK() && s.admit(s.req.Gang) {
			set = append(set[:k], set[k+1:]...)
			s.trial.CopyTo(&s.best.alloc)
			continue
		}
		s.mustRelease(v)
		k++
	}
	s.best.set = set
	s.best.key = s.keyOf(set)
}

// fill writes the best set into out.
func (s *Searcher) fill(out *Verdict) {
	set := s.best.set
	slices.Sort(set)
	out.Found = len(set) > 0
	out.Reason.Code = Found
	for _, i := range set {
		out.Victims = append(out.Victims, int(i))
		out.IDs = append(out.IDs, s.cands[i].ID)
		out.GPUs += s.cands[i].Alloc.GPUs()
	}
	out.MaxClass, out.Cost, out.Domains = s.best.key.class, s.best.key.cost, s.best.key.domains
	s.best.alloc.CopyTo(&out.Allocation)
	out.Work = s.tries
}
