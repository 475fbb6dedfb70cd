package plugin

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDeadGangOneWarning: a gang found running with a pod on a node
// outside the cluster model (deleted) is deleted once the replica has
// scheduled for partialSettle, with one Warning event on its first pod
// naming the node (doc.go). Before, the first cycle that scheduled
// recorded a PhalanxNotAdopted event saying when the pods would be
// deleted, and the deletion a second one: two Warnings for one gang.
// If the node comes back within partialSettle, the gang is adopted and
// no event is recorded at all.
func TestDeadGangOneWarning(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nodeBack bool // n004 reaches the informer within partialSettle
		warns    int
	}{
		{"node stays deleted", false, 1},
		{"node appears late", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			nodes := testNodes(5)
			h.addNodes(nodes[:4]...)
			boundOnN004(h)
			h.cycle()
			h.leads(groupPod("", "solo", 8, 0))
			for i := 0; i < 5; i++ {
				h.cycle()
			}
			if tc.nodeBack {
				h.addNodes(nodes[4])
			}
			h.now = h.now.Add(partialSettle)
			for i := 0; i < 5; i++ {
				h.cycle()
			}
			if len(h.a.podWarns) != tc.warns {
				t.Fatalf("pod warnings %q, want %d", h.a.podWarns, tc.warns)
			}
			if tc.nodeBack {
				if s := h.c.Stats(); s.Adopted != 1 || len(h.a.evicted) != 0 {
					t.Fatalf("node back: adopted %d, evicted %v; want the gang adopted, nothing deleted", s.Adopted, h.a.evicted)
				}
				return
			}
			if !strings.HasPrefix(h.a.podWarns[0], "ns/w-0: Phalanx deletes the 4 running pods of group ns/g") ||
				!strings.Contains(h.a.podWarns[0], "node n004") {
				t.Fatalf("pod warning %q, want the deletion on w-0 naming n004", h.a.podWarns[0])
			}
			if len(h.a.evicted) != 4 {
				t.Fatalf("evicted %v, want the gang's 4 pods", h.a.evicted)
			}
			for i := 0; i < 4; i++ {
				h.c.podHandlers().DeleteFunc(groupPod("g", fmt.Sprintf("w-%d", i), 8, 4))
			}
			h.now = h.now.Add(time.Minute)
			h.cycle()
			if len(h.a.podWarns) != 1 {
				t.Fatalf("pod warnings %q after the pods went, want still one", h.a.podWarns)
			}
		})
	}
}
