package sim

import (
	"container/heap"
	"time"

	"github.com/phalanx-sched/phalanx/internal/baseline"
	"github.com/phalanx-sched/phalanx/topology"
)

// runPodByPod simulates the stock Kubernetes model: each job is a set of
// pods (one per node of its shape); pods of waiting jobs are bound one at a
// time, in turn across the jobs in arrival order, wherever they fit. A job
// runs once all its pods are bound; until then its bound pods hold GPUs
// that do no work (the deadlock waste). Node failures are not simulated
// under this policy.
func (r *runner) runPodByPod() error {
	s := topology.NewState(r.cfg.Cluster)
	b := baseline.NewPodByPod(s)
	var waiting, active []int
	accounts := map[string]bool{} // the trace's, as newEngine counts them
	for _, j := range r.jobs {
		accounts[j.Account] = true
	}
	fit := nodesWith(r.cfg.Cluster)
	for r.q.Len() > 0 {
		now := r.q[0].at
		if r.stop(now) {
			break
		}
		r.account(now)
		r.now = now
		for r.q.Len() > 0 && r.q[0].at == now {
			ev := heap.Pop(&r.q).(event)
			switch ev.kind {
			case evSubmit:
				j := r.jobs[ev.job]
				if !podsFit(fit, j) {
					r.reject(ev.job)
					continue
				}
				if err := b.Add(j.ID, j.Nodes, j.GPUsPerNode); err != nil {
					return err
				}
				waiting = append(waiting, ev.job)
				r.enqueue(ev.job)
			case evFinish:
				j := r.jobs[ev.job]
				if err := b.Release(j.ID); err != nil {
					return err
				}
				o := &r.out[ev.job]
				o.End, o.Finished = now, true
				o.GPUSeconds += float64(r.gpus[ev.job]) * (now - o.Start).Seconds()
				r.running--
				r.addBusy(ev.job, -1)
				r.leave(ev.job)
			case evFail, evRepair, evTick:
				// Not simulated for this policy.
			}
		}
		t0 := time.Now()
		// Bind pods in turn until a whole round binds nothing. A job whose
		// pod did not fit drops out of this cycle's rounds: nothing frees
		// up within a cycle.
		active = append(active[:0], waiting...)
		for len(active) > 0 && s.FreeGPUs() > 0 {
			kept := active[:0]
			for _, i := range active {
				if b.Bind(r.jobs[i].ID) && !b.Complete(r.jobs[i].ID) {
					kept = append(kept, i)
				}
			}
			active = kept
		}
		{
			// Start the jobs whose pods are all bound.
			kept := waiting[:0]
			for _, i := range waiting {
				j := r.jobs[i]
				if !b.Complete(j.ID) {
					kept = append(kept, i)
					continue
				}
				o := &r.out[i]
				o.Start, o.Started = now, true
				o.Leaves = r.podLeaves(b, j)
				r.gpus[i], r.since[i] = j.shapeGPUs(), now // bound: whole pods of its shape
				r.running++
				r.pending--
				r.addBusy(i, +1)
				d := j.Duration
				if j.TimeLimit > 0 && d > j.TimeLimit {
					d = j.TimeLimit
				}
				heap.Push(&r.q, event{at: now + d, kind: evFinish, job: i})
			}
			waiting = kept
		}
		r.m.cycleTimes = append(r.m.cycleTimes, time.Since(t0))
		r.progress()
		r.held = b.Held()
		if r.idle() {
			break
		}
	}
	r.m.Accounts = len(accounts)
	return nil
}

// podLeaves counts the leaves of a job bound pod by pod.
func (r *runner) podLeaves(b *baseline.PodByPod, j TraceJob) int {
	a := b.Allocation(j.ID)
	return r.leaves(&a)
}

// nodesWith returns, for each GPU count g, how many nodes of c have at
// least g GPUs.
func nodesWith(c *topology.Cluster) []int {
	fit := make([]int, c.MaxNodeGPUs()+1)
	for n := range c.NumNodes() {
		for g := range c.NodeGPUs(topology.NodeID(n)) + 1 {
			fit[g]++
		}
	}
	return fit
}

// podsFit reports whether job j's pods can ever all be bound: its Nodes
// pods on as many nodes of GPUsPerNode GPUs or more (fit: nodesWith). On
// a cluster of unequal nodes a gang may ask for no more nodes, nor GPUs
// per node, than the cluster has, and still never fit; the engine
// rejects it, and so must pod by pod rather than queue it for ever.
func podsFit(fit []int, j TraceJob) bool {
	return j.GPUsPerNode < len(fit) && j.Nodes <= fit[j.GPUsPerNode]
}
