package backfill

import (
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/placement"
)

// TestRepeatedCycleAllocs: a cycle into a reused Plan on a state where
// nothing changed allocates nothing, with and without OnlyChangedWaits
// (the clock check built the name of the time for its error message in
// every call: one allocation a cycle).
func TestRepeatedCycleAllocs(t *testing.T) {
	for _, changes := range []bool{false, true} {
		t.Run(fmt.Sprintf("OnlyChangedWaits=%v", changes), func(t *testing.T) {
			_, e, must := fullEngine(t, func(cfg *Config) { cfg.OnlyChangedWaits = changes })
			for i := range 20 {
				must(e.Submit(Job{ID: fmt.Sprintf("w%d", i), Account: "b", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1+i%3, 8))}, epoch.Add(time.Minute)))
			}
			into, at := &Plan{}, epoch.Add(2*time.Minute)
			must(e.ScheduleInto(at, into))
			must(e.ScheduleInto(at.Add(time.Second), into))
			if n := testing.AllocsPerRun(20, func() {
				at = at.Add(time.Second)
				must(e.ScheduleInto(at, into))
			}); n != 0 {
				t.Errorf("a repeated cycle allocates %v times", n)
			}
		})
	}
}
