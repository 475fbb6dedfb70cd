package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/slurm"
)

func testCluster(t *testing.T) *topology.Cluster {
	t.Helper()
	// Four leaves of two nodes, two spines of two leaves.
	var b strings.Builder
	for l := range 4 {
		fmt.Fprintf(&b, "SwitchName=leaf%d Nodes=n[%d-%d]\n", l, 2*l, 2*l+1)
	}
	b.WriteString("SwitchName=s0 Switches=leaf[0-1]\nSwitchName=s1 Switches=leaf[2-3]\nSwitchName=top Switches=s[0-1]\n")
	fsys := fstest.MapFS{"topology.conf": {Data: []byte(b.String())}}
	c, _, err := slurm.LoadConf(fsys, "topology.conf", slurm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStreamRoundTrip(t *testing.T) {
	g := GenConfig{Seed: 3, Nodes: 256, Churn: 2, ChurnShare: 0.3, Gap: 12, Pending: 50, MaxNodes: 32}
	ev := Generate(g)
	var buf bytes.Buffer
	if err := WriteStream(&buf, g, ev); err != nil {
		t.Fatal(err)
	}
	back, err := ReadStream(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ev, back) {
		t.Fatal("stream changed in a write/read round trip")
	}
	// The cluster is full after each refill but the last, which leaves Gap
	// nodes free.
	used, size := 0, jobSizes(ev)
	for _, e := range ev {
		switch e.Op {
		case OpSubmit:
			used += e.Nodes
		case OpCancel:
			used -= size[e.ID]
		case OpSync:
			want := g.Nodes
			if e.ID == "refill2" {
				want -= g.Gap
			}
			if e.ID != PhaseBackfill && used != want {
				t.Fatalf("after %s: %d nodes busy, want %d", e.ID, used, want)
			}
		}
	}
	if n := len(pendingIDs(ev)); n != g.Pending {
		t.Fatalf("pending stream has %d jobs, want %d", n, g.Pending)
	}
}

func TestReadSlurm(t *testing.T) {
	c := testCluster(t)
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.Local)
	files := map[string]string{
		"times.txt":   "load_start=0.1 0.2 0.3\nt0=" + strconv.FormatInt(t0.Unix(), 10) + ".0\n",
		"version.txt": "slurm-wlm 22.05.8\n",
		"squeue.txt": "a|CONFIGURING|n[0-2]|2026-01-01T10:00:01|(null)\n" +
			"b|PENDING||2026-01-01T12:00:00|n[1,4]\n" +
			"c|PENDING||N/A|(null)\n",
		"sdiag.txt": "Main schedule statistics\n\tLast cycle: 9\n\nBackfilling stats\n\tTotal cycles: 3\n\tLast cycle: 2000\n" +
			"\tMax cycle:  3000\n\tMean cycle: 2500\n\tLast depth cycle: 2\n\nLatency\n\tLast cycle: 7\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o, err := ReadSlurm(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	if o.Name != "Slurm 22.05.8" || o.Pending != 2 || len(o.Running["a"]) != 3 || len(o.Planned) != 1 {
		t.Fatalf("outcome %+v", o)
	}
	if d := o.PlannedStart["b"]; d != 2*time.Hour {
		t.Fatalf("planned start of b: %v, want 2h", d)
	}
	if o.CycleFirst != 2*time.Millisecond || o.CycleMean != 2500*time.Microsecond || o.CycleMax != 3*time.Millisecond || o.CycleDepth != 2 || o.Cycles != 3 {
		t.Fatalf("cycles %+v", o)
	}
	g, err := newGeometry(c)
	if err != nil {
		t.Fatal(err)
	}
	s := g.Spread(map[string][]string{"a": {"n0", "n1", "n2"}, "b": {"n1", "n4"}, "d": {"n2", "n3"}})
	// a spans leaf0+leaf1 (the fewest for 3 nodes, one spine), b
	// leaf0+leaf2 (one leaf beyond the fewest, crosses spines), d leaf1.
	if s.Jobs != 3 || s.MaxLeaves != 2 || s.Small != 2 || s.SmallInLeaf != 0.5 || s.FitSpine != 3 {
		t.Fatalf("spread %+v", s)
	}
	if s.MeanExcess != 1.0/3 || s.CrossSpine != 1.0/3 {
		t.Fatalf("spread %+v", s)
	}
}
