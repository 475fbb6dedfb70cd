package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Result holds the metrics of one run, and the per-job outcomes.
type Result struct {
	Trace       string  `json:"trace"`
	Cluster     string  `json:"cluster"`
	ClusterGPUs int     `json:"cluster_gpus"`
	Policy      string  `json:"policy"`
	Placement   string  `json:"placement"`
	LoadFactor  float64 `json:"load_factor"`
	Seed        uint64  `json:"seed"`

	Jobs     int `json:"jobs"`
	Rejected int `json:"rejected"`
	Finished int `json:"finished"`
	Running  int `json:"running"`
	// Pending counts the jobs submitted and neither running nor finished
	// at the end: those never started and those stopped and requeued (by
	// a node failure or a preemption) and not started again.
	Pending int `json:"pending"`
	// Unsubmitted counts the jobs submitted after the run's end (a
	// Horizon cut the trace): Jobs is Rejected + Finished + Running +
	// Pending + Unsubmitted.
	Unsubmitted int `json:"unsubmitted"`
	Accounts    int `json:"accounts"`

	// Makespan runs from the first submit to the last finish, or to the
	// end of the run when a job is still running or waiting then.
	Makespan time.Duration `json:"makespan_ns"`
	// End is when the run ended, on the trace's clock (as
	// Outcome.Submit): the last event, or Config.Horizon after the first
	// submit.
	End time.Duration `json:"end_ns"`
	// ActiveWindow is the time during which work was running or queued;
	// ContendedTime the part of it with jobs queued.
	ActiveWindow  time.Duration `json:"active_window_ns"`
	ContendedTime time.Duration `json:"contended_time_ns"`
	// Utilisation is busy GPU-seconds over capacity over the active
	// window (so idle stretches with nothing running or queued, such as
	// a gap before a late submit, do not count against it). The final
	// drain does: after the last start the window runs on until the last
	// job ends, however few GPUs are busy; see UtilisationBeforeDrain.
	// Capacity is every installed GPU (ClusterGPUs) at every instant,
	// those on failed nodes (Config.NodeMTBF) included: GPUs down count
	// against Utilisation, while IdleWhileQueuedGPUSeconds leaves them out.
	Utilisation float64 `json:"utilisation"`
	// UtilisationBeforeDrain is Utilisation up to the last start: busy
	// GPU-seconds over capacity over the active window before the Drain.
	// When every job starts, no start is left to decide in the drain: it
	// lasts the remaining run time of the jobs running at the last start,
	// so on a finite trace one long job among them can move Utilisation
	// by several points. (When that job started was the scheduler's
	// decision, and its wait shows it.) 0 when the last start is at the
	// first submit.
	UtilisationBeforeDrain float64 `json:"utilisation_before_drain"`
	// Drain is the active time after the last start. With jobs that
	// never start (or a Horizon that stops the run), it may include time
	// with jobs queued.
	Drain          time.Duration `json:"drain_ns"`
	BusyGPUSeconds float64       `json:"busy_gpu_seconds"`
	// IdleWhileQueuedGPUSeconds is the work-conserving gap: GPU-seconds
	// left idle while jobs were queued, counting at each instant at most
	// the GPUs the queued jobs ask for (min(free GPUs, queued GPUs)): the
	// GPUs of their gang shapes, which they hold once they run (a job of
	// 12 GPUs on two whole 8-GPU nodes asks for 16). Free GPUs are the
	// cluster's less those busy and those on failed nodes: GPUs down are
	// not idle here, though Utilisation's capacity counts them.
	IdleWhileQueuedGPUSeconds float64 `json:"idle_while_queued_gpu_seconds"`
	// DeadlockGPUSeconds counts GPUs held by jobs that cannot run (bound
	// pods of incomplete pod-by-pod jobs).
	DeadlockGPUSeconds float64 `json:"deadlock_gpu_seconds"`
	// HeldForHoldGPUSeconds counts GPUs kept idle by hold mode for a
	// waiting gang (phalanx only).
	HeldForHoldGPUSeconds float64 `json:"hold_gpu_seconds"`
	// ReservedFreeGPUSeconds counts GPUs free after a cycle on the GPUs a
	// reservation plans to use (phalanx only; each GPU once, however
	// many reservations plan it), until the next cycle. Such a GPU is
	// open only to jobs whose time limit ends before the reservation
	// starts. It is the idle time on reserved GPUs, part of
	// IdleWhileQueuedGPUSeconds: some of it would be idle without the
	// reservation too (no waiting job fits there at all), and a
	// reservation may also keep GPUs it does not plan idle (a job that
	// would need both), which it does not count.
	ReservedFreeGPUSeconds float64 `json:"reserved_free_gpu_seconds"`

	Waits   []ClassWait   `json:"waits"`
	MeanJCT time.Duration `json:"mean_jct_ns"`
	// MeanBoundedSlowdown is the mean over finished jobs of
	// max(1, (wait + run) / max(run, 10 s)). A job failed by a node
	// failure (backfill.Fail) counts as finished when it stops.
	MeanBoundedSlowdown float64 `json:"mean_bounded_slowdown"`
	// LongestWait is the longest wait of any job (starvation); jobs not
	// started at the end (Pending, requeued ones included) count from
	// their submit up to the end of the run.
	LongestWait time.Duration `json:"longest_wait_ns"`
	// LargeWaitP95 and LargeWaitMax are the p95 (nearest rank: the
	// ceil(0.95 n)-th smallest of the n waits, no interpolation) and max
	// wait of jobs of more than 64 GPUs, counted as ClassWait's.
	LargeWaitP95 time.Duration `json:"large_wait_p95_ns"`
	LargeWaitMax time.Duration `json:"large_wait_max_ns"`

	MultiNodeJobs      int     `json:"multi_node_jobs"`
	MultiNodeInOneLeaf float64 `json:"multi_node_in_one_leaf"`
	MeanLeaves         float64 `json:"mean_leaves_multi_node"`

	// Shares are the accounts' shares of the GPU time while jobs were
	// queued (contended), against their entitlement: at each instant the
	// busy GPUs shared max-min fairly among the accounts with work
	// (running or queued), an equal part each but no more than the
	// account asks for (the GPUs it runs on and those its queued jobs
	// ask for), what one does not ask for shared among the others.
	// (Until 2026-12-04 every account with work was entitled to an equal
	// part whatever it asked for: on Philly at load 3, 84 to 89% of that
	// gap, and at load 4 21 to 27%, was accounts asking for less than
	// their part, under every policy measured.)
	Shares []AccountShare `json:"account_shares"`
	// WorstShare is the largest |share - entitlement| over accounts,
	// while contended.
	WorstShare float64 `json:"worst_share_gap"`

	// Cycles counts the scheduling cycles; CycleP50 and CycleP99 are the
	// nearest-rank quantiles (as quantile) of their CPU times, and
	// CycleTotal their sum.
	Cycles     int           `json:"cycles"`
	CycleP50   time.Duration `json:"cycle_p50_ns"`
	CycleP99   time.Duration `json:"cycle_p99_ns"`
	CycleTotal time.Duration `json:"cycle_total_ns"`

	NodeFailures int `json:"node_failures"`
	// FailureRestarts counts the whole-gang restarts node failures caused
	// (jobs requeued or failed), Replacements the jobs that kept running
	// with their pods on a failed node replaced (Config.OnNodeFailure),
	// Shrinks those that kept running on fewer pods (backfill.Shrink),
	// and FailureLostGPUSeconds the work failures destroyed: the GPUs
	// times the time run, since the start for a whole-gang restart, since
	// the last checkpoint (Config.Checkpoint) for a replacement. Each
	// GPU-second counts once: a whole-gang restart of a run that lost
	// work to a replacement or shrink before adds the rest of the run.
	FailureRestarts       int     `json:"failure_restarts,omitempty"`
	Replacements          int     `json:"replacements,omitempty"`
	Shrinks               int     `json:"shrinks,omitempty"`
	FailureLostGPUSeconds float64 `json:"failure_lost_gpu_seconds,omitempty"`
	// With Config.Preemption: Preemptions counts the jobs preempted (a
	// job preempted twice counts twice), PreemptedGPUSeconds the GPU time
	// they lost (their GPUs times the time from their start to their
	// release: a preempted job restarts from scratch; less what failures
	// had already lost of that run, which FailureLostGPUSeconds counts),
	// and UrgentWaits and
	// OtherWaits are the waits of the urgent jobs and of the others
	// (start, the last one for a preempted job, minus submit).
	Preemptions         int        `json:"preemptions,omitempty"`
	PreemptedGPUSeconds float64    `json:"preempted_gpu_seconds,omitempty"`
	UrgentWaits         *ClassWait `json:"urgent_waits,omitempty"`
	OtherWaits          *ClassWait `json:"other_waits,omitempty"`

	Outcomes []Outcome `json:"-"`
	// Usage is GPU use over time (nil unless Config.UsagePoints > 0).
	Usage      *Usage `json:"usage,omitempty"`
	cycleTimes []time.Duration
}

// ClassWait is the wait (start minus submit) of the jobs of one size
// class. Jobs not started at the end count with their wait up to the end
// of the run (a lower bound), and are counted in NotStarted: those that
// never started and those stopped and requeued (by a node failure or a
// preemption) and not started again, whose wait then runs from their
// submit to the end, their earlier runs included. P50 and P95 are
// nearest-rank quantiles: the ceil(q n)-th smallest of the n waits, no
// interpolation (the p95 of 10 waits is the 10th, the max).
type ClassWait struct {
	Class      string        `json:"class"`
	Jobs       int           `json:"jobs"`
	NotStarted int           `json:"not_started"`
	P50        time.Duration `json:"p50_ns"`
	P95        time.Duration `json:"p95_ns"`
	Max        time.Duration `json:"max_ns"`
}

// AccountShare is an account's share of the busy GPU-seconds while jobs
// were queued, against its entitlement over the same time.
type AccountShare struct {
	Account     string  `json:"account"`
	Share       float64 `json:"share"`
	Entitlement float64 `json:"entitlement"`
}

// SizeClasses are the GPU-count classes of the wait table.
var SizeClasses = []struct {
	Name     string
	Min, Max int
}{{"1", 1, 1}, {"2-8", 2, 8}, {"9-64", 9, 64}, {"65-512", 65, 512}, {">512", 513, math.MaxInt}}

func newResult(cfg Config) *Result {
	r := &Result{Trace: cfg.Trace, Cluster: cfg.ClusterName, ClusterGPUs: cfg.Cluster.TotalGPUs(), Policy: cfg.Policy.String(),
		Placement: cfg.Placement.String(), LoadFactor: cfg.LoadFactor, Seed: cfg.Seed}
	if cfg.Policy == PodByPod {
		r.Placement = "first-fit" // the pod-by-pod binder's own
	}
	return r
}

func (m *Result) finish(r *runner) {
	end := r.now
	m.End = end
	m.Jobs = len(r.jobs)
	m.countJobs(r, end)
	r.account(end)
	w := r.work
	m.ActiveWindow = time.Duration(w.activeSecs * float64(time.Second))
	m.ContendedTime = time.Duration(w.contendedSecs * float64(time.Second))
	m.IdleWhileQueuedGPUSeconds = w.idleQueuedSecs
	if w.activeSecs > 0 {
		m.Utilisation = m.BusyGPUSeconds / (float64(m.ClusterGPUs) * w.activeSecs)
	}
	m.Drain = time.Duration((w.activeSecs - r.activeAtStart) * float64(time.Second))
	if r.activeAtStart > 0 {
		m.UtilisationBeforeDrain = r.busyAtStart / (float64(m.ClusterGPUs) * r.activeAtStart)
	}
	m.waits(r, end)
	if r.cfg.Preemption != nil {
		m.UrgentWaits = classWait(r, end, "urgent", func(o *Outcome) bool { return o.Urgent })
		m.OtherWaits = classWait(r, end, "other", func(o *Outcome) bool { return !o.Urgent })
	}
	m.placementQuality(r)
	m.WorstShare, m.Shares = w.shareGap()
	m.Cycles = len(m.cycleTimes)
	if m.Cycles > 0 {
		ct := slices.Clone(m.cycleTimes)
		slices.Sort(ct)
		m.CycleP50, m.CycleP99 = quantile(ct, 0.5), quantile(ct, 0.99)
		for _, d := range ct {
			m.CycleTotal += d
		}
	}
	m.Outcomes = r.out
	if r.usage != nil {
		m.Usage = r.usage.result(end)
	}
}

// countJobs counts jobs by outcome, and the makespan, mean JCT and mean
// bounded slowdown.
func (m *Result) countJobs(r *runner, end time.Duration) {
	first := r.jobs[0].Submit
	lastEnd := first
	// Summed in float64 seconds: 82,000 jobs of a day's completion time
	// overflow a Duration's 292 years (Philly at load 4 gave a negative
	// mean under gang FIFO).
	jct := 0.0
	bsld := 0.0
	for i := range r.out {
		o := &r.out[i]
		switch {
		case o.Finished:
			m.Finished++
			jct += (o.End - o.Submit).Seconds()
			lastEnd = max(lastEnd, o.End)
			run := max(o.End-o.Start, 10*time.Second)
			bsld += max(1, float64(o.End-o.Submit)/float64(run))
		case o.Started:
			m.Running++
			o.GPUSeconds += r.runGPUSeconds(i, end)
			lastEnd = max(lastEnd, end)
		case o.Submit > end:
			m.Unsubmitted++
		case !o.Rejected:
			m.Pending++
			lastEnd = max(lastEnd, end)
		}
	}
	m.Makespan = lastEnd - first
	if m.Finished > 0 {
		m.MeanJCT = time.Duration(jct / float64(m.Finished) * float64(time.Second))
		m.MeanBoundedSlowdown = bsld / float64(m.Finished)
	}
}

// waitOf is a job's wait: its (last) start minus its submit, or up to end
// for a job not started.
func waitOf(o *Outcome, end time.Duration) time.Duration {
	if o.Started || o.Finished {
		return o.Start - o.Submit
	}
	return end - o.Submit
}

// classWait returns the waits of the jobs submitted by end for which in
// is true.
func classWait(r *runner, end time.Duration, name string, in func(o *Outcome) bool) *ClassWait {
	cw := &ClassWait{Class: name}
	var waits []time.Duration
	for i := range r.out {
		o := &r.out[i]
		if o.Submit > end || o.Rejected || !in(o) {
			continue
		}
		cw.Jobs++
		if !o.Started && !o.Finished {
			cw.NotStarted++
		}
		waits = append(waits, waitOf(o, end))
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		cw.P50, cw.P95, cw.Max = quantile(waits, 0.5), quantile(waits, 0.95), waits[len(waits)-1]
	}
	return cw
}

// waits fills the waits by size class, the longest wait and the large
// jobs' waits; jobs that never started count up to end.
func (m *Result) waits(r *runner, end time.Duration) {
	wait := func(o *Outcome) time.Duration { return waitOf(o, end) }
	var large []time.Duration
	for i := range r.out {
		if o := &r.out[i]; o.Submit <= end && !o.Rejected {
			m.LongestWait = max(m.LongestWait, wait(o))
			if o.GPUs > 64 {
				large = append(large, wait(o))
			}
		}
	}
	if len(large) > 0 {
		slices.Sort(large)
		m.LargeWaitP95, m.LargeWaitMax = quantile(large, 0.95), large[len(large)-1]
	}
	for _, c := range SizeClasses {
		m.Waits = append(m.Waits, *classWait(r, end, c.Name, func(o *Outcome) bool { return o.GPUs >= c.Min && o.GPUs <= c.Max }))
	}
}

// placementQuality fills the share of multi-node jobs in one leaf and
// their mean leaves.
func (m *Result) placementQuality(r *runner) {
	inOne, leaves := 0, 0
	for i := range r.out {
		o := &r.out[i]
		if (o.Started || o.Finished) && r.jobs[i].Nodes > 1 {
			m.MultiNodeJobs++
			leaves += o.Leaves
			if o.Leaves == 1 {
				inOne++
			}
		}
	}
	if m.MultiNodeJobs > 0 {
		m.MultiNodeInOneLeaf = float64(inOne) / float64(m.MultiNodeJobs)
		m.MeanLeaves = float64(leaves) / float64(m.MultiNodeJobs)
	}
}

// quantile returns the nearest-rank q-quantile of sorted (ascending, not
// empty): its ceil(q n)-th smallest of n values (the first for q = 0),
// with no interpolation between neighbours.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Header states what every table was run on.
func Header(results []*Result) string {
	if len(results) == 0 {
		return ""
	}
	r := results[0]
	return fmt.Sprintf("trace %s (%d jobs), cluster %s (%d GPUs), load factor %g, seed %d", r.Trace, r.Jobs, r.Cluster, r.ClusterGPUs, r.LoadFactor, r.Seed)
}

// Table renders results as two text tables: the main metrics, then the
// waits per size class. Both start with the header line.
func Table(results []*Result) string {
	var b strings.Builder
	fmt.Fprintln(&b, Header(results))
	fmt.Fprintf(&b, "%-14s %-10s %6s %6s %7s %7s %7s %8s %6s %-11s %8s %7s %6s %6s %8s %8s %s\n",
		"policy", "placement", "util", "preDr", "idleQ", "hold", "deadlk", "meanJCT", "bsld", ">64 p95/max", "longest", "1-leaf", "leaves", "share", "cyc-p50", "cyc-p99", "done/run/wait/rej")
	for _, r := range results {
		large := "-" // no job of more than 64 GPUs (as in the waits table)
		for i, w := range r.Waits {
			if i < len(SizeClasses) && SizeClasses[i].Min > 64 && w.Jobs > 0 {
				large = short(r.LargeWaitP95) + "/" + short(r.LargeWaitMax)
			}
		}
		fmt.Fprintf(&b, "%-14s %-10s %5.1f%% %5.1f%% %6.0fh %6.0fh %6.0fh %8s %6.1f %-11s %8s %6.1f%% %6.2f %6.3f %8s %8s %d/%d/%d/%d\n",
			r.Policy, r.Placement, 100*r.Utilisation, 100*r.UtilisationBeforeDrain, r.IdleWhileQueuedGPUSeconds/3600, r.HeldForHoldGPUSeconds/3600,
			r.DeadlockGPUSeconds/3600, short(r.MeanJCT), r.MeanBoundedSlowdown, large, short(r.LongestWait),
			100*r.MultiNodeInOneLeaf, r.MeanLeaves, r.WorstShare,
			r.CycleP50.Round(time.Microsecond), r.CycleP99.Round(time.Microsecond), r.Finished, r.Running, r.Pending, r.Rejected)
	}
	fmt.Fprintf(&b, "\nwait p50 / p95 / max by job size (GPUs); '+' marks classes with jobs that never started\n")
	fmt.Fprintf(&b, "%-14s %-10s", "policy", "placement")
	for _, c := range SizeClasses {
		fmt.Fprintf(&b, " %-26s", c.Name)
	}
	b.WriteByte('\n')
	for _, r := range results {
		fmt.Fprintf(&b, "%-14s %-10s", r.Policy, r.Placement)
		for _, w := range r.Waits {
			cell := "-"
			if w.Jobs > 0 {
				cell = fmt.Sprintf("%s/%s/%s", short(w.P50), short(w.P95), short(w.Max))
				if w.NotStarted > 0 {
					cell += "+"
				}
			}
			fmt.Fprintf(&b, " %-26s", cell)
		}
		b.WriteByte('\n')
	}
	preemptionTable(&b, results)
	failureTable(&b, results)
	return b.String()
}

// failureTable adds the node failure metrics of the results that had
// failures: whole-gang restarts, replacements, GPU-hours lost.
func failureTable(b *strings.Builder, results []*Result) {
	header := false
	for _, r := range results {
		if r.NodeFailures == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(b, "\nnode failures: whole-gang restarts, jobs kept with pods replaced or on fewer pods, GPU-hours of work lost\n")
			fmt.Fprintf(b, "%-14s %-10s %8s %9s %9s %9s %10s\n", "policy", "placement", "failures", "restarts", "replaced", "shrunk", "GPU-h lost")
			header = true
		}
		fmt.Fprintf(b, "%-14s %-10s %8d %9d %9d %9d %10.0f\n", r.Policy, r.Placement, r.NodeFailures, r.FailureRestarts, r.Replacements,
			r.Shrinks, r.FailureLostGPUSeconds/3600)
	}
}

// preemptionTable adds the preemption metrics of the results that have
// them: victims, GPU-hours lost, and the waits of urgent and other jobs.
func preemptionTable(b *strings.Builder, results []*Result) {
	header := false
	for _, r := range results {
		if r.UrgentWaits == nil {
			continue
		}
		if !header {
			fmt.Fprintf(b, "\npreemption: victims, GPU-hours they lost, waits p50/p95/max of urgent (class 1) and other jobs\n")
			fmt.Fprintf(b, "%-14s %-10s %8s %9s %8s %-22s %8s %-22s\n", "policy", "placement", "victims", "GPU-h lost", "urgent", "urgent waits", "other", "other waits")
			header = true
		}
		cell := func(w *ClassWait) string {
			s := fmt.Sprintf("%s/%s/%s", short(w.P50), short(w.P95), short(w.Max))
			if w.NotStarted > 0 {
				s += "+"
			}
			return s
		}
		fmt.Fprintf(b, "%-14s %-10s %8d %9.0f %8d %-22s %8d %-22s\n", r.Policy, r.Placement, r.Preemptions, r.PreemptedGPUSeconds/3600,
			r.UrgentWaits.Jobs, cell(r.UrgentWaits), r.OtherWaits.Jobs, cell(r.OtherWaits))
	}
}

// short renders a duration compactly: 0s, 45s, 12m, 3.2h, 4.1d.
func short(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1fh", d.Hours())
	}
	return fmt.Sprintf("%.1fd", d.Hours()/24)
}

// Quantiles returns the p95 (nearest rank, as ClassWait's) and the max
// of waits (sorted in place).
func Quantiles(waits []time.Duration) (p95, max time.Duration) {
	if len(waits) == 0 {
		return 0, 0
	}
	slices.Sort(waits)
	return quantile(waits, 0.95), waits[len(waits)-1]
}
