package plugin

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// TestRemeasureNoBusyWakeUps: while a scout measures a shape again, the
// loop woke every 10 ms (its floor) until the measurement landed. A
// waiting gang's shape that a node change marked stale has no measurement
// time (allowedSet.at zero), one past Args.AllowedTTLSeconds has one more
// than the TTL ago, and a gang that never fits has its retry in the past
// while its shapes are measured again: nextMeasurement returned that time,
// already passed, and the loop ran a cycle at once, again and again. Such
// a re-measurement is under way (a scout is out: its timeout wakes the
// loop, scoutDue, and its measurement pokes it), so it wakes the loop no
// more. The test follows the loop's own wake-ups on the fake clock for
// 5 s (half the scout timeout) after the cycle that sent the scout.
func TestRemeasureNoBusyWakeUps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *hookEnv, nodes []*v1.Node)
	}{
		{name: "node tainted under a waiting gang", setup: func(h *hookEnv, nodes []*v1.Node) {
			waitingGang(h, false)
			tainted := nodes[1].DeepCopy()
			tainted.Spec.Taints = append(tainted.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
			h.c.onNode(tainted, false)
		}},
		{name: "allowed TTL of a waiting gang passed", setup: func(h *hookEnv, _ []*v1.Node) {
			waitingGang(h, false)
			h.now = h.now.Add(h.c.args.allowedTTL())
		}},
		{name: "retry of a gang that never fits passed", setup: func(h *hookEnv, _ []*v1.Node) {
			h.groupPods(5, 8) // five pods, one per node, on four nodes
			h.cycle()
			h.answerScouts()
			h.cycle()
			if !h.neverFits() {
				h.t.Fatal("the gang of five on four nodes does not wait as never fitting")
			}
			h.now = h.now.Add(h.c.args.allowedTTL())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(4)
			h.addNodes(nodes...)
			tc.setup(h, nodes)
			sentBefore := h.c.Stats().Scouts
			h.cycle()
			if h.c.Stats().Scouts == sentBefore || scoutOf(h, "ns/g") == "" {
				t.Fatal("no scout sent to measure the shape again")
			}
			start, cycles := h.now, 0
			var wakes []time.Duration
			for h.now.Sub(start) < 5*time.Second && cycles < 50 {
				acts, next := h.c.cycle(klog.Background())
				acts.apply(h.a, nil)
				cycles++
				wakes = append(wakes, next)
				h.now = h.now.Add(next)
			}
			if cycles > 2 {
				t.Fatalf("the loop ran %d cycles in %v while the scout measures (wake-ups after %v ...), want it asleep until the scout's timeout",
					cycles, h.now.Sub(start), wakes[:min(len(wakes), 5)])
			}
			if wakes[0] > h.c.args.scoutTimeout() {
				t.Fatalf("the loop wakes in %v, after the scout's timeout (%v): no other scout would be sent", wakes[0], h.c.args.scoutTimeout())
			}
			checkBooks(t, h)
		})
	}
}

// waitingGang has the three pods of group ns/g (8 GPUs each) measured and
// submitted on four nodes of which two are full (foreign pods): the gang
// waits in the engine. Its pods are created a day before the fake clock
// (groupPod), past hold mode's MinWait (on in the engine's default
// config): the engine holds the free GPUs of n000 and n001 for it. With
// young, they are created now, and the engine has no plan for the gang
// (no hold, no reservation: running jobs have no time limit).
func waitingGang(h *hookEnv, young bool) []*v1.Pod {
	h.t.Helper()
	for _, n := range []string{"n002", "n003"} {
		h.c.onPod(foreignPod("fill-"+n, n, 8))
	}
	groupPods := h.groupPods
	if young {
		groupPods = h.youngGroupPods
	}
	pods := groupPods(3, 8)
	h.cycle()
	h.answerScouts()
	h.cycle()
	h.c.mu.Lock()
	g := h.c.groups["ns/g"]
	waiting := g.inc != nil && !g.inc.admitted
	reason := g.reason
	h.c.mu.Unlock()
	if !waiting {
		h.t.Fatalf("the gang does not wait in the engine: %s", reason)
	}
	return pods
}
