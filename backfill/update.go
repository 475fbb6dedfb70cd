package backfill

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// Update changes the node sets of waiting job j.ID (pending, reserved,
// held or requeued) at time now without taking it out of the queue: its
// members' placement.Request.Allowed, Excluded and AllowedLabel
// become j's, as the host learns that nodes' taints, labels or cordons
// changed. Every other field of j must be the job's as submitted (a zero
// Submit or Gang.ID stands for the job's own; JobSpec returns the job
// with its queue's pool applied: pass the sets as the job asks for them,
// and the pool is applied again).
//
// The job keeps its ID, submit time, priority inputs and counts
// (requeues, preemptions), and what the engine planned for it where the
// new sets still allow it: a reservation whose planned placement they
// allow keeps its start and GPUs (the next cycle searches it again for
// an earlier start, as after any change); one they do not allow is
// dropped, and the next plan lists it in Plan.Moves with CauseUpdated
// (To set when that cycle reserves the job again, later). A hold whose
// target they allow is kept as it is; one whose target they do not is
// moved at once to where the gang, on its new sets, is estimated to fit
// soonest, searched as a cycle searches it (whole nodes its queue's
// limits count on the smallest nodes, on those), and, of the targets
// found to fit as soon and spread no wider over the topology, to one
// that keeps the most of the GPUs it holds (a greedy search: the most it
// finds, not always the most there are). It keeps its start, the GPU-seconds
// spent and its budget rule (Hold.Budget times the new target's GPUs);
// the GPUs it keeps stay held at once (charged without a gap), its GPUs
// outside the new target are let go, and the other free GPUs of the new
// target are counted held at the next cycle, as GPUs freed between
// cycles in any hold's target are. When no such target exists, or the
// gang may no longer be held, the hold ends (HoldUpdated in the next
// plan's HoldEnds). A claim (a preemption under way) whose placement
// they do not allow is dropped, its victims going on preempting, as a
// drain drops it. What
// the engine cached of the job's old sets (the test stamps and kept
// ranking marks of OnlyChangedWaits, the never-fits mark, its shape
// number) is dropped, so that the next cycle decides as it would for a
// job submitted with the new sets, but for the plan kept. NextEvent
// asks for a cycle at once after an Update that changed the sets.
//
// Errors: ErrUnknownJob; ErrTransition for a job that is not waiting;
// ErrUpdateField, naming the field, for any other difference; and the
// errors Submit gives for the new spec (ErrBadJob, ErrNeverFits when the
// new sets leave no domain that can ever run it). On error nothing
// changes, the clock included.
func (e *Engine) Update(j Job, now time.Time) error {
	return e.apply(&op{kind: opUpdate, now: now, id: j.ID, job: j})
}

// checkUpdate checks an Update of o.rec to o.job (only node sets differ;
// the new spec valid as Submit checks it) and builds the record of the
// job as updated in o.upd. It changes nothing in the engine but, when it
// accepts the job, the table that numbers shapes (as checkSubmit).
func (e *Engine) checkUpdate(o *op) error {
	old := o.rec
	nj := o.job
	if nj.Submit.IsZero() {
		nj.Submit = old.job.Submit
	}
	if nj.Gang.ID == "" {
		nj.Gang.ID = old.job.ID
	}
	if f := updatedField(&old.job, e.submittedGang(old), &nj); f != "" {
		return fmt.Errorf("%w: job %s: %s differs from the job's (Update changes only the members' Allowed, Excluded and AllowedLabel)", ErrUpdateField, old.job.ID, f)
	}
	// Validated from its fields as submitted, as Submit does (its queue
	// applies its pool again).
	nj.Submit = old.job.Submit
	rec, err := e.validateJob(nj, true)
	if err != nil {
		return err
	}
	o.upd = rec
	return nil
}

// updatedField returns the name of the first field of nj that differs
// from old's (whose gang as submitted is og), node sets aside, or "".
func updatedField(old *Job, og *gang.Spec, nj *Job) string {
	switch {
	case nj.Account != old.Account:
		return "Account"
	case nj.TimeLimit != old.TimeLimit:
		return "TimeLimit"
	case nj.QOS != old.QOS:
		return "QOS"
	case nj.Partition != old.Partition:
		return "Partition"
	case !nj.Submit.Equal(old.Submit):
		return "Submit"
	case nj.Patience != old.Patience:
		return "Patience"
	case nj.OnNodeFailure != old.OnNodeFailure:
		return "OnNodeFailure"
	case nj.Grow != old.Grow:
		return "Grow"
	case nj.Class != old.Class:
		return "Class"
	case nj.Preemption != old.Preemption:
		return "Preemption"
	case nj.Queue != old.Queue:
		return "Queue"
	case nj.Gang.ID != old.Gang.ID:
		return "Gang.ID"
	case nj.Gang.Colocate != og.Colocate:
		return "Gang.Colocate"
	case len(nj.Gang.Members) != len(og.Members):
		return "Gang.Members (their number)"
	}
	for i := range og.Members {
		a, b := og.Members[i], nj.Gang.Members[i]
		switch {
		case a.Name != b.Name:
			return fmt.Sprintf("Gang.Members[%d].Name", i)
		case a.Min != b.Min:
			return fmt.Sprintf("member %s: Min", a.Name)
		case a.Step != b.Step:
			return fmt.Sprintf("member %s: Step", a.Name)
		}
		ra, rb := a.Request, b.Request
		ra.Allowed, ra.Excluded, ra.AllowedLabel = nil, nil, ""
		rb.Allowed, rb.Excluded, rb.AllowedLabel = nil, nil, ""
		if ra != rb {
			return fmt.Sprintf("member %s: Request (other than Allowed, Excluded, AllowedLabel)", a.Name)
		}
	}
	return ""
}

// update gives waiting job j the spec of upd (its record as updated,
// checked) at now: the fields derived from the spec are upd's, the
// plan kept where the new sets allow it (Update), and the caches the old
// sets fed dropped.
func (e *Engine) update(j, upd *jobRec, now time.Time) {
	gpus := j.gpus
	j.job = upd.job
	j.simple, j.tight = upd.simple, upd.tight // (tight stays set or nil: Patience is the same)
	j.gpus, j.minGPUs, j.leastGPUs, j.wholeG = upd.gpus, upd.minGPUs, upd.leastGPUs, upd.wholeG
	j.prep = upd.prep
	j.ownAllowed, j.ownLabel, j.unfit = upd.ownAllowed, upd.ownLabel, upd.unfit
	j.shapeID = upd.shapeID

	// What was decided on the old sets and cached: the stamp of its
	// last test (skipTest), the never-fits mark, the profile's last hit,
	// the kept ranking's marks (quiet, class) or, when its priority may
	// have moved (its size is counted on its new sets), the kept ranking
	// itself. (The stamp is made and skipTest reads it only for a job
	// without node sets (simple; no quotas), which it describes as it is
	// again whenever it has none: no test was found to need its drop;
	// it keeps markQuiet from reading it for the job on other sets.)
	j.stamp = testStamp{}
	j.noFitGen = 0
	j.alone, j.aloneLater = false, false
	if e.prof.hitJ == j {
		e.prof.hit, e.prof.hitJ = cacheKey{}, nil
	}
	if kr := &e.kr; kr.on && j.keptGen == kr.gen {
		if j.gpus != gpus {
			e.leaveKept()
		} else {
			for i, k := range e.order {
				if k == j {
					kr.keys[i].quiet, kr.keys[i].class = 0, 0
				}
			}
		}
	}

	// The plan: kept where the new sets allow it.
	g := &j.job.Gang
	if r := j.resv; r != nil {
		if g.CheckAllocation(e.c, &r.alloc) == nil {
			r.checked = math.MaxUint64 // searched again whole for an earlier start
		} else {
			if j.moved == nil {
				j.moved = &Move{Job: j.job.ID, From: r.start, Cause: CauseUpdated}
			}
			e.book.remove(r)
		}
	}
	if c := j.claim; c != nil && g.CheckAllocation(e.c, &c.alloc) != nil {
		e.book.dropClaim(c)
	}
	if h := e.book.holdOf(j); h != nil {
		e.updateHold(h, now)
	}
	e.slotOpen = true // a cycle at once: the job may start on nodes now allowed, others on GPUs let go
}

// updateHold keeps hold h of a job whose node sets Update changed: as it
// is when its target is still allowed, moved to a new target when one is
// found, ended otherwise (HoldUpdated).
//
// The new target is searched as a cycle's retarget searches one (the
// spec the cycle holds the gang with: cycle.specFor, then holdSpec, so
// whole nodes its queue's limits count on the smallest nodes are
// searched there too), and among the placements that fit as soon and
// spread no wider, one that keeps more of the GPUs free on the old
// target is taken (keepFreeOf). The GPUs it keeps are held at once: the hold is charged
// for the GPUs it held up to now, and from now on for those it keeps,
// which the next cycle charges from the last (accountHolds); the other
// GPUs free on the new target are counted by the next cycle, as GPUs
// freed between cycles in any target are.
func (e *Engine) updateHold(h *hold, now time.Time) {
	j := h.job
	g := &j.job.Gang
	if !e.holdAllowed(j) {
		e.endHoldBetween(h, HoldEnd{Job: j.job.ID, Cause: HoldUpdated, Held: h.held}, now)
		e.book.dropHold(h)
		return
	}
	if g.CheckAllocation(e.c, &h.target) == nil {
		return
	}
	spec := g
	if j.tight != nil && now.Before(j.job.Submit.Add(j.job.Patience.Wait)) {
		spec = j.tight // as the cycle searches it (cycle.specFor)
	}
	spec = e.holdSpecOf(j, spec)
	eta, found := e.holdTarget(j, spec, now, e.book.holds)
	if !found {
		e.endHoldBetween(h, HoldEnd{Job: j.job.ID, Cause: HoldUpdated, Held: h.held}, now)
		e.book.dropHold(h)
		return
	}
	e.keepFreeOf(spec, &h.target)
	// The GPUs it keeps: free on both targets, at most the count it was
	// charged for since the last cycle (a GPU freed since on its old
	// target is counted at the next cycle, as in any target).
	kept := min(h.held, e.freeShared(&e.alloc, &h.target))
	// Charged for the GPUs it held on its old target up to now (as an
	// event that ends a hold charges it), but those it keeps: the next
	// cycle charges those from the last one (accountHolds).
	if !e.lastCycle.IsZero() && now.After(e.lastCycle) {
		spent := float64(h.held-kept) * now.Sub(e.lastCycle).Seconds()
		h.spent += spent
		e.heldGPUSeconds += spent
	}
	e.alloc.CopyTo(&h.target)
	h.held = kept
	h.budget = e.holdBudget(&h.target)
	h.eta = eta
	e.book.changed()
	e.book.free(time.Time{}) // GPUs of its old target may be free for others
}

// keepFreeOf changes e.alloc, the placement holdTarget found for a gang
// (spec) on the estimated profile (e.prof.probe, as holdTarget left it:
// at the soonest time the gang fits), to one on the same profile that
// shares more free GPUs with old (freeShared), when it finds one: a
// moved hold then keeps the GPUs it collected rather than letting them
// go for a target estimated to fit no sooner. A placement that spreads
// wider than the first (spread: a higher common level, more leaves,
// more nodes) is never taken: the gang runs where its hold is, and
// placement's order ranks its topology before any GPU kept. It searches
// greedily on the nodes of old with free GPUs and those of the
// placement: it takes, one at a time, a node of the placement without
// such GPUs from the nodes the gang may use and keeps the placement
// found without it, when there is one; it tries each such node once (at
// most the placement's nodes: one admission each). Then it places the
// gang inside each domain that holds a node of old with free GPUs,
// leaves first (at most those nodes times the levels). Not a cycle's
// path: an Update's (it allocates its scratch).
func (e *Engine) keepFreeOf(spec *gang.Spec, old *gang.Allocation) {
	best := e.freeShared(&e.alloc, old)
	most := e.freeShared(old, old)
	if best == most {
		return
	}
	s := e.ledger.State()
	n := uint(e.c.NumNodes())
	keep, on, tried := bitset.New(n), bitset.New(n), bitset.New(n)
	forEntries(old, func(x topology.NodeAlloc) {
		if s.Status(x.Node) != topology.Down && x.GPUs&s.Free(x.Node) != 0 {
			keep.Set(uint(x.Node))
		}
	})
	on.InPlaceUnion(keep)
	forEntries(&e.alloc, func(x topology.NodeAlloc) { on.Set(uint(x.Node)) })
	var t gang.Spec
	copySpec(&t, spec)
	narrow := func() {
		for i := range t.Members {
			a := on.Clone()
			if al := spec.Members[i].Request.Allowed; al != nil {
				a.InPlaceIntersection(al)
			}
			t.Members[i].Request.Allowed = a
		}
	}
	var cur, bestAlloc gang.Allocation
	e.alloc.CopyTo(&cur)
	e.alloc.CopyTo(&bestAlloc)
	first := e.spreadOf(&e.alloc)
	for best < most {
		drop, ok := -1, false
		forEntries(&cur, func(x topology.NodeAlloc) {
			if m := uint(x.Node); !ok && !keep.Test(m) && !tried.Test(m) {
				drop, ok = int(m), true
			}
		})
		if !ok {
			break
		}
		tried.Set(uint(drop))
		on.Clear(uint(drop))
		narrow()
		if !e.admitAt(&t) || e.spreadOf(&e.alloc).worse(first) {
			on.Set(uint(drop)) // the gang needs it, or is placed worse without it
			continue
		}
		e.alloc.CopyTo(&cur)
		if k := e.freeShared(&cur, old); k > best {
			best = k
			cur.CopyTo(&bestAlloc)
		}
	}
	// Then inside each domain that holds a node of keep, the lowest
	// level first: the held GPUs may lie in another domain as good as
	// the first placement's (one the nodes above never reach).
	dom := e.c.NewNodeSet()
	for l := e.c.Depth() - 1; l >= 0 && best < most; l-- {
		var seen []int
		for m, ok := keep.NextSet(0); ok; m, ok = keep.NextSet(m + 1) {
			d := e.c.NodeDomain(topology.NodeID(m), l)
			if slices.Contains(seen, d) {
				continue
			}
			seen = append(seen, d)
			on.ClearAll()
			on.InPlaceUnion(e.c.DomainNodes(l, d, dom))
			narrow()
			if !e.admitAt(&t) || e.spreadOf(&e.alloc).worse(first) {
				continue
			}
			if k := e.freeShared(&e.alloc, old); k > best {
				best = k
				e.alloc.CopyTo(&bestAlloc)
			}
		}
	}
	bestAlloc.CopyTo(&e.alloc)
}

// spread is how widely a placement spreads over the topology, in the
// order placement ranks placements (placement's package doc): the level
// of the smallest domain that holds all of it, then its leaves (the
// lowest level's domains), then its nodes.
type spread struct {
	level, leaves, nodes int // level: the deepest common level, -1 for none
}

// worse reports whether s spreads wider than t: a higher common level
// (a smaller index), or the same with more leaves, or the same leaves
// on more nodes.
func (s spread) worse(t spread) bool {
	if s.level != t.level {
		return s.level < t.level
	}
	if s.leaves != t.leaves {
		return s.leaves > t.leaves
	}
	return s.nodes > t.nodes
}

// spreadOf returns allocation a's spread (Update's path: it allocates).
func (e *Engine) spreadOf(a *gang.Allocation) spread {
	var nodes []topology.NodeID
	forEntries(a, func(x topology.NodeAlloc) {
		if !slices.Contains(nodes, x.Node) {
			nodes = append(nodes, x.Node)
		}
	})
	sp := spread{level: -1, nodes: len(nodes)}
	d := e.c.Depth()
	if d == 0 || len(nodes) == 0 {
		return sp
	}
	var leaves []int
	for _, n := range nodes {
		if l := e.c.NodeDomain(n, d-1); !slices.Contains(leaves, l) {
			leaves = append(leaves, l)
		}
	}
	sp.leaves = len(leaves)
	for l := d - 1; l >= 0; l-- {
		dom := e.c.NodeDomain(nodes[0], l)
		if !slices.ContainsFunc(nodes[1:], func(n topology.NodeID) bool { return e.c.NodeDomain(n, l) != dom }) {
			sp.level = l
			break
		}
	}
	return sp
}

// freeShared counts the GPUs of a that are in b too and free now, on
// nodes not down (as cycle.countFree counts a target's).
func (e *Engine) freeShared(a, b *gang.Allocation) int {
	s := e.ledger.State()
	n := 0
	forEntries(a, func(x topology.NodeAlloc) {
		if s.Status(x.Node) == topology.Down {
			return
		}
		forEntries(b, func(y topology.NodeAlloc) {
			if y.Node == x.Node {
				n += bits.OnesCount64(x.GPUs & y.GPUs & s.Free(x.Node))
			}
		})
	})
	return n
}
