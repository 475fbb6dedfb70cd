package backfill

import "testing"

// TestHoldLimitsRepeat replays, for each case in which a hold-mode walk
// with jobs under time limits changed what a test earlier in it saw, the
// workload of TestHoldRepeatProperty's limits variant where it was found
// (every third job under a limit), and checks that a second cycle at the
// same time changes nothing: NextEvent now asks for a cycle at once in
// each. Each row fails without its case (the reason or decision the
// second cycle changed is in the comment).
func TestHoldLimitsRepeat(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed uint64
	}{
		// j00's hold moves off node00007 in the walk, after upkeep kept
		// j01's reservation at 5h59m: a second cycle reserves it at once
		// on node00007 (reofferStaleResv).
		{"hold moved after upkeep", 18},
		// j02, reserved, starts with a limit in the walk after j14's
		// reservation was kept up: a second cycle plans j14, j00 and j03
		// earlier (reofferStaleResv).
		{"start with a limit after upkeep", 19},
		// j13 is reserved in the walk after j14, eligible, was left
		// without a hold for a planned start there: a second cycle gives
		// j14 a hold (coverPlanned from reserveAt).
		{"reservation over a planned start", 22},
		// j09 starts without a limit after j01, eligible, was left
		// without a hold for a planned start on its node: a second cycle
		// gives j01 a hold (startOnPlanned).
		{"start over a planned start", 26},
		// j11 and j04 are reserved in the walk after j13 was found to fit
		// once every job has ended: a second cycle tells it Resources
		// (resvChanged).
		{"reservation after an idle fit", 43},
		// j04 starts off its reservation in the walk after j10's target
		// search saw that reservation: a second cycle gives j10 a hold
		// (resvChanged).
		{"reservation let go after a target search", 63},
		// A reservation made in the walk takes the last slot after j06
		// was told nothing of the slots (one open to it): a second cycle
		// tells it SlotsTaken (resvChanged).
		{"last slot taken after a slot was open", 92},
		// j07, the first active job without a limit, starts in the walk
		// after j03 was passed over while hold mode could hold nothing: a
		// second cycle gives j03 a hold (startUnlimited).
		{"first job without a limit", 344},
		// j07, reserved and due, starts in the walk at 6h31m after j10
		// and j01 were told they would fit now but for its reservation:
		// a second cycle tells them Resources (startOnBlamed,
		// resvBlamed). No job without a limit was active before: j07's
		// start puts hold mode in play, so startOnBlamed reads
		// holdInPlay once j07 is active (before, this row failed).
		{"start after a reservation was blamed", 258},
		// j07's searches find no start with the holds of j09 and j04 in
		// its way (it is told ForHold, "its last hold spent its
		// budget"); j11, walked later, takes both holds over, on
		// another target: a second cycle finds j07 a planned start and
		// tells it Resources (holdLetGo from releaseHold).
		{"hold passed on after a search missed", 1286},
		// j01's reservation search finds no start with j00's hold on
		// node00004-00005; j00's hold moves to node00000-00001 later in
		// the walk: a second cycle reserves j01 due now on node00004
		// (its job is past its limit), and j05's rival changes from j12
		// to j00 (holdLetGo from retarget).
		{"hold moved after a search missed", 2166},
		// j09's searches find no start with j02's hold on
		// node00004-00006 in its way (it is told ForHold, "its last hold
		// spent its budget"); j02 starts there later in the walk, under a
		// limit: a second cycle finds j09 a planned start at j02's end
		// and tells it Resources (heldStarted).
		{"held gang started after a search missed", 3674},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, changesOnly := range []bool{false, true} {
				d := newRepeatDriver(t, tc.seed, changesOnly, true)
				if msg := d.run(); msg != "" {
					t.Fatalf("changes only %v: %s", changesOnly, msg)
				}
				if d.atOnce == 0 {
					t.Fatalf("changes only %v: no cycle at once in the workload", changesOnly)
				}
			}
		})
	}
}
