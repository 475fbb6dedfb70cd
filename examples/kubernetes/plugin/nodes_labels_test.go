package plugin

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// rebuilds returns how many cluster rebuilds the controller tried so far.
func (h *hookEnv) rebuilds() int {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return h.c.stats.Rebuilds
}

// engineDomain returns the name of the domain at level of node name in the
// engine's cluster ("" when the cluster has no such node or level).
func (h *hookEnv) engineDomain(name, level string) string {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	c := h.c.eng.cluster
	id, ok := c.LookupNode(name)
	l, okL := c.Level(level)
	if !ok || !okL {
		return ""
	}
	return c.DomainName(l, c.NodeDomain(id, l))
}

// TestUnreadLabelChangeNoRebuild: a label that the cluster model does not
// read (a monitoring agent's heartbeat; the host name, which a trailing
// kubernetes.io/hostname level does not read either) rewritten on a node
// every second rebuilt the engine's cluster (Snapshot and Restore of the
// whole engine) at every change: nodeGeneration held every label. Now the
// model is not rebuilt over 30 s of such changes, while each change still
// marks the node stale (the other Filter plugins may read any label) and
// the waiting gang's shape is measured again, every time.
func TestUnreadLabelChangeNoRebuild(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  Args
		label string
	}{
		{name: "gke preset, heartbeat label", label: "example.com/heartbeat"},
		{name: "levels ending in the hostname, hostname label",
			args:  Args{Topology: "labels", Levels: []string{"cloud.google.com/gce-topology-block", "kubernetes.io/hostname"}},
			label: "kubernetes.io/hostname"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, tc.args)
			nodes := testNodes(4)
			h.addNodes(nodes...)
			waitingGang(h, false) // n002 and n003 full: the gang waits
			if g := h.c.groups["ns/g"]; g == nil || g.inc == nil || g.inc.admitted {
				t.Fatal("the gang is not waiting in the engine")
			}
			before := h.rebuilds()
			measured := 0
			start := h.now
			for i := 0; h.now.Sub(start) < 30*time.Second; i++ {
				changed := nodes[1].DeepCopy()
				changed.Labels[tc.label] = fmt.Sprint("beat-", i)
				h.c.onNode(changed, false)
				h.c.mu.Lock()
				at, stale := h.c.staleNodes["n001"]
				h.c.mu.Unlock()
				if !stale || !at.Equal(h.now) {
					t.Fatalf("change %d of %s on n001: stale %v at %v, want stale at %v", i, tc.label, stale, at, h.now)
				}
				h.cycle() // measures the shape again: sends a scout
				if scoutOf(h, "ns/g") == "" {
					t.Fatalf("change %d of %s on n001: no scout sent to measure the gang's shape again", i, tc.label)
				}
				measured += h.answerScoutsAs(h.knownNodes(), h.knownNodes())
			}
			if n := h.rebuilds() - before; n != 0 {
				t.Fatalf("%d rebuilds of the cluster model in %v of %s rewritten every second on n001 (%d measurements); want none: the model does not read it",
					n, h.now.Sub(start), tc.label, measured)
			}
			if measured < 30 {
				t.Fatalf("%d measurements in %v of %s rewritten every second; want one per change", measured, h.now.Sub(start), tc.label)
			}
			if gpus, down, known := h.engineNode("n001"); !known || down || gpus != 8 {
				t.Fatalf("n001 in the engine: known %v, %d GPUs, down %v; want 8 GPUs, up", known, gpus, down)
			}
			checkBooks(t, h)
		})
	}
}

// TestModelLabelChangeRebuilds: a change of a label the model reads (a
// topology level's) still rebuilds the engine's cluster, once, and moves
// the node into its new domain; so does one that comes with a change of
// an unread label in the same update. Changed back, it moves back.
func TestModelLabelChangeRebuilds(t *testing.T) {
	const subblock = "cloud.google.com/gce-topology-subblock"
	for _, tc := range []struct {
		name   string
		change func(n *v1.Node)
	}{
		{name: "subblock label", change: func(n *v1.Node) { n.Labels[subblock] = "leaf01" }},
		{name: "subblock and heartbeat labels", change: func(n *v1.Node) {
			n.Labels[subblock] = "leaf01"
			n.Labels["example.com/heartbeat"] = "1"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(32) // n000..n015 in leaf00, n016..n031 in leaf01
			h.addNodes(nodes...)
			h.cycle()
			if d := h.engineDomain("n000", "subblock"); d != "leaf00" {
				t.Fatalf("n000 in subblock %q of the engine's cluster, want leaf00", d)
			}
			before := h.rebuilds()
			changed := nodes[0].DeepCopy()
			tc.change(changed)
			h.c.onNode(changed, false)
			h.cycle()
			if n := h.rebuilds() - before; n != 1 {
				t.Fatalf("%d rebuilds after n000's subblock label changed, want 1", n)
			}
			if d, want := h.engineDomain("n000", "subblock"), h.engineDomain("n016", "subblock"); d != "leaf01" || d != want {
				t.Fatalf("n000 relabelled into leaf01 is in subblock %q of the engine's cluster (n016 in %q), want leaf01", d, want)
			}
			h.c.onNode(nodes[0], false)
			h.cycle()
			if n := h.rebuilds() - before; n != 2 {
				t.Fatalf("%d rebuilds after n000's subblock label changed and back, want 2", n)
			}
			if d := h.engineDomain("n000", "subblock"); d != "leaf00" {
				t.Fatalf("n000 back in leaf00 is in subblock %q of the engine's cluster", d)
			}
			checkBooks(t, h)
		})
	}
}
