package backfill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-sched/phalanx/gang/preempt"
)

// TestClaimWatchSeesReclaimWithoutVictims: the property tests' oracle
// (claimWatch) excuses a reservation given up for quota when a claim
// under the queue where the drop binds was made since the reservation
// was (quotapromise.go: reclaims take quota to give a guarantee its
// GPUs). Five nodes; q (guarantee 16, borrowing limit 8: 24 at most)
// and o (guarantee 24, free to borrow) share them. A (q, node 0, 20h)
// runs; B (o, nodes 1-2, 10h) and L (o, nodes 3-4, elastic down to 1
// pod, 10h) take the rest, o borrowing 8 of q's guarantee. R (q, 2 of
// nodes 1-2, 1h) is reserved at B's end (10h), beside A: 24 GPUs, q's
// limit. C (q, class 1, node 4 only, 12h: its run overlaps R's) comes;
// within q's guarantee, it reclaims. When L grows (it lends its pod on
// node 4 to class 1; a start there would take R's room, which tryLent
// refuses), the claim takes that pod and preempts nobody; beside A and
// C, R has no room at its start and is given up for quota, blamed on q.
// Plan.Preemptions then names nobody: the oracle read claims only there
// and called the drop a broken promise (workload 84 of
// TestQuotaPropertiesLateHostElastic, once NextEvent asked for a cycle
// at once for a reservation opening lent pods: its course reached such
// a claim). It now sees the claim by the pods it took (a PodChange For
// C, which waits WaitPreempting). When L does not grow, the reclaim
// preempts L, as before. When C is of queue o, it starts on the lent
// pod (a PodChange For C too) and claims nothing: no claim is recorded,
// and R keeps its reservation.
func TestClaimWatchSeesReclaimWithoutVictims(t *testing.T) {
	for _, tc := range []struct {
		name      string
		grow      bool   // L lends its pod on node 4
		cQueue    string // C's queue
		victim    string // the claim's victim ("": none)
		claim     bool   // C claims (else it starts on the lent pod)
		dropsR    bool
		podChange bool // a PodChange For C
	}{
		{"lent pod: claim without victims", true, "q", "", true, true, true},
		{"nothing lent: claim preempts L", false, "q", "L", true, true, false},
		{"queue o: starts on the lent pod, no claim", true, "o", "", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, job, jobs := reclaimPromiseScene(t, 8, tc.grow)
			r := job("R", "q", 1, 3, 2, 0, preempt.Requeue, time.Hour)
			c := job("C", tc.cQueue, 4, 5, 1, 0, preempt.Requeue, 12*time.Hour)
			c.Class = 1
			cw := newClaimWatch(e, append(jobs, r, c))

			at := epoch.Add(time.Minute)
			require.NoError(t, e.Submit(r, at))
			p := startAll(t, e, at)
			require.Equal(t, map[string]time.Time{"R": epoch.Add(10 * time.Hour)}, reservedStarts(p), p.Describe(e.c, epoch))
			cw.observe(p)
			cw.forget(p)

			at = epoch.Add(2 * time.Minute)
			require.NoError(t, e.Submit(c, at))
			p = startAll(t, e, at)
			desc := p.Describe(e.c, epoch)
			cw.observe(p)
			var victims []string
			for _, x := range p.Preemptions {
				victims = append(victims, x.Victim)
			}
			if tc.victim == "" {
				require.Empty(t, victims, desc)
			} else {
				require.Equal(t, []string{tc.victim}, victims, desc)
			}
			if tc.claim {
				require.Empty(t, p.Starts, desc)
				require.NotNil(t, e.jobs.byID["C"].claim, desc)
				w := waitingOf(p, "C")
				require.Equal(t, WaitPreempting, w.Code, desc)
				require.Equal(t, tc.victim == "", w.Detail == "", "Detail names the victims, none without: %s", desc)
			} else {
				require.Len(t, p.Starts, 1, desc)
				require.Equal(t, "C", p.Starts[0].Job, desc)
			}
			forC := 0
			for _, pc := range p.PodChanges {
				if pc.For == "C" {
					forC++
				}
			}
			require.Equal(t, tc.podChange, forC > 0, desc)
			var drops []Move
			for _, m := range p.Moves {
				if m.Cause == CauseQuota {
					drops = append(drops, m)
				}
			}
			if !tc.dropsR {
				require.Empty(t, drops, desc)
				require.Equal(t, map[string]time.Time{"R": epoch.Add(10 * time.Hour)}, reservedStarts(p), desc)
				require.Empty(t, cw.claims, "no claim made: %s", desc)
				return
			}
			require.Len(t, drops, 1, desc)
			require.Equal(t, Move{Job: "R", From: epoch.Add(10 * time.Hour), Cause: CauseQuota, By: "q"}, drops[0], desc)
			_, documented := documentedQuotaDrop(p, drops[0])
			require.False(t, documented, "the drop is excused by the claim alone: %s", desc)
			require.True(t, cw.excused(p, drops[0]), "C's claim under q, made since R was reserved, excuses the drop: %s", desc)
		})
	}
}
