package plugin

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTakeoverDeletesHalfBoundGang: a standby starts (its first engine
// cycle) before the leader begins to bind a gang, and the leader dies with
// the gang half-bound. Once the standby schedules (its first PreFilter), it
// deletes the gang's bound pods when they have stayed the same for
// partialSettle: binds the old leader had in flight may still land
// meanwhile, and each one restarts the wait (or completes the gang, which
// is then adopted). A group this replica saw running whole (a gang it
// could not adopt, whose Indexed Job created its next index) is not a
// partial gang and is left alone.
func TestTakeoverDeletesHalfBoundGang(t *testing.T) {
	type bind struct {
		after time.Duration // after the takeover
		pod   int
	}
	for _, tc := range []struct {
		name   string
		before int    // pods of w-0..w-3 the old leader bound before the takeover
		late   []bind // binds of the old leader landing after the takeover
		// deleteAt is how long after the takeover the bound pods are
		// deleted (0: never); want them.
		deleteAt time.Duration
		want     []string
	}{
		{name: "bound before the takeover", before: 2,
			deleteAt: partialSettle, want: []string{"ns/w-0", "ns/w-1"}},
		{name: "a late bind restarts the wait", before: 2, late: []bind{{30 * time.Second, 2}},
			deleteAt: 30*time.Second + partialSettle, want: []string{"ns/w-0", "ns/w-1", "ns/w-2"}},
		{name: "first bind lands after the takeover", late: []bind{{10 * time.Second, 0}},
			deleteAt: 10*time.Second + partialSettle, want: []string{"ns/w-0"}},
		{name: "late binds complete the gang", before: 2, late: []bind{{5 * time.Second, 2}, {20 * time.Second, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(8)...)
			ps := h.groupPods(4, 8)
			h.cycle() // the standby's first engine cycle: nothing bound yet
			for i := 0; i < tc.before; i++ {
				b := ps[i].DeepCopy()
				b.Spec.NodeName = nodeName(i) // the leader's bind, seen by the informer
				h.c.onPod(b)
				h.cycle()
			}
			other := groupPod("", "solo", 8, 0)
			h.c.onPod(other)
			h.leads(other) // the old leader is gone: the standby leads
			start := h.now
			late := tc.late
			for step := 1; step <= 200; step++ { // a cycle a second
				for len(late) > 0 && late[0].after <= time.Duration(step)*time.Second {
					b := ps[late[0].pod].DeepCopy()
					b.Spec.NodeName = nodeName(late[0].pod) // a bind in flight lands
					h.c.onPod(b)
					late = late[1:]
				}
				h.cycle()
				at := h.now.Sub(start)
				if tc.deleteAt == 0 || at < tc.deleteAt {
					if len(h.a.evicted) != 0 {
						t.Fatalf("%v after the takeover: evicted %v, want nothing yet", at, h.a.evicted)
					}
				}
			}
			slices.Sort(h.a.evicted)
			if !slices.Equal(h.a.evicted, tc.want) {
				t.Fatalf("evicted %v, want %v once each", h.a.evicted, tc.want)
			}
			if tc.want == nil {
				if g := h.c.groups["ns/g"]; g.inc == nil || !g.inc.running {
					t.Fatal("the gang completed by late binds is not adopted as a running gang")
				}
			}
		})
	}

	t.Run("a gang seen running whole is left alone", func(t *testing.T) {
		h := newHookEnv(t, Args{})
		nodes := testNodes(10)
		for _, n := range nodes[8:] { // n008, n009: GPUs, but no topology label
			delete(n.Labels, "cloud.google.com/gce-topology-subblock")
		}
		h.addNodes(nodes...)
		var ps []*v1.Pod
		for i := 0; i < 4; i++ {
			p := groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
			p.Spec.NodeName = nodeName(i + 6) // n008, n009: left out of the cluster model, so not adopted
			h.c.onPod(p)
			ps = append(ps, p)
		}
		h.cycle()
		next := h.nextIndex(ps[1]) // 3 bound, w-4 pending: half-bound
		h.cycle()
		h.leads(next)
		for i := 0; i < 3; i++ {
			h.cycle()
			h.now = h.now.Add(partialSettle)
		}
		if len(h.a.evicted) != 0 {
			t.Fatalf("evicted %v of a gang this replica saw running whole", h.a.evicted)
		}
	})
}

// TestHalfBoundCountsPendingPodsOnly: a group is half-bound only when one
// of its unbound pods is pending as pending() counts it (the pods a gang
// is made of): a gated pod (scheduling gates) or one being deleted is not
// schedulable, so 2 bound pods beside 2 such pods are not a gang being
// bound, and the replica that takes over does not delete them. Nor does it
// once a gate is lifted within partialSettle of the takeover: the group is
// half-bound then, but it had bound pods and no pending pod when the
// replica began to schedule (a gang that lost pods, whose replacements
// were created gated: the old leader binds only pods that were pending,
// and a gate is never added to a pod), so it is not a gang being bound.
func TestHalfBoundCountsPendingPodsOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		unbound func(p *v1.Pod, now time.Time)
		lift    bool // the gates are lifted 10 s after the takeover
		want    []string
	}{
		{name: "schedulable", unbound: func(*v1.Pod, time.Time) {}, want: []string{"ns/w-0", "ns/w-1"}},
		{name: "gated", unbound: func(p *v1.Pod, _ time.Time) {
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
		}},
		{name: "terminating", unbound: func(p *v1.Pod, now time.Time) {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		}},
		{name: "gate lifted after the takeover", unbound: func(p *v1.Pod, _ time.Time) {
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
		}, lift: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(8)...)
			ps := make([]*v1.Pod, 4)
			for i := range ps {
				ps[i] = groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
				if i < 2 {
					ps[i].Spec.NodeName = nodeName(i)
				} else {
					tc.unbound(ps[i], h.now)
				}
				h.c.onPod(ps[i])
			}
			h.cycle()
			pending := len(h.c.groups["ns/g"].pending())
			if _, half := halfBound(h.c.groups["ns/g"]); half != (pending > 0) {
				t.Errorf("half-bound %v with %d pending pods (pending())", half, pending)
			}
			other := groupPod("", "solo", 8, 0)
			h.c.onPod(other)
			h.leads(other)
			for step := 1; step <= 150; step++ {
				if tc.lift && step == 10 {
					for _, p := range ps[2:] {
						lifted := p.DeepCopy()
						lifted.Spec.SchedulingGates = nil
						h.c.onPod(lifted)
					}
				}
				h.cycle()
			}
			slices.Sort(h.a.evicted)
			if !slices.Equal(h.a.evicted, tc.want) {
				t.Fatalf("evicted %v, want %v", h.a.evicted, tc.want)
			}
			if _, half := halfBound(h.c.groups["ns/g"]); tc.lift && !half {
				t.Fatal("the group is not half-bound once its gates are lifted")
			}
		})
	}
}

// TestRunningGangThatLostAPodKept: a running gang (minMember 4) lost a pod
// before the restart (terminal, forgotten), so the replica finds 3 bound
// pods and none pending: a running gang, not a gang being bound (the old
// leader's gang would show its unbound pods as pending). When the Job
// controller creates the replacement 10 s after the replica begins to
// schedule, the group becomes half-bound within partialSettle of it, and
// its running pods are not deleted.
func TestRunningGangThatLostAPodKept(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	h.gangOfFour(3) // w-3 is pending: it ends below
	h.c.podHandlers().DeleteFunc(groupPod("g", "w-3", 8, 4))
	h.cycle()
	other := groupPod("", "solo", 8, 0)
	h.c.onPod(other)
	h.leads(other)
	for step := 1; step <= 150; step++ {
		if step == 10 {
			h.c.onPod(groupPod("g", "w-4", 8, 4)) // the replacement
		}
		h.cycle()
	}
	if len(h.a.evicted) != 0 {
		t.Fatalf("evicted %v of a running gang that lost a pod before the restart", h.a.evicted)
	}
	if _, half := halfBound(h.c.groups["ns/g"]); !half {
		t.Fatal("the group is not half-bound: the test does not test the rule")
	}
}
