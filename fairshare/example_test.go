package fairshare_test

import (
	"fmt"
	"time"

	"github.com/phalanx-sched/phalanx/fairshare"
)

// Example ranks a small queue: an organisation tree from text, usage
// charged in GPU-seconds, one view, and the priority breakdown of each
// job.
func Example() {
	spec, err := fairshare.ParseText(`
		# organisation, team, user
		physics  shares=60
		hep      parent=physics shares=2
		alice    parent=hep
		bob      parent=hep
		astro    parent=physics shares=1
		carol    parent=astro
		bio      shares=40
		dave     parent=bio
	`)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := fairshare.DefaultConfig() // Fair Tree, 7-day half-life
	cfg.Weights.JobSize, cfg.ClusterGPUs = 1000, 64
	tree, err := fairshare.BuildTree(spec, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	monday := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	_ = tree.Charge("alice", 32*8*3600, monday)                 // 32 GPUs for 8 hours
	_ = tree.Charge("dave", 8*4*3600, monday.Add(24*time.Hour)) // 8 GPUs for 4 hours

	now := monday.Add(3 * 24 * time.Hour)
	jobs := []fairshare.QueuedJob{
		{ID: "a1", Account: "alice", Submit: now.Add(-2 * time.Hour), GPUs: 32, QOS: 1},
		{ID: "b1", Account: "bob", Submit: now.Add(-1 * time.Hour), GPUs: 8},
		{ID: "c1", Account: "carol", Submit: now.Add(-30 * time.Minute), GPUs: 16},
		{ID: "d1", Account: "dave", Submit: now.Add(-4 * 24 * time.Hour), GPUs: 64},
	}
	snap, err := tree.View(now, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ranked, err := snap.Prioritize(jobs, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range ranked {
		fmt.Println(r)
	}
	// Output:
	// d1 (dave) 11571 = age 571.429 (0.571) + fairshare 10000 (1.000) + size 1000 (1.000) + qos 0 (0.000) + partition 0 (0.000)
	// c1 (carol) 7753 = age 2.97619 (0.003) + fairshare 7500 (0.750) + size 250 (0.250) + qos 0 (0.000) + partition 0 (0.000)
	// b1 (bob) 5131 = age 5.95238 (0.006) + fairshare 5000 (0.500) + size 125 (0.125) + qos 0 (0.000) + partition 0 (0.000)
	// a1 (alice) 4012 = age 11.9048 (0.012) + fairshare 2500 (0.250) + size 500 (0.500) + qos 1000 (1.000) + partition 0 (0.000)
}

// ExampleTree_Charge shows exact decay: usage halves every half-life, and
// a charge counts for the account and all its ancestors.
func ExampleTree_Charge() {
	cfg := fairshare.DefaultConfig()
	cfg.HalfLife = 24 * time.Hour
	tree, _ := fairshare.NewTree(cfg)
	_ = tree.AddAccount("", "ml", 1)
	_ = tree.AddAccount("ml", "erin", 1)

	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	_ = tree.Charge("erin", 3600, t0) // one GPU-hour
	_ = tree.Charge("erin", 3600, t0) // charges at one instant add
	for _, d := range []time.Duration{0, 24 * time.Hour, 36 * time.Hour, 72 * time.Hour} {
		u, _ := tree.Usage("ml", t0.Add(d))
		fmt.Printf("after %v: %.1f GPU-seconds\n", d, u)
	}
	// Output:
	// after 0s: 7200.0 GPU-seconds
	// after 24h0m0s: 3600.0 GPU-seconds
	// after 36h0m0s: 2545.6 GPU-seconds
	// after 72h0m0s: 900.0 GPU-seconds
}

// ExampleView_String reproduces the worked example of Slurm's classic
// fair-share documentation and prints it as sshare would. The 0.3 of the
// machine's usage that the documentation leaves unattributed is charged
// to the root.
func ExampleView_String() {
	spec, _ := fairshare.ParseText(`
		A shares=40
		B parent=A shares=30
		C parent=A shares=10
		D shares=60
		E parent=D shares=25
		F parent=D shares=35
		u1 parent=B
		u2 parent=C
		u3 parent=C
		u4 parent=E
		u5 parent=F
	`)
	cfg := fairshare.DefaultConfig()
	cfg.Algorithm = fairshare.Classic
	tree, _ := fairshare.BuildTree(spec, cfg)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for account, gpuSec := range map[string]float64{"u1": 200, "u2": 250, "u4": 250, fairshare.RootName: 300} {
		_ = tree.Charge(account, gpuSec, now)
	}
	snap, _ := tree.View(now, nil)
	fmt.Print(snap)
	// Output:
	// account   shares norm shares        usage norm usage  eff usage   level fs  rank   factor
	// root           0    1.000000         1000   1.000000   1.000000   0.000000       0.000000
	//  A            40    0.400000          450   0.450000   0.450000   0.888889       0.458502
	//   B           30    0.300000          200   0.200000   0.387500   1.687500       0.408479
	//    u1          1    0.300000          200   0.200000   0.387500   1.000000       0.408479
	//   C           10    0.100000          250   0.250000   0.300000   0.450000       0.125000
	//    u2          1    0.050000          250   0.250000   0.275000   0.500000       0.022097
	//    u3          1    0.050000            0   0.000000   0.150000       +Inf       0.125000
	//  D            60    0.600000          250   0.250000   0.250000   2.400000       0.749154
	//   E           25    0.250000          250   0.250000   0.250000   0.416667       0.500000
	//    u4          1    0.250000          250   0.250000   0.250000   1.000000       0.500000
	//   F           35    0.350000            0   0.000000   0.145833       +Inf       0.749154
	//    u5          1    0.350000            0   0.000000   0.145833       +Inf       0.749154
}

// A tree can come from JSON too, and is administered while in use: shares
// change, usage decays (here over one seven-day half-life) and can be read
// per account, with or without the account's descendants.
func ExampleParseJSON() {
	spec, err := fairshare.ParseJSON([]byte(`{"accounts": [
		{"name": "physics", "shares": 60},
		{"name": "bio", "shares": 40},
		{"name": "alice", "parent": "physics", "shares": 1}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	tree, err := fairshare.BuildTree(spec, fairshare.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	monday := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	_ = tree.Charge("alice", 8*3600, monday)   // 8 GPU-hours
	_ = tree.Charge("physics", 2*3600, monday) // 2 GPU-hours on the parent itself
	if err := tree.SetShares("bio", 60); err != nil {
		fmt.Println(err)
	}
	week := monday.Add(7 * 24 * time.Hour)
	_ = tree.Decay(week)
	own, _ := tree.OwnUsage("physics", week)
	all, _ := tree.Usage("physics", week)
	fmt.Printf("physics after a half-life: own %.0f GPU-s, with alice %.0f GPU-s\n", own, all)
	fmt.Println(tree.SetShares("chem", 10))
	// Output:
	// physics after a half-life: own 3600 GPU-s, with alice 18000 GPU-s
	// fairshare: unknown account: "chem"
}

// ExampleView_Rank ranks a queue the way a scheduler does every cycle:
// each job prepared once when it joins the queue, then ranked against each
// cycle's view from the last cycle's order (the order Prioritize gives,
// without the factor breakdown).
func ExampleView_Rank() {
	spec, err := fairshare.ParseText("alice\nbob")
	if err != nil {
		fmt.Println(err)
		return
	}
	tree, err := fairshare.BuildTree(spec, fairshare.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	start := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	var queue []fairshare.Prepared
	for i, acct := range []string{"alice", "alice", "bob"} {
		p, err := tree.Prepare(fairshare.QueuedJob{ID: fmt.Sprintf("j%d", i+1), Account: acct,
			Submit: start.Add(time.Duration(i) * time.Minute), GPUs: 8})
		if err != nil {
			fmt.Println(err)
			return
		}
		queue = append(queue, p)
	}
	var (
		view    *fairshare.View
		entries []fairshare.RankEntry
	)
	for cycle := range 2 {
		now := start.Add(time.Duration(cycle+1) * time.Hour)
		if cycle == 1 {
			_ = tree.Charge("alice", 64*3600, now) // alice ran 64 GPUs for an hour
		}
		if view, err = tree.View(now, view); err != nil {
			fmt.Println(err)
			return
		}
		if entries, err = view.Rank(queue, entries); err != nil {
			fmt.Println(err)
			return
		}
		next := make([]fairshare.Prepared, 0, len(queue))
		fmt.Printf("cycle %d:", cycle+1)
		for _, e := range entries {
			fmt.Printf(" %s (%d)", queue[e.Index].ID(), e.Priority)
			next = append(next, queue[e.Index])
		}
		fmt.Println()
		queue = next // the next cycle starts from this order
	}
	// Output:
	// cycle 1: j1 (10006) j2 (10006) j3 (10006)
	// cycle 2: j3 (10012) j1 (5012) j2 (5012)
}

// ExampleTree_CheckJob checks jobs at submission, so that a bad one never
// reaches the queue (Prioritize would stop at it).
func ExampleTree_CheckJob() {
	spec, err := fairshare.ParseText("physics\nalice parent=physics")
	if err != nil {
		fmt.Println(err)
		return
	}
	tree, err := fairshare.BuildTree(spec, fairshare.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	for _, j := range []fairshare.QueuedJob{
		{ID: "ok", Account: "alice", Submit: at, GPUs: 8},
		{ID: "group", Account: "physics", Submit: at, GPUs: 8},
		{ID: "typo", Account: "alcie", Submit: at, GPUs: 8},
	} {
		fmt.Println(j.ID, tree.CheckJob(j))
	}
	// Output:
	// ok <nil>
	// group fairshare: account is not a leaf: job "group" has account "physics", which has sub-accounts
	// typo fairshare: unknown account: job "typo" has account "alcie"
}
