package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeTrace writes a seeded synthetic training trace: n jobs of 1 to 8
// nodes' worth of GPUs (or single GPUs), running 1 to 6 hours, submitted
// over span.
func writeTrace(t *testing.T, n int, span time.Duration) string {
	r := rand.New(rand.NewPCG(7, 19))
	var b strings.Builder
	b.WriteString("job_id,user,submit_s,duration_s,gpus\n")
	for i := range n {
		gpus := 8 * (1 + r.IntN(8))
		if r.IntN(3) == 0 {
			gpus = 1 + r.IntN(4)
		}
		fmt.Fprintf(&b, "%d,%d,%d,%d,%d\n", i, r.IntN(5), i*int(span.Seconds())/n, 3600*(1+r.IntN(6)), gpus)
	}
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHybrid runs the comparison on a synthetic trace that keeps the
// training partition busy and checks what the policies promise: the
// static split never preempts nor moves a job and meets the serving SLO;
// dynamic lending moves training jobs onto serving's nodes, reclaims
// them, and meets the SLO (every replica that started did within it);
// the boundary table has a row per hour simulated.
func TestHybrid(t *testing.T) {
	days := 1.0
	if testing.Short() {
		days = 0.5
	}
	o := options{trace: writeTrace(t, int(600*days), time.Duration(days*24*float64(time.Hour))), days: days, load: 1,
		slo: 10 * time.Minute, grace: 5 * time.Minute, release: 2 * time.Minute, floorNodes: 4, minServe: 10, maxServe: 48, peakHour: 6}
	var b strings.Builder
	if err := run(&b, o); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	row := regexp.MustCompile(`(?m)^(static|dynamic) +([\d.]+)% +([\d.]+)% +(\S+) +(\S+) +(\d+) +(\d+) +([\d.]+)% +(\S+) +(\d+) +([\d.]+)$`)
	rows := row.FindAllStringSubmatch(out, -1)
	if len(rows) != 2 {
		t.Fatalf("want a static and a dynamic row:\n%s", out)
	}
	num := func(r []string, i int) float64 { v, _ := strconv.ParseFloat(r[i], 64); return v }
	static, dynamic := rows[0], rows[1]
	if num(static, 7) != 0 || num(static, 10) != 0 || num(static, 8) != 100 {
		t.Errorf("static moved, preempted or missed the SLO: %v", static[0])
	}
	if num(dynamic, 7) == 0 || num(dynamic, 10) == 0 {
		t.Errorf("dynamic lent nothing or reclaimed nothing (the trace should keep training busy): %v", dynamic[0])
	}
	if d, err := time.ParseDuration(dynamic[9]); err != nil || d > o.slo {
		t.Errorf("dynamic: a replica started %v after it was asked for, beyond the SLO %v", dynamic[9], o.slo)
	}
	if hours := regexp.MustCompile(`(?m)^\d\d:00 `).FindAllString(out, -1); len(hours) != min(24, int(days*24)) {
		t.Errorf("%d boundary rows:\n%s", len(hours), out)
	}
	t.Log("\n" + out)
}

// TestHybridFlags: bad flags are refused with the flag named.
func TestHybridFlags(t *testing.T) {
	good := options{trace: "x", days: 1, load: 1, slo: time.Minute, grace: 5 * time.Minute, release: time.Minute, minServe: 1, maxServe: 2}
	for _, tc := range []struct {
		name string
		f    func(*options)
		want string
	}{
		{"release beyond grace", func(o *options) { o.release = time.Hour }, "-release"},
		{"max above the pool", func(o *options) { o.maxServe = 51 }, "-max 51"},
		{"floor above the pool", func(o *options) { o.floorNodes = 60 }, "-floor 60"},
		{"no days", func(o *options) { o.days = 0 }, "-days 0"},
		{"no trace", func(o *options) {}, "open x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.f(&o)
			if err := run(&strings.Builder{}, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
