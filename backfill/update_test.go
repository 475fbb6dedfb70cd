package backfill

import (
	"testing"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// updateCluster is 2 leaves of 2 nodes of 8 GPUs: n0 n1 | n2 n3 (by
// index; names are the generator's).
func updateCluster(t testing.TB) *topology.Cluster {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 2, GPUsPerNode: 8})
	require.NoError(t, err)
	return c
}

// updateEngine returns an engine on c at depth 4, with hold mode as
// given (nil: off), checking every invariant after every call.
func updateEngine(t testing.TB, c *topology.Cluster, hold *HoldConfig) *Engine {
	cfg := DefaultConfig()
	cfg.ReservationDepth = 4
	cfg.ReservationMinGPUs = 0
	if hold != nil {
		cfg.Hold = *hold
	}
	e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
	require.NoError(t, err)
	e.checkEach = true
	return e
}

func mins(m int) time.Time { return epoch.Add(time.Duration(m) * time.Minute) }

// nodeSet returns the set of nodes idx of c.
func nodeSet(c *topology.Cluster, idx ...int) *bitset.BitSet {
	s := c.NewNodeSet()
	for _, n := range idx {
		s.Set(uint(n))
	}
	return s
}

// onNodesOf reports the node indices of a placement.
func nodesOfPlacement(a interface{ OnNode(topology.NodeID) bool }, c *topology.Cluster) []int {
	var out []int
	for n := range c.NumNodes() {
		if a.OnNode(topology.NodeID(n)) {
			out = append(out, n)
		}
	}
	return out
}

// withSets returns job id's spec (JobSpec) with its first member's node
// sets replaced.
func withSets(t testing.TB, e *Engine, id string, allowed, excluded *bitset.BitSet) Job {
	j, ok := e.JobSpec(id)
	require.True(t, ok, id)
	r := &j.Gang.Members[0].Request
	r.Allowed, r.Excluded, r.AllowedLabel = allowed, excluded, ""
	return j
}

// reservationOf returns job id's reservation in p.
func reservationOf(p *Plan, id string) (Reservation, bool) {
	for _, r := range p.Reservations {
		if r.Job == id {
			return r, true
		}
	}
	return Reservation{}, false
}

// TestUpdateReservation: w, two nodes of 8 GPUs, waits behind four jobs
// with limits (n0 and n2 free at 60 minutes, n1 and n3 at 120) and holds
// a reservation at 60 minutes. Updated at 10 minutes:
//   - off a node its reservation does not use, it keeps the same start
//     and GPUs, and no move is reported;
//   - off a node its reservation uses, the reservation is dropped and the
//     next cycle reserves it again at 120 minutes off that node, reported
//     as a move with CauseUpdated;
//
// and the engine as updated restores from its snapshot to the same
// bytes, and the restored engine plans as the original does.
func TestUpdateReservation(t *testing.T) {
	c := updateCluster(t)
	scene := func(t *testing.T) (*Engine, Reservation) {
		e := updateEngine(t, c, nil)
		for i, lim := range []int{60, 120, 60, 120} {
			id := "r" + string(rune('0'+i))
			require.NoError(t, e.Submit(Job{ID: id, Account: "a", TimeLimit: time.Duration(lim) * time.Minute,
				Gang: member(onNodes(c, placement.NodesOf(1, 8), i))}, mins(0)))
		}
		require.Len(t, startAll(t, e, mins(0)).Starts, 4)
		require.NoError(t, e.Submit(Job{ID: "w", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(2, 8))}, mins(1)))
		p := startAll(t, e, mins(1))
		r, ok := reservationOf(p, "w")
		require.True(t, ok, p.Describe(c, epoch))
		require.Equal(t, mins(60), r.Start, p.Describe(c, epoch))
		require.Equal(t, []int{0, 2}, nodesOfPlacement(&r.Allocation, c), p.Describe(c, epoch))
		return e, r
	}
	tests := []struct {
		name     string
		excluded int
		kept     bool
		start    int // minutes
	}{
		{name: "still allowed", excluded: 1, kept: true, start: 60},
		{name: "no longer allowed", excluded: 0, start: 120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, r := scene(t)
			require.NoError(t, e.Update(withSets(t, e, "w", nil, nodeSet(c, tt.excluded)), mins(10)))
			st, _ := e.Job("w")
			if tt.kept {
				require.Equal(t, StateReserved, st.State)
			} else {
				require.Equal(t, StatePending, st.State, "its reservation is dropped at once")
			}
			next, ok := e.NextEvent()
			require.True(t, ok)
			require.Equal(t, mins(10).Add(time.Nanosecond), next, "a cycle at once")
			restored := roundTrip(t, e)
			p := startAll(t, e, mins(11))
			desc := p.Describe(c, epoch)
			got, ok := reservationOf(p, "w")
			require.True(t, ok, desc)
			require.Equal(t, mins(tt.start), got.Start, desc)
			require.False(t, got.Allocation.OnNode(topology.NodeID(tt.excluded)), desc)
			if tt.kept {
				require.Equal(t, r.Allocation, got.Allocation, desc)
				require.Equal(t, r.FirstStart, got.FirstStart, desc)
				require.Empty(t, p.Moves, desc)
			} else {
				require.Equal(t, []Move{{Job: "w", From: mins(60), To: mins(120), Cause: CauseUpdated}}, p.Moves, desc)
			}
			require.Equal(t, p, startAll(t, restored, mins(11)), "the restored engine plans as the original")
			spec, _ := e.JobSpec("w")
			require.True(t, spec.Gang.Members[0].Request.Excluded.Test(uint(tt.excluded)))
			require.Equal(t, mins(1), spec.Submit)
		})
	}
}

// TestUpdateWidenStartsAtOnce: w may use n0 only, where a job runs; n3
// is free. Widened to every node it is due a cycle at once
// (NextEvent), which starts it on n3; narrowed to n1 (free too) it
// starts there.
func TestUpdateWidenStartsAtOnce(t *testing.T) {
	c := updateCluster(t)
	tests := []struct {
		name    string
		allowed *bitset.BitSet
		node    int
	}{
		{name: "every node", allowed: nil, node: 1},
		{name: "n3 only", allowed: nodeSet(c, 3), node: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := updateEngine(t, c, nil)
			require.NoError(t, e.Submit(Job{ID: "busy", Account: "a", TimeLimit: time.Hour, Gang: member(onNodes(c, placement.NodesOf(1, 8), 0))}, mins(0)))
			require.Len(t, startAll(t, e, mins(0)).Starts, 1)
			require.NoError(t, e.Submit(Job{ID: "w", Account: "a", TimeLimit: time.Hour, Gang: member(onNodes(c, placement.NodesOf(1, 8), 0))}, mins(1)))
			p := startAll(t, e, mins(1))
			require.Empty(t, p.Starts, p.Describe(c, epoch))
			next, _ := e.NextEvent()
			require.Equal(t, mins(60), next, "w's reservation")
			require.NoError(t, e.Update(withSets(t, e, "w", tt.allowed, nil), mins(2)))
			next, _ = e.NextEvent()
			require.Equal(t, mins(2).Add(time.Nanosecond), next)
			p = startAll(t, e, next)
			require.Len(t, p.Starts, 1, p.Describe(c, epoch))
			require.Equal(t, "w", p.Starts[0].Job)
			require.Equal(t, []int{tt.node}, nodesOfPlacement(&p.Starts[0].Allocation, c), p.Describe(c, epoch))
		})
	}
}

// TestUpdateHold: in hold mode, g (two nodes of 8 GPUs) waits while jobs
// without a limit run half of n0 and n1 and all of n2 and n3 (n3's job
// started 5 minutes after the others: estimated to end 5 minutes later);
// its hold targets n0 and n1 and holds their 8 free GPUs. Updated at 20
// minutes:
//   - off n2 (not in its target), the hold is kept as it was;
//   - off n0 (in its target), the hold moves at once to n1 and n2, where
//     g is now estimated to fit soonest: it keeps its start and the
//     GPU-seconds spent (charged for n0 and n1 up to the update), holds
//     the 4 free GPUs of n1 it held, at once (charged from the update
//     on), and lets n0's go; no hold end is reported.
//
// Both restore from their snapshots to the same bytes and plan as the
// original.
func TestUpdateHold(t *testing.T) {
	c := updateCluster(t)
	hc := &HoldConfig{Enabled: true, MinGPUs: 16, MaxShare: 1, Budget: 10 * time.Hour, Hysteresis: 20 * time.Minute, MaxHolds: 1}
	scene := func(t *testing.T) (*Engine, HoldStatus) {
		e := updateEngine(t, c, hc)
		for i, g := range []int{4, 4, 8, 8} {
			id := "r" + string(rune('0'+i))
			at := mins(0)
			if i == 3 {
				at = mins(5) // estimated to end 5 minutes after the others
			}
			require.NoError(t, e.Submit(Job{ID: id, Account: "a", Gang: member(onNodes(c, placement.NodesOf(1, g), i))}, at))
			require.Len(t, startAll(t, e, at).Starts, 1)
		}
		require.NoError(t, e.Submit(Job{ID: "g", Account: "a", Gang: member(placement.NodesOf(2, 8))}, mins(6)))
		p := startAll(t, e, mins(6))
		require.Len(t, p.Holds, 1, p.Describe(c, epoch))
		p = startAll(t, e, mins(10))
		require.Len(t, p.Holds, 1, p.Describe(c, epoch))
		h := p.Holds[0]
		require.Equal(t, 8, h.GPUs, p.Describe(c, epoch))
		require.Equal(t, mins(6), h.Since)
		return e, h
	}
	tests := []struct {
		name     string
		excluded int
		keep     int     // a node the hold's target keeps
		gone     int     // a node it no longer has
		held     int     // GPUs held at the next cycle
		minutes  float64 // of 8 GPUs held, charged by the next cycle
	}{
		// Held 8 GPUs from 6 to 21 minutes.
		{name: "target still allowed", excluded: 2, keep: 0, gone: 2, held: 8, minutes: 15},
		// Held 8 GPUs to the update at 20 minutes, then the 4 of n1 it
		// keeps (held at once) to 21: 14 minutes and a half of 8 GPUs.
		{name: "target node no longer allowed", excluded: 0, keep: 1, gone: 0, held: 4, minutes: 14.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, before := scene(t)
			require.NoError(t, e.Update(withSets(t, e, "g", nil, nodeSet(c, tt.excluded)), mins(20)))
			st, _ := e.Job("g")
			require.Equal(t, StateHeld, st.State)
			restored := roundTrip(t, e)
			p := startAll(t, e, mins(21))
			desc := p.Describe(c, epoch)
			require.Empty(t, p.HoldEnds, desc)
			require.Len(t, p.Holds, 1, desc)
			h := p.Holds[0]
			require.Equal(t, mins(6), h.Since, desc)
			require.Equal(t, tt.held, h.GPUs, desc)
			target := &e.book.holdOf(e.jobs.byID["g"]).target
			require.True(t, target.OnNode(topology.NodeID(tt.keep)), desc)
			require.False(t, target.OnNode(topology.NodeID(tt.gone)), desc)
			require.InDelta(t, 8*tt.minutes/60, h.SpentGPUHours, 1e-9, desc)
			require.InDelta(t, before.BudgetGPUHours, h.BudgetGPUHours, 1e-9, desc)
			require.Equal(t, p, startAll(t, restored, mins(21)), "the restored engine plans as the original")
		})
	}
}

// TestUpdateRefused: refused updates name the job or field and change
// nothing (the snapshot before and after are equal, the clock
// included).
func TestUpdateRefused(t *testing.T) {
	c := updateCluster(t)
	e := updateEngine(t, c, nil)
	require.NoError(t, e.Submit(Job{ID: "run", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}, mins(0)))
	require.Len(t, startAll(t, e, mins(0)).Starts, 1)
	require.NoError(t, e.Submit(Job{ID: "w", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(4, 8))}, mins(1)))
	startAll(t, e, mins(1))
	spec := func(f func(j *Job)) Job {
		j, _ := e.JobSpec("w")
		f(&j)
		return j
	}
	tests := []struct {
		name string
		job  Job
		at   time.Time
		err  error
		says string
	}{
		{name: "unknown job", job: Job{ID: "nope"}, at: mins(2), err: ErrUnknownJob, says: "nope"},
		{name: "running job", job: spec(func(j *Job) { *j, _ = e.JobSpec("run") }), at: mins(2), err: ErrTransition, says: "job run is running"},
		{name: "time limit", job: spec(func(j *Job) { j.TimeLimit = 2 * time.Hour }), at: mins(2), err: ErrUpdateField, says: "TimeLimit"},
		{name: "account", job: spec(func(j *Job) { j.Account = "b" }), at: mins(2), err: ErrUpdateField, says: "Account"},
		{name: "submit time", job: spec(func(j *Job) { j.Submit = mins(0) }), at: mins(2), err: ErrUpdateField, says: "Submit"},
		{name: "nodes asked", job: spec(func(j *Job) { j.Gang.Members[0].Request.Nodes = 3 }), at: mins(2), err: ErrUpdateField, says: "member m: Request"},
		{name: "required level", job: spec(func(j *Job) { j.Gang.Members[0].Request.Required = "leaf" }), at: mins(2), err: ErrUpdateField, says: "Request"},
		{name: "never fits", job: spec(func(j *Job) { j.Gang.Members[0].Request.Excluded = nodeSet(c, 0) }), at: mins(2), err: ErrNeverFits, says: "job w"},
		{name: "node set too long", job: spec(func(j *Job) { j.Gang.Members[0].Request.Allowed = nodeSet(c, 9) }), at: mins(2), err: ErrBadJob, says: "job w"},
		{name: "time travel", job: spec(func(j *Job) { j.Gang.Members[0].Request.Excluded = nil }), at: mins(0), err: ErrTimeTravel, says: "Update"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.Snapshot()
			err := e.Update(tt.job, tt.at)
			require.ErrorIs(t, err, tt.err)
			require.Contains(t, err.Error(), tt.says)
			if d := cmp.Diff(before, e.Snapshot()); d != "" {
				t.Fatalf("refused, but changed the engine:\n%s", d)
			}
			require.NoError(t, e.check())
		})
	}
}

// TestUpdateReservationMovesEarlier: w (one node of 8 GPUs, n0 only)
// holds a reservation at 60 minutes on n0; n1 frees at 30. Widened to n0
// and n1, its reservation, still allowed, is kept, and the next cycle
// searches it again whole: it moves to 30 minutes on n1, where a job
// submitted with those sets is reserved. (Nothing was freed since its
// last search: without the search asked for, it stayed at 60 minutes.)
func TestUpdateReservationMovesEarlier(t *testing.T) {
	c := updateCluster(t)
	build := func(sets *bitset.BitSet) *Engine {
		e := updateEngine(t, c, nil)
		for i, lim := range []int{60, 30, 90, 90} {
			require.NoError(t, e.Submit(Job{ID: "r" + string(rune('0'+i)), Account: "a", TimeLimit: time.Duration(lim) * time.Minute,
				Gang: member(onNodes(c, placement.NodesOf(1, 8), i))}, mins(0)))
		}
		require.Len(t, startAll(t, e, mins(0)).Starts, 4)
		w := Job{ID: "w", Account: "a", TimeLimit: time.Hour, Gang: member(placement.NodesOf(1, 8))}
		w.Gang.Members[0].Request.Allowed = sets
		require.NoError(t, e.Submit(w, mins(1)))
		startAll(t, e, mins(1))
		return e
	}
	e, fresh := build(nodeSet(c, 0)), build(nodeSet(c, 0, 1))
	st, _ := e.Job("w")
	require.Equal(t, mins(60), st.PlannedStart)
	require.NoError(t, e.Update(withSets(t, e, "w", nodeSet(c, 0, 1), nil), mins(5)))
	p, want := startAll(t, e, mins(6)), startAll(t, fresh, mins(6))
	desc := p.Describe(c, epoch)
	got, ok := reservationOf(p, "w")
	require.True(t, ok, desc)
	exp, _ := reservationOf(want, "w")
	require.Equal(t, mins(30), got.Start, desc)
	require.Equal(t, exp.Start, got.Start, desc)
	require.Equal(t, exp.Allocation, got.Allocation, desc)
	require.Empty(t, p.Moves, "moved earlier: no move reported")
}
