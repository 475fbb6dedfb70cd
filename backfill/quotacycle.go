package backfill

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// initQuotas builds the quota state when the config has queues, with a
// victim search for reclaim (the preemption one when preemption is on).
func (e *Engine) initQuotas() error {
	if len(e.cfg.Quotas.Queues) == 0 {
		return nil
	}
	s, err := newQuotaState(&e.cfg.Quotas, e.c.TotalGPUs())
	if err != nil {
		return err
	}
	if err := s.resolvePools(&e.cfg.Quotas, e.c); err != nil {
		return err
	}
	s.pre = e.pre
	if s.pre == nil {
		if s.pre, err = newPreemptScratch(e.c); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	e.quota = s
	e.book.dropped = func(cl *claim) { e.setCounted(cl.job, 0) }
	return nil
}

// resolvePools builds each queue's node pool: the nodes of its own
// Nodes and of every queue above it with Nodes (nil: any node). A
// guarantee above its pool's GPUs could never be met: ErrConfig.
func (s *quotaState) resolvePools(cfg *QuotaConfig, c *topology.Cluster) error {
	s.pools = make([]*bitset.BitSet, len(cfg.Queues))
	s.poolLabel = make([]string, len(cfg.Queues))
	owners := make([][]string, len(cfg.Queues)) // the queues whose Nodes make each pool
	for a, q := range cfg.Queues {
		if p := s.parent[a]; p >= 0 && s.pools[p] != nil {
			s.pools[a] = s.pools[p].Clone()
			owners[a], s.poolLabel[a] = owners[p], s.poolLabel[p]
		}
		if q.Nodes == "" {
			continue
		}
		owners[a] = append(slices.Clip(owners[a]), q.Name)
		s.poolLabel[a] = fmt.Sprintf("outside queue %s's pool", q.Name)
		if len(owners[a]) > 1 {
			s.poolLabel[a] = "outside the pool of queue " + strings.Join(owners[a], " or of queue ")
		}
		names, _ := hostlist.Expand(q.Nodes) // Validate parsed it
		own := c.NewNodeSet()
		for _, name := range names {
			n, ok := c.LookupNode(name)
			if !ok {
				return fmt.Errorf("%w: queue %q: nodes: %w: %q", ErrConfig, q.Name, topology.ErrUnknownNode, name)
			}
			own.Set(uint(n))
		}
		if s.pools[a] == nil {
			s.pools[a] = own
		} else {
			s.pools[a].InPlaceIntersection(own)
		}
	}
	s.poolGPUs = make([]int, len(cfg.Queues))
	for a, q := range cfg.Queues {
		if s.pools[a] == nil {
			continue
		}
		gpus := countGPUs(c, s.pools[a], nil)
		if q.Guarantee > gpus {
			return fmt.Errorf("%w: queue %q: guarantee %d is above the %d GPUs of its nodes", ErrConfig, q.Name, q.Guarantee, gpus)
		}
		if err := s.checkPoolShared(cfg, a, gpus); err != nil {
			return err
		}
	}
	s.groupSiblings()
	return nil
}

// groupSiblings puts siblings whose pools overlap (directly or through
// another sibling) in one group, whose weighted shares together are
// capped by the GPUs of their pools' union (groupGPUs, counted by
// countInService): two queues on one pool could each be given all of it
// while the two could never use more than it holds, and a sibling
// without a pool was held back by the part they could not use. A queue
// without a pool, or alone in its group, is in none (group -1).
func (s *quotaState) groupSiblings() {
	n := len(s.pools)
	s.group = make([]int, n)
	s.kidGroups = make([][]int, n+1)
	for a := range s.group {
		s.group[a] = -1
	}
	for p := range s.kids {
		kids := s.kids[p]
		for i, a := range kids {
			if s.pools[a] == nil || s.group[a] >= 0 {
				continue
			}
			// a's component: the siblings reached through overlaps.
			members, union := []int{a}, s.pools[a].Clone()
			for grew := true; grew; {
				grew = false
				for _, b := range kids[i+1:] {
					if s.pools[b] != nil && !slices.Contains(members, b) && union.IntersectionCardinality(s.pools[b]) > 0 {
						members = append(members, b)
						union.InPlaceUnion(s.pools[b])
						grew = true
					}
				}
			}
			if len(members) < 2 {
				continue
			}
			g := len(s.groupPool)
			for _, b := range members {
				s.group[b] = g
			}
			s.groupPool = append(s.groupPool, union)
			s.kidGroups[p] = append(s.kidGroups[p], g)
		}
	}
	s.groupGPUs = make([]int, len(s.groupPool))
	s.groupUp = make([]int, len(s.groupPool))
	s.poolUp = make([]int, n)
	s.groupLeft = make([]float64, len(s.groupPool))
	s.groupW = make([]float64, len(s.groupPool))
}

// countGPUs returns the GPUs of node set set, counting only the nodes in
// service when nodes (the engine's node states) is not nil.
func countGPUs(c *topology.Cluster, set *bitset.BitSet, nodes []NodeState) int {
	gpus := 0
	for n, ok := set.NextSet(0); ok; n, ok = set.NextSet(n + 1) {
		if nodes == nil || !nodes[n].down() && !nodes[n].drained() {
			gpus += c.NodeGPUs(topology.NodeID(n))
		}
	}
	return gpus
}

// countInService counts the GPUs in service: on nodes that are up, and,
// on drained nodes, those their running jobs still hold (drained nodes
// take no new work; what runs there counts in its queue's use until it
// ends). It counts the cluster's, which the top queues' weighted shares
// divide (inService), each queue's pool's, which caps its share
// (poolGPUs; noLimit for a queue without a pool), and each group's
// (groupGPUs). A parent is capped by its children's caps, a group of
// them counted once, by its union. Shares of GPUs out of service could
// never be used: with half the nodes drained, two equal queues each had
// a share of half the cluster, all that was left, so one took it all and
// the other, below its share, held none of it back. The nodes that are
// up are counted again only when a node has changed status
// (Engine.statusGen); the drained ones every cycle.
func (s *quotaState) countInService(e *Engine) {
	if !s.inServiceKnown || s.inServiceGen != e.statusGen {
		s.inServiceKnown, s.inServiceGen = true, e.statusGen
		s.upGPUs = 0
		s.drainedUp = s.drainedUp[:0]
		for n, st := range e.nodes {
			switch {
			case !st.down() && !st.drained():
				s.upGPUs += e.c.NodeGPUs(topology.NodeID(n))
			case !st.down():
				s.drainedUp = append(s.drainedUp, int32(n))
			}
		}
		for a := range s.poolUp {
			if s.pools[a] != nil {
				s.poolUp[a] = countGPUs(e.c, s.pools[a], e.nodes)
			}
		}
		for g, pool := range s.groupPool {
			s.groupUp[g] = countGPUs(e.c, pool, e.nodes)
		}
	}
	s.inService = s.upGPUs
	for a := range s.poolGPUs {
		s.poolGPUs[a] = noLimit
		if s.pools[a] != nil {
			s.poolGPUs[a] = s.poolUp[a]
		}
	}
	copy(s.groupGPUs, s.groupUp)
	st := e.ledger.State()
	for _, n := range s.drainedUp {
		id := topology.NodeID(n)
		used := e.c.NodeGPUs(id) - st.FreeCount(id)
		if used == 0 {
			continue
		}
		s.inService += used
		for a, pool := range s.pools {
			if pool != nil && pool.Test(uint(n)) {
				s.poolGPUs[a] += used
			}
		}
		for g, pool := range s.groupPool {
			if pool.Test(uint(n)) {
				s.groupGPUs[g] += used
			}
		}
	}
	if s.noQueueUsed > 0 {
		s.leaveOutNoQueue(e)
	}
	if s.outsidePool {
		s.addOutsidePool(e)
	}
	for a := len(s.poolGPUs) - 1; a >= 0; a-- { // children first
		if s.leaf[a] {
			continue
		}
		sum := 0
		for _, k := range s.kids[a] {
			if s.group[k] < 0 {
				sum = min(noLimit, sum+s.poolGPUs[k])
			}
		}
		for _, g := range s.kidGroups[a] {
			members := 0
			for _, k := range s.kids[a] {
				if s.group[k] == g {
					members = min(noLimit, members+s.poolGPUs[k])
				}
			}
			sum = min(noLimit, sum+min(s.groupGPUs[g], members))
		}
		s.poolGPUs[a] = min(s.poolGPUs[a], sum)
	}
}

// checkPoolShared checks that the queues confined to queue a's pool
// (their pools inside it) guarantee no more than its gpus between them:
// each such queue counts once, with the queues below it inside its own
// guarantee. Two sibling pools on the same nodes, each guaranteeing all of
// them, could never both be given their guarantee.
func (s *quotaState) checkPoolShared(cfg *QuotaConfig, a, gpus int) error {
	inside := func(b int) bool { return s.pools[b] != nil && s.pools[a].IsSuperSet(s.pools[b]) }
	sum := 0
	var names []string
	for b := range cfg.Queues {
		if !inside(b) {
			continue
		}
		counted := false // an ancestor inside the pool covers b's guarantee
		for p := s.parent[b]; p >= 0 && !counted; p = s.parent[p] {
			counted = inside(p)
		}
		if !counted {
			sum += cfg.Queues[b].Guarantee
			names = append(names, fmt.Sprintf("%s %d", cfg.Queues[b].Name, cfg.Queues[b].Guarantee))
		}
	}
	if sum > gpus {
		return fmt.Errorf("%w: queue %q: the queues placed inside its pool guarantee %d GPUs between them (%s), above the %d GPUs of its nodes",
			ErrConfig, cfg.Queues[a].Name, sum, strings.Join(names, ", "), gpus)
	}
	return nil
}

// setCounted sets the GPUs counted for job j in its queue to g.
func (e *Engine) setCounted(j *jobRec, g int) {
	if e.quota != nil && j.counted != g {
		e.quota.add(j.queue, g-j.counted)
	}
	j.counted = g
}

// mayBorrow reports whether job j may use GPUs above its queue's
// guarantee: it can be preempted, or no queue has a guarantee to reclaim.
func (e *Engine) mayBorrow(j *jobRec) bool {
	return !e.quota.guaranteed || j.job.Preemption != preempt.Never
}

// quotaFits reports whether job j fits its queue's quota now on
// allocation a (true without quotas): an elastic gang's may be below its
// full size.
func (e *Engine) quotaFits(j *jobRec, a *gang.Allocation) bool {
	return e.quota == nil || e.quota.check(j.queue, a.GPUs(), e.mayBorrow(j), true).code == quotaFits
}

// quotaSpec returns the spec job j, which passed quotaGate, is admitted
// with: spec itself when its queue's quota (checked as a start is) and
// weighted share take the gang at full size (or there are no quotas),
// otherwise a copy (in the engine's scratch) with its elastic members
// cut, the last first and a step at a time, to the largest size they
// take, never below their minimum. Whole-node pods count the GPUs of a
// largest node their member may use, as growth does (quotaRoom).
func (c *cycle) quotaSpec(j *jobRec, spec *gang.Spec) *gang.Spec {
	return c.quotaSpecAt(j, spec, j.gpus)
}

// quotaSpecAt is quotaSpec for a start of at most most GPUs: sizes above
// it are passed over unchecked (a due reservation's placement holds fewer
// GPUs than the gang's full size; the checks are not monotone in the
// GPUs, so that the full size passing says nothing of it: tryStart).
func (c *cycle) quotaSpecAt(j *jobRec, spec *gang.Spec, most int) *gang.Spec {
	e, s := c.e, c.e.quota
	if s == nil {
		return spec
	}
	mayBorrow := e.mayBorrow(j)
	q, g := j.queue, j.gpus
	// Reservations' room (promiseFits) only for a gang it could cut: any
	// other start is checked on the GPUs placed (tryStart), and a check
	// here would cost every tested job a pass over the reservations.
	elastic := j.minGPUs < g
	takes := func(g int) bool {
		return s.check(q, g, mayBorrow, true).code == quotaFits && (s.entitled(q, g) || !s.overShareAt(q, g)) &&
			(!elastic || e.promiseFits(j, g, c.now))
	}
	if g <= most && takes(g) {
		return spec
	}
	t := copySpec(&e.quotaSpec, spec)
	members := t.Members
	for i := len(members) - 1; i >= 0; i-- {
		m := &members[i]
		if m.Min <= 0 || m.Min >= m.Request.Nodes {
			continue
		}
		per := j.podGPUs(i)
		for step := stepOf(m); m.Request.Nodes-step >= m.Min; {
			m.Request.Nodes -= step
			g -= step * per
			if g <= most && takes(g) {
				return t
			}
		}
	}
	// At the minimum: GPUs may be short too, and the start is checked on
	// the GPUs placed (quotaBlocked).
	return t
}

// overShareAt reports whether g more GPUs would take leaf queue q past
// its weighted share while another queue waits below its own.
func (s *quotaState) overShareAt(q, g int) bool {
	a, _ := s.overShare(q, g)
	return a >= 0
}

// checkQueue checks a submitted job's queue and sets its index: a queue
// without children when there are queues, none otherwise; a gang larger
// than its queue could ever hold never fits.
//
// Restored (fits false) under queues changed since the snapshot, a job
// is kept: without queues it runs as any job does without quotas, its
// queue's name kept for a later config with queues; under queues, a job whose queue is not one without
// children (renamed, removed, or given children), or that has none, is
// in no queue (index -1) and marked unfit, its reason naming the queue:
// running, it runs on, counted in no queue; waiting, it waits for quota
// (as any unfit job) until it is cancelled or a config lets it run.
func (e *Engine) checkQueue(j *jobRec, fits bool) error {
	s := e.quota
	name := j.job.Queue
	j.queue = -1
	if s == nil {
		// Restored, the name is kept (and written to snapshots): a
		// config with queues again places the job in its queue.
		if name != "" && fits {
			return fmt.Errorf("%w: job %s: queue %q, but there are no queues (Config.Quotas)", ErrBadJob, j.job.ID, name)
		}
		return nil
	}
	q, ok := s.index[name]
	if (!ok || !s.leaf[q]) && !fits {
		j.unfit = noQueueWhy(name, ok)
		return nil
	}
	if !ok || !s.leaf[q] {
		return fmt.Errorf("%w: job %s: queue %q is not a queue without children", ErrBadJob, j.job.ID, name)
	}
	j.queue = q
	if pool := s.pools[q]; pool != nil {
		// The job's gang is the engine's own copy (validateJob). A member
		// without nodes of its own, or whose nodes include the pool's,
		// gets the pool itself: a set no one changes, shared by the
		// queue's jobs, so that a job of one member with it is still
		// simple (its shape names the queue, hence the pool). The
		// member's own sets are kept for snapshots: a restore under
		// another pool cuts them afresh.
		// Reasons name the pool (AllowedLabel), or the member's own
		// nodes and the pool when those cut it (once: a job submitted
		// again from JobSpec has both already).
		j.ownAllowed = make([]*bitset.BitSet, len(j.job.Gang.Members))
		j.ownLabel = make([]string, len(j.job.Gang.Members))
		for i := range j.job.Gang.Members {
			r := &j.job.Gang.Members[i].Request
			j.ownAllowed[i], j.ownLabel[i] = r.Allowed, r.AllowedLabel
			if r.Allowed != nil {
				if r.Allowed = r.Allowed.Intersection(pool); !r.Allowed.Equal(pool) {
					if !strings.HasSuffix(r.AllowedLabel, s.poolLabel[q]) { // not a JobSpec's again
						r.AllowedLabel = r.AllowedWords() + " or " + s.poolLabel[q]
					}
					continue
				}
			}
			r.Allowed, r.AllowedLabel = pool, s.poolLabel[q]
		}
		j.simple = simpleShape(&j.job.Gang) || pooledShape(&j.job.Gang, pool)
		e.sizeJob(j) // whole nodes: the pool's largest
	}
	if !fits {
		return nil
	}
	// An elastic gang is judged at its minimum: it starts at what its
	// queue's quota takes (quotaSpec); whole nodes of unequal sizes at
	// the smallest it may take (the start is checked on the nodes
	// placed).
	g, what := e.leastWhat(j)
	if !e.mayBorrow(j) && g > s.guar[q] {
		return fmt.Errorf("%w: job %s: %s; a job that cannot be preempted runs within its queue's guarantee, and queue %s has %d",
			ErrNeverFits, j.job.ID, what, name, s.guar[q])
	}
	switch qc := s.neverFits(q, g); {
	case qc.code == quotaMaximum:
		return fmt.Errorf("%w: job %s: %s; %s has a maximum of %d", ErrNeverFits, j.job.ID, what, s.name(qc.at), s.max[qc.at])
	case qc.code == quotaBorrow:
		return fmt.Errorf("%w: job %s: %s; queue %s may use at most %d (guarantee and borrowing limit)", ErrNeverFits, j.job.ID, what, name, s.ceil[q])
	case qc.code == quotaPool:
		return fmt.Errorf("%w: job %s: %s; queue %s could not borrow that much even with nothing in use: %s limits it (guarantees, borrowing and lending limits)",
			ErrNeverFits, j.job.ID, what, name, s.name(qc.at))
	}
	return nil
}

// leastWhat returns the fewest GPUs waiting job j can start with
// (leastGPUs) and says what they are, for the reasons that say it can
// never run.
func (e *Engine) leastWhat(j *jobRec) (int, string) {
	g := j.leastGPUs
	switch {
	case g < j.minGPUs && j.minGPUs < j.gpus:
		return g, fmt.Sprintf("at least %d GPUs at its minimum (its whole nodes on the smallest nodes it may use)", g)
	case g < j.minGPUs:
		return g, fmt.Sprintf("at least %d GPUs (its whole nodes on the smallest nodes it may use)", g)
	case g < j.gpus:
		return g, fmt.Sprintf("%d GPUs at its minimum", g)
	}
	return g, fmt.Sprintf("%d GPUs", g)
}

// noQueueWhy says why a job restored with queue name, which the queues
// now have only as a parent (known) or not at all, can never start.
func noQueueWhy(name string, known bool) string {
	switch {
	case name == "":
		return "the job has no queue, and queues are configured now (Config.Quotas): it cannot start unless it is submitted again to a queue"
	case known:
		return fmt.Sprintf("queue %q has queues below it now, and a job runs only in a queue without children: it cannot start unless it is submitted again to one of them", name)
	}
	return fmt.Sprintf("queue %q is not in the config (Config.Quotas): it cannot start unless it is submitted again to a queue", name)
}

// entitledFirst reorders the ranked queue (e.order and e.prio
// together, stably) so that the jobs their queues' guarantees cover go
// first: going down the queue, a job is covered when its queue's use and
// the GPUs of the covered jobs of its queue before it leave room for it
// within the guarantee (an elastic gang's minimum, when its full size
// does not fit, and whole nodes of unequal sizes at their leastGPUs when
// neither does: reclaim covers those; in a queue with StrictOrder, only while no job of
// it has been left uncovered). Jobs that would borrow come after, so that none
// takes, within a cycle, GPUs that another queue's guarantee covers (a
// job started in the cycle could not be reclaimed in it).
func (e *Engine) entitledFirst() {
	s := e.quota
	clear(s.cum)
	clear(s.uncovered)
	s.covered = slices.Grow(s.covered[:0], len(e.order))[:len(e.order)]
	for i, j := range e.order {
		q := j.queue
		free := j.claim == nil && j.unfit == ""
		g, room := j.gpus, 0
		if free { // a job in no queue (q < 0) is not
			room = s.guar[q] - s.used[q] - s.cum[q]
		}
		if free && !s.uncovered[q] && g > room {
			// An elastic gang whose minimum the guarantee covers is
			// covered at it, and whole nodes of unequal sizes at their
			// leastGPUs, as reclaim counts them (reclaimGPUs): a
			// borrower tested first would take GPUs it then reclaims.
			g = min(g, j.minGPUs)
			if g > room {
				g = min(g, j.leastGPUs)
			}
		}
		s.covered[i] = free && !s.uncovered[q] && g <= room
		switch {
		case s.covered[i]:
			s.cum[q] += g
		case free && s.strict[q]:
			// A queue in strict order keeps its order: no job of it
			// below this one goes ahead of it (one with a reservation
			// too: it may lose it in the walk, and then heads the
			// queue; one its limits do not hold back now may be held
			// back once a job it would let go first has started, or by
			// its weighted share).
			s.uncovered[q] = true
		}
	}
	// Nothing to move unless an uncovered job precedes a covered one
	// (with no guarantees, never).
	first := slices.Index(s.covered, false)
	if first < 0 || !slices.Contains(s.covered[first:], true) {
		return
	}
	s.orderTmp = append(s.orderTmp[:0], e.order...)
	s.prioTmp = append(s.prioTmp[:0], e.prio...)
	k := 0
	for _, first := range []bool{true, false} {
		for i, j := range s.orderTmp {
			if s.covered[i] == first {
				e.order[k], e.prio[k] = j, s.prioTmp[i]
				j.rank = k
				k++
			}
		}
	}
}

// initQuota prepares a cycle's quota state: every queue may search for
// victims to reclaim, and the weighted shares of what is above the
// guarantees are computed from each queue's demand (its use plus its
// waiting jobs' GPUs); order is the cycle's ranking of the waiting jobs.
func (c *cycle) initQuota(order []*jobRec) {
	s := c.e.quota
	if s == nil {
		return
	}
	n := len(s.names)
	s.fails.reset()
	clear(s.canUse)
	clear(s.head)
	s.naive, c.inServiceBuilt, c.probes = c.naive, false, 0
	if s.probe == nil {
		s.probe = c.queueCanUse
	}
	for a := range n {
		s.demand[a], s.minGang[a] = 0, noLimit
		if s.leaf[a] {
			s.demand[a] = s.used[a]
		}
	}
	for _, j := range c.e.jobs.pending {
		if j.claim == nil && j.unfit == "" {
			// Demand is what the queue's jobs would take: the upper
			// bound (whole nodes at the largest node they may use,
			// where the placer may put them), capped by the queue's
			// limits in shares. minGang is whether its smallest gang
			// could start within its share (hungry): whole nodes of
			// unequal sizes at the lower bound (smallGang), as the gate
			// lets them by there and they are placed on small nodes
			// when their quota refuses larger ones (startOnSmaller).
			// At the largest node, a queue whose two whole nodes fit
			// its share on small nodes was not hungry, and a sibling
			// took the small nodes beyond its own share.
			s.demand[j.queue] += j.gpus
			s.minGang[j.queue] = min(s.minGang[j.queue], j.smallGang())
		}
	}
	// A queue in strict order starts its first job before any other: its
	// smallest gang that could start is that one (else two such queues,
	// each holding the other back by its weighted share for a small job
	// that waits behind a large one, would start nothing).
	clear(s.first)
	clear(s.preHead)
	if s.anyStrict {
		for _, j := range order {
			q := j.queue
			if j.unfit != "" || !s.strict[q] || j.claim != nil || j.resv != nil || s.first[q] != nil && s.preHead[q] != nil {
				continue
			}
			held := c.e.heldByLimits(j)
			if s.first[q] != nil && !held || !c.couldRun(j) {
				continue
			}
			if s.first[q] == nil {
				s.first[q], s.minGang[q] = j, j.smallGang()
			}
			if held {
				s.preHead[q] = j
			}
		}
	}
	for a := range n {
		s.need[a] = 0
		if s.leaf[a] {
			s.need[a] = s.demand[a]
		}
	}
	for a := n - 1; a >= 0; a-- {
		if p := s.parent[a]; p >= 0 {
			s.demand[p] += s.demand[a]
			s.need[p] += max(s.need[a], s.keep[a])
			s.minGang[p] = min(s.minGang[p], s.minGang[a])
		}
	}
	s.countInService(c.e)
	s.shares()
}

// leaveOutNoQueue takes the GPUs that jobs in no queue hold (restored
// after their queue went; noQueueUsed) out of the pools and groups their
// nodes are in, as shares leaves them out of the cluster's: a queue on a
// pool that such a job half fills could use only the other half, and a
// share of the whole held GPUs back from its siblings that it could never
// use. Called only while such jobs hold GPUs (after a restore that
// removed a queue), so it may walk the active jobs.
func (s *quotaState) leaveOutNoQueue(e *Engine) {
	take := func(n uint, used int) {
		for q, pool := range s.pools {
			if pool != nil && pool.Test(n) {
				s.poolGPUs[q] -= used
			}
		}
		for g, pool := range s.groupPool {
			if pool.Test(n) {
				s.groupGPUs[g] -= used
			}
		}
	}
	for _, j := range e.jobs.running {
		// A job being preempted counts for no queue (noQueueUsed): its
		// GPUs are its claimer's, counted in that queue's use.
		if j.queue < 0 && j.alloc != nil && j.phase != StatePreempting {
			e.eachInService(j.alloc, take)
		}
	}
	for _, j := range e.jobs.pending {
		if j.queue < 0 && j.claim != nil {
			e.eachInService(&j.claim.alloc, take)
		}
	}
}

// addOutsidePool adds to the caps of each queue on a job's path (and of
// its group) the GPUs the job holds outside that queue's pool (or the
// group's union): gangs restored under a narrowed pool run on where they
// are, counted in their queue's use, and a cap of the pool alone gave
// the queue a share below what it already used, holding its pool's free
// GPUs back from its own jobs while they stood idle. Set by a restore
// (recountQuotas), it clears itself once no such job is left.
func (s *quotaState) addOutsidePool(e *Engine) {
	found, q := false, -1
	add := func(n uint, used int) {
		for a := q; a >= 0; a = s.parent[a] {
			if pool := s.pools[a]; pool != nil && !pool.Test(n) {
				s.poolGPUs[a] += used
				found = true
			}
			if g := s.group[a]; g >= 0 && !s.groupPool[g].Test(n) {
				s.groupGPUs[g] += used
			}
		}
	}
	for _, j := range e.jobs.running {
		if j.queue < 0 || j.alloc == nil || j.phase == StatePreempting {
			continue // its GPUs are no queue's, or its claimer's
		}
		q = j.queue
		e.eachInService(j.alloc, add)
	}
	s.outsidePool = found
}

// eachInService calls f with each node of allocation a that is not down
// (in service) and the GPUs a holds there.
func (e *Engine) eachInService(a *gang.Allocation, f func(n uint, used int)) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			if !e.nodes[x.Node].down() {
				f(uint(x.Node), bits.OnesCount64(x.GPUs))
			}
		}
	}
}

// shares divides the GPUs in service (less those jobs in no queue hold:
// noQueueUsed) among the top queues and each
// queue's share among its children, top down: each child gets its need
// (its demand, and for a parent its children's guarantees kept idle from
// lending) up to its guarantee, and what is left (less the guarantees kept
// idle from lending) goes to the children that want more, by weight,
// none beyond its demand, maximum, borrowing limit or the GPUs of its
// pool, and siblings on overlapping pools together none beyond the GPUs
// of their union (water filling): a queue confined to a pool that its
// jobs fill holds no GPUs outside it back from the others. The union of
// a group of siblings is one cap: three siblings on pools that overlap
// pairwise but not all at once may together be given more than two of
// them can use (each still within its own pool).
func (s *quotaState) shares() {
	n := len(s.names)
	s.fill(n, float64(max(0, s.inService-s.noQueueUsed)))
	for a := range n {
		if !s.leaf[a] {
			// What it was given for its children's kept guarantees too.
			s.fill(a, s.share[a]+float64(s.need[a]-s.demand[a]))
		}
	}
}

// fill shares capacity among the children of parent slot p, each
// group of siblings on overlapping pools together within the GPUs of
// their union (groupSiblings).
func (s *quotaState) fill(p int, capacity float64) {
	kids, groups := s.kids[p], s.kidGroups[p]
	rest := capacity
	for _, g := range groups {
		s.groupLeft[g] = float64(s.groupGPUs[g])
	}
	for _, c := range kids {
		// A parent's need counts its children's kept guarantees: its
		// share covers them and its other children's demand (with its
		// demand only, a child's kept guarantee took the share meant for
		// a sibling's jobs).
		base := min(s.need[c], s.guar[c])
		s.share[c] = float64(base)
		// The guarantee it keeps from lending stays idle for it (eff0:
		// its children's, with nothing in use): no one else's share.
		rest -= float64(max(base, s.eff0[c], s.keep[c]))
		// Its maximum and its pool bound its use, not its children's
		// guarantees kept idle (kept), which only its borrowing limit
		// (ceil, on its effective use) bounds too; nor do kept GPUs take
		// room in its group's pools.
		kept := s.need[c] - s.demand[c]
		s.want[c] = float64(max(0, min(s.need[c], s.ceil[c], min(s.demand[c], s.max[c], s.poolGPUs[c])+kept)-base))
		if g := s.group[c]; g >= 0 {
			s.groupLeft[g] -= float64(max(0, base-kept))
		}
	}
	// Water filling: every child that wants more and whose group has
	// room gets unit x its weight, unit as large as the rest, a group's
	// room or a child's want allows; the rest goes round again.
	active := func(c int) bool {
		g := s.group[c]
		return s.want[c] > 1e-9 && (g < 0 || s.groupLeft[g] > 1e-9)
	}
	give := func(c int, x float64) {
		s.share[c] += x
		s.want[c] -= x
		rest -= x
		if g := s.group[c]; g >= 0 {
			s.groupLeft[g] -= x
		}
	}
	for rest > 1e-9 {
		wsum := 0.0
		for _, g := range groups {
			s.groupW[g] = 0
		}
		for _, c := range kids {
			if active(c) {
				wsum += s.weight[c]
				if g := s.group[c]; g >= 0 {
					s.groupW[g] += s.weight[c]
				}
			}
		}
		if wsum == 0 {
			break
		}
		unit, byGroup := rest/wsum, false
		for _, g := range groups {
			if s.groupW[g] > 0 && s.groupLeft[g] < unit*s.groupW[g] {
				unit, byGroup = s.groupLeft[g]/s.groupW[g], true
			}
		}
		capped := false
		for _, c := range kids {
			if w := s.want[c]; active(c) && w <= unit*s.weight[c] {
				give(c, w)
				s.want[c], capped = 0, true
			}
		}
		if capped {
			continue
		}
		for _, c := range kids {
			if active(c) {
				give(c, unit*s.weight[c])
			}
		}
		if !byGroup {
			break
		}
	}
	// A parent's share is for its jobs: what it was given for its
	// children's guarantees kept idle is not (shares passes it down).
	for _, c := range kids {
		s.share[c] = max(0, s.share[c]-float64(s.need[c]-s.demand[c]))
	}
}

// hungry returns a child of parent slot p other than a that waits below
// its share: it wants more than it uses, its smallest waiting gang fits
// within its share, and one of its waiting jobs could use GPUs as they
// free up (usable); or -1.
func (s *quotaState) hungry(p, a int) int {
	for _, c := range s.kids[p] {
		if c != a && s.demand[c] > s.used[c] && float64(s.used[c]+s.minGang[c]) <= s.share[c]+1e-9 && s.usable(c) {
			return c
		}
	}
	return -1
}

// usable reports whether a waiting job of queue c's subtree could use
// GPUs as they free up: it fits the cluster with every active job ended,
// on the nodes in service. A queue whose waiting jobs cannot (a gang
// required in one leaf while a node of every leaf is drained) holds no
// GPUs back from the others by its share: they would stand idle. Asked
// only of a queue that would hold GPUs back; the answer holds for the
// cycle, a yes while the job that gave it still waits without a claim
// (a no cannot turn: no job is added, and the nodes stay as they are).
// The naive path (tests) asks every time.
func (s *quotaState) usable(c int) bool {
	if w := s.witness[c]; s.canUse[c] > 0 && (w.phase != StatePending || w.claim != nil) || s.naive {
		s.canUse[c] = 0
	}
	if s.canUse[c] == 0 {
		s.canUse[c], s.witness[c] = -1, s.probe(c)
		if s.witness[c] != nil {
			s.canUse[c] = 1
		}
	}
	return s.canUse[c] > 0
}

// queueCanUse answers quotaState.usable for queue q: a waiting job of its
// subtree without a claim that fits on the nodes in service once every
// active job has ended (reservations and claims are not kept off: they
// end too), or nil. A simple job of a shape found not to fit in the
// cycle is not tried again (the last 16 such shapes are kept), nor is a
// job found not to fit the same nodes in service in an earlier cycle
// (Engine.inServiceGen).
func (c *cycle) queueCanUse(q int) *jobRec {
	e, s := c.e, c.e.quota
	c.buildInService()
	for _, j := range e.jobs.pending {
		if j.claim != nil || j.unfit != "" || !s.isAncestor(q, j.queue) {
			continue
		}
		if !c.naive && (j.noFitGen == e.inServiceGen || j.shapeID != 0 && slices.Contains(c.noFit[:], j.shapeID)) {
			if e.checkEach && e.admitOn(e.inService, &j.job.Gang, true) {
				panic(fmt.Sprintf("backfill: job %s fits the nodes in service where the share gate's probe skipped it", j.job.ID))
			}
			continue
		}
		c.probes++
		if e.admitOn(e.inService, &j.job.Gang, c.naive) {
			return j
		}
		j.noFitGen = e.inServiceGen
		if j.shapeID != 0 {
			c.noFit[c.noFitN%len(c.noFit)] = j.shapeID
			c.noFitN++
		}
	}
	return nil
}

// buildInService makes e.inService the nodes in service with every
// active job ended, once per cycle (every time on the naive path), and
// numbers a change of them (Engine.inServiceGen).
func (c *cycle) buildInService() {
	e := c.e
	if c.inServiceBuilt && !c.naive {
		return
	}
	e.allEnded(&e.inService)
	c.inServiceBuilt = true
	c.noFit, c.noFitN = [16]uint64{}, 0
	if e.inServiceLast == nil || !e.inServiceLast.Equal(e.inService) {
		e.inServiceGen++
		if e.inServiceLast == nil {
			e.inServiceLast = e.inService.Clone()
		} else if err := e.inService.CopyInto(e.inServiceLast); err != nil {
			panic(err)
		}
	}
}

// couldRun reports whether waiting job j fits the nodes in service once
// every active job has ended (queueCanUse's probe): a job that could not
// does not head its queue's strict order, nor is it its first job.
func (c *cycle) couldRun(j *jobRec) bool {
	e := c.e
	c.buildInService()
	if !c.naive && j.noFitGen == e.inServiceGen {
		return false
	}
	if e.admitOn(e.inService, &j.job.Gang, c.naive) {
		return true
	}
	j.noFitGen = e.inServiceGen
	return false
}

// overShare returns the queue on leaf q's path at which g more GPUs would
// borrow beyond the queue's weighted share while a sibling waits below
// its own (and that sibling), or -1.
func (s *quotaState) overShare(q, g int) (int, int) {
	n := len(s.names)
	for a := q; a >= 0; a = s.parent[a] {
		slot := s.parent[a]
		if slot < 0 {
			slot = n
		}
		if s.used[a]+g <= s.guar[a] || float64(s.used[a]+g) <= s.share[a]+1e-9 {
			continue
		}
		if h := s.hungry(slot, a); h >= 0 {
			return a, h
		}
	}
	return -1, -1
}

// quotaGate decides, before anything else is tried, whether waiting job
// j may start as far as quotas go. It reports true when j waits (w says
// why, or that it reclaims): its queue's quota has no room for it and it
// cannot reclaim, or it would take its queue beyond its weighted share
// of what is above the guarantees while another queue waits below its
// own. A job that waits for quota gives up its reservation and its hold,
// except a reserved job whose planned start is ahead, when its queue's
// limits have room for it then: it keeps its reservation and does not
// start early.
//
// An elastic gang (gang.Member.Min) that its queue's quota or weighted
// share does not take at full size is gated at its minimum; it then
// starts at the largest size they take (quotaSpec), as Kueue's partial
// admission does. Whatever passed the gate, a start is checked again on
// the GPUs actually placed (tryStart, quotaBlocked).
func (c *cycle) quotaGate(j *jobRec, w *Waiting) bool {
	e, s := c.e, c.e.quota
	q, g := j.queue, j.gpus
	// A reservation given up here is named with the reason (quotaWait's
	// move, nameQuotaDrop): recountWaits leaves that reason as told.
	fresh := j.resv == nil
	if j.unfit != "" {
		c.quotaWait(j, quotaCheck{quotaPool, q}, j.unfit, w)
		return true
	}
	if h := s.head[q]; h != nil && j.resv == nil && j.claim == nil {
		// Its queue starts its jobs in order, and one ranked above waits
		// for quota: the room goes to that one first.
		w.Code, w.Blocker = WaitQuota, h.job.ID
		w.Detail = s.reason(q, quotaMsg{kind: 4, at: -1, x: h.seq}, func() string {
			return fmt.Sprintf("%s starts its jobs in rank order (strict order), and job %s, ranked above this one, waits for quota", s.display[q], h.job.ID)
		})
		c.dropPromises(j, w.Blocker)
		return true
	}
	mayBorrow := e.mayBorrow(j)
	qc := s.check(q, g, mayBorrow, false)
	entitled := s.entitled(q, g)
	if min := j.minGPUs; min < g && (qc.code != quotaFits || !entitled && s.overShareAt(q, g)) {
		// An elastic gang its quota or its share does not take at full
		// size may start smaller (quotaSpec): it is gated at its minimum.
		if m := s.check(q, min, mayBorrow, false); m.code == quotaFits {
			g, qc = min, m
		} else if qc.code != quotaFits {
			// Neither fits: the reason says why not even its minimum
			// does (the decision is the same). The check is not monotone
			// in the GPUs (the cluster's pool binds only where the GPUs
			// counted leave room): where its full size passes and its
			// minimum does not, it is decided at full size, as before.
			qc = m
		}
	}
	if least := j.leastGPUs; least < g && (qc.code != quotaFits || !entitled && s.overShareAt(q, g)) {
		// Whole nodes of unequal sizes: on the smallest nodes it may use
		// it takes fewer GPUs (leastGPUs). It is gated there; the start
		// is checked on the nodes placed, smaller ones tried when the
		// quota refuses those (startOnSmaller).
		if m := s.check(q, least, mayBorrow, false); m.code == quotaFits {
			g, qc = least, m
		}
	}
	// A reservation ahead: atStart says why its queue's limits have no
	// room for it at its planned start either (the reason is given with
	// the drop).
	var atStart quotaCheck
	atStartWhy := ""
	if r := j.resv; r != nil && r.start.After(c.now) && qc.code != quotaFits {
		var fits bool
		if atStart, _, atStartWhy, fits = e.promiseCheck(j, min(g, j.minGPUs), true, r.start); fits {
			// Not due, and its queue's limits have room for it at its planned
			// start (an elastic gang at its minimum, as it was reserved), once
			// the jobs started in front of it that end before it have ended
			// (promiseCheck kept that room): it does not start early, and
			// keeps its reservation, whatever its weighted share now (the
			// share is read when it is due). Its queue's guarantee is
			// reclaimed for it at once, as for any job it covers. (Within its
			// limits now but over its weighted share, it waits for quota as
			// any job does, and gives its reservation up: a share moves with
			// every queue's demand.)
			if c.reclaimGuarantee(j, w) {
				return true
			}
			*w = Waiting{Job: j.job.ID, Code: WaitReserved, Until: r.start}
			return true
		}
		if _, by := c.lateTaker(atStart, r.start); by != nil {
			// A job started late in this cycle, after keepBook kept the
			// reservation up, takes the room it lacks at its start: the
			// next cycle moves it to that job's end (lateQuota), as it
			// would have, had the job started before it was kept up.
			*w = Waiting{Job: j.job.ID, Code: WaitReserved, Until: r.start}
			return true
		}
	}
	switch {
	case qc.code == quotaFits && entitled:
		return false
	case qc.code == quotaFits:
		a, h := s.overShare(q, g)
		if a < 0 {
			return false
		}
		c.shareWait(j, a, h, w)
		if fresh && g == j.gpus && j.minGPUs >= g && j.leastGPUs >= g {
			j.quotaShare = true // (recountWaits)
		}
	default:
		c.overQuota(j, qc, g, 0, w)
		if atStartWhy != "" && j.resv == nil {
			c.nameQuotaDrop(j, atStart, atStartWhy, w)
		}
		// At its full size, refused by its queue's limits alone, with no
		// reservation given up: recountWaits may tell its queues' use
		// anew.
		j.quotaAt = quotaCheck{}
		if w.Code == WaitQuota && fresh && j.resv == nil && g == j.gpus && j.minGPUs >= g && j.leastGPUs >= g {
			j.quotaAt = qc
		}
	}
	return true
}

// shareWait makes job j wait for quota, past its weighted share at queue
// a while sibling h waits below its own (overShare), and gives up its
// reservation and its hold; j heads its queue's strict order (noteHead).
func (c *cycle) shareWait(j *jobRec, a, h int, w *Waiting) {
	s := c.e.quota
	w.Code, w.Blocker = WaitQuota, s.names[a]
	w.Detail = c.shareWhy(j, a, h)
	c.dropPromises(j, w.Blocker)
	c.noteHead(j, w)
}

// shareWhy is shareWait's reason, from the queues' use as it is now.
func (c *cycle) shareWhy(j *jobRec, a, h int) string {
	s := c.e.quota
	return s.reason(j.queue, quotaMsg{kind: 1, at: a, h: h, x: math.Float64bits(s.share[a])}, func() string {
		return fmt.Sprintf("%s: %d GPUs in use, %d guaranteed; the job would take it past its weighted share of %.0f (weight %g) while %s waits below its own",
			s.name(a), s.used[a], s.guar[a], s.share[a], s.weight[a], s.name(h))
	})
}

// shareFits reports whether whole-node job j, placed on g GPUs, more than
// its leastGPUs (the gate may have let it by there, its weighted share
// refusing its largest nodes), stays within its weighted share, or its
// queue's guarantee covers it (true for any other job, whose share the
// gate read at its size, and for one starting on a claim, counted
// already).
func (e *Engine) shareFits(j *jobRec, g int) bool {
	if j.wholeG == nil || j.claim != nil || g <= j.leastGPUs {
		return true
	}
	s := e.quota
	return s.entitled(j.queue, g) || !s.overShareAt(j.queue, g)
}

// strictTested reports whether job j, which the MaxJobsTested window
// passes over, is tested all the same: it is the first job of its
// queue's strict order, or the first its limits held back when the cycle
// began (quotaState.first, preHead). Otherwise, when its queue's strict
// order has no head yet and its limits hold it back now, it becomes the
// head untested (a job ranked below it, in the window, would otherwise
// start ahead of it).
func (c *cycle) strictTested(j *jobRec) bool {
	e, s := c.e, c.e.quota
	if s == nil || !s.anyStrict || j.queue < 0 || !s.strict[j.queue] {
		return false
	}
	q := j.queue
	if s.first[q] == j || s.preHead[q] == j {
		return true
	}
	if s.head[q] == nil && j.resv == nil && j.claim == nil && j.unfit == "" && e.heldByLimits(j) && c.couldRun(j) {
		s.head[q] = j
	}
	return false
}

// noteHead makes job j, which waits (w), the head of its queue's strict
// order for the rest of the walk when the queue has StrictOrder, no job
// heads it yet, and j waits for quota (a limit or its weighted share)
// without a reservation (a reserved job's room is kept by its promise; a
// job that reclaims its guarantee holds a claim) and could run on the
// nodes in service (one that could not would hold its queue back for
// nothing).
func (c *cycle) noteHead(j *jobRec, w *Waiting) {
	s := c.e.quota
	if q := j.queue; q >= 0 && s.strict[q] && s.head[q] == nil && w.Code == WaitQuota && j.resv == nil && j.claim == nil && j.unfit == "" && c.couldRun(j) {
		s.head[q] = j
	}
}

// waitsForQuota reports whether waiting job j's queue's quota holds it
// back now (false without quotas): the quota check (as quotaGate makes
// it) refuses even its smallest size (an elastic gang's minimum), at a
// queue's maximum, borrowing limit or a parent's limit, or because it
// may not be preempted and asks beyond its queue's guarantee, or j waits
// behind a job of its queue's strict order that the check refuses
// (quotaState.preHead) (a job its
// guarantee covers that waits for borrowed GPUs to be reclaimed counts
// as held back too: reclaim ends such waits within the grace). A job
// holding a claim is not held back: its claim's GPUs are counted in its
// queue's use already. Its weighted share is not read: that holds a job
// back only while another queue has a job that could start, one cycle at
// a time.
func (c *cycle) waitsForQuota(j *jobRec) bool {
	e, s := c.e, c.e.quota
	if s == nil || j.claim != nil {
		return false
	}
	if j.unfit != "" || e.heldByLimits(j) {
		return true
	}
	// Behind the first job of its queue's strict order that its limits
	// hold back.
	h := s.preHead[j.queue]
	return h != nil && h != j && h.rank < j.rank && j.resv == nil
}

// heldByLimits reports whether waiting job j's queue's limits refuse
// even its smallest size now (the check quotaGate makes, its weighted
// share aside): its leastGPUs (whole nodes on the smallest nodes it may
// use, as the gate lets it by).
func (e *Engine) heldByLimits(j *jobRec) bool {
	return e.quota.check(j.queue, j.leastGPUs, e.mayBorrow(j), false).code != quotaFits
}

// overQuota fills w for job j, which its queue's quota does not take at
// g GPUs (qc says where it binds): a job its queue's guarantee covers (entitled)
// looks for borrowed GPUs to reclaim first; otherwise it waits for quota,
// and gives up its reservation and its hold. placed, when not 0, is the
// GPUs its whole nodes took where they were placed, more than on the
// smallest nodes it may use (its leastGPUs): the reason says so, unless
// a job without a reservation is reserved on smaller nodes instead
// (reserveBlocked).
func (c *cycle) overQuota(j *jobRec, qc quotaCheck, g, placed int, w *Waiting) {
	if c.reclaimGuarantee(j, w) {
		return
	}
	if placed > 0 && j.resv == nil && c.reserveBlocked(j, w) {
		return
	}
	c.quotaWait(j, qc, c.overWhy(j, qc, g, placed), w)
}

// overWhy is overQuota's reason for job j refused by qc at g GPUs
// (placed: see overQuota), from the queues' use as it is now.
func (c *cycle) overWhy(j *jobRec, qc quotaCheck, g, placed int) string {
	s, q := c.e.quota, j.queue
	entitled := c.e.reclaimGPUs(j) > 0 && !c.e.reclaimTakesPromise(j, c.e.reclaimGPUs(j), c.now)
	k := quotaMsg{kind: 2, code: qc.code, at: qc.at, g: g, placed: placed}
	if placed > 0 {
		k.least = j.leastGPUs
	}
	if entitled {
		k.kind = 3
	}
	return s.reason(q, k, func() string {
		m := s.explain(q, g, qc)
		if placed > 0 {
			m += fmt.Sprintf("; its whole nodes take %d GPUs on the nodes free now (%d on the smallest nodes it may use)", placed, k.least)
		}
		if entitled {
			m += fmt.Sprintf("; below its guarantee (%d of %d GPUs), it waits for borrowed GPUs to be reclaimed", s.used[q], s.guar[q])
		}
		return m
	})
}

// neverWhy says why waiting job j can never run in its queue under the
// current limits, as checkQueue would refuse it at Submit ("" when it
// can): at its minimum (an elastic gang), and within its queue's
// guarantee when it may not borrow. A restore under lowered limits keeps
// such a job.
func (e *Engine) neverWhy(j *jobRec) string {
	s, q := e.quota, j.queue
	g, what := e.leastWhat(j)
	if g == j.minGPUs {
		what = fmt.Sprintf("%d GPUs", g) // its minimum: the reason says it is judged there
	}
	if !e.mayBorrow(j) && g > s.guar[q] {
		return fmt.Sprintf("%s; a job that cannot be preempted runs within its queue's guarantee, and %s has %d: it cannot start unless the guarantee is raised", what, s.name(q), s.guar[q])
	}
	return s.never(q, g, what)
}

// quotaBlockedWait fills w for job j, whose placement on e.alloc its
// queue's quota does not take (tryStart): as the gate would have, had it
// known the GPUs placed (whole nodes smaller than the largest, an elastic
// gang that fits only at a size its quota does not take while the GPUs in
// use seemed to leave no room).
func (c *cycle) quotaBlockedWait(j *jobRec, w *Waiting) {
	e, s := c.e, c.e.quota
	*w = Waiting{Job: j.job.ID}
	g := c.blockedGPUs
	qc := s.check(j.queue, g, e.mayBorrow(j), true)
	overShare := qc.code == quotaFits && !e.shareFits(j, g)
	if qc.code == quotaFits && !overShare {
		// Reservations of others leave no room (promiseCheck).
		if r := j.resv; r != nil {
			// Not due, it would start early: it waits for its planned
			// start. Due, it keeps its reservation as well (as the room
			// kept for a reservation of its queue due before it,
			// keptOwn, frees once that one starts), but its planned
			// start is past: Detail says why its queue's quota does not
			// take it now.
			w.Code, w.Until = WaitReserved, r.start
			if !r.start.After(c.now) {
				_, _, w.Detail, _ = e.promiseCheck(j, g, true, c.now)
			}
			return
		}
		pc, _, why, _ := e.promiseCheck(j, g, true, c.now)
		c.quotaWait(j, pc, why, w)
		return
	}
	if r := j.resv; r != nil && j.wholeG != nil && r.alloc.GPUs() < g && e.promiseFits(j, e.minGPUsOf(r), later(r.start, c.now)) {
		// Whole nodes placed on larger nodes than its reservation's
		// (whose GPUs are not free yet), which its queue's limits take
		// at its planned start (reserveOnSmaller planned it there): it
		// keeps its reservation and does not start early, as the gate
		// keeps one whose queue has room for it then. Its guarantee is
		// reclaimed for it at once, as for any job it covers.
		if c.reclaimGuarantee(j, w) {
			return
		}
		*w = Waiting{Job: j.job.ID, Code: WaitReserved, Until: r.start}
		if !r.start.After(c.now) {
			if o := c.overrunOn(&r.alloc); o != nil {
				w.Blocker = o.job.ID
			}
		}
		return
	}
	if overShare {
		// Within its limits, past its weighted share on the nodes
		// placed (and on the smaller ones tried): it waits for quota,
		// as the gate makes a job over its share wait.
		a, h := s.overShare(j.queue, g)
		c.shareWait(j, a, h, w)
		return
	}
	placed := 0
	if j.leastGPUs < g {
		placed = g // whole nodes larger than the smallest it may use
	}
	c.overQuota(j, qc, g, placed, w)
}

// reserveBlocked gives whole-node job j, without a reservation, whose
// placement now its queue's quota refuses (on larger nodes than the
// smallest it may use) while smaller nodes are taken, a reservation
// when a slot is open to it: at its earliest planned start, its
// whole-node pods planned again on smaller nodes when its quota refuses
// that one (reserveOnSmaller), as a job tested without free GPUs is. A
// held job lets go of its hold for it (HoldPlanned), as keepHold does. It
// reports whether j was reserved (w says so); when no start ahead is
// found that its quota takes, j waits for quota as before.
func (c *cycle) reserveBlocked(j *jobRec, w *Waiting) bool {
	e := c.e
	if j.wholeG == nil || j.dropped || !c.mayReserveFor(j) {
		return false
	}
	spec, _ := c.specFor(j)
	t, found := e.search(c.now, query{j: j, spec: spec})
	if !found {
		return false
	}
	if !e.promiseFits(j, e.plannedGPUs(j), t) {
		at, _, ok := c.reserveOnSmaller(j, spec, t)
		if !ok {
			return false
		}
		t = at
	}
	if !t.After(c.now) {
		// A start now is tryStart's to make (it refused this one).
		return false
	}
	if h := e.book.holdOf(j); h != nil {
		c.plan.HoldEnds = append(c.plan.HoldEnds, HoldEnd{Job: j.job.ID, Cause: HoldPlanned, Held: h.held})
		c.releaseHold(h)
	}
	before := e.cacheKey(c.now)
	c.reserveAt(j, t, w)
	e.prof.reserved(j, before, e.cacheKey(c.now))
	return true
}

// dropPromises drops the reservation and the hold of a job that waits
// for quota, queue by's: a dropped reservation is a move (CauseQuota).
func (c *cycle) dropPromises(j *jobRec, by string) {
	e := c.e
	if r := j.resv; r != nil {
		c.plan.Moves = append(c.plan.Moves, Move{Job: j.job.ID, From: r.start, Cause: CauseQuota, By: by})
		c.letGo(r)
		e.book.remove(r)
		c.invalidate()
	}
	if h := e.book.holdOf(j); h != nil {
		c.plan.HoldEnds = append(c.plan.HoldEnds, HoldEnd{Job: j.job.ID, Cause: HoldQuota, Held: h.held})
		c.releaseHold(h)
		c.invalidate()
	}
}

// nameQuotaDrop names, for job j whose reservation the quota gate just
// dropped (the last move of the plan), why its planned start has no room
// either: check qc at its start binds (at a queue, or the cluster's pool:
// the move is then blamed on j's own queue), and w's reason says so after
// why it cannot start now.
func (c *cycle) nameQuotaDrop(j *jobRec, qc quotaCheck, why string, w *Waiting) {
	s := c.e.quota
	if n := len(c.plan.Moves); n > 0 && c.plan.Moves[n-1].Job == j.job.ID && c.plan.Moves[n-1].Cause == CauseQuota {
		c.plan.Moves[n-1].By = s.names[j.queue]
		if qc.at >= 0 {
			c.plan.Moves[n-1].By = s.names[qc.at]
		}
	}
	if w.Code == WaitQuota {
		w.Detail += "; it gives up its reservation: " + why
	}
}

// reclaimGPUs returns the GPUs job j may reclaim its queue's guarantee
// for: its size when the guarantee covers it, else an elastic gang's
// minimum when the guarantee covers that (it then starts cut, as its
// quota takes it: quotaSpec), else, for whole nodes of unequal sizes,
// its leastGPUs when the guarantee covers that (its whole-node pods
// then placed on the smallest nodes they may use: onSmallest), else 0.
func (e *Engine) reclaimGPUs(j *jobRec) int {
	s := e.quota
	if s.entitled(j.queue, j.gpus) {
		return j.gpus
	}
	if m := j.minGPUs; m < j.gpus && s.entitled(j.queue, m) {
		return m
	}
	if l := j.leastGPUs; l < j.minGPUs && s.entitled(j.queue, l) {
		return l
	}
	return 0
}

// reclaimGuarantee reclaims job j's queue's guarantee for it when the
// guarantee covers it (reclaim), for its spec, or an elastic gang's at
// its minimum when the guarantee covers only that, unless the claim would
// take the room the reservations of its queue need (reclaimTakesPromise):
// it reports whether a claim was made.
func (c *cycle) reclaimGuarantee(j *jobRec, w *Waiting) bool {
	e := c.e
	g := e.reclaimGPUs(j)
	if g == 0 || e.reclaimTakesPromise(j, g, c.now) {
		return false
	}
	spec, _ := c.specFor(j)
	if g < j.gpus {
		spec = e.atMinimum(spec)
	}
	if g < j.minGPUs {
		spec = e.onSmallest(spec, &e.planNodes)
	}
	return c.reclaim(j, spec, g, w)
}

// reclaimTakesPromise reports whether a reclaim of g GPUs for job j at
// now would take the room under its own queue's limits (its maximum,
// its guarantee plus borrowing limit) that a reservation of its queue
// for a job of its class or a higher one needs at its planned start: one
// whose window overlaps j's run (from now to its time limit's end;
// without a limit, to the end of time), read on the counts its own
// promise check reads there (roomTakenAt: the jobs that end by then
// taken out, the reservations that run by then counted in, each at its
// gang's minimum). A plain start is refused such room (promiseCheck); a
// reclaim, which frees GPUs of other queues and not its own queue's
// limits, takes it all the same and drops the reservation for quota at
// its start, so it is not made. A job of a higher class may take the
// room of a lower class's reservation (see quotapromise.go). The limits
// above the leaf are not read: the reclaim's victims may free room
// there.
func (e *Engine) reclaimTakesPromise(j *jobRec, g int, now time.Time) bool {
	q := j.queue
	if len(e.book.resv) == 0 || q < 0 {
		return false
	}
	end := MaxTime
	if j.job.TimeLimit > 0 {
		end = now.Add(j.job.TimeLimit)
	}
	for _, r := range e.book.resv {
		if r.job.queue == q && r.job.job.Class >= j.job.Class && e.overlaps(j, r, now, end, true) && e.roomTakenAt(r, j, g, now) {
			return true
		}
	}
	return false
}

// copySpec makes scratch t a copy of spec, its Members in t's own slice
// (reused), and returns it.
func copySpec(t, spec *gang.Spec) *gang.Spec {
	members := append(t.Members[:0], spec.Members...)
	*t = *spec
	t.Members = members
	return t
}

// atMinimum returns a copy of spec (in the engine's scratch) with its
// elastic members at their minimum.
func (e *Engine) atMinimum(spec *gang.Spec) *gang.Spec {
	t := copySpec(&e.minSpec, spec)
	for i := range t.Members {
		if m := &t.Members[i]; m.Min > 0 && m.Min < m.Request.Nodes {
			m.Request.Nodes = m.Min
		}
	}
	return t
}

// onSmallest cuts, in t (the engine's scratch copy of a job's spec:
// atMinimum), each whole-node member's Allowed set to the smallest nodes
// it may use that hold its pods, each on its own node: the usable nodes
// up to the size of the smallest that leaves no pod out (the nodes
// smallestWhole counts, and those of that size). A placement on them
// takes the GPUs leastGPUs counts when the sizes below that one hold
// none of its pods, at most that size's more per pod otherwise (reclaim
// checks the GPUs placed, and searches again without one of the largest
// nodes taken: dropLargestTaken). The sets are *sets' (grown as needed,
// reused), member i's the i-th: e.planNodes for a reclaim, e.holdNodes
// for a hold (cycle.holdSpec), whose spec must outlive the users of
// e.planNodes (smallerBy, startCutOnPlan, a reclaim's onSmallest).
func (e *Engine) onSmallest(t *gang.Spec, sets *[]*bitset.BitSet) *gang.Spec {
	for len(*sets) < len(t.Members) {
		*sets = append(*sets, bitset.New(uint(e.c.NumNodes())))
	}
	for i := range t.Members {
		m := &t.Members[i]
		if !isWhole(m) {
			continue
		}
		r := &m.Request
		on := (*sets)[i].ClearAll()
		for n := 0; n < e.c.NumNodes(); n++ {
			if (r.Allowed == nil || r.Allowed.Test(uint(n))) && (r.Excluded == nil || !r.Excluded.Test(uint(n))) {
				on.Set(uint(n))
			}
		}
		size := 0 // the sizes up to size hold count pods
		for count := 0; count < r.Nodes; {
			next := 0 // the smallest usable size above size
			for n, ok := on.NextSet(0); ok; n, ok = on.NextSet(n + 1) {
				if g := e.c.NodeGPUs(topology.NodeID(n)); g > size && (next == 0 || g < next) {
					next = g
				}
			}
			if next == 0 {
				break
			}
			size = next
			for n, ok := on.NextSet(0); ok; n, ok = on.NextSet(n + 1) {
				if e.c.NodeGPUs(topology.NodeID(n)) == size {
					count++
				}
			}
		}
		for n, ok := on.NextSet(0); ok; n, ok = on.NextSet(n + 1) {
			if e.c.NodeGPUs(topology.NodeID(n)) > size {
				on.Clear(n)
			}
		}
		r.Allowed = on
	}
	return t
}

// reclaim looks for running gangs of queues that borrow from job j's side
// of the queue tree to preempt, so that j, which its queue's guarantee
// covers, can start: first the gangs whose GPUs let it in with all its
// topology constraints (package gang/preempt, in its cost order), then,
// while its queue's quota has no room for it yet, the borrowers' gangs
// most recently started first (reclaimSearch: the pods growing jobs lend
// j count free, and the claim takes those it uses from their lenders,
// as a preemptor's does). With a set, the victims are preempted for j
// (a claim) and it reports true; otherwise it notes in w why not. A
// search that would repeat one that failed in the cycle is skipped
// (claimFails). g is the GPUs of spec: j's, or its minimum's.
func (c *cycle) reclaim(j *jobRec, spec *gang.Spec, g int, w *Waiting) bool {
	e, s := c.e, c.e.quota
	q := j.queue
	if x := s.fails.skip(q, g, j, e); x != nil {
		if !x.quota && x.shape != 0 && x.shape == j.shapeID && g == j.gpus {
			// The answer of a search for its shape (not the queue's
			// last failure, given past the cap).
			w.PreemptTried, w.Preempt, w.PreemptPromised, w.PreemptReclaim = true, x.why, x.promised, true
		}
		if e.checkEach && s.fails.n[q] < maxClaimFails {
			c.checkSkippedReclaim(j, spec, g)
		}
		return false
	}
	p := s.pre
	searched, enough := c.reclaimSearch(p, j, spec, g)
	for searched && enough && p.verdict.Found && p.verdict.Allocation.GPUs() > g && g < j.minGPUs && c.dropLargestTaken(spec, &p.verdict.Allocation) {
		// Whole nodes of unequal sizes placed above their leastGPUs
		// (onSmallest lets them use the size that holds the last of
		// their pods, which the search may give more of them): the
		// search runs again without one of the largest nodes they
		// took, until the placement takes no more than g or no set is
		// found.
		searched, enough = c.reclaimSearch(p, j, spec, g)
	}
	if !searched {
		return false
	}
	if v := &p.verdict; !v.Found {
		x := s.fails.add(q, g, j, e, c.now, false, spec == j.tight || g < j.gpus)
		x.why, x.promised = v.Reason, p.promised
		w.PreemptTried, w.Preempt, w.PreemptPromised, w.PreemptReclaim = true, v.Reason, p.promised, true
		return false
	}
	if !enough || p.verdict.Allocation.GPUs() > g {
		// (More GPUs placed than g: whole nodes of unequal sizes placed
		// above their leastGPUs, onSmallest; the claim would count
		// them.)
		s.fails.add(q, g, j, e, c.now, true, false)
		return false
	}
	why := fmt.Sprintf("reclaimed for job %s of queue %s, below its guarantee (%d of %d GPUs in use, the job needs %d)",
		j.job.ID, s.names[q], s.used[q], s.guar[q], g)
	c.claimFor(j, p, s.victims, true, w, func(vj *jobRec) string {
		if vj.queue < 0 {
			return fmt.Sprintf("%s: the job is in no queue of the config, and no guarantee covers it", why)
		}
		return fmt.Sprintf("%s: queue %s borrows", why, s.names[vj.queue])
	})
	return true
}

// dropLargestTaken takes off the Allowed set of a whole-node member of
// spec (onSmallest's copy, whose sets are the engine's: e.planNodes) the
// last of the largest nodes its pods take in a, and reports whether it
// took one off (false when no whole-node pod is placed in a, or the
// members that took the largest size have no set of their own).
func (c *cycle) dropLargestTaken(spec *gang.Spec, a *gang.Allocation) bool {
	e := c.e
	top, mi, node := 0, -1, topology.NodeID(0)
	for i := range a.Members {
		ma := &a.Members[i]
		k := memberIndex(spec, ma.Name)
		if k < 0 || !isWhole(&spec.Members[k]) || spec.Members[k].Request.Allowed == nil {
			continue
		}
		for _, x := range ma.Assignment {
			if g := e.c.NodeGPUs(x.Node); g > top || g == top && x.Node > node {
				top, mi, node = g, k, x.Node
			}
		}
	}
	if mi < 0 {
		return false
	}
	spec.Members[mi].Request.Allowed.Clear(uint(node))
	return true
}

// reclaimSearch runs the reclaim's victim search for job j placed with
// spec (g GPUs: spec's) into p.verdict and s.victims, the pods growing
// jobs lend j counted free (prepare, as classSearch does); when that
// finds no set that gives j's queue's quota room for g (enoughReclaim),
// it searches again with them counted taken (a lender's queue that keeps
// its guarantee idle frees no room by giving its pods back, where
// stopping more of the borrowers would). It reports whether a search ran
// (false: no candidate), and whether the victims give the quota room.
func (c *cycle) reclaimSearch(p *preemptScratch, j *jobRec, spec *gang.Spec, g int) (searched, enough bool) {
	if !c.searchVictims(p, j, spec, true, true) {
		return false, false
	}
	enough = p.verdict.Found && c.enoughReclaim(p, j, g)
	if enough || len(p.lentTouched) == 0 {
		return true, enough
	}
	c.searchVictims(p, j, spec, true, false) // the same candidates: it runs
	return true, p.verdict.Found && c.enoughReclaim(p, j, g)
}

// enoughReclaim is quotaState.enoughVictims for job j's reclaim of g
// GPUs on p's verdict, the lenders not among the victims counted without
// the lent pods the verdict's placement takes (lendOutFor).
func (c *cycle) enoughReclaim(p *preemptScratch, j *jobRec, g int) bool {
	e, s := c.e, c.e.quota
	s.victims = append(s.victims[:0], p.verdict.Victims...)
	e.lendOutFor(p, j, &p.verdict.Allocation, s.victims, c.now)
	ok := s.enoughVictims(p, j.queue, g, e.lentBack)
	e.lendIn()
	return ok
}

// checkSkippedReclaim runs the reclaim search that a failed one ruled
// out for job j (tests, checkEach): it must find no claim.
func (c *cycle) checkSkippedReclaim(j *jobRec, spec *gang.Spec, g int) {
	if _, enough := c.reclaimSearch(c.e.quota.pre, j, spec, g); enough {
		panic(fmt.Sprintf("backfill: the reclaim search skipped for %s as a repeat of a failed one finds a claim: victims %v", j.job.ID, c.e.quota.victims))
	}
}

// enoughVictims adds to s.victims (the topology search's), most
// recently started first, the candidates whose GPUs leaf queue q's quota
// needs back for g more GPUs (back: the lent pods the claim takes,
// counted less already, which a lender taken as a victim does not give
// back twice): each one that lowers the claim's excess is
// taken, the others are skipped; then, once there is room, each taken
// one that the later ones made unneeded is spared, the longest-running
// first. It reports whether the quota then has room for a claim (a
// strict check; the claim is within its queue's guarantee, so that it
// borrows nothing).
//
// One pass finds room whenever some set of the candidates makes it: a
// queue counts its children's sum, or the guarantee it keeps from
// lending when that is more, so a candidate that lowers no excess lowers
// none once others are gone, and several together lower it only if one
// of them does alone. Counting the excess, not the use where the check
// binds, matters: under a parent that keeps its guarantee, one victim
// of a borrowing sibling may leave the parent's count as it was and
// still take a part of the claim's GPUs out of the guarantee kept
// (TestReclaimVictimsOracle).
func (s *quotaState) enoughVictims(p *preemptScratch, q, g int, back []lentBack) bool {
	for _, i := range s.victims {
		s.add(p.jobs[i].queue, -victimGPUs(p.jobs[i], back))
	}
	s.byStart = s.byStart[:0]
	for i := range p.jobs {
		if p.cands[i].Policy != preempt.Never && !slices.Contains(s.victims, i) {
			s.byStart = append(s.byStart, i)
		}
	}
	slices.SortFunc(s.byStart, func(a, b int) int {
		if c := p.jobs[b].start.Compare(p.jobs[a].start); c != 0 {
			return c
		}
		return bySeq(p.jobs[b], p.jobs[a].seq)
	})
	x, first := s.excess(q, g), len(s.victims)
	for _, i := range s.byStart {
		if x == 0 {
			break
		}
		r := p.jobs[i]
		n := victimGPUs(r, back)
		s.add(r.queue, -n)
		if nx := s.excess(q, g); nx < x {
			s.victims = append(s.victims, i)
			x = nx
		} else {
			s.add(r.queue, n)
		}
	}
	fits := s.check(q, g, true, true).code == quotaFits
	if fits {
		// Spare the victims taken early in the pass that later ones
		// made unneeded, the longest-running first (most work kept).
		for k := len(s.victims) - 1; k >= first; k-- {
			r := p.jobs[s.victims[k]]
			n := victimGPUs(r, back)
			s.add(r.queue, n)
			if s.check(q, g, true, true).code == quotaFits {
				s.victims = slices.Delete(s.victims, k, k+1)
			} else {
				s.add(r.queue, -n)
			}
		}
	}
	for _, i := range s.victims {
		s.add(p.jobs[i].queue, victimGPUs(p.jobs[i], back))
	}
	slices.Sort(s.victims)
	return fits
}

// victimGPUs is what stopping job r takes off its queue's count: the
// GPUs it counts, but the lent pods back counted less already.
func victimGPUs(r *jobRec, back []lentBack) int {
	n := r.counted
	for _, b := range back {
		if b.job == r {
			n -= b.gpus
		}
	}
	return n
}

// excess is how many GPUs g more for leaf queue q would put above the
// limits a strict check applies, summed over the limits (0: they fit):
// its queues' maximums and guarantees plus borrowing limits, and the
// top queues' count against the cluster. Every term only falls as GPUs
// in use are given back (see enoughVictims).
func (s *quotaState) excess(q, g int) int {
	x, d := 0, g
	for a := q; a >= 0; a = s.parent[a] {
		e := s.eff[a] + d
		x += max(0, s.used[a]+g-s.max[a])
		if d > 0 {
			x += max(0, e-s.ceil[a])
		}
		d = max(e, s.keep[a]) - s.lift(a)
	}
	if d > 0 {
		x += max(0, s.top+d-s.total)
	}
	return x
}

// classVictimsOK reports whether a preemption by class of victims
// (indexes of p's candidates) for g GPUs of leaf queue q keeps to the
// quotas: with the victims not counted, q's quota has room for g
// (strictly), and no queue of another branch is left below its
// guarantee (from each victim's queue up to, not including, its closest
// common parent with q), which would only make it reclaim at once.
func (s *quotaState) classVictimsOK(p *preemptScratch, victims []int, q, g int, mayBorrow bool) bool {
	for _, i := range victims {
		s.add(p.jobs[i].queue, -p.jobs[i].counted)
	}
	ok := s.check(q, g, mayBorrow, true).code == quotaFits
	for _, i := range victims {
		for a := p.jobs[i].queue; ok && a >= 0 && !s.isAncestor(a, q); a = s.parent[a] {
			ok = s.eff[a] >= s.guar[a]
		}
	}
	for _, i := range victims {
		s.add(p.jobs[i].queue, p.jobs[i].counted)
	}
	return ok
}

// checkQuotas recounts every queue's use from the jobs and claims and
// checks it against the counts kept, and every limit: no queue above its
// maximum or its guarantee plus borrowing limit, the top queues within
// the cluster.
func (e *Engine) checkQuotas() []error {
	s := e.quota
	if s == nil {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	used, eff, top, noQueue := slices.Clone(s.used), slices.Clone(s.eff), s.top, 0
	clear(s.used)
	for _, j := range e.jobs.byID {
		want := 0
		switch {
		case j.phase == StateStarting || j.phase == StateRunning:
			want = j.used
		case j.phase == StatePending && j.claim != nil:
			want = j.claim.alloc.GPUs()
		}
		if j.counted != want {
			bad("job %s (%s) counts %d GPUs for its queue, not %d", j.job.ID, j.phase, j.counted, want)
		}
		for a := j.queue; a >= 0 && want > 0; a = s.parent[a] {
			s.used[a] += want
		}
		if j.queue < 0 {
			noQueue += want
		}
	}
	if noQueue != s.noQueueUsed {
		bad("jobs in no queue hold %d GPUs, counted %d", noQueue, s.noQueueUsed)
	}
	s.rebuild()
	if !slices.Equal(used, s.used) || !slices.Equal(eff, s.eff) || top != s.top {
		bad("queue counts %v (effective %v, top %d) recount as %v (%v, %d)", used, eff, top, s.used, s.eff, s.top)
	}
	errs = append(errs, s.limits()...)
	return errs
}

// limits checks every queue's use against its limits.
func (s *quotaState) limits() []error {
	var errs []error
	for a, name := range s.names {
		if s.used[a] > s.max[a] && s.used[a] > s.graceMax[a] || s.eff[a] > s.ceil[a] && s.eff[a] > s.graceCeil[a] {
			errs = append(errs, fmt.Errorf("queue %s: %d GPUs in use (%d effective), above its maximum %d or its guarantee and borrowing limit %d (and the least use since a restore above them, %d and %d)",
				name, s.used[a], s.eff[a], s.max[a], s.ceil[a], s.graceMax[a], s.graceCeil[a]))
		}
	}
	if s.top > s.total && s.top > s.graceTop {
		errs = append(errs, fmt.Errorf("the top queues take %d GPUs of the cluster's %d", s.top, s.total))
	}
	return errs
}

// recountQuotas counts, after a restore, every active job's GPUs and
// every claim's for their queues, and checks the limits; without queues
// it drops the claims that reclaim a queue's guarantee.
func (e *Engine) recountQuotas() error {
	if e.quota == nil {
		// Quotas turned off since the snapshot: a claim that reclaims a
		// queue's guarantee has no guarantee left to reclaim. It is
		// dropped as one a lowered limit refuses (below); its victims
		// still stop.
		for _, cl := range slices.Clone(e.book.claims) {
			if cl.reclaim {
				e.book.dropClaim(cl)
			}
		}
		return nil
	}
	for _, j := range e.jobs.running {
		if j.phase != StatePreempting {
			e.setCounted(j, j.used)
		}
	}
	e.quota.outsidePool = true // gangs may run outside a narrowed pool: the next count looks
	for _, cl := range e.book.claims {
		e.setCounted(cl.job, cl.alloc.GPUs())
		for _, v := range cl.victims {
			if cl.reclaim && v.queue == cl.job.queue {
				return fmt.Errorf("the reclaim claim for %s lists %s, of its own queue", cl.job.job.ID, v.job.ID)
			}
		}
	}
	// A claim its queue cannot take now (cfg lowered a limit below what
	// it counts, or its job can never run there) is dropped: its start
	// would take no limit's check. Its victims still stop.
	for _, cl := range slices.Clone(e.book.claims) {
		if cl.job.unfit != "" || e.quota.over(cl.job.queue) {
			e.book.dropClaim(cl)
		}
	}
	// cfg may have lowered limits below what runs: it runs on, and the
	// queues take nothing more until they are back within them.
	e.quota.grace()
	return errors.Join(e.quota.limits()...)
}
