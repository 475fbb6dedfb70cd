package plugin

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// scoutOf returns the pod scouting the only shape of group key ("" when
// none is out).
func scoutOf(h *hookEnv, key string) string {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	g := h.c.groups[key]
	if g == nil {
		return ""
	}
	for _, uid := range g.scout {
		if ps := g.pods[uid]; ps != nil {
			return ps.name
		}
		return uid
	}
	return ""
}

// terminatingPod returns p being deleted (a deletion timestamp, held by a
// finalizer), as the API server reports it before the pod is gone.
func terminatingPod(p *v1.Pod, at time.Time) *v1.Pod {
	q := p.DeepCopy()
	q.Finalizers = append(q.Finalizers, "example.com/hold")
	ts := metav1.NewTime(at)
	q.DeletionTimestamp = &ts
	return q
}

// gatedPod returns p with a scheduling gate of another controller.
func gatedPod(p *v1.Pod) *v1.Pod {
	q := p.DeepCopy()
	q.Spec.SchedulingGates = append(q.Spec.SchedulingGates, v1.PodSchedulingGate{Name: "example.com/quota"})
	return q
}

// TestUnschedulableScoutReplaced: a scout that the scheduler will not try
// any more (being deleted, held by a finalizer; or scheduling-gated) stayed
// its shape's scout until the scout timeout (10 s), so the gang waited
// that long for a measurement that could not come. It is given up at
// once: a group still at its minimum sends another pod of the shape in
// the next cycle; a group now below its minimum keeps no scout, and the
// loop does not wake at the scout timeout for it.
func TestUnschedulableScoutReplaced(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pods     int // pods of group g, minMember 2
		leave    func(p *v1.Pod, now time.Time) *v1.Pod
		newScout string
	}{
		{name: "terminating, another pod of the shape", pods: 3, newScout: "w-1",
			leave: terminatingPod},
		{name: "gated, another pod of the shape", pods: 3, newScout: "w-1",
			leave: func(p *v1.Pod, _ time.Time) *v1.Pod { return gatedPod(p) }},
		{name: "terminating, group below its minimum", pods: 2, leave: terminatingPod},
		{name: "gated, group below its minimum", pods: 2,
			leave: func(p *v1.Pod, _ time.Time) *v1.Pod { return gatedPod(p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(4)...)
			pods := make([]*v1.Pod, tc.pods)
			for i := range pods {
				pods[i] = groupPod("g", fmt.Sprintf("w-%d", i), 8, 2)
				h.c.onPod(pods[i])
			}
			h.cycle()
			if got := scoutOf(h, "ns/g"); got != "w-0" {
				t.Fatalf("scout %q sent, want w-0", got)
			}
			h.c.onPod(tc.leave(pods[0], h.now))
			h.now = h.now.Add(time.Second)
			acts, next := h.c.cycle(klog.Background())
			acts.apply(h.a, nil)
			got := scoutOf(h, "ns/g")
			switch {
			case got != tc.newScout:
				t.Fatalf("scout %q a second after w-0 left the queue, want %q", got, tc.newScout)
			case tc.newScout != "" && h.a.activated["ns/"+tc.newScout] == 0:
				t.Fatalf("new scout %s not activated", tc.newScout)
			case tc.newScout == "" && next <= h.c.args.scoutTimeout():
				t.Fatalf("the loop wakes in %v for a scout that left the queue, want no wake-up for it", next)
			}
			if tc.newScout == "" {
				return
			}
			h.answerScouts()
			h.cycle()
			h.c.mu.Lock()
			g := h.c.groups["ns/g"]
			submitted := g.inc != nil && len(g.inc.pods) == 2 && g.inc.pods["uid-w-0"] == nil
			h.c.mu.Unlock()
			if !submitted {
				t.Fatal("the gang of w-1 and w-2 not submitted once the new scout measured its shape")
			}
			checkBooks(t, h)
		})
	}
}
