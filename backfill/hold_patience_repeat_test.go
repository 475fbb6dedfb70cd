package backfill

import (
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
)

// TestPatientGangRepeat: P, a gang eligible for a hold that may span one
// leaf, fits now across two (node00001 and node00003 free) and waits for
// its patience without going to a hold test; then Q, ranked below it,
// starts on one of those nodes ("start": Q asks for one node) or takes a
// hold on one ("hold": Q asks for three). A second cycle at the same
// time found P no longer fitting even loosely and gave it a hold, or had
// it wait out the hysteresis behind Q's (found by TestHoldRepeatProperty's
// workloads with every third job patient, seeds 136 and 471). The first
// cycle now asks for the next at once (startOnLoose, coverPlanned), and
// the cycle after changes nothing.
func TestPatientGangRepeat(t *testing.T) {
	for _, tc := range []struct {
		name   string
		qNodes int
		start  bool // Q starts; otherwise it takes a hold
	}{
		{"start", 1, true},
		{"hold", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, e := holdSceneEngine(t, HoldConfig{MinGPUs: 8, MaxShare: 1, Budget: 10 * time.Hour, Hysteresis: 10 * time.Minute, MaxHolds: 1}, "a", "b")
			submit := func(j Job, nodes int, at time.Duration) {
				t.Helper()
				j.Gang = gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(nodes, 8)}}}
				if err := e.Submit(j, epoch.Add(at)); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range []string{"r0", "r1", "r2", "r3"} {
				submit(Job{ID: id, Account: "b"}, 1, 0)
			}
			if p := scheduleStarted(t, e, epoch); len(p.Starts) != 4 {
				t.Fatalf("the four jobs of b did not all start:\n%s", p.Describe(c, epoch))
			}
			submit(Job{ID: "P", Account: "a", Patience: Patience{MaxDomains: 1, Level: "leaf", Wait: time.Hour}}, 2, time.Minute)
			submit(Job{ID: "Q", Account: "a"}, tc.qNodes, 2*time.Minute)
			now := epoch.Add(10 * time.Minute)
			for _, id := range []string{"r1", "r3"} {
				if err := e.Cancel(id, now); err != nil {
					t.Fatal(err)
				}
			}
			first := scheduleStarted(t, e, now)
			if started := len(first.Starts) == 1 && first.Starts[0].Job == "Q"; started != tc.start {
				t.Fatalf("Q started %v, want %v:\n%s", started, tc.start, first.Describe(c, epoch))
			}
			if hs := first.Holds; !tc.start && (len(hs) != 1 || hs[0].Job != "Q" || hs[0].GPUs == 0) {
				t.Fatalf("want Q holding GPUs freed by the cancels:\n%s", first.Describe(c, epoch))
			}
			atOnce := 0
			for next, ok := e.NextEvent(); ok && next.Equal(now.Add(time.Nanosecond)); next, ok = e.NextEvent() {
				if atOnce++; atOnce == 5 {
					t.Fatalf("NextEvent still at once after %d cycles", atOnce)
				}
				first = scheduleStarted(t, e, now)
			}
			second := scheduleStarted(t, e, now)
			if diff := planChanges(first, second, false); len(diff) > 0 {
				t.Errorf("after %d cycles at once, a second cycle at the same time changed %v\nthe first:\n%s\nthe second:\n%s",
					atOnce, diff, first.Describe(c, epoch), second.Describe(c, epoch))
			}
		})
	}
}
