package backfill

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/topology"
)

// SnapshotVersion is the version of the Snapshot format this package
// writes. Restore reads it, version 3 (which had no queues: a version 3
// snapshot is a version 4 one without job queues or reclaim claims) and
// version 2 (which had no preemption either: no classes, policies,
// preempting jobs or claims); it refuses any other.
const SnapshotVersion = 4

// Snapshot is the whole engine as plain, JSON-serialisable data: the
// cluster's fingerprint, node facts, jobs (with their preemption state),
// running gangs, reservations, holds, claims, fair-share accounts and
// usage. Nodes are named, never numbered;
// durations are Go duration strings. A host saves it and calls Restore
// after a restart; Snapshot, Restore, Snapshot gives the same bytes.
type Snapshot struct {
	Version int         `json:"version"`
	Time    time.Time   `json:"time"`
	Cluster Fingerprint `json:"cluster"`
	Seq     uint64      `json:"seq"`
	// Tests numbers the cycles' tests of waiting jobs; the MaxJobsTested
	// windows' round began after test RoundFrom, and the last event came
	// after test EventAt. Owed is set while a job that waited then has
	// not been tested since (NextEvent then asks for a cycle at once).
	Tests          uint64    `json:"tests,omitempty"`
	RoundFrom      uint64    `json:"round_from,omitempty"`
	EventAt        uint64    `json:"event_at,omitempty"`
	Owed           bool      `json:"owed,omitempty"`
	LastCycle      time.Time `json:"last_cycle,omitzero"`
	HeldGPUSeconds float64   `json:"held_gpu_seconds,omitempty"`
	// SlotOpen is set when the last cycle left a reservation slot, or
	// GPUs a hold let go of after refusing them to a job, for the next
	// one (NextEvent then asks for a cycle at once).
	SlotOpen     bool                    `json:"slot_open,omitempty"`
	Down         []string                `json:"down,omitempty"`
	Drained      []string                `json:"drained,omitempty"`
	Jobs         []JobRecord             `json:"jobs"`
	Gangs        []gang.GangRecord       `json:"gangs,omitempty"`
	Accounts     fairshare.TreeSpec      `json:"accounts"`
	Usage        []fairshare.UsageRecord `json:"usage,omitempty"`
	Reservations []ReservationRecord     `json:"reservations,omitempty"`
	Holds        []HoldRecord            `json:"holds,omitempty"`
	HoldEnds     []HoldEnd               `json:"hold_ends,omitempty"`
	// PodChanges are the pod changes not yet reported in a plan.
	PodChanges []PodChange     `json:"pod_changes,omitempty"`
	Claims     []ClaimRecord   `json:"claims,omitempty"`
	Runtimes   []RuntimeRecord `json:"runtimes,omitempty"`
	// AllRuntimes is every account's run times together (Account empty).
	AllRuntimes RuntimeRecord `json:"all_runtimes"`
}

// RuntimeRecord is an account's histogram of observed run times, from
// which hold mode estimates when jobs without a limit end: Counts[k] runs
// of bin k (bin 0 under a minute, bin k of [2^((k-1)/2), 2^(k/2))
// minutes), trailing empty bins left out.
type RuntimeRecord struct {
	Account string   `json:"account,omitempty"`
	Counts  []uint32 `json:"counts"`
}

func runtimeRecord(account string, h *runtimes) RuntimeRecord {
	n := runtimeBins
	for n > 0 && h.counts[n-1] == 0 {
		n--
	}
	return RuntimeRecord{Account: account, Counts: slices.Clone(h.counts[:n])}
}

// runtimesOf rebuilds a histogram from a record: not one of more bins
// than runtimes has, nor of more runs than maxRuns.
func runtimesOf(r RuntimeRecord) (runtimes, bool) {
	var h runtimes
	if len(r.Counts) > runtimeBins {
		return h, false
	}
	n := uint64(0)
	for k, c := range r.Counts {
		h.counts[k] = c
		n += uint64(c)
	}
	h.n = uint32(n)
	return h, n <= maxRuns
}

// maxRuns bounds the runs a restored histogram may count: far more than
// any engine observes, far enough below the counters' range that counting
// on cannot wrap.
const maxRuns = math.MaxInt32

// Fingerprint identifies a cluster: its level names, node and GPU counts,
// and a digest of every node's name, GPU count and domains.
type Fingerprint struct {
	Levels []string `json:"levels"`
	Nodes  int      `json:"nodes"`
	GPUs   int      `json:"gpus"`
	Digest string   `json:"digest"`
}

// ClusterFingerprint returns c's fingerprint.
func ClusterFingerprint(c *topology.Cluster) Fingerprint {
	h := fnv.New64a()
	for n := range c.NumNodes() {
		fmt.Fprintf(h, "%s %d", c.NodeName(topology.NodeID(n)), c.NodeGPUs(topology.NodeID(n)))
		for l := range c.Depth() {
			fmt.Fprintf(h, " %s", c.DomainName(l, c.NodeDomain(topology.NodeID(n), l)))
		}
		h.Write([]byte{'\n'})
	}
	return Fingerprint{Levels: c.Levels(), Nodes: c.NumNodes(), GPUs: c.TotalGPUs(), Digest: fmt.Sprintf("%016x", h.Sum64())}
}

// Diff describes how f (a snapshot's) differs from g (the cluster's), or
// returns "" when they are the same.
func (f Fingerprint) Diff(g Fingerprint) string {
	var d []string
	if !slices.Equal(f.Levels, g.Levels) {
		d = append(d, fmt.Sprintf("levels %v, now %v", f.Levels, g.Levels))
	}
	if f.Nodes != g.Nodes {
		d = append(d, fmt.Sprintf("%d nodes, now %d", f.Nodes, g.Nodes))
	}
	if f.GPUs != g.GPUs {
		d = append(d, fmt.Sprintf("%d GPUs, now %d", f.GPUs, g.GPUs))
	}
	if len(d) == 0 && f.Digest != g.Digest {
		d = append(d, "node names, sizes or domains changed")
	}
	return strings.Join(d, "; ")
}

// JobRecord is one job of a Snapshot.
type JobRecord struct {
	ID            string          `json:"id"`
	Account       string          `json:"account"`
	State         JobState        `json:"state"`
	Seq           uint64          `json:"seq"`
	Submit        time.Time       `json:"submit"`
	TimeLimit     string          `json:"time_limit,omitempty"`
	QOS           float64         `json:"qos,omitempty"`
	Partition     float64         `json:"partition,omitempty"`
	Patience      *PatienceRecord `json:"patience,omitempty"`
	OnNodeFailure string          `json:"on_node_failure,omitempty"`
	Grow          bool            `json:"grow,omitempty"`
	Gang          gang.SpecRecord `json:"gang"`
	Start         time.Time       `json:"start,omitzero"`
	Promised      time.Time       `json:"promised,omitzero"`
	LastCharge    time.Time       `json:"last_charge,omitzero"`
	HoldExpiry    time.Time       `json:"hold_expiry,omitzero"`
	HoldBlocked   time.Time       `json:"hold_blocked_since,omitzero"`
	Requeues      int             `json:"requeues,omitempty"`
	Ended         time.Time       `json:"ended,omitzero"`
	// Moved is set when an event dropped the job's reservation and the
	// next cycle has not yet reported where it went.
	Moved *Move `json:"moved,omitempty"`
	// Recabled is set on an active job restored onto another cluster
	// where its gang runs across domains its request limits (Required,
	// MaxDomains, segments, co-location): later restores do not hold its
	// placement to them.
	Recabled bool `json:"recabled,omitempty"`
	// Class and Preemption are the job's (policy "never" left out).
	Class      int    `json:"class,omitempty"`
	Preemption string `json:"preemption,omitempty"`
	// Checkpoint is an active job's last checkpoint.
	Checkpoint time.Time `json:"checkpoint,omitzero"`
	// PreemptedAt and PreemptedBy are a preempting job's signal time and
	// preemptor; Preemptions counts the times the job was preempted.
	PreemptedAt time.Time `json:"preempted_at,omitzero"`
	PreemptedBy string    `json:"preempted_by,omitempty"`
	Preemptions int       `json:"preemptions,omitempty"`
	// Queue is the job's queue (Job.Queue).
	Queue string `json:"queue,omitempty"`
	// Tested is a waiting job's latest test while it waits, a number of
	// Snapshot.Tests (0: none).
	Tested uint64 `json:"tested,omitempty"`
	// PreemptExempt marks a waiting job whose last test found that the
	// only victims it could preempt were inside their exempt time (or
	// protected): Engine.NextEvent names the end of the first such
	// exempt time, after a restore too.
	PreemptExempt bool `json:"preempt_exempt,omitempty"`
	// YieldTo names, on a requeued job released without a claim (a
	// drain or a node failure dropped its preemptor's), the job it was
	// preempted for, until a cycle would test it: that cycle passes it
	// over while the named job waits without a claim, so that the GPUs
	// it left go to that job first.
	YieldTo string `json:"yield_to,omitempty"`
	// OwedPods is, on an active job that grows (Grow), the lent pods it
	// gave up for preemption claims dropped without starting: it grows
	// back by as many at the end of any cycle.
	OwedPods int `json:"owed_pods,omitempty"`
}

// PatienceRecord is a job's Patience.
type PatienceRecord struct {
	MaxDomains int    `json:"max_domains"`
	Level      string `json:"level,omitempty"`
	Wait       string `json:"wait"`
}

// ReservationRecord is one reservation of a Snapshot.
type ReservationRecord struct {
	Job        string          `json:"job"`
	Start      time.Time       `json:"start"`
	End        time.Time       `json:"end,omitzero"`
	FirstStart time.Time       `json:"first_start"`
	Placement  gang.GangRecord `json:"placement"`
}

// HoldRecord is one hold of a Snapshot.
type HoldRecord struct {
	Job            string          `json:"job"`
	Since          time.Time       `json:"since"`
	Target         gang.GangRecord `json:"target"`
	Held           int             `json:"held"`
	SpentGPUs      float64         `json:"spent_gpu_seconds"`
	BudgetGPUs     float64         `json:"budget_gpu_seconds"`
	EstimatedStart time.Time       `json:"estimated_start"`
}

// ClaimRecord is one claim of a Snapshot: the placement kept for a job
// that preempted others, from Since (when its victims were signalled) and
// due to start at Due (the end of their grace), and the victims still
// holding GPUs.
type ClaimRecord struct {
	Job       string          `json:"job"`
	Since     time.Time       `json:"since"`
	Due       time.Time       `json:"due"`
	Placement gang.GangRecord `json:"placement"`
	Victims   []string        `json:"victims,omitempty"`
	// Reclaim marks a claim that gets its job's queue's guarantee back
	// from queues that borrow: its victims may be of any class.
	Reclaim bool `json:"reclaim,omitempty"`
	// Lent lists the active jobs that gave up lent pods for the claim:
	// dropped without starting, the claim owes them back
	// (JobRecord.OwedPods).
	Lent []LentRecord `json:"lent,omitempty"`
}

// LentRecord is a job that gave up lent pods for a claim, and how many.
type LentRecord struct {
	Job  string `json:"job"`
	Pods int    `json:"pods"`
}

// Snapshot exports the engine as of the latest time it has seen. It
// changes nothing.
func (e *Engine) Snapshot() *Snapshot {
	s := &Snapshot{Version: SnapshotVersion, Time: e.last, Cluster: ClusterFingerprint(e.c), Seq: e.seq,
		Tests: e.tests, RoundFrom: e.roundFrom, EventAt: e.eventAt, Owed: e.owed, LastCycle: e.lastCycle, HeldGPUSeconds: e.heldGPUSeconds, SlotOpen: e.slotOpen,
		Gangs: e.ledger.Snapshot().Gangs, Accounts: e.tree.Spec(), Usage: e.tree.UsageRecords()}
	for n, st := range e.nodes {
		if st.down() {
			s.Down = append(s.Down, e.c.NodeName(topology.NodeID(n)))
		}
		if st.drained() {
			s.Drained = append(s.Drained, e.c.NodeName(topology.NodeID(n)))
		}
	}
	all := make([]*jobRec, 0, len(e.jobs.byID))
	for id := range e.jobs.byID {
		if j, ok := e.jobs.lookup(id, e.last, e.cfg.KeepEnded); ok {
			all = append(all, j)
		}
	}
	sortJobs(all)
	for _, j := range all {
		s.Jobs = append(s.Jobs, e.jobRecord(j))
	}
	for _, r := range e.book.resv {
		s.Reservations = append(s.Reservations, ReservationRecord{Job: r.job.job.ID, Start: r.start, End: r.end,
			FirstStart: r.firstStart, Placement: e.gangRecord(&r.alloc)})
	}
	for _, h := range e.book.holds {
		s.Holds = append(s.Holds, HoldRecord{Job: h.job.job.ID, Since: h.since, Target: e.gangRecord(&h.target), Held: h.held,
			SpentGPUs: h.spent, BudgetGPUs: h.budget, EstimatedStart: h.eta})
	}
	s.HoldEnds = slices.Clone(e.holdEnds)
	s.PodChanges = slices.Clone(e.podChanges)
	for _, cl := range e.book.claims {
		cr := ClaimRecord{Job: cl.job.job.ID, Since: cl.since, Due: cl.due, Placement: e.gangRecord(&cl.alloc), Reclaim: cl.reclaim}
		for _, v := range cl.victims {
			cr.Victims = append(cr.Victims, v.job.ID)
		}
		for _, l := range cl.lent {
			if l.job.phase == StateStarting || l.job.phase == StateRunning { // as dropClaim reads them
				cr.Lent = append(cr.Lent, LentRecord{Job: l.job.job.ID, Pods: l.pods})
			}
		}
		s.Claims = append(s.Claims, cr)
	}
	for i, name := range e.accts.names {
		if e.accts.runs[i].n > 0 {
			s.Runtimes = append(s.Runtimes, runtimeRecord(name, &e.accts.runs[i]))
		}
	}
	slices.SortFunc(s.Runtimes, func(a, b RuntimeRecord) int { return strings.Compare(a.Account, b.Account) })
	s.AllRuntimes = runtimeRecord("", &e.accts.all)
	return s
}

func (e *Engine) jobRecord(j *jobRec) JobRecord {
	jb := &j.job
	r := JobRecord{ID: jb.ID, Account: jb.Account, State: e.stateOf(j), Seq: j.seq, Submit: jb.Submit,
		QOS: jb.QOS, Partition: jb.Partition, Gang: e.submittedGang(j).Record(e.c), Start: j.start, Promised: j.promised,
		LastCharge: e.jobs.lastCharge(j), HoldExpiry: j.holdExpiry, HoldBlocked: j.holdBlockedSince, Requeues: j.requeues, Ended: j.ended,
		Class: jb.Class, Grow: jb.Grow, Checkpoint: j.checkpoint, PreemptedAt: j.preemptedAt, PreemptedBy: j.preemptedBy, Preemptions: j.preemptions,
		Queue: jb.Queue, Recabled: j.recabled}
	if owesBack(j) {
		r.OwedPods = j.owed
	}
	if j.phase == StatePending {
		r.Tested, r.PreemptExempt = j.tested, j.exemptBlocked()
		if p := j.yieldTo; p != nil && e.jobs.byID[p.job.ID] == p && p.requeues == j.yieldRuns {
			// (A preemptor forgotten since it ended never waits again;
			// one requeued since started since: the yield is stale.)
			r.YieldTo = p.job.ID
		}
	}
	if j.moved != nil {
		mv := *j.moved // the snapshot's own
		r.Moved = &mv
	}
	if jb.Preemption != preempt.Never {
		r.Preemption = jb.Preemption.String()
	}
	if jb.TimeLimit > 0 {
		r.TimeLimit = jb.TimeLimit.String()
	}
	if p := jb.Patience; p.MaxDomains > 0 || p.Wait > 0 || p.Level != "" {
		r.Patience = &PatienceRecord{MaxDomains: p.MaxDomains, Level: p.Level, Wait: p.Wait.String()}
	}
	if jb.OnNodeFailure != Requeue {
		r.OnNodeFailure = jb.OnNodeFailure.String()
	}
	return r
}

// owesBack reports whether job j has lent pods owed back that it can
// still grow by (an active job that grows: grow reads no other).
func owesBack(j *jobRec) bool {
	return j.owed > 0 && j.job.Grow && (j.phase == StateStarting || j.phase == StateRunning)
}

// submittedGang returns job j's gang with its members' node sets as
// submitted, before a queue's pool cut them (the engine's own when no
// pool did).
func (e *Engine) submittedGang(j *jobRec) *gang.Spec {
	if j.ownAllowed == nil {
		return &j.job.Gang
	}
	g := j.job.Gang
	g.Members = slices.Clone(g.Members)
	for i := range g.Members {
		g.Members[i].Request.Allowed, g.Members[i].Request.AllowedLabel = j.ownAllowed[i], j.ownLabel[i]
	}
	return &g
}

// gangRecord renders an allocation as a gang record (node names).
func (e *Engine) gangRecord(a *gang.Allocation) gang.GangRecord {
	g := gang.GangRecord{ID: a.ID}
	for _, m := range a.Members {
		mr := gang.MemberRecord{Name: m.Name, Want: m.Pods}
		for _, x := range m.Assignment {
			mr.Pods = append(mr.Pods, gang.PodRecord{Node: e.c.NodeName(x.Node), GPUs: gpuList(x.GPUs)})
		}
		g.Members = append(g.Members, mr)
	}
	return g
}

func gpuList(m uint64) []int {
	var out []int
	for ; m != 0; m &= m - 1 {
		out = append(out, bitIndex(m))
	}
	return out
}

// allocationOf turns a gang record back into an allocation on e's
// cluster, checking every node and GPU: no GPU named twice in the whole
// allocation, no two pods of one member on one node.
func (e *Engine) allocationOf(g *gang.GangRecord) (gang.Allocation, error) {
	a := gang.Allocation{ID: g.ID}
	taken := map[topology.NodeID]uint64{} // GPUs named so far, per node
	for _, m := range g.Members {
		if m.Want != len(m.Pods) || m.Min != 0 || m.GPUs != 0 {
			return a, fmt.Errorf("member %s: %d pods recorded as %d (min %d, %d GPUs)", m.Name, len(m.Pods), m.Want, m.Min, m.GPUs)
		}
		ma := gang.MemberAllocation{Name: m.Name, Pods: len(m.Pods)}
		for _, p := range m.Pods {
			n, ok := e.c.LookupNode(p.Node)
			if !ok {
				return a, fmt.Errorf("%w: %q", topology.ErrUnknownNode, p.Node)
			}
			var mask uint64
			for _, x := range p.GPUs {
				if x < 0 || x >= e.c.NodeGPUs(n) || mask&(1<<uint(x)) != 0 {
					return a, fmt.Errorf("node %s has no GPU %d, or it is listed twice", p.Node, x)
				}
				mask |= 1 << uint(x)
			}
			if mask == 0 {
				return a, fmt.Errorf("a pod on node %s holds no GPU", p.Node)
			}
			if taken[n]&mask != 0 {
				return a, fmt.Errorf("node %s: GPUs named by two pods", p.Node)
			}
			if slices.ContainsFunc(ma.Assignment, func(x topology.NodeAlloc) bool { return x.Node == n }) {
				return a, fmt.Errorf("member %s: two pods on node %s", m.Name, p.Node)
			}
			taken[n] |= mask
			ma.Assignment = append(ma.Assignment, topology.NodeAlloc{Node: n, GPUs: mask})
		}
		a.Members = append(a.Members, ma)
	}
	return a, nil
}
