package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// The job stream is one text file that both sides replay, event by event:
//
//	# at_ms op     id      nodes limit_min
//	0       submit f0001   8     240
//	0       sync   fill
//	60000   cancel f0003
//
// submit queues an exclusive whole-node job of `nodes` nodes and a time
// limit of `limit_min` minutes; cancel ends a running job; sync waits for
// the scheduler: "sync <phase>" means every submitted job has started (Slurm:
// no job pending; Phalanx: one Schedule call), and the final
// "sync backfill" means the pending jobs are planned (Slurm: backfill
// cycles ran; Phalanx: Schedule calls). at_ms is the event's virtual time,
// used by the Phalanx replay; the Slurm side runs in real time.

// Op is one event kind of the stream.
type Op string

const (
	OpSubmit Op = "submit"
	OpCancel Op = "cancel"
	OpSync   Op = "sync"
)

// PhaseBackfill names the final sync, after the pending stream.
const PhaseBackfill = "backfill"

// Event is one line of the stream.
type Event struct {
	AtMS     int64
	Op       Op
	ID       string // job ID (submit, cancel) or phase name (sync)
	Nodes    int
	LimitMin int
}

// GenConfig shapes a generated stream.
type GenConfig struct {
	Seed       uint64
	Nodes      int // cluster size in nodes
	Churn      int // rounds of cancel + refill after the first fill
	ChurnShare float64
	Gap        int // nodes left free after the last refill
	Pending    int // jobs queued behind the full cluster
	MaxNodes   int // largest job, in nodes
}

// jobSize draws a job size: many small jobs, some leaf-sized, a few that
// need several leaves (up to max nodes).
func jobSize(r *rand.Rand, max int) int {
	var n int
	switch k := r.IntN(100); {
	case k < 35:
		n = 1
	case k < 60:
		n = 2 + r.IntN(3) // 2-4
	case k < 80:
		n = 5 + r.IntN(4) // 5-8
	case k < 92:
		n = 9 + r.IntN(8) // 9-16
	default:
		n = 17 + r.IntN(16) // 17-32
	}
	return min(n, max)
}

// limit draws a time limit in minutes, in half-hour steps from lo to hi
// hours.
func limit(r *rand.Rand, lo, hi int) int {
	return lo*60 + 30*r.IntN((hi-lo)*2+1)
}

// Generate builds the stream: fill the empty cluster with running jobs,
// then Churn rounds that cancel a share of the running jobs and refill the
// freed nodes (the last round leaves Gap nodes free), then Pending jobs
// queued behind the full cluster.
func Generate(g GenConfig) []Event {
	r := rand.New(rand.NewPCG(g.Seed, 0x5eed5107))
	var ev []Event
	var running []string // IDs of running jobs, in start order
	size := map[string]int{}
	at := int64(0)
	fill := func(prefix string, free int, loH, hiH int) {
		for i := 1; free > 0; i++ {
			n := min(jobSize(r, g.MaxNodes), free)
			id := fmt.Sprintf("%s%04d", prefix, i)
			ev = append(ev, Event{AtMS: at, Op: OpSubmit, ID: id, Nodes: n, LimitMin: limit(r, loH, hiH)})
			running = append(running, id)
			size[id] = n
			free -= n
		}
	}
	fill("f", g.Nodes, 2, 8)
	ev = append(ev, Event{AtMS: at, Op: OpSync, ID: "fill"})
	for round := 1; round <= g.Churn; round++ {
		at += 60_000
		freed := 0
		var keep []string
		for _, id := range running {
			if r.Float64() < g.ChurnShare {
				ev = append(ev, Event{AtMS: at, Op: OpCancel, ID: id})
				freed += size[id]
				continue
			}
			keep = append(keep, id)
		}
		running = keep
		if round == g.Churn {
			freed -= g.Gap
		}
		fill(fmt.Sprintf("r%d-", round), freed, 2, 8)
		ev = append(ev, Event{AtMS: at, Op: OpSync, ID: fmt.Sprintf("refill%d", round)})
	}
	at += 60_000
	for i := 1; i <= g.Pending; i++ {
		ev = append(ev, Event{AtMS: at + int64(i), Op: OpSubmit, ID: fmt.Sprintf("p%04d", i),
			Nodes: jobSize(r, g.MaxNodes), LimitMin: limit(r, 1, 6)})
	}
	ev = append(ev, Event{AtMS: at + int64(g.Pending) + 1, Op: OpSync, ID: PhaseBackfill})
	return ev
}

// WriteStream writes the stream in its text form.
func WriteStream(w io.Writer, g GenConfig, ev []Event) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# phalanx vs slurm job stream: seed=%d nodes=%d churn=%d share=%.2f gap=%d pending=%d maxnodes=%d\n",
		g.Seed, g.Nodes, g.Churn, g.ChurnShare, g.Gap, g.Pending, g.MaxNodes)
	fmt.Fprintln(bw, "# at_ms\top\tid\tnodes\tlimit_min")
	for _, e := range ev {
		switch e.Op {
		case OpSubmit:
			fmt.Fprintf(bw, "%d\t%s\t%s\t%d\t%d\n", e.AtMS, e.Op, e.ID, e.Nodes, e.LimitMin)
		default:
			fmt.Fprintf(bw, "%d\t%s\t%s\n", e.AtMS, e.Op, e.ID)
		}
	}
	return bw.Flush()
}

// ReadStream parses a stream written by WriteStream.
func ReadStream(rd io.Reader) ([]Event, error) {
	var ev []Event
	sc := bufio.NewScanner(rd)
	seen := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("stream line %d: %s", line, fmt.Sprintf(format, args...))
		}
		if len(f) < 3 {
			return nil, bad("want at least 3 fields, got %d", len(f))
		}
		at, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || at < 0 || (len(ev) > 0 && at < ev[len(ev)-1].AtMS) {
			return nil, bad("bad or decreasing time %q", f[0])
		}
		e := Event{AtMS: at, Op: Op(f[1]), ID: f[2]}
		switch e.Op {
		case OpSubmit:
			if len(f) != 5 {
				return nil, bad("submit wants 5 fields")
			}
			if seen[e.ID] {
				return nil, bad("job %s submitted twice", e.ID)
			}
			seen[e.ID] = true
			if e.Nodes, err = strconv.Atoi(f[3]); err != nil || e.Nodes < 1 {
				return nil, bad("bad node count %q", f[3])
			}
			if e.LimitMin, err = strconv.Atoi(f[4]); err != nil || e.LimitMin < 1 {
				return nil, bad("bad time limit %q", f[4])
			}
		case OpCancel:
			if !seen[e.ID] {
				return nil, bad("cancel of unknown job %s", e.ID)
			}
		case OpSync:
		default:
			return nil, bad("unknown op %q", f[1])
		}
		ev = append(ev, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ev) == 0 || ev[len(ev)-1].Op != OpSync || ev[len(ev)-1].ID != PhaseBackfill {
		return nil, fmt.Errorf("stream does not end with %q", "sync "+PhaseBackfill)
	}
	return ev, nil
}

// jobSizes maps every submitted job to its node count.
func jobSizes(ev []Event) map[string]int {
	m := map[string]int{}
	for _, e := range ev {
		if e.Op == OpSubmit {
			m[e.ID] = e.Nodes
		}
	}
	return m
}

// pendingIDs lists the jobs submitted after the last refill (the pending
// stream), in submission order.
func pendingIDs(ev []Event) []string {
	last := 0
	for i, e := range ev {
		if e.Op == OpSync && e.ID != PhaseBackfill {
			last = i
		}
	}
	var ids []string
	for _, e := range ev[last+1:] {
		if e.Op == OpSubmit {
			ids = append(ids, e.ID)
		}
	}
	return slices.Clip(ids)
}
