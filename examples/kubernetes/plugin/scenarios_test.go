package plugin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// patience bounds every wait of the scenarios. Runs take seconds; the bound
// is above the API server's 60 s request timeout because on this shared
// machine a run of the whole package has twice seen the scheduler's API
// calls stall for about that long (see the README's note on flakes).
const patience = 150 * time.Second

// testArgs are the plugin args of the tests: a quick Permit timeout, bound
// pods of a torn-down gang deleted at once (no kubelet confirms deletions).
const testArgs = `topology: gke
permitTimeoutSeconds: 20
maxBindAttempts: 3
evictionGracePeriodSeconds: 0
batchMilliseconds: 10`

func groupPods(e *env, ns, group string, n, gpus int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = e.newPod(podSpec{ns: ns, group: group, gpus: gpus}, fmt.Sprintf("%s-%d", group, i))
	}
	return out
}

// TestSmallGang: a 4-pod group binds whole; deleting its pods finishes it.
func TestSmallGang(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 16})
	e.createNamespace("team")
	e.createPodGroup("team", "small", 4)
	e.createPods(groupPods(e, "team", "small", 4, 8))
	e.waitFor("4 pods bound", patience, func() bool { return e.boundIn("team")["small"] == 4 })
	if free := e.engineFree(); free != 16*8-32 {
		t.Fatalf("engine free GPUs %d, want %d", free, 16*8-32)
	}
	// The job ends: every pod deleted gives the gang's GPUs back.
	zero := int64(0)
	for _, p := range e.pods("team") {
		if err := e.client.CoreV1().Pods("team").Delete(e.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("the gang finished", patience, func() bool { return e.ctrl().Stats().Finished == 1 })
	if free := e.engineFree(); free != 16*8 {
		t.Fatalf("engine free GPUs %d after the gang finished, want %d", free, 16*8)
	}
}

// interleave returns a's and b's pods alternately.
func interleave(a, b []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(a)+len(b))
	for i := range a {
		out = append(out, a[i], b[i])
	}
	return out
}

// TestTwoLargeGroupsInterleaved is the README's deadlock case as pod groups:
// two groups of 150 pods x 8 GPUs (1,200 GPUs each) on 250 nodes of 8 GPUs,
// their pods created interleaved. One group binds whole; the other waits
// with nothing bound and nothing held, its pods' condition carrying the
// engine's reason.
func TestTwoLargeGroupsInterleaved(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 250})
	e.createNamespace("llm")
	e.createPodGroup("llm", "job-a", 150)
	e.createPodGroup("llm", "job-b", 150)
	e.createPods(interleave(groupPods(e, "llm", "job-a", 150, 8), groupPods(e, "llm", "job-b", 150, 8)))
	e.waitFor("one group bound whole", 3*time.Minute, func() bool {
		b := e.boundIn("llm")
		return b["job-a"] == 150 || b["job-b"] == 150
	})
	winner, loser := "job-a", "job-b"
	if e.boundIn("llm")["job-b"] == 150 {
		winner, loser = loser, winner
	}
	e.waitFor("the waiting group's reason on its pods", patience, func() bool {
		for _, p := range e.pods("llm") {
			if p.Labels[LabelPodGroup] == loser && !strings.HasPrefix(condition(&p), "phalanx: no planned start") {
				return false
			}
		}
		return true
	})
	if b := e.boundIn("llm"); b[winner] != 150 || b[loser] != 0 {
		t.Fatalf("bound pods %v: want %s 150 and %s 0", b, winner, loser)
	}
	if free := e.engineFree(); free != 2000-1200 {
		t.Fatalf("engine free GPUs %d, want 800: the waiting group must hold nothing", free)
	}
	for _, p := range e.pods("llm") {
		if p.Labels[LabelPodGroup] == loser {
			t.Logf("%s waits: %s", p.Name, condition(&p))
			break
		}
	}
}

// TestGroupInsideOneLeaf: a 64-GPU group (8 pods x 8 GPUs) on a cluster
// whose nodes are partly used by pods Phalanx did not place (bound directly,
// as DaemonSet pods are): only leaf09 has 8 idle nodes, the other leaves 6
// each. The group binds inside leaf09.
func TestGroupInsideOneLeaf(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 250})
	e.createNamespace("infra")
	var foreign []*v1.Pod
	for i := 0; i < 250; i++ {
		leaf, k := i/16, i%16
		idle := 6
		if leaf == 9 {
			idle = 8
		}
		if k%2 == 0 && k/2 < idle { // spread the idle nodes over the leaf
			continue
		}
		foreign = append(foreign, e.newPod(podSpec{ns: "infra", scheduler: "other", node: nodeName(i), gpus: 4}, "agent-"+nodeName(i)))
	}
	e.createPods(foreign)
	e.createNamespace("vision")
	e.createPodGroup("vision", "vit", 8)
	e.createPods(groupPods(e, "vision", "vit", 8, 8))
	e.waitFor("the 64-GPU group bound", patience, func() bool { return e.boundIn("vision")["vit"] == 8 })
	leaves := map[string]bool{}
	for _, p := range e.pods("vision") {
		n, err := e.client.CoreV1().Nodes().Get(e.ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		leaves[n.Labels["cloud.google.com/gce-topology-subblock"]] = true
	}
	if len(leaves) != 1 || !leaves["leaf09"] {
		t.Fatalf("the group spans leaves %v, want only leaf09", leaves)
	}
	if free, want := e.engineFree(), 2000-4*len(foreign)-64; free != want {
		t.Fatalf("engine free GPUs %d, want %d (foreign pods counted)", free, want)
	}
}

// TestBindFailureRetried: one pod's bind fails once. The pod retries on the
// node of its rank (the gang keeps its GPUs) and the gang binds whole.
func TestBindFailureRetried(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 16})
	e.createNamespace("team")
	e.createPodGroup("team", "g", 4)
	e.flaky.mu.Lock()
	e.flaky.fail["g-2"] = 1
	e.flaky.mu.Unlock()
	e.createPods(groupPods(e, "team", "g", 4, 8))
	e.waitFor("the gang bound", patience, func() bool { return e.boundIn("team")["g"] == 4 })
	if n := e.flaky.failures("g-2"); n != 1 {
		t.Fatalf("g-2 failed to bind %d times, want 1", n)
	}
	// PostBind, which counts the start, runs after the API shows the
	// last pod bound: wait for it before reading the counters.
	e.waitFor("the start counted", patience, func() bool { return e.ctrl().Stats().Started > 0 })
	if s := e.ctrl().Stats(); s.Teardowns != 0 || s.Admissions != 1 || s.Started != 1 {
		t.Fatalf("stats %+v: want one admission, one start, no teardown", s)
	}
	if free := e.engineFree(); free != 16*8-32 {
		t.Fatalf("engine free GPUs %d, want %d", free, 16*8-32)
	}
}

// TestBindFailureReplaced: one pod's bind fails twice. The first failure
// retries on the node of its rank; the second has the engine move the pod
// (Engine.ReplacePod, same member and rank), and it binds there: the gang
// runs whole with one admission and no teardown, and the engine's books
// hold it on the new node.
func TestBindFailureReplaced(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 16})
	e.createNamespace("team")
	e.createPodGroup("team", "g", 4)
	e.flaky.mu.Lock()
	e.flaky.fail["g-2"] = 2
	e.flaky.mu.Unlock()
	e.createPods(groupPods(e, "team", "g", 4, 8))
	e.waitFor("the gang bound", patience, func() bool { return e.boundIn("team")["g"] == 4 })
	failed := e.flaky.failedOn("g-2")
	if len(failed) != 2 || failed[0] != failed[1] {
		t.Fatalf("g-2 failed to bind on %v: want twice on the node of its rank", failed)
	}
	e.waitFor("the start counted", patience, func() bool { return e.ctrl().Stats().Started > 0 }) // PostBind runs after the bind
	nodes := map[string]bool{}
	for _, p := range e.pods("team") {
		nodes[p.Spec.NodeName] = true
		if p.Name == "g-2" && p.Spec.NodeName == failed[0] {
			t.Fatalf("g-2 bound to %s, the node it failed on: it was not moved", failed[0])
		}
	}
	if len(nodes) != 4 {
		t.Fatalf("the gang's pods share nodes: %v", nodes)
	}
	c := e.ctrl()
	c.mu.Lock()
	var held []string
	if g := c.groups["team/g"]; g != nil && g.inc != nil {
		held = c.eng.jobNodes(g.inc.job)
	}
	c.mu.Unlock()
	for _, n := range held {
		delete(nodes, n)
	}
	if len(held) != 4 || len(nodes) != 0 {
		t.Fatalf("the engine holds the gang on %v; its pods are bound elsewhere too: %v", held, nodes)
	}
	if s := e.ctrl().Stats(); s.Replaced != 1 || s.Kept != 0 || s.Teardowns != 0 || s.Admissions != 1 || s.Started != 1 {
		t.Fatalf("stats %+v: want one pod moved, one admission, one start, no teardown", s)
	}
	if free := e.engineFree(); free != 16*8-32 {
		t.Fatalf("engine free GPUs %d, want %d", free, 16*8-32)
	}
}

// TestBindFailureTearsDown: one pod's bind always fails. After
// Args.MaxBindAttempts the gang is torn down: its bound pods are deleted (no
// partial gang is left running), the engine holds nothing for it, and the
// pod that never bound waits with a reason.
func TestBindFailureTearsDown(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 16})
	e.createNamespace("team")
	e.createPodGroup("team", "g", 4)
	e.flaky.mu.Lock()
	e.flaky.fail["g-2"] = -1
	e.flaky.mu.Unlock()
	e.createPods(groupPods(e, "team", "g", 4, 8))
	e.waitFor("the gang torn down and its bound pods deleted", patience, func() bool {
		return e.ctrl().Stats().Teardowns >= 1 && len(e.pods("team")) == 1 && e.boundIn("team")["g"] == 0
	})
	if n := e.flaky.failures("g-2"); n != 3 {
		t.Fatalf("g-2 failed to bind %d times, want 3 (maxBindAttempts)", n)
	}
	// The deleted pods count as foreign GPUs until the informer sees them go.
	e.waitFor("every GPU free in the engine", patience, func() bool { return e.engineFree() == 16*8 })
	e.waitFor("the remaining pod's reason", patience, func() bool {
		p := e.pods("team")[0]
		return strings.Contains(condition(&p), "waiting for pods: 1 of the group's minimum 4")
	})
}

// TestBindInFlightAtTeardown: the gang is torn down (g-2's bind keeps
// failing) while the bind of another of its pods (g-0, held back by the
// test) is still in flight. That bind succeeds after the teardown; the
// plugin deletes the pod, so no part of the torn-down gang keeps running,
// and only g-2, never bound, stays pending.
func TestBindInFlightAtTeardown(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 16})
	e.createNamespace("team")
	e.createPodGroup("team", "g", 4)
	torn := func() bool { return e.ctrl().Stats().Teardowns >= 1 }
	e.flaky.mu.Lock()
	e.flaky.fail["g-2"] = -1
	e.flaky.gate = map[string]func() bool{"g-0": torn}
	e.flaky.mu.Unlock()
	e.createPods(groupPods(e, "team", "g", 4, 8))
	e.waitFor("the gang torn down and every bound pod deleted", patience, func() bool {
		return torn() && len(e.pods("team")) == 1 && e.boundIn("team")["g"] == 0
	})
	if p := e.pods("team")[0]; p.Name != "g-2" || p.Spec.NodeName != "" {
		t.Fatalf("left %s on node %q, want g-2 pending", p.Name, p.Spec.NodeName)
	}
	if ev := e.ctrl().Stats().Evictions; ev != 3 {
		t.Errorf("%d evictions, want 3 (g-1 and g-3 at the teardown, g-0 once its bind landed)", ev)
	}
	e.waitFor("every GPU free in the engine", patience, func() bool { return e.engineFree() == 16*8 })
}

// TestNodeNotReadyUnderRunningGang: a node of a bound gang goes NotReady.
// The engine marks it down and ends the gang; the plugin deletes the gang's
// pods (a gang with a dead rank is dead). Recreated pods (as a Job
// controller would make them) bind again, away from the failed node.
func TestNodeNotReadyUnderRunningGang(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 16})
	e.createNamespace("team")
	e.createPodGroup("team", "g", 4)
	e.createPods(groupPods(e, "team", "g", 4, 8))
	e.waitFor("the gang bound", patience, func() bool { return e.boundIn("team")["g"] == 4 })
	var failed string
	for _, p := range e.pods("team") {
		if p.Name == "g-0" {
			failed = p.Spec.NodeName
		}
	}
	e.setReady(failed, false)
	e.waitFor("the gang's pods deleted", patience, func() bool { return len(e.pods("team")) == 0 })
	e.waitFor("every GPU but the down node's free in the engine", patience, func() bool { return e.engineFree() == 15*8 })
	e.createPods(groupPods(e, "team", "g", 4, 8))
	e.waitFor("the recreated gang bound", patience, func() bool { return e.boundIn("team")["g"] == 4 })
	for _, p := range e.pods("team") {
		if p.Spec.NodeName == failed {
			t.Fatalf("%s bound to the NotReady node %s", p.Name, failed)
		}
	}
}

// TestForeignPodsCounted: GPUs used by pods of another scheduler (here the
// default profile) and by a pod bound directly (as DaemonSet pods are) are
// used GPUs for Phalanx: a gang that needs more idle nodes than remain waits
// with the engine's reason, and binds once a foreign pod is gone, never onto
// a node a foreign pod uses.
func TestForeignPodsCounted(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 16})
	e.createNamespace("other")
	var others []*v1.Pod
	for i := 0; i < 12; i++ {
		others = append(others, e.newPod(podSpec{ns: "other", scheduler: "default-scheduler", gpus: 8}, fmt.Sprintf("web-%d", i)))
	}
	e.createPods(others)
	e.waitFor("the default scheduler's pods bound", patience, func() bool { return e.boundIn("other")[""] == 12 })
	used := map[string]bool{}
	for _, p := range e.pods("other") {
		used[p.Spec.NodeName] = true
	}
	var free string
	for i := 0; i < 16 && free == ""; i++ {
		if !used[nodeName(i)] {
			free = nodeName(i)
		}
	}
	e.createPods([]*v1.Pod{e.newPod(podSpec{ns: "other", scheduler: "none", node: free, gpus: 8}, "agent")})
	used[free] = true
	e.createNamespace("team")
	e.createPodGroup("team", "g", 4)
	e.createPods(groupPods(e, "team", "g", 4, 8))
	e.waitFor("the gang's reason", patience, func() bool {
		for _, p := range e.pods("team") {
			if !strings.HasPrefix(condition(&p), "phalanx: no planned start") {
				return false
			}
		}
		return true
	})
	if b := e.boundIn("team")["g"]; b != 0 {
		t.Fatalf("%d pods of the gang bound with 3 idle nodes", b)
	}
	e.waitFor("13 nodes' GPUs used by foreign pods in the engine", patience, func() bool { return e.engineFree() == 3*8 })
	zero := int64(0)
	if err := e.client.CoreV1().Pods("other").Delete(e.ctx, "web-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the gang bound", patience, func() bool { return e.boundIn("team")["g"] == 4 })
	for _, p := range e.pods("team") {
		if used[p.Spec.NodeName] && p.Spec.NodeName != "" {
			owner := ""
			for _, o := range e.pods("other") {
				if o.Spec.NodeName == p.Spec.NodeName {
					owner = o.Name
				}
			}
			if owner != "" {
				t.Fatalf("%s bound to %s, used by %s", p.Name, p.Spec.NodeName, owner)
			}
		}
	}
}

// TestOtherFiltersShapeTheAllowedSet: the profile's other Filter plugins
// decide where a group's pods may go, per pod shape, before the engine
// places the gang. Workers select pool=train nodes (n016-n031) and cannot
// tolerate the taint on n020; the launcher (another shape, 2 GPUs) selects
// nothing. The gang is placed once, with no pod rejected on its node.
func TestOtherFiltersShapeTheAllowedSet(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 32})
	for i := 16; i < 32; i++ {
		e.updateNode(nodeName(i), func(n *v1.Node) { n.Labels["pool"] = "train" })
	}
	e.updateNode("n020", func(n *v1.Node) {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}}
	})
	e.createNamespace("team")
	e.createPodGroup("team", "mpi", 9)
	pods := groupPods(e, "team", "mpi", 9, 8)
	for _, p := range pods[1:] {
		p.Spec.NodeSelector = map[string]string{"pool": "train"}
	}
	pods[0].Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = *resource.NewQuantity(2, resource.DecimalSI)
	e.createPods(pods)
	e.waitFor("the gang bound", patience, func() bool { return e.boundIn("team")["mpi"] == 9 })
	for _, p := range e.pods("team") {
		if p.Name == "mpi-0" {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(p.Spec.NodeName, "n%d", &i); err != nil || i < 16 || p.Spec.NodeName == "n020" {
			t.Fatalf("%s bound to %s: not an allowed node", p.Name, p.Spec.NodeName)
		}
	}
	if s := e.ctrl().Stats(); s.Teardowns != 0 || s.Scouts != 2 || s.Admissions != 1 {
		t.Fatalf("stats %+v: want 2 scouts (two shapes), one admission, no teardown", s)
	}
}

// TestAllowedSetMeasuredAgain: a waiting gang's allowed nodes are measured
// again after allowedTTLSeconds. Workers may use only untainted nodes: 5 of
// 16, and 2 of those are busy with foreign pods, so the gang of 4 waits.
// Once the taint is lifted from two more nodes the next measurement finds
// them, the gang's allowed sets are changed in the engine (Engine.Update:
// the same job; it was withdrawn and submitted again before) and it binds.
func TestAllowedSetMeasuredAgain(t *testing.T) {
	e := startEnv(t, strings.Replace(testArgs, "maxBindAttempts: 3", "maxBindAttempts: 3\nallowedTTLSeconds: 2", 1))
	e.createNodes(clusterSpec{nodes: 16})
	taint := []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}}
	for i := 5; i < 16; i++ {
		e.updateNode(nodeName(i), func(n *v1.Node) { n.Spec.Taints = taint })
	}
	e.createNamespace("other")
	e.createPods([]*v1.Pod{
		e.newPod(podSpec{ns: "other", scheduler: "none", node: "n000", gpus: 8}, "agent-0"),
		e.newPod(podSpec{ns: "other", scheduler: "none", node: "n001", gpus: 8}, "agent-1")})
	e.createNamespace("team")
	e.createPodGroup("team", "g", 4)
	e.createPods(groupPods(e, "team", "g", 4, 8))
	e.waitFor("the gang waiting in the engine", patience, func() bool {
		c := e.ctrl()
		c.mu.Lock()
		defer c.mu.Unlock()
		g := c.groups["team/g"]
		return g != nil && g.inc != nil && !g.inc.admitted
	})
	if b := e.boundIn("team")["g"]; b != 0 {
		t.Fatalf("%d pods bound with 3 allowed idle nodes", b)
	}
	for _, n := range []string{"n010", "n011"} {
		e.updateNode(n, func(n *v1.Node) { n.Spec.Taints = nil })
	}
	e.waitFor("the gang bound after the new measurement", patience, func() bool { return e.boundIn("team")["g"] == 4 })
	if s := e.ctrl().Stats(); s.Submits != 1 || s.Admissions != 1 || s.Teardowns != 0 {
		t.Fatalf("stats %+v: want one submission (its sets updated in place), one admission and no teardown", s)
	}
}
