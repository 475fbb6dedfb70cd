package plugin

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/phalanx-sched/phalanx/backfill"
)

// heldGang is what the test reads of group ns/g's waiting gang: its job,
// the allowed nodes submitted for shape, the engine's status of the job
// and its hold (ok false without one).
type heldGang struct {
	job     string
	allowed []string
	status  backfill.JobStatus
	hold    backfill.HoldRecord
	ok      bool
}

// readHeld reads group ns/g's waiting gang (job "" when it has none in the
// engine) and the engine's view of it.
func readHeld(h *hookEnv, shape string) heldGang {
	h.c.mu.Lock()
	g := h.c.groups["ns/g"]
	var s heldGang
	if g.inc != nil && !g.inc.admitted {
		s.job, s.allowed = g.inc.job, slices.Clone(g.inc.allowed[shape])
	}
	h.c.mu.Unlock()
	if s.job == "" {
		return s
	}
	s.status, _ = h.c.eng.eng.Job(s.job)
	for _, r := range h.c.eng.eng.Snapshot().Holds {
		if r.Job == s.job {
			s.hold, s.ok = r, true
		}
	}
	return s
}

// sameHold reports whether after is the hold of before, as it was: the
// same job, made at the same time, holding the same GPUs of the same
// target.
func sameHold(before, after heldGang) bool {
	return after.ok && after.job == before.job && after.status.State == backfill.StateHeld &&
		after.hold.Since.Equal(before.hold.Since) && after.hold.Held == before.hold.Held &&
		after.status.Nodes == before.status.Nodes
}

// TestHeldGangKeepsChangedNode: a node change took the changed node out
// of every waiting gang's allowed sets at once, and since the engine has
// no call that changes a waiting job's allowed nodes, the gang was
// withdrawn and submitted again: the engine's hold for it was dropped
// (its held GPUs went back to other jobs, its budget started afresh).
// A gang the engine holds GPUs for (its pods are past hold mode's
// MinWait, as groupPod makes them) keeps its job, its hold and its
// submitted sets until the measurement lands; then the measurement
// decides, as for any re-measurement (allowedChanged): a node still
// accepted changes nothing, a node now rejected leaves the gang's sets.
func TestHeldGangKeepsChangedNode(t *testing.T) {
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
			changed := nodes[1].DeepCopy()
			tc.change(changed)
			h.c.onNode(changed, false)
			h.cycle()
			scout := scoutOf(h, "ns/g")
			if scout == "" {
				t.Fatal("no scout sent to measure the shape again after n001 changed")
			}
			after := readHeld(h, shape)
			h.c.mu.Lock()
			resubmitted := h.c.stats.Submits - submits
			h.c.mu.Unlock()
			switch {
			case after.job != before.job || resubmitted > 0:
				t.Fatalf("the held gang %s was withdrawn and submitted again (%d submits) as %q after n001 changed, before its shape was measured again: %s %s",
					before.job, resubmitted, after.job, after.status.State, after.status.Reason)
			case !sameHold(before, after):
				t.Fatalf("the hold of %s changed after n001 changed: before since %v, %d GPUs held on %s; after %v (hold: %v), since %v, %d GPUs held on %s",
					before.job, before.hold.Since, before.hold.Held, before.status.Nodes, after.status.State, after.ok, after.hold.Since, after.hold.Held, after.status.Nodes)
			case !slices.Equal(after.allowed, before.allowed):
				t.Fatalf("the held gang's submitted allowed nodes %v after n001 changed, want %v kept", after.allowed, before.allowed)
			}

			// The measurement lands on a snapshot with the change.
			snap := slices.Clone(nodes)
			snap[1] = changed
			fits := map[string]bool{"n000": true, "n001": tc.passes, "n002": true, "n003": true}
			h.p.h = &probeHandle{nodes: snap, fits: fits}
			h.measureAs(t, podsByName(pods)[scout])
			h.cycle()
			after = readHeld(h, shape)
			if tc.passes {
				if after.job != before.job || !sameHold(before, after) {
					t.Fatalf("the held gang %s lost its hold once n001 was measured as still accepted: now %q %s %s",
						before.job, after.job, after.status.State, after.status.Reason)
				}
			} else {
				if want := []string{"n000", "n002", "n003"}; !slices.Equal(after.allowed, want) {
					t.Fatalf("the gang's allowed nodes %v once n001 was measured as rejected, want %v (%s)", after.allowed, want, after.status.Reason)
				}
				for _, p := range pods {
					if s := admittedOn(h, p); s == "n001" {
						t.Fatalf("pod %s admitted on n001 once it was measured as rejected", p.Name)
					}
				}
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
// hold dropped and made afresh each time. Over 60 s of
// the fake clock the gang keeps one job and one hold.
func TestHeldGangNodeRelabelledEverySecond(t *testing.T) {
	h, nodes, _, shape, submits, before := heldGangScene(t)
	// step moves the fake clock by d and runs one engine cycle.
	step := func(d time.Duration) {
		h.now = h.now.Add(d)
		acts, _ := h.c.cycle(klog.Background())
		acts.apply(h.a, nil)
	}
	jobs := []string{before.job}
	start, measured := h.now, 0
	for i := 0; h.now.Sub(start) < 60*time.Second; i++ {
		changed := nodes[1].DeepCopy()
		changed.Labels["example.com/rev"] = fmt.Sprint(i)
		h.c.onNode(changed, false)
		step(100 * time.Millisecond) // sends the scout
		h.now = h.now.Add(200 * time.Millisecond)
		names := h.knownNodes() // a snapshot with the change: every node passes
		measured += h.answerScoutsAs(names, names)
		step(200 * time.Millisecond) // the measurement counts
		h.now = h.now.Add(500 * time.Millisecond)
		s := readHeld(h, shape)
		if s.job != jobs[len(jobs)-1] {
			jobs = append(jobs, s.job)
		}
		if s.job == before.job && !sameHold(before, s) {
			t.Fatalf("at %v the hold of %s changed: since %v, %d GPUs held; want since %v, %d", h.now.Sub(start), s.job,
				s.hold.Since, s.hold.Held, before.hold.Since, before.hold.Held)
		}
	}
	h.c.mu.Lock()
	resubmitted := h.c.stats.Submits - submits
	h.c.mu.Unlock()
	if len(jobs) > 1 || resubmitted > 0 {
		t.Fatalf("the held gang was submitted %d times in %v as n001's label changed every second (jobs %v ...)",
			resubmitted, h.now.Sub(start), jobs[:min(len(jobs), 4)])
	}
	if measured < 50 {
		t.Fatalf("only %d measurements in %v: the node changes did not make the shape stale", measured, h.now.Sub(start))
	}
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
	if !before.ok || before.hold.Held == 0 || !h.c.eng.planned(before.job) {
		t.Fatalf("the engine holds no GPUs for the waiting gang %s: %s %s", before.job, before.status.State, before.status.Reason)
	}
	return h, nodes, pods, shape, submits, before
}
