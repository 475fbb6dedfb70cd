package plugin

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
)

// TestStaleScoutNoWakeUps: a scout out when its group's PodGroup raised
// minMember above the group's pending pods stayed in the group's scout
// map (the group no longer asks for a measurement, so needScouts never
// looks at it again): the loop woke every scout timeout (10 s) for it for
// as long as the group lived. Once a scout's timeout has passed it wakes
// the loop no more; while it is within it, the loop wakes when it ends,
// not a full timeout after the cycle.
func TestStaleScoutNoWakeUps(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(4)...)
	pg := func(n int64) *unstructured.Unstructured { return podGroupNS("ns", "g", n) }
	handlers := h.c.podGroupHandlers()
	handlers.AddFunc(pg(2))
	h.groupPods(2, 8)
	h.cycle()
	if got := scoutOf(h, "ns/g"); got != "w-0" {
		t.Fatalf("scout %q sent, want w-0", got)
	}
	sent := h.now
	handlers.UpdateFunc(nil, pg(3))
	for _, tc := range []struct {
		after time.Duration // since the scout was sent
		want  time.Duration // the loop's next wake-up at most (0: later than the scout timeout)
	}{
		{after: 4 * time.Second, want: 6 * time.Second},
		{after: 11 * time.Second},
		{after: 25 * time.Second},
	} {
		h.now = sent.Add(tc.after)
		acts, next := h.c.cycle(klog.Background())
		acts.apply(h.a, nil)
		switch {
		case tc.want > 0 && next != tc.want:
			t.Errorf("%v after the scout was sent, the loop wakes in %v, want %v (when the scout times out)", tc.after, next, tc.want)
		case tc.want == 0 && next <= h.c.args.scoutTimeout():
			t.Errorf("%v after the scout was sent (group below its minimum), the loop wakes in %v, want no wake-up for the scout", tc.after, next)
		}
	}
	// The group reaches its new minimum: a scout goes out again at once.
	before := h.a.activated["ns/w-0"]
	h.c.onPod(groupPod("g", "w-2", 8, 0))
	h.cycle()
	if got := scoutOf(h, "ns/g"); got != "w-0" || h.a.activated["ns/w-0"] != before+1 {
		t.Fatalf("scout %q (w-0 activated %d times, before %d), want w-0 sent again", got, h.a.activated["ns/w-0"], before)
	}
	h.answerScouts()
	h.cycle()
	if g := h.c.groups["ns/g"]; g.inc == nil || len(g.inc.pods) != 3 {
		t.Fatalf("the gang of three not submitted: %s", g.reason)
	}
	checkBooks(t, h)
}
