package sim

import (
	"testing"
	"time"
)

// TestQuantilesNearestRank: the p95 (and every quantile the simulator
// reports) is nearest-rank, as ClassWait's doc states: the ceil(0.95 n)-th
// smallest wait, no interpolation.
func TestQuantilesNearestRank(t *testing.T) {
	minutes := func(n int) []time.Duration {
		ws := make([]time.Duration, n)
		for i := range ws {
			ws[i] = time.Duration(n-i) * time.Minute // unsorted: Quantiles sorts
		}
		return ws
	}
	for _, tc := range []struct {
		name     string
		waits    []time.Duration
		p95, max time.Duration
	}{
		{"one wait", minutes(1), time.Minute, time.Minute},
		{"ten waits: the 10th", minutes(10), 10 * time.Minute, 10 * time.Minute},
		{"twenty waits: the 19th", minutes(20), 19 * time.Minute, 20 * time.Minute},
		{"twenty-one waits: the 20th", minutes(21), 20 * time.Minute, 21 * time.Minute},
		{"hundred waits: the 95th", minutes(100), 95 * time.Minute, 100 * time.Minute},
		{"none", nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p95, mx := Quantiles(tc.waits)
			if p95 != tc.p95 || mx != tc.max {
				t.Errorf("Quantiles = %v, %v; want %v, %v", p95, mx, tc.p95, tc.max)
			}
		})
	}
	if got := quantile([]time.Duration{1, 2, 3, 4}, 0.5); got != 2 {
		t.Errorf("p50 of 1..4 = %v, want 2 (the 2nd, no interpolation)", got)
	}
}

// TestRequeuedAtEndCountsAsNotStarted: a job stopped and requeued and
// not started again by the end counts, as the docs of ClassWait and
// Result.Pending state, in NotStarted and Pending, with its wait from
// its submit to the end (its earlier run included), like a job that
// never started.
func TestRequeuedAtEndCountsAsNotStarted(t *testing.T) {
	end := 10 * time.Hour
	for _, tc := range []struct {
		name string
		o    Outcome
	}{
		{"never started", Outcome{ID: "n", GPUs: 8, Submit: time.Hour}},
		{"requeued after a run", Outcome{ID: "r", GPUs: 8, Submit: time.Hour, Start: 2 * time.Hour, Requeues: 1}},
		{"preempted and requeued", Outcome{ID: "p", GPUs: 8, Submit: time.Hour, Start: 3 * time.Hour, Preemptions: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{jobs: []TraceJob{{ID: tc.o.ID, GPUs: 8, Submit: tc.o.Submit}}, out: []Outcome{tc.o}}
			cw := classWait(r, end, "all", func(*Outcome) bool { return true })
			if cw.Jobs != 1 || cw.NotStarted != 1 {
				t.Errorf("class: %d jobs, %d not started; want 1, 1", cw.Jobs, cw.NotStarted)
			}
			if want := end - time.Hour; cw.Max != want || cw.P95 != want {
				t.Errorf("wait p95/max %v/%v, want %v (submit to end)", cw.P95, cw.Max, want)
			}
			var m Result
			m.countJobs(r, end)
			if m.Pending != 1 || m.Running != 0 || m.Finished != 0 {
				t.Errorf("done/run/wait %d/%d/%d, want 0/0/1", m.Finished, m.Running, m.Pending)
			}
		})
	}
}
