package backfill

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// PodChangeKind says how a running job's pods changed.
type PodChangeKind uint8

const (
	// PodsReplaced: pods moved to other nodes (Replace on a node
	// failure); Pods are the new pods, Old the pods they replace, rank for
	// rank.
	PodsReplaced PodChangeKind = iota + 1
	// PodsRemoved: an elastic job gave up pods (Shrink on a node
	// failure, or pods lent to a waiting job: see Job.Grow); Pods are the
	// pods removed, as they were.
	PodsRemoved
	// PodsAdded: an elastic job grew (Job.Grow); Pods are the new pods,
	// at the next ranks of their members.
	PodsAdded
)

var podChangeNames = [...]string{"", "replaced", "removed", "added"}

// String returns the kind's stable name.
func (k PodChangeKind) String() string {
	return enumName(podChangeNames[:], k, "PodChangeKind")
}

// MarshalText renders the kind's name.
func (k PodChangeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a kind's name.
func (k *PodChangeKind) UnmarshalText(b []byte) error {
	for i, n := range podChangeNames {
		if i > 0 && n == string(b) {
			*k = PodChangeKind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown pod change %q", b)
}

// PodChange is a change to the pods of a job that keeps running: the host
// starts the new pods (and restarts the job's processes from their
// checkpoint when ranks moved) or stops the removed ones.
type PodChange struct {
	Job  string        `json:"job"`
	Kind PodChangeKind `json:"kind"`
	// Time is when it happened; By names the node whose failure caused
	// it.
	Time time.Time `json:"time"`
	By   string    `json:"by,omitempty"`
	// For names the waiting job that took the pods removed from a job
	// that grew (lent pods; By is empty then): it starts on them in the
	// same plan, or claims them (it waits WaitPreempting): a preemptor
	// while its victims release their GPUs (Plan.Preemptions), or a
	// reclaim on lent pods alone, which preempts none (Plan.Preemptions
	// names no job for it; the next cycle starts it).
	For string `json:"for,omitempty"`
	// Pods and Old: see the kinds. A pod's Rank is its rank after the
	// change for new pods, before it for removed and old ones.
	Pods []gang.Pod `json:"pods"`
	Old  []gang.Pod `json:"old,omitempty"`
}

// describe renders the change with node names, for example "replaced
// pods of a (node l0-0 down): main rank 0 l0-0 -> l1-3, main rank 2 ...".
func (pc *PodChange) describe(c *topology.Cluster) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s pods of %s", pc.Kind, pc.Job)
	if pc.By != "" {
		fmt.Fprintf(&b, " (node %s down)", pc.By)
	}
	if pc.For != "" {
		fmt.Fprintf(&b, " (for %s)", pc.For)
	}
	b.WriteByte(':')
	for i, p := range pc.Pods {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s rank %d ", p.Member, p.Rank)
		if pc.Kind == PodsReplaced {
			fmt.Fprintf(&b, "%s -> ", c.NodeName(pc.Old[i].Node))
		}
		b.WriteString(c.NodeName(p.Node))
	}
	return b.String()
}

// keepOnFailure tries to keep active job j running after node n failed,
// per its policy: pods on n of members that can spare them are given up
// (Shrink), the others re-placed off every promised GPU. It reports
// whether the job keeps running and records the changes in ev and for the
// next plan. When it does not, j's allocation may have moved some pods;
// the caller releases it whole.
func (e *Engine) keepOnFailure(j *jobRec, n topology.NodeID, now time.Time, ev *NodeEvent) bool {
	if j.phase != StateStarting && j.phase != StateRunning {
		return false
	}
	id := j.job.ID
	e.charge(j, now)
	e.jobs.setOwner(j.alloc, nil)
	defer func() {
		e.jobs.setOwner(j.alloc, j)
		e.resized(j)
		e.prof.version++
	}()
	shrink := e.podScratch[:0]
	for mi := range j.alloc.Members {
		on := 0
		for _, x := range j.alloc.Members[mi].Assignment {
			if x.Node == n {
				on++
			}
		}
		spare, _ := e.ledger.Spare(id, mi)
		shrink = append(shrink, j.job.OnNodeFailure == Shrink && on > 0 && spare >= stepOf(&j.job.Gang.Members[mi]))
	}
	e.podScratch = shrink
	avoid := e.promisedNodes(j, now)
	replaced := PodChange{Job: id, Kind: PodsReplaced, Time: now, By: e.c.NodeName(n)}
	for mi := range j.alloc.Members {
		ma := &j.alloc.Members[mi]
		for r := 0; r < len(ma.Assignment) && !shrink[mi]; r++ {
			if ma.Assignment[r].Node != n {
				continue
			}
			if !e.replaceOne(j, ma.Name, r, avoid, &replaced) {
				return false
			}
		}
	}
	removed := PodChange{Job: id, Kind: PodsRemoved, Time: now, By: replaced.By}
	for mi := range j.alloc.Members {
		if shrink[mi] {
			e.shrinkOff(j, mi, n, &removed)
		}
	}
	for _, pc := range []PodChange{replaced, removed} {
		if len(pc.Pods) > 0 {
			e.podChanges = append(e.podChanges, pc)
		}
	}
	ev.Replaced, ev.Shrunk = len(replaced.Pods) > 0, len(removed.Pods) > 0
	return true
}

// shrinkOff removes from member mi of active job j its pod on node n and,
// with a Step, as many of its last other pods as make one step, and
// records them in pc.
func (e *Engine) shrinkOff(j *jobRec, mi int, n topology.NodeID, pc *PodChange) {
	ma := &j.alloc.Members[mi]
	ranks := e.rankScratch[:0]
	for r := len(ma.Assignment) - 1; r >= 0; r-- {
		if ma.Assignment[r].Node == n {
			ranks = append(ranks, r)
		}
	}
	for r := len(ma.Assignment) - 1; r >= 0 && len(ranks)%stepOf(&j.job.Gang.Members[mi]) != 0; r-- {
		if ma.Assignment[r].Node != n {
			ranks = append(ranks, r)
		}
	}
	e.rankScratch = ranks
	e.releasePods(j, mi, ranks, pc)
}

// releasePods gives up the pods of ranks ranks of member mi of active job
// j and records them, as they were, in pc.
func (e *Engine) releasePods(j *jobRec, mi int, ranks []int, pc *PodChange) {
	ma := &j.alloc.Members[mi]
	for _, r := range ranks {
		p, _ := j.alloc.Pod(mi, r)
		pc.Pods = append(pc.Pods, p)
	}
	if err := e.ledger.ReleasePods(j.job.ID, ma.Name, ranks...); err != nil {
		panic(fmt.Sprintf("backfill: %s can spare pods but: %v", j.job.ID, err))
	}
}

// stepOf returns the multiple member m's pod count moves by.
func stepOf(m *gang.Member) int { return max(m.Step, m.Request.SegmentStep(), 1) }

// replaceOne re-places pod rank of member of job j off the nodes in
// avoid and records it in pc; it reports whether a node was found.
func (e *Engine) replaceOne(j *jobRec, member string, rank int, avoid *bitset.BitSet, pc *PodChange) bool {
	rep, err := e.ledger.ReplacePod(j.job.ID, member, rank, avoid)
	if err != nil {
		panic(fmt.Sprintf("backfill: re-placing a pod of %s: %v", j.job.ID, err))
	}
	if rep.Replaced {
		pc.Pods, pc.Old = append(pc.Pods, rep.New), append(pc.Old, rep.Old)
	}
	return rep.Replaced
}

// promisedNodes returns the nodes (e.avoid) with a GPU that active job j,
// were it to run on to its end from now, could take from another job's
// promise: every hold target and claim, and every reservation whose
// window overlaps j's run (every reservation, for a job without a limit
// or past it: its end is not known). A reservation's window runs until
// its job starts: one due whose planned end has passed (no cycle since
// moved it with the time, as the next does) still holds its GPUs from
// now.
func (e *Engine) promisedNodes(j *jobRec, now time.Time) *bitset.BitSet {
	if e.avoid == nil {
		e.avoid = e.c.NewNodeSet()
	}
	e.avoid.ClearAll()
	mark := func(a *gang.Allocation) {
		forEntries(a, func(x topology.NodeAlloc) { e.avoid.Set(uint(x.Node)) })
	}
	end := j.end
	if !end.After(now) {
		end = time.Time{} // past its limit: it may run on as long as it likes
	}
	for _, r := range e.book.resv {
		if !end.IsZero() && !r.start.Before(end) {
			continue
		}
		mark(&r.alloc)
	}
	for _, h := range e.book.holds {
		mark(&h.target)
	}
	for _, cl := range e.book.claims {
		mark(&cl.alloc)
	}
	return e.avoid
}

// takePodChanges moves the pod changes since the last cycle into plan
// (reusing the buffers of the plan's old entries).
func (e *Engine) takePodChanges(plan *Plan) {
	for i := range e.podChanges {
		var pc *PodChange
		plan.PodChanges, pc = extend(plan.PodChanges)
		x := &e.podChanges[i]
		*pc = PodChange{Job: x.Job, Kind: x.Kind, Time: x.Time, By: x.By, For: x.For,
			Pods: append(pc.Pods[:0], x.Pods...), Old: append(pc.Old[:0], x.Old...)}
	}
	e.podChanges = slices.Delete(e.podChanges, 0, len(e.podChanges))
}

// grow adds pods to the running jobs that accept them (Job.Grow, elastic
// members below the pods they ask for), in submission order, when nothing
// waits for GPUs without a planned start: every waiting job holds a
// reservation and there is no hold and no claim. A job that gave up lent
// pods for a claim dropped without starting (jobRec.owed) grows back by
// as many at the end of any cycle: the claim took them from it for
// nothing. New pods keep off every node with a GPU promised to a
// reservation whose window overlaps the job's run (every reservation, for
// a job without a limit), a hold or a claim, so no promise moves for a
// growth. The changes go into plan.PodChanges.
func (e *Engine) grow(now time.Time, plan *Plan) {
	if e.jobs.growers == 0 {
		return
	}
	// all: every waiting job is reserved or unfit, and no hold or claim
	// is kept (the rule for any growth; owed pods grow back regardless).
	all := len(e.book.holds) == 0 && len(e.book.claims) == 0
	for _, j := range e.jobs.pending {
		if !all {
			break
		}
		all = j.resv != nil || j.unfit != ""
	}
	for _, j := range e.jobs.running {
		if !j.job.Grow || j.phase != StateStarting && j.phase != StateRunning {
			continue
		}
		switch {
		case all:
			j.owed = max(j.owed-e.growJob(j, now, plan, -1), 0)
		case j.owed > 0:
			j.owed -= e.growJob(j, now, plan, j.owed)
		}
	}
}

// growJob grows each elastic member of active job j as far as it fits,
// by at most limit pods in all (limit < 0: no limit), and returns the
// pods added.
func (e *Engine) growJob(j *jobRec, now time.Time, plan *Plan, limit int) int {
	id := j.job.ID
	var avoid *bitset.BitSet
	start := len(plan.PodChanges)
	grown := 0
	for mi := range j.alloc.Members {
		m, ma := &j.job.Gang.Members[mi], &j.alloc.Members[mi]
		if m.Min <= 0 || m.Request.GPUs > 0 || m.Request.SegmentStep() > 1 || ma.Pods >= m.Request.Nodes {
			continue
		}
		want := m.Request.Nodes - ma.Pods
		if limit >= 0 {
			want = min(want, (limit-grown)/stepOf(m)*stepOf(m))
		}
		if want <= 0 {
			continue
		}
		if avoid == nil {
			avoid = e.promisedNodes(j, now)
			e.charge(j, now)
			e.jobs.setOwner(j.alloc, nil)
		}
		first := ma.Pods
		added, err := e.ledger.GrowMember(id, ma.Name, e.quotaRoom(j, mi, want, now), avoid)
		if err != nil {
			panic(fmt.Sprintf("backfill: growing %s: %v", id, err))
		}
		if added == 0 {
			continue
		}
		grown += added
		e.setCounted(j, j.alloc.GPUs())
		if len(plan.PodChanges) == start {
			var pc *PodChange
			plan.PodChanges, pc = extend(plan.PodChanges)
			*pc = PodChange{Job: id, Kind: PodsAdded, Time: now, Pods: pc.Pods[:0], Old: pc.Old[:0]}
		}
		pc := &plan.PodChanges[len(plan.PodChanges)-1]
		for r := first; r < first+added; r++ {
			p, _ := j.alloc.Pod(mi, r)
			pc.Pods = append(pc.Pods, p)
		}
	}
	if avoid != nil {
		e.jobs.setOwner(j.alloc, j)
		e.resized(j)
		e.prof.version++
	}
	return grown
}

// lends reports whether active job j lends the pods of its elastic
// members above their minimum (Job.Grow) at now: it started before now
// (a job is not shrunk in the cycle that starts it).
func lends(j *jobRec, now time.Time) bool {
	if !j.job.Grow || j.phase != StateStarting && j.phase != StateRunning || !j.start.Before(now) {
		return false
	}
	for mi := range j.alloc.Members {
		if lentFrom(&j.job.Gang.Members[mi], &j.alloc.Members[mi]) >= 0 {
			return true
		}
	}
	return false
}

// lendsTo reports whether active job l lends its pods to waiting job j
// at now: to a job holding a reservation, or, with preemption on, to a
// job of a higher class (shrinking l is then the cheaper way in than
// stopping a gang).
func (e *Engine) lendsTo(l, j *jobRec, now time.Time) bool {
	return e.lendsAs(l, lentState{class: j.job.Class, resv: j.resv != nil}, now)
}

// lentState is what lendsTo reads of the waiting job: its class and
// whether it holds a reservation.
type lentState struct {
	class int
	resv  bool
}

// lendsAs is lendsTo for a waiting job as to says it is.
func (e *Engine) lendsAs(l *jobRec, to lentState, now time.Time) bool {
	return lends(l, now) && (to.resv || e.pre != nil && l.job.Class < to.class)
}

// lentFrom returns the first rank of member allocation ma that m lends
// (its ranks from Min on), or -1 when it lends none.
func lentFrom(m *gang.Member, ma *gang.MemberAllocation) int {
	if m.Min <= 0 || m.Request.GPUs > 0 || m.Request.SegmentStep() > 1 || ma.Pods <= m.Min {
		return -1
	}
	return m.Min
}

// tryLent starts job j, which does not fit the scratch state, on it plus
// the pods that growing jobs lend it (their ranks above their minimum;
// see lendsTo), when that fits: the lenders give up the lent pods j's placement uses (their
// later ranks move down; Plan.PodChanges, PodsRemoved, For j). The GPUs promised to
// reservations overlapping j's run, holds and claims stay blocked, so no
// promise moves for it. It reports whether j started.
func (c *cycle) tryLent(j *jobRec, spec *gang.Spec) bool {
	e := c.e
	if j.resv == nil && e.pre == nil || e.jobs.growers == 0 {
		return false // no lender: only active jobs that grow lend
	}
	any := false
	for _, l := range e.jobs.running {
		if any = e.lendsTo(l, j, c.now); any {
			break
		}
	}
	if !any || !c.lentPlace(j, spec) {
		return false
	}
	e.takeLent(j, &e.alloc, c.now, c.plan)
	c.invalidate()
	c.start(j)
	return true
}

// lentPlace places job j, as tryLent would start it, into e.alloc on the
// scratch state (prepared for j) plus the pods the growing jobs lend it
// (lendsTo), the GPUs of the reservations overlapping its run, holds
// and claims kept off; it reports whether j fits there and its queue's
// quota takes it (whole nodes of unequal sizes placed again on smaller
// nodes when it refuses those placed: onSmaller).
func (c *cycle) lentPlace(j *jobRec, spec *gang.Spec) bool {
	e := c.e
	if e.lent == nil {
		e.lent = topology.NewState(e.c)
	}
	if err := e.scratch.CopyInto(e.lent); err != nil {
		panic(err)
	}
	for _, l := range e.jobs.running {
		if !e.lendsTo(l, j, c.now) {
			continue
		}
		for mi := range l.alloc.Members {
			ma := &l.alloc.Members[mi]
			if r := lentFrom(&l.job.Gang.Members[mi], ma); r >= 0 {
				if err := e.lent.Release(ma.Assignment[r:]); err != nil {
					panic(fmt.Sprintf("backfill: lent pods of %s not held: %v", l.job.ID, err))
				}
			}
		}
	}
	for _, r := range c.blockedRes {
		block(e.lent, &r.alloc)
	}
	c.blockOthers(e.lent, c.ownHold)
	res, err := e.adm.Admit(e.lent, spec, &e.alloc)
	if err != nil {
		panic(fmt.Sprintf("backfill: checked job %s refused: %v", j.job.ID, err))
	}
	if !res.Admitted {
		return false
	}
	if e.lentQuotaFits(j, c.now) {
		return true
	}
	// Whole nodes of unequal sizes its quota refuses where placed: on
	// smaller ones, as a start on free GPUs (startOnSmaller), each
	// placement refused taken off e.lent first.
	if j.wholeG == nil || j.leastGPUs >= e.alloc.GPUs() {
		return false
	}
	releaseOn(e.lent, &e.alloc)
	return c.onSmaller(spec, e.lent, func() bool {
		if e.lentQuotaFits(j, c.now) {
			return true
		}
		releaseOn(e.lent, &e.alloc)
		return false
	})
}

// takeLent removes from the lending jobs every lent pod that shares a
// GPU with a (from the last rank down, so that the ranks still to look at
// stay put) and reports it in plan.
// lentRanks returns the ranks of member mi of lending job l that a
// placement gives back (its GPUs are set in e.nodeMask): the lent ranks
// it uses, then, to whole steps, more of the last lent ranks; last rank
// first, in e.rankScratch.
func (e *Engine) lentRanks(l *jobRec, mi int) []int {
	m := e.nodeMask
	ma := &l.alloc.Members[mi]
	first := lentFrom(&l.job.Gang.Members[mi], ma)
	ranks := e.rankScratch[:0]
	for r := len(ma.Assignment) - 1; first >= 0 && r >= first; r-- {
		if x := ma.Assignment[r]; m[x.Node]&x.GPUs != 0 {
			ranks = append(ranks, r)
		}
	}
	step := stepOf(&l.job.Gang.Members[mi])
	for r := len(ma.Assignment) - 1; r >= first && len(ranks)%step != 0; r-- {
		if x := ma.Assignment[r]; m[x.Node]&x.GPUs == 0 {
			ranks = append(ranks, r)
		}
	}
	e.rankScratch = ranks
	return ranks
}

// lentQuotaFits reports whether job j, placed on e.alloc with lent pods,
// fits its queue's quota once the lenders have given back the pods it
// takes (their queues count less by then): the gate let j by because
// the GPUs in use left no room for it, which lending changes.
func (e *Engine) lentQuotaFits(j *jobRec, now time.Time) bool {
	s := e.quota
	if s == nil {
		return true
	}
	m := e.nodeMask
	forEntries(&e.alloc, func(x topology.NodeAlloc) { m[x.Node] |= x.GPUs })
	defer forEntries(&e.alloc, func(x topology.NodeAlloc) { m[x.Node] = 0 })
	e.lendOut(j, nil, nil, now)
	fits := s.check(j.queue, e.alloc.GPUs(), e.mayBorrow(j), true).code == quotaFits && e.promiseFits(j, e.alloc.GPUs(), now)
	e.lendIn()
	return fits
}

// lendOut counts less in their queues' use the GPUs of the lent pods that
// the lenders to j (lendsTo; not among victims of p) would give back for
// the GPUs e.nodeMask marks, noting them in e.lentBack for lendIn.
func (e *Engine) lendOut(j *jobRec, p *preemptScratch, victims []int, now time.Time) {
	s, back := e.quota, e.lentBack[:0]
	for _, l := range e.jobs.running {
		if !e.lendsTo(l, j, now) || p != nil && p.isVictim(victims, l) {
			continue
		}
		g := 0
		for mi := range l.alloc.Members {
			ma := &l.alloc.Members[mi]
			for _, r := range e.lentRanks(l, mi) {
				g += bits.OnesCount64(ma.Assignment[r].GPUs)
			}
		}
		if g > 0 {
			s.add(l.queue, -g)
			back = append(back, lentBack{l, l.queue, g})
		}
	}
	e.lentBack = back
}

// lendIn counts again what lendOut counted less.
func (e *Engine) lendIn() {
	for _, b := range e.lentBack {
		e.quota.add(b.queue, b.gpus)
	}
	e.lentBack = e.lentBack[:0]
}

// lentVictimsOK reports whether j's queue takes a claim on a (its
// victim search's placement, victims the indexes of p's candidates; the
// claim counts a's GPUs, which an elastic gang's or whole nodes' may hold
// fewer of than j's full-size bound)
// once the victims are stopped and the lenders not among them have given
// back the lent pods a uses (their queues count less by then), and the
// victims take no other queue below its guarantee (classVictimsOK).
func (e *Engine) lentVictimsOK(p *preemptScratch, j *jobRec, a *gang.Allocation, victims []int, now time.Time) bool {
	e.lendOutFor(p, j, a, victims, now)
	ok := e.quota.classVictimsOK(p, victims, j.queue, a.GPUs(), e.mayBorrow(j))
	e.lendIn()
	return ok
}

// lendOutFor is lendOut for the lent pods that a (a victim search's
// placement for j, victims the indexes of p's candidates) uses, when the
// search counted lent pods free (p.lentTouched); e.lentBack is empty
// otherwise. lendIn undoes it.
func (e *Engine) lendOutFor(p *preemptScratch, j *jobRec, a *gang.Allocation, victims []int, now time.Time) {
	e.lentBack = e.lentBack[:0]
	if len(p.lentTouched) == 0 {
		return
	}
	m := e.nodeMask
	forEntries(a, func(x topology.NodeAlloc) { m[x.Node] |= x.GPUs })
	e.lendOut(j, p, victims, now)
	forEntries(a, func(x topology.NodeAlloc) { m[x.Node] = 0 })
}

// lentBack is GPUs a lender's queue would count less (lentQuotaFits).
type lentBack struct {
	job         *jobRec
	queue, gpus int
}

func (e *Engine) takeLent(to *jobRec, a *gang.Allocation, now time.Time, plan *Plan) {
	e.takeLentAs(to, lentState{class: to.job.Class, resv: to.resv != nil}, a, now, plan)
}

// takeLentAs is takeLent for a job that lenders lend to as st says
// (claimFor: its reservation gone by then). Jobs that are not starting
// or running (victims) lend nothing.
func (e *Engine) takeLentAs(to *jobRec, st lentState, a *gang.Allocation, now time.Time, plan *Plan) {
	m := e.nodeMask
	forEntries(a, func(x topology.NodeAlloc) { m[x.Node] |= x.GPUs })
	defer forEntries(a, func(x topology.NodeAlloc) { m[x.Node] = 0 })
	for _, l := range e.jobs.running {
		if !e.lendsAs(l, st, now) {
			continue
		}
		var pc *PodChange
		e.charge(l, now)
		e.jobs.setOwner(l.alloc, nil)
		for mi := range l.alloc.Members {
			ranks := e.lentRanks(l, mi)
			if len(ranks) == 0 {
				continue
			}
			if pc == nil {
				plan.PodChanges, pc = extend(plan.PodChanges)
				*pc = PodChange{Job: l.job.ID, Kind: PodsRemoved, Time: now, For: to.job.ID, Pods: pc.Pods[:0], Old: pc.Old[:0]}
			}
			e.releasePods(l, mi, ranks, pc)
		}
		e.jobs.setOwner(l.alloc, l)
		if pc != nil {
			e.resized(l)
			e.prof.version++
			e.book.free(time.Time{}) // its GPUs came back before its end
		}
	}
}

// ReplacePod moves one pod of active job id (member member, rank rank) to
// another node at time now: a pod whose bind failed, or whose node
// misbehaves. The rest of the job stays where it is. The pod keeps its
// rank and shape, stays inside every domain the job's gang requires, and
// keeps off every node with a GPU promised to a reservation overlapping
// the job's run, a hold or a claim, as on a node failure with Replace
// (gang.Ledger.ReplacePod). When no node fits, nothing moves and the
// Replacement says why. The next plan lists the move (PodsReplaced).
// Besides the time errors: ErrUnknownJob, ErrTransition (a job that is
// not starting or running), gang.ErrUnknownPod.
func (e *Engine) ReplacePod(id, member string, rank int, now time.Time) (gang.Replacement, error) {
	o := &op{kind: opReplacePod, now: now, id: id, member: member, rank: rank}
	if err := e.apply(o); err != nil {
		return gang.Replacement{}, err
	}
	return o.rep, nil
}

// ReleasePod gives up one pod of an elastic member of active job id
// (member member, rank rank) at time now, the rest of the job running on:
// a pod whose bind failed, when the member is above its minimum. The
// member's later pods move down one rank; the next plan lists the pod
// (PodsRemoved). Besides the time errors: ErrUnknownJob, ErrTransition,
// gang.ErrUnknownPod, gang.ErrBelowMin (a member at its minimum, of a
// fixed size, with a Step or segments above 1, or asking for a GPU
// total).
func (e *Engine) ReleasePod(id, member string, rank int, now time.Time) error {
	return e.apply(&op{kind: opReleasePod, now: now, id: id, member: member, rank: rank})
}

// resolvePod checks a pod event's member and rank, and that a released
// pod can be spared.
func (e *Engine) resolvePod(o *op) error {
	a := o.rec.alloc
	o.mi = a.MemberIndex(o.member)
	if _, ok := a.Pod(o.mi, o.rank); !ok {
		return fmt.Errorf("%w: %s of job %s member %q rank %d", gang.ErrUnknownPod, opNames[o.kind], o.id, o.member, o.rank)
	}
	if o.kind == opReleasePod {
		m := &o.rec.job.Gang.Members[o.mi]
		why := ""
		switch spare, _ := e.ledger.Spare(o.id, o.mi); {
		case m.Request.GPUs > 0 || m.Min <= 0 || m.Min >= m.Request.Nodes:
			why = "the member has a fixed size (re-place the pod, or cancel the job)"
		case stepOf(m) > 1:
			why = fmt.Sprintf("the member comes in steps of %d pods", stepOf(m))
		case spare < 1:
			why = fmt.Sprintf("the member runs %d pods, its minimum", a.Members[o.mi].Pods)
		}
		if why != "" {
			return fmt.Errorf("%w: ReleasePod of job %s member %s rank %d: %s", gang.ErrBelowMin, o.id, o.member, o.rank, why)
		}
	}
	return nil
}

// podEvent applies a checked ReplacePod or ReleasePod.
func (e *Engine) podEvent(o *op) {
	j := o.rec
	e.charge(j, o.now)
	e.jobs.setOwner(j.alloc, nil)
	pc := PodChange{Job: j.job.ID, Kind: PodsRemoved, Time: o.now}
	if o.kind == opReleasePod {
		e.rankScratch = append(e.rankScratch[:0], o.rank)
		e.releasePods(j, o.mi, e.rankScratch, &pc)
	} else {
		rep, err := e.ledger.ReplacePod(j.job.ID, o.member, o.rank, e.promisedNodes(j, o.now))
		if err != nil {
			panic(fmt.Sprintf("backfill: checked pod of %s refused: %v", j.job.ID, err))
		}
		o.rep = rep
		pc.Kind = PodsReplaced
		if rep.Replaced {
			pc.Pods, pc.Old = []gang.Pod{rep.New}, []gang.Pod{rep.Old}
		}
	}
	e.jobs.setOwner(j.alloc, j)
	e.resized(j)
	e.prof.version++
	if len(pc.Pods) > 0 {
		e.podChanges = append(e.podChanges, pc)
	}
}

// resized records active job j's GPUs after its pods changed: its charge
// base and its queue's count.
func (e *Engine) resized(j *jobRec) {
	j.used = j.alloc.GPUs()
	e.jobs.billUsed(j)
	e.setCounted(j, j.used)
}

// quotaRoom is how many of want more pods of member mi job j's queue has
// quota for at now (want without quotas): growth never takes a queue
// beyond its maximum, its borrowing limit or what others lend, nor the
// room the reservations it would run beside need (promiseFits). A job in
// no queue (restored after its queue was removed) grows by none.
func (e *Engine) quotaRoom(j *jobRec, mi, want int, now time.Time) int {
	if e.quota == nil {
		return want
	}
	if j.queue < 0 {
		return 0 // in no queue (restored after its queue was removed): it takes no more
	}
	per := j.podGPUs(mi)                    // whole nodes: at most a largest usable node's each
	step := stepOf(&j.job.Gang.Members[mi]) // want is a multiple of it: so stays the answer
	for want > 0 && (e.quota.check(j.queue, want*per, e.mayBorrow(j), true).code != quotaFits || !e.promiseFits(j, want*per, now)) {
		want -= step
	}
	return max(want, 0)
}
