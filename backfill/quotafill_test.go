package backfill

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestFillMaxMinFair checks the weighted water filling of the quota
// shares (quotaState.fill) against the property that defines it rather
// than against a second copy of it: on random sibling queues with
// weights, demands, caps (maximum or pool) and groups of siblings whose
// pools together hold fewer GPUs than their caps add up to, the shares
// are feasible (each within its cap, each group within its GPUs, all
// within the capacity) and max-min fair: a queue given less than its cap
// is in a bottleneck, the whole capacity or its group's GPUs used up,
// where no other queue has a larger share per unit of weight.
func TestFillMaxMinFair(t *testing.T) {
	const eps = 1e-6
	rng := rand.New(rand.NewPCG(58, 1))
	for trial := range 3000 {
		n := 2 + rng.IntN(5)
		cfg := &QuotaConfig{}
		for i := range n {
			cfg.Queues = append(cfg.Queues, QueueSpec{Name: fmt.Sprint("q", i), Weight: float64(1 + rng.IntN(3)),
				Maximum: Unlimited, BorrowingLimit: Unlimited, LendingLimit: Unlimited})
		}
		s, err := newQuotaState(cfg, 1000)
		if err != nil {
			t.Fatal(err)
		}
		s.group = make([]int, n)
		s.kidGroups = make([][]int, n+1)
		s.poolGPUs = make([]int, n)
		groups := rng.IntN(3)
		s.groupGPUs = make([]int, groups)
		s.groupLeft, s.groupW = make([]float64, groups), make([]float64, groups)
		for g := range groups {
			s.kidGroups[n] = append(s.kidGroups[n], g)
		}
		for i := range n {
			s.demand[i] = rng.IntN(65)
			s.need[i] = s.demand[i]
			s.poolGPUs[i] = noLimit
			if rng.IntN(2) == 0 {
				s.poolGPUs[i] = rng.IntN(65)
			}
			s.group[i] = -1
			if groups > 0 && rng.IntN(3) > 0 {
				s.group[i] = rng.IntN(groups)
			}
		}
		for g := range groups {
			s.groupGPUs[g] = rng.IntN(80)
		}
		capacity := float64(rng.IntN(200))
		s.fill(n, capacity)

		capOf := func(i int) float64 { return float64(min(s.demand[i], s.poolGPUs[i])) }
		total := 0.0
		used := make([]float64, groups)
		for i := range n {
			x := s.share[i]
			if x < -eps || x > capOf(i)+eps {
				t.Fatalf("trial %d: queue %d's share %v outside [0, %v]", trial, i, x, capOf(i))
			}
			total += x
			if g := s.group[i]; g >= 0 {
				used[g] += x
			}
		}
		if total > capacity+eps {
			t.Fatalf("trial %d: shares add up to %v of %v", trial, total, capacity)
		}
		for g := range groups {
			if used[g] > float64(s.groupGPUs[g])+eps {
				t.Fatalf("trial %d: group %d's shares add up to %v of its %d GPUs", trial, g, used[g], s.groupGPUs[g])
			}
		}
		per := func(i int) float64 { return s.share[i] / s.weight[i] }
		for i := range n {
			if s.share[i] >= capOf(i)-eps {
				continue
			}
			// A bottleneck: the capacity used up, i's share per weight
			// the largest; or its group's GPUs used up, the same among
			// its members.
			bottleneck := false
			if total >= capacity-eps {
				bottleneck = true
				for k := range n {
					if per(k) > per(i)+eps {
						bottleneck = false
					}
				}
			}
			if g := s.group[i]; !bottleneck && g >= 0 && used[g] >= float64(s.groupGPUs[g])-eps {
				bottleneck = true
				for k := range n {
					if s.group[k] == g && per(k) > per(i)+eps {
						bottleneck = false
					}
				}
			}
			if !bottleneck {
				t.Fatalf("trial %d: queue %d (weight %v, cap %v, group %d) has %v, below its cap, in no bottleneck: shares %v, caps %v, groups %v of %v GPUs, capacity %v",
					trial, i, s.weight[i], capOf(i), s.group[i], s.share[i], s.share, s.poolGPUs, used, s.groupGPUs, capacity)
			}
		}
	}
}
