package kueuecmp

import (
	"fmt"
	"io"
)

// SweepStats counts the verdicts of a sweep.
type SweepStats struct {
	States, Decisions int
	Verdicts          map[string]int
	Wins              []*Result // Kueue tighter, or Kueue only
	// SpineWins are placements where Kueue spans no more leaves than
	// Phalanx but fewer spines (not part of the goal; reported).
	SpineWins []*Result
}

// Sweep compares answers only (no timing) on many seeded states of inv:
// every seed in [1, seeds] at every busy fraction (FragmentSkewed states
// when skewed is set), with every case of podGPUs x totals. It returns the verdict counts and every case Kueue won,
// and logs progress to w when it is not nil.
func Sweep(inv Inventory, seeds int, busy []float64, skewed bool, podGPUs, totals []int, w io.Writer) (*SweepStats, error) {
	st := &SweepStats{Verdicts: map[string]int{}}
	cases := Cases(podGPUs, totals)
	if skewed {
		busy = append(busy, -1)
	}
	for _, b := range busy {
		for seed := 1; seed <= seeds; seed++ {
			sp := StateSpec{Name: fmt.Sprintf("busy%.0f-seed%d", 100*b, seed), Busy: b, Seed: uint64(seed)}
			switch {
			case b < 0:
				sp = StateSpec{Name: fmt.Sprintf("skewed-seed%d", seed), Seed: uint64(seed), Skewed: true}
			case b == 0:
				sp = StateSpec{Name: "empty"}
			}
			fs, err := NewFreeState(inv.Cluster, sp)
			if err != nil {
				return nil, err
			}
			rn, err := NewRunner(inv, fs)
			if err != nil {
				return nil, err
			}
			st.States++
			for _, kc := range cases {
				r, err := rn.Run(kc, nil)
				if err != nil {
					return nil, err
				}
				st.Decisions++
				st.Verdicts[r.Verdict()]++
				if r.KueueWins() {
					st.Wins = append(st.Wins, r)
				}
				if r.P.Placed && r.K.Placed && r.K.Leaves() <= r.P.Leaves() && spinesOf(r.K) < spinesOf(r.P) {
					st.SpineWins = append(st.SpineWins, r)
				}
			}
			if w != nil {
				fmt.Fprintf(w, "sweep %s/%s: %d decisions so far, %d Kueue wins\n", inv.Name, sp.Name, st.Decisions, len(st.Wins))
			}
			if b == 0 {
				break
			}
		}
	}
	return st, nil
}
