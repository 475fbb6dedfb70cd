package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const smallTrace = `job_id,user,submit_s,duration_s,gpus
0,0,0,3600,8
1,1,10,600,1
2,0,20,7200,64
3,2,30,1800,16
4,1,40,60,2
5,2,50,3600,128
`

func TestReplay(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(trace, []byte(smallTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "topology.conf")
	if err := os.WriteFile(conf, []byte("SwitchName=s0 Nodes=n[0-15]\nSwitchName=s1 Nodes=n[16-31]\nSwitchName=top Switches=s[0-1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"default cluster, all policies", []string{"-trace", trace, "-quiet"},
			[]string{"trace t (6 jobs), cluster default-2k (2000 GPUs), load factor 1, seed 1", "\npod-by-pod ", "\ngang-fifo ", "\ngang-backfill ", "\nphalanx "}},
		{"topology.conf and placements", []string{"-trace", trace, "-topology", conf, "-policies", "phalanx", "-placements", "leaf-pack,first-fit,random", "-quiet"},
			[]string{"cluster topology.conf (256 GPUs)", "leaf-pack", "first-fit", "random"}},
		{"json", []string{"-trace", trace, "-topology", "fattree:2,2,8,8", "-policies", "gang-fifo", "-json", "-quiet"},
			[]string{`"policy": "gang-fifo"`, `"jobs": 6`}},
		{"urgent jobs preempt", []string{"-trace", trace, "-topology", "fattree:2,2,8,8", "-policies", "gang-backfill,phalanx", "-urgent", "0.5", "-quiet"},
			[]string{"\npreemption: victims", "\ngang-backfill  leaf-pack ", "\nphalanx        leaf-pack "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs strings.Builder
			if err := run(tt.args, &out, &errs); err != nil {
				t.Fatalf("%v\n%s", err, errs.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	// Bad flags are refused, naming the flag, instead of running with
	// another value.
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"load 0", []string{"-load", "0"}, "-load 0: want a positive factor"},
		{"negative load", []string{"-load", "-2"}, "-load -2: want a positive factor"},
		{"load NaN", []string{"-load", "NaN"}, "-load NaN"},
		{"infinite load", []string{"-load", "+Inf"}, "-load +Inf"},
		{"argument stops the flags", []string{"-preempt", "false", "-urgent", "0.3"}, `unexpected argument "false"`},
		{"stray argument", []string{"phalanx"}, `unexpected argument "phalanx"`},
		{"negative urgent share", []string{"-urgent", "-0.5"}, "-urgent -0.5: want a share in [0, 1]"},
		{"no-limits above 1", []string{"-no-limits", "2"}, "-no-limits 2: want a share in [0, 1]"},
		{"negative max-jobs", []string{"-max-jobs", "-5"}, "-max-jobs -5"},
		{"negative node-mtbf", []string{"-node-mtbf", "-1h"}, "-node-mtbf -1h0m0s"},
		{"negative repair", []string{"-node-mtbf", "100h", "-repair", "-1h"}, "-repair -1h0m0s"},
		{"negative checkpoint", []string{"-checkpoint", "-1h"}, "-checkpoint -1h0m0s"},
		{"fattree with a fifth count", []string{"-topology", "fattree:1,1,2,8,9"}, `topology "fattree:1,1,2,8,9": want fattree:spines,leaves,nodes,gpus`},
		{"fattree with trailing text", []string{"-topology", "fattree:1,1,2,8x"}, `topology "fattree:1,1,2,8x": want`},
		{"fattree with three counts", []string{"-topology", "fattree:1,2,8"}, `topology "fattree:1,2,8": want`},
		{"unknown placement without phalanx", []string{"-placements", "leaf-pack,bogus"}, `unknown placement "bogus"`},
	} {
		t.Run("bad flag/"+tt.name, func(t *testing.T) {
			var out, errs strings.Builder
			err := run(append([]string{"-trace", trace, "-policies", "gang-fifo", "-quiet"}, tt.args...), &out, &errs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run = %v, want an error with %q; output:\n%s", err, tt.want, out.String())
			}
		})
	}
	t.Run("bad files name the line", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.csv")
		_ = os.WriteFile(bad, []byte("job_id,user,submit_s,duration_s,gpus\n0,0,0,60,1\n1,0,x,60,1\n"), 0o644)
		var out, errs strings.Builder
		err := run([]string{"-trace", bad, "-quiet"}, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), "bad.csv:3: sim: bad trace: column submit_s") {
			t.Fatalf("bad trace: %v", err)
		}
		badConf := filepath.Join(dir, "bad.conf")
		_ = os.WriteFile(badConf, []byte("SwitchName=s0 Nodes=n[0-3]\nSwitchName=s1 Nodes=n[3-4]\n"), 0o644)
		err = run([]string{"-trace", trace, "-topology", badConf, "-quiet"}, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), "bad.conf:2") {
			t.Fatalf("bad topology: %v", err)
		}
	})
}

// TestReport: -report writes the report, and stderr (not a terminal here)
// gets no progress, only where the report is.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(trace, []byte(smallTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr strings.Builder
	if err := run([]string{"-trace", trace, "-policies", "gang-fifo,phalanx", "-placements", "leaf-pack,random", "-report", out}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if want := "replay: report in " + filepath.Join(out, "index.html") + "\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"GPUs busy over time", "Waits by job size", "Leaves per multi-node job", "Per-account share over time",
		"phalanx/random", "-policies gang-fifo,phalanx", "<h2>Metrics</h2>"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("report lacks %q", w)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "layout.json")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(stdout.String(), "\nphalanx ") {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
}

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

func TestProgressBar(t *testing.T) {
	t.Run("quiet for the first second", func(t *testing.T) {
		var b strings.Builder
		clock := &fakeClock{step: 10 * time.Millisecond}
		p := newProgressBar(&b, 2, clock.now)
		for i := range 50 {
			p.update(0, time.Duration(i)*time.Hour, i, 100)
		}
		p.runDone(0)
		p.finish()
		if b.Len() != 0 {
			t.Fatalf("drew %q within half a second", b.String())
		}
	})
	t.Run("draws, throttles and clears", func(t *testing.T) {
		var b strings.Builder
		clock := &fakeClock{step: 60 * time.Millisecond}
		p := newProgressBar(&b, 2, clock.now)
		for i := range 40 {
			p.update(1, 48*time.Hour, i, 100)
		}
		p.runDone(0)
		out := b.String()
		draws := strings.Count(out, "\r\033[K")
		// 40 updates 60 ms apart: drawing starts after a second and
		// redraws at most every 100 ms, about every other update.
		if draws < 8 || draws > 16 {
			t.Fatalf("%d draws:\n%q", draws, out)
		}
		last := out[strings.LastIndex(out, "\r\033[K"):]
		// Run 0 done (1) and run 1 at 39% make 69.5%.
		for _, w := range []string{"[####################..........]", " 70%", "1/2 runs done", "virtual 2.0d"} {
			if !strings.Contains(last, w) {
				t.Errorf("last draw %q lacks %q", last, w)
			}
		}
		p.finish()
		if !strings.HasSuffix(b.String(), "\r\033[K") {
			t.Errorf("finish did not clear the line: %q", b.String())
		}
	})
	t.Run("not a terminal", func(t *testing.T) {
		f, err := os.CreateTemp(t.TempDir(), "stderr")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if isTerminal(f) || isTerminal(&strings.Builder{}) {
			t.Fatal("a file or a builder taken for a terminal")
		}
	})
}
