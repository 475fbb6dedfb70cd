package plugin

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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
