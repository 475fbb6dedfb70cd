package backfill

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// lockOp is one host call of TestElasticPreemptionLockstep.
type lockOp struct {
	kind   opKind
	dt     time.Duration
	job    Job
	id     string
	node   topology.NodeID
	member string
	rank   int
	req    bool
}

// String prints the call for a failure log.
func (h lockOp) String() string {
	return fmt.Sprintf("+%v %s %s node=%d %s/%d", h.dt, opNames[h.kind], h.id, h.node, h.member, h.rank)
}

// run makes the call on e at now and returns its result as text (a plan
// as JSON).
func (h lockOp) run(e *Engine, now time.Time) (string, error) {
	switch h.kind {
	case opReplacePod:
		r, err := e.ReplacePod(h.id, h.member, h.rank, now)
		return fmt.Sprint(r), err
	case opReleasePod:
		return "", e.ReleasePod(h.id, h.member, h.rank, now)
	}
	return hostCall(e, h.kind, h.job, h.id, h.node, h.req, now)
}

// lockJob is a random job: elastic or not, growing or not, of a random
// node failure policy, class and preemption policy.
func lockJob(r *rand.Rand, id string) Job {
	n := 1 + r.IntN(6)
	m := gang.Member{Name: "m", Request: placement.NodesOf(n, []int{8, 8, 4}[r.IntN(3)])}
	if n > 1 && r.IntN(2) == 0 {
		m.Min = 1 + r.IntN(n-1)
	}
	if r.IntN(5) == 0 {
		m.Request.Required = "leaf"
	}
	j := Job{ID: id, Account: []string{"a", "b"}[r.IntN(2)], Gang: gang.Spec{Members: []gang.Member{m}}}
	if r.IntN(2) == 0 {
		j.TimeLimit = time.Duration(10+r.IntN(120)) * time.Minute
	}
	j.Grow = m.Min > 0 && r.IntN(2) == 0
	j.OnNodeFailure = FailurePolicy(r.IntN(4))
	j.Class = r.IntN(3)
	j.Preemption = preempt.Policy(r.IntN(3))
	return j
}

// lockEngine returns the engine of seed seed under variant v (0: depth 4;
// 1: hold mode and depth 8; 2: MaxJobsTested and OnlyChangedWaits), with
// quotas on odd seeds, and the queues jobs may name.
func lockEngine(t testing.TB, seed, v int) (*Engine, []string) {
	c := opsCluster(t)
	cfg := DefaultConfig()
	var queues []string
	if seed%2 == 1 {
		cfg.Quotas = randomQueues(rand.New(rand.NewPCG(uint64(seed), 23)), seed, c.NumNodes())
		for _, q := range cfg.Quotas.Queues {
			if !slices.ContainsFunc(cfg.Quotas.Queues, func(o QueueSpec) bool { return o.Parent == q.Name }) {
				queues = append(queues, q.Name)
			}
		}
	}
	cfg.Hold.Enabled = false
	switch v {
	case 1:
		cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 0.75, CapWait: 30 * time.Minute, Budget: time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 2}
		cfg.ReservationDepth = 8
	case 2:
		cfg.MaxJobsTested = 3
		cfg.OnlyChangedWaits = true
		cfg.ReservationDepth = 1
	}
	cfg.FairShare.HalfLife = time.Hour
	cfg.KeepEnded = 10 * time.Minute
	cfg.Preemption = PreemptionConfig{Enabled: true, ExemptTime: 2 * time.Minute, Grace: 3 * time.Minute, MinGain: 5 * time.Minute}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	e.checkEach = true
	return e, queues
}

// pickID picks a job in one of the states st, or now and then any ID.
func pickID(r *rand.Rand, e *Engine, st ...JobState) string {
	var ids []string
	for _, j := range e.Jobs() {
		for _, s := range st {
			if j.State == s {
				ids = append(ids, j.ID)
			}
		}
	}
	if len(ids) == 0 || r.IntN(10) == 0 {
		return fmt.Sprintf("j%d", r.IntN(30))
	}
	return ids[r.IntN(len(ids))]
}

// randomLockOp returns a random host call for e (next numbers the jobs).
func randomLockOp(r *rand.Rand, e *Engine, queues []string, next *int) lockOp {
	h := lockOp{dt: time.Duration(r.IntN(5)) * time.Minute}
	if r.IntN(12) == 0 {
		h.dt = time.Duration(r.IntN(60)) * time.Minute
	}
	switch k := r.IntN(22); {
	case k < 4:
		*next++
		h.kind, h.job = opSubmit, lockJob(r, fmt.Sprintf("j%d", *next))
		if len(queues) > 0 {
			h.job.Queue = queues[r.IntN(len(queues))]
		}
		h.id = h.job.ID
	case k < 8:
		h.kind = opSchedule
	case k < 11:
		h.kind, h.id = opStarted, pickID(r, e, StateStarting, StateRunning)
	case k == 11:
		h.kind, h.id = opFinished, pickID(r, e, StateRunning, StatePreempting)
	case k == 12:
		h.kind, h.id, h.req = opFailed, pickID(r, e, StateRunning, StatePreempting), r.IntN(2) == 0
	case k == 13:
		h.kind, h.id = opCancel, pickID(r, e, StatePending, StateReserved, StatePreempting, StateRunning)
	case k == 14:
		h.kind, h.node = opNodeDown, topology.NodeID(r.IntN(8))
	case k == 15:
		h.kind, h.node = opNodeUp, topology.NodeID(r.IntN(8))
	case k == 16:
		h.kind, h.node = []opKind{opDrain, opResume}[r.IntN(2)], topology.NodeID(r.IntN(8))
	case k < 19:
		h.kind, h.id = opPreempted, pickID(r, e, StatePreempting)
	case k == 19:
		h.kind, h.id = opCheckpointed, pickID(r, e, StateRunning, StatePreempting)
	default:
		h.kind, h.id = []opKind{opReplacePod, opReleasePod}[r.IntN(2)], pickID(r, e, StateRunning, StateStarting)
		h.member, h.rank = "m", r.IntN(6)
	}
	return h
}

// TestElasticPreemptionLockstep drives two engines with the same random
// host calls (elastic and fixed gangs, growth, node failure policies,
// classes and preemption policies, node failures and drains, pod moves
// and releases, late and batched calls), restoring the second from its
// own snapshot (through JSON) at random points, and checks after every
// call:
//
//   - both return the same error or the same plan (with OnlyChangedWaits,
//     the waiting jobs aside: a restored engine's first cycle lists them
//     all), so a restore in the middle of a preemption (victims
//     preempting, a claim held) or after a shrink decides as the
//     original would;
//   - a refused call changes nothing, and a repeated accepted call
//     (Started, Finished, Failed, Cancel, Preempted, a node event) is
//     refused or changes nothing;
//   - no job starts on the GPUs of a reservation due after the cycle; a
//     preemptor starts on its claim, once its victims are all released
//     (unless a due reservation took the claim's GPUs); lent pods go to a
//     job that starts; a victim was running, of a lower class,
//     preemptible and past its exempt time (without queues);
//   - every engine invariant (checkEach: no GPU given twice, the free
//     state and the queues' counts recounted).
func TestElasticPreemptionLockstep(t *testing.T) {
	seeds := 16
	if testing.Short() {
		seeds = 4
	}
	for _, tc := range []struct {
		name    string
		variant int
	}{
		{"depth 4", 0},
		{"hold mode, depth 8", 1},
		{"windows, changed waits", 2},
	} {
		t.Run(tc.name, func(t *testing.T) { lockstep(t, tc.variant, seeds) })
	}
}

// lockstep runs TestElasticPreemptionLockstep's seeds under variant v.
func lockstep(t *testing.T, v, seeds int) {
	var npre, nshrink, nrel, ncl int
	defer func() {
		t.Logf("%d preemptions, %d shrinks or lendings, %d releases, %d restores with a claim", npre, nshrink, nrel, ncl)
		if npre == 0 || nshrink == 0 || nrel == 0 || ncl == 0 {
			t.Error("the calls should preempt, shrink or lend, release victims and restore with a claim held")
		}
	}()
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		a, queues := lockEngine(t, seed, v)
		b, _ := lockEngine(t, seed, v)
		now := epoch
		next := 0
		var log []lockOp
		for i := range 300 {
			h := randomLockOp(r, a, queues, &next)
			log = append(log, h)
			now = now.Add(h.dt)
			if r.IntN(6) == 0 {
				if len(b.book.claims) > 0 {
					ncl++
				}
				b = roundTrip(t, b)
			}
			before := a.Snapshot()
			type pre struct {
				phase  JobState
				class  int
				pol    preempt.Policy
				start  time.Time
				claim  *gang.Allocation
				victim int
			}
			prev := map[string]pre{}
			if h.kind == opSchedule {
				for id, j := range a.jobs.byID {
					x := pre{phase: j.phase, class: j.job.Class, pol: j.job.Preemption, start: j.start}
					if j.claim != nil {
						var al gang.Allocation
						j.claim.alloc.CopyTo(&al)
						x.claim, x.victim = &al, len(j.claim.victims)
						for _, r := range a.book.resv {
							if !r.start.After(now) && intersects(&al, &r.alloc) {
								x.claim = nil // dropped for the due reservation
							}
						}
					}
					prev[id] = x
				}
			}
			oa, ea := h.run(a, now)
			if h.kind == opSchedule && ea == nil {
				var p Plan
				_ = json.Unmarshal([]byte(oa), &p)
				fail := func(f string, args ...any) {
					t.Fatalf("seed %d step %d: %s\n%s", seed, i, fmt.Sprintf(f, args...), p.Describe(a.c, epoch))
				}
				started := map[string]bool{}
				for _, st := range p.Starts {
					started[st.Job] = true
					if x := prev[st.Job]; x.claim != nil {
						if x.victim > 0 {
							fail("%s started from a claim with %d victims preempting", st.Job, x.victim)
						}
						if !reflect.DeepEqual(x.claim.Members, st.Allocation.Members) && len(queues) == 0 {
							fail("%s started off its claim: %v vs %v", st.Job, x.claim.Members, st.Allocation.Members)
						}
					}
				}
				for _, pc := range p.PodChanges {
					if j := a.jobs.byID[pc.For]; pc.For != "" && !started[pc.For] && (j == nil || j.claim == nil) {
						fail("pods of %s removed for %s, which neither started nor claimed them", pc.Job, pc.For)
					}
				}
				for _, pr := range p.Preemptions {
					vic, by := prev[pr.Victim], prev[pr.Preemptor]
					if vic.phase != StateRunning {
						fail("victim %s was %s", pr.Victim, vic.phase)
					}
					if len(queues) == 0 && (vic.class >= by.class || vic.pol == preempt.Never || now.Sub(vic.start) < a.cfg.Preemption.ExemptTime) {
						fail("victim %s (class %d, policy %v, started %v) for %s (class %d)", pr.Victim, vic.class, vic.pol, vic.start.Sub(epoch), pr.Preemptor, by.class)
					}
				}
				for _, st := range p.Starts {
					for _, r := range a.book.resv {
						if !r.start.After(now) && intersects(&st.Allocation, &r.alloc) {
							fail("%s started on the GPUs of due reservation %s", st.Job, r.job.job.ID)
						}
					}
				}
			}
			ob, eb := h.run(b, now)
			if v == 2 && h.kind == opSchedule && ea == nil && eb == nil {
				// A restored engine's first cycle lists every waiting job.
				norm := func(s string) string {
					var p Plan
					_ = json.Unmarshal([]byte(s), &p)
					p.Waiting, p.Unchanged = nil, 0
					out, _ := json.Marshal(&p)
					return string(out)
				}
				oa, ob = norm(oa), norm(ob)
			}
			if fmt.Sprint(ea) != fmt.Sprint(eb) || oa != ob {
				t.Fatalf("seed %d step %d %v: original and restored differ:\n%v %s\n%v %s\nlog %v", seed, i, h, ea, oa, eb, ob, log)
			}
			if ea == nil && h.kind == opPreempted {
				nrel++
			}
			if h.kind == opSchedule {
				var p Plan
				_ = json.Unmarshal([]byte(oa), &p)
				npre += len(p.Preemptions)
				for _, pc := range p.PodChanges {
					if pc.Kind == PodsRemoved {
						nshrink++
					}
				}
			}
			if ea != nil {
				if d := cmp.Diff(before, a.Snapshot()); d != "" {
					t.Fatalf("seed %d step %d %v refused but changed: %s", seed, i, h, d)
				}
				continue
			}
			// Repeat the call: it must be refused or change nothing.
			if h.kind != opSchedule && h.kind != opSubmit && h.kind != opCheckpointed && h.kind != opReplacePod && h.kind != opReleasePod {
				mid := a.Snapshot()
				if _, err := h.run(a, now); err == nil {
					if d := cmp.Diff(mid, a.Snapshot()); d != "" {
						t.Fatalf("seed %d step %d %v repeated: accepted and changed: %s", seed, i, h, d)
					}
				}
				_, _ = h.run(b, now)
			}
		}
	}
}
