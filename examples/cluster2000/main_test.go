package main

import (
	"flag"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCluster2000 runs the demonstration (a smaller workload in -short
// mode) and checks the facts it exists to show.
func TestCluster2000(t *testing.T) {
	jobs := 1000
	if testing.Short() {
		jobs = 300
	}
	var b strings.Builder
	if err := run(&b, jobs, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"pod-by-pod   125/150 pods, stuck    125/150 pods, stuck               0        2000",
		"gang         runs on 1200 GPUs      waits, holds nothing           1200           0",
		"gang admission leaves 800 GPUs free",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// 2: leaf packing spans no more leaves and splits no more groups.
	row := regexp.MustCompile(`(?m)^   (leaf-pack|first-fit|random) +(\d+) +(\d+) +(\d+) +(\d+)$`)
	m := row.FindAllStringSubmatch(out, -1)
	if len(m) != 3 {
		t.Fatalf("placement rows: %v", m)
	}
	n := func(r, c int) int { v, _ := strconv.Atoi(m[r][c]); return v }
	if n(0, 3) > n(2, 3) || n(0, 5) != 0 || n(0, 4) > n(1, 4) {
		t.Errorf("leaf-pack is not the tightest: %v", m)
	}
	// 3: with a reservation the 512-GPU job starts much earlier.
	res := regexp.MustCompile(`(?m)^   (reservations \(EASY\)|no reservations) +t\+(\S+) +(\d+)$`).FindAllStringSubmatch(out, -1)
	if len(res) != 2 || res[0][2] == res[1][2] {
		t.Fatalf("reservation rows: %v", res)
	}
	// 4: every policy has a row, and gang policies never deadlock.
	for _, p := range []string{"pod-by-pod", "gang-fifo", "gang-backfill", "phalanx "} {
		if !strings.Contains(out, "\n"+p) {
			t.Errorf("no row for %s", p)
		}
	}
	checkPreemption(t, out)
	gangRow := regexp.MustCompile(`(?m)^(gang-fifo|gang-backfill|phalanx) +\S+ +[\d.]+% +[\d.]+% +\d+h +\d+h +0h `)
	if n := len(gangRow.FindAllString(out, -1)); n != 5 {
		t.Errorf("%d gang rows with 0h deadlock, want 5:\n%s", n, out)
	}
}

// checkPreemption checks section 6: the engine stops whole gangs of the
// fewest leaves that can hold the urgent gang (two: 256 GPUs are two
// leaves' worth), exactly its 256 GPUs, fewer victims and less lost work
// than the topology-blind choice; and the urgent gang then starts.
func checkPreemption(t *testing.T, out string) {
	t.Helper()
	row := regexp.MustCompile(`(?m)^   (phalanx \(gang/preempt\)|cheapest first, topology-blind) +(\d+) +(\d+) +(\d+) +(\d+)$`)
	m := row.FindAllStringSubmatch(out, -1)
	if len(m) != 2 {
		t.Fatalf("preemption rows: %v\n%s", m, out)
	}
	n := func(r, c int) int { v, _ := strconv.Atoi(m[r][c]); return v }
	if n(0, 3) != 256 || n(0, 4) != 2 {
		t.Errorf("phalanx stops %d GPUs on %d leaves; want 256 on 2", n(0, 3), n(0, 4))
	}
	if n(0, 2) >= n(1, 2) || n(0, 5) > n(1, 5) || n(1, 4) <= 2 {
		t.Errorf("phalanx's victims are not fewer and cheaper than the blind choice's: %v", m)
	}
	if !strings.Contains(out, "the urgent gang starts on n[") {
		t.Errorf("the urgent gang did not start:\n%s", out)
	}
}

// TestParseArgs: an argument among the flags is an error naming it, not
// the end of the flags (a bool flag given "false" as a separate word
// dropped every flag after it).
func TestParseArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		n    int
		err  string
	}{
		{"flags only", []string{"-b", "-n", "3"}, 3, ""},
		{"bool with =", []string{"-b=false", "-n", "3"}, 3, ""},
		{"bool then a word", []string{"-b", "false", "-n", "3"}, 0, `unexpected argument "false"`},
		{"trailing argument", []string{"-n", "3", "extra"}, 3, `unexpected argument "extra"`},
		{"bad flag", []string{"-nope"}, 0, "flag provided but not defined: -nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fs.Bool("b", false, "")
			n := fs.Int("n", 0, "")
			err := parseArgs(fs, tt.args)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("parseArgs = %v, want %q", err, tt.err)
			}
			if *n != tt.n {
				t.Fatalf("-n %d, want %d", *n, tt.n)
			}
		})
	}
}
