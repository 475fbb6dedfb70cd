package plugin

import (
	"slices"
	"testing"
)

// TestLateBindOffSlotTearsDown: the old leader had sent the binds of a
// gang of four before it died, none landed yet: the replica that takes
// over sees four pending pods and admits them as its own gang, on n000
// .. n003. The old leader's bind of w-0 then lands on n007. The gang
// counted w-0 as bound on its slot: the engine held n000 for it while its
// GPUs on n007 were counted nowhere (neither the gang's nor foreign). A
// pod of an admitted gang bound off its slot breaks the gang: it is torn
// down (w-0 deleted), and w-0's GPUs on n007 count as used until it is
// gone.
func TestLateBindOffSlotTearsDown(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.groupPods(4, 8)
	h.cycle() // the standby's first cycle: nothing bound yet
	other := groupPod("", "solo", 8, 0)
	h.c.onPod(other)
	h.leads(other) // the old leader is gone: this replica leads
	slots := h.admit(ps)
	if slots["w-0"] == "n007" {
		t.Fatal("w-0 admitted on n007: the test needs another node")
	}
	total := h.c.eng.totalGPUs()
	b := ps[0].DeepCopy()
	b.Spec.NodeName = "n007" // the old leader's bind lands
	h.c.onPod(b)
	h.cycle()
	checkBooks(t, h)
	if st := h.c.Stats(); st.Teardowns != 1 || st.Started != 0 {
		t.Fatalf("stats %+v: want the gang torn down once, never started", st)
	}
	if !slices.Equal(h.a.evicted, []string{"ns/w-0"}) {
		t.Fatalf("evicted %v, want w-0 (bound off its slot) once", h.a.evicted)
	}
	// solo's 8 GPUs and w-0's 8 on n007 are used; nothing else.
	if free, fu := h.c.eng.freeGPUCount(), h.c.foreignUsage(); free != total-16 || fu["n007"] != 8 {
		t.Fatalf("%d GPUs free (foreign %v), want %d with w-0's 8 on n007 counted", free, fu, total-16)
	}
}
