// Package baseline holds the schedulers Phalanx is compared with in tests,
// the simulator and the examples; importers have no use for them.
package baseline

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// PodByPod is the baseline that gang admission beats. It models the stock
// Kubernetes scheduler facing multi-pod jobs: it knows nothing of gangs,
// takes pods one at a time as they arrive, and binds each one to a node
// where it fits (here the first such node in node order; kube-scheduler's
// scoring would choose other nodes, but bind the same pods). A job runs
// only once all its pods are bound; until then its bound pods hold their
// GPUs and do no work. When pods of several jobs arrive interleaved, the
// jobs can split the cluster between them and wait for each other forever.
//
// It exists for tests, the simulator and the examples. It is not safe for
// concurrent use.
type PodByPod struct {
	s     *topology.State
	p     *placement.Placer
	gangs map[string]*podGang
	buf   []topology.NodeAlloc
	held  int // GPUs bound to jobs not yet complete
}

type podGang struct {
	pods  int
	req   placement.Request
	bound []topology.NodeAlloc
	gpus  int // GPUs bound
}

// NewPodByPod returns a pod-by-pod binder working on state s.
func NewPodByPod(s *topology.State) *PodByPod {
	p := placement.New(s.Cluster(), placement.Options{})
	Use(p, FirstFit, 0)
	return &PodByPod{s: s, p: p, gangs: make(map[string]*podGang)}
}

// Add registers job id with pods pods of gpusPerPod GPUs each (0: a whole
// node), none bound yet.
func (b *PodByPod) Add(id string, pods, gpusPerPod int) error {
	if _, dup := b.gangs[id]; dup {
		return fmt.Errorf("%w: %s", gang.ErrDuplicateID, id)
	}
	b.gangs[id] = &podGang{pods: pods, req: placement.Request{Nodes: 1, GPUsPerNode: gpusPerPod}}
	return nil
}

// Bind binds the next pod of job id where it fits and reports whether it
// did (false when the job has no pending pod or no node has room).
func (b *PodByPod) Bind(id string) bool {
	g, ok := b.gangs[id]
	if !ok || len(g.bound) >= g.pods || !b.room(g.req.GPUsPerNode) {
		return false
	}
	res, err := b.p.Place(b.s, &g.req, b.buf)
	if err != nil || !res.Placed {
		return false
	}
	if err := b.s.Allocate(res.Assignment); err != nil {
		panic(fmt.Sprintf("gang: pod-by-pod placement refused: %v", err))
	}
	g.bound = append(g.bound, res.Assignment...)
	n := 0
	for _, x := range res.Assignment {
		n += bits.PopCount(x.GPUs)
	}
	g.gpus += n
	if len(g.bound) == g.pods {
		b.held -= g.gpus - n // it runs: none of its GPUs is held idle
	} else {
		b.held += n
	}
	return true
}

// room reports whether some node can take a pod of gpus GPUs (0: a whole
// node) now: when none can, placing one would fail, and the failure's
// explanation is not worth its cost to a binder that ignores it.
func (b *PodByPod) room(gpus int) bool {
	switch {
	case gpus == 0:
		return b.s.Idle().Any()
	case gpus < 0 || gpus > b.s.Cluster().MaxNodeGPUs():
		return false // the placer refuses or fails it
	}
	return b.s.Avail(gpus).Any()
}

// BindInterleaved binds pods of the given jobs in turn, one pod of each
// job per round, until no pod of any of them binds; it returns the number
// of pods bound. This is how pods of jobs submitted together reach a
// scheduler that has no gang semantics.
func (b *PodByPod) BindInterleaved(ids ...string) int {
	total := 0
	for {
		n := 0
		for _, id := range ids {
			if b.Bind(id) {
				n++
			}
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

// Complete reports whether every pod of job id is bound (the job runs).
func (b *PodByPod) Complete(id string) bool {
	g, ok := b.gangs[id]
	return ok && len(g.bound) == g.pods
}

// Bound returns the number of bound pods of job id.
func (b *PodByPod) Bound(id string) int {
	if g, ok := b.gangs[id]; ok {
		return len(g.bound)
	}
	return 0
}

// HeldGPUs returns the GPUs bound to job id.
func (b *PodByPod) HeldGPUs(id string) int {
	if g, ok := b.gangs[id]; ok {
		return g.gpus
	}
	return 0
}

// Held returns the GPUs bound to the jobs not yet complete: held, doing
// no work (the sum of HeldGPUs over those jobs).
func (b *PodByPod) Held() int { return b.held }

// Release unbinds every pod of job id and forgets it.
func (b *PodByPod) Release(id string) error {
	g, ok := b.gangs[id]
	if !ok {
		return fmt.Errorf("%w: %s", gang.ErrUnknownGang, id)
	}
	if err := b.s.Release(g.bound); err != nil {
		return err
	}
	if len(g.bound) < g.pods {
		b.held -= g.gpus
	}
	delete(b.gangs, id)
	return nil
}

// Allocation returns the pods bound to job id as an allocation with one
// member named "pods".
func (b *PodByPod) Allocation(id string) gang.Allocation {
	a := gang.Allocation{ID: id}
	if g, ok := b.gangs[id]; ok {
		a.Members = []gang.MemberAllocation{{Name: "pods", Pods: len(g.bound), Assignment: append([]topology.NodeAlloc(nil), g.bound...)}}
	}
	return a
}
