package preempt_test

import (
	"encoding/json"
	"fmt"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/gang/preempt"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Example: a full cluster of two leaves; an urgent gang that needs one
// whole leaf preempts the cheaper leaf's batch jobs, not the long job
// with hours of unsaved work, and never the production job.
func Example() {
	c, _ := topology.FatTree(topology.FatTreeConfig{Spines: 1, LeavesPerSpine: 2, NodesPerLeaf: 4, GPUsPerNode: 8})
	l := gang.NewLedger(c, gang.Options{})
	run := func(id string, nodes, leaf int) *gang.Allocation {
		req := placement.Request{Nodes: nodes, GPUsPerNode: 8, Allowed: c.DomainNodes(2, leaf, nil)}
		if res, err := l.Admit(&gang.Spec{ID: id, Members: []gang.Member{{Name: "w", Request: req}}}); err != nil || !res.Admitted {
			panic(fmt.Sprint(err, res))
		}
		a, _ := l.Get(id)
		return a
	}
	cands := []preempt.Candidate{
		// Leaf 0: a long training job (3 hours since its checkpoint).
		{ID: "train", Alloc: run("train", 4, 0), Class: 0, Policy: preempt.Requeue, Cost: 32 * 3 * 3600},
		// Leaf 1: a production service and two batch jobs.
		{ID: "serve", Alloc: run("serve", 1, 1), Class: 2, Policy: preempt.Never},
		{ID: "batch-a", Alloc: run("batch-a", 2, 1), Class: 0, Policy: preempt.Requeue, Cost: 16 * 1800},
		{ID: "batch-b", Alloc: run("batch-b", 1, 1), Class: 0, Policy: preempt.Cancel, Cost: 8 * 600},
	}
	s, err := preempt.NewSearcher(c, preempt.DefaultOptions())
	if err != nil {
		panic(err)
	}
	var res preempt.Verdict
	ask := func(nodes int) {
		req := &preempt.Preemptor{Class: 1, Gang: &gang.Spec{ID: "urgent", Members: []gang.Member{
			{Name: "w", Request: placement.Request{Nodes: nodes, GPUsPerNode: 8, Required: "leaf"}},
		}}}
		if err := s.Find(l.State(), req, cands, &res); err != nil {
			panic(err)
		}
		if !res.Found {
			fmt.Printf("%d nodes: %s\n", nodes, res.Reason)
			return
		}
		fmt.Printf("%d nodes: preempt %v, %.1f GPU-hours lost, %d leaf, exact %v\n", nodes, res.IDs, float64(res.Cost)/3600, res.Domains, res.Exact)
	}
	ask(3) // three nodes of leaf 1, next to the service
	ask(4) // a whole leaf: only leaf 0 can be freed
	// Output:
	// 3 nodes: preempt [batch-a batch-b], 9.3 GPU-hours lost, 1 leaf, exact true
	// 4 nodes: preempt [train], 96.0 GPU-hours lost, 1 leaf, exact true
}

// Policies have names for configuration files and flags.
func ExampleParsePolicy() {
	for _, name := range []string{"never", "requeue", "cancel", "suspend"} {
		p, ok := preempt.ParsePolicy(name)
		fmt.Println(name, p, ok)
	}
	// Output:
	// never never true
	// requeue requeue true
	// cancel cancel true
	// suspend never false
}

// Policies are names in JSON.
func ExamplePolicy_MarshalText() {
	data, _ := json.Marshal(map[string]preempt.Policy{"train": preempt.Requeue, "serve": preempt.Never})
	fmt.Println(string(data))
	var p preempt.Policy
	fmt.Println(json.Unmarshal([]byte(`"cancel"`), &p), p)
	fmt.Println(json.Unmarshal([]byte(`"suspend"`), &p))
	// Output:
	// {"serve":"never","train":"requeue"}
	// <nil> cancel
	// unknown preemption policy "suspend"
}
