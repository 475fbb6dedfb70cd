package fairshare

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// flatTree returns a Fair Tree tree with unused leaves a, b and c (all
// factor 1) under the root, so only the other factors differ.
func flatTree(t testing.TB, cfg Config) *Tree {
	t.Helper()
	spec, err := ParseText("a\nb\nc")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := BuildTree(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestFactors(t *testing.T) {
	now := t0.Add(10 * 24 * time.Hour)
	base := Config{
		Algorithm: FairTree, HalfLife: week,
		Weights: Weights{Age: 1000, FairShare: 1, JobSize: 1000, QOS: 1000, Partition: 1000},
		MaxAge:  4 * 24 * time.Hour, ClusterGPUs: 64,
	}
	for _, tc := range []struct {
		name  string
		small bool
		job   QueuedJob
		want  Factors // FairShare is 1 throughout
	}{
		{"age half of max", false, QueuedJob{Submit: now.Add(-48 * time.Hour), GPUs: 0},
			Factors{Age: 0.5}},
		{"age capped at 1", false, QueuedJob{Submit: now.Add(-9 * 24 * time.Hour)},
			Factors{Age: 1}},
		{"future submit counts as no wait", false, QueuedJob{Submit: now.Add(time.Hour)},
			Factors{}},
		{"large favoured: 16 of 64", false, QueuedJob{Submit: now, GPUs: 16},
			Factors{JobSize: 0.25}},
		{"large favoured: more than the cluster", false, QueuedJob{Submit: now, GPUs: 100},
			Factors{JobSize: 1}},
		{"small favoured: 1 GPU", true, QueuedJob{Submit: now, GPUs: 1},
			Factors{JobSize: 1}},
		{"small favoured: 0 GPUs", true, QueuedJob{Submit: now, GPUs: 0},
			Factors{JobSize: 1}},
		{"small favoured: 17 of 64", true, QueuedJob{Submit: now, GPUs: 17},
			Factors{JobSize: 0.75}},
		{"small favoured: whole cluster", true, QueuedJob{Submit: now, GPUs: 64},
			Factors{JobSize: 1.0 / 64}},
		{"QOS and partition passed through", false, QueuedJob{Submit: now, QOS: 0.3, Partition: 0.9},
			Factors{QOS: 0.3, Partition: 0.9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.FavorSmall = tc.small
			tc.job.ID, tc.job.Account = "j", "a"
			out, err := flatTree(t, cfg).Prioritize([]QueuedJob{tc.job}, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.FairShare = 1
			got := out[0]
			if got.Factors != want {
				t.Errorf("factors = %+v, want %+v", got.Factors, want)
			}
			w := Factors{Age: 1000 * want.Age, FairShare: 1, JobSize: 1000 * want.JobSize,
				QOS: 1000 * want.QOS, Partition: 1000 * want.Partition}
			if got.Weighted != w {
				t.Errorf("weighted = %+v, want %+v", got.Weighted, w)
			}
			if p := uint64(math.Round(w.Sum())); got.Priority != p {
				t.Errorf("priority = %d, want %d", got.Priority, p)
			}
		})
	}
}

// TestOrder checks the queue order: priority, then submit time, then ID,
// then input position, and that fair share is what orders equal jobs of
// different users.
func TestOrder(t *testing.T) {
	cfg := testConfig(Classic)
	cfg.Weights = Weights{Age: 1000, FairShare: 10000}
	tr := slurmExample(t, cfg)
	now := t0.Add(time.Hour)
	early, late := now.Add(-time.Hour), now.Add(-time.Minute)
	jobs := []QueuedJob{
		{ID: "z", Account: "u5", Submit: late},
		{ID: "y", Account: "u5", Submit: late},
		{ID: "x", Account: "u5", Submit: early}, // an hour of age: a higher priority
		{ID: "y", Account: "u5", Submit: late},  // duplicate ID: input order
		{ID: "b", Account: "u2", Submit: early},
		{ID: "a", Account: "u4", Submit: early},
		{ID: "c", Account: "u1", Submit: early},
		{ID: "zz", Account: "u5", Submit: late.Add(-time.Second)}, // same priority as y and z, earlier
	}
	out, err := tr.Prioritize(jobs, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out {
		got = append(got, r.ID+"@"+string(rune('0'+r.Index)))
	}
	// u5 (0.749) > u4 (0.5) > u1 (0.408) > u2 (0.022). Within u5, x's
	// hour of age adds 6 (7497); a second of age does not change the
	// rounded 7492 of zz, y and z, so submit time, ID and index decide.
	want := "x@2 zz@7 y@1 y@3 z@0 a@5 c@6 b@4"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("order = %s, want %s", s, want)
		for _, r := range out {
			t.Log(r)
		}
	}
}

// TestStarvationGuard: a job that has waited longer than the bound gets
// the boost and passes jobs of a far better account; exactly at the
// bound it does not.
func TestStarvationGuard(t *testing.T) {
	now := t0.Add(30 * 24 * time.Hour)
	jobs := []QueuedJob{
		{ID: "fresh", Account: "u5", Submit: now.Add(-time.Minute)},
		{ID: "starving", Account: "u2", Submit: now.Add(-49 * time.Hour)},
		{ID: "at-bound", Account: "u2", Submit: now.Add(-48 * time.Hour)},
	}
	for _, tc := range []struct {
		name   string
		bound  time.Duration
		boost  uint64
		order  string
		boost1 uint64
	}{
		{"guard off", 0, 0, "fresh starving at-bound", 0},
		{"default boost", 48 * time.Hour, 0, "starving fresh at-bound", 11001},
		{"explicit boost", 48 * time.Hour, 1 << 40, "starving fresh at-bound", 1 << 40},
		{"small boost does not suffice", 48 * time.Hour, 10, "fresh starving at-bound", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(Classic)
			cfg.Weights = Weights{Age: 1000, FairShare: 10000}
			cfg.StarvationBound, cfg.StarvationBoost = tc.bound, tc.boost
			out, err := slurmExample(t, cfg).Prioritize(jobs, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range out {
				ids = append(ids, r.ID)
				if r.ID == "starving" && r.Boost != tc.boost1 {
					t.Errorf("boost = %d, want %d", r.Boost, tc.boost1)
				}
				if r.ID != "starving" && r.Boost != 0 {
					t.Errorf("%s boosted by %d", r.ID, r.Boost)
				}
			}
			if s := strings.Join(ids, " "); s != tc.order {
				t.Errorf("order = %s, want %s", s, tc.order)
			}
		})
	}
}

// TestBadJobs is acceptance point 6 for jobs: each error names the job.
func TestBadJobs(t *testing.T) {
	tr := slurmExample(t, testConfig(FairTree))
	good := QueuedJob{ID: "ok", Account: "u1", Submit: t0, GPUs: 1}
	for _, tc := range []struct {
		name   string
		job    QueuedJob
		want   error
		naming []string
	}{
		{"unknown account", QueuedJob{ID: "j1", Account: "nobody", Submit: t0}, ErrUnknownAccount, []string{`"j1"`, `"nobody"`}},
		{"empty account", QueuedJob{ID: "j2", Submit: t0}, ErrUnknownAccount, []string{`"j2"`}},
		{"inner account", QueuedJob{ID: "j3", Account: "C", Submit: t0}, ErrNotLeaf, []string{`"j3"`, `"C"`}},
		{"root", QueuedJob{ID: "j4", Account: RootName, Submit: t0}, ErrNotLeaf, []string{`"j4"`}},
		{"zero submit", QueuedJob{ID: "j5", Account: "u1"}, ErrBadJob, []string{`"j5"`}},
		{"negative GPUs", QueuedJob{ID: "j6", Account: "u1", Submit: t0, GPUs: -2}, ErrBadJob, []string{`"j6"`, "-2"}},
		{"QOS above 1", QueuedJob{ID: "j7", Account: "u1", Submit: t0, QOS: 1.5}, ErrBadJob, []string{`"j7"`, "1.5"}},
		{"NaN partition", QueuedJob{ID: "j8", Account: "u1", Submit: t0, Partition: math.NaN()}, ErrBadJob, []string{`"j8"`, "NaN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tr.CheckJob(tc.job); !errors.Is(err, tc.want) {
				t.Errorf("CheckJob: err = %v, want %v", err, tc.want)
			}
			out, err := tr.Prioritize([]QueuedJob{good, tc.job}, t0, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Prioritize: err = %v, want %v", err, tc.want)
			}
			if len(out) != 0 {
				t.Errorf("Prioritize returned %d jobs with an error", len(out))
			}
			for _, s := range tc.naming {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
		})
	}
	if err := tr.CheckJob(good); err != nil {
		t.Errorf("CheckJob(good) = %v", err)
	}
}

func TestRankedString(t *testing.T) {
	r := Ranked{
		ID: "j1", Account: "alice", Priority: 16585,
		Factors:  Factors{Age: 0.5, FairShare: 0.408479, QOS: 1, Partition: 0.5},
		Weighted: Factors{Age: 500, FairShare: 4084.79, QOS: 1000, Partition: 500},
		Boost:    10501,
	}
	want := "j1 (alice) 16585 = age 500 (0.500) + fairshare 4084.79 (0.408) + size 0 (0.000) + qos 1000 (1.000) + partition 500 (0.500) + boost 10501"
	if got := r.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	for _, tc := range []struct {
		name   string
		change func(*Config)
		field  string // "" when valid
	}{
		{"default", func(*Config) {}, ""},
		{"classic, dampening 3", func(c *Config) { c.Algorithm, c.Dampening = Classic, 3 }, ""},
		{"no decay", func(c *Config) { c.HalfLife = 0 }, ""},
		{"job size with GPUs", func(c *Config) { c.Weights.JobSize, c.ClusterGPUs = 100, 512 }, ""},
		{"unknown algorithm", func(c *Config) { c.Algorithm = 7 }, "Algorithm"},
		{"negative half-life", func(c *Config) { c.HalfLife = -time.Hour }, "HalfLife"},
		{"dampening below 1", func(c *Config) { c.Dampening = 0.5 }, "Dampening"},
		{"dampening NaN", func(c *Config) { c.Dampening = math.NaN() }, "Dampening"},
		{"dampening Inf", func(c *Config) { c.Dampening = math.Inf(1) }, "Dampening"},
		{"no weights", func(c *Config) { c.Weights = Weights{} }, "Weights"},
		{"age weight without max age", func(c *Config) { c.MaxAge = 0 }, "MaxAge"},
		{"negative max age", func(c *Config) { c.MaxAge = -1 }, "MaxAge"},
		{"size weight without cluster", func(c *Config) { c.Weights.JobSize = 5 }, "ClusterGPUs"},
		{"negative cluster", func(c *Config) { c.ClusterGPUs = -1 }, "ClusterGPUs"},
		{"negative starvation bound", func(c *Config) { c.StarvationBound = -1 }, "StarvationBound"},
		{"huge boost", func(c *Config) { c.StarvationBoost = 1 << 63 }, "StarvationBoost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.change(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate() = %v, want ErrConfig naming %s", err, tc.field)
			}
			if _, err := NewTree(c); !errors.Is(err, ErrConfig) {
				t.Errorf("NewTree accepted it: %v", err)
			}
			tr := flatTree(t, ok)
			if err := tr.SetConfig(c); !errors.Is(err, ErrConfig) {
				t.Errorf("SetConfig accepted it: %v", err)
			}
		})
	}
}
