package sim

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrTrace marks a trace file that cannot be read; the error names the
// line and column.
var ErrTrace = errors.New("sim: bad trace")

// TraceJob is one job of a trace, shaped for a cluster.
type TraceJob struct {
	ID      string
	User    string
	Account string
	// Submit is the submit time relative to the trace's start, after the
	// load factor.
	Submit time.Duration
	// Duration is how long the job really runs.
	Duration time.Duration
	// TimeLimit is the job's limit: from the trace, or derived (see
	// TraceOptions); zero means none (the Kubernetes case).
	TimeLimit time.Duration
	// GPUs is the job's GPU count; Nodes x GPUsPerNode its gang shape.
	GPUs, Nodes, GPUsPerNode int
}

// shapeGPUs returns the GPUs job j's gang shape holds (Nodes x
// GPUsPerNode): its run time is at this size, which may exceed GPUs (a job
// of 12 GPUs on two whole 8-GPU nodes). A shape of whole nodes
// (GPUsPerNode 0, which only a caller building jobs by hand gives) holds
// its nodes' GPUs, which the job's GPUs stand for.
func (j *TraceJob) shapeGPUs() int {
	if j.GPUsPerNode == 0 {
		return j.GPUs
	}
	return j.Nodes * j.GPUsPerNode
}

// TraceOptions shapes a trace for a cluster.
type TraceOptions struct {
	// NodeGPUs is the GPU count of the cluster's nodes (default 8). A job
	// of up to NodeGPUs GPUs gets one node; a larger one
	// ceil(GPUs/NodeGPUs) whole nodes. The optional columns nodes and
	// gpus_per_node override this per job.
	NodeGPUs int
	// LoadFactor divides submit times: 2 submits twice as fast (more
	// contention), 0.5 half as fast. Default 1.
	LoadFactor float64
	// Seed seeds the time-limit rule.
	Seed uint64
	// LimitMin and LimitMax bound the overestimate factor of derived time
	// limits (defaults 1.2 and 3).
	LimitMin, LimitMax float64
	// NoLimits is the share of jobs that get no time limit at all (0: every
	// job has one; 1: none has, as on Kubernetes; 0.5: a mixed trace), the
	// jobs drawn by a generator seeded with (Seed, job index). A trace's
	// own time_limit_s of "none" also means no limit.
	NoLimits float64
	// MaxJobs keeps only the first jobs (0: all).
	MaxJobs int
	// MaxGPUs drops jobs larger than this (0: keep all); the count of
	// dropped jobs is returned.
	MaxGPUs int
	// Source names the trace in errors.
	Source string
}

// DeriveLimit is the documented time-limit rule for traces without one:
// users overestimate, so the limit is the real duration times a factor
// drawn uniformly from [min, max) by a generator seeded with (seed, job
// index), rounded up to a whole 15 minutes.
func DeriveLimit(d time.Duration, seed uint64, index int, min, max float64) time.Duration {
	r := rand.New(rand.NewPCG(seed, uint64(index)))
	f := min + r.Float64()*(max-min)
	q := 15 * time.Minute
	l := time.Duration(math.Ceil(float64(d) * f / float64(q)))
	return max1(l) * q
}

// dropLimit reports whether job index goes without a time limit when a
// share of the jobs does: a draw seeded with (seed, index).
func dropLimit(share float64, seed uint64, index int) bool {
	if share <= 0 {
		return false
	}
	r := rand.New(rand.NewPCG(seed^0x6e6f6c696d, uint64(index)))
	return r.Float64() < share
}

// DropLimits removes the time limit of a share of the jobs (drawn as
// TraceOptions.NoLimits draws them) and returns jobs.
func DropLimits(jobs []TraceJob, share float64, seed uint64) []TraceJob {
	for i := range jobs {
		if dropLimit(share, seed, i) {
			jobs[i].TimeLimit = 0
		}
	}
	return jobs
}

func max1(d time.Duration) time.Duration {
	if d < 1 {
		return 1
	}
	return d
}

// ReadTrace reads a CSV trace: header job_id,user,submit_s,duration_s,gpus
// and optional columns time_limit_s, account, nodes, gpus_per_node (in any
// order). It returns the jobs sorted by submit time (stable) and the number
// dropped by MaxGPUs.
func ReadTrace(r io.Reader, opt TraceOptions) ([]TraceJob, int, error) {
	if opt.NodeGPUs == 0 {
		opt.NodeGPUs = 8
	}
	if opt.LoadFactor == 0 {
		opt.LoadFactor = 1
	}
	if opt.LimitMin == 0 {
		opt.LimitMin, opt.LimitMax = 1.2, 3
	}
	if opt.Source == "" {
		opt.Source = "trace"
	}
	if opt.LoadFactor < 0 || opt.LimitMax < opt.LimitMin || opt.LimitMin < 1 || !(opt.NoLimits >= 0 && opt.NoLimits <= 1) {
		return nil, 0, fmt.Errorf("%w: options: load factor %v, limit factors [%v, %v), no-limit share %v", ErrTrace,
			opt.LoadFactor, opt.LimitMin, opt.LimitMax, opt.NoLimits)
	}
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w: header: %v", opt.Source, ErrTrace, err)
	}
	col := map[string]int{}
	for i, h := range head {
		h = strings.TrimSpace(h)
		switch h {
		case "job_id", "user", "submit_s", "duration_s", "gpus", "time_limit_s", "account", "nodes", "gpus_per_node":
		default:
			return nil, 0, fmt.Errorf("%s:1: %w: unknown column %q", opt.Source, ErrTrace, h)
		}
		if _, dup := col[h]; dup {
			return nil, 0, fmt.Errorf("%s:1: %w: column %q twice", opt.Source, ErrTrace, h)
		}
		col[h] = i
	}
	for _, need := range []string{"job_id", "user", "submit_s", "duration_s", "gpus"} {
		if _, ok := col[need]; !ok {
			return nil, 0, fmt.Errorf("%s:1: %w: missing column %q", opt.Source, ErrTrace, need)
		}
	}
	var jobs []TraceJob
	dropped := 0
	seen := map[string]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w: %v", opt.Source, ErrTrace, err)
		}
		// The record's line in the file: the reader skips blank lines,
		// and a quoted field may span several.
		line, _ := cr.FieldPos(0)
		field := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		num := func(name string, optional bool) (int64, error) {
			v := field(name)
			if v == "" && optional {
				return 0, nil
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%s:%d: %w: column %s: %q is not a non-negative integer", opt.Source, line, ErrTrace, name, v)
			}
			return n, nil
		}
		j := TraceJob{ID: field("job_id"), User: field("user"), Account: field("account")}
		if j.ID == "" {
			return nil, 0, fmt.Errorf("%s:%d: %w: empty job_id", opt.Source, line, ErrTrace)
		}
		if prev, dup := seen[j.ID]; dup {
			return nil, 0, fmt.Errorf("%s:%d: %w: job_id %s already on line %d", opt.Source, line, ErrTrace, j.ID, prev)
		}
		seen[j.ID] = line
		if j.User == "" {
			return nil, 0, fmt.Errorf("%s:%d: %w: empty user", opt.Source, line, ErrTrace)
		}
		if j.Account == "" {
			j.Account = "u" + j.User
		}
		sub, err := num("submit_s", false)
		if err != nil {
			return nil, 0, err
		}
		dur, err := num("duration_s", false)
		if err != nil {
			return nil, 0, err
		}
		gpus, err := num("gpus", false)
		if err != nil {
			return nil, 0, err
		}
		noLimit := field("time_limit_s") == "none"
		lim := int64(0)
		if !noLimit {
			if lim, err = num("time_limit_s", true); err != nil {
				return nil, 0, err
			}
		}
		nodes, err := num("nodes", true)
		if err != nil {
			return nil, 0, err
		}
		gpn, err := num("gpus_per_node", true)
		if err != nil {
			return nil, 0, err
		}
		if gpus < 1 || dur < 1 {
			return nil, 0, fmt.Errorf("%s:%d: %w: job %s needs gpus >= 1 and duration_s >= 1", opt.Source, line, ErrTrace, j.ID)
		}
		// A time.Duration holds about 292 years: a number of seconds
		// beyond it would wrap around.
		for _, x := range []struct {
			name string
			secs float64
		}{{"submit_s", float64(sub) / opt.LoadFactor}, {"duration_s", float64(dur)}, {"time_limit_s", float64(lim)}} {
			if x.secs >= maxTraceSeconds {
				return nil, 0, fmt.Errorf("%s:%d: %w: job %s: column %s: %.0f seconds is out of range", opt.Source, line, ErrTrace, j.ID, x.name, x.secs)
			}
		}
		if opt.MaxGPUs > 0 && int(gpus) > opt.MaxGPUs {
			dropped++
			continue
		}
		j.GPUs = int(gpus)
		j.Submit = time.Duration(float64(sub) / opt.LoadFactor * float64(time.Second))
		j.Duration = time.Duration(dur) * time.Second
		switch {
		case nodes > 0 || gpn > 0:
			if nodes == 0 || gpn == 0 || nodes*gpn < gpus {
				return nil, 0, fmt.Errorf("%s:%d: %w: job %s: nodes %d x gpus_per_node %d does not hold %d GPUs", opt.Source, line, ErrTrace, j.ID, nodes, gpn, gpus)
			}
			j.Nodes, j.GPUsPerNode = int(nodes), int(gpn)
		case j.GPUs <= opt.NodeGPUs:
			j.Nodes, j.GPUsPerNode = 1, j.GPUs
		default:
			j.Nodes, j.GPUsPerNode = (j.GPUs+opt.NodeGPUs-1)/opt.NodeGPUs, opt.NodeGPUs
		}
		switch {
		case noLimit || dropLimit(opt.NoLimits, opt.Seed, len(jobs)):
		case lim > 0:
			j.TimeLimit = time.Duration(lim) * time.Second
		default:
			j.TimeLimit = DeriveLimit(j.Duration, opt.Seed, len(jobs), opt.LimitMin, opt.LimitMax)
		}
		jobs = append(jobs, j)
		if opt.MaxJobs > 0 && len(jobs) >= opt.MaxJobs {
			break
		}
	}
	if len(jobs) == 0 {
		return nil, dropped, fmt.Errorf("%s: %w: no jobs", opt.Source, ErrTrace)
	}
	sortBySubmit(jobs)
	return jobs, dropped, nil
}

// maxTraceSeconds bounds the times of a trace (after the load factor):
// the seconds a time.Duration holds.
const maxTraceSeconds = float64(math.MaxInt64 / int64(time.Second))

func sortBySubmit(jobs []TraceJob) {
	slices.SortStableFunc(jobs, func(a, b TraceJob) int { return cmp.Compare(a.Submit, b.Submit) })
}
