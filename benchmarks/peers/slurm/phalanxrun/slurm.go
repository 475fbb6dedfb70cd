package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

// The Slurm side (run.sh) leaves these files in its output folder:
//
//	squeue.txt  squeue -h -t PD,R,CF -o '%j|%T|%N|%S|%Y' after the backfill cycles
//	sdiag.txt   sdiag after the backfill cycles (stats reset after the last submission)
//	times.txt   key=value lines; t0 is the Unix time (seconds, fractional)
//	            just before the first sbatch
//	version.txt slurmctld -V

// ReadSlurm builds the Slurm outcome from run.sh's output folder.
func ReadSlurm(dir string, c *topology.Cluster) (*Outcome, error) {
	times, err := readKV(filepath.Join(dir, "times.txt"))
	if err != nil {
		return nil, err
	}
	t0s, ok := times["t0"]
	if !ok {
		return nil, fmt.Errorf("%s: no t0", filepath.Join(dir, "times.txt"))
	}
	t0f, err := strconv.ParseFloat(t0s, 64)
	if err != nil {
		return nil, fmt.Errorf("times.txt: t0: %w", err)
	}
	sec, frac := math.Modf(t0f)
	t0 := time.Unix(int64(sec), int64(frac*1e9))

	name := "Slurm"
	if v, err := os.ReadFile(filepath.Join(dir, "version.txt")); err == nil {
		if f := strings.Fields(string(v)); len(f) > 0 {
			name = "Slurm " + f[len(f)-1]
		}
	}
	o := &Outcome{
		Name:         name,
		Running:      map[string][]string{},
		Planned:      map[string][]string{},
		PlannedStart: map[string]time.Duration{},
	}
	if err := readSqueue(filepath.Join(dir, "squeue.txt"), c, t0, o); err != nil {
		return nil, err
	}
	if err := readSdiag(filepath.Join(dir, "sdiag.txt"), o); err != nil {
		return nil, err
	}
	o.Notes = append(o.Notes, fmt.Sprintf("%s: sdiag after the pending stream: %d backfill cycles, last %v, mean %v, max %v; last depth %d",
		name, o.Cycles, o.CycleFirst, o.CycleMean, o.CycleMax, o.CycleDepth))
	if a, b := times["load_start"], times["load_collect"]; a != "" || b != "" {
		o.Notes = append(o.Notes, fmt.Sprintf("%s: load average %s at the start of its run, %s when its results were collected", name, a, b))
	}
	return o, nil
}

func readKV(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			m[k] = v
		}
	}
	return m, nil
}

// readSqueue reads lines "name|state|nodes|start|schednodes".
func readSqueue(path string, c *topology.Cluster, t0 time.Time, o *Outcome) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		p := strings.Split(text, "|")
		if len(p) != 5 {
			return fmt.Errorf("%s:%d: want 5 fields separated by |, got %q", path, line, text)
		}
		id, state, nodes, start, sched := p[0], p[1], p[2], p[3], p[4]
		switch state {
		case "RUNNING", "CONFIGURING":
			names, err := expand(c, nodes)
			if err != nil {
				return fmt.Errorf("%s:%d: job %s: %w", path, line, id, err)
			}
			o.Running[id] = names
		case "PENDING":
			o.Pending++
			if start == "N/A" || start == "" || sched == "(null)" || sched == "" {
				continue
			}
			at, err := time.ParseInLocation("2006-01-02T15:04:05", start, time.Local)
			if err != nil {
				return fmt.Errorf("%s:%d: job %s: start %q: %w", path, line, id, start, err)
			}
			names, err := expand(c, sched)
			if err != nil {
				return fmt.Errorf("%s:%d: job %s: %w", path, line, id, err)
			}
			o.Planned[id] = names
			o.PlannedStart[id] = at.Sub(t0)
		default:
			// Completing or finished jobs are not part of the picture.
		}
	}
	return sc.Err()
}

// expand expands a Slurm hostlist and checks that every node is in c.
func expand(c *topology.Cluster, expr string) ([]string, error) {
	names, err := hostlist.Expand(expr)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := c.LookupNode(n); !ok {
			return nil, fmt.Errorf("node %q is not in topology.conf", n)
		}
	}
	return names, nil
}

// readSdiag reads the backfill section of sdiag's output. Cycle times are
// in microseconds.
func readSdiag(path string, o *Outcome) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	_, bf, ok := strings.Cut(string(data), "Backfilling stats")
	if !ok {
		return fmt.Errorf("%s: no \"Backfilling stats\" section", path)
	}
	if end := strings.Index(bf, "\n\n"); end >= 0 {
		bf = bf[:end]
	}
	vals := map[string]int64{}
	for _, line := range strings.Split(bf, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			vals[k] = n
		}
	}
	us := func(k string) time.Duration { return time.Duration(vals[k]) * time.Microsecond }
	o.Cycles = int(vals["Total cycles"])
	if o.Cycles == 0 {
		o.Notes = append(o.Notes, "sdiag shows no backfill cycle after the pending stream")
	}
	o.CycleFirst = us("Last cycle")
	o.CycleMean = us("Mean cycle")
	o.CycleMax = us("Max cycle")
	o.CycleDepth = int(vals["Last depth cycle"])
	return nil
}
