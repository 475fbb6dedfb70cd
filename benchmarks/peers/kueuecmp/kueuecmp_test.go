package kueuecmp

import (
	"fmt"
	"strings"
	"testing"
)

// TestAnswers runs every default case once on the 2k inventory in every
// default state: Runner.Run checks that both libraries see the same free
// GPUs per node and that both answers are valid (every pod placed on free
// GPUs, required leaf met). It logs any case where Kueue beats Phalanx.
func TestAnswers(t *testing.T) {
	invs, err := Inventories("2k")
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range invs {
		for _, sp := range DefaultStates {
			fs, err := NewFreeState(inv.Cluster, sp)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fs.State.UsedGPUs(), int(sp.Busy*float64(inv.Cluster.TotalGPUs())); got < want {
				t.Fatalf("%s: %d GPUs used, want at least %d", sp.Name, got, want)
			}
			rn, err := NewRunner(inv, fs)
			if err != nil {
				t.Fatal(err)
			}
			for _, kc := range Cases(DefaultPodGPUs, DefaultTotals) {
				r, err := rn.Run(kc, nil)
				if err != nil {
					t.Fatalf("%s/%s %s: %v", inv.Name, sp.Name, kc, err)
				}
				if r.KueueWins() {
					t.Logf("Kueue beats Phalanx:\n%s", Details(r))
				}
			}
		}
	}
}

// TestFragmentDeterministic checks that a seed always gives the same state.
func TestFragmentDeterministic(t *testing.T) {
	invs, _ := Inventories("2k")
	c := invs[0].Cluster
	a, err := NewFreeState(c, DefaultStates[1])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewFreeState(c, DefaultStates[1])
	if !a.State.Equal(b.State) {
		t.Fatal("same seed, different states")
	}
	if !strings.ContainsAny(a.State.Describe(), "1234567") {
		t.Fatal("no partly used node in the fragmented state")
	}
}

// BenchmarkDecision times one decision per library, inventory, state and
// case:
//
//	go test -run '^$' -bench Decision ./kueuecmp
//
// lib=phalanx is placement.Placer.Place; lib=kueue is
// FindTopologyAssignmentsForFlavor on a prebuilt snapshot;
// lib=kueue+snapshot adds the per-cycle Cache.Snapshot.
func BenchmarkDecision(b *testing.B) {
	invs, err := Inventories("2k", "20k")
	if err != nil {
		b.Fatal(err)
	}
	for _, inv := range invs {
		for _, sp := range DefaultStates {
			fs, err := NewFreeState(inv.Cluster, sp)
			if err != nil {
				b.Fatal(err)
			}
			rn, err := NewRunner(inv, fs)
			if err != nil {
				b.Fatal(err)
			}
			for _, kc := range Cases(DefaultPodGPUs, DefaultTotals) {
				name := fmt.Sprintf("inv=%s/state=%s/pods=%dx%d/%s", inv.Name, sp.Name, kc.Pods, kc.PodGPUs, strings.ReplaceAll(kc.Constraint.String(), " ", "-"))
				r, err := rn.Run(kc, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Run(name+"/lib=phalanx", func(b *testing.B) {
					req := kc.PhalanxRequest()
					b.ReportAllocs()
					for b.Loop() {
						_, _ = rn.placer.Place(fs.State, &req, rn.buf)
					}
					b.ReportMetric(float64(r.P.Leaves()), "leaves/op")
				})
				snap, err := rn.Kueue.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				reqs := rn.Kueue.Requests(kc)
				b.Run(name+"/lib=kueue", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						_ = Decide(snap, reqs)
					}
					b.ReportMetric(float64(r.K.Leaves()), "leaves/op")
				})
				b.Run(name+"/lib=kueue+snapshot", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						s, err := rn.Kueue.Snapshot()
						if err != nil {
							b.Fatal(err)
						}
						_ = Decide(s, reqs)
					}
					b.ReportMetric(float64(r.K.Leaves()), "leaves/op")
				})
			}
		}
	}
}

// TestSummaryGoals checks the goal lines of Summary on made-up timings:
// the smallest speed-ups, the counts at 100× and 300×, and the cases
// named below 300× (exactly those, with their ratio).
func TestSummaryGoals(t *testing.T) {
	empty := &FreeState{Name: "empty"}
	frag := &FreeState{Name: "frag50"}
	mk := func(st *FreeState, pods, gpus int, p, k float64) *Result {
		return &Result{State: st, Case: Case{Pods: pods, PodGPUs: gpus, Constraint: Unconstrained}, PhalanxNs: p, KueueNs: k, KueueCycleNs: 2 * k}
	}
	tests := []struct {
		name    string
		results []*Result
		want    []string
		notWant []string
	}{
		{
			name: "all above 300x",
			results: []*Result{
				mk(empty, 1, 8, 200, 90_000), // 450x
				mk(frag, 8, 8, 300, 120_000), // 400x
			},
			want: []string{
				"decision alone: 400× (frag50, 8 pods x 8 GPUs, unconstrained)",
				"at least 100× faster than Kueue's decision alone: 2 of 2.",
				"at least 300× faster than Kueue's decision alone: 2 of 2.\n",
			},
			notWant: []string{"below it"},
		},
		{
			name: "three below 300x, one below 100x",
			results: []*Result{
				mk(empty, 1, 8, 200, 90_000),    // 450x
				mk(frag, 512, 1, 1000, 150_000), // 150x
				mk(empty, 64, 8, 1000, 90_000),  // 90x
				mk(frag, 8, 8, 100, 30_000),     // exactly 300x: met
				mk(empty, 2, 8, 100, 29_990),    // 299.9x: below, shown as 299x
			},
			want: []string{
				"decision alone: 90× (empty, 64 pods x 8 GPUs, unconstrained)",
				"at least 100× faster than Kueue's decision alone: 4 of 5.",
				"at least 300× faster than Kueue's decision alone: 2 of 5; below it: frag50, 512 pods x 1 GPU, unconstrained: 150×; empty, 64 pods x 8 GPUs, unconstrained: 90×; empty, 2 pods x 8 GPUs, unconstrained: 299×.\n",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Summary(tc.results)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("summary has %q:\n%s", w, got)
				}
			}
		})
	}
}
