package backfill

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
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

// restoreBase is a true snapshot that FuzzRestoreCorrupt corrupts: taken
// mid-run on cluster c under config cfg, kept as JSON.
type restoreBase struct {
	name string
	c    *topology.Cluster
	cfg  Config
	snap []byte
}

// restoreBases takes true snapshots mid-run: from random operation
// sequences (at depths 1, 16 and conservative: the first snapshot with a
// hold, with a claim, with a reservation and the last of 300 steps) and
// from quota workloads with half the jobs unlimited (queues, reclaims,
// reservations, holds; every 25th cycle).
func restoreBases(t testing.TB) []restoreBase {
	var out []restoreBase
	add := func(name string, e *Engine) {
		data, err := json.Marshal(e.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, restoreBase{name: name, c: e.c, cfg: e.cfg, snap: data})
	}
	c := opsCluster(t)
	for i, depth := range []int{1, 16, Conservative} {
		r := rand.New(rand.NewPCG(uint64(i), 77))
		e := opsEngine(t, c, depth)
		var seen [3]bool
		for _, st := range randomSteps(r, c, 300) {
			e, _ = runSteps(t, e, []step{st})
			s := e.Snapshot()
			for k, has := range []bool{len(s.Holds) > 0, len(s.Claims) > 0, len(s.Reservations) > 0} {
				if has && !seen[k] {
					seen[k] = true
					add([]string{"ops with a hold", "ops with a claim", "ops with a reservation"}[k], e)
				}
			}
		}
		add("ops", e)
	}
	for _, w := range []int{3, 6, 9, 12} {
		r := rand.New(rand.NewPCG(uint64(w), 19))
		e, jobs, _ := quotaEngine(t, r, w, true)
		d := quotaPlanDriver(t, e, jobs, r)
		cycles := 0
		d.afterCycle = func(p *Plan) {
			for _, mv := range p.Moves {
				if mv.To.IsZero() {
					delete(d.planned, mv.Job) // dropped: a new one has a new first start
				}
			}
			if cycles++; cycles%25 == 0 {
				add("quota", e)
			}
		}
		d.run(time.Time{})
	}
	return out
}

// corrupter changes one thing at a time in a snapshot, chosen by fuzz
// bytes: a field set to a value of the kinds that break books (zero,
// negative, huge, NaN, another field's value of its type, a time moved
// or zeroed), a record dropped, repeated or swapped with another, a
// pointer cleared.
type corrupter struct {
	data    []byte
	strings []string
	times   []time.Time
	ints    []int64
}

// next returns the next fuzz byte (0 once they run out).
func (m *corrupter) next() int {
	if len(m.data) == 0 {
		return 0
	}
	b := m.data[0]
	m.data = m.data[1:]
	return int(b)
}

var timeType = reflect.TypeFor[time.Time]()

// slots lists v's settable parts: every leaf field, time, slice and
// non-nil pointer, depth first.
func slots(v reflect.Value, out []reflect.Value) []reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return out
		}
		return slots(v.Elem(), append(out, v))
	case reflect.Struct:
		if v.Type() == timeType {
			return append(out, v)
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = slots(v.Field(i), out)
			}
		}
		return out
	case reflect.Slice:
		out = append(out, v)
		for i := range v.Len() {
			out = slots(v.Index(i), out)
		}
		return out
	case reflect.Array:
		for i := range v.Len() {
			out = slots(v.Index(i), out)
		}
		return out
	case reflect.Map, reflect.Interface, reflect.Func, reflect.Chan:
		return out
	}
	return append(out, v)
}

// pools gathers the snapshot's own values, so that a corruption can put
// one record's value into another (a job's ID into a reservation, a node
// name into a pod, one time into another field).
func (m *corrupter) pools(s *Snapshot) {
	for _, v := range slots(reflect.ValueOf(s).Elem(), nil) {
		switch {
		case v.Type() == timeType:
			m.times = append(m.times, v.Interface().(time.Time))
		case v.Kind() == reflect.String:
			m.strings = append(m.strings, v.String())
		case v.CanInt():
			m.ints = append(m.ints, v.Int())
		}
	}
	m.strings = append(m.strings, "", "x", "-1h", "0s", "n999", "root")
}

// corrupt applies up to three corruptions to s.
func (m *corrupter) corrupt(s *Snapshot) {
	m.pools(s)
	for range 1 + m.next()%3 {
		all := slots(reflect.ValueOf(s).Elem(), nil)
		if len(all) == 0 {
			return
		}
		v := all[(m.next()<<8|m.next())%len(all)]
		m.change(v, m.next())
	}
}

// change corrupts slot v in the way op picks.
func (m *corrupter) change(v reflect.Value, op int) {
	pick := func(n int) int { return m.next() % max(n, 1) }
	switch {
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		var nt time.Time
		switch op % 6 {
		case 0:
			nt = time.Time{}
		case 1:
			nt = t.Add(time.Duration(m.next()-128) * time.Minute)
		case 2:
			nt = t.Add(-time.Nanosecond)
		case 3:
			nt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		case 4:
			nt = t.Add(time.Duration(m.next()) * time.Hour)
		default:
			if len(m.times) > 0 {
				nt = m.times[pick(len(m.times))]
			}
		}
		v.Set(reflect.ValueOf(nt))
	case v.Kind() == reflect.Pointer:
		v.Set(reflect.Zero(v.Type()))
	case v.Kind() == reflect.Slice:
		n := v.Len()
		switch {
		case op%4 == 0 || n == 0:
			v.Set(reflect.Zero(v.Type()))
		case op%4 == 1: // drop one
			i := pick(n)
			v.Set(reflect.AppendSlice(v.Slice(0, i), v.Slice(i+1, n)))
		case op%4 == 2: // repeat one
			i := pick(n)
			c := reflect.MakeSlice(v.Type(), 0, n+1)
			c = reflect.AppendSlice(c, v)
			v.Set(reflect.Append(c, v.Index(i)))
		default: // swap two
			i, j := pick(n), pick(n)
			a, b := v.Index(i).Interface(), v.Index(j).Interface()
			v.Index(i).Set(reflect.ValueOf(b))
			v.Index(j).Set(reflect.ValueOf(a))
		}
	case v.Kind() == reflect.String:
		if len(m.strings) > 0 {
			v.SetString(m.strings[pick(len(m.strings))])
		}
	case v.Kind() == reflect.Bool:
		v.SetBool(!v.Bool())
	case v.CanInt():
		x := v.Int()
		vals := []int64{0, 1, -1, x + 1, x - 1, 2 * x, 1 << 40, math.MaxInt64, math.MinInt64}
		if len(m.ints) > 0 {
			vals = append(vals, m.ints[pick(len(m.ints))])
		}
		v.SetInt(pickNumber(vals, op, x, v.OverflowInt))
	case v.CanUint():
		x := v.Uint()
		v.SetUint(pickNumber([]uint64{0, 1, x + 1, x - 1, math.MaxUint64, 1 << 63}, op, x, v.OverflowUint))
	case v.CanFloat():
		x := v.Float()
		vals := []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), 2 * x, -x, 1e300}
		v.SetFloat(vals[op%len(vals)])
	}
}

// pickNumber returns vals[op%len(vals)], or x^1 when that overflows the
// field (so that the field still changes).
func pickNumber[T int64 | uint64](vals []T, op int, x T, overflows func(T) bool) T {
	if nv := vals[op%len(vals)]; !overflows(nv) {
		return nv
	}
	return x ^ 1
}

// FuzzRestoreCorrupt: Restore trusts nothing it reads. A true mid-run
// snapshot (restoreBases) is corrupted in up to three places
// (corrupter); Restore must then either refuse it with an ErrRestore
// error, without a panic, or give an engine whose invariants hold, that
// snapshots and restores to the same bytes, and that then runs 40 random
// operations (cycles, starts, finishes, failures, cancels, node events)
// with every invariant checked after each and a refused one changing
// nothing.
//
//	go test ./backfill -run '^$' -fuzz FuzzRestoreCorrupt -fuzztime 5m -fuzzminimizetime 5s
//
// (The default minimisation time stalls the run for a minute at a time.)
func FuzzRestoreCorrupt(f *testing.F) {
	bases := restoreBases(f)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3 * len(bases) {
		seed := make([]byte, 48)
		for k := range seed {
			seed[k] = byte(r.IntN(256))
		}
		seed[0] = byte(i)
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		b := bases[int(data[0])%len(bases)]
		var snap Snapshot
		if err := json.Unmarshal(b.snap, &snap); err != nil {
			t.Fatal(err)
		}
		m := &corrupter{data: data[1:]}
		m.corrupt(&snap)
		e, err := Restore(b.c, b.cfg, &snap)
		if err != nil {
			if !errors.Is(err, ErrRestore) {
				t.Fatalf("%s: Restore refused with an error that is not ErrRestore: %v", b.name, err)
			}
			return
		}
		e.checkEach = true
		e = roundTrip(t, e)
		var ids, leaves []string
		for _, j := range e.Jobs() {
			ids = append(ids, j.ID)
		}
		for i, q := range b.cfg.Quotas.Queues {
			if e.quota.leaf[i] {
				leaves = append(leaves, q.Name)
			}
		}
		steps := make([]step, 0, 40)
		rs := rand.New(rand.NewPCG(uint64(len(data)), uint64(data[len(data)-1])))
		for range 40 {
			var sb [6]byte
			for k := range sb {
				sb[k] = byte(rs.IntN(256))
			}
			s := stepFrom(b.c, sb)
			if s.id != "" && len(ids) > 0 {
				s.id = ids[int(sb[2])%len(ids)]
			}
			if s.kind == opSubmit && len(leaves) > 0 {
				s.job.Queue = leaves[int(sb[3]^sb[4])%len(leaves)]
			}
			steps = append(steps, s)
		}
		runSteps(t, e, steps)
	})
}

// TestRestoreRefusesFuzzFindings: the snapshots FuzzRestoreCorrupt found
// accepted and then breaking the engine are refused: usage charged after
// the snapshot's time (the fair-share tree then refused every later
// cycle's clock, and the cycle panicked), and infinite GPU-seconds held
// or budgeted (the restored engine's snapshot no longer encoded as
// JSON), and a running job with an end time (once a node failure requeued
// it, the engine's own snapshot was refused: a waiting job with an end).
func TestRestoreRefusesFuzzFindings(t *testing.T) {
	bases := restoreBases(t)
	i := slices.IndexFunc(bases, func(b restoreBase) bool {
		var s Snapshot
		return json.Unmarshal(b.snap, &s) == nil && len(s.Holds) > 0 && len(s.Usage) > 0
	})
	if i < 0 {
		t.Fatal("no base snapshot has a hold and usage")
	}
	b := bases[i]
	tests := []struct {
		name    string
		corrupt func(s *Snapshot)
		msg     string
	}{
		{"none", func(*Snapshot) {}, ""},
		{"usage after the snapshot", func(s *Snapshot) { s.Usage[len(s.Usage)-1].At = s.Time.Add(time.Minute) }, "usage of account"},
		{"infinite GPU-seconds held", func(s *Snapshot) { s.HeldGPUSeconds = math.Inf(1) }, "held GPU-seconds +Inf out of range"},
		{"a hold that spent infinite GPU-seconds", func(s *Snapshot) { s.Holds[0].SpentGPUs = math.Inf(1) }, "has spent +Inf"},
		{"a hold with an infinite budget", func(s *Snapshot) { s.Holds[0].BudgetGPUs = math.Inf(1) }, "a budget of +Inf"},
		{"a running job with an end", func(s *Snapshot) {
			i := slices.IndexFunc(s.Jobs, func(j JobRecord) bool { return j.State == StateRunning })
			s.Jobs[i].Ended = s.Time
		}, "with a pending move or an end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Snapshot
			if err := json.Unmarshal(b.snap, &s); err != nil {
				t.Fatal(err)
			}
			tt.corrupt(&s)
			_, err := Restore(b.c, b.cfg, &s)
			switch {
			case tt.msg == "" && err != nil:
				t.Fatalf("the true snapshot: %v", err)
			case tt.msg != "" && (!errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), tt.msg)):
				t.Fatalf("Restore = %v; want ErrRestore mentioning %q", err, tt.msg)
			}
		})
	}
}

// reservedEngine is an engine of 8 nodes x 8 GPUs where "block" runs on
// every node until epoch+1h and "x" (2 pods of 4 GPUs, its request req)
// waits with a reservation at epoch+1h.
func reservedEngine(t *testing.T, req placement.Request) *Engine {
	t.Helper()
	c := opsCluster(t)
	cfg := DefaultConfig()
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	require.NoError(t, e.Submit(Job{ID: "block", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(8, 8))}, epoch))
	_, err = e.Schedule(epoch)
	require.NoError(t, err)
	require.NoError(t, e.Started("block", epoch))
	require.NoError(t, e.Submit(Job{ID: "x", Account: "a", TimeLimit: time.Hour, Gang: member(req)}, epoch.Add(time.Minute)))
	_, err = e.Schedule(epoch.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, e.book.resv, 1)
	return e
}

// TestRestoreRefusesUntrueRecords: the snapshots a read of Restore found
// accepted, each then breaking the engine (a later cycle panicked, the
// engine's own snapshot no longer encoded, decoded or restored, a job ran
// where its request forbids), are refused, naming the problem.
func TestRestoreRefusesUntrueRecords(t *testing.T) {
	year10000 := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	oneLeaf := placement.NodesOf(2, 4)
	oneLeaf.Required = "leaf"
	inLeaf0 := oneLeaf
	inLeaf0.Allowed = opsCluster(t).NewNodeSet()
	for n := range 4 {
		inLeaf0.Allowed.Set(uint(n))
	}
	holdBase := func(t *testing.T) (*topology.Cluster, Config, *Snapshot) {
		for _, b := range restoreBases(t) {
			var s Snapshot
			require.NoError(t, json.Unmarshal(b.snap, &s))
			if len(s.Holds) > 0 {
				return b.c, b.cfg, &s
			}
		}
		t.Fatal("no base snapshot has a hold")
		return nil, Config{}, nil
	}
	engine := func(e func(*testing.T) *Engine) func(*testing.T) (*topology.Cluster, Config, *Snapshot) {
		return func(t *testing.T) (*topology.Cluster, Config, *Snapshot) {
			x := e(t)
			return x.c, x.cfg, snapshotCopy(t, x.Snapshot())
		}
	}
	reserved := func(req placement.Request) func(*testing.T) (*topology.Cluster, Config, *Snapshot) {
		return engine(func(t *testing.T) *Engine { return reservedEngine(t, req) })
	}
	rich, preempting := engine(richEngine), engine(preemptingEngine)
	stepped := engine(func(t *testing.T) *Engine { // "el" runs 4 pods of a Step-2 member of 6
		x, err := New(opsCluster(t), DefaultConfig(), flatTree(t, DefaultConfig().FairShare, "a"))
		require.NoError(t, err)
		require.NoError(t, x.Submit(Job{ID: "blk", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(4, 8))}, epoch))
		require.NoError(t, x.Submit(Job{ID: "el", Account: "a", TimeLimit: 4 * time.Hour, Grow: true,
			Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: placement.NodesOf(6, 8), Min: 2, Step: 2}}}}, epoch))
		scheduleStarted(t, x, epoch)
		a, ok := x.Allocation("el")
		require.True(t, ok)
		require.Equal(t, 4, a.Members[0].Pods)
		return x
	})
	tests := []struct {
		name    string
		base    func(*testing.T) (*topology.Cluster, Config, *Snapshot)
		corrupt func(s *Snapshot)
		msg     string
	}{
		{"a reservation naming GPUs twice", reserved(placement.NodesOf(2, 4)), func(s *Snapshot) {
			m := &s.Reservations[0].Placement.Members[0]
			m.Pods[1] = m.Pods[0]
		}, "GPUs named by two pods"},
		{"a reservation with two pods of a member on a node", reserved(placement.NodesOf(2, 4)), func(s *Snapshot) {
			m := &s.Reservations[0].Placement.Members[0]
			m.Pods[1] = gang.PodRecord{Node: m.Pods[0].Node, GPUs: []int{7}}
		}, "two pods on node"},
		{"a claim naming GPUs twice", preempting, func(s *Snapshot) {
			m := &s.Claims[0].Placement.Members[0]
			m.Pods[1] = m.Pods[0]
		}, "GPUs named by two pods"},
		{"a reservation outside the allowed nodes", reserved(inLeaf0), func(s *Snapshot) {
			s.Reservations[0].Placement.Members[0].Pods[1].Node = "node00001"
			s.Reservations[0].Placement.Members[0].Pods[0].Node = "node00004"
		}, "a node its request does not allow"},
		{"a reservation across its required leaf", reserved(oneLeaf), func(s *Snapshot) {
			s.Reservations[0].Placement.Members[0].Pods[0].Node = "node00000"
			s.Reservations[0].Placement.Members[0].Pods[1].Node = "node00004"
		}, "pods in two leaf domains"},
		{"a running gang outside its allowed nodes", rich, func(s *Snapshot) {
			var others []string // every node but the gang's first
			for n := range 8 {
				if name := fmt.Sprintf("node%05d", n); name != s.Gangs[gangIndex(s, "run")].Members[0].Pods[0].Node {
					others = append(others, name)
				}
			}
			allowed := strings.Join(others, ",")
			s.Jobs[jobIndex(s, "run")].Gang.Members[0].Request.Allowed = &allowed
		}, "a node its request does not allow"},
		{"a claim across its required leaf", preempting, func(s *Snapshot) {
			s.Claims[0].Placement.Members[0].Pods[0] = s.Gangs[gangIndex(s, "c")].Members[0].Pods[0]
		}, "pods in two leaf domains"},
		{"a hold end of no known cause", rich, func(s *Snapshot) {
			s.HoldEnds = append(s.HoldEnds, HoldEnd{Job: "nobody", Cause: 0, Held: -3})
		}, "hold end 0"},
		{"a pod change in year 10000", rich, func(s *Snapshot) {
			s.PodChanges = append(s.PodChanges, PodChange{Job: "run", Kind: PodsRemoved, Time: year10000, Pods: []gang.Pod{{Member: "m", GPUs: 1}}})
		}, "pod change 0 time"},
		{"a pod change on GPUs the node lacks", rich, func(s *Snapshot) {
			s.PodChanges = append(s.PodChanges, PodChange{Job: "run", Kind: PodsAdded, Time: s.Time, Pods: []gang.Pod{{Member: "m", GPUs: 1 << 40}}})
		}, "pod change 0 (job \"run\", added): malformed"},
		{"a pending move from year 10000", rich, func(s *Snapshot) {
			s.Jobs[jobIndex(s, "big")].Moved = &Move{Job: "big", From: year10000, Cause: CauseNodeDown, By: "node00007"}
		}, "a bad pending move record"},
		{"a hold estimated to start in year 10000", holdBase, func(s *Snapshot) { s.Holds[0].EstimatedStart = year10000 }, "estimated start"},
		{"a last charge before the submit", rich, func(s *Snapshot) { s.Jobs[jobIndex(s, "run")].LastCharge = MinTime }, "with a start or a last charge before its submit"},
		{"a start before the submit", rich, func(s *Snapshot) {
			j := &s.Jobs[jobIndex(s, "run")]
			j.Start = j.Submit.Add(-time.Minute)
		}, "with a start or a last charge before its submit"},
		{"preemptions about to wrap", preempting, func(s *Snapshot) { s.Jobs[jobIndex(s, "d")].Preemptions = math.MaxInt }, "preemptions or"},
		{"negative requeues", rich, func(s *Snapshot) { s.Jobs[jobIndex(s, "run")].Requeues = -1 }, "-1 requeues"},
		{"a waiting job recabled", rich, func(s *Snapshot) { s.Jobs[jobIndex(s, "big")].Recabled = true }, "recabled but"},
		{"an elastic gang off its step", stepped, func(s *Snapshot) {
			m := &s.Gangs[gangIndex(s, "el")].Members[0]
			m.Pods = m.Pods[:3] // as a host that rebuilt the record from the pods it found would
		}, "in steps of 2"},
		{"run counts that wrap when added", rich, func(s *Snapshot) {
			counts := []uint32{math.MaxUint32, math.MaxUint32, 1}
			s.Runtimes = []RuntimeRecord{{Account: "a", Counts: counts}}
			s.AllRuntimes = RuntimeRecord{Counts: counts}
		}, "too many bins or runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cfg, s := tt.base(t)
			_, err := Restore(c, cfg, s)
			require.NoError(t, err, "the true snapshot")
			tt.corrupt(s)
			_, err = Restore(c, cfg, s)
			if !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Restore = %v; want ErrRestore mentioning %q", err, tt.msg)
			}
		})
	}
}

// TestRestoreOntoRecabledCluster: onto a cluster where a node was cabled
// into another leaf, a running gang that now spans two leaves although
// its job requires one is restored (it runs there), and runs on to its
// end; on the snapshot's own cluster the same gang across two leaves is
// refused.
func TestRestoreOntoRecabledCluster(t *testing.T) {
	before, after := recabled(t, 2, ""), recabled(t, 2, "l0-b")
	cfg := DefaultConfig()
	e, err := New(before, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	req := placement.NodesOf(2, 8)
	req.Required = "leaf"
	require.NoError(t, e.Submit(Job{ID: "r", Account: "a", TimeLimit: time.Hour, Gang: member(req)}, epoch))
	p, err := e.Schedule(epoch)
	require.NoError(t, err)
	require.Len(t, p.Starts, 1)
	require.NoError(t, e.Started("r", epoch))
	snap := snapshotCopy(t, e.Snapshot())
	require.Equal(t, "m=l0-a,l0-b", Hosts(before, &p.Starts[0].Allocation), "the gang's nodes")

	r, err := Restore(after, cfg, snapshotCopy(t, snap))
	require.NoError(t, err, "onto the recabled cluster")
	restoresAgain(t, r, after, cfg)
	require.NoError(t, r.Finished("r", epoch.Add(30*time.Minute)))

	across := snapshotCopy(t, snap)
	across.Gangs[gangIndex(across, "r")].Members[0].Pods[1].Node = "l1-a"
	_, err = Restore(before, cfg, across)
	if !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), "pods in two leaf domains") {
		t.Fatalf("a gang across its required leaf on the snapshot's cluster: %v", err)
	}
}

// restoresAgain checks that engine r, restored onto recabled cluster c
// with its job "r" running across what its request limits, marks the job
// recabled in its snapshots after a cycle, and that the snapshot restores
// on c itself (a review found it refused: on its own cluster the job was
// held to its request again).
func restoresAgain(t *testing.T, r *Engine, c *topology.Cluster, cfg Config) {
	t.Helper()
	_, err := r.Schedule(epoch.Add(time.Minute))
	require.NoError(t, err)
	again := snapshotCopy(t, r.Snapshot())
	require.True(t, again.Jobs[jobIndex(again, "r")].Recabled, "the job's record")
	back, err := Restore(c, cfg, again)
	require.NoError(t, err, "the restored engine's snapshot, on its own cluster")
	require.True(t, back.Snapshot().Jobs[jobIndex(again, "r")].Recabled, "after a second restore")
}

// recabled builds a cluster of leaves l0, l1, ... (n of them) of four
// 8-GPU nodes each (l0-a to l0-d, ...), with node moved cabled into l1.
func recabled(t *testing.T, n int, moved string) *topology.Cluster {
	spec := topology.ClusterSpec{Levels: []string{"leaf"}}
	for l := range n {
		leaf := fmt.Sprintf("l%d", l)
		for k := range 4 {
			name := leaf + "-" + string(rune('a'+k))
			path := leaf
			if name == moved {
				path = "l1"
			}
			spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: name, GPUs: 8, Path: []string{path}})
		}
	}
	c, err := topology.Build(spec)
	require.NoError(t, err)
	return c
}

// TestRestoreOntoRecabledClusterWhere is TestRestoreOntoRecabledCluster
// for a job's domain limit, segments and required co-location: onto the
// recabled cluster the gang that now breaks them is restored and runs to
// its end; on the snapshot's own cluster a record that breaks them is
// refused, naming what it breaks.
func TestRestoreOntoRecabledClusterWhere(t *testing.T) {
	before, after := recabled(t, 3, ""), recabled(t, 3, "l0-b")
	limited := placement.NodesOf(2, 8)
	limited.MaxDomains = 1
	segmented := placement.NodesOf(2, 8)
	segmented.SegmentSize = 2
	pair := gang.Spec{Colocate: gang.Colocation{Level: "leaf", Required: true}, Members: []gang.Member{
		{Name: "a", Request: placement.NodesOf(1, 8)}, {Name: "b", Request: placement.NodesOf(1, 8)}}}
	for _, tc := range []struct {
		name   string
		g      gang.Spec
		member int    // the member whose last pod the corrupt record moves
		hosts  string // where it runs
		msg    string
	}{
		{"one leaf at most", member(limited), 0, "m=l0-a,l0-b", "pods in 2 leaf domains, its request allows at most 1"},
		{"segments of two per leaf", member(segmented), 0, "m=l0-a,l0-b", "1 pods in leaf l0, not a whole number of its segments of 2"},
		{"co-located in a leaf", pair, 1, "a=l0-a b=l0-b", "member b has a pod in leaf l1, outside leaf l0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			e, err := New(before, cfg, flatTree(t, cfg.FairShare, "a"))
			require.NoError(t, err)
			require.NoError(t, e.Submit(Job{ID: "r", Account: "a", TimeLimit: time.Hour, Gang: tc.g}, epoch))
			p, err := e.Schedule(epoch)
			require.NoError(t, err)
			require.Len(t, p.Starts, 1)
			require.NoError(t, e.Started("r", epoch))
			snap := snapshotCopy(t, e.Snapshot())
			require.Equal(t, tc.hosts, Hosts(before, &p.Starts[0].Allocation), "the gang's nodes")

			r, err := Restore(after, cfg, snapshotCopy(t, snap))
			require.NoError(t, err, "onto the recabled cluster")
			restoresAgain(t, r, after, cfg)
			require.NoError(t, r.Finished("r", epoch.Add(30*time.Minute)))

			broken := snapshotCopy(t, snap)
			pods := broken.Gangs[gangIndex(broken, "r")].Members[tc.member].Pods
			pods[len(pods)-1].Node = "l1-a"
			_, err = Restore(before, cfg, broken)
			if !errors.Is(err, ErrRestore) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("a record that breaks it on the snapshot's cluster: %v; want %q", err, tc.msg)
			}
		})
	}
}

// TestRestoreAcceptsTrueEdgeSnapshots: the new checks refuse none of the
// engine's own snapshots at the edges a review found: a fresh engine whose
// fair-share tree came charged (its snapshot has no time), a hold whose
// estimated start lies past MaxTime (jobs started just before it, run
// times estimated after it), and a pending move from a reservation
// planned past MaxTime; and, found by a helper's probe, a reservation
// planned past MaxTime and a claim due past it (both were refused:
// "reservation start ... is outside [..., MaxTime)").
func TestRestoreAcceptsTrueEdgeSnapshots(t *testing.T) {
	c := opsCluster(t)
	restores := func(t *testing.T, e *Engine) {
		t.Helper()
		_, err := Restore(e.c, e.cfg, snapshotCopy(t, e.Snapshot()))
		require.NoError(t, err, "the engine's own snapshot")
	}
	t.Run("charged tree, fresh engine", func(t *testing.T) {
		cfg := DefaultConfig()
		tree := flatTree(t, cfg.FairShare, "a")
		require.NoError(t, tree.Charge("a", 3600, epoch))
		e, err := New(c, cfg, tree)
		require.NoError(t, err)
		require.True(t, e.Snapshot().Time.Equal(epoch), "a fresh engine's clock starts at its tree's latest charge")
		require.NotEmpty(t, e.Snapshot().Usage)
		restores(t, e)
		// Without a time (as written before New started the clock at
		// the tree's), the restored clock starts there too: a cycle
		// before it is refused, where it panicked reading the tree.
		s := snapshotCopy(t, e.Snapshot())
		s.Time = time.Time{}
		r, err := Restore(e.c, e.cfg, s)
		require.NoError(t, err)
		_, err = r.Schedule(epoch.Add(-time.Hour))
		require.ErrorIs(t, err, ErrTimeTravel)
	})
	t.Run("hold estimated past MaxTime", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Hold = HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 1, Budget: 4 * time.Hour, Hysteresis: 30 * time.Minute, MaxHolds: 1}
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
		require.NoError(t, err)
		now := MaxTime.Add(-30 * time.Minute)
		for i := range 8 {
			require.NoError(t, e.Submit(Job{ID: fmt.Sprintf("s%d", i), Account: "a", Gang: member(placement.NodesOf(1, 8))}, now))
		}
		p, err := e.Schedule(now)
		require.NoError(t, err)
		for _, st := range p.Starts {
			require.NoError(t, e.Started(st.Job, now))
		}
		require.NoError(t, e.Submit(Job{ID: "big", Account: "a", Gang: member(placement.NodesOf(4, 8))}, now.Add(time.Minute)))
		_, err = e.Schedule(now.Add(time.Minute))
		require.NoError(t, err)
		s := e.Snapshot()
		require.Len(t, s.Holds, 1)
		require.True(t, s.Holds[0].EstimatedStart.After(MaxTime), "estimated start %v", s.Holds[0].EstimatedStart)
		restores(t, e)
	})
	t.Run("move from past MaxTime", func(t *testing.T) {
		cfg := DefaultConfig()
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
		require.NoError(t, err)
		now := MaxTime.Add(-time.Hour)
		require.NoError(t, e.Submit(Job{ID: "blk", Account: "a", TimeLimit: 2 * time.Hour, Gang: member(placement.NodesOf(8, 8))}, now))
		_, err = e.Schedule(now)
		require.NoError(t, err)
		require.NoError(t, e.Started("blk", now))
		require.NoError(t, e.Submit(Job{ID: "w", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(2, 8))}, now))
		p, err := e.Schedule(now)
		require.NoError(t, err)
		require.Len(t, p.Reservations, 1)
		n := p.Reservations[0].Allocation.Members[0].Assignment[0].Node
		require.NoError(t, e.Drain(n, now.Add(time.Minute)))
		s := e.Snapshot()
		w := s.Jobs[jobIndex(s, "w")]
		require.NotNil(t, w.Moved)
		require.True(t, w.Moved.From.After(MaxTime), "moved from %v", w.Moved.From)
		restores(t, e)
	})
	t.Run("reservation past MaxTime", func(t *testing.T) {
		cfg := DefaultConfig()
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
		require.NoError(t, err)
		now := MaxTime.Add(-time.Hour)
		require.NoError(t, e.Submit(Job{ID: "busy", Account: "a", TimeLimit: 2 * time.Hour, Gang: member(placement.NodesOf(8, 8))}, now))
		_, err = e.Schedule(now)
		require.NoError(t, err)
		require.NoError(t, e.Started("busy", now))
		require.NoError(t, e.Submit(Job{ID: "big", Account: "b", TimeLimit: time.Hour, Gang: member(placement.NodesOf(8, 8))}, now))
		p, err := e.Schedule(now)
		require.NoError(t, err)
		require.Len(t, p.Reservations, 1)
		require.True(t, p.Reservations[0].Start.After(MaxTime), "planned at %v", p.Reservations[0].Start)
		restores(t, e)
	})
	t.Run("claim due past MaxTime", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Preemption.Enabled, cfg.Preemption.Grace = true, 10*time.Minute
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b"))
		require.NoError(t, err)
		now := MaxTime.Add(-time.Hour)
		low := Job{ID: "low", Account: "a", Preemption: preempt.Requeue, Gang: member(placement.NodesOf(8, 8))}
		require.NoError(t, e.Submit(low, now))
		_, err = e.Schedule(now)
		require.NoError(t, err)
		require.NoError(t, e.Started("low", now))
		now = MaxTime.Add(-time.Minute)
		require.NoError(t, e.Submit(Job{ID: "hi", Account: "b", Class: 2, Gang: member(placement.NodesOf(8, 8))}, now))
		p, err := e.Schedule(now)
		require.NoError(t, err)
		require.Len(t, p.Preemptions, 1, p.Describe(e.c, epoch))
		s := e.Snapshot()
		require.Len(t, s.Claims, 1)
		require.True(t, s.Claims[0].Due.After(MaxTime), "due at %v", s.Claims[0].Due)
		restores(t, e)
	})
}
