package plugin

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkGangsVersusPodByPod schedules 1,000 pods in 125 gangs (8 pods x 4
// GPUs each, 4,000 GPUs asked of a 2,000-GPU cluster) on 250 nodes of 8 GPUs,
// the pods of all gangs created interleaved, through a real kube-scheduler:
//   - phalanx: the phalanx-scheduler profile (the plugin; PodGroups with
//     minMember 8);
//   - default-pod-by-pod: the default profile, no gang logic (the group
//     label means nothing to it).
//
// Metrics: settle-s is the wall time from the first pod created to the last
// pod bound (polled every 100 ms; the run ends after 5 s without a bind),
// gangs-whole the gangs with all 8 pods bound, pods-bound the pods bound,
// stranded-gpus the GPUs held by pods of gangs that are not whole. Each
// iteration starts its own API server and scheduler (not timed); run it
// once: go test -run '^$' -bench GangsVersusPodByPod -benchtime 1x ./plugin/
func BenchmarkGangsVersusPodByPod(b *testing.B) {
	for _, mode := range []string{"phalanx", "default-pod-by-pod"} {
		b.Run(mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e := startEnv(b, testArgs)
				e.createNodes(clusterSpec{nodes: 250})
				pods := benchPods(e, mode)
				b.StartTimer()
				start := time.Now()
				e.createPods(pods)
				last := e.settle(5 * time.Second)
				b.StopTimer()
				bound := e.boundIn("bench")
				whole, podsBound, stranded := 0, 0, 0
				for g := 0; g < 125; g++ {
					n := bound[fmt.Sprintf("g%03d", g)]
					podsBound += n
					if n == 8 {
						whole++
					} else {
						stranded += 4 * n
					}
				}
				b.ReportMetric(last.Sub(start).Seconds(), "settle-s")
				b.ReportMetric(float64(whole), "gangs-whole")
				b.ReportMetric(float64(podsBound), "pods-bound")
				b.ReportMetric(float64(stranded), "stranded-gpus")
			}
		})
	}
}

// benchPods makes the 125 gangs' pods, interleaved: pod 0 of every gang,
// then pod 1 of every gang, and so on.
func benchPods(e *env, mode string) []*v1.Pod {
	e.createNamespace("bench")
	sched := "default-scheduler"
	if mode == "phalanx" {
		sched = "phalanx-scheduler"
		for g := 0; g < 125; g++ {
			e.createPodGroup("bench", fmt.Sprintf("g%03d", g), 8)
		}
	}
	var pods []*v1.Pod
	for k := 0; k < 8; k++ {
		for g := 0; g < 125; g++ {
			group := fmt.Sprintf("g%03d", g)
			pods = append(pods, e.newPod(podSpec{ns: "bench", group: group, scheduler: sched, gpus: 4}, fmt.Sprintf("%s-%d", group, k)))
		}
	}
	return pods
}

// settle waits until no pod has been bound for quiet and returns when the
// last bind was seen.
func (e *env) settle(quiet time.Duration) time.Time {
	count, last := -1, time.Now()
	for time.Since(last) < quiet {
		n := 0
		for _, c := range e.boundIn("bench") {
			n += c
		}
		if n != count {
			count, last = n, time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}
