package plugin

import (
	"slices"
	"strings"
	"testing"
)

// groupsOf returns the keys of the groups that hold pod p.
func groupsOf(h *hookEnv, uid string) []string {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	var out []string
	for _, g := range h.c.sortedGroups() {
		if g.pods[uid] != nil {
			out = append(out, g.key)
		}
	}
	return out
}

// TestPodRelabelledIntoGroup: pod labels can change. A pending GPU pod
// first seen without the pod-group label is a group of its own
// (ns/pod:name); when it is then labelled into group g, it must leave that
// group, not stay in it as well: before, it stayed there as a pending pod
// that no longer existed as such, and the engine admitted a one-pod gang
// for it besides the gang of g.
func TestPodRelabelledIntoGroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cycle bool // an engine cycle runs between the two observations
	}{
		{"relabelled at once", false},
		{"relabelled after a cycle", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(4)...)
			h.leads(groupPod("", "solo", 8, 0))
			lone := groupPod("", "w-1", 8, 0)
			h.c.onPod(lone)
			if tc.cycle {
				h.cycle()
			}
			first := groupPod("g", "w-0", 8, 2)
			h.c.onPod(first)
			moved := lone.DeepCopy()
			moved.Labels[LabelPodGroup] = "g"
			moved.Annotations[AnnotationMinMember] = "2"
			h.c.onPod(moved)
			if got := groupsOf(h, string(lone.UID)); len(got) != 1 || got[0] != "ns/g" {
				t.Fatalf("the relabelled pod is in groups %v, want only ns/g", got)
			}
			for i := 0; i < 3; i++ {
				h.cycle()
				h.answerScouts()
			}
			h.cycle()
			if got := activeJobs(h); !slices.Contains(got, "ns/g#1") || slices.ContainsFunc(got, func(j string) bool { return strings.HasPrefix(j, "ns/pod:w-1") }) {
				t.Fatalf("active jobs %v, want the gang of ns/g and none of the pod's former group ns/pod:w-1", got)
			}
			if s := h.slot(moved); s == "" {
				t.Fatal("the relabelled pod has no slot in the gang of ns/g")
			}
			checkBooks(t, h)
		})
	}
}
