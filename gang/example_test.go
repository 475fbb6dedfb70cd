package gang_test

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Two 1,200-GPU jobs on the default 2,000-GPU cluster: the first is
// admitted whole, the second waits holding nothing.
func ExampleLedger() {
	l := gang.NewLedger(topology.Default2000(), gang.Options{})
	for _, id := range []string{"A", "B"} {
		res, err := l.Admit(&gang.Spec{ID: id, Members: []gang.Member{
			{Name: "worker", Request: placement.NodesOf(150, 8)},
		}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s\n", id, res)
	}
	fmt.Printf("free GPUs: %d\n", l.State().FreeGPUs())
	fmt.Print(l.Describe())
	// Output:
	// A: admitted
	// B: member worker: needs 150 nodes with 8 free GPUs; the cluster has 100 (150 nodes left out: 150 short of free GPUs)
	// free GPUs: 800
	// 1 gangs, 1200 of 2000 GPUs allocated
	// A: worker=150 pods on n[000-149]
}
