package sim

import (
	"slices"
	"time"
)

// Usage is GPU use over time, recorded when Config.UsagePoints is
// positive. The run, from the first submit to its end, is cut into equal
// steps; each step holds the mean number of GPUs busy during it (GPU time
// over the step's length), in total and per account. Memory is bounded:
// at most UsagePoints steps per series, whatever the length of the run.
type Usage struct {
	// Start is the first submit and End the time the run stopped. Step i
	// covers [Start+i*Step, Start+(i+1)*Step); the last step ends at End
	// and its mean is over the part before End.
	Start time.Duration `json:"start_ns"`
	Step  time.Duration `json:"step_ns"`
	End   time.Duration `json:"end_ns"`
	// Busy is the mean number of busy GPUs in each step: the GPUs of
	// running jobs, as counted by Result.BusyGPUSeconds.
	Busy []float64 `json:"busy"`
	// Accounts lists the accounts of the trace, sorted; ByAccount[k][i]
	// is the mean number of GPUs account k's jobs ran on in step i. The
	// accounts' values of a step add up to Busy.
	Accounts  []string    `json:"accounts"`
	ByAccount [][]float64 `json:"by_account"`
}

// usageRecorder integrates GPU counts of several series (the total and
// one per account) into buckets of one width. When time runs past the
// last bucket, neighbouring buckets merge and the width doubles, so the
// bucket count stays within max. Each series is integrated lazily, when
// its count changes, so the cost is per change, not per event and series.
type usageRecorder struct {
	origin time.Duration
	width  time.Duration
	max    int             // even, >= 2
	sums   [][]float64     // [series][bucket]: GPU-seconds
	level  []int           // [series]: GPUs in use now
	since  []time.Duration // [series]: integrated up to this time
	index  map[string]int  // account -> series (1-based; 0 is the total)
	names  []string        // accounts, sorted
}

// newUsageRecorder records series for the total and every account of
// jobs, in at most points buckets, starting at the first submit.
func newUsageRecorder(jobs []TraceJob, points int) *usageRecorder {
	points = max(2, points&^1)
	u := &usageRecorder{origin: jobs[0].Submit, width: time.Second, max: points, index: map[string]int{}}
	for _, j := range jobs {
		if _, ok := u.index[j.Account]; !ok {
			u.index[j.Account] = 0
			u.names = append(u.names, j.Account)
		}
	}
	slices.Sort(u.names)
	for k, a := range u.names {
		u.index[a] = k + 1
	}
	n := len(u.names) + 1
	u.sums = make([][]float64, n)
	u.level = make([]int, n)
	u.since = make([]time.Duration, n)
	for k := range u.sums {
		u.sums[k] = make([]float64, points)
		u.since[k] = u.origin
	}
	return u
}

// add changes by delta the GPUs in use of the total and of account at
// now.
func (u *usageRecorder) add(account string, now time.Duration, delta int) {
	for _, k := range [2]int{0, u.index[account]} {
		u.integrate(k, now)
		u.level[k] += delta
	}
}

// integrate adds series k's GPU time from its last change up to now.
func (u *usageRecorder) integrate(k int, now time.Duration) {
	from := u.since[k]
	if now <= from {
		return
	}
	u.since[k] = now
	u.grow(now)
	if u.level[k] == 0 {
		return
	}
	gpus := float64(u.level[k])
	for from < now {
		b := int((from - u.origin) / u.width)
		end := min(now, u.origin+time.Duration(b+1)*u.width)
		u.sums[k][b] += gpus * (end - from).Seconds()
		from = end
	}
}

// grow doubles the bucket width, merging neighbours, until now fits.
func (u *usageRecorder) grow(now time.Duration) {
	for now-u.origin > u.width*time.Duration(u.max) {
		for _, s := range u.sums {
			for i := range u.max / 2 {
				s[i] = s[2*i] + s[2*i+1]
			}
			clear(s[u.max/2:])
		}
		u.width *= 2
	}
}

// result integrates every series up to end and returns the means.
func (u *usageRecorder) result(end time.Duration) *Usage {
	end = max(end, u.origin)
	for k := range u.sums {
		u.integrate(k, end)
	}
	u.grow(end)
	n := max(1, int((end-u.origin+u.width-1)/u.width))
	mean := func(s []float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			span := min(u.width, end-u.origin-time.Duration(i)*u.width).Seconds()
			if span > 0 {
				out[i] = s[i] / span
			}
		}
		return out
	}
	us := &Usage{Start: u.origin, Step: u.width, End: end, Busy: mean(u.sums[0]), Accounts: u.names}
	for _, s := range u.sums[1:] {
		us.ByAccount = append(us.ByAccount, mean(s))
	}
	return us
}
