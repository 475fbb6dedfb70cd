package baseline

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
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
	if b.Held() != 2000 {
		t.Fatalf("%d GPUs held, want 2000", b.Held())
	}

}

// TestPodByPodHeld drives random jobs through Add, Bind and Release on a
// small cluster and checks after every call that Held is the sum of
// HeldGPUs over the jobs not yet complete, and that Bind refuses exactly
// when placing a pod fails (the check that skips the placement is exact).
func TestPodByPodHeld(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 3, GPUsPerNode: 4})
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		s := topology.NewState(c)
		b := NewPodByPod(s)
		p := placement.New(c, placement.Options{})
		Use(p, FirstFit, 0)
		var ids []string
		for step := range 300 {
			switch k := r.IntN(10); {
			case k < 3 || len(ids) == 0:
				id := fmt.Sprintf("j%d", step)
				if err := b.Add(id, 1+r.IntN(4), r.IntN(7)-1); err != nil { // -1: refused by the placer
					t.Fatal(err)
				}
				ids = append(ids, id)
			case k < 8:
				id := ids[r.IntN(len(ids))]
				g := b.gangs[id]
				want := len(g.bound) < g.pods
				if want {
					res, err := p.Place(s, &g.req, nil)
					want = err == nil && res.Placed
				}
				if got := b.Bind(id); got != want {
					t.Fatalf("seed %d step %d: Bind(%s) = %v, placing a pod: %v", seed, step, id, got, want)
				}
			default:
				i := r.IntN(len(ids))
				if err := b.Release(ids[i]); err != nil {
					t.Fatal(err)
				}
				ids = slices.Delete(ids, i, i+1)
			}
			held := 0
			for _, id := range ids {
				if !b.Complete(id) {
					held += b.HeldGPUs(id)
				}
			}
			if held != b.Held() {
				t.Fatalf("seed %d step %d: Held %d, the incomplete jobs hold %d", seed, step, b.Held(), held)
			}
		}
	}
}
