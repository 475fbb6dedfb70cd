package backfill

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// step is one operation of a random sequence, printable so that a failure
// replays: an event at the time of the previous step plus dt.
type step struct {
	kind    opKind
	dt      time.Duration
	job     Job    // opSubmit
	id      string // job ID
	node    topology.NodeID
	requeue bool // opFailed
	restore bool // snapshot, JSON, restore before the step
	sets    byte // opUpdate: which node sets (updateStep)
}

func (s step) String() string {
	what := s.id
	if what == "" && (s.kind == opStarted || s.kind == opPreempted) {
		what = "(first or every job in the state)"
	}
	if s.kind == opSubmit {
		r := s.job.Gang.Members[0].Request
		what = fmt.Sprintf("%s %s limit=%v members=%d", s.job.ID, r.String(), s.job.TimeLimit, len(s.job.Gang.Members))
	}
	if s.restore {
		what += " (after a restore)"
	}
	return fmt.Sprintf("+%v %s %s", s.dt, opNames[s.kind], what)
}

// opsCluster is the cluster of random sequences: 2 leaves x 4 nodes x 8
// GPUs.
func opsCluster(t testing.TB) *topology.Cluster {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func opsEngine(t testing.TB, c *topology.Cluster, depth int) *Engine {
	cfg := DefaultConfig()
	cfg.ReservationDepth = depth
	cfg.FairShare.HalfLife = time.Hour
	cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 0.75, CapWait: 30 * time.Minute, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 2}
	cfg.KeepEnded = 10 * time.Minute
	cfg.Preemption = PreemptionConfig{Enabled: true, ExemptTime: 2 * time.Minute, Grace: 2 * time.Minute}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// stepFrom builds a step from a few numbers (from a seeded generator or
// from fuzz input): an operation kind, a time advance, a job or node
// index and shape parameters. Job IDs come from a small pool, so that
// steps hit known, unknown and ended jobs alike.
func stepFrom(c *topology.Cluster, b [6]byte) step {
	s := step{dt: time.Duration(b[1]%64) * time.Minute / 4}
	id := fmt.Sprintf("j%d", b[2]%24)
	node := topology.NodeID(int(b[2]) % c.NumNodes())
	switch k := b[0] % 20; {
	case k < 5:
		s.kind, s.job = opSubmit, jobFrom2(c, id, b)
	case k < 8:
		s.kind = opSchedule
	case k == 8:
		s.kind, s.id = opStarted, id
	case k >= 18:
		s.kind = opStarted // every starting job, as a host confirms its launches
	case k == 9:
		s.kind, s.id = opFinished, id
	case k == 10:
		s.kind, s.id, s.requeue = opFailed, id, b[3]%2 == 0
	case k == 11:
		s.kind, s.id = opCancel, id
	case k == 12:
		s.kind, s.node = opNodeDown, node
	case k == 13:
		s.kind, s.node = opNodeUp, node
	case k == 14:
		s.kind, s.node = opDrain, node
	case k == 15:
		s.kind, s.node = opResume, node
	case k == 16:
		s.kind, s.id = opPreempted, id
		if b[3]%2 == 0 {
			s.id = "" // the first preempting job, as a host reports a release
		}
	case b[3]%2 == 0:
		s.kind, s.id, s.sets = opUpdate, id, b[4]
	default:
		s.kind, s.id = opCheckpointed, id
	}
	s.restore = b[5]%23 == 0
	return s
}

func jobFrom2(c *topology.Cluster, id string, b [6]byte) Job {
	req := placement.NodesOf(1+int(b[3])%6, []int{1, 2, 4, 8, 0}[b[4]%5])
	if b[4]%7 == 0 {
		req = placement.TotalGPUs(1 + int(b[3])%40)
	}
	if b[3]%5 == 0 {
		req.Required = "leaf"
	}
	j := Job{ID: id, Account: []string{"a", "b"}[b[5]%2], Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: req}}}}
	if b[5]%4 != 0 {
		j.TimeLimit = time.Duration(10+int(b[1])*3) * time.Minute
	}
	if b[5]%6 == 1 {
		j.Gang.Members = append(j.Gang.Members, gang.Member{Name: "aux", Request: placement.NodesOf(1, 1)})
	}
	if b[5]%9 == 2 {
		allowed := c.NewNodeSet()
		for n := range 4 {
			allowed.Set(uint(n))
		}
		j.Gang.Members[0].Request.Allowed = allowed
	}
	if b[5]%11 == 3 {
		j.Patience = Patience{MaxDomains: 1, Wait: 30 * time.Minute}
	}
	if b[4]%3 == 0 {
		j.OnNodeFailure = Fail
	}
	// A few urgent jobs; most others preemptible.
	j.Class = int(b[2]/64) / 3
	j.Preemption = preempt.Policy(b[1] % 3)
	return j
}

// apply runs step s at now and returns what it produced as text (a plan as
// JSON, node events), or the error.
func (s step) apply(e *Engine, now time.Time) (string, error) {
	switch {
	case s.kind == opStarted && s.id == "":
		return "", forEachIn(e, StateStarting, func(id string) error { return e.Started(id, now) })
	case s.kind == opPreempted && s.id == "":
		return "", forEachIn(e, StatePreempting, func(id string) error { return e.Preempted(id, now) })
	case s.kind == opUpdate:
		return "", updateStep(e, s.id, s.sets, now)
	}
	return hostCall(e, s.kind, s.job, s.id, s.node, s.requeue, now)
}

// hostCall makes the host call kind on e at now (job for a submit, id for
// the job named, node for node calls, requeue for Failed) and returns what
// it produced as text (a plan as JSON, node events), or the error. It
// panics on a kind it does not make (the pod calls).
func hostCall(e *Engine, kind opKind, job Job, id string, node topology.NodeID, requeue bool, now time.Time) (string, error) {
	switch kind {
	case opSubmit:
		return "", e.Submit(job, now)
	case opSchedule:
		p, err := e.Schedule(now)
		if err != nil {
			return "", err
		}
		data, err := json.Marshal(p)
		return string(data), err
	case opStarted:
		return "", e.Started(id, now)
	case opFinished:
		return "", e.Finished(id, now)
	case opFailed:
		return "", e.Failed(id, now, requeue)
	case opCancel:
		return "", e.Cancel(id, now)
	case opNodeDown:
		evs, err := e.NodeDown(node, now)
		return fmt.Sprint(evs), err
	case opNodeUp:
		return "", e.NodeUp(node, now)
	case opDrain:
		return "", e.Drain(node, now)
	case opResume:
		return "", e.Resume(node, now)
	case opPreempted:
		return "", e.Preempted(id, now)
	case opCheckpointed:
		return "", e.Checkpointed(id, now)
	}
	panic(fmt.Sprintf("hostCall: op %d", kind))
}

// updateStep updates job id's node sets at now as the host would: the
// job as JobSpec gives it, with its first member's sets replaced by one
// of a few (sets picks): none (every node), either leaf, one node
// excluded, nodes across both leaves; or its time limit changed, which
// Update refuses. An unknown ID is passed on as it is.
func updateStep(e *Engine, id string, sets byte, now time.Time) error {
	j, ok := e.JobSpec(id)
	if !ok {
		return e.Update(Job{ID: id}, now)
	}
	c := e.Cluster()
	r := &j.Gang.Members[0].Request
	r.Allowed, r.Excluded, r.AllowedLabel = nil, nil, ""
	span := func(lo, hi int, label string) {
		r.Allowed, r.AllowedLabel = c.NewNodeSet(), label
		for n := lo; n < hi && n < c.NumNodes(); n++ {
			r.Allowed.Set(uint(n))
		}
	}
	switch sets % 6 {
	case 1:
		span(0, 4, "first leaf")
	case 2:
		span(4, 8, "second leaf")
	case 3:
		r.Excluded = c.NewNodeSet()
		r.Excluded.Set(uint(int(sets/6) % c.NumNodes()))
	case 4:
		span(2, 6, "across")
	case 5:
		j.TimeLimit += time.Minute
	}
	return e.Update(j, now)
}

// forEachIn calls f for the first job in state st (every such job when
// st is StateStarting), stopping at an error.
func forEachIn(e *Engine, st JobState, f func(id string) error) error {
	for _, j := range e.Jobs() {
		if j.State != st {
			continue
		}
		if err := f(j.ID); err != nil || st != StateStarting {
			return err
		}
	}
	return nil
}

// roundTrip snapshots e, passes the snapshot through JSON, restores it and
// checks that the restored engine snapshots to the same bytes.
func roundTrip(t testing.TB, e *Engine) *Engine {
	data, err := json.Marshal(e.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var snap Snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	r, err := Restore(e.c, e.cfg, &snap)
	if err != nil {
		t.Fatalf("restore of a fresh snapshot: %v", err)
	}
	again, err := json.Marshal(r.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		var a, b Snapshot
		_ = json.Unmarshal(data, &a)
		_ = json.Unmarshal(again, &b)
		t.Fatalf("snapshot, restore, snapshot differs (-first +second):\n%s", cmp.Diff(a, b))
	}
	r.checkEach = e.checkEach
	return r
}

// runSteps applies steps to e, checking after each: every invariant
// (checkEach), and that a refused step changed nothing. A step marked
// restore first replaces the engine by its restored snapshot. It returns
// the engine and the log of results.
func runSteps(t testing.TB, e *Engine, steps []step) (*Engine, []string) {
	now := epoch
	var log []string
	for i, s := range steps {
		if s.restore {
			e = roundTrip(t, e)
		}
		now = later(now.Add(s.dt), e.Now())
		before := e.Snapshot()
		out, err := s.apply(e, now)
		if err != nil {
			if d := cmp.Diff(before, e.Snapshot()); d != "" {
				t.Fatalf("step %d %v: refused (%v) but changed the engine:\n%s", i, s, err, d)
			}
			out = "error: " + err.Error()
		}
		log = append(log, out)
	}
	return e, log
}

func randomSteps(r *rand.Rand, c *topology.Cluster, n int) []step {
	steps := make([]step, n)
	for i := range steps {
		var b [6]byte
		for k := range b {
			b[k] = byte(r.IntN(256))
		}
		steps[i] = stepFrom(c, b)
		steps[i].restore = false
	}
	return steps
}

// TestRestoreReplays: an engine restored from a mid-run snapshot (through
// JSON) gives byte-identical results to the original for the next 1,000
// random steps (submits, cycles at jittered times, starts, finishes,
// failures, cancels, node events), at depth 1, 16 and conservative, and
// at depth 16 with a MaxJobsTested window of 3 jobs (whose rounds the
// snapshot carries); and snapshot, restore, snapshot is byte-identical.
func TestRestoreReplays(t *testing.T) {
	c := opsCluster(t)
	seeds := uint64(4)
	if testing.Short() {
		seeds = 1 // the race detector's run: one seed per depth
	}
	for _, v := range []struct{ depth, window int }{{1, 0}, {16, 0}, {Conservative, 0}, {16, 3}} {
		depth := v.depth
		for seed := range seeds {
			t.Run(fmt.Sprintf("depth=%d/window=%d/seed=%d", depth, v.window, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, uint64(depth+5+v.window)))
				e := opsEngine(t, c, depth)
				e.cfg.MaxJobsTested = v.window
				e.checkEach = true
				e, _ = runSteps(t, e, randomSteps(r, c, 300))
				restored := roundTrip(t, e)
				next := randomSteps(r, c, 1000)
				_, want := runSteps(t, e, next)
				_, got := runSteps(t, restored, next)
				for i := range want {
					if want[i] != got[i] {
						t.Fatalf("step %d %v: original and restored differ:\n%s", i, next[i], cmp.Diff(want[i], got[i]))
					}
				}
				cycles := 0
				for _, s := range want {
					if strings.HasPrefix(s, `{"Time"`) {
						cycles++
					}
				}
				if cycles < 100 {
					t.Fatalf("only %d cycles in 1,000 steps", cycles)
				}
			})
		}
	}
}

// FuzzEngine runs random operation sequences (submit, cancel, cycles at
// jittered times, started, finished early, at or past the limit, failures,
// node down, up, drain and resume, snapshot and restore) with every
// invariant checked after every step, and a refused step required to
// change nothing; one input length in seven with a MaxJobsTested window
// of 2 jobs.
//
//	go test -run '^$' -fuzz FuzzEngine -fuzztime 5m ./backfill
func FuzzEngine(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		seed := make([]byte, 6*40)
		for i := range seed {
			seed[i] = byte(r.IntN(256))
		}
		f.Add(seed)
	}
	c := opsCluster(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 6*400 {
			data = data[:6*400]
		}
		var steps []step
		for i := 0; i+6 <= len(data); i += 6 {
			steps = append(steps, stepFrom(c, [6]byte(data[i:i+6])))
		}
		e := opsEngine(t, c, []int{1, 16, Conservative, 0}[len(data)%4])
		if len(data)%7 == 3 {
			e.cfg.MaxJobsTested = 2 // windows, carried across the restores
		}
		e.checkEach = true
		runSteps(t, e, steps)
	})
}

// addWorkloadSeeds adds eight seed inputs of steps random operations to
// f: a first byte that picks the workload (0 to 7), then 6 bytes a step.
func addWorkloadSeeds(f *testing.F, r *rand.Rand, steps int) {
	for i := range 8 {
		seed := make([]byte, 1+6*steps)
		for k := range seed {
			seed[k] = byte(r.IntN(256))
		}
		seed[0] = byte(i)
		f.Add(seed)
	}
}

// FuzzQuotaEngine is FuzzEngine under queues: a random queue tree
// (guarantees, borrowing and lending limits, maxima, weights, flat or
// nested; randomQueues) drawn from the input's first byte, every job in a
// queue without children, reclaim and preemption on. Every invariant,
// the queues' books included, is checked after every step, and a refused
// step must change nothing.
//
//	go test ./backfill -run '^$' -fuzz FuzzQuotaEngine -fuzztime 5m -fuzzminimizetime 5s
func FuzzQuotaEngine(f *testing.F) {
	addWorkloadSeeds(f, rand.New(rand.NewPCG(5, 6)), 40)
	c := opsCluster(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 {
			return
		}
		if len(data) > 1+6*400 {
			data = data[:1+6*400]
		}
		w := int(data[0])
		e := opsEngine(t, c, []int{1, 16, Conservative, 0}[w%4])
		cfg := e.cfg
		cfg.Quotas = randomQueues(rand.New(rand.NewPCG(uint64(w), 41)), w, c.NumNodes())
		if w%8 == 7 {
			// Every queue without children in strict order.
			for i, q := range cfg.Quotas.Queues {
				cfg.Quotas.Queues[i].StrictOrder = !hasChild(cfg.Quotas.Queues, q.Name)
			}
		}
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
		if err != nil {
			t.Fatalf("queues %+v: %v", cfg.Quotas, err)
		}
		var leaves []string
		for i, q := range cfg.Quotas.Queues {
			if e.quota.leaf[i] {
				leaves = append(leaves, q.Name)
			}
		}
		var steps []step
		for i := 1; i+6 <= len(data); i += 6 {
			b := [6]byte(data[i : i+6])
			s := stepFrom(c, b)
			if s.kind == opSubmit {
				s.job.Queue = leaves[int(b[3]^b[4])%len(leaves)]
			}
			steps = append(steps, s)
		}
		e.checkEach = true
		runSteps(t, e, steps)
	})
}
