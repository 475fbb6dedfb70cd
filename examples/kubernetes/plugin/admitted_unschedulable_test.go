package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestAdmittedGangPodLeavesQueue: a pod of an admitted gang, not yet
// bound, that the scheduler will not try any more (being deleted, held by
// a finalizer; or scheduling-gated) left its gang admitted: the other pods
// waited at Permit for it until the Permit timeout (60 s), holding their
// GPUs, although the gang could not assemble. The gang is torn down in the
// next cycle, as when the pod is deleted: the pods waiting at Permit are
// rejected, and the others form the next gang once enough are pending.
func TestAdmittedGangPodLeavesQueue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(p *v1.Pod, now time.Time) *v1.Pod
		why   string
	}{
		{name: "terminating", leave: terminatingPod, why: "pod w-2 is being deleted before its gang was bound"},
		{name: "gated", leave: func(p *v1.Pod, _ time.Time) *v1.Pod { return gatedPod(p) },
			why: "pod w-2 was scheduling-gated before its gang was bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(4)...)
			h.leads(groupPod("", "solo", 8, 0))
			pods := h.groupPods(3, 8)
			h.admit(pods)
			h.reserveAndPermit(pods[:2]) // w-0 and w-1 wait at Permit for w-2
			before := h.c.Stats()
			h.c.onPod(tc.leave(pods[2], h.now))
			h.cycle()
			after := h.c.Stats()
			if after.Teardowns != before.Teardowns+1 {
				t.Fatalf("teardowns %d -> %d after w-2 left the queue, want the admitted gang torn down at once (not at the Permit timeout)",
					before.Teardowns, after.Teardowns)
			}
			for _, p := range pods[:2] {
				found := false
				for _, r := range h.a.rejected {
					found = found || (strings.HasPrefix(r, string(p.UID)+": ") && strings.Contains(r, tc.why))
				}
				if !found {
					t.Errorf("%s, waiting at Permit, not rejected with %q: rejections %q", p.Name, tc.why, h.a.rejected)
				}
			}
			if st, _ := h.p.Permit(context.Background(), nil, pods[2], "n000"); st.IsSuccess() {
				t.Error("Permit lets w-2 through after its gang was torn down")
			}
			checkBooks(t, h)
		})
	}
}
