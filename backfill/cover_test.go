package backfill

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestCoverSkipsOnlyMisfits checks the profile cover against the profile
// itself. Conservative engines (every job reserved, so the book is full of
// reservations, kept, moved and slipped as the late host drives them) are
// driven through seeded workloads, with and without time limits and with
// down nodes; after every cycle, probe jobs of random shapes and limits
// are searched:
//   - at every candidate time the cover lets a search skip, the probe
//     rebuilt from scratch at that time (the naive reference) does not
//     admit the job: skipping never hides a fit;
//   - the search with the cover finds the same time and the same
//     placement as the search that walks every candidate time;
//   - the cover, incrementally extended by the cycle's reservations,
//     equals a fresh sweep (checkEach runs checkCover after every call).
//
// It fails if no time is ever skipped, so that it cannot pass vacuously.
func TestCoverSkipsOnlyMisfits(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	skipped, fits, searches, downs := 0, 0, 0, 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 5))
		c, err := topology.FatTree(topology.FatTreeConfig{Spines: 2, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.ReservationDepth = Conservative
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a", "b", "c"))
		if err != nil {
			t.Fatal(err)
		}
		e.coverMin, e.checkEach = 0, true
		jobs := randomWorkload(r, c, 60, true)
		for i := range jobs {
			if r.IntN(5) == 0 {
				jobs[i].TimeLimit = 0
			}
		}
		probes := randomWorkload(r, c, 12, true)
		for i := range probes {
			if r.IntN(4) == 0 {
				probes[i].TimeLimit = 0
			}
		}
		h := newHost(t, e, jobs, seed)
		h.afterCycle = func(p *Plan) {
			probe := func() {
				for i := range probes {
					s, f := coverAgainstProfile(t, e, p.Time, &probes[i])
					skipped, fits, searches = skipped+s, fits+f, searches+1
				}
			}
			probe()
			if seed%3 == 0 && h.cycles%5 == 0 {
				// An idle node no reservation plans on goes down (the
				// host would take a moved reservation for a broken
				// promise), at the time of the searches just made: its
				// GPUs leave the probe, not the count, and no state
				// cached by those searches may keep it up.
				for n := range topology.NodeID(c.NumNodes()) {
					if s := e.ledger.State(); s.Status(n) == topology.Up && s.FreeCount(n) == c.NodeGPUs(n) && !e.book.onNode(n) {
						if _, err := e.NodeDown(n, p.Time); err != nil {
							t.Fatal(err)
						}
						downs++
						probe()
						break
					}
				}
			}
		}
		h.run()
	}
	t.Logf("%d searches, %d candidate times skipped by the cover, %d fits, %d nodes down", searches, skipped, fits, downs)
	if skipped == 0 || fits == 0 || downs == 0 {
		t.Fatalf("the cover skipped %d candidate times, %d fitted, %d nodes went down: the test proves too little", skipped, fits, downs)
	}
}

// coverAgainstProfile checks one probe job at now (see
// TestCoverSkipsOnlyMisfits) and returns how many candidate times the
// cover skipped and at how many the job fits.
func coverAgainstProfile(t *testing.T, e *Engine, now time.Time, job *Job) (skipped, fits int) {
	t.Helper()
	j := &jobRec{job: *job}
	j.job.ID = "probe-" + job.ID
	j.job.Gang.ID = j.job.ID
	q := query{j: j, spec: &j.job.Gang}
	ts := e.prof.candidateTimes(e.cacheKey(now), &e.book)
	fit := make([]bool, len(ts))
	e.prof.naive = true
	for i, at := range ts {
		w := e.newWalker(now, q)
		w.advance(at)
		fit[i] = e.admitAt(q.spec)
	}
	e.prof.naive = false
	ts = e.prof.candidateTimes(e.cacheKey(now), &e.book)
	cv := e.coverFor(now, q)
	if cv == nil {
		t.Fatalf("no cover for a search at %v with %d reservations", now, len(e.book.resv))
	}
	need := q.spec.MinGPUs(e.c)
	for i := 0; i < len(ts); {
		k := cv.next(e.prof.offsets(), i, need, j.job.TimeLimit)
		for x := i; x < k; x++ {
			if fit[x] {
				t.Fatalf("%s (%d GPUs at least, limit %v) fits at %v but the cover skips it:\n%s", j.job.ID, need, j.job.TimeLimit, ts[x], e.coverString(now))
			}
			skipped++
		}
		if k < len(ts) && fit[k] {
			fits++
		}
		i = k + 1
	}
	at, found := e.search(now, q)
	var withCover gang.Allocation
	e.alloc.CopyTo(&withCover)
	e.coverMin = 1 << 30
	at2, found2 := e.search(now, q)
	e.coverMin = 0
	if at != at2 || found != found2 {
		t.Fatalf("%s: search with the cover gives (%v, %v), without (%v, %v)", j.job.ID, at, found, at2, found2)
	}
	if found {
		if d := cmp.Diff(withCover.Members, e.alloc.Members); d != "" {
			t.Fatalf("%s: placements differ with and without the cover (-with +without):\n%s", j.job.ID, d)
		}
	}
	return skipped, fits
}

// coverString describes the cover for a failure message.
func (e *Engine) coverString(now time.Time) string {
	cv := &e.prof.cover
	s := fmt.Sprintf("cover at %v (valid %v):", now, cv.valid)
	for i := range cv.at {
		s += fmt.Sprintf(" +%v:%d", cv.at[i], cv.used[i])
	}
	return s
}

// onNode reports whether a reservation, hold or claim has GPUs on node n.
func (b *book) onNode(n topology.NodeID) bool {
	for _, r := range b.resv {
		if r.alloc.OnNode(n) {
			return true
		}
	}
	for _, h := range b.holds {
		if h.target.OnNode(n) {
			return true
		}
	}
	for _, c := range b.claims {
		if c.alloc.OnNode(n) {
			return true
		}
	}
	return false
}

// TestReservedAfterPartialMerge: a search that stops early leaves the
// candidate times merged halfway (profile.timesUpTo); when it reserves,
// profile.reserved must not insert the reservation's end into that half
// list, whose place in the book's list of ends moved. Sixty-four one-GPU
// jobs of 1 to 64 hours fill the cluster; a one-GPU job of 19.5 hours is
// reserved from the first end (its search reads one time), and a 17-GPU
// job's search then needs the times up to the 17th end. The reservations
// must be the reference path's.
func TestReservedAfterPartialMerge(t *testing.T) {
	c, err := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	reservations := func(naive bool) []Reservation {
		cfg := DefaultConfig()
		cfg.ReservationDepth = 4
		cfg.ReservationMinGPUs = 0 // about the profile: any job takes any slot
		e, err := New(c, cfg, flatTree(t, cfg.FairShare, "a"))
		if err != nil {
			t.Fatal(err)
		}
		e.setNaive(naive)
		now := epoch
		submit := func(id string, r placement.Request, limit time.Duration) {
			t.Helper()
			j := Job{ID: id, Account: "a", TimeLimit: limit, Submit: now, Gang: gang.Spec{Members: []gang.Member{{Name: "m", Request: r}}}}
			if err := e.Submit(j, now); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= 64; i++ {
			submit(fmt.Sprintf("r%02d", i), placement.TotalGPUs(1), time.Duration(i)*time.Hour)
		}
		if p := scheduleStarted(t, e, now); len(p.Starts) != 64 {
			t.Fatalf("%d of 64 jobs started", len(p.Starts))
		}
		now = now.Add(time.Minute)
		submit("a", placement.TotalGPUs(1), 19*time.Hour+30*time.Minute)
		now = now.Add(time.Minute)
		submit("b", placement.TotalGPUs(17), time.Hour)
		return scheduleStarted(t, e, now).Reservations
	}
	got, want := reservations(false), reservations(true)
	if len(want) != 2 {
		t.Fatalf("the reference path made %d reservations, want a's and b's", len(want))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("reservations (-reference +cached):\n%s", d)
	}
}
