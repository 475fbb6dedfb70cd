package sim

import (
	"testing"
	"time"
)

// TestMeanJCTDoesNotOverflow: the mean completion time of many long jobs,
// whose sum exceeds a Duration's range (about 292 years), is their mean,
// not a negative number (a replay of Philly at load 4 under gang FIFO
// printed a mean JCT of -107169s).
func TestMeanJCTDoesNotOverflow(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs int
		jct  time.Duration
	}{
		{"few short", 10, time.Hour},
		{"Philly-sized, 31 h each", 82247, 31 * time.Hour},
		{"a million, 2 days each", 1_000_000, 48 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{jobs: make([]TraceJob, tc.jobs), out: make([]Outcome, tc.jobs)}
			for i := range r.out {
				r.out[i] = Outcome{Submit: time.Duration(i) * time.Second, Started: true, Finished: true}
				r.out[i].Start = r.out[i].Submit + tc.jct/2
				r.out[i].End = r.out[i].Submit + tc.jct
			}
			var m Result
			m.countJobs(r, r.out[tc.jobs-1].End)
			if m.Finished != tc.jobs {
				t.Fatalf("%d finished, want %d", m.Finished, tc.jobs)
			}
			if d := m.MeanJCT - tc.jct; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("mean JCT %v, want %v", m.MeanJCT, tc.jct)
			}
		})
	}
}
