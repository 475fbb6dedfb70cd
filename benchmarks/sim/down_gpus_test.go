package sim

import (
	"testing"
	"time"
)

// TestIdleWhileQueuedLeavesDownGPUsOut: as Result's docs state, GPUs on
// failed nodes are not idle while jobs queue (free GPUs are the total
// less the busy and the down ones), counting at most what the queue
// asks for.
func TestIdleWhileQueuedLeavesDownGPUsOut(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		total, down, busy, que int
		wantIdle, wantActive   float64
	}{
		{"none down", 32, 0, 8, 64, 24 * 60, 60},
		{"a node down", 32, 8, 8, 64, 16 * 60, 60},
		{"all free GPUs down", 32, 24, 8, 64, 0, 60},
		{"queue asks for less than free", 32, 8, 8, 4, 4 * 60, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWork(tc.total, []TraceJob{{Account: "a"}})
			w.down = tc.down
			w.running("a", tc.busy)
			w.queued("a", tc.que)
			w.job("a", 1)
			w.advance(time.Minute)
			if w.idleQueuedSecs != tc.wantIdle || w.activeSecs != tc.wantActive {
				t.Errorf("idle while queued %v GPU-s over %v s; want %v over %v", w.idleQueuedSecs, w.activeSecs, tc.wantIdle, tc.wantActive)
			}
		})
	}
}
