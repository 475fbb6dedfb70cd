package plugin

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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
		h.addNodes(testNodes(8)...)
		var ps []*v1.Pod
		for i := 0; i < 4; i++ {
			p := groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
			p.Spec.NodeName = nodeName(i + 6) // n008, n009: not in the cluster model, so not adopted
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
