package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestHoldStream is the hold-mode study: a cluster kept busy by a stream
// of small jobs without time limits (6 a minute, 1 to 8 GPUs, 1 to 2 h,
// 12 h) and one gang of 512, 1,200 or 1,600 GPUs at t+3h. Under the
// default engine (hold mode) the gang starts within 1.5 times its wait
// under strict FIFO, while at least twice as many small jobs start as
// under FIFO meanwhile; the held GPU-hours are reported. Greedy backfill
// starts the gang only after the stream.
func TestHoldStream(t *testing.T) {
	sizes := []int{512, 1200, 1600}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, g := range sizes {
		t.Run(fmt.Sprintf("gang=%d", g), func(t *testing.T) {
			sc := DefaultStream()
			sc.GangGPUs = g
			jobs := Stream(sc)
			run := func(p Policy) *Result {
				res, err := Run(Config{Cluster: topology.Default2000(), ClusterName: "default-2k", Trace: "stream", Policy: p}, jobs)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			fifo, hold := run(GangFIFO), run(Phalanx)
			fw, fs, ok1 := StreamOutcome(fifo, sc)
			hw, hs, ok2 := StreamOutcome(hold, sc)
			if !ok1 || !ok2 {
				t.Fatalf("the gang did not start: fifo %v, phalanx %v", ok1, ok2)
			}
			t.Logf("gang %d: FIFO waits %v with %d small starts; phalanx waits %v (%.2fx) with %d (%.2fx), %.0f GPU-hours held",
				g, fw, fs, hw, float64(hw)/float64(fw), hs, float64(hs)/float64(fs), hold.HeldForHoldGPUSeconds/3600)
			if float64(hw) > 1.5*float64(fw) || hs < 2*fs {
				t.Errorf("gang %d: waits %v against FIFO's %v, %d small starts against FIFO's %d", g, hw, fw, hs, fs)
			}
			if hold.HeldForHoldGPUSeconds <= 0 {
				t.Errorf("no held GPU-hours reported")
			}
		})
	}
}

// TestOneHoldAtATime guards the default's one hold at a time
// (backfill.DefaultConfig, Hold.MaxHolds 1) on the synthetic workload
// without time limits: against the same engine with up to 4 holds, it
// keeps fewer GPU-hours held and idle while jobs queue, more utilisation,
// and a large-job p95 wait no longer (benchmarks/README.md, "Whole
// workloads without time limits", has all twelve seeds).
func TestOneHoldAtATime(t *testing.T) {
	seeds := []uint64{1, 4}
	if testing.Short() {
		seeds = seeds[:1]
	}
	four := backfill.DefaultConfig()
	four.Hold.MaxHolds = 4
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			jobs := DropLimits(Synthetic(seed, 1000, 24*time.Hour, 8), 1, seed)
			run := func(c *backfill.Config) *Result {
				res, err := Run(Config{Cluster: topology.Default2000(), ClusterName: "default-2k", Policy: Phalanx, Engine: c}, jobs)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			one, many := run(nil), run(&four)
			t.Logf("one hold: util %.1f%%, idle while queued %.0f GPU-h, held %.0f, >64 p95 %v; four: %.1f%%, %.0f, %.0f, %v",
				100*one.Utilisation, one.IdleWhileQueuedGPUSeconds/3600, one.HeldForHoldGPUSeconds/3600, one.LargeWaitP95,
				100*many.Utilisation, many.IdleWhileQueuedGPUSeconds/3600, many.HeldForHoldGPUSeconds/3600, many.LargeWaitP95)
			if one.HeldForHoldGPUSeconds <= 0 {
				t.Fatal("the default held nothing: the workload no longer exercises hold mode")
			}
			if one.HeldForHoldGPUSeconds >= many.HeldForHoldGPUSeconds || one.IdleWhileQueuedGPUSeconds >= many.IdleWhileQueuedGPUSeconds {
				t.Errorf("one hold kept %.0f GPU-h held and %.0f idle while queued, four %.0f and %.0f",
					one.HeldForHoldGPUSeconds/3600, one.IdleWhileQueuedGPUSeconds/3600, many.HeldForHoldGPUSeconds/3600, many.IdleWhileQueuedGPUSeconds/3600)
			}
			if one.Utilisation <= many.Utilisation || one.LargeWaitP95 > many.LargeWaitP95 {
				t.Errorf("one hold: util %.3f, >64 p95 %v; four: %.3f, %v", one.Utilisation, one.LargeWaitP95, many.Utilisation, many.LargeWaitP95)
			}
		})
	}
}
