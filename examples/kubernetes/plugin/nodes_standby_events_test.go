package plugin

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// lead marks this replica as one that schedules, as its first PreFilter
// call does (leads), without a pod.
func (h *hookEnv) lead() {
	h.c.mu.Lock()
	h.c.active = true
	h.c.mu.Unlock()
}

// TestStandbyRecordsNoNodeEvents: only the leader records events. A
// standby (no PreFilter call) whose informers run sees a node left out of
// the cluster model, or kept at its former GPU count, and logs it, but
// records no PhalanxNodeLeftOut event, however many cycles it runs; once
// it schedules, it records the one event per node it held back, and no
// more.
func TestStandbyRecordsNoNodeEvents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *hookEnv, nodes []*v1.Node)
		node  string
		want  string // in the message
	}{
		{name: "left out at start", node: "n003", want: "gce-topology-subblock",
			setup: func(h *hookEnv, nodes []*v1.Node) {
				delete(nodes[3].Labels, "cloud.google.com/gce-topology-subblock")
				h.addNodes(nodes...)
				h.cycle()
			}},
		{name: "left out when it joins", node: "n003", want: "gce-topology-subblock",
			setup: func(h *hookEnv, nodes []*v1.Node) {
				h.addNodes(nodes[:3]...)
				h.cycle()
				delete(nodes[3].Labels, "cloud.google.com/gce-topology-subblock")
				h.addNodes(nodes[3])
				h.cycle()
			}},
		{name: "kept at its former count", node: "n000", want: "fewer than the 8",
			setup: func(h *hookEnv, nodes []*v1.Node) {
				h.addNodes(nodes...)
				h.c.onPod(foreignPod("holder", "n000", 7))
				h.cycle()
				h.setAllocatable(nodes[0], "6")
				h.cycle()
			}},
		{name: "every node left out", node: "n000", want: "gce-topology-subblock",
			setup: func(h *hookEnv, nodes []*v1.Node) {
				delete(nodes[0].Labels, "cloud.google.com/gce-topology-subblock")
				h.addNodes(nodes[0])
				h.cycle()
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			tc.setup(h, testNodes(4))
			h.cycle()
			h.cycle()
			if len(h.a.warnings) != 0 {
				t.Fatalf("a standby recorded node events %q, want none", h.a.warnings)
			}
			h.lead()
			h.cycle()
			h.cycle()
			if len(h.a.warnings) != 1 || !strings.HasPrefix(h.a.warnings[0], tc.node+": ") || !strings.Contains(h.a.warnings[0], tc.want) {
				t.Fatalf("once it schedules: node events %q, want one on %s saying %q", h.a.warnings, tc.node, tc.want)
			}
		})
	}
}
