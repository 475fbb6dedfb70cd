package backfill

import (
	"fmt"
	"math"

	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// Unlimited, as QueueSpec.BorrowingLimit, LendingLimit or Maximum, sets no
// limit.
const Unlimited = -1

// The range of a queue's weight other than 0 (QueueSpec.Weight).
const (
	MinQueueWeight = 1e-6
	MaxQueueWeight = 1e6
)

// QueueSpec is one queue of the quota tree (Config.Quotas). Jobs name a
// queue without children (Job.Queue); a queue with children groups them
// as a cohort does. All amounts are GPUs, at most 2^31-1 (or Unlimited).
type QueueSpec struct {
	// Name identifies the queue; Parent names its parent queue, listed
	// before it ("" for a queue at the top).
	Name   string `json:"name"`
	Parent string `json:"parent,omitempty"`
	// Guarantee is the GPUs the queue is guaranteed (Kueue's nominal
	// quota, KAI's quota): its waiting work gets them back from
	// borrowers within one cycle and the preemption grace. A parent's
	// guarantee covers its children's: the sum of the children's is at
	// most the parent's, and what is left is shared by the children (a
	// Kueue cohort's own quota). The top queues' guarantees add up to at
	// most the cluster's GPUs.
	Guarantee int `json:"guarantee"`
	// BorrowingLimit bounds what the queue may use above its guarantee,
	// borrowed from unused quota of other queues (0: it never borrows;
	// Unlimited).
	BorrowingLimit int `json:"borrowing_limit"`
	// LendingLimit bounds how much of its unused guarantee others may
	// borrow; the rest of its guarantee is kept for it alone, even idle
	// (0: it lends nothing; Unlimited: all).
	LendingLimit int `json:"lending_limit"`
	// Maximum is the most the queue may use (KAI's limit, Slurm's GrpTRES
	// for GPUs; Unlimited). At least Guarantee. Zero values are limits of
	// zero: a QueueSpec with only a name can run nothing.
	Maximum int `json:"maximum"`
	// Weight shares what is above the guarantees among sibling queues
	// that want more (KAI's over-quota weight); 0 means 1. Only ratios
	// count: a weight is 0 or within [MinQueueWeight, MaxQueueWeight],
	// so that the siblings' sum neither overflows nor underflows.
	Weight float64 `json:"weight,omitempty"`
	// Nodes, a Slurm hostlist, makes the queue a node pool: its jobs,
	// and those of the queues below it, are placed on these nodes only
	// (each member's Allowed set is cut to them at Submit, and again at
	// Restore from the sets it was submitted with, so that a pool changed
	// across a restore applies to the jobs waiting; running ones stay
	// where they run). Empty: any node. New refuses a pool whose queues
	// (this one and those whose pools lie inside it) guarantee more GPUs
	// between them than its nodes have.
	Nodes string `json:"nodes,omitempty"`
	// StrictOrder starts the queue's jobs in rank order while one of them
	// waits for quota (Kueue's StrictFIFO): once the cycle leaves a job of
	// the queue waiting for quota (WaitQuota: a limit, its weighted share,
	// or no room at its planned start), the first such without a
	// reservation or a claim that could run on the nodes in service with
	// every other job ended, no job ranked below it in the queue starts or
	// reserves in that cycle; each is told so (WaitQuota, Blocker that
	// job), or, outside Config.MaxJobsTested's window, that it was not
	// tested. The room the running jobs free goes to it. Jobs with a
	// reservation or a claim are not held back. A job passed over by the
	// window heads the queue all the same when its limits hold it back,
	// the queue's first job and the first its limits hold back are always
	// tested, and the jobs behind the latter do not count as a backlog
	// (Config.BacklogAfter). In the entitled-first order no job of the
	// queue goes ahead of one ranked above it: a job its guarantee covers
	// stays behind the queue's first job even when that one only waits
	// for GPUs, so another queue's job may take free GPUs first in that
	// cycle, and the covered job reclaim them. A queue whose first job
	// needs more than its weighted share while a sibling wants more waits
	// whole until the sibling's demand falls. Without it (the default,
	// Kueue's BestEffortFIFO), a job that needs more room than any one of
	// the queue's running jobs frees can wait behind every smaller job of
	// the queue that fits the room freed, for as long as such jobs come.
	// Only for a queue without children (jobs are submitted to those).
	StrictOrder bool `json:"strict_order,omitempty"`
}

// QuotaConfig is the quota tree: queues with guarantees, borrowing and
// lending limits, maximums and weights (see quotas in the package doc).
// No queues turns quotas off: Job.Queue must then be empty.
type QuotaConfig struct {
	Queues []QueueSpec `json:"queues,omitempty"`
}

// Validate checks the queues: names unique and non-empty, every parent
// listed before its children, amounts non-negative (or Unlimited), a
// maximum at least the guarantee, children's guarantees within their
// parent's, weights 0 or in range, strict order only on queues
// without children. The error wraps ErrConfig
// and names the queue.
func (q *QuotaConfig) Validate() error {
	seen := make(map[string]int, len(q.Queues))
	sum := make([]int, len(q.Queues))
	for i := range q.Queues {
		s := &q.Queues[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: queue %q: %s", ErrConfig, s.Name, fmt.Sprintf(format, args...))
		}
		if err := s.check(bad); err != nil {
			return err
		}
		if _, dup := seen[s.Name]; dup {
			return bad("listed twice")
		}
		if s.Parent != "" {
			p, ok := seen[s.Parent]
			if !ok {
				return bad("parent %q is not listed before it", s.Parent)
			}
			sum[p] += s.Guarantee
			if sum[p] > q.Queues[p].Guarantee {
				return bad("its guarantee of %d takes the guarantees of %q's queues to %d, above %q's %d",
					s.Guarantee, s.Parent, sum[p], s.Parent, q.Queues[p].Guarantee)
			}
		}
		seen[s.Name] = i
	}
	for i := range q.Queues {
		if p := q.Queues[i].Parent; p != "" && q.Queues[seen[p]].StrictOrder {
			return fmt.Errorf("%w: queue %q: strict order, but it has children (queue %q); set it on the queues jobs are submitted to", ErrConfig, p, q.Queues[i].Name)
		}
	}
	return nil
}

// check checks one queue's own fields.
func (s *QueueSpec) check(bad func(string, ...any) error) error {
	limit := func(v int) bool { return v >= 0 && v <= noLimit || v == Unlimited }
	switch {
	case s.Name == "" || len(s.Name) > MaxIDLength:
		return bad("a name of %d bytes (1 to %d)", len(s.Name), MaxIDLength)
	case s.Parent == s.Name:
		return bad("its own parent")
	case s.Guarantee < 0 || s.Guarantee > noLimit:
		return bad("guarantee %d is negative or above %d GPUs", s.Guarantee, noLimit)
	case !limit(s.BorrowingLimit) || !limit(s.LendingLimit) || !limit(s.Maximum):
		return bad("borrowing limit %d, lending limit %d or maximum %d below zero and not Unlimited, or above %d GPUs",
			s.BorrowingLimit, s.LendingLimit, s.Maximum, noLimit)
	case s.Maximum != Unlimited && s.Maximum < s.Guarantee:
		return bad("maximum %d is below its guarantee %d", s.Maximum, s.Guarantee)
	case !(s.Weight == 0 || s.Weight >= MinQueueWeight && s.Weight <= MaxQueueWeight):
		return bad("weight %v is neither 0 nor within [%v, %v]", s.Weight, MinQueueWeight, MaxQueueWeight)
	}
	if _, err := hostlist.Count(s.Nodes); err != nil {
		return bad("nodes: %v", err)
	}
	return nil
}

// noLimit stands for Unlimited in the quota state's arrays: far above any
// cluster, far below an overflow.
const noLimit = math.MaxInt32

func orNoLimit(v int) int {
	if v == Unlimited {
		return noLimit
	}
	return v
}

// QueueStatus is one queue's state (Engine.Queues).
type QueueStatus struct {
	Name   string `json:"name"`
	Parent string `json:"parent,omitempty"`
	// Guarantee and Maximum are the queue's (Maximum is Unlimited for no
	// maximum).
	Guarantee int `json:"guarantee"`
	Maximum   int `json:"maximum"`
	// Used is the GPUs of the queue's subtree's starting and running
	// jobs and of its claims (preempting jobs count for nobody).
	Used int `json:"used"`
	// Borrowed is how far its effective use (its use, with the unlent
	// guarantee its children keep idle) is above its guarantee: GPUs it
	// borrows from other queues' unused quota.
	Borrowed int `json:"borrowed"`
	// Waiting is the GPUs its subtree's waiting jobs ask for (claims
	// excluded: they are in Used), other than those of NeverFits: the
	// demand its share is weighed against.
	Waiting int `json:"waiting"`
	// NeverFits is the GPUs its subtree's waiting jobs ask for that can
	// never start under the current config: jobs restored under lowered
	// limits or a narrowed pool (their reasons say what would let them
	// run). They are not in Waiting and ask for no share.
	NeverFits int `json:"neverFits,omitempty"`
	// Share is its weighted share of the GPUs in service (on nodes that
	// are up, and those jobs still hold on drained nodes) at the last
	// cycle: its demand up to its guarantee, plus its part of what is
	// above the guarantees. A parent's share is for its children's jobs:
	// it was also given room for the guarantees its children keep idle
	// from lending, which is not in Share.
	Share float64 `json:"share"`
}

// Queues returns every queue's status, in Config.Quotas order (nil
// without queues).
func (e *Engine) Queues() []QueueStatus {
	s := e.quota
	if s == nil {
		return nil
	}
	out := make([]QueueStatus, len(s.names))
	for a, q := range e.cfg.Quotas.Queues {
		out[a] = QueueStatus{Name: q.Name, Parent: q.Parent, Guarantee: q.Guarantee, Maximum: q.Maximum,
			Used: s.used[a], Borrowed: max(0, s.eff[a]-s.guar[a]), Share: s.share[a]}
	}
	for _, j := range e.jobs.pending {
		if j.claim != nil {
			continue
		}
		for a := j.queue; a >= 0; a = s.parent[a] {
			if j.unfit != "" {
				out[a].NeverFits += j.gpus
			} else {
				out[a].Waiting += j.gpus
			}
		}
	}
	return out
}
