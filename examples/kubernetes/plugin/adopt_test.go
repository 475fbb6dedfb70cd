package plugin

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// restarted is a fresh plugin (a restarted scheduler, or a standby taking
// over) on 8 nodes of 8 GPUs whose informers deliver the 4 pods of group g
// (minMember 4) already bound to n000 .. n003, as the plugin that placed
// them left them, and runs its first engine cycle.
func restarted(t *testing.T) (*hookEnv, []*v1.Pod) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.gangOfFour(4)
	h.cycle()
	return h, ps
}

// activeJobs returns the engine's active jobs other than foreign GPUs.
func activeJobs(h *hookEnv) []string {
	var out []string
	for _, st := range h.c.eng.eng.Jobs() {
		if st.State.Active() && !strings.HasPrefix(st.ID, foreignPrefix) {
			out = append(out, st.ID)
		}
	}
	return out
}

// checkBooks fails the test unless the engine's books are consistent.
func checkBooks(t *testing.T, h *hookEnv) {
	t.Helper()
	if err := h.c.eng.check(); err != nil {
		t.Fatal(err)
	}
}

// TestRestartAdoptsRunningGang: a scheduler that starts while a gang of its
// profile runs whole (every pod bound, as the process it replaces bound
// them) adopts it as a running job of the engine, on the pods' nodes: the
// group runs one gang at a time (pods created later wait until every pod of
// it is gone), the gang counts towards its namespace's fair share, ends when
// its pods are gone (its GPUs free, a new gang of the group may form), and
// ends with its node. A gang the engine cannot take stays GPUs used by
// pods Phalanx did not place, with a Warning event once the replica
// schedules.
func TestRestartAdoptsRunningGang(t *testing.T) {
	t.Run("running gang adopted", func(t *testing.T) {
		h, _ := restarted(t)
		h.c.onPod(foreignPod("other", "n004", 4))
		h.cycle()
		st, ok := h.c.eng.eng.Job("ns/g#1")
		if !ok || st.State.String() != "running" || st.Account != "ns" || st.GPUs != 32 {
			t.Fatalf("the engine's job ns/g#1: %+v (known %v), want running, account ns, 32 GPUs", st, ok)
		}
		nodes := h.c.eng.jobNodes("ns/g#1")
		slices.Sort(nodes)
		if want := []string{"n000", "n001", "n002", "n003"}; !slices.Equal(nodes, want) {
			t.Fatalf("adopted on %v, want %v", nodes, want)
		}

		if got := activeJobs(h); !slices.Equal(got, []string{"ns/g#1"}) {
			t.Fatalf("active jobs %v, want only ns/g#1", got)
		}
		g := h.c.groups["ns/g"]
		if g.inc == nil || !g.inc.running || g.inc.job != "ns/g#1" || len(g.inc.pods) != 4 {
			t.Fatalf("the group's incarnation: %+v, want the running job ns/g#1 of 4 pods", g.inc)
		}
		if fu := h.c.foreignUsage(); len(fu) != 1 || fu["n004"] != 4 {
			t.Fatalf("foreign GPUs %v, want only the other pod's 4 on n004", fu)
		}
		if free := h.c.eng.freeGPUCount(); free != 28 {
			t.Fatalf("free GPUs %d, want 28 (64, 32 adopted, 4 foreign)", free)
		}
		if s := h.c.Stats(); s.Adopted != 1 || s.Submits != 0 {
			t.Fatalf("adopted %d, submitted %d; want 1 and 0", s.Adopted, s.Submits)
		}
		checkBooks(t, h)
		// The engine holds it as it holds a gang the plugin started: the
		// same node-failure policy, preemption policy and class.
		solo := groupPod("", "solo", 8, 0)
		h.c.onPod(solo)
		h.leads(solo)
		h.admit([]*v1.Pod{solo})
		own, _ := h.c.eng.eng.JobSpec("ns/pod:solo#1")
		adopted, _ := h.c.eng.eng.JobSpec("ns/g#1")
		if adopted.OnNodeFailure != own.OnNodeFailure || adopted.Preemption != own.Preemption || adopted.Class != own.Class || adopted.Account != "ns" {
			t.Fatalf("adopted job: on node failure %v, preemption %v, class %d, account %q; a job the plugin submits: %v, %v, %d",
				adopted.OnNodeFailure, adopted.Preemption, adopted.Class, adopted.Account, own.OnNodeFailure, own.Preemption, own.Class)
		}
	})

	t.Run("no second incarnation while it runs", func(t *testing.T) {
		h, _ := restarted(t)
		var late []*v1.Pod
		for i := 4; i < 8; i++ {
			p := groupPod("g", fmt.Sprintf("w-%d", i), 8, 4) // recreated or more pods than minMember
			h.c.onPod(p)
			late = append(late, p)
		}
		h.leads(late[0])
		for i := 0; i < 4; i++ {
			h.cycle()
			h.answerScouts()
		}
		for _, p := range late {
			if s := h.slot(p); s != "" {
				t.Fatalf("pod %s of the running group got node %s: a second gang formed", p.Name, s)
			}
		}
		if s := h.c.Stats(); s.Submits != 0 || s.Admissions != 0 {
			t.Fatalf("submits %d, admissions %d while the group's gang runs; want none", s.Submits, s.Admissions)
		}
		if got := activeJobs(h); !slices.Equal(got, []string{"ns/g#1"}) {
			t.Fatalf("active jobs %v, want only ns/g#1", got)
		}
		if r := h.c.groups["ns/g"].reason; !strings.Contains(r, "wait until every pod of that gang is gone") {
			t.Fatalf("the late pods' reason %q, want them waiting for the running gang", r)
		}
	})

	t.Run("its end finishes the job", func(t *testing.T) {
		h, ps := restarted(t)
		for i, p := range ps {
			if i%2 == 0 {
				h.c.podHandlers().DeleteFunc(p)
			} else {
				done := p.DeepCopy()
				done.Status.Phase = v1.PodSucceeded
				h.c.onPod(done)
			}
		}
		h.cycle()
		if s := h.c.Stats(); s.Finished != 1 {
			t.Fatalf("finished %d, want the adopted gang reported finished", s.Finished)
		}
		if st, ok := h.c.eng.eng.Job("ns/g#1"); ok && !st.State.Ended() {
			t.Fatalf("the adopted job is %s after its pods ended", st.State)
		}
		if free := h.c.eng.freeGPUCount(); free != 64 {
			t.Fatalf("free GPUs %d, want 64", free)
		}
		next := make([]*v1.Pod, 4)
		for i := range next {
			next[i] = groupPod("g", fmt.Sprintf("w-%d", i+4), 8, 4)
			h.c.onPod(next[i])
		}
		h.leads(next[0])
		h.admit(next)
		if g := h.c.groups["ns/g"]; g.inc == nil || g.inc.pods["uid-w-4"] == nil || len(g.inc.pods) != 4 {
			t.Fatalf("the group's next gang holds %v, want w-4 .. w-7", incPods(g))
		}
		checkBooks(t, h)
	})

	t.Run("fair share counts it", func(t *testing.T) {
		h, _ := restarted(t)
		h.now = h.now.Add(time.Hour)
		h.cycle()
		v, err := h.c.eng.eng.FairShare()
		if err != nil {
			t.Fatal(err)
		}
		a, ok := v.Account("ns")
		if !ok || a.Usage <= 0 {
			t.Fatalf("namespace ns's fair-share account: %+v (known %v), want usage for an hour of 32 GPUs", a, ok)
		}
		if f, ok := v.Account(foreignAccount); ok && f.Usage > 0 {
			t.Fatalf("foreign usage %v, want none (no foreign pods)", f.Usage)
		}
	})

	t.Run("its node going down ends it", func(t *testing.T) {
		h, _ := restarted(t)
		h.leads(groupPod("", "solo", 8, 0))
		n := testNodes(8)[1]
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
		h.addNodes(n)
		h.cycle()
		slices.Sort(h.a.evicted)
		if want := []string{"ns/w-0", "ns/w-1", "ns/w-2", "ns/w-3"}; !slices.Equal(h.a.evicted, want) {
			t.Fatalf("evicted %v, want the adopted gang's pods %v", h.a.evicted, want)
		}
		if got := activeJobs(h); len(got) != 0 {
			t.Fatalf("active jobs %v after the node failure, want none", got)
		}
	})

	t.Run("standby adopts what the leader bound", func(t *testing.T) {
		h := newHookEnv(t, Args{})
		h.addNodes(testNodes(8)...)
		ps := h.groupPods(4, 8)
		h.cycle()
		for i := range ps {
			b := ps[i].DeepCopy()
			b.Spec.NodeName = nodeName(i + 2) // the leader's bind, seen by the informer
			h.c.onPod(b)
			h.cycle()
		}
		nodes := h.c.eng.jobNodes("ns/g#1")
		slices.Sort(nodes)
		if want := []string{"n002", "n003", "n004", "n005"}; !slices.Equal(nodes, want) {
			t.Fatalf("the standby's job ns/g#1 on %v, want %v", nodes, want)
		}
		checkBooks(t, h)
	})

	t.Run("node left out left foreign with an event", func(t *testing.T) {
		h := newHookEnv(t, Args{})
		nodes := testNodes(10)
		for _, n := range nodes[8:] { // n008, n009: GPUs, but no topology label
			delete(n.Labels, "cloud.google.com/gce-topology-subblock")
		}
		h.addNodes(nodes...)
		for i := 0; i < 4; i++ {
			p := groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
			p.Spec.NodeName = nodeName(i + 6) // n008 and n009 are left out of the cluster model
			h.c.onPod(p)
		}
		h.cycle()
		h.cycle()
		if len(h.a.podWarns) != 0 {
			t.Fatalf("warnings %v before the replica schedules, want none", h.a.podWarns)
		}
		h.leads(groupPod("", "solo", 8, 0))
		h.cycle()
		h.cycle()
		if len(h.a.podWarns) != 1 || !strings.HasPrefix(h.a.podWarns[0], "ns/w-0: ") || !strings.Contains(h.a.podWarns[0], "node n008 is not in Phalanx's cluster model") {
			t.Fatalf("pod warnings %v, want one on w-0 naming n008", h.a.podWarns)
		}
		if g := h.c.groups["ns/g"]; g.inc != nil {
			t.Fatalf("the group has job %s, want none", g.inc.job)
		}
		if fu := h.c.foreignUsage(); fu["n006"] != 8 || fu["n007"] != 8 || fu["n008"] != 8 {
			t.Fatalf("foreign GPUs %v, want the group's pods counted", fu)
		}
		if free := h.c.eng.freeGPUCount(); free != 48 {
			t.Fatalf("free GPUs %d, want 48 (n006, n007 used)", free)
		}
		checkBooks(t, h)
	})

	t.Run("two pods of one shape on one node left foreign", func(t *testing.T) {
		h := newHookEnv(t, Args{})
		h.addNodes(testNodes(8)...)
		for i := 0; i < 2; i++ {
			p := groupPod("g", fmt.Sprintf("w-%d", i), 4, 2)
			p.Spec.NodeName = "n000" // not a placement of Phalanx: one pod of a member per node
			h.c.onPod(p)
		}
		h.leads(groupPod("", "solo", 8, 0))
		h.cycle()
		h.cycle()
		if got := activeJobs(h); len(got) != 0 {
			t.Fatalf("active jobs %v, want none", got)
		}
		if len(h.a.podWarns) != 1 || !strings.Contains(h.a.podWarns[0], "two of its pods of one shape run on node n000") {
			t.Fatalf("pod warnings %v, want one naming n000", h.a.podWarns)
		}
		if fu := h.c.foreignUsage(); fu["n000"] != 8 {
			t.Fatalf("foreign GPUs %v, want the group's 8 on n000", fu)
		}
		checkBooks(t, h)
	})

	t.Run("GPUs conflicting left foreign with an event", func(t *testing.T) {
		h := newHookEnv(t, Args{})
		h.addNodes(testNodes(8)...)
		for _, grp := range []string{"a", "b"} {
			for i := 0; i < 2; i++ {
				p := groupPod(grp, fmt.Sprintf("%s-%d", grp, i), 6, 2)
				p.Spec.NodeName = nodeName(i) // both groups on n000 and n001: 12 of 8 GPUs
				h.c.onPod(p)
			}
		}
		h.leads(groupPod("", "solo", 8, 0))
		for i := 0; i < 3; i++ {
			h.cycle()
		}
		if got := activeJobs(h); !slices.Equal(got, []string{"ns/a#1"}) {
			t.Fatalf("active jobs %v, want ns/a#1 adopted and ns/b left out", got)
		}
		if len(h.a.podWarns) != 1 || !strings.HasPrefix(h.a.podWarns[0], "ns/b-0: ") || !strings.Contains(h.a.podWarns[0], "node n000 has 8 nvidia.com/gpu, 6 of them held by other gangs or its other pods there: its pod there asks for 6 more") {
			t.Fatalf("pod warnings %v, want one on b-0 naming n000's GPUs", h.a.podWarns)
		}
		if fu := h.c.foreignUsage(); fu["n000"] != 6 || fu["n001"] != 6 {
			t.Fatalf("foreign GPUs %v, want group b's 6 on n000 and n001", fu)
		}
		checkBooks(t, h)
	})
}

// TestStandbyNodeFailureDeletesNoPod: a standby (no PreFilter yet) adopts
// the gang the leader binds; when a node under it fails, the standby ends
// the job but deletes no pod (the leader does, if it lives). Its pods are
// then a group without a job, examined as after a restart: while the
// replica stands by, the gang is neither adopted again nor deleted (its
// pods stay used GPUs), and it is adopted again once the node is back. If
// the node is still down when the replica begins to schedule (the leader
// died before it deleted the pods), the gang is adopted and ended by the
// node's failure, its pods deleted, as the leader would have
// (TestAdoptGangWithPodOnDownNode).
func TestStandbyNodeFailureDeletesNoPod(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	ps := h.groupPods(4, 8)
	h.cycle()
	for i := range ps {
		b := ps[i].DeepCopy()
		b.Spec.NodeName = nodeName(i) // the leader's bind, seen by the informer
		h.c.onPod(b)
		h.cycle()
	}
	if got := activeJobs(h); !slices.Equal(got, []string{"ns/g#1"}) {
		t.Fatalf("active jobs %v, want the adopted ns/g#1", got)
	}
	down := testNodes(8)[1]
	down.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	h.addNodes(down)
	for i := 0; i < 70; i++ {
		h.cycle()
	}
	if len(h.a.evicted) != 0 {
		t.Fatalf("a standby evicted %v", h.a.evicted)
	}
	if got := activeJobs(h); len(got) != 0 {
		t.Fatalf("active jobs %v after the node failure, want none", got)
	}
	if g := h.c.groups["ns/g"]; g.inc != nil {
		t.Fatalf("the group has job %s on a down node", g.inc.job)
	}
	if s := h.c.Stats(); s.Adopted != 1 || s.Teardowns != 1 {
		t.Fatalf("adopted %d, torn down %d; want 1 and 1 (not adopted again while its node is down)", s.Adopted, s.Teardowns)
	}
	if fu := h.c.foreignUsage(); fu["n000"] != 8 || fu["n002"] != 8 {
		t.Fatalf("foreign GPUs %v, want the group's pods counted", fu)
	}
	h.addNodes(testNodes(8)[1]) // Ready again
	h.cycle()
	if g := h.c.groups["ns/g"]; g.inc == nil || !g.inc.running || len(g.inc.pods) != 4 {
		t.Fatal("the gang is not adopted again once its node is back")
	}
	checkBooks(t, h)

	h.addNodes(down) // down again, and the leader dies before deleting the pods
	h.cycle()
	if len(h.a.evicted) != 0 || len(activeJobs(h)) != 0 {
		t.Fatalf("a standby evicted %v, active jobs %v", h.a.evicted, activeJobs(h))
	}
	solo := groupPod("", "solo", 8, 0)
	h.c.onPod(solo)
	h.leads(solo)
	for i := 0; i < 70; i++ {
		h.cycle()
	}
	slices.Sort(h.a.evicted)
	if want := []string{"ns/w-0", "ns/w-1", "ns/w-2", "ns/w-3"}; !slices.Equal(h.a.evicted, want) {
		t.Fatalf("evicted %v once it schedules with the node still down, want the gang's pods %v", h.a.evicted, want)
	}
	if g := h.c.groups["ns/g"]; g.inc != nil {
		t.Fatalf("the group has job %s after its node failure", g.inc.job)
	}
	checkBooks(t, h)
}

// TestTerminatingPodsNotAdopted: a scheduler that restarts while the 4 pods
// of a gang are terminating (bound, being deleted) and their 4 replacements
// are pending does not adopt the terminating pods as a running gang (their
// GPUs count as used until they are gone), nor deletes them as a partial
// gang: the replacements form the group's next gang. Two terminating pods
// beside two pending ones are no half-bound group either: they are going
// anyway, and are not deleted.
func TestTerminatingPodsNotAdopted(t *testing.T) {
	t.Run("beside pending pods not a partial gang", func(t *testing.T) {
		h := newHookEnv(t, Args{})
		h.addNodes(testNodes(8)...)
		ps := h.gangOfFour(2)
		for _, p := range ps[:2] {
			p.DeletionTimestamp = &metav1.Time{Time: h.now}
			h.c.onPod(p)
		}
		h.cycle()
		h.leads(ps[2])
		for step := 0; step < 150; step++ {
			h.cycle()
		}
		if len(h.a.evicted) != 0 {
			t.Fatalf("evicted %v, terminating pods deleted as a partial gang", h.a.evicted)
		}
	})
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(8)...)
	for i := 0; i < 4; i++ {
		p := groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
		p.Spec.NodeName = nodeName(i)
		p.DeletionTimestamp = &metav1.Time{Time: h.now}
		h.c.onPod(p)
	}
	next := make([]*v1.Pod, 4)
	for i := range next {
		next[i] = groupPod("g", fmt.Sprintf("w-%d", i+4), 8, 4)
		h.c.onPod(next[i])
	}
	h.cycle()
	if got := activeJobs(h); len(got) != 0 {
		t.Fatalf("active jobs %v: terminating pods adopted as a running gang", got)
	}
	if _, half := halfBound(h.c.groups["ns/g"]); half {
		t.Fatal("terminating pods beside pending ones are half-bound")
	}
	h.leads(next[0])
	slots := h.admit(next)
	for _, n := range slots {
		if n < nodeName(4) {
			t.Fatalf("the next gang got %v, on the terminating pods' nodes", slots)
		}
	}
	if len(h.a.evicted) != 0 {
		t.Fatalf("evicted %v, want none", h.a.evicted)
	}
	checkBooks(t, h)
}

// downAtRestart is a fresh plugin on 8 nodes of 8 GPUs, node n001 not
// Ready, whose informers deliver the 4 pods of group g (minMember 4)
// bound to n000 .. n003 (w-1 on the down node), the 2 pods of group h
// (minMember 2, 8 GPUs each) bound to n005 and n006, and a pod of another
// scheduler with 4 GPUs on n004; it runs the first engine cycle, as a
// replica that does not schedule yet.
func downAtRestart(t *testing.T) *hookEnv {
	h := newHookEnv(t, Args{})
	nodes := testNodes(8)
	nodes[1].Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	h.addNodes(nodes...)
	h.gangOfFour(4)
	for i := 0; i < 2; i++ {
		p := groupPod("h", fmt.Sprintf("h-%d", i), 8, 2)
		p.Spec.NodeName = nodeName(i + 5)
		h.c.onPod(p)
	}
	h.c.onPod(foreignPod("other", "n004", 4))
	h.cycle()
	return h
}

// TestAdoptGangWithPodOnDownNode: a scheduler that starts (a restart, or a
// standby taking over) while a gang of its profile runs with a pod on a
// node that is down adopts it like any other running gang and applies the
// node's failure to it as it does to a gang it runs when the node fails:
// the engine fails the job (the adopted job's OnNodeFailure), its pods
// are deleted (all of them, as for a live failure: a gang with a dead rank
// is dead), its GPUs are not left held outside the engine, and the
// group's next gang may form. A healthy gang and another scheduler's pod
// beside it are left alone. A standby adopts it only once it schedules
// (its teardown would delete nothing): until then the gang stays as it
// was, neither adopted nor deleted, and not adopted and torn down again
// in every cycle.
func TestAdoptGangWithPodOnDownNode(t *testing.T) {
	// live is the same cluster with the node failing under the adopted
	// gang while the plugin schedules: what the restart must match.
	live := newHookEnv(t, Args{})
	live.addNodes(testNodes(8)...)
	live.gangOfFour(4)
	for i := 0; i < 2; i++ {
		p := groupPod("h", fmt.Sprintf("h-%d", i), 8, 2)
		p.Spec.NodeName = nodeName(i + 5)
		live.c.onPod(p)
	}
	live.c.onPod(foreignPod("other", "n004", 4))
	live.cycle()
	live.leads(groupPod("", "solo", 8, 0))
	live.cycle()
	n1 := testNodes(8)[1]
	n1.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	live.addNodes(n1)
	live.cycle()
	slices.Sort(live.a.evicted)
	if want := []string{"ns/w-0", "ns/w-1", "ns/w-2", "ns/w-3"}; !slices.Equal(live.a.evicted, want) {
		t.Fatalf("live node failure: evicted %v, want %v", live.a.evicted, want)
	}

	h := downAtRestart(t)
	if len(h.a.evicted) != 0 || h.c.groups["ns/g"].inc != nil {
		t.Fatalf("before it schedules: evicted %v, job %v; want none (a standby deletes nothing)", h.a.evicted, h.c.groups["ns/g"].inc)
	}
	for i := 0; i < 3; i++ {
		h.cycle()
	}
	if s := h.c.Stats(); s.Adopted != 1 || s.Teardowns != 0 {
		t.Fatalf("as a standby: adopted %d, torn down %d; want only group h adopted, nothing torn down", s.Adopted, s.Teardowns)
	}

	h.leads(groupPod("", "solo", 8, 0))
	h.cycle()
	slices.Sort(h.a.evicted)
	if !slices.Equal(h.a.evicted, live.a.evicted) {
		t.Fatalf("evicted %v once it schedules, want %v as for a live node failure", h.a.evicted, live.a.evicted)
	}
	// The engine ended the job (it keeps no ended job: KeepEnded 0).
	if h.c.eng.held("ns/g#1") || live.c.eng.held("ns/g#1") {
		t.Fatalf("the engine holds ns/g#1: %v after the restart, %v after the live failure; want neither", h.c.eng.held("ns/g#1"), live.c.eng.held("ns/g#1"))
	}
	if got := activeJobs(h); !slices.Equal(got, []string{"ns/h#1"}) {
		t.Fatalf("active jobs %v, want only the healthy gang ns/h#1", got)
	}
	g := h.c.groups["ns/g"]
	if g.inc != nil || g.reason != live.c.groups["ns/g"].reason {
		t.Fatalf("group g: job %v, reason %q; want no job and %q", g.inc, g.reason, live.c.groups["ns/g"].reason)
	}
	if s, ls := h.c.Stats(), live.c.Stats(); s.Adopted != 2 || s.Teardowns != 1 || s.Evictions != ls.Evictions {
		t.Fatalf("adopted %d, torn down %d, evictions %d; want 2, 1, %d", s.Adopted, s.Teardowns, s.Evictions, ls.Evictions)
	}
	checkBooks(t, h)
	for i := 0; i < 5; i++ { // its pods are being deleted: not adopted again
		h.cycle()
	}
	if s := h.c.Stats(); s.Adopted != 2 || s.Teardowns != 1 || len(h.a.evicted) != 4 {
		t.Fatalf("later cycles: adopted %d, torn down %d, evicted %v; want no second adoption", s.Adopted, s.Teardowns, h.a.evicted)
	}

	// The pods go: their GPUs are free, none held outside the engine.
	for i := 0; i < 4; i++ {
		h.c.podHandlers().DeleteFunc(groupPod("g", fmt.Sprintf("w-%d", i), 8, 4))
	}
	h.cycle()
	if fu := h.c.foreignUsage(); len(fu) != 1 || fu["n004"] != 4 {
		t.Fatalf("foreign GPUs %v, want only the other scheduler's 4 on n004", fu)
	}
	if free := h.c.eng.freeGPUCount(); free != 36 {
		t.Fatalf("free GPUs %d, want 36 (64, n001 down, 16 of gang h, 4 foreign)", free)
	}
	checkBooks(t, h)
	next := make([]*v1.Pod, 4)
	for i := range next {
		next[i] = groupPod("g", fmt.Sprintf("w-%d", i+4), 8, 4)
		h.c.onPod(next[i])
	}
	for node := range maps.Values(h.admit(next)) {
		if node == "n001" {
			t.Fatal("the group's next gang was placed on the down node n001")
		}
	}
	checkBooks(t, h)
}

// TestDeleteGangOnNodeOutsideModel: a scheduler that starts while a gang
// of its profile runs with a pod on a node that serves no GPUs and is
// outside the engine's cluster model (deleted: no Node object; or a node
// without the GPU resource at all) cannot adopt it, nor end it through the
// engine. While the replica stands by, the gang stays as it was: no pod
// deleted, no event, its pods' GPUs counted as used. Once it schedules,
// every bound pod of the gang is deleted (as a partial gang's are: no part
// of a gang runs without the rest), with one Warning event on its first
// pod naming the node, and only once; when the pods are gone their GPUs
// are free and the group's next gang is placed on the nodes they held.
func TestDeleteGangOnNodeOutsideModel(t *testing.T) {
	noGPU := testNodes(5)[4]
	noGPU.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")}
	noGPU.Status.Allocatable = noGPU.Status.Capacity
	for _, tc := range []struct {
		name  string
		nodes []*v1.Node // n004 among them or not
		why   string     // in the event
	}{
		{"deleted node", testNodes(4), "node n004, where one of them is bound, does not exist (deleted)"},
		{"node without GPU resource", append(testNodes(4), noGPU), "node n004, where one of them is bound, has no nvidia.com/gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(tc.nodes...)
			boundOnN004(h)
			for i := 0; i < 3; i++ {
				h.cycle()
			}
			if len(h.a.evicted) != 0 || len(h.a.podWarns) != 0 {
				t.Fatalf("a standby evicted %v, warned %v; want nothing", h.a.evicted, h.a.podWarns)
			}
			if got := activeJobs(h); len(got) != 0 {
				t.Fatalf("active jobs %v, want none", got)
			}
			if free := h.c.eng.freeGPUCount(); free != 8 {
				t.Fatalf("free GPUs %d while the replica stands by, want 8 (n000 .. n002 used by the gang)", free)
			}

			h.leads(groupPod("", "solo", 8, 0))
			// Within partialSettle of scheduling it waits (the node may
			// reach the informer late) and says when it deletes.
			h.now = h.now.Add(time.Second)
			acts, wait := h.c.cycle(klog.Background())
			acts.apply(h.a, nil)
			if len(h.a.evicted) != 0 {
				t.Fatalf("evicted %v in the first cycle it schedules, want nothing before partialSettle", h.a.evicted)
			}
			if wait > partialSettle {
				t.Fatalf("next cycle in %v, want within partialSettle (%v) for the deletion", wait, partialSettle)
			}
			h.now = h.now.Add(partialSettle - 2*time.Second)
			h.cycle()
			if len(h.a.evicted) != 0 {
				t.Fatalf("evicted %v before partialSettle, want nothing", h.a.evicted)
			}
			h.now = h.now.Add(time.Second)
			h.cycle()
			slices.Sort(h.a.evicted)
			if want := []string{"ns/w-0", "ns/w-1", "ns/w-2", "ns/w-3"}; !slices.Equal(h.a.evicted, want) {
				t.Fatalf("evicted %v once it schedules, want the gang's pods %v", h.a.evicted, want)
			}
			warns := len(h.a.podWarns)
			if warns == 0 || !strings.HasPrefix(h.a.podWarns[warns-1], "ns/w-0: Phalanx deletes the 4 running pods of group ns/g") ||
				!strings.Contains(h.a.podWarns[warns-1], tc.why) {
				t.Fatalf("pod warnings %v, want the last on w-0 saying %q", h.a.podWarns, tc.why)
			}
			for i := 0; i < 3; i++ {
				h.cycle()
			}
			if len(h.a.evicted) != 4 || len(h.a.podWarns) != warns {
				t.Fatalf("later cycles: evicted %v, warned %v; want the pods deleted and the event recorded once", h.a.evicted, h.a.podWarns)
			}
			if s := h.c.Stats(); s.Adopted != 0 || s.Evictions != 4 {
				t.Fatalf("adopted %d, evictions %d; want 0 and 4", s.Adopted, s.Evictions)
			}

			for i := 0; i < 4; i++ {
				h.c.podHandlers().DeleteFunc(groupPod("g", fmt.Sprintf("w-%d", i), 8, 4))
			}
			h.cycle()
			if fu := h.c.foreignUsage(); len(fu) != 0 {
				t.Fatalf("foreign GPUs %v once the pods are gone, want none", fu)
			}
			if free := h.c.eng.freeGPUCount(); free != 32 {
				t.Fatalf("free GPUs %d once the pods are gone, want 32", free)
			}
			next := make([]*v1.Pod, 4)
			for i := range next {
				next[i] = groupPod("g", fmt.Sprintf("w-%d", i+4), 8, 4)
				h.c.onPod(next[i])
			}
			nodes := slices.Sorted(maps.Values(h.admit(next)))
			if want := []string{"n000", "n001", "n002", "n003"}; !slices.Equal(nodes, want) {
				t.Fatalf("the group's next gang placed on %v, want %v", nodes, want)
			}
			checkBooks(t, h)
		})
	}
}

// TestDeadNodeSettles: a node the previous leader bound onto may reach
// this replica's node informer after the pods. A gang with a pod on a
// node the replica does not know is not deleted in its first
// partialSettle of scheduling: the node appears meanwhile, and the gang
// is adopted whole, no pod deleted.
func TestDeadNodeSettles(t *testing.T) {
	h := newHookEnv(t, Args{})
	h.addNodes(testNodes(4)...)
	boundOnN004(h)
	h.leads(groupPod("", "solo", 8, 0))
	h.cycle()
	h.now = h.now.Add(partialSettle / 2)
	h.cycle()
	if len(h.a.evicted) != 0 || len(activeJobs(h)) != 0 {
		t.Fatalf("before the node appears: evicted %v, jobs %v; want neither", h.a.evicted, activeJobs(h))
	}
	h.addNodes(testNodes(5)[4])
	h.cycle()
	h.now = h.now.Add(partialSettle)
	h.cycle()
	if len(h.a.evicted) != 0 {
		t.Fatalf("evicted %v once the node appeared, want nothing", h.a.evicted)
	}
	if got := activeJobs(h); len(got) != 1 {
		t.Fatalf("active jobs %v once the node appeared, want the gang adopted", got)
	}
	checkBooks(t, h)
}

// TestDeadGangLosesPodWhileSettling: the pod on the deleted node goes
// while the replica waits its partialSettle (PodGC force-deletes the pods
// of a node that has been gone some 40 s, sooner than partialSettle), and
// the Indexed Job recreates it, pending. The gang is still one that cannot
// run whole (its member on the deleted node is gone): its other bound pods
// are deleted when the wait ends, not left running without the rest (the
// group, seen whole, is no partial gang for settlePartials either, and its
// pending pod alone can never form the next gang).
func TestDeadGangLosesPodWhileSettling(t *testing.T) {
	for _, tc := range []struct {
		replacement bool // the Job recreates the pod, pending
		standby     bool // the pod goes while the replica stands by
	}{{false, false}, {true, false}, {true, true}} {
		replacement := tc.replacement
		t.Run(fmt.Sprintf("replacement=%v,standby=%v", tc.replacement, tc.standby), func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(4)...)
			boundOnN004(h)
			h.cycle() // a standby
			gc := func() {
				gone := groupPod("g", "w-3", 8, 4)
				gone.Spec.NodeName = "n004"
				h.c.podHandlers().DeleteFunc(gone) // PodGC
				if replacement {
					h.c.onPod(groupPod("g", "w-5", 8, 4))
				}
				h.cycle()
			}
			if tc.standby {
				gc()
				h.cycle()
				if len(h.a.evicted) != 0 {
					t.Fatalf("a standby evicted %v, want nothing", h.a.evicted)
				}
			}
			h.leads(groupPod("", "solo", 8, 0))
			h.cycle()
			h.now = h.now.Add(partialSettle / 2)
			if !tc.standby {
				gc()
			}
			if len(h.a.evicted) != 0 {
				t.Fatalf("evicted %v within partialSettle, want nothing", h.a.evicted)
			}
			h.now = h.now.Add(partialSettle)
			for i := 0; i < 3; i++ {
				h.cycle()
			}
			slices.Sort(h.a.evicted)
			if want := []string{"ns/w-0", "ns/w-1", "ns/w-2"}; !slices.Equal(h.a.evicted, want) {
				t.Fatalf("evicted %v once partialSettle passed, want the gang's remaining pods %v", h.a.evicted, want)
			}
			if s := h.c.Stats(); s.Evictions != 3 {
				t.Fatalf("evictions %d, want 3", s.Evictions)
			}
		})
	}
}

// boundOnN004 gives h a group g of four 8-GPU pods bound to n000 .. n002
// and n004 (a node the tests leave out of the cluster or delete).
func boundOnN004(h *hookEnv) {
	for i := 0; i < 4; i++ {
		p := groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
		p.Spec.NodeName = nodeName(i)
		if i == 3 {
			p.Spec.NodeName = "n004"
		}
		h.c.onPod(p)
	}
}

// TestAdoptedGangKeepsItsStart: an adopted gang's job starts when its
// first pod started running (status.startTime), not at the adoption, so
// that the engine reads the run so far as the gang's; the time is kept
// within the group's submit (its pods' creation) and the adoption, and a
// gang whose pods report no start starts at the adoption, as before.
func TestAdoptedGangKeepsItsStart(t *testing.T) {
	h0 := newHookEnv(t, Args{}).now                          // the fake clock before the first cycle
	adoption := h0.Add(time.Second)                          // the first cycle's time
	created := time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC) // groupPod's creation time
	at := func(d time.Duration) *metav1.Time {
		v := metav1.NewTime(h0.Add(d))
		return &v
	}
	before := metav1.NewTime(created.Add(-time.Hour))
	for _, tc := range []struct {
		name   string
		starts []*metav1.Time // per pod; nil: none reported
		want   time.Time
	}{
		{"earliest pod start", []*metav1.Time{at(-2 * time.Hour), at(-3 * time.Hour), nil, at(-150 * time.Minute)}, h0.Add(-3 * time.Hour)},
		{"no start reported", make([]*metav1.Time, 4), adoption},
		{"before the pods were created", []*metav1.Time{&before, nil, nil, nil}, created},
		{"after the adoption", []*metav1.Time{at(time.Hour), nil, nil, nil}, adoption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookEnv(t, Args{})
			h.addNodes(testNodes(8)...)
			for i := range 4 {
				p := groupPod("g", fmt.Sprintf("w-%d", i), 8, 4)
				p.Spec.NodeName = nodeName(i)
				p.Status.Phase = v1.PodRunning
				p.Status.StartTime = tc.starts[i]
				h.c.onPod(p)
			}
			h.cycle()
			if !h.now.Equal(adoption) {
				t.Fatalf("the first cycle ran at %v, want %v", h.now, adoption)
			}
			st, ok := h.c.eng.eng.Job("ns/g#1")
			if !ok || st.State.String() != "running" {
				t.Fatalf("the engine's job ns/g#1: %+v (known %v), want running", st, ok)
			}
			if !st.Start.Equal(tc.want) {
				t.Fatalf("adopted job starts at %v, want %v", st.Start, tc.want)
			}
			checkBooks(t, h)
		})
	}
}
