package backfill

import (
	"fmt"
	"math"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// quotaState is the engine's quota accounting: every array is indexed by
// queue number (the order of Config.Quotas.Queues) and preallocated by
// New; nothing on a cycle's path looks a name up.
//
// A queue's use is the GPUs counted for it: those of its subtree's
// starting and running jobs and of its subtree's claims (a preempting
// job's GPUs are on their way back and count for nobody). Its effective
// use eff is, for a queue without children, its use; for a parent, the
// sum over its children of max(eff, keep), where keep is the part of a
// child's guarantee it does not lend: idle, that part is still kept from
// the other children. A queue borrows eff - guarantee when positive, from
// its parent's share; the top queues' sum of max(eff, keep) is at most
// the cluster's GPUs. A gang is admitted when, at every queue from its own
// to the top, use stays within the maximum and eff within guarantee plus
// borrowing limit, and the top sum within the cluster.
type quotaState struct {
	names  []string
	index  map[string]int // Submit and Restore only
	parent []int          // -1 at the top
	leaf   []bool
	kids   [][]int // per queue; kids[n] is the top queues
	guar   []int
	ceil   []int // guarantee + borrowing limit (noLimit)
	keep   []int // guarantee minus what it may lend
	max    []int // noLimit when Unlimited
	weight []float64
	total  int
	// guaranteed: some queue has a guarantee; a job that cannot be
	// preempted then never borrows (reclaim could not take it back).
	guaranteed bool

	used []int
	eff  []int
	top  int
	// gen counts the changes of use (add): a failed search's record
	// holds only while it is the same (claimFail).
	gen uint64
	// usedAll is every queue's use together.
	usedAll int
	// eff0 and top0 are eff and top with nothing in use.
	eff0 []int
	top0 int
	// graceMax, graceCeil and graceTop let queues restored above a limit
	// (the config lowered it since the snapshot; see Restore) stay above
	// it while their jobs run: each is the least use (effective use, top
	// sum) after an event since the restore (settle), checked against in
	// place of a limit it exceeds. No start takes a queue above a limit:
	// they only fall, and graced says whether any is above its limit.
	graceMax, graceCeil []int
	graceTop            int
	graced              bool

	// Per cycle: demand (use plus waiting GPUs), the smallest waiting
	// gang, the weighted share of each queue (want is scratch), and the
	// reclaim searches that failed (claimFails).
	demand []int
	// need is what a queue's subtree takes from its parent's share to
	// meet its demand: a leaf's demand; a parent's, the sum of its
	// children's need or the guarantee each keeps from lending when that
	// is more (as lift counts use), so that the share it passes down
	// covers its children's kept guarantees as well as their demand.
	need    []int
	share   []float64
	want    []float64
	minGang []int
	fails   claimFails
	// canUse says per queue whether a waiting job of its subtree could
	// use GPUs as they free up (0: not asked yet this cycle, 1: yes,
	// witnessed by job witness[q], -1: no); probe answers it (the
	// cycle's queueCanUse).
	canUse  []int8
	witness []*jobRec
	probe   func(q int) *jobRec
	naive   bool // the cycle's reference path (tests): usable asks every time

	// msgs caches each queue's latest reasons (a cycle's waiting jobs of
	// one queue mostly share one); display is each queue's name as
	// reasons show it.
	display []string
	msgs    [][4]quotaMsg

	// Entitled-first order scratch: GPUs covered per queue, whether each
	// ranked job is covered, the order before.
	cum     []int
	covered []bool
	// strict marks the queues with StrictOrder; head is, per queue, the
	// first job the cycle's walk left waiting for quota (nil: none yet);
	// uncovered marks, in entitledFirst's pass, the queues of which a job
	// was left uncovered.
	strict    []bool
	anyStrict bool
	head      []*jobRec
	uncovered []bool
	// first is, per strict queue, its highest-ranked waiting job (in the
	// walk's order) without a reservation or a claim that could run on
	// the nodes in service, preHead the first such that its limits hold
	// back when the cycle begins (initQuota; nil: none). Both are always
	// tested (the MaxJobsTested window does not pass them), and the jobs
	// below preHead count as held back by quota (waitsForQuota).
	first    []*jobRec
	preHead  []*jobRec
	orderTmp []*jobRec
	prioTmp  []uint64

	// pools are the nodes each queue's jobs may use (nil: any).
	pools []*bitset.BitSet
	// poolGPUs is the most each queue's subtree can use for its pools:
	// its pool's GPUs in service, at most its children's caps (a group
	// of them counted once, by its union's; noLimit: any node). A
	// weighted share above it could never be used (fill). inService is
	// the cluster's GPUs in service. Both are counted by countInService
	// each cycle (the nodes that are up as of Engine.statusGen
	// inServiceGen; inServiceKnown: counted once).
	poolGPUs []int
	// group numbers the group of siblings on overlapping pools each
	// queue is in (-1: none), kidGroups the groups among each parent
	// slot's children; groupPool is each group's pools' union and
	// groupGPUs its GPUs in service, which its members' weighted shares
	// share (fill; groupLeft and groupW are its scratch).
	group             []int
	kidGroups         [][]int
	groupPool         []*bitset.BitSet
	groupGPUs         []int
	groupLeft, groupW []float64
	inService         int
	inServiceGen      uint64
	inServiceKnown    bool
	// upGPUs, poolUp and groupUp count the GPUs on nodes that are up
	// (the cluster's, each pool's, each group's), as of inServiceGen;
	// drainedUp lists the drained nodes that are not down, whose GPUs in
	// use countInService adds every cycle.
	upGPUs int
	// noQueueUsed counts the GPUs active jobs in no queue hold (restored
	// after their queue went: add): in service, but no queue's to share
	// (out of the cluster's GPUs in shares, out of their pools' and
	// groups' in leaveOutNoQueue).
	noQueueUsed int
	// outsidePool is set while active jobs may hold GPUs outside their
	// queue's pool (restored under a narrowed one): addOutsidePool.
	outsidePool bool
	poolUp      []int
	groupUp     []int
	drainedUp   []int32
	// poolLabel names each pool as reasons count the nodes outside it
	// (placement.Request.AllowedLabel): the queues whose Nodes make it.
	poolLabel []string

	// Reclaim scratch: the victims chosen and the candidates by start.
	pre     *preemptScratch
	victims []int
	byStart []int
}

// newQuotaState builds the accounting for validated queues on a cluster
// of total GPUs; the top queues' guarantees must fit the cluster.
func newQuotaState(cfg *QuotaConfig, total int) (*quotaState, error) {
	n := len(cfg.Queues)
	s := &quotaState{index: make(map[string]int, n), total: total, kids: make([][]int, n+1)}
	ints := func() []int { return make([]int, n) }
	s.parent, s.guar, s.ceil, s.keep, s.max = ints(), ints(), ints(), ints(), ints()
	s.used, s.eff, s.demand, s.minGang, s.need = ints(), ints(), ints(), ints(), ints()
	s.graceMax, s.graceCeil = ints(), ints()
	s.share, s.want, s.weight = make([]float64, n), make([]float64, n), make([]float64, n)
	s.leaf, s.canUse, s.witness = make([]bool, n), make([]int8, n), make([]*jobRec, n)
	s.fails.init(n)
	s.msgs = make([][4]quotaMsg, n)
	s.cum = make([]int, n)
	s.strict, s.head, s.uncovered = make([]bool, n), make([]*jobRec, n), make([]bool, n)
	s.first, s.preHead = make([]*jobRec, n), make([]*jobRec, n)
	topSum := 0
	for i, q := range cfg.Queues {
		s.names = append(s.names, q.Name)
		s.display = append(s.display, "queue "+q.Name)
		s.index[q.Name] = i
		s.parent[i] = -1
		slot := n
		if q.Parent != "" {
			s.parent[i] = s.index[q.Parent]
			slot = s.parent[i]
		} else {
			topSum += q.Guarantee
		}
		s.kids[slot] = append(s.kids[slot], i)
		s.guar[i], s.max[i] = q.Guarantee, orNoLimit(q.Maximum)
		s.ceil[i] = min(noLimit, q.Guarantee+orNoLimit(q.BorrowingLimit))
		s.keep[i] = q.Guarantee - min(q.Guarantee, orNoLimit(q.LendingLimit))
		s.weight[i] = q.Weight
		s.strict[i] = q.StrictOrder
		s.anyStrict = s.anyStrict || q.StrictOrder
		if s.weight[i] == 0 {
			s.weight[i] = 1
		}
		s.guaranteed = s.guaranteed || q.Guarantee > 0
	}
	for i := range n {
		s.leaf[i] = len(s.kids[i]) == 0
	}
	if topSum > total {
		return nil, fmt.Errorf("%w: the top queues' guarantees add up to %d GPUs; the cluster has %d", ErrConfig, topSum, total)
	}
	s.rebuild()
	s.eff0, s.top0 = append([]int(nil), s.eff...), s.top
	return s, nil
}

// neverFits returns the limit that keeps g GPUs out of leaf queue q even
// with nothing in use, or a check that fits.
func (s *quotaState) neverFits(q, g int) quotaCheck {
	d := g
	for a := q; a >= 0; a = s.parent[a] {
		e := s.eff0[a] + d
		switch {
		case g > s.max[a]:
			return quotaCheck{quotaMaximum, a}
		case e > s.ceil[a] && a == q:
			return quotaCheck{quotaBorrow, a}
		case e > s.ceil[a]:
			return quotaCheck{quotaPool, a}
		}
		d = max(e, s.keep[a]) - max(s.eff0[a], s.keep[a])
	}
	if s.top0+d > s.total {
		return quotaCheck{quotaPool, -1}
	}
	return quotaCheck{}
}

// lift is what queue a takes from its parent's share: its effective use,
// or the guarantee it keeps from lending when that is more.
func (s *quotaState) lift(a int) int { return max(s.eff[a], s.keep[a]) }

// rebuild recomputes eff and top from used at the leaves (parents are
// listed before their children, so a reverse pass sees children first).
func (s *quotaState) rebuild() {
	for a := len(s.names) - 1; a >= 0; a-- {
		if s.leaf[a] {
			s.eff[a] = s.used[a]
			continue
		}
		s.eff[a] = 0
		for _, c := range s.kids[a] {
			s.eff[a] += s.lift(c)
		}
	}
	s.top, s.usedAll = 0, 0
	for _, c := range s.kids[len(s.names)] {
		s.top += s.lift(c)
		s.usedAll += s.used[c]
	}
}

// add counts delta more GPUs for leaf queue q (negative: fewer); for no
// queue (q -1: a job restored after its queue was removed), nothing.
func (s *quotaState) add(q, delta int) {
	if q < 0 {
		s.noQueueUsed += delta // a job in no queue (restored after its queue went)
		return
	}
	s.gen++
	s.usedAll += delta
	d := delta
	for a := q; ; {
		s.used[a] += delta
		old := s.lift(a)
		s.eff[a] += d
		d = s.lift(a) - old
		if a = s.parent[a]; a < 0 {
			s.top += d
			return
		}
	}
}

// settle lowers the graces to the use after an event (Engine.apply; not
// within one, where a search adds and takes back GPUs on trial), and
// clears graced once none is above its limit.
func (s *quotaState) settle() {
	s.graced = false
	for a := range s.names {
		s.graceMax[a], s.graceCeil[a] = min(s.graceMax[a], s.used[a]), min(s.graceCeil[a], s.eff[a])
		s.graced = s.graced || s.graceMax[a] > s.max[a] || s.graceCeil[a] > s.ceil[a]
	}
	s.graceTop = min(s.graceTop, s.top)
	s.graced = s.graced || s.graceTop > s.total
}

// over reports whether queue q or a queue above it is above a limit, or
// the top queues above the cluster (only after a restore under lowered
// limits).
func (s *quotaState) over(q int) bool {
	for a := q; a >= 0; a = s.parent[a] {
		if s.used[a] > s.max[a] || s.eff[a] > s.ceil[a] {
			return true
		}
	}
	return s.top > s.total
}

// grace lets every queue above a limit stay there (graceMax): Restore's,
// once every restored job and claim is counted.
func (s *quotaState) grace() {
	for a := range s.names {
		if s.used[a] > s.max[a] {
			s.graceMax[a], s.graced = s.used[a], true
		}
		if s.eff[a] > s.ceil[a] {
			s.graceCeil[a], s.graced = s.eff[a], true
		}
	}
	if s.top > s.total {
		s.graceTop, s.graced = s.top, true
	}
}

// Quota outcomes of a gang for its queue.
const (
	quotaFits     = iota
	quotaMaximum  // a queue's maximum
	quotaBorrow   // a queue's borrowing limit
	quotaPool     // nothing left to borrow above a queue (lending limits, others' use)
	quotaNoBorrow // a job that cannot be preempted would borrow
	quotaKeepOwn  // a reservation of the queue for a job that cannot be preempted needs its guarantee (promiseCheck)
)

// quotaCheck is why a gang does not fit its queue's quota: the outcome
// and the queue (-1: the cluster) at which it binds.
type quotaCheck struct {
	code, at int
}

// entitled reports whether g more GPUs keep leaf queue q within its
// guarantee: such a gang borrows nothing, and reclaim gets it in.
func (s *quotaState) entitled(q, g int) bool { return s.used[q]+g <= s.guar[q] }

// check tells whether g more GPUs fit leaf queue q's quota; mayBorrow is
// false for a job that cannot be preempted (when some queue has a
// guarantee). Unless strict, a gang the GPUs in use leave no room for
// passes the cluster's limit: it waits for GPUs (a claim, which frees
// GPUs by preemption, checks strictly).
func (s *quotaState) check(q, g int, mayBorrow, strict bool) quotaCheck {
	if !mayBorrow && s.used[q]+g > s.guar[q] {
		return quotaCheck{quotaNoBorrow, q}
	}
	d := g
	for a := q; a >= 0; a = s.parent[a] {
		e := s.eff[a] + d
		switch {
		case s.used[a]+g > s.max[a]:
			return quotaCheck{quotaMaximum, a}
		case d > 0 && e > s.ceil[a] && a == q:
			return quotaCheck{quotaBorrow, a}
		case d > 0 && e > s.ceil[a]:
			return quotaCheck{quotaPool, a}
		}
		d = max(e, s.keep[a]) - s.lift(a)
	}
	// At the top, only GPUs that queues keep idle from lending bind: a
	// gang for which the GPUs in use leave no room waits for GPUs, not
	// for quota.
	if d > 0 && s.top+d > s.total && (strict || s.usedAll+g <= s.total) {
		return quotaCheck{quotaPool, -1}
	}
	return quotaCheck{}
}

// mayTake reports whether a gang of leaf queue q may preempt a running
// gang of leaf queue r for quota's sake: r is q, or the queue just below
// the two queues' closest common parent on r's side borrows (its
// effective use is above its guarantee), so that taking from it takes
// borrowed GPUs only.
func (s *quotaState) mayTake(q, r int) bool {
	if q == r {
		return true
	}
	for a := r; a >= 0; a = s.parent[a] {
		p := s.parent[a]
		if p < 0 || s.isAncestor(p, q) {
			return s.eff[a] > s.guar[a]
		}
	}
	return false
}

// isAncestor reports whether a is q or above it.
func (s *quotaState) isAncestor(a, q int) bool {
	for ; q >= 0; q = s.parent[q] {
		if q == a {
			return true
		}
	}
	return false
}

// quotaMsg is a cached reason: what it depends on (the binding queue's
// use and effective use, the job's queue's use, and x: a share's bits or
// the GPUs kept idle under the binding queue) and its text.
type quotaMsg struct {
	kind, code, at, h int
	uq, ua, ea        int
	x                 uint64
	// g is the gang's GPUs; the key holds it only where the reason
	// depends on it (quotaState.guarded, h then set; a maximum or a
	// borrowing limit, whose reason names them: explain).
	g int
	// placed and least are, for a job whose whole nodes were placed on
	// larger nodes than the smallest it may use, the GPUs placed and its
	// fewest (overQuota); 0 otherwise.
	placed, least int
	text          string
}

// reason returns leaf queue q's cached reason for key k, rendering it
// with render on a miss.
func (s *quotaState) reason(q int, k quotaMsg, render func() string) string {
	k.uq, k.ua, k.ea = s.used[q], s.top, s.usedAll
	if k.at >= 0 {
		k.ua, k.ea = s.used[k.at], s.eff[k.at]
	}
	if k.kind != 1 && k.code == quotaPool {
		slot := len(s.names)
		if k.at >= 0 {
			slot = k.at
		}
		k.x = uint64(s.idleKept(slot))
	}
	if k.kind != 1 && s.guarded(q, k.g, k.code, k.at) {
		k.h = 1 // explain adds that others' guarantees take the room
	} else if k.kind == 1 || k.code != quotaMaximum && k.code != quotaBorrow {
		k.g = 0 // (explain names the job's GPUs at a maximum or borrowing limit)
	}
	slots := &s.msgs[q]
	for i := range slots {
		if m := slots[i]; m.text != "" && m.kind == k.kind && m.code == k.code && m.at == k.at && m.h == k.h &&
			m.uq == k.uq && m.ua == k.ua && m.ea == k.ea && m.x == k.x && m.g == k.g &&
			m.placed == k.placed && m.least == k.least {
			return m.text
		}
	}
	copy(slots[1:], slots[:len(slots)-1])
	k.text = render()
	slots[0] = k
	return k.text
}

// name returns queue a's name ("the cluster" for -1).
func (s *quotaState) name(a int) string {
	if a < 0 {
		return "the cluster"
	}
	return s.display[a]
}

// idleKept is the GPUs the children of parent slot p (n: the top) keep
// idle from lending.
func (s *quotaState) idleKept(p int) int {
	k := 0
	for _, c := range s.kids[p] {
		k += max(0, s.keep[c]-s.eff[c])
	}
	return k
}

// guarded reports whether a check of g more GPUs of leaf queue q with
// outcome code binds at a parent a (its maximum or its pool) only because
// other queues use their guarantees: q would borrow (its use and g are
// past its guarantee), no queue under a on another side than q's uses
// more than its guarantee, and the GPUs those other sides use (in use,
// not kept idle by a lending limit, which the reason names apart) are at
// least what the check lacks (without them, q's own side would fit).
func (s *quotaState) guarded(q, g, code, a int) bool {
	if code != quotaMaximum && code != quotaPool || a < 0 || a == q || !s.isAncestor(a, q) || s.used[q]+g <= s.guar[q] {
		return false
	}
	side := q // the child of a on q's side
	for s.parent[side] != a {
		side = s.parent[side]
	}
	use, lim := s.used, s.max
	if code == quotaPool {
		use, lim = s.eff, s.ceil
	}
	others := 0
	for _, c := range s.kids[a] {
		if c != side {
			others += s.used[c]
		}
	}
	if others <= 0 || others < use[a]+g-lim[a] {
		return false
	}
	for x := range s.names {
		if x != a && s.isAncestor(a, x) && !s.isAncestor(x, q) && s.eff[x] > s.guar[x] {
			return false
		}
	}
	return true
}

// explain renders why a gang of g GPUs does not fit leaf queue q, in a
// user's words.
func (s *quotaState) explain(q, g int, qc quotaCheck) string {
	m := s.explainCode(q, qc)
	switch a := qc.at; {
	case qc.code == quotaMaximum && s.used[a] < s.max[a]:
		// Room is left, not enough for the job: the reason says how
		// much against how much.
		m = fmt.Sprintf("%s: %d of %d GPUs in use, %d left below its maximum; the job would take %d", s.name(a), s.used[a], s.max[a], s.max[a]-s.used[a], g)
	case qc.code == quotaBorrow && s.eff[a] < s.ceil[a]:
		m = fmt.Sprintf("%s: %d of %d GPUs (%d guaranteed, borrowing limit %d), %d left to borrow; the job would take %d",
			s.name(a), s.eff[a], s.ceil[a], s.guar[a], s.ceil[a]-s.guar[a], s.ceil[a]-s.eff[a], g)
	}
	if s.guarded(q, g, qc.code, qc.at) {
		m += fmt.Sprintf("; the other queues under %s use their guarantees, which this job would borrow (what a queue is guaranteed is its own)", s.name(qc.at))
	}
	return m
}

// never says why a gang of g GPUs (what says so) can never run in queue q under the
// current limits ("" when it can): a restore under a config that lowered
// them keeps such a job waiting (Submit refuses one; Engine.neverWhy).
func (s *quotaState) never(q, g int, what string) string {
	switch qc := s.neverFits(q, g); qc.code {
	case quotaMaximum:
		return fmt.Sprintf("%s, above the maximum of %s (%d GPUs): it cannot start unless the limit is raised", what, s.name(qc.at), s.max[qc.at])
	case quotaBorrow:
		return fmt.Sprintf("%s, above what %s may use (%d GPUs: guarantee and borrowing limit): it cannot start unless the limit is raised", what, s.name(q), s.ceil[q])
	case quotaPool:
		return fmt.Sprintf("%s, more than %s could borrow with nothing in use (%s limits it): it cannot start unless the limits are raised", what, s.name(q), s.name(qc.at))
	}
	return ""
}

// explainCode is explain without the note on others' guarantees.
func (s *quotaState) explainCode(q int, qc quotaCheck) string {
	a := qc.at
	switch qc.code {
	case quotaMaximum:
		return fmt.Sprintf("%s: %d of %d GPUs, maximum reached", s.name(a), s.used[a], s.max[a])
	case quotaNoBorrow:
		return fmt.Sprintf("%s: %d of %d guaranteed GPUs in use; a job that cannot be preempted runs only within its queue's guarantee (give it a preemption policy to borrow)",
			s.name(q), s.used[q], s.guar[q])
	case quotaKeepOwn:
		return fmt.Sprintf("%s: %d of %d guaranteed GPUs in use, and the reserved job cannot be preempted: it runs only within its queue's guarantee, which this job would borrow from",
			s.name(q), s.used[q], s.guar[q])
	case quotaBorrow:
		return fmt.Sprintf("%s: %d of %d GPUs (%d guaranteed, borrowing limit %d), borrowing limit reached",
			s.name(a), s.eff[a], s.ceil[a], s.guar[a], s.ceil[a]-s.guar[a])
	}
	slot, capacity := len(s.names), s.total
	if a >= 0 {
		slot, capacity = a, s.ceil[a]
	}
	m := fmt.Sprintf("%s: %d GPUs in use, %d guaranteed; nothing left to borrow: %s's %d GPUs are in use or lent",
		s.name(q), s.used[q], s.guar[q], s.name(a), capacity)
	if k := s.idleKept(slot); k > 0 {
		m += fmt.Sprintf(", %d of them kept idle by queues that lend no more (lending limits)", k)
	}
	return m
}

// maxClaimFails bounds the reclaim searches of one queue that may fail in
// one cycle (claimFails).
const maxClaimFails = 8

// claimFails remembers, per queue, the cycle's failed reclaim searches,
// so that the jobs behind one that failed do not repeat it, while a job
// for which the search may succeed still tries. A failure for a job of g
// GPUs, time limit l, rules out the later jobs of the queue with a limit
// of at least l (no limit counts as the longest: the search keeps off
// every reservation that would start within the limit, so a longer one
// keeps off more) while the book and the quota counts are as they were
// (a reservation dropped, a claim made or a job started since may change
// the answer):
//   - a search whose victims gave the quota no room rules out the jobs
//     of g GPUs or more (the room needed only grows with g);
//   - a search that found no placement for the job's own shape rules out
//     the jobs of that shape (jobRec.shapeID), on their own shape or a
//     tighter one (Patience); one made on a tighter shape rules out none.
//
// A job with GPUs of its own (its reservation's, its hold's, its
// claim's) is not ruled out by another's failure: its search may use
// them, and the gangs running on them, where another job's may not.
// Nor is a job that growing jobs lend other pods than they lent the
// failed one (lendsTo: by class, with preemption on): its search counts
// its lent pods free, and a claim takes them from their lenders
// (claimFail.lendLo).
// After maxClaimFails failures the queue searches no more in the cycle,
// whatever the job: that bounds a cycle's failed searches.
//
// One failure used to rule out the whole queue: a gang that no
// preemption could place (a leaf with a drained node) then kept a smaller
// job of its queue, ranked behind it, from ever reclaiming its guarantee.
type claimFails struct {
	list [][maxClaimFails]claimFail
	n    []int
}

// claimFail is one failed search for victims, a reclaim's (claimFails)
// or a preemption's (cycle.preemptFails).
type claimFail struct {
	quota   bool   // its victims left no quota room (else: no placement)
	shape   uint64 // no placement: the job's shape (0: rules out none)
	gpus    int
	limit   time.Duration // 0: none
	version uint64        // the book's
	quotaAt uint64        // the quota counts' (quotaState.gen; 0 without queues)
	// why and promised are the search's reason and left-out gangs
	// (Waiting.Preempt, Waiting.PreemptPromised), given to a job whose
	// search the record answers.
	why      preempt.Explanation
	promised int
	// lendLo and lendHi bound the classes of the jobs that growing jobs
	// lend the pods they lent the failed one, no more, no fewer (a
	// search counts them free: lendsTo): no lender's class is at or
	// above the lower of the two classes and below the higher.
	lendLo, lendHi int
}

func (f *claimFails) init(n int) {
	f.list, f.n = make([][maxClaimFails]claimFail, n), make([]int, n)
}

// reset forgets every failure (a new cycle).
func (f *claimFails) reset() { clear(f.n) }

// skip returns the failure that answers a reclaim search for job j (g
// GPUs) of leaf queue q in the cycle, if there is one; past the cap it
// returns the queue's last failure.
func (f *claimFails) skip(q, g int, j *jobRec, e *Engine) *claimFail {
	n := f.n[q]
	if n >= maxClaimFails {
		return &f.list[q][n-1]
	}
	if ownsGPUs(j, e) {
		return nil
	}
	for i := range f.list[q][:n] {
		if x := &f.list[q][i]; x.rulesOut(j, g, e) {
			return x
		}
	}
	return nil
}

// add records a failed search at now for job j (g GPUs) of leaf queue
// q: for want of quota room, or of a placement for its own shape (tight:
// for a tighter one). It returns the record, for the search's reason.
func (f *claimFails) add(q, g int, j *jobRec, e *Engine, now time.Time, quota, tight bool) *claimFail {
	x := &f.list[q][f.n[q]]
	*x = failedSearch(j, g, e, now, quota, tight)
	f.n[q]++
	return x
}

// rulesOut reports whether failure x answers a search for job j (g GPUs)
// on engine e's book (claimFails): the same book, a time limit at least
// as long, the same lent pods (a class lendLo and lendHi bound), and as
// many GPUs or more for a quota failure, the same shape for a placement
// failure (a search at the job's full size: an elastic gang that
// reclaims for its minimum searches another shape).
func (x *claimFail) rulesOut(j *jobRec, g int, e *Engine) bool {
	if !x.current(e) || !limitAtLeast(j.job.TimeLimit, x.limit) || j.job.Class < x.lendLo || j.job.Class > x.lendHi {
		return false
	}
	return x.quota && g >= x.gpus || !x.quota && x.shape != 0 && x.shape == j.shapeID && g == j.gpus
}

// current reports whether the book and the quota counts are as when x
// was recorded: what a search reads besides its job and the cycle's time
// (the candidates' queues borrow or not by the counts).
func (x *claimFail) current(e *Engine) bool {
	return x.version == e.book.version && x.quotaAt == quotaGen(e)
}

// quotaGen is e's quota counts' generation (0 without queues).
func quotaGen(e *Engine) uint64 {
	if e.quota == nil {
		return 0
	}
	return e.quota.gen
}

// failedSearch returns the record of a search at now for job j (g GPUs)
// that failed for want of quota room, or of a placement for its own
// shape (tight: for a tighter one, which rules out no other).
func failedSearch(j *jobRec, g int, e *Engine, now time.Time, quota, tight bool) claimFail {
	x := claimFail{quota: quota, gpus: g, limit: j.job.TimeLimit, version: e.book.version, quotaAt: quotaGen(e)}
	x.lendLo, x.lendHi = e.lendClasses(j.job.Class, now)
	if !quota && !tight {
		x.shape = j.shapeID
	}
	return x
}

// lendClasses returns the classes lo to hi of the waiting jobs without
// a reservation that the growing jobs lend pods to at now as they lend
// them to one of class class (lendsAs): lo is one above the highest
// class of a lender below class, hi the lowest class of a lender at or
// above it (the extremes when there is none).
func (e *Engine) lendClasses(class int, now time.Time) (lo, hi int) {
	lo, hi = math.MinInt, math.MaxInt
	if e.pre == nil || e.jobs.growers == 0 {
		return lo, hi // lenders lend only to reserved jobs
	}
	for _, l := range e.jobs.running {
		if !lends(l, now) {
			continue
		}
		if c := l.job.Class; c < class {
			lo = max(lo, c+1)
		} else {
			hi = min(hi, c)
		}
	}
	return lo, hi
}

// limitAtLeast reports whether time limit a is at least b (0: none, the
// longest).
func limitAtLeast(a, b time.Duration) bool { return a == 0 || b != 0 && a >= b }

// ownsGPUs reports whether waiting job j has GPUs of its own that a
// search for it may use and another job's may not: its reservation's,
// its hold's, its claim's, its victims' of a claim since dropped
// (ownVictim).
func ownsGPUs(j *jobRec, e *Engine) bool {
	return j.resv != nil || j.claim != nil || j.orphans || e.book.holdOf(j) != nil
}
