package plugin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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

func TestSmallGang(t *testing.T) {
	e := startEnv(t, testArgs)
	e.createNodes(clusterSpec{nodes: 16})
	e.createNamespace("team")
	e.createPodGroup("team", "small", 4)
	e.createPods(groupPods(e, "team", "small", 4, 8))
	e.waitFor("4 pods bound", 60*time.Second, func() bool { return e.boundIn("team")["small"] == 4 })
	if free := e.engineFree(); free != 16*8-32 {
		t.Fatalf("engine free GPUs %d, want %d", free, 16*8-32)
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
	e.waitFor("the waiting group's reason on its pods", time.Minute, func() bool {
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
	e.waitFor("the 64-GPU group bound", 2*time.Minute, func() bool { return e.boundIn("vision")["vit"] == 8 })
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
