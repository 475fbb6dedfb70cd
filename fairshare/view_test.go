package fairshare

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSnapshotIndependentOfTree: changes to the tree after a view
// (charges, shares, new accounts, config) do not show in it, and a clone
// is independent both ways.
func TestSnapshotIndependentOfTree(t *testing.T) {
	tr := slurmExample(t, testConfig(Classic))
	s, err := tr.View(t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := s.String()
	clone := tr.Clone()
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"charge", func() error { return tr.Charge("u3", 5000, t0) }},
		{"set shares", func() error { return tr.SetShares("A", 1) }},
		{"add account", func() error { return tr.AddAccount("u5", "u5a", 1) }},
		{"set config", func() error { return tr.SetConfig(testConfig(FairTree)) }},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := s.String(); got != before {
			t.Fatalf("after %s the view changed:\n%s\nwas\n%s", step.name, got, before)
		}
	}
	if clone.Has("u5a") || clone.Leaves() != 5 || clone.Config().Algorithm != Classic {
		t.Errorf("the clone saw the tree's changes")
	}
	if f := mustFactor(t, clone, "u1", t0); fmt.Sprintf("%.6f", f) != "0.408479" {
		t.Errorf("clone u1 factor %v", f)
	}
	if err := clone.AddAccount("", "other", 1); err != nil || tr.Has("other") {
		t.Errorf("the tree saw the clone's change (err %v)", err)
	}
	// u5 became an account: it cannot take jobs any more, u5a can.
	if _, err := tr.Factor("u5", t0); err == nil {
		t.Errorf("u5 still a leaf")
	}
	if tr.Leaves() != 5 {
		t.Errorf("Leaves = %d, want 5 (u5 replaced by u5a)", tr.Leaves())
	}
}

// TestSnapshotConcurrentUse runs readers of one view while the tree
// keeps changing; run under -race.
func TestSnapshotConcurrentUse(t *testing.T) {
	tr := slurmExample(t, testConfig(FairTree))
	s, err := tr.View(t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []QueuedJob{{ID: "a", Account: "u1", Submit: t0}, {ID: "b", Account: "u5", Submit: t0}}
	want, err := s.Prioritize(jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var out []Ranked
			for range 200 {
				res, err := s.Prioritize(jobs, out)
				if err != nil || res[0].ID != want[0].ID || res[0].Priority != want[0].Priority {
					t.Errorf("concurrent Prioritize: %v %v", res, err)
					return
				}
				out = res
				_ = s.String()
			}
		})
	}
	for i := range 200 {
		now := t0.Add(time.Duration(i) * time.Minute)
		if err := tr.Charge("u1", 10, now); err != nil {
			t.Fatal(err)
		}
		if err := tr.AddAccount("u2", fmt.Sprintf("x%d", i), 1); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.View(now, nil); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// TestAccountsOrder: depth first, children in the order added, and the
// iteration stops when asked.
func TestAccountsOrder(t *testing.T) {
	s, err := slurmExample(t, testConfig(FairTree)).View(t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for a := range s.Accounts() {
		names = append(names, strings.Repeat(".", a.Depth)+a.Name)
		if a.Name == "D" {
			break
		}
	}
	want := "root .A ..B ...u1 ..C ...u2 ...u3 .D"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("Accounts() = %s, want %s", got, want)
	}
	a, ok := s.Account("u2")
	if !ok || a.Parent != "C" || a.Depth != 3 || !a.Leaf || a.LevelShares != 0.5 || a.LevelUsage != 1 {
		t.Errorf("Account(u2) = %+v", a)
	}
	if _, ok := s.Account("nobody"); ok {
		t.Errorf("Account(nobody) found")
	}
}

// TestNoAllocations: recomputing a view into a reused one and ranking
// into a reused slice allocates nothing.
func TestNoAllocations(t *testing.T) {
	for _, algo := range []Algorithm{Classic, FairTree} {
		t.Run(algo.String(), func(t *testing.T) {
			tr, jobs := benchSetup(t, algo, 100, 10, 1000)
			now := t0
			snap, err := tr.View(now, nil)
			if err != nil {
				t.Fatal(err)
			}
			out, err := snap.Prioritize(jobs, nil)
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			allocs := testing.AllocsPerRun(50, func() {
				now = now.Add(time.Minute)
				i++
				if err := tr.Charge(jobs[i%len(jobs)].Account, 3600, now); err != nil {
					t.Fatal(err)
				}
				if snap, err = tr.View(now, snap); err != nil {
					t.Fatal(err)
				}
				if out, err = snap.Prioritize(jobs, out); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per recompute, want 0", allocs)
			}
		})
	}
}
