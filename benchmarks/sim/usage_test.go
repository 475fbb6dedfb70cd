package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestUsageOneJob: one 8-GPU job for an hour in 4 steps. The width
// doubles from a second to 1,024 s (4 x 1,024 s >= 3,600 s); every step,
// the partial last one included, averages 8 busy GPUs.
func TestUsageOneJob(t *testing.T) {
	jobs := []TraceJob{{ID: "a", User: "x", Account: "x", GPUs: 8, Nodes: 1, GPUsPerNode: 8, Submit: 10 * time.Second,
		Duration: time.Hour, TimeLimit: 2 * time.Hour}}
	res, err := Run(Config{Cluster: topology.Default2000(), Policy: Phalanx, UsagePoints: 4}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	want := &Usage{Start: 10 * time.Second, Step: 1024 * time.Second, End: time.Hour + 10*time.Second,
		Busy: []float64{8, 8, 8, 8}, Accounts: []string{"x"}, ByAccount: [][]float64{{8, 8, 8, 8}}}
	if !reflect.DeepEqual(want, res.Usage) {
		t.Fatalf("usage\n got %+v\nwant %+v", res.Usage, want)
	}
}

// TestUsage checks the recorded series on a random trace under every
// policy: at most UsagePoints steps, GPU time equal to the busy
// GPU-seconds, accounts adding up to the total, no step above capacity,
// the same series on a second run, the other metrics unchanged by
// recording, and (without failures) each step equal to a brute-force
// integration of the jobs' run intervals.
func TestUsage(t *testing.T) {
	jobs := randomTrace(rand.New(rand.NewPCG(4, 5)), 300)
	c := topology.Default2000()
	for _, p := range Policies {
		for _, fail := range []bool{false, true} {
			if fail && p == PodByPod {
				continue
			}
			t.Run(fmt.Sprintf("%s/failures=%v", p, fail), func(t *testing.T) {
				cfg := Config{Cluster: c, Policy: p, Seed: 1, Interval: 10 * time.Minute}
				if fail {
					cfg.NodeMTBF, cfg.Repair = 20*24*time.Hour, 2*time.Hour
				}
				plain, err := Run(cfg, jobs)
				if err != nil {
					t.Fatal(err)
				}
				cfg.UsagePoints = 100
				res, err := Run(cfg, jobs)
				if err != nil {
					t.Fatal(err)
				}
				again, err := Run(cfg, jobs)
				if err != nil {
					t.Fatal(err)
				}
				if plain.Usage != nil {
					t.Fatal("usage recorded with UsagePoints 0")
				}
				if a, b := deterministicPart(plain), deterministicPart(res); !reflect.DeepEqual(a, b) {
					t.Fatalf("recording changed the metrics\nplain    %+v\nrecorded %+v", a, b)
				}
				if !reflect.DeepEqual(res.Usage, again.Usage) {
					t.Fatalf("second run differs\n%+v\n%+v", res.Usage, again.Usage)
				}
				checkUsage(t, res, cfg.UsagePoints)
				if !fail {
					compareUsageOracle(t, res)
				}
			})
		}
	}
}

// deterministicPart returns a copy of res without the usage series and the
// measured (wall-clock) cycle times.
func deterministicPart(res *Result) Result {
	c := *res
	c.Usage, c.cycleTimes = nil, nil
	c.CycleP50, c.CycleP99, c.CycleTotal = 0, 0, 0
	return c
}

// checkUsage checks the invariants of res.Usage.
func checkUsage(t *testing.T, res *Result, points int) {
	t.Helper()
	u := res.Usage
	if n := len(u.Busy); n < 1 || n > points {
		t.Fatalf("%d steps, want 1..%d", n, points)
	}
	if len(u.ByAccount) != len(u.Accounts) || res.Accounts != 0 && len(u.Accounts) != res.Accounts {
		t.Fatalf("%d account series for %d accounts (result: %d)", len(u.ByAccount), len(u.Accounts), res.Accounts)
	}
	total := 0.0
	for i, b := range u.Busy {
		span := min(u.Step, u.End-u.Start-time.Duration(i)*u.Step).Seconds()
		total += b * span
		if b < -1e-9 || b > float64(res.ClusterGPUs)+1e-9 {
			t.Fatalf("step %d: %v busy GPUs on %d", i, b, res.ClusterGPUs)
		}
		sum := 0.0
		for _, s := range u.ByAccount {
			sum += s[i]
		}
		if math.Abs(sum-b) > 1e-6*max(1, b) {
			t.Fatalf("step %d: accounts add up to %v, total %v", i, sum, b)
		}
	}
	if math.Abs(total-res.BusyGPUSeconds) > 1e-6*max(1, total) {
		t.Fatalf("series hold %v GPU-s, result %v", total, res.BusyGPUSeconds)
	}
}

// compareUsageOracle integrates every job's run interval over each step
// directly and compares with the recorded means.
func compareUsageOracle(t *testing.T, res *Result) {
	t.Helper()
	u := res.Usage
	for i, got := range u.Busy {
		lo := u.Start + time.Duration(i)*u.Step
		hi := min(lo+u.Step, u.End)
		gpuSec := 0.0
		for _, o := range res.Outcomes {
			if !o.Started && !o.Finished {
				continue
			}
			end := u.End
			if o.Finished {
				end = o.End
			}
			if a, b := max(lo, o.Start), min(hi, end); b > a {
				gpuSec += float64(o.GPUs) * (b - a).Seconds()
			}
		}
		want := gpuSec / (hi - lo).Seconds()
		if math.Abs(got-want) > 1e-6*max(1, want) {
			t.Fatalf("step %d [%v, %v): %v busy GPUs, oracle %v", i, lo, hi, got, want)
		}
	}
}

// TestProgress: the hook is called every ProgressEvery cycles with the
// trace's job count and a finished count that never goes down.
func TestProgress(t *testing.T) {
	jobs := randomTrace(rand.New(rand.NewPCG(6, 7)), 200)
	for _, p := range []Policy{PodByPod, Phalanx} {
		t.Run(p.String(), func(t *testing.T) {
			calls, last := 0, 0
			cfg := Config{Cluster: topology.Default2000(), Policy: p, ProgressEvery: 10,
				Progress: func(now time.Duration, finished, total int) {
					calls++
					if total != len(jobs) || finished < last || finished > total {
						t.Fatalf("progress %d of %d after %d", finished, total, last)
					}
					last = finished
				}}
			res, err := Run(cfg, jobs)
			if err != nil {
				t.Fatal(err)
			}
			if calls != res.Cycles/10 || calls == 0 {
				t.Fatalf("%d calls in %d cycles", calls, res.Cycles)
			}
		})
	}
}
