package main

import (
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
