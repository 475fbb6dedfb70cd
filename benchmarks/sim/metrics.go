package sim

import (
	"cmp"
	"fmt"
	"maps"
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
	Pending  int `json:"pending"`
	Accounts int `json:"accounts"`

	// Makespan runs from the first submit to the last finish (or the end
	// of the run).
	Makespan time.Duration `json:"makespan_ns"`
	// Utilisation is busy GPU-seconds over capacity over the makespan.
	Utilisation    float64 `json:"utilisation"`
	BusyGPUSeconds float64 `json:"busy_gpu_seconds"`
	// DeadlockGPUSeconds counts GPUs held by jobs that cannot run (bound
	// pods of incomplete pod-by-pod jobs).
	DeadlockGPUSeconds float64 `json:"deadlock_gpu_seconds"`
	// HeldForHoldGPUSeconds counts GPUs kept idle by hold mode for a
	// waiting gang (phalanx only).
	HeldForHoldGPUSeconds float64 `json:"hold_gpu_seconds"`

	Waits   []ClassWait   `json:"waits"`
	MeanJCT time.Duration `json:"mean_jct_ns"`

	MultiNodeJobs      int     `json:"multi_node_jobs"`
	MultiNodeInOneLeaf float64 `json:"multi_node_in_one_leaf"`
	MeanLeaves         float64 `json:"mean_leaves_multi_node"`

	Shares []AccountShare `json:"account_shares"`
	// WorstShare is the largest |share - entitlement| over accounts.
	WorstShare float64 `json:"worst_share_gap"`

	Cycles     int           `json:"cycles"`
	CycleP50   time.Duration `json:"cycle_p50_ns"`
	CycleP99   time.Duration `json:"cycle_p99_ns"`
	CycleTotal time.Duration `json:"cycle_total_ns"`

	NodeFailures int       `json:"node_failures"`
	Outcomes     []Outcome `json:"-"`
	// Usage is GPU use over time (nil unless Config.UsagePoints > 0).
	Usage      *Usage `json:"usage,omitempty"`
	cycleTimes []time.Duration
}

// ClassWait is the wait (start minus submit) of the jobs of one size
// class. Jobs that never started count with their wait up to the end of
// the run (a lower bound), and are counted in NotStarted.
type ClassWait struct {
	Class      string        `json:"class"`
	Jobs       int           `json:"jobs"`
	NotStarted int           `json:"not_started"`
	P50        time.Duration `json:"p50_ns"`
	P95        time.Duration `json:"p95_ns"`
	Max        time.Duration `json:"max_ns"`
}

// AccountShare is an account's share of the busy GPU-seconds against its
// entitlement (equal shares: 1 / accounts).
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
	m.Jobs = len(r.jobs)
	first := r.jobs[0].Submit
	lastEnd := first
	var jct time.Duration
	var acct = map[string]float64{}
	for i := range r.out {
		o := &r.out[i]
		switch {
		case o.Finished:
			m.Finished++
			jct += o.End - o.Submit
			lastEnd = max(lastEnd, o.End)
		case o.Started:
			m.Running++
			o.GPUSeconds += float64(o.GPUs) * (end - o.Start).Seconds()
			lastEnd = max(lastEnd, end)
		case o.Submit <= end:
			m.Pending++
		}
		acct[o.Account] += o.GPUSeconds
	}
	m.Pending -= m.Rejected
	r.account(end)
	m.Makespan = lastEnd - first
	if m.Makespan > 0 {
		m.Utilisation = m.BusyGPUSeconds / (float64(m.ClusterGPUs) * m.Makespan.Seconds())
	}
	if m.Finished > 0 {
		m.MeanJCT = jct / time.Duration(m.Finished)
	}
	for _, c := range SizeClasses {
		var waits []time.Duration
		cw := ClassWait{Class: c.Name}
		for i := range r.out {
			o := &r.out[i]
			if o.GPUs < c.Min || o.GPUs > c.Max || o.Submit > end {
				continue
			}
			cw.Jobs++
			if o.Started || o.Finished {
				waits = append(waits, o.Start-o.Submit)
			} else {
				cw.NotStarted++
				waits = append(waits, end-o.Submit)
			}
		}
		if len(waits) > 0 {
			slices.Sort(waits)
			cw.P50, cw.P95, cw.Max = quantile(waits, 0.5), quantile(waits, 0.95), waits[len(waits)-1]
		}
		m.Waits = append(m.Waits, cw)
	}
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
	// Sorted, so that the float sums do not depend on map order.
	names := slices.Sorted(maps.Keys(acct))
	total := 0.0
	for _, a := range names {
		total += acct[a]
	}
	for _, a := range names {
		v := acct[a]
		s := AccountShare{Account: a, Entitlement: 1 / float64(len(acct))}
		if total > 0 {
			s.Share = v / total
		}
		m.Shares = append(m.Shares, s)
		m.WorstShare = max(m.WorstShare, math.Abs(s.Share-s.Entitlement))
	}
	slices.SortFunc(m.Shares, func(a, b AccountShare) int { return cmp.Compare(a.Account, b.Account) })
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
	fmt.Fprintf(&b, "%-14s %-10s %6s %8s %8s %9s %9s %9s %7s %7s %9s %9s %s\n",
		"policy", "placement", "util", "deadlk", "hold", "meanJCT", "makespan", "1-leaf", "leaves", "share", "cyc-p50", "cyc-p99", "done/run/wait/rej")
	for _, r := range results {
		fmt.Fprintf(&b, "%-14s %-10s %5.1f%% %7.0fh %7.0fh %9s %9s %8.1f%% %7.2f %7.3f %9s %9s %d/%d/%d/%d\n",
			r.Policy, r.Placement, 100*r.Utilisation, r.DeadlockGPUSeconds/3600, r.HeldForHoldGPUSeconds/3600,
			short(r.MeanJCT), short(r.Makespan), 100*r.MultiNodeInOneLeaf, r.MeanLeaves, r.WorstShare,
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
	return b.String()
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
