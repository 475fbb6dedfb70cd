package backfill

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/topology"
)

// jobRec is the engine's record of one job.
type jobRec struct {
	// The fields the walk reads for every waiting job come first, up to
	// limit in the first cache line (64 bytes), the stamp in the next:
	// walking a long queue is bound by the memory it touches per job,
	// and most jobs of a long queue are answered from these alone (a
	// skipped test, or a failure of their shape on their slot).
	//
	// phase is StatePending for every waiting state (the substate comes
	// from the reservation, the hold and requeues), StateStarting,
	// StateRunning, StatePreempting, or a final state.
	phase JobState
	// simple: one member, no co-location, no node sets; only such jobs
	// can share an outcome with jobs of the same shape.
	simple bool
	// dropped is set when this cycle's upkeep dropped its reservation.
	dropped bool
	// tested is the number of the walk's latest test of the job while it
	// waits (Engine.tests; 0: none since it joined the queue).
	tested uint64
	// waitID names the content of wait (Engine.waitID), its job and
	// priority aside; 0 when it names nothing.
	waitID uint64
	// shapeID numbers a simple job's shape (shapeTable): equal numbers,
	// equal shapes; the key of the cycle's same-shape failure cache.
	shapeID uint64
	// claim is a waiting job's claim: the placement kept for it while
	// the jobs it preempted release their GPUs.
	claim *claim
	resv  *reservation // a waiting job's reservation
	// owed counts the lent pods an active elastic job gave up for claims
	// dropped without starting (claim.lent): grow gives them back at the
	// end of any cycle, not only when every waiting job is reserved.
	owed int
	// moved is set when an event (a node failure or drain) dropped the
	// job's reservation: the next cycle that tests the job reports where
	// it went.
	moved *Move
	// recabled: an active job restored onto another cluster, where its
	// gang runs across domains its request limits (a node cabled
	// elsewhere); it runs there all the same, and later restores do not
	// hold its placement to those domains.
	recabled bool
	// tight is the job's gang with its patience constraint applied.
	tight *gang.Spec
	// limit is job.TimeLimit, here for the walk.
	limit time.Duration
	// stamp says what the job's last test failed on when it failed as
	// any job of its shape would (cycle.skipTest).
	stamp testStamp

	// rank is the job's place in this cycle's priority order: its index,
	// or in the queue kept in submit order its position (gaps counted),
	// which orders jobs the same way; not kept up to date by the kept
	// fair-share ranking (cycle.ranksAbove compares jobs there).
	rank int
	// pos is a waiting job's position in the queue kept in submit order
	// (fifo.go): -1 when it has none, -2 while a ranking places it; stale
	// in records not ranked in kept order (the first such ranking
	// rebuilds the order).
	pos     int
	rankGen uint64 // Engine.rankInput's mark
	// keptGen is keptRank.gen while the job is in the kept fair-share
	// ranking (keptrank.go), which then does not keep rank up to date;
	// idKey is idPrefix(job.ID), which that ranking's keys carry.
	keptGen, idKey uint64
	// prep is the job as the fair-share ranking reads it, checked and
	// resolved once (fairshare.Tree.Prepare).
	prep fairshare.Prepared

	job Job
	// ownAllowed is, for a job of a queue with a node pool, each
	// member's Allowed set as submitted (job holds them cut to the pool):
	// a snapshot records these, so that a restore under a changed pool
	// applies the new one. ownLabel is each member's AllowedLabel as
	// submitted (the job holds one that names the pool).
	ownAllowed []*bitset.BitSet
	ownLabel   []string
	// unfit, for a job restored under queues that can never run it (its
	// queue's pool is too small, or a limit below its size: see
	// validateJob and Engine.neverWhy; or it is in no queue of the
	// config: checkQueue), says why. Limits change only at a
	// restore, so it holds for the job's life there: waiting, it waits
	// for quota, never tried, reserved, held or given a claim, and counts
	// in no queue's demand.
	unfit string
	seq   uint64
	// gpus and minGPUs are the GPUs the job asks for at full size and at
	// its minimum (sizeJob): a whole-node pod counts the GPUs of a
	// largest node its member may use (its queue's pool, its own node
	// sets), which wholeG keeps per member (nil when no member asks for
	// whole nodes). Bounds until it starts: an active job's count is what
	// it holds (used, counted). leastGPUs is the fewest GPUs it can start
	// with: its minimum, a whole-node pod counting the GPUs of a smallest
	// node its member may use, each pod on its own node (below minGPUs
	// only on nodes of unequal sizes). Submit refuses, as never fitting
	// its queue, only a job its queue's limits refuse even at leastGPUs;
	// the quota gate lets it by at leastGPUs when they refuse its other
	// bounds, and a start is checked on the GPUs placed (startChecked).
	gpus, minGPUs, leastGPUs int
	wholeG                   []int
	acct                     int // index in the engine's accounts
	// queue is the job's queue's index (-1 without quotas, or for a job
	// restored into no queue of the config: see unfit); counted the
	// GPUs counted for it there (an active job's, a claim's).
	queue, counted int
	requeues       int // a waiting job with requeues is requeued
	// Active jobs.
	alloc      *gang.Allocation // the ledger's
	used       int              // GPUs allocated
	start      time.Time        // booked, then confirmed, start
	promised   time.Time        // the start it was due at: its reservation's or its booking's
	end        time.Time        // start + time limit; zero without a limit
	lastCharge time.Time
	checkpoint time.Time // the last checkpoint the host reported (Checkpointed)
	// Preempting jobs: when they were signalled and for which job, and
	// the claim that waits for them (nil once it is gone).
	preemptedAt time.Time
	preemptedBy string
	victimOf    *claim
	preemptions int // times preempted
	// Waiting jobs.
	// orphans is set while jobs preempt for the job without a claim (a
	// drain or a failure dropped it; orphanOf): its searches take them
	// at no cost (ownVictim) and are its own (ownsGPUs). Exact (the
	// invariants check it), as Restore derives it.
	orphans bool
	// yieldTo is set on a job requeued when it was released preempting
	// for yieldTo, from its claim or without one (orphanOf: a drain or a
	// failure dropped the claim before the release) while yieldTo waited
	// without one: the next walk that would test the job passes it over
	// while yieldTo still waits without a claim (cycle.yieldFirst), so
	// that the GPUs it left go to its preemptor first, not back to it.
	// The first such walk after yieldTo's claim is gone clears it; a
	// start or the job's end clears it too.
	yieldTo *jobRec
	// yieldRuns is yieldTo's requeues when the yield was set: a
	// preemptor requeued since has started since, and the yield is
	// stale (it no longer "still waits").
	yieldRuns  int
	holdExpiry time.Time // not held again before this
	// noFitGen is Engine.inServiceGen when the job was found not to fit
	// the nodes in service with every active job ended (0: not known).
	noFitGen uint64
	// holdBlockedSince is when a lower-ranked gang's hold first kept the
	// GPUs it needs, in the run of tests that found it so (for the
	// hysteresis); zero once a test finds it otherwise (cycle.test).
	holdBlockedSince time.Time
	wait             Waiting // the last cycle's reason
	// alone says that wait's placement reason counts the job's scratch
	// state as its test found it (cycle.alone): recountWaits may read
	// it anew on the state a plan leaves.
	alone bool
	// aloneLater says that the failing member of a gang's reason with
	// alone failed by itself only in a later order than the gang's first
	// (moved to the front after it failed behind members placed before
	// it): on another state one of those may fail first, so recountWaits
	// tries the gang anew there instead of recounting the reason.
	aloneLater bool
	// quotaAt is, for a job the quota gate refused at its full size for
	// its queues' limits (overQuota) and that held no reservation when
	// the gate met it (a reservation given up is named in the reason),
	// the check that refused it (its code 0 otherwise): recountWaits
	// tells the use anew where the same check refuses it on the use the
	// plan leaves.
	quotaAt quotaCheck
	// quotaShare marks, the same way, a job the gate kept past its
	// queue's weighted share (shareWait).
	quotaShare bool
	// toldID is, once the walk lists a changed reason under
	// Config.OnlyChangedWaits, waitID before it: the ID of the reason the
	// job was told before, to which a claim moving reservations may
	// bring it back (restateVisited).
	toldID uint64
	// exemptRestored marks a restored waiting job whose last test before
	// the snapshot found only victims inside their exempt time
	// (JobRecord.PreemptExempt), until its next test sets wait.
	exemptRestored bool
	// Ended jobs.
	ended time.Time
}

// podGPUs returns the most GPUs a pod of job j's member i (one asking for
// nodes) takes: its GPUsPerNode, or for whole nodes a largest node's of
// those the member may use.
func (j *jobRec) podGPUs(i int) int {
	if per := j.job.Gang.Members[i].Request.GPUsPerNode; per > 0 || j.wholeG == nil {
		return per
	}
	return j.wholeG[i]
}

// smallGang returns the GPUs job j asks for at full size, its whole-node
// pods up to its minimum counted on the smallest nodes they may use: its
// gpus less what leastGPUs saves on minGPUs (leastGPUs for a gang that
// is not elastic). An elastic gang's elastic pods count at full size, as
// they did before whole nodes were counted at their lower bound (the
// weighted share's hungry test, quotaState.minGang).
func (j *jobRec) smallGang() int { return j.gpus - (j.minGPUs - j.leastGPUs) }

// late reports whether an active job started later than it was due.
func (j *jobRec) late() bool { return j.start.After(j.promised) }

// overrun reports whether an active job has run past its time limit at
// now.
func (j *jobRec) overrun(now time.Time) bool { return !j.end.IsZero() && !j.end.After(now) }

// jobTable holds every job the engine knows: the queue, the active jobs
// and the recently ended ones, plus which active job holds each GPU.
type jobTable struct {
	byID    map[string]*jobRec
	pending []*jobRec // waiting, by seq
	running []*jobRec // starting or running, by seq
	// bill is what chargeAll reads of each job of running, at the same
	// index, so that a cycle's charges read no job's record.
	bill []billing
	// chargedAt is when chargeAll last billed every active job: a job's
	// last charge is the later of its lastCharge and chargedAt. fresh
	// lists the jobs charged since on their own (started, or charged when
	// they shrank or ended; some may have ended since, some be listed
	// twice).
	chargedAt time.Time
	fresh     []*jobRec
	ended     []*jobRec // by end time
	owners    []*jobRec // per GPU slot node*maxG+gpu: the active job on it
	maxG      int
	// patient counts the waiting jobs with patience (jobRec.tight).
	patient int
	// growers counts the active jobs that grow (Job.Grow): only they
	// can lend pods (lends).
	growers int
	// unlimited counts the active jobs without a time limit: while there
	// is none, every gang that fits the cluster has a planned start and
	// hold mode has nothing to do.
	unlimited int
}

func newJobTable(c *topology.Cluster) jobTable {
	return jobTable{byID: make(map[string]*jobRec), owners: make([]*jobRec, c.NumNodes()*c.MaxNodeGPUs()), maxG: c.MaxNodeGPUs()}
}

// billing is an active job's seq, GPUs in use and account index.
type billing struct {
	seq        uint64
	used, acct int32
}

// addRunning adds active job j to running.
func (t *jobTable) addRunning(j *jobRec) {
	i, _ := slices.BinarySearchFunc(t.running, j.seq, bySeq)
	t.running = slices.Insert(t.running, i, j)
	t.bill = slices.Insert(t.bill, i, billing{seq: j.seq, used: int32(j.used), acct: int32(j.acct)})
	t.fresh = append(t.fresh, j)
}

// removeRunning takes job j out of running.
func (t *jobTable) removeRunning(j *jobRec) {
	i := t.runningIndex(j)
	t.running = slices.Delete(t.running, i, i+1)
	t.bill = slices.Delete(t.bill, i, i+1)
}

// billUsed records active job j's GPUs in use (jobRec.used) for chargeAll.
func (t *jobTable) billUsed(j *jobRec) { t.bill[t.runningIndex(j)].used = int32(j.used) }

// runningIndex returns active job j's index in running, found by seq in
// the billing list (no other job's record read).
func (t *jobTable) runningIndex(j *jobRec) int {
	i, found := slices.BinarySearchFunc(t.bill, j.seq, func(b billing, s uint64) int { return cmp.Compare(b.seq, s) })
	if !found || t.running[i] != j {
		panic(fmt.Sprintf("backfill: job %s missing from its list", j.job.ID))
	}
	return i
}

// lastCharge returns when job j was last charged.
func (t *jobTable) lastCharge(j *jobRec) time.Time {
	if j.alloc == nil {
		return j.lastCharge
	}
	return later(j.lastCharge, t.chargedAt)
}

func bySeq(a *jobRec, s uint64) int {
	switch {
	case a.seq < s:
		return -1
	case a.seq > s:
		return 1
	}
	return 0
}

// insertSorted inserts j into list, kept in seq order.
func insertSorted(list []*jobRec, j *jobRec) []*jobRec {
	i, _ := slices.BinarySearchFunc(list, j.seq, bySeq)
	return slices.Insert(list, i, j)
}

// removeSorted removes j from list, kept in seq order.
func removeSorted(list []*jobRec, j *jobRec) []*jobRec {
	i, found := slices.BinarySearchFunc(list, j.seq, bySeq)
	if !found || list[i] != j {
		panic(fmt.Sprintf("backfill: job %s missing from its list", j.job.ID))
	}
	return slices.Delete(list, i, i+1)
}

// setOwner records owner (nil to clear) on every GPU of a.
func (t *jobTable) setOwner(a *gang.Allocation, owner *jobRec) {
	for i := range a.Members {
		for _, x := range a.Members[i].Assignment {
			base := int(x.Node) * t.maxG
			for m := x.GPUs; m != 0; m &= m - 1 {
				t.owners[base+bitIndex(m)] = owner
			}
		}
	}
}

// owner returns the active job on GPU g of node n, or nil.
func (t *jobTable) owner(n, g int) *jobRec { return t.owners[n*t.maxG+g] }

// lookup returns the job of that ID, ignoring ended jobs forgotten by now.
func (t *jobTable) lookup(id string, now time.Time, keep time.Duration) (*jobRec, bool) {
	j, ok := t.byID[id]
	if ok && j.phase.Ended() && !now.Before(j.ended.Add(keep)) {
		return nil, false
	}
	return j, ok
}

// forget drops ended jobs remembered for keep or longer at now.
func (t *jobTable) forget(now time.Time, keep time.Duration) {
	n := 0
	for n < len(t.ended) && !now.Before(t.ended[n].ended.Add(keep)) {
		j := t.ended[n]
		if t.byID[j.job.ID] == j {
			delete(t.byID, j.job.ID)
		}
		n++
	}
	if n > 0 {
		t.ended = slices.Delete(t.ended, 0, n)
	}
}

// endJob moves j, no longer waiting or active, to its final state.
func (t *jobTable) endJob(j *jobRec, final JobState, now time.Time) {
	j.phase, j.ended = final, now
	j.alloc, j.resv, j.yieldTo = nil, nil, nil
	t.ended = append(t.ended, j)
}

// accounts maps fair-share account names to indices, for batched charges
// and observed run times.
type accounts struct {
	idx     map[string]int
	names   []string
	charge  []float64
	touched []int
	runs    []runtimes
	all     runtimes // every account's
}

// observe adds a finished job's run time to account i.
func (a *accounts) observe(i int, d time.Duration) {
	a.runs[i].add(d)
	a.all.add(d)
}

// minRuns is the number of observed runs from which an account's own
// histogram is used (below it, every account's together).
const minRuns = 5

// residual estimates how much longer a job of account i that has run for
// age runs: the median of the account's observed runs longer than age
// (every account's while it has fewer than minRuns runs); with nothing
// observed longer, as long again as it has run (at least the time left
// to defaultRuntime).
func (a *accounts) residual(i int, age time.Duration) time.Duration {
	h := &a.runs[i]
	if h.n < minRuns {
		h = &a.all
	}
	if r, ok := h.residual(age); ok {
		return r.Round(time.Second)
	}
	return max(age, defaultRuntime-age, time.Minute)
}

// index returns the index of account name, adding it if new.
func (a *accounts) index(name string) int {
	if i, ok := a.idx[name]; ok {
		return i
	}
	i := len(a.names)
	a.idx[name] = i
	a.names = append(a.names, name)
	a.charge = append(a.charge, 0)
	a.runs = append(a.runs, runtimes{})
	return i
}
