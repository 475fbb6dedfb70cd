package baseline

import (
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestPodByPodDeadlock is the deadlock gang admission prevents, on the
// pod-by-pod side: two 1,200-GPU jobs (150 pods x 8 GPUs) arrive
// interleaved on the default 2,000-GPU cluster, each binds 125 pods, every
// GPU is held and no job can run. gang's TestSeedCase is the other side.
func TestPodByPodDeadlock(t *testing.T) {
	c := topology.Default2000()
	s := topology.NewState(c)
	b := NewPodByPod(s)
	for _, id := range []string{"A", "B"} {
		if err := b.Add(id, 150, 8); err != nil {
			t.Fatal(err)
		}
	}
	bound := b.BindInterleaved("A", "B")
	if bound != 250 {
		t.Fatalf("%d pods bound, want 250", bound)
	}
	useful := 0
	for _, id := range []string{"A", "B"} {
		if got := b.HeldGPUs(id); got != 1000 {
			t.Errorf("job %s holds %d GPUs, want 1000", id, got)
		}
		if b.Complete(id) {
			t.Errorf("job %s complete", id)
		} else if b.Bound(id) != 125 {
			t.Errorf("job %s has %d pods bound, want 125", id, b.Bound(id))
		}
		if b.Complete(id) {
			useful += b.HeldGPUs(id)
		}
	}
	if useful != 0 || s.FreeGPUs() != 0 {
		t.Fatalf("useful GPUs %d, free %d: want 0 and 0 (deadlock)", useful, s.FreeGPUs())
	}

}
