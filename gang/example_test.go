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

// The pods of a gang in rank order: a launcher, and 64 GPUs of workers on
// 8-GPU nodes of one leaf. Ranks fill a node, then the next node of the
// same leaf; with one process per GPU, worker GPU ranks 0-7 are on the
// first node and 8-15 on the next.
func ExampleAllocation_Pods() {
	c := topology.Default2000()
	l := gang.NewLedger(c, gang.Options{})
	if _, err := l.Admit(&gang.Spec{ID: "small", Members: []gang.Member{
		{Name: "worker", Request: placement.NodesOf(2, 8)},
	}}); err != nil {
		panic(err)
	}
	if _, err := l.Admit(&gang.Spec{ID: "train", Members: []gang.Member{
		{Name: "launcher", Request: placement.NodesOf(1, 1)},
		{Name: "worker", Request: placement.Request{GPUs: 64, Required: "leaf"}},
	}}); err != nil {
		panic(err)
	}
	train, _ := l.Get("train")
	for p := range train.Pods() {
		fmt.Printf("%s rank %d on %s, GPU ranks %d-%d\n", p.Member, p.Rank, c.NodeName(p.Node), p.FirstGPURank, p.FirstGPURank+p.NumGPUs()-1)
	}
	// Output:
	// launcher rank 0 on n192, GPU ranks 0-0
	// worker rank 0 on n242, GPU ranks 0-7
	// worker rank 1 on n243, GPU ranks 8-15
	// worker rank 2 on n244, GPU ranks 16-23
	// worker rank 3 on n245, GPU ranks 24-31
	// worker rank 4 on n246, GPU ranks 32-39
	// worker rank 5 on n247, GPU ranks 40-47
	// worker rank 6 on n248, GPU ranks 48-55
	// worker rank 7 on n249, GPU ranks 56-63
}

// A pod's bind failed: the adapter re-places that one pod instead of
// releasing the gang. It keeps its rank and stays in the leaf the gang
// requires; the other pods stay where they are.
func ExampleLedger_ReplacePod() {
	c := topology.Default2000()
	l := gang.NewLedger(c, gang.Options{})
	if _, err := l.Admit(&gang.Spec{ID: "train", Members: []gang.Member{
		{Name: "worker", Request: placement.Request{Nodes: 4, GPUsPerNode: 8, Required: "leaf"}},
	}}); err != nil {
		panic(err)
	}
	rep, err := l.ReplacePod("train", "worker", 1, nil)
	if err != nil || !rep.Replaced {
		panic(fmt.Sprint(rep.Reason, err))
	}
	fmt.Printf("rank %d: %s -> %s, inside %s %d\n", rep.New.Rank, c.NodeName(rep.Old.Node), c.NodeName(rep.New.Node), rep.Scope, rep.ScopeDomain)
	train, _ := l.Get("train")
	for p := range train.Pods() {
		fmt.Printf("rank %d on %s\n", p.Rank, c.NodeName(p.Node))
	}
	err = l.ReleasePod("train", "worker", 1)
	fmt.Println(err)
	// Output:
	// rank 1: n241 -> n244, inside leaf 15
	// rank 0 on n240
	// rank 1 on n244
	// rank 2 on n242
	// rank 3 on n243
	// gang: pod cannot be released: gang train member worker pod 1: the member has a fixed size of 4 pods (re-place the pod, or release the gang)
}
