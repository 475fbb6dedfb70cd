package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/phalanx-sched/phalanx/backfill"
	"github.com/phalanx-sched/phalanx/topology"
)

// heldGang is what the test reads of group ns/g's gang: its job, the
// allowed nodes submitted for shape (the plugin's record, and the
// engine's: JobSpec's member shape), whether the engine admitted it, the
// engine's status of the job and its hold (ok false without one).
type heldGang struct {
	job      string
	admitted bool
	allowed  []string
	engine   []string
	status   backfill.JobStatus
	hold     backfill.HoldRecord
	ok       bool
}

// readHeld reads group ns/g's gang (job "" when it has none) and the
// engine's view of it.
func readHeld(h *hookEnv, shape string) heldGang {
	h.c.mu.Lock()
	g := h.c.groups["ns/g"]
	var s heldGang
	if g.inc != nil {
		s.job, s.admitted, s.allowed = g.inc.job, g.inc.admitted, slices.Clone(g.inc.allowed[shape])
	}
	h.c.mu.Unlock()
	if s.job == "" {
		return s
	}
	s.status, _ = h.c.eng.eng.Job(s.job)
	if j, ok := h.c.eng.eng.JobSpec(s.job); ok {
		for _, m := range j.Gang.Members {
			if m.Name != shape {
				continue
			}
			s.engine = []string{}
			for id := range h.c.eng.cluster.NumNodes() {
				if m.Request.Allowed == nil || m.Request.Allowed.Test(uint(id)) {
					s.engine = append(s.engine, h.c.eng.cluster.NodeName(topology.NodeID(id)))
				}
			}
		}
	}
	for _, r := range h.c.eng.eng.Snapshot().Holds {
		if r.Job == s.job {
			s.hold, s.ok = r, true
		}
	}
	return s
}

// keptHold reports whether after is still the hold of before: the same
// job, waiting held, its hold made at the same time (its GPU-seconds and
// budget running on). The GPUs it holds may differ: a hold whose target
// the new sets leave out moves to another (Engine.Update).
func keptHold(before, after heldGang) bool {
	return after.ok && after.job == before.job && !after.admitted &&
		after.status.State == backfill.StateHeld && after.hold.Since.Equal(before.hold.Since)
}

// holdNodes returns the nodes of hold r's target.
func holdNodes(r backfill.HoldRecord) []string {
	var out []string
	for _, m := range r.Target.Members {
		for _, p := range m.Pods {
			out = append(out, p.Node)
		}
	}
	return out
}

// hasPlan reports whether the engine has a plan for waiting job id that
// withdrawing it (Cancel, then Submit again) would throw away: a hold
// (backfill.StateHeld), a reservation (backfill.StateReserved, a planned
// start), or GPUs claimed for it (backfill.WaitPreempting). A job that
// merely waits for a hold (WaitForHold) has none.
func hasPlan(h *hookEnv, id string) bool {
	st, ok := h.c.eng.eng.Job(id)
	if !ok {
		return false
	}
	switch st.State {
	case backfill.StateHeld, backfill.StateReserved:
		return true
	}
	return st.State.Waiting() && (st.Code == backfill.WaitPreempting || !st.PlannedStart.IsZero())
}

// TestHeldGangLeavesChangedNode: a node change took the changed node out
// of the allowed sets at once only for waiting gangs the engine had no
// plan for (they were withdrawn and submitted again without it); a gang
// the engine held GPUs for kept its submitted sets until the measurement
// landed, so that GPUs freed meanwhile let the engine admit it onto the
// changed node, which the Filter plugins may now reject (its pod fails
// Filter there, the gang is torn down); and a measurement with another
// result withdrew it and submitted it again, its hold dropped. (This test
// asserted that older behaviour, as TestHeldGangKeepsChangedNode: the
// held gang kept its sets until the measurement.) Now the plugin changes
// the waiting gang's sets in place (Engine.Update): the held gang (its
// pods past hold mode's MinWait, as groupPod makes them) loses the node
// at once and keeps its job and its hold (moved off the node: Update),
// n002 freed meanwhile does not get it admitted onto n001; the
// measurement puts n001 back in the same job, still held, when it still
// passes (and the gang is then admitted there), or leaves it out.
func TestHeldGangLeavesChangedNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(n *v1.Node)
		passes bool // the Filter plugins still accept n001 after the change
	}{
		{name: "relabelled, still accepted", change: func(n *v1.Node) { n.Labels["example.com/pool"] = "blue" }, passes: true},
		{name: "tainted, rejected", change: func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, nodes, pods, shape, submits, before := heldGangScene(t)
			if !slices.Contains(before.engine, "n001") || !slices.Contains(holdNodes(before.hold), "n001") {
				t.Fatalf("the held gang %s may not use n001, or holds no GPUs there: allowed %v, hold on %s", before.job, before.engine, before.status.Nodes)
			}
			// n001 changes, and n002 frees up, before the scout sent for
			// the change has measured: on its old sets the gang fits
			// n000, n001, n002.
			changed := nodes[1].DeepCopy()
			tc.change(changed)
			h.c.onNode(changed, false)
			h.c.podHandlers().DeleteFunc(foreignPod("fill-n002", "n002", 8))
			h.cycle()
			scout := scoutOf(h, "ns/g")
			if scout == "" {
				t.Fatal("no scout sent to measure the shape again after n001 changed")
			}
			after := readHeld(h, shape)
			h.c.mu.Lock()
			resubmitted := h.c.stats.Submits - submits
			h.c.mu.Unlock()
			want := []string{"n000", "n002", "n003"}
			for _, p := range pods {
				if s := admittedOn(h, p); s == "n001" {
					t.Fatalf("pod %s admitted on n001 before the shape was measured again after n001 changed (job %s)", p.Name, after.job)
				}
			}
			switch {
			case after.job != before.job || resubmitted > 0:
				t.Fatalf("the held gang %s was withdrawn and submitted again (%d submits) as %q after n001 changed: %s %s",
					before.job, resubmitted, after.job, after.status.State, after.status.Reason)
			case !keptHold(before, after):
				t.Fatalf("the held gang %s lost its hold after n001 changed: before held since %v; after admitted %v, %s (hold: %v) since %v: %s",
					before.job, before.hold.Since, after.admitted, after.status.State, after.ok, after.hold.Since, after.status.Reason)
			case !slices.Equal(after.allowed, want) || !slices.Equal(after.engine, want):
				t.Fatalf("the held gang's allowed nodes after n001 changed: %v submitted, %v in the engine; want %v", after.allowed, after.engine, want)
			case slices.Contains(holdNodes(after.hold), "n001"):
				t.Fatalf("the held gang's hold still targets n001 after n001 left its sets: %s", after.status.Nodes)
			}

			// The measurement lands on a snapshot with the change.
			snap := slices.Clone(nodes)
			snap[1] = changed
			fits := map[string]bool{"n000": true, "n001": tc.passes, "n002": true, "n003": true}
			h.p.h = &probeHandle{nodes: snap, fits: fits}
			h.measureAs(t, podsByName(pods)[scout])
			h.cycle()
			after = readHeld(h, shape)
			h.c.mu.Lock()
			resubmitted = h.c.stats.Submits - submits
			h.c.mu.Unlock()
			if after.job != before.job || resubmitted > 0 {
				t.Fatalf("the gang %s was submitted again (%d submits) as %q once n001 was measured: %s %s",
					before.job, resubmitted, after.job, after.status.State, after.status.Reason)
			}
			var slots []string
			for _, p := range pods {
				slots = append(slots, admittedOn(h, p))
			}
			slices.Sort(slots)
			if tc.passes {
				// n001 is back: the gang fits n000, n001, n002 and starts.
				if !after.admitted || !slices.Equal(slots, []string{"n000", "n001", "n002"}) {
					t.Fatalf("the gang %s is not admitted on n000 n001 n002 once n001 was measured as still accepted: admitted %v, pods on %v, %s %s",
						after.job, after.admitted, slots, after.status.State, after.status.Reason)
				}
			} else {
				switch {
				case !keptHold(before, after):
					t.Fatalf("the held gang %s lost its hold once n001 was measured as rejected: admitted %v on %v, %s (hold: %v) since %v: %s",
						before.job, after.admitted, slots, after.status.State, after.ok, after.hold.Since, after.status.Reason)
				case !slices.Equal(after.allowed, want) || !slices.Equal(after.engine, want):
					t.Fatalf("the gang's allowed nodes once n001 was measured as rejected: %v submitted, %v in the engine; want %v", after.allowed, after.engine, want)
				}
			}
			checkBooks(t, h)
		})
	}
}

// TestHeldGangMeasuredAgainOtherResult: a held gang's shape measured
// again after Args.AllowedTTLSeconds with another result (the other
// Filter plugins now reject a node of its sets, no node having changed)
// was withdrawn and submitted again with the new sets: a new job, its hold
// dropped (the GPUs it held back to other jobs, its budget afresh). Now its
// sets change in place (Engine.Update): the same job, still held since the
// same time; a hold whose target the new sets still allow is kept as it
// was (the same GPUs held), one whose target they do not moves off the
// rejected node.
func TestHeldGangMeasuredAgainOtherResult(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rejected string
		want     []string
	}{
		{name: "a node outside the hold's target rejected", rejected: "n003", want: []string{"n000", "n001", "n002"}},
		{name: "a node of the hold's target rejected", rejected: "n000", want: []string{"n001", "n002", "n003"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, nodes, pods, shape, submits, before := heldGangScene(t)
			inTarget := slices.Contains(holdNodes(before.hold), tc.rejected)
			if want := tc.rejected == "n000"; inTarget != want {
				t.Fatalf("the hold of %s targets %v: want %s in it %v", before.job, holdNodes(before.hold), tc.rejected, want)
			}
			h.now = h.now.Add(h.c.args.allowedTTL())
			h.cycle()
			scout := scoutOf(h, "ns/g")
			if scout == "" {
				t.Fatal("no scout sent to measure the shape again after the TTL")
			}
			fits := map[string]bool{"n000": true, "n001": true, "n002": true, "n003": true}
			fits[tc.rejected] = false
			h.p.h = &probeHandle{nodes: nodes, fits: fits}
			h.measureAs(t, podsByName(pods)[scout])
			h.cycle()
			after := readHeld(h, shape)
			h.c.mu.Lock()
			resubmitted := h.c.stats.Submits - submits
			h.c.mu.Unlock()
			switch {
			case after.job != before.job || resubmitted > 0:
				t.Fatalf("the held gang %s was withdrawn and submitted again (%d submits) as %q once measured with %s rejected: %s %s",
					before.job, resubmitted, after.job, tc.rejected, after.status.State, after.status.Reason)
			case !keptHold(before, after):
				t.Fatalf("the held gang %s lost its hold once measured with %s rejected: admitted %v, %s (hold: %v) since %v, want since %v: %s",
					before.job, tc.rejected, after.admitted, after.status.State, after.ok, after.hold.Since, before.hold.Since, after.status.Reason)
			case !slices.Equal(after.allowed, tc.want) || !slices.Equal(after.engine, tc.want):
				t.Fatalf("the held gang's allowed nodes once measured with %s rejected: %v submitted, %v in the engine; want %v",
					tc.rejected, after.allowed, after.engine, tc.want)
			case !inTarget && (after.hold.Held != before.hold.Held || !slices.Equal(holdNodes(after.hold), holdNodes(before.hold))):
				t.Fatalf("the hold of %s changed though its target stays allowed: %d GPUs held on %v, before %d on %v",
					before.job, after.hold.Held, holdNodes(after.hold), before.hold.Held, holdNodes(before.hold))
			case inTarget && slices.Contains(holdNodes(after.hold), tc.rejected):
				t.Fatalf("the hold of %s still targets %s, rejected: %v", before.job, tc.rejected, holdNodes(after.hold))
			}
			checkBooks(t, h)
		})
	}
}

// TestHeldGangNodeRelabelledEverySecond: a label of a node that a held
// gang could use rewritten every second (each change sends a scout, whose
// measurement lands 300 ms later with the node still accepted, before the
// next change) had the gang withdrawn and submitted again at every change
// (the node taken out) and every measurement (the node put back), its
// hold dropped and made afresh each time; then (this test asserted it
// until the plugin called Engine.Update) a held gang kept its sets, the
// changed node in them, until the measurement. Now each change takes n001
// out of the gang's sets at once and each measurement puts it back, in
// place: over 60 s of the fake clock the gang keeps one job, and its hold
// while it waits; n002 freed after 30 s, it is not admitted onto n001
// between a change and its measurement, and starts (on n000, n001, n002:
// n003 stays full) under that same job once n001 is measured.
func TestHeldGangNodeRelabelledEverySecond(t *testing.T) {
	h, nodes, pods, shape, submits, before := heldGangScene(t)
	// step moves the fake clock by d and runs one engine cycle.
	step := func(d time.Duration) {
		h.now = h.now.Add(d)
		acts, _ := h.c.cycle(klog.Background())
		acts.apply(h.a, nil)
	}
	jobs := []string{before.job}
	start, measured, freed := h.now, 0, false
	var admittedAt time.Duration
	for i := 0; h.now.Sub(start) < 60*time.Second; i++ {
		if !freed && h.now.Sub(start) >= 30*time.Second {
			h.c.podHandlers().DeleteFunc(foreignPod("fill-n002", "n002", 8))
			freed = true
		}
		changed := nodes[1].DeepCopy()
		changed.Labels["example.com/rev"] = fmt.Sprint(i)
		h.c.onNode(changed, false)
		step(100 * time.Millisecond) // sends the scout
		if admittedAt == 0 {
			// Until the measurement lands, n001 is out of the gang's
			// sets: not admitted there, even with n002 free.
			s := readHeld(h, shape)
			if s.job != jobs[len(jobs)-1] {
				jobs = append(jobs, s.job)
			}
			for _, p := range pods {
				if node := admittedOn(h, p); node == "n001" {
					t.Fatalf("at %v pod %s admitted on n001 before n001 was measured again after its change", h.now.Sub(start), p.Name)
				}
			}
			if !s.admitted && (slices.Contains(s.engine, "n001") || slices.Contains(s.allowed, "n001")) {
				t.Fatalf("at %v the waiting gang %s may use n001 before n001 was measured again after its change: %v in the engine, %v submitted",
					h.now.Sub(start), s.job, s.engine, s.allowed)
			}
		}
		h.now = h.now.Add(200 * time.Millisecond)
		names := h.knownNodes() // a snapshot with the change: every node passes
		if n := h.answerScoutsAs(names, names); !freed {
			measured += n
		}
		step(200 * time.Millisecond) // the measurement counts
		h.now = h.now.Add(500 * time.Millisecond)
		s := readHeld(h, shape)
		if s.job != jobs[len(jobs)-1] {
			jobs = append(jobs, s.job)
		}
		switch {
		case !s.admitted && !slices.Contains(s.engine, "n001"):
			t.Fatalf("at %v n001 is not back in the sets of the waiting gang %s once measured as accepted: %v", h.now.Sub(start), s.job, s.engine)
		case s.admitted:
			if admittedAt == 0 {
				admittedAt = h.now.Sub(start)
			}
		case !freed && !keptHold(before, s):
			t.Fatalf("at %v the held gang %s lost its hold: %s %s (hold: %v) since %v, want since %v", h.now.Sub(start), s.job,
				s.status.State, s.status.Reason, s.ok, s.hold.Since, before.hold.Since)
		}
	}
	h.c.mu.Lock()
	resubmitted := h.c.stats.Submits - submits
	h.c.mu.Unlock()
	if len(jobs) > 1 || resubmitted > 0 {
		t.Fatalf("the held gang was submitted %d times in %v as n001's label changed every second (jobs %v ...)",
			resubmitted, h.now.Sub(start), jobs[:min(len(jobs), 4)])
	}
	if measured < 25 {
		t.Fatalf("only %d measurements in the 30 s before n002 freed up: the node changes did not make the shape stale", measured)
	}
	var slots []string
	for _, p := range pods {
		slots = append(slots, admittedOn(h, p))
	}
	slices.Sort(slots)
	if admittedAt == 0 || !slices.Equal(slots, []string{"n000", "n001", "n002"}) {
		t.Fatalf("the gang %s was not admitted on n000 n001 n002 within 30 s of n002 freeing up (admitted at %v, pods on %v)", before.job, admittedAt, slots)
	}
	t.Logf("admitted %v after the start, n002 freed at 30s", admittedAt)
	checkBooks(t, h)
}

// heldGangScene is the scene of the held-gang tests above: four nodes,
// a gang waiting with n002 and n003 full (waitingGang, pods past hold
// mode's MinWait) that the engine holds GPUs for. It returns the
// harness, the nodes, the gang's pods, their shape, the plugin's submit
// count so far and the gang as the engine holds it.
func heldGangScene(t *testing.T) (h *hookEnv, nodes []*v1.Node, pods []*v1.Pod, shape string, submits int, before heldGang) {
	t.Helper()
	h = newHookEnv(t, Args{})
	nodes = testNodes(4)
	h.addNodes(nodes...)
	pods = waitingGang(h, false) // n002 and n003 full
	h.c.mu.Lock()
	shape = h.c.groups["ns/g"].pods[string(pods[0].UID)].shape
	submits = h.c.stats.Submits
	h.c.mu.Unlock()
	before = readHeld(h, shape)
	if !before.ok || before.hold.Held == 0 || !hasPlan(h, before.job) {
		t.Fatalf("the engine holds no GPUs for the waiting gang %s: %s %s", before.job, before.status.State, before.status.Reason)
	}
	return h, nodes, pods, shape, submits, before
}

// TestUpdateOfStartedGangFallsBack: the plugin changes a waiting gang's
// allowed sets in the engine (Engine.Update), which refuses a job that no
// longer waits (backfill.ErrTransition). Here the engine started the held
// gang in a cycle whose plan the plugin never applied (the gang is still
// waiting for the plugin) before a node under it changed: the plugin
// falls back to withdrawing the job and submitting the gang again, as it
// did before Update. The gang is neither lost nor doubled: the engine
// knows one job of the group, the group's, with every pod, and no pod is
// placed on the changed node.
func TestUpdateOfStartedGangFallsBack(t *testing.T) {
	h, nodes, pods, shape, submits, before := heldGangScene(t)
	h.c.podHandlers().DeleteFunc(foreignPod("fill-n002", "n002", 8))
	h.c.mu.Lock()
	err := h.c.eng.setForeign(h.c.foreignUsage(), h.now)
	if err == nil {
		_, err = h.c.eng.schedule(h.now) // its plan is dropped
	}
	started := h.c.eng.active(before.job)
	h.c.mu.Unlock()
	if err != nil || !started {
		t.Fatalf("the engine did not start %s on n002 freed (err %v): %s", before.job, err, h.describeGroup("ns/g"))
	}
	changed := nodes[1].DeepCopy()
	changed.Spec.Taints = append(changed.Spec.Taints, v1.Taint{Key: "example.com/broken", Effect: v1.TaintEffectNoSchedule})
	h.c.onNode(changed, false)
	h.cycle()

	after := readHeld(h, shape)
	h.c.mu.Lock()
	g := h.c.groups["ns/g"]
	var gangPods int
	var mapped []string
	if g.inc != nil {
		gangPods = len(g.inc.pods)
	}
	for job, jg := range h.c.jobs {
		if jg == g {
			mapped = append(mapped, job)
		}
	}
	resubmitted := h.c.stats.Submits - submits
	engineErr := h.c.err
	h.c.mu.Unlock()
	var live []string
	for _, j := range h.c.eng.eng.Snapshot().Jobs {
		if strings.HasPrefix(j.ID, "ns/g#") && !j.State.Ended() {
			live = append(live, j.ID)
		}
	}
	switch {
	case after.job == "" || gangPods != len(pods):
		t.Fatalf("the gang is lost after the update of its started job failed: job %q with %d of %d pods (%s)", after.job, gangPods, len(pods), h.describeGroup("ns/g"))
	case !slices.Equal(live, []string{after.job}) || !slices.Equal(mapped, []string{after.job}):
		t.Fatalf("the engine knows jobs %v of the group and the plugin maps %v to it; want the group's one job %s", live, mapped, after.job)
	case after.job == before.job || resubmitted != 1:
		t.Fatalf("the gang was not withdrawn and submitted again once (%d submits) when its job %s could not be updated: now %s", resubmitted, before.job, after.job)
	case engineErr != "":
		t.Fatalf("the fallback logged an engine error: %s", engineErr)
	case !slices.Equal(after.engine, []string{"n000", "n002", "n003"}):
		t.Fatalf("the gang submitted again may use %v, want n000 n002 n003", after.engine)
	}
	for _, p := range pods {
		if s := admittedOn(h, p); s == "n001" {
			t.Fatalf("pod %s admitted on n001 after n001 changed", p.Name)
		}
	}
	checkBooks(t, h)
}
