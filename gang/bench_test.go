package gang

import (
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

func benchGangs() []struct {
	name string
	g    *Spec
} {
	return []struct {
		name string
		g    *Spec
	}{
		{"gang=1200gpus", workers("big", 150, 8)},
		{"gang=het3", &Spec{ID: "het", Members: []Member{
			{Name: "launcher", Request: placement.NodesOf(1, 1)},
			{Name: "workers", Request: placement.Request{Nodes: 16, GPUsPerNode: 8, Required: "leaf"}},
			{Name: "ps", Request: placement.NodesOf(4, 4)},
		}}},
	}
}

// BenchmarkAdmitRelease admits a gang on the default cluster and releases
// it again: one admission and one release per op.
//
//	go test -run '^$' -bench BenchmarkAdmitRelease ./gang
func BenchmarkAdmitRelease(b *testing.B) {
	for _, bg := range benchGangs() {
		b.Run("inv=2k/"+bg.name, func(b *testing.B) {
			l := NewLedger(topology.Default2000(), Options{})
			b.ReportAllocs()
			for b.Loop() {
				res, err := l.Admit(bg.g)
				if err != nil || !res.Admitted {
					b.Fatal(err, res)
				}
				if err := l.Release(bg.g.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAdmit and BenchmarkRelease time the two halves separately.
func BenchmarkAdmit(b *testing.B) {
	for _, bg := range benchGangs() {
		b.Run("inv=2k/"+bg.name, func(b *testing.B) {
			l := NewLedger(topology.Default2000(), Options{})
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if l.Len() > 0 {
					_ = l.Release(bg.g.ID)
				}
				b.StartTimer()
				if res, _ := l.Admit(bg.g); !res.Admitted {
					b.Fatal(res)
				}
			}
		})
	}
}

func BenchmarkRelease(b *testing.B) {
	for _, bg := range benchGangs() {
		b.Run("inv=2k/"+bg.name, func(b *testing.B) {
			l := NewLedger(topology.Default2000(), Options{})
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if res, _ := l.Admit(bg.g); !res.Admitted {
					b.Fatal(res)
				}
				b.StartTimer()
				_ = l.Release(bg.g.ID)
			}
		})
	}
}

// TestAdmitReleaseZeroAllocs asserts zero steady-state allocations for
// admitting and releasing the benchmark gangs, and for a refused admission.
func TestAdmitReleaseZeroAllocs(t *testing.T) {
	for _, bg := range benchGangs() {
		l := NewLedger(topology.Default2000(), Options{})
		// Warm up: the first admission sizes the buffers.
		_, _ = l.Admit(bg.g)
		_ = l.Release(bg.g.ID)
		n := testing.AllocsPerRun(50, func() {
			if res, _ := l.Admit(bg.g); !res.Admitted {
				t.Fatal(res)
			}
			if err := l.Release(bg.g.ID); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per admit+release", bg.name, n)
		}
	}
	l := NewLedger(topology.Default2000(), Options{})
	tooBig := workers("huge", 300, 8)
	if n := testing.AllocsPerRun(50, func() { _, _ = l.Admit(tooBig) }); n != 0 {
		t.Errorf("refused admission: %v allocations", n)
	}
}
