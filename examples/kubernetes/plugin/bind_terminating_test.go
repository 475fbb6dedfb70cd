package plugin

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestBindInFlightPodTerminating: the last pod of a gang of four has
// passed Permit, its bind in flight, when its deletion begins (a
// deletion timestamp, held by a finalizer). The gang never runs whole:
// it is not reported started, it is torn down and its bound pods are
// deleted; the terminating pod's bind either fails (the API server
// refuses to bind a pod being deleted) or has landed, and then the pod is
// deleted too (once) and its GPUs count as used until the pod is gone.
// The engine's books hold throughout (no GPU released twice) and every
// GPU is free once the deletions are seen.
func TestBindInFlightPodTerminating(t *testing.T) {
	for _, tc := range []struct {
		name        string
		binds       bool // the terminating pod's bind lands
		cycleBefore bool // an engine cycle (the teardown) runs before the bind's outcome
		boundFirst  bool // the informer shows the pod bound before its deletion begins
	}{
		{name: "bind fails, after the teardown", cycleBefore: true},
		{name: "bind fails, before the teardown"},
		{name: "bind lands, after the teardown", binds: true, cycleBefore: true},
		{name: "bind lands, before the teardown", binds: true},
		{name: "bind lands, seen bound before the deletion, PostBind last", binds: true, boundFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(4)...)
			pods := h.groupPods(4, 8)
			slots := h.admit(pods)
			h.reserveAndPermit(pods)
			var bound []*v1.Pod
			for _, p := range pods[:3] {
				bound = append(bound, h.bind(p, slots[p.Name]))
			}
			last, node := pods[3], slots[pods[3].Name]
			if tc.boundFirst {
				b := last.DeepCopy()
				b.Spec.NodeName = node
				h.c.onPod(b)
				last = b
			}
			h.c.onPod(terminatingPod(last, h.now))
			h.c.mu.Lock()
			g := h.c.groups["ns/g"]
			running := g.inc != nil && g.inc.running
			h.c.mu.Unlock()
			if running || h.c.Stats().Started != 0 {
				t.Fatal("the gang is reported running with its last pod being deleted before it bound")
			}
			if tc.cycleBefore {
				h.cycle()
			}
			if tc.binds {
				h.p.PostBind(context.Background(), nil, last, node)
				b := terminatingPod(last, h.now)
				b.Spec.NodeName = node
				h.c.onPod(b)
				last = b
			} else {
				h.p.Unreserve(context.Background(), nil, last, node)
			}
			h.cycle()
			h.cycle()
			st := h.c.Stats()
			if st.Started != 0 || st.Teardowns != 1 {
				t.Fatalf("stats %+v: want the gang torn down once and never started", st)
			}
			checkBooks(t, h)
			want := []string{"ns/w-0", "ns/w-1", "ns/w-2"}
			if tc.binds {
				want = append(want, "ns/w-3")
			}
			evicted := slices.Clone(h.a.evicted)
			slices.Sort(evicted)
			if !slices.Equal(evicted, want) {
				t.Fatalf("pods deleted %v, want %v (each once)", evicted, want)
			}
			total := h.c.eng.totalGPUs()
			used := 24
			if tc.binds {
				used = 32
			}
			if free := h.c.eng.freeGPUCount(); free != total-used {
				t.Fatalf("%d GPUs free while the gang's %d bound GPUs are not yet gone, want %d", free, used, total-used)
			}
			// The deletions are seen: every GPU is free, once.
			for _, p := range append(bound, last) {
				h.c.podHandlers().DeleteFunc(p)
			}
			h.cycle()
			checkBooks(t, h)
			if free := h.c.eng.freeGPUCount(); free != total {
				t.Fatalf("%d GPUs free once every pod of the gang is gone, want all %d", free, total)
			}
			h.c.mu.Lock()
			_, left := h.c.groups["ns/g"]
			h.c.mu.Unlock()
			if left || len(h.c.bound) != 0 {
				t.Fatalf("group left %v, bound pods %v: want nothing once the pods are gone", left, h.c.bound)
			}
		})
	}
}
