package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Progress bar timing: nothing is drawn before showAfter has passed, and
// redraws are at least redrawEvery apart.
const (
	showAfter   = time.Second
	redrawEvery = 100 * time.Millisecond
	barWidth    = 30
)

// progressBar draws one self-overwriting line: the share of the jobs
// finished over all runs (a finished run counts whole), runs done, the
// furthest virtual time reached and the time elapsed. It is safe for
// concurrent use by the runs' progress callbacks.
type progressBar struct {
	mu       sync.Mutex
	w        io.Writer
	now      func() time.Time
	start    time.Time
	lastDraw time.Time
	drawn    bool
	fraction []float64 // per run: finished jobs over jobs
	done     []bool
	virtual  time.Duration
}

// newProgressBar starts a bar for runs runs, reading the clock with now.
func newProgressBar(w io.Writer, runs int, now func() time.Time) *progressBar {
	return &progressBar{w: w, now: now, start: now(), fraction: make([]float64, runs), done: make([]bool, runs)}
}

// update records run's progress (a sim.Config.Progress callback) and
// redraws when due.
func (p *progressBar) update(run int, virtual time.Duration, finished, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if total > 0 {
		p.fraction[run] = float64(finished) / float64(total)
	}
	p.virtual = max(p.virtual, virtual)
	p.draw()
}

// runDone marks run finished and redraws when due.
func (p *progressBar) runDone(run int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fraction[run], p.done[run] = 1, true
	p.draw()
}

// finish clears the bar's line if it was drawn.
func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// draw writes the bar if a second has passed since the start and the
// last draw was long enough ago.
func (p *progressBar) draw() {
	now := p.now()
	if now.Sub(p.start) < showAfter || p.drawn && now.Sub(p.lastDraw) < redrawEvery {
		return
	}
	p.lastDraw, p.drawn = now, true
	sum, done := 0.0, 0
	for i, f := range p.fraction {
		sum += f
		if p.done[i] {
			done++
		}
	}
	share := sum / float64(max(1, len(p.fraction)))
	filled := min(barWidth, int(share*barWidth))
	fmt.Fprintf(p.w, "\r\033[Kreplay [%s%s] %3.0f%%  %d/%d runs done  virtual %.1fd  %s",
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), 100*share, done, len(p.fraction),
		p.virtual.Hours()/24, now.Sub(p.start).Round(time.Second))
}
