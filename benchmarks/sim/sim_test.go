package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/internal/baseline"
	"github.com/phalanx-sched/phalanx/topology"
)

func TestReadTrace(t *testing.T) {
	csv := "job_id,user,submit_s,duration_s,gpus,time_limit_s,nodes,gpus_per_node\n" +
		"0,3,100,60,1,,,\n" +
		"1,3,0,600,12,,,\n" +
		"2,4,50,60,16,7200,4,4\n"
	jobs, dropped, err := ReadTrace(strings.NewReader(csv), TraceOptions{LoadFactor: 2, Seed: 1})
	if err != nil || dropped != 0 {
		t.Fatal(err, dropped)
	}
	// Sorted by submit time, divided by the load factor.
	if jobs[0].ID != "1" || jobs[1].ID != "2" || jobs[2].Submit != 50*time.Second {
		t.Fatalf("order/submit: %+v", jobs)
	}
	// 12 GPUs on 8-GPU nodes: 2 whole nodes; the column override wins.
	if jobs[0].Nodes != 2 || jobs[0].GPUsPerNode != 8 || jobs[1].Nodes != 4 || jobs[1].GPUsPerNode != 4 || jobs[2].Nodes != 1 {
		t.Fatalf("shapes: %+v", jobs)
	}
	// Derived limit: a factor in [1.2, 3) times the duration, rounded up
	// to 15 minutes; given limits are kept.
	if l := jobs[0].TimeLimit; l < 15*time.Minute || l > 30*time.Minute || l%(15*time.Minute) != 0 {
		t.Fatalf("derived limit %v for 10 minutes", l)
	}
	if jobs[1].TimeLimit != 2*time.Hour {
		t.Fatalf("given limit %v", jobs[1].TimeLimit)
	}
	bad := []struct{ name, csv, msg string }{
		{"unknown column", "job_id,user,submit_s,duration_s,gpus,color\n", `unknown column "color"`},
		{"missing column", "job_id,user,submit_s,gpus\n", `missing column "duration_s"`},
		{"bad number", "job_id,user,submit_s,duration_s,gpus\n1,2,x,3,4\n", `trace:2: sim: bad trace: column submit_s: "x"`},
		{"zero gpus", "job_id,user,submit_s,duration_s,gpus\n1,2,3,3,0\n", "trace:2: sim: bad trace: job 1 needs gpus >= 1"},
		{"duplicate id", "job_id,user,submit_s,duration_s,gpus\n1,2,3,3,1\n1,2,3,3,1\n", "job_id 1 already on line 2"},
		{"shape too small", "job_id,user,submit_s,duration_s,gpus,nodes,gpus_per_node\n1,2,3,3,9,1,8\n", "does not hold 9 GPUs"},
		{"empty", "job_id,user,submit_s,duration_s,gpus\n", "no jobs"},
		// The reader skips blank lines: the error still names the line
		// in the file.
		{"after a blank line", "job_id,user,submit_s,duration_s,gpus\n1,2,3,3,1\n\n2,2,x,3,1\n", `trace:4: sim: bad trace: column submit_s: "x"`},
		{"duplicate after a blank line", "job_id,user,submit_s,duration_s,gpus\n1,2,3,3,1\n\n\n1,2,3,3,1\n", "trace:5: sim: bad trace: job_id 1 already on line 2"},
		// Times that a time.Duration cannot hold (it wrapped around: a
		// negative or tiny duration, a submit time in the past).
		{"huge duration", "job_id,user,submit_s,duration_s,gpus\n1,2,3,10000000000000,1\n", "trace:2: sim: bad trace: job 1: column duration_s: 10000000000000 seconds is out of range"},
		{"huge submit", "job_id,user,submit_s,duration_s,gpus\n1,2,9000000000000000000,3,1\n", "trace:2: sim: bad trace: job 1: column submit_s:"},
		{"huge limit", "job_id,user,submit_s,duration_s,gpus,time_limit_s\n1,2,3,3,1,9300000000\n", "trace:2: sim: bad trace: job 1: column time_limit_s: 9300000000 seconds"},
		{"after a quoted newline", "job_id,user,submit_s,duration_s,gpus\n1,\"a\nb\",3,3,1\n2,2,x,3,1\n", `trace:4: sim: bad trace: column submit_s: "x"`},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			_, _, err := ReadTrace(strings.NewReader(b.csv), TraceOptions{})
			if !errors.Is(err, ErrTrace) || !strings.Contains(err.Error(), b.msg) {
				t.Fatalf("ReadTrace = %v, want %q", err, b.msg)
			}
		})
	}
}

// randomTrace makes a seeded trace of n jobs.
func randomTrace(r *rand.Rand, n int) []TraceJob {
	var jobs []TraceJob
	sizes := []int{1, 1, 1, 2, 4, 8, 16, 32, 64, 128, 512}
	for i := range n {
		g := sizes[r.IntN(len(sizes))]
		j := TraceJob{ID: fmt.Sprint(i), User: fmt.Sprint(r.IntN(5)), Submit: time.Duration(r.IntN(48*3600)) * time.Second,
			Duration: time.Duration(60+r.IntN(8*3600)) * time.Second, GPUs: g}
		j.Account = "u" + j.User
		j.Nodes, j.GPUsPerNode = 1, g
		if g > 8 {
			j.Nodes, j.GPUsPerNode = g/8, 8
		}
		j.TimeLimit = DeriveLimit(j.Duration, 1, i, 1.2, 3)
		jobs = append(jobs, j)
	}
	sortBySubmit(jobs)
	return jobs
}

// checkConservation: every job is finished, running, pending or
// rejected, and the busy GPU-seconds equal the sum of the jobs' own.
func checkConservation(t *testing.T, res *Result) {
	t.Helper()
	if got := res.Finished + res.Running + res.Pending + res.Rejected; got != res.Jobs {
		t.Fatalf("%s: %d finished + %d running + %d pending + %d rejected != %d jobs",
			res.Policy, res.Finished, res.Running, res.Pending, res.Rejected, res.Jobs)
	}
	sum := 0.0
	for _, o := range res.Outcomes {
		sum += o.GPUSeconds
	}
	if math.Abs(sum-res.BusyGPUSeconds) > 1e-6*math.Max(1, sum) {
		t.Fatalf("%s: busy %.3f GPU-s, jobs used %.3f", res.Policy, res.BusyGPUSeconds, sum)
	}
	if res.Utilisation < 0 || res.Utilisation > 1+1e-9 {
		t.Fatalf("%s: utilisation %v", res.Policy, res.Utilisation)
	}
	if u := res.UtilisationBeforeDrain; u < 0 || u > 1+1e-9 || res.Drain < 0 || res.Drain > res.ActiveWindow {
		t.Fatalf("%s: before the drain utilisation %v, drain %v of a %v window", res.Policy, u, res.Drain, res.ActiveWindow)
	}
	// A GPU free on a reservation's plan is free while its job waits:
	// part of the idle time while queued.
	if f := res.ReservedFreeGPUSeconds; f < 0 || f > res.IdleWhileQueuedGPUSeconds*(1+1e-9)+1e-6 {
		t.Fatalf("%s: %v GPU-s free on reservations, %v idle while queued", res.Policy, f, res.IdleWhileQueuedGPUSeconds)
	}
	// While contended, the shares and the entitlements are fractions of
	// the busy GPU time: each adds up to 1 (both 0 when no GPU was busy
	// then). The shares do by construction; the entitlements only if
	// the water-filling hands out every busy GPU.
	var share, ent float64
	for _, a := range res.Shares {
		if a.Share < 0 || a.Entitlement < 0 {
			t.Fatalf("%s: account %+v", res.Policy, a)
		}
		share, ent = share+a.Share, ent+a.Entitlement
	}
	if share+ent > 0 && (math.Abs(share-1) > 1e-9 || math.Abs(ent-1) > 1e-9) {
		t.Fatalf("%s: shares add up to %v, entitlements to %v", res.Policy, share, ent)
	}
}

func TestConservation(t *testing.T) {
	jobs := randomTrace(rand.New(rand.NewPCG(2, 3)), 400)
	c := topology.Default2000()
	for _, p := range Policies {
		for _, fail := range []bool{false, true} {
			if fail && p == PodByPod {
				continue
			}
			t.Run(fmt.Sprintf("%s/failures=%v", p, fail), func(t *testing.T) {
				cfg := Config{Cluster: c, ClusterName: "default-2k", Trace: "random", Policy: p, Seed: 1, Interval: 10 * time.Minute}
				if fail {
					cfg.NodeMTBF, cfg.Repair = 30*24*time.Hour, 2*time.Hour
				}
				res, err := Run(cfg, jobs)
				if err != nil {
					t.Fatal(err)
				}
				checkConservation(t, res)
				if fail && res.NodeFailures == 0 {
					t.Fatal("no node failed")
				}
				if p != PodByPod && res.DeadlockGPUSeconds != 0 {
					t.Fatalf("gang policy held %v GPU-s in incomplete jobs", res.DeadlockGPUSeconds)
				}
				if p != PodByPod && !fail && res.Finished+res.Rejected != res.Jobs {
					t.Fatalf("%d of %d jobs finished", res.Finished, res.Jobs)
				}
			})
		}
	}
}

// TestSeedCaseInSimulator: two 1,200-GPU jobs submitted together. Pod by
// pod they deadlock, holding every GPU and finishing nothing; under gang
// admission both run, one after the other.
func TestSeedCaseInSimulator(t *testing.T) {
	jobs := []TraceJob{
		{ID: "A", User: "a", Account: "a", GPUs: 1200, Nodes: 150, GPUsPerNode: 8, Duration: time.Hour, TimeLimit: 2 * time.Hour},
		{ID: "B", User: "b", Account: "b", GPUs: 1200, Nodes: 150, GPUsPerNode: 8, Duration: time.Hour, TimeLimit: 2 * time.Hour},
	}
	c := topology.Default2000()
	for _, p := range Policies {
		t.Run(p.String(), func(t *testing.T) {
			res, err := Run(Config{Cluster: c, ClusterName: "default-2k", Trace: "seed", Policy: p}, jobs)
			if err != nil {
				t.Fatal(err)
			}
			checkConservation(t, res)
			if p == PodByPod {
				if res.Finished != 0 || res.Pending != 2 || res.BusyGPUSeconds != 0 {
					t.Fatalf("pod-by-pod: %d finished, %d pending, %v busy GPU-s", res.Finished, res.Pending, res.BusyGPUSeconds)
				}
				return
			}
			if res.Finished != 2 || res.DeadlockGPUSeconds != 0 || res.Makespan != 2*time.Hour {
				t.Fatalf("%s: %d finished, deadlock %v, makespan %v", p, res.Finished, res.DeadlockGPUSeconds, res.Makespan)
			}
		})
	}
	// A horizon lets the deadlock show as held GPU-hours.
	res, err := Run(Config{Cluster: c, ClusterName: "default-2k", Trace: "seed", Policy: PodByPod, Horizon: 10 * time.Hour}, append(jobs,
		TraceJob{ID: "tick", User: "c", Account: "c", GPUs: 1, Nodes: 1, GPUsPerNode: 1, Submit: 10 * time.Hour, Duration: time.Minute, TimeLimit: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	if want := 2000 * 10 * 3600.0; res.DeadlockGPUSeconds != want {
		t.Fatalf("deadlock %v GPU-s, want %v (every GPU for 10 hours)", res.DeadlockGPUSeconds, want)
	}
}

// TestITPTrace replays a real ITP trace (skipped without ../shared).
func TestITPTrace(t *testing.T) {
	path := "../../../shared/data/traces/itp/itp_cluster01.csv"
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("trace not available: %v", err)
	}
	defer f.Close()
	jobs, _, err := ReadTrace(f, TraceOptions{LoadFactor: 8, Seed: 1, Source: "itp_cluster01.csv"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 8, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{PodByPod, Phalanx} {
		res, err := Run(Config{Cluster: c, ClusterName: "fattree-256", Trace: "itp_cluster01", LoadFactor: 8, Policy: p, Placement: baseline.LeafPack}, jobs)
		if err != nil {
			t.Fatal(err)
		}
		checkConservation(t, res)
		t.Logf("%s: util %.1f%%, deadlock %.0f GPU-h, %d finished", p, 100*res.Utilisation, res.DeadlockGPUSeconds/3600, res.Finished)
		if p == Phalanx && (res.DeadlockGPUSeconds != 0 || res.Finished != res.Jobs-res.Rejected) {
			t.Fatalf("phalanx: deadlock %v GPU-s, %d of %d finished", res.DeadlockGPUSeconds, res.Finished, res.Jobs)
		}
	}
}

// FuzzReadTrace: the trace reader never panics, errors wrap ErrTrace, and
// every job read has a positive shape that holds its GPUs.
func FuzzReadTrace(f *testing.F) {
	f.Add("job_id,user,submit_s,duration_s,gpus\n0,1,0,60,8\n1,2,5,60,12\n")
	f.Add("job_id,user,submit_s,duration_s,gpus,time_limit_s,nodes,gpus_per_node\n0,1,0,60,16,100,4,4\n")
	f.Add("job_id,user,submit_s,duration_s,gpus\n0,1,x,60,8\n")
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 8192 {
			return
		}
		jobs, _, err := ReadTrace(strings.NewReader(text), TraceOptions{LoadFactor: 2, Seed: 1})
		if err != nil {
			if !errors.Is(err, ErrTrace) {
				t.Fatalf("error without ErrTrace: %v", err)
			}
			return
		}
		for _, j := range jobs {
			if j.Nodes < 1 || j.GPUsPerNode < 1 || j.Nodes*j.GPUsPerNode < j.GPUs || j.TimeLimit <= 0 || j.Duration <= 0 {
				t.Fatalf("bad job %+v", j)
			}
		}
	})
}

// The simulator's work counts are checked at every event in tests.
func init() { checkWork = true }

// TestWorkAccounting: with every job started at once on an empty cluster,
// nothing is ever queued: no contended time, no idle GPU-hours while
// queued; utilisation over the active window is the busy fraction. Then
// runs with a queued job: the idle GPUs while it waits, utilisation over
// the window and before the final drain.
func TestWorkAccounting(t *testing.T) {
	jobs := []TraceJob{
		{ID: "a", Account: "x", Submit: 0, Duration: time.Hour, GPUs: 8, Nodes: 1, GPUsPerNode: 8},
		{ID: "b", Account: "y", Submit: 30 * time.Minute, Duration: time.Hour, GPUs: 16, Nodes: 2, GPUsPerNode: 8},
	}
	r, err := Run(Config{Cluster: topology.Default2000(), Policy: GangBackfill}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if r.ContendedTime != 0 || r.IdleWhileQueuedGPUSeconds != 0 {
		t.Errorf("contended %v, idle while queued %v GPU-s; nothing was ever queued", r.ContendedTime, r.IdleWhileQueuedGPUSeconds)
	}
	if r.ActiveWindow != 90*time.Minute {
		t.Errorf("active window %v, want 1h30m", r.ActiveWindow)
	}
	want := (8*3600 + 16*3600) / (2000 * 5400.0)
	if d := r.Utilisation - want; d > 1e-12 || d < -1e-12 {
		t.Errorf("utilisation %v, want %v", r.Utilisation, want)
	}
	// The last start is b's at 30m: before it only a ran (8 GPUs); the
	// hour after it is the drain.
	checkDrain(t, r, 8/2000.0, time.Hour)
	// A job that cannot start while another holds the cluster is queued,
	// with every GPU it asks for free but too few: the idle GPUs count.
	jobs = []TraceJob{
		{ID: "a", Account: "x", Submit: 0, Duration: time.Hour, GPUs: 1600, Nodes: 200, GPUsPerNode: 8},
		{ID: "b", Account: "y", Submit: 0, Duration: time.Hour, GPUs: 800, Nodes: 100, GPUsPerNode: 8},
	}
	r, err = Run(Config{Cluster: topology.Default2000(), Policy: GangBackfill}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if r.ContendedTime != time.Hour || r.IdleWhileQueuedGPUSeconds != 400*3600 {
		t.Errorf("contended %v, idle while queued %v GPU-h; want 1h and 400", r.ContendedTime, r.IdleWhileQueuedGPUSeconds/3600)
	}
	// b starts at 1h, when a ends: 1,600 of 2,000 GPUs busy before it,
	// 800 in the hour of drain after it; over the whole window 2,400
	// GPU-hours in 4,000.
	if d := r.Utilisation - 0.6; d > 1e-12 || d < -1e-12 {
		t.Errorf("utilisation %v, want 0.6", r.Utilisation)
	}
	checkDrain(t, r, 0.8, time.Hour)
	// A late, long job: c waits behind a for an hour, then runs alone for
	// ten. The window's utilisation is c's as much as the scheduler's; the
	// figure before the drain is a's hour (1,600 GPUs of 2,000).
	jobs = []TraceJob{
		{ID: "a", Account: "x", Submit: 0, Duration: time.Hour, GPUs: 1600, Nodes: 200, GPUsPerNode: 8},
		{ID: "c", Account: "y", Submit: 0, Duration: 10 * time.Hour, GPUs: 800, Nodes: 100, GPUsPerNode: 8},
	}
	r, err = Run(Config{Cluster: topology.Default2000(), Policy: GangBackfill}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if want := (1600 + 8000) / (2000 * 11.0); math.Abs(r.Utilisation-want) > 1e-12 {
		t.Errorf("utilisation %v, want %v", r.Utilisation, want)
	}
	checkDrain(t, r, 0.8, 10*time.Hour)
}

// TestReservedFree: GPUs free on a reservation's planned GPUs count until
// they are used or the reservation's job starts; greedy backfill plans
// none.
func TestReservedFree(t *testing.T) {
	// a holds 1,600 of the 2,000 GPUs for its hour (its limit); b needs
	// the whole cluster, so its reservation at 1h plans every GPU, and
	// the 400 free ones wait for it. c (8 GPUs, 2 h) cannot use them
	// without delaying b.
	base := []TraceJob{
		{ID: "a", Account: "x", Submit: 0, Duration: time.Hour, TimeLimit: time.Hour, GPUs: 1600, Nodes: 200, GPUsPerNode: 8},
		{ID: "b", Account: "y", Submit: 0, Duration: time.Hour, TimeLimit: time.Hour, GPUs: 2000, Nodes: 250, GPUsPerNode: 8},
		{ID: "c", Account: "z", Submit: 0, Duration: 2 * time.Hour, TimeLimit: 2 * time.Hour, GPUs: 8, Nodes: 1, GPUsPerNode: 8},
	}
	short := slices.Clone(base)
	// With a 30-minute run, c fits before b's start on one of the
	// reserved nodes: 8 GPUs fewer are free for that half hour.
	short[2].Duration, short[2].TimeLimit = 30*time.Minute, 30*time.Minute
	// d needs the whole cluster after b: a second reservation, at 2h, on
	// the same GPUs. The 400 free ones count once. (c comes a second
	// later, to rank below d: ranked above it, c would take the GPUs
	// from 2h and put d's reservation at 4h.)
	twice := append(slices.Clone(base), TraceJob{ID: "d", Account: "w", Submit: 0, Duration: time.Hour, TimeLimit: time.Hour, GPUs: 2000, Nodes: 250, GPUsPerNode: 8})
	twice[2].Submit = time.Second
	slices.SortStableFunc(twice, func(x, y TraceJob) int { return cmp.Compare(x.Submit, y.Submit) })
	for _, tc := range []struct {
		name   string
		jobs   []TraceJob
		policy Policy
		want   float64 // GPU-seconds
	}{
		{"reservation keeps 400 GPUs for an hour", base, Phalanx, 400 * 3600},
		{"a short job backfills onto it", short, Phalanx, 392*1800 + 400*1800},
		{"two reservations plan the same GPUs", twice, Phalanx, 400 * 3600},
		{"greedy backfill plans no reservation", base, GangBackfill, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := backfill.DefaultConfig()
			r, err := Run(Config{Cluster: topology.Default2000(), Policy: tc.policy, Engine: &e}, tc.jobs)
			if err != nil {
				t.Fatal(err)
			}
			checkConservation(t, r)
			if r.ReservedFreeGPUSeconds != tc.want {
				t.Errorf("free on reservations %v GPU-s, want %v", r.ReservedFreeGPUSeconds, tc.want)
			}
			if tc.policy == Phalanx && r.IdleWhileQueuedGPUSeconds < tc.want {
				t.Errorf("idle while queued %v GPU-s, below the %v free on reservations", r.IdleWhileQueuedGPUSeconds, tc.want)
			}
		})
	}
}

// TestShareGap: an account's entitlement is its max-min fair part of the
// busy GPUs, capped at what it asks for, what it does not ask for shared
// equally among the others.
func TestShareGap(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs []TraceJob
		gap  float64
		ent  map[string]float64 // entitlements, when checked
	}{{
		// While x's 400-GPU job waits for its 1,800-GPU one, y runs 8
		// GPUs and asks for no more: x is entitled to the rest, and gets
		// it (an equal part would say 0.248: x's 3,600 GPU-hours of the
		// 3,608 against 2,704).
		name: "demand-capped",
		jobs: []TraceJob{
			{ID: "a", Account: "x", Submit: 0, Duration: 2 * time.Hour, GPUs: 1800, Nodes: 225, GPUsPerNode: 8},
			{ID: "b", Account: "y", Submit: 0, Duration: time.Hour, GPUs: 8, Nodes: 1, GPUsPerNode: 8},
			{ID: "c", Account: "x", Submit: 0, Duration: time.Hour, GPUs: 400, Nodes: 50, GPUsPerNode: 8},
		},
		gap: 0,
	}, {
		// x holds the whole cluster for 2 h while y's 800 GPUs wait: of
		// the 2,000 busy GPUs y was entitled to the 800 it asked for and
		// got none; x got 2,000 of its 1,200.
		name: "starved",
		jobs: []TraceJob{
			{ID: "a", Account: "x", Submit: 0, Duration: 2 * time.Hour, GPUs: 2000, Nodes: 250, GPUsPerNode: 8},
			{ID: "b", Account: "y", Submit: time.Second, Duration: time.Hour, GPUs: 800, Nodes: 100, GPUsPerNode: 8},
		},
		gap: 0.4,
	}, {
		// x runs 1,200 GPUs and y's 1,200 wait for them; z runs 8 for
		// the first hour. Of the 1,208 busy GPUs then, z is entitled to
		// the 8 it asks for and x and y to 600 each (not z's equal 402.67
		// and the rest split unevenly); in the second hour x and y to 600
		// each. Over the 2,408 busy GPU-hours: 1,200, 1,200 and 8.
		name: "three accounts",
		jobs: []TraceJob{
			{ID: "a", Account: "x", Submit: 0, Duration: 2 * time.Hour, GPUs: 1200, Nodes: 150, GPUsPerNode: 8},
			{ID: "b", Account: "y", Submit: 0, Duration: time.Hour, GPUs: 1200, Nodes: 150, GPUsPerNode: 8},
			{ID: "c", Account: "z", Submit: 0, Duration: time.Hour, GPUs: 8, Nodes: 1, GPUsPerNode: 8},
		},
		gap: 1200 / 2408.0,
		ent: map[string]float64{"x": 1200 / 2408.0, "y": 1200 / 2408.0, "z": 8 / 2408.0},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(Config{Cluster: topology.Default2000(), Policy: GangBackfill}, tc.jobs)
			if err != nil {
				t.Fatal(err)
			}
			if r.ContendedTime == 0 || math.Abs(r.WorstShare-tc.gap) > 1e-9 {
				t.Errorf("contended %v, share gap %v (%+v); want %v", r.ContendedTime, r.WorstShare, r.Shares, tc.gap)
			}
			var got, ent float64
			for _, s := range r.Shares {
				got, ent = got+s.Share, ent+s.Entitlement
				if want, ok := tc.ent[s.Account]; ok && math.Abs(s.Entitlement-want) > 1e-9 {
					t.Errorf("%s entitled to %v, want %v", s.Account, s.Entitlement, want)
				}
			}
			if math.Abs(got-1) > 1e-9 || math.Abs(ent-1) > 1e-9 {
				t.Errorf("shares add up to %v, entitlements to %v; want 1 and 1", got, ent)
			}
		})
	}
}

// checkDrain checks a run's utilisation before its drain and the drain.
func checkDrain(t *testing.T, r *Result, util float64, drain time.Duration) {
	t.Helper()
	if math.Abs(r.UtilisationBeforeDrain-util) > 1e-12 || r.Drain != drain {
		t.Errorf("before the drain utilisation %v, drain %v; want %v, %v", r.UtilisationBeforeDrain, r.Drain, util, drain)
	}
}

// TestFailurePolicies runs one workload with node failures under whole-gang
// requeue, under replacement (with and without checkpoints) and with
// elastic multi-node jobs that shrink (with checkpoints): every job
// finishes and the GPU time is conserved (busy time equals the jobs' GPU
// time, also across changes of size); requeue restarts gangs and replaces
// nothing; replacement keeps most jobs running, and with checkpoints loses
// less work than without; elastic jobs shrink, and only they.
func TestFailurePolicies(t *testing.T) {
	jobs := randomTrace(rand.New(rand.NewPCG(2, 3)), 400)
	c := topology.Default2000()
	run := func(p backfill.FailurePolicy, ckpt time.Duration) *Result {
		cfg := Config{Cluster: c, ClusterName: "default-2k", Trace: "random", Policy: Phalanx, Seed: 1, Interval: 10 * time.Minute,
			NodeMTBF: 10 * 24 * time.Hour, Repair: 2 * time.Hour, OnNodeFailure: p, Checkpoint: ckpt}
		res, err := Run(cfg, jobs)
		if err != nil {
			t.Fatal(err)
		}
		checkConservation(t, res)
		if res.Finished+res.Rejected != res.Jobs || res.NodeFailures == 0 {
			t.Fatalf("%v: %d of %d jobs finished, %d failures", p, res.Finished, res.Jobs, res.NodeFailures)
		}
		return res
	}
	requeue, replace, ckpt := run(backfill.Requeue, 0), run(backfill.Replace, 0), run(backfill.Replace, time.Hour)
	shrink := run(backfill.Shrink, time.Hour)
	for _, x := range []struct {
		name string
		r    *Result
	}{{"requeue", requeue}, {"replace", replace}, {"replace+checkpoint", ckpt}, {"shrink+checkpoint", shrink}} {
		t.Logf("%s: %d failures, %d restarts, %d replaced, %d shrunk, %.0f GPU-h lost", x.name, x.r.NodeFailures, x.r.FailureRestarts, x.r.Replacements, x.r.Shrinks, x.r.FailureLostGPUSeconds/3600)
	}
	if shrink.Shrinks == 0 || replace.Shrinks != 0 {
		t.Errorf("shrink: %d jobs shrunk (replace: %d)", shrink.Shrinks, replace.Shrinks)
	}
	if requeue.Replacements != 0 || requeue.FailureRestarts == 0 {
		t.Errorf("requeue: %d replaced, %d restarts", requeue.Replacements, requeue.FailureRestarts)
	}
	if replace.Replacements == 0 || replace.Replacements < replace.FailureRestarts {
		t.Errorf("replace: %d replaced, %d restarts", replace.Replacements, replace.FailureRestarts)
	}
	if ckpt.FailureLostGPUSeconds >= replace.FailureLostGPUSeconds {
		t.Errorf("checkpoints lost %.0f GPU-s, without %.0f", ckpt.FailureLostGPUSeconds, replace.FailureLostGPUSeconds)
	}
}

// TestFailureLostCountsEachGPUSecondOnce: the GPU time a job loses to
// failures is at most the GPU time it ran. On three 8-GPU nodes, one
// 8-GPU job of 1,000 h; nodes fail (mean 10 h) and stay down. With seed
// 2 its node fails at about 4.5 h and its pods move to a spare node
// (replaced, from scratch or from its last hourly checkpoint); that node
// fails at about 11.7 h with no spare left, and the job is requeued and
// never runs again. Requeued, it starts over from scratch: every
// GPU-second it ran is lost, 8 x 11.7 h, which is its busy time. The
// replacement's loss is part of that run; it was counted again (lost
// 8 x (4.5 + 11.7) h, more than the job ever ran).
func TestFailureLostCountsEachGPUSecondOnce(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 3, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []TraceJob{{ID: "a", Account: "x", Duration: 1000 * time.Hour, GPUs: 8, Nodes: 1, GPUsPerNode: 8}}
	for _, ckpt := range []time.Duration{0, time.Hour} {
		for _, p := range []backfill.FailurePolicy{backfill.Replace, backfill.Shrink} {
			t.Run(fmt.Sprintf("%v/checkpoint=%v", p, ckpt), func(t *testing.T) {
				r, err := Run(Config{Cluster: c, Policy: GangBackfill, Seed: 2, NodeMTBF: 10 * time.Hour, Repair: 10000 * time.Hour,
					OnNodeFailure: p, Checkpoint: ckpt, Horizon: 200 * time.Hour}, jobs)
				if err != nil {
					t.Fatal(err)
				}
				checkConservation(t, r)
				o := r.Outcomes[0]
				if r.Replacements != 1 || r.FailureRestarts != 1 || o.Started || o.Requeues != 1 {
					t.Fatalf("%d replaced, %d restarts, outcome %+v; want one replacement, then a requeue", r.Replacements, r.FailureRestarts, o)
				}
				if math.Abs(r.FailureLostGPUSeconds-r.BusyGPUSeconds) > 1e-6 {
					t.Errorf("lost %.0f GPU-s to failures, ran %.0f (every GPU-second it ran was lost)", r.FailureLostGPUSeconds, r.BusyGPUSeconds)
				}
			})
		}
	}
}

// TestQueuedAtShapeGPUs: a queued job asks for the GPUs of its gang shape,
// which it holds once it runs: a 12-GPU job on two whole 8-GPU nodes asks
// for 16. Two 8-GPU nodes; r (1 GPU, 1 h) runs from 0, big (12 GPUs as 2
// x 8) comes at 1 s and waits for both nodes until 1 h. While it waits,
// 15 GPUs are idle and it could use all 15: 15 x 3,599 GPU-s idle while
// queued (the queue counted 12, 12 x 3,599), and under phalanx as many
// free on its reservation (which is part of the idle time). While it
// waits its account asks for 16 GPUs, and once it runs for the 16 it
// holds.
func TestQueuedAtShapeGPUs(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 1, NodesPerLeaf: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []TraceJob{
		{ID: "r", Account: "x", Duration: time.Hour, TimeLimit: time.Hour, GPUs: 1, Nodes: 1, GPUsPerNode: 1},
		{ID: "big", Account: "y", Submit: time.Second, Duration: time.Hour, TimeLimit: time.Hour, GPUs: 12, Nodes: 2, GPUsPerNode: 8},
	}
	for _, tc := range []struct {
		policy     Policy
		idle, resv float64
	}{{GangBackfill, 15 * 3599, 0}, {Phalanx, 15 * 3599, 15 * 3599}, {PodByPod, 15 * 3599, 0}} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			r, err := Run(Config{Cluster: c, Policy: tc.policy}, jobs)
			if err != nil {
				t.Fatal(err)
			}
			checkConservation(t, r)
			if o := r.Outcomes[1]; o.Start != time.Hour {
				t.Fatalf("big started at %v, want 1h", o.Start)
			}
			if r.IdleWhileQueuedGPUSeconds != tc.idle || r.ReservedFreeGPUSeconds != tc.resv {
				t.Errorf("idle while queued %v GPU-s, free on reservations %v; want %v, %v", r.IdleWhileQueuedGPUSeconds, r.ReservedFreeGPUSeconds, tc.idle, tc.resv)
			}
		})
	}
}
