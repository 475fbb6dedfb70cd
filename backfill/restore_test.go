package backfill

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// snapshotCopy returns a deep copy of s (through JSON).
func snapshotCopy(t testing.TB, s *Snapshot) *Snapshot {
	data, err := json.Marshal(s)
	require.NoError(t, err)
	var c Snapshot
	require.NoError(t, json.Unmarshal(data, &c))
	return &c
}

func jobIndex(s *Snapshot, id string) int {
	return slices.IndexFunc(s.Jobs, func(j JobRecord) bool { return j.ID == id })
}

func gangIndex(s *Snapshot, id string) int {
	return slices.IndexFunc(s.Gangs, func(g gang.GangRecord) bool { return g.ID == id })
}

// corruption makes a snapshot untrue; Restore must refuse it mentioning msg.
type corruption struct {
	name    string
	corrupt func(s *Snapshot)
	msg     string
}

// refuseEach checks that Restore refuses each corruption of a copy of
// good with ErrRestore and an error mentioning its msg.
func refuseEach(t *testing.T, e *Engine, good *Snapshot, tests []corruption) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshotCopy(t, good)
			tt.corrupt(s)
			_, err := Restore(e.c, e.cfg, s)
			if !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Restore = %v; want ErrRestore mentioning %q", err, tt.msg)
			}
		})
	}
}

// TestRestoreRefusesCorruptSnapshots: each snapshot that cannot be true is
// refused with an error naming the problem, and a snapshot with several
// problems lists them all.
func TestRestoreRefusesCorruptSnapshots(t *testing.T) {
	e := richEngine(t)
	good := e.Snapshot()
	if _, err := Restore(e.c, e.cfg, snapshotCopy(t, good)); err != nil {
		t.Fatalf("the good snapshot: %v", err)
	}
	tests := []corruption{
		{"another version", func(s *Snapshot) { s.Version = 1 }, "format version 1"},
		{"running gang on a down node", func(s *Snapshot) {
			s.Down = append(s.Down, s.Gangs[gangIndex(s, "run")].Members[0].Pods[0].Node)
		}, "job run runs on node"},
		{"fewer pods than recorded as wanted", func(s *Snapshot) {
			m := &s.Gangs[gangIndex(s, "run")].Members[0]
			m.Pods = m.Pods[:1]
		}, "gang run member m is not whole: 1 of 3 pods"},
		{"fewer pods than the spec", func(s *Snapshot) {
			m := &s.Gangs[gangIndex(s, "run")].Members[0]
			m.Pods, m.Want = m.Pods[:1], 1
		}, "recorded as 1 pods (min 0) or 0 GPUs, the spec asks for 3"},
		{"another member name", func(s *Snapshot) { s.Gangs[gangIndex(s, "run")].Members[0].Name = "x" }, "member m recorded as x"},
		{"fewer GPUs per pod", func(s *Snapshot) {
			p := &s.Gangs[gangIndex(s, "run")].Members[0].Pods[0]
			p.GPUs = p.GPUs[:4]
		}, "gang run member m: its pods hold 4 to 8 GPUs, and not each its whole node"},
		{"fewer GPUs on every pod", func(s *Snapshot) {
			for k := range s.Gangs[gangIndex(s, "run")].Members[0].Pods {
				p := &s.Gangs[gangIndex(s, "run")].Members[0].Pods[k]
				p.GPUs = p.GPUs[:4]
			}
		}, "holds 4 GPUs, the spec gives it 8"},
		{"a GPU claimed twice", func(s *Snapshot) {
			s.Gangs[gangIndex(s, "short")].Members[0].Pods[0] = s.Gangs[gangIndex(s, "run")].Members[0].Pods[0]
		}, "claimed by gang run"},
		{"duplicated reservation", func(s *Snapshot) { s.Reservations = append(s.Reservations, s.Reservations[0]) }, "has two reservations"},
		{"reservation for a running job", func(s *Snapshot) {
			r := s.Reservations[0]
			r.Job = "run"
			r.Placement.ID = "run"
			s.Reservations = append(s.Reservations, r)
		}, "a reservation for run, which is not waiting"},
		{"reserved job without its reservation", func(s *Snapshot) { s.Reservations = nil }, "job wait is recorded reserved"},
		{"sequence counter set back", func(s *Snapshot) { s.Seq = 2 }, "not in [1, 2], the snapshot's counter"},
		{"sequence counter about to wrap", func(s *Snapshot) { s.Seq = math.MaxUint64 }, "sequence counter 18446744073709551615 is beyond any count of submissions"},
		{"a reservation in year 1", func(s *Snapshot) { s.Reservations[0].FirstStart = time.Time{}.AddDate(0, 0, 1) }, "the reservation for wait: backfill: time out of range: reservation first start 0001-01-02"},
		{"a hold cool-down in year 3000", func(s *Snapshot) {
			s.Jobs[jobIndex(s, "wait")].HoldExpiry = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
		}, "job wait hold cool-down end"},
		{"a hold blocked after the snapshot", func(s *Snapshot) { s.Jobs[jobIndex(s, "wait")].HoldBlocked = s.Time.Add(time.Hour) }, "job wait hold blocked since"},
		{"two jobs with one number", func(s *Snapshot) { s.Jobs[1].Seq = s.Jobs[0].Seq }, "share sequence number"},
		{"a job listed twice", func(s *Snapshot) { s.Jobs = append(s.Jobs, s.Jobs[0]) }, "listed twice"},
		{"a gang of no job", func(s *Snapshot) {
			g := s.Gangs[gangIndex(s, "short")]
			g.ID = "ghost"
			s.Jobs[jobIndex(s, "short")].State = StateFinished
			s.Jobs[jobIndex(s, "short")].Ended = s.Time
			s.Gangs[gangIndex(s, "short")] = g
		}, "the gang ghost belongs to no active job"},
		{"running job without a gang", func(s *Snapshot) { s.Gangs = slices.Delete(s.Gangs, gangIndex(s, "short"), gangIndex(s, "short")+1) }, "job short is starting but has no running gang"},
		{"unknown node", func(s *Snapshot) { s.Drained = append(s.Drained, "nowhere") }, `"nowhere"`},
		{"a time after the snapshot's", func(s *Snapshot) { s.Jobs[0].Submit = s.Time.Add(time.Hour) }, "submit"},
		{"a time limit that is not a duration", func(s *Snapshot) { s.Jobs[0].TimeLimit = "soon" }, "time limit"},
		{"unknown account", func(s *Snapshot) { s.Jobs[0].Account = "zz" }, `"zz"`},
		{"bad usage", func(s *Snapshot) {
			s.Usage = append(s.Usage, s.Usage[0])
		}, "given twice"},
		{"hold for a running job", func(s *Snapshot) {
			s.Holds = append(s.Holds, HoldRecord{Job: "run", Since: s.Time, Target: s.Gangs[gangIndex(s, "run")], BudgetGPUs: 1})
		}, "a hold for run, which is not a held job"},
		{"a reservation whose end is not its limit", func(s *Snapshot) { s.Reservations[0].End = s.Reservations[0].Start }, "not a time limit after its start"},
		{"a reservation smaller than its job", func(s *Snapshot) {
			m := &s.Reservations[0].Placement.Members[0]
			m.Pods, m.Want = m.Pods[:1], 1
		}, "the reservation for wait: gang wait: member m: 1 pods recorded, the spec asks for 4 to 4"},
		{"a reservation with a member its job lacks", func(s *Snapshot) {
			p := &s.Reservations[0].Placement
			extra := p.Members[0]
			// One pod on a node of the cluster the reservation leaves
			// out, so that no GPU is named twice.
			used := map[string]bool{}
			for _, pod := range extra.Pods {
				used[pod.Node] = true
			}
			free := 0
			for used[fmt.Sprintf("node%05d", free)] {
				free++
			}
			extra.Name, extra.Want = "x", 1
			extra.Pods = []gang.PodRecord{{Node: fmt.Sprintf("node%05d", free), GPUs: []int{0}}}
			p.Members = append(p.Members, extra)
		}, "the reservation for wait: gang wait: allocation wait has 2 members, the spec 1"},
		{"a reservation whose pod count is not its pods", func(s *Snapshot) { s.Reservations[0].Placement.Members[0].Want = 7 }, "4 pods recorded as 7"},
		{"a reservation on a GPU the node lacks", func(s *Snapshot) { s.Reservations[0].Placement.Members[0].Pods[0].GPUs[0] = 99 }, "has no GPU 99"},
		{"a pod change on an unknown node", func(s *Snapshot) {
			s.PodChanges = append(s.PodChanges, PodChange{Job: "run", Kind: PodsRemoved, Pods: []gang.Pod{{Member: "m", Node: 1 << 20, GPUs: 1}}})
		}, `pod change 0 (job "run", removed): malformed`},
		{"a replacement without the old pods", func(s *Snapshot) {
			s.PodChanges = append(s.PodChanges, PodChange{Job: "run", Kind: PodsReplaced, Pods: []gang.Pod{{Member: "m", GPUs: 1}}})
		}, `pod change 0 (job "run", replaced): malformed`},
		// The MaxJobsTested windows' counts (window.go).
		{"a test counter about to wrap", func(s *Snapshot) { s.Tests = math.MaxUint64 }, "test counter 18446744073709551615, round from test 0 or last event after test 0 out of range"},
		{"a round begun after the last test", func(s *Snapshot) { s.Tests, s.RoundFrom = 4, 5 }, "round from test 5 or last event after test 0 out of range"},
		{"an event after the last test", func(s *Snapshot) { s.Tests, s.EventAt = 4, 5 }, "last event after test 5 out of range"},
		{"a waiting job tested after the last test", func(s *Snapshot) { s.Tests, s.Jobs[jobIndex(s, "wait")].Tested = 4, 5 }, "job wait was tested as test 5 of the snapshot's 4"},
		{"a running job with a test number", func(s *Snapshot) { s.Tests, s.Jobs[jobIndex(s, "run")].Tested = 4, 3 }, "job run is running, but has a test number"},
		{"nothing owed while a job is", func(s *Snapshot) { s.Tests, s.EventAt, s.Owed = 4, 4, false }, "is owed a test (tested as test 0, the last event after test 4), but none is asked for"},
	}
	refuseEach(t, e, good, tests)
	t.Run("every problem listed", func(t *testing.T) {
		s := snapshotCopy(t, good)
		names := []string{"running gang on a down node", "duplicated reservation", "unknown node", "bad usage", "hold for a running job"}
		for _, name := range names {
			tests[slices.IndexFunc(tests, func(c corruption) bool { return c.name == name })].corrupt(s)
		}
		_, err := Restore(e.c, e.cfg, s)
		for _, name := range names {
			for _, tt := range tests {
				if tt.name == name && (err == nil || !strings.Contains(err.Error(), tt.msg)) {
					t.Errorf("the joined error lacks %q: %v", tt.msg, err)
				}
			}
		}
	})
}

// TestRestoreOntoChangedTopology: a snapshot taken on one cluster restores
// onto a cluster with one more leaf (node sets, allocations and
// reservations map by name: a partition-limited job keeps its partition),
// and is refused, naming what differs, on a cluster that renamed nodes the
// snapshot uses.
func TestRestoreOntoChangedTopology(t *testing.T) {
	spec := topology.ClusterSpec{Levels: []string{"leaf"}}
	for _, leaf := range []string{"l0", "l1"} {
		for n := range 4 {
			spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: leaf + "-" + string(rune('a'+n)), GPUs: 8, Path: []string{leaf}})
		}
	}
	small, err := topology.Build(spec)
	require.NoError(t, err)
	grown := spec
	grown.Nodes = nil
	for n := range 4 {
		// A new leaf listed before the others: every node index shifts.
		grown.Nodes = append(grown.Nodes, topology.NodeSpec{Name: "k0-" + string(rune('a'+n)), GPUs: 8, Path: []string{"k0"}})
	}
	grown.Nodes = append(grown.Nodes, spec.Nodes...)
	big, err := topology.Build(grown)
	require.NoError(t, err)
	cfg := DefaultConfig()
	e, err := New(small, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	part, err := small.NodeSet("l1-a", "l1-b", "l1-c", "l1-d")
	require.NoError(t, err)
	limited := Job{ID: "part", Account: "a", TimeLimit: time.Hour, Gang: member(placement.Request{Nodes: 2, GPUsPerNode: 8, Allowed: part})}
	fill := Job{ID: "fill", Account: "a", TimeLimit: time.Hour, Gang: member(placement.Request{Nodes: 3, GPUsPerNode: 8, Allowed: part})}
	require.NoError(t, e.Submit(fill, epoch))
	if _, err := e.Schedule(epoch); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, e.Submit(limited, epoch.Add(time.Minute)))
	if _, err := e.Schedule(epoch.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	snap := snapshotCopy(t, e.Snapshot())
	if d := snap.Cluster.Diff(ClusterFingerprint(big)); d == "" {
		t.Fatal("the grown cluster has the same fingerprint")
	}
	r, err := Restore(big, cfg, snap)
	if err != nil {
		t.Fatalf("restore onto the grown cluster: %v", err)
	}
	require.NoError(t, r.Finished("fill", epoch.Add(time.Hour)))
	p, err := r.Schedule(epoch.Add(time.Hour))
	require.NoError(t, err)
	if len(p.Starts) != 1 || !strings.HasPrefix(Hosts(big, &p.Starts[0].Allocation), "m=l1-") {
		t.Fatalf("the partition-limited job did not start inside its partition:\n%s", p.Describe(big, epoch))
	}
	renamed := grown
	renamed.Nodes = append([]topology.NodeSpec{}, spec.Nodes...)
	renamed.Nodes[4].Name = "l1-z"
	other, err := topology.Build(renamed)
	require.NoError(t, err)
	_, err = Restore(other, cfg, snapshotCopy(t, snap))
	if !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), "the cluster differs from the snapshot's: node names, sizes or domains changed") ||
		!strings.Contains(err.Error(), `"l1-a"`) {
		t.Fatalf("restore onto a renamed cluster: %v", err)
	}
}

// preemptingEngine returns an engine in the middle of a preemption: on
// two leaves of 4 nodes, a class-1 gang preempted the two gangs of leaf
// s0-l0 (one already released), the other leaf runs two class-0 gangs
// (one protected).
func preemptingEngine(t *testing.T) *Engine {
	c := opsCluster(t)
	cfg := DefaultConfig()
	cfg.Hold.Enabled = false
	cfg.Preemption = PreemptionConfig{Enabled: true, Grace: 5 * time.Minute}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	job := func(id string, nodes, class int, p preempt.Policy) Job {
		return Job{ID: id, Account: "a", Class: class, Preemption: p,
			Gang: member(placement.Request{Nodes: nodes, GPUsPerNode: 8, Required: "leaf"})}
	}
	for _, j := range []Job{job("a", 2, 0, preempt.Requeue), job("b", 2, 0, preempt.Cancel), job("c", 2, 0, preempt.Never), job("d", 2, 0, preempt.Requeue)} {
		require.NoError(t, e.Submit(j, epoch))
	}
	p, err := e.Schedule(epoch)
	require.NoError(t, err)
	for _, s := range p.Starts {
		require.NoError(t, e.Started(s.Job, epoch))
	}
	require.NoError(t, e.Checkpointed("d", epoch.Add(30*time.Minute)))
	require.NoError(t, e.Submit(job("urgent", 4, 1, preempt.Never), epoch.Add(time.Hour)))
	p, err = e.Schedule(epoch.Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, p.Preemptions, 2, p.Describe(c, epoch))
	require.NoError(t, e.Preempted(p.Preemptions[0].Victim, epoch.Add(62*time.Minute)))
	return e
}

// TestRestoreRefusesCorruptPreemptions: each snapshot whose preemption
// state cannot be true is refused with an error naming the problem.
func TestRestoreRefusesCorruptPreemptions(t *testing.T) {
	e := preemptingEngine(t)
	good := e.Snapshot()
	require.Len(t, good.Claims, 1)
	victim := good.Claims[0].Victims[0]
	_, err := Restore(e.c, e.cfg, snapshotCopy(t, good))
	require.NoError(t, err)
	tests := []corruption{
		{"a claim for a running job", func(s *Snapshot) { s.Claims[0].Job, s.Claims[0].Placement.ID = "c", "c" }, "a claim for c, which is not waiting"},
		{"a victim that is running", func(s *Snapshot) { s.Claims[0].Victims = append(s.Claims[0].Victims, "d") }, "lists d, which is not a preempting job"},
		{"a victim listed twice", func(s *Snapshot) { s.Claims[0].Victims = append(s.Claims[0].Victims, victim) }, "lists " + victim},
		{"a victim of the preemptor's class", func(s *Snapshot) { s.Jobs[jobIndex(s, victim)].Class = 1 }, "lists " + victim},
		{"a preempting job without a preemptor", func(s *Snapshot) { s.Jobs[jobIndex(s, victim)].PreemptedBy = "" }, "is preempting with a preemption time"},
		{"a preempting job that cannot be preempted", func(s *Snapshot) { s.Jobs[jobIndex(s, victim)].Preemption = "" }, "is preempting but cannot be preempted"},
		{"an unknown policy", func(s *Snapshot) { s.Jobs[jobIndex(s, "d")].Preemption = "suspend" }, `unknown preemption policy "suspend"`},
		{"a running job with a preemptor", func(s *Snapshot) { s.Jobs[jobIndex(s, "d")].PreemptedBy = "urgent" }, "job d is running with a preemption time"},
		{"a checkpoint of a waiting job", func(s *Snapshot) { s.Jobs[jobIndex(s, "urgent")].Checkpoint = s.Time }, "with a checkpoint"},
		{"a claim smaller than its job", func(s *Snapshot) {
			m := &s.Claims[0].Placement.Members[0]
			m.Pods, m.Want = m.Pods[:1], 1
		}, "the claim for urgent: gang urgent: member m: 1 pods recorded, the spec asks for 4 to 4"},
		{"a claim due before it began", func(s *Snapshot) { s.Claims[0].Due = s.Claims[0].Since.Add(-time.Second) }, "before it began"},
		{"a victim preempted before its preemptor's submit", func(s *Snapshot) {
			j := &s.Jobs[jobIndex(s, "urgent")]
			j.Submit = s.Jobs[jobIndex(s, victim)].PreemptedAt.Add(time.Second)
		}, "before urgent was submitted"},
		{"a running job that yields", func(s *Snapshot) { s.Jobs[jobIndex(s, "d")].YieldTo = "urgent" }, "job d yields to \"urgent\", but it is not a requeued waiting job"},
		{"a job never requeued that yields", func(s *Snapshot) { s.Jobs[jobIndex(s, "urgent")].YieldTo = "d" }, "job urgent yields to \"d\""},
		{"a job that yields to an unknown one", func(s *Snapshot) {
			j := &s.Jobs[jobIndex(s, "urgent")]
			j.State, j.Requeues, j.YieldTo = StateRequeued, 1, "nobody"
		}, "that names no other job"},
		{"a job that yields to itself", func(s *Snapshot) {
			j := &s.Jobs[jobIndex(s, "urgent")]
			j.State, j.Requeues, j.YieldTo = StateRequeued, 1, "urgent"
		}, "job urgent yields to \"urgent\""},
		{"a claim on a protected job's GPUs", func(s *Snapshot) {
			// c runs in the other leaf: the claim's job asks for no leaf
			// here, so that the claim is refused for c's GPUs alone.
			s.Jobs[jobIndex(s, "urgent")].Gang.Members[0].Request.Required = ""
			s.Claims[0].Placement.Members[0].Pods[0] = s.Gangs[gangIndex(s, "c")].Members[0].Pods[0]
		}, "held by another job"},
		{"a claim sharing GPUs with another", func(s *Snapshot) {
			cr := s.Claims[0]
			cr.Job, cr.Placement.ID, cr.Victims = "a", "a", nil
			// A whole placement of a (2 of urgent's 4 nodes).
			m := cr.Placement.Members[0]
			m.Pods, m.Want = m.Pods[:2], 2
			cr.Placement.Members = []gang.MemberRecord{m}
			s.Claims = append(s.Claims, cr)
		}, "share GPUs"},
	}
	refuseEach(t, e, good, tests)
	t.Run("version 2", func(t *testing.T) {
		s := snapshotCopy(t, good)
		s.Version = 2
		_, err := Restore(e.c, e.cfg, s)
		require.NoError(t, err, "a version 2 snapshot is read")
	})
}

// TestRestoredEngineActsAlike: an engine restored from its snapshot (through
// JSON) every 97 steps of a random sequence gives the same answer to every
// later call as one never restored. The sequences are the naive agreement
// test's: elastic gangs, every node-failure policy, pod replacements and
// releases, hold mode, preemption and queues. (A restored engine's ledger
// once kept only its gangs' sizes, so a node failure re-placed pods
// outside their required leaf where the original requeued the job.)
func TestRestoredEngineActsAlike(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	c := opsCluster(t)
	for _, depth := range []int{0, 1, 16, Conservative} {
		t.Run(fmt.Sprintf("depth=%d", depth), func(t *testing.T) {
			for seed := range uint64(seeds) {
				kept := randomOpsEngine(t, c, depth, seed, false)
				restored := randomOpsEngine(t, c, depth, seed, false)
				r := rand.New(rand.NewPCG(seed, uint64(depth+2000)))
				now := epoch
				for i := range 600 {
					st, do := randomOp(r, c, kept)
					now = later(now.Add(st.dt), kept.Now())
					if i%97 == 96 {
						restored = roundTrip(t, restored)
					}
					if a, b := do(kept, st, now), do(restored, st, now); a != b {
						t.Fatalf("seed %d step %d (%v): the restored engine differs:\n%s\n%s", seed, i, st, a, b)
					}
				}
			}
		})
	}
}

// TestRestoreDefaultClusterGPUs: a config that leaves
// FairShare.ClusterGPUs at 0 (the cluster's GPU count, as New reads it)
// with a job-size weight restores as it was made. Restore built the
// fair-share tree from the config before New filled the count in, and the
// tree refused it (ClusterGPUs must be positive with a job-size weight).
func TestRestoreDefaultClusterGPUs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		jobSize uint32
	}{
		{"job size unweighted", 0},
		{"job size weighted", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := opsCluster(t)
			cfg := DefaultConfig()
			cfg.FairShare.Weights.JobSize = tc.jobSize
			e, err := New(c, cfg, flatTree(t, DefaultConfig().FairShare, "a"))
			require.NoError(t, err)
			require.NoError(t, e.Submit(Job{ID: "j", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, epoch))
			startAll(t, e, epoch)
			r, err := Restore(c, cfg, snapshotCopy(t, e.Snapshot()))
			require.NoError(t, err)
			require.Equal(t, c.TotalGPUs(), r.Config().FairShare.ClusterGPUs)
		})
	}
}
