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

// A node fails: every gang with a member on it is released whole (a gang
// with a dead rank is dead), and the node gives no GPUs until it is up.
// Both gangs share the node here: packing puts small gangs together.
func ExampleLedger_NodeDown() {
	c := topology.Default2000()
	l := gang.NewLedger(c, gang.Options{})
	for _, id := range []string{"train", "eval"} {
		if _, err := l.Admit(&gang.Spec{ID: id, Members: []gang.Member{
			{Name: "worker", Request: placement.NodesOf(2, 4)},
		}}); err != nil {
			panic(err)
		}
	}
	train, _ := l.Get("train")
	n := train.Members[0].Assignment[0].Node
	fmt.Printf("on %s: %v\n", c.NodeName(n), l.GangsOn(n))
	dead, err := l.NodeDown(n)
	fmt.Println("released:", dead, err)
	fmt.Printf("gangs left %d, free GPUs %d\n", l.Len(), l.State().FreeGPUs())
	// Output:
	// on n240: [eval train]
	// released: [eval train] <nil>
	// gangs left 0, free GPUs 1992
}
