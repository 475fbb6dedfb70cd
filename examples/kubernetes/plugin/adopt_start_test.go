package plugin

import (
	"fmt"
	"math"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdoptedStartSurvivesForeignRestoreAndIsLearned: an adopted gang
// whose pods started 3 h before the adoption keeps that start through the
// plugin's second Snapshot/Restore of the cycle (setForeign, with a
// foreign pod on another node) and the cycles after it, with its promised
// start equal to its start (not late) and its usage charged from the
// adoption only; when it ends, the run time the engine learns is the
// gang's (about 4 h), not the time since the adoption (1 h).
func TestAdoptedStartSurvivesForeignRestoreAndIsLearned(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	started := h.now.Add(-3 * time.Hour)
	ps := make([]*v1.Pod, 4)
	for i := range ps {
		p := groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
		p.Spec.NodeName = nodeName(i)
		p.Status.Phase = v1.PodRunning
		st := metav1.NewTime(started.Add(time.Duration(i) * time.Minute))
		p.Status.StartTime = &st
		h.c.onPod(p)
		ps[i] = p
	}
	h.c.onPod(foreignPod("other", nodeName(5), 4))
	h.cycle()
	adoption := h.now
	if fu := h.c.foreignUsage(); fu[nodeName(5)] != 4 {
		t.Fatalf("foreign usage %v, want 4 GPUs on %s", fu, nodeName(5))
	}
	if h.c.eng.foreignHeld(nodeName(5)) != 4 {
		t.Fatalf("the engine holds %d foreign GPUs on %s after the cycle, want 4 (setForeign restored it)", h.c.eng.foreignHeld(nodeName(5)), nodeName(5))
	}
	check := func(when string) {
		t.Helper()
		st, ok := h.c.eng.eng.Job("ns/g#1")
		if !ok || st.State.String() != "running" || !st.Start.Equal(started) {
			t.Fatalf("%s: the adopted job %+v (known %v), want running from %v", when, st, ok, started)
		}
		for _, jr := range h.c.eng.eng.Snapshot().Jobs {
			if jr.ID != "ns/g#1" {
				continue
			}
			if !jr.Promised.Equal(started) || jr.LastCharge.Before(adoption) {
				t.Fatalf("%s: promised %v, last charge %v; want promised %v, charged from %v on", when, jr.Promised, jr.LastCharge, started, adoption)
			}
		}
	}
	check("after the adoption")
	h.now = h.now.Add(time.Hour)
	h.cycle()
	check("an hour later")
	v, err := h.c.eng.eng.FairShare()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := v.Account("ns")
	if hour := 32 * 3600.0; a.Usage < 0.9*hour || a.Usage > 1.01*hour {
		t.Fatalf("namespace ns's usage %.0f GPU-s, want about an hour of 32 GPUs (%.0f), charged from the adoption", a.Usage, hour)
	}
	for _, p := range ps {
		done := p.DeepCopy()
		done.Status.Phase = v1.PodSucceeded
		h.c.onPod(done)
	}
	h.cycle()
	if st, ok := h.c.eng.eng.Job("ns/g#1"); ok && !st.State.Ended() {
		t.Fatalf("the adopted job is %s after its pods ended", st.State)
	}
	counts := h.c.eng.eng.Snapshot().AllRuntimes.Counts
	runs, bin := 0, -1
	for k, c := range counts {
		if c > 0 {
			runs += int(c)
			bin = k
		}
	}
	// Bin k holds runs of [2^((k-1)/2), 2^(k/2)) minutes.
	ran := h.now.Sub(started).Minutes()
	lo, hi := math.Pow(2, float64(bin-1)/2), math.Pow(2, float64(bin)/2)
	if runs != 1 || ran < lo || ran >= hi {
		t.Fatalf("run times learned %v (one in [%.0f, %.0f) min), want one run of %.0f min", counts, lo, hi, ran)
	}
	checkBooks(t, h)
}
