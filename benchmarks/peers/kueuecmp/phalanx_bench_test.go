package kueuecmp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// BenchmarkPhalanx times Phalanx's decision alone on the 2k inventory's
// states and every case, as the kueuecmp command does, without building
// Kueue (quick to profile):
//
//	go test -run '^$' -bench Phalanx -cpuprofile cpu.out ./kueuecmp
func BenchmarkPhalanx(b *testing.B) {
	invs, err := Inventories("2k")
	if err != nil {
		b.Fatal(err)
	}
	for _, inv := range invs {
		p := placement.New(inv.Cluster, placement.Options{})
		buf := make([]topology.NodeAlloc, 0, inv.Cluster.NumNodes())
		for _, sp := range DefaultStates {
			fs, err := NewFreeState(inv.Cluster, sp)
			if err != nil {
				b.Fatal(err)
			}
			for _, kc := range Cases(DefaultPodGPUs, DefaultTotals) {
				name := fmt.Sprintf("inv=%s/state=%s/pods=%dx%d/%s", inv.Name, sp.Name, kc.Pods, kc.PodGPUs, strings.ReplaceAll(kc.Constraint.String(), " ", "-"))
				b.Run(name, func(b *testing.B) {
					req := kc.PhalanxRequest()
					b.ReportAllocs()
					for b.Loop() {
						if _, err := p.Place(fs.State, &req, buf); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
