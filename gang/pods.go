package gang

import (
	"cmp"
	"iter"
	"slices"

	"github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology"
)

// Pod is one pod of an allocation: a node of a member's assignment and
// the GPUs it holds there, with its identity in the member.
//
// A member's pods are its Assignment entries, one per node; in rank order
// (see the package doc, "Pods and ranks").
type Pod struct {
	// Member is the member's name and MemberIndex its index in
	// Allocation.Members (and in the Spec's Members).
	Member      string `json:"member"`
	MemberIndex int    `json:"member_index"`
	// Rank is the pod's rank within its member, from 0 to Pods-1: its
	// index in the member's Assignment.
	Rank int `json:"rank"`
	// FirstGPURank is the rank, within the member, of the pod's lowest
	// GPU when every GPU runs one process: the GPUs of the pods before it
	// count first, and the pod's GPUs take FirstGPURank, FirstGPURank+1,
	// ... in GPU index order.
	FirstGPURank int `json:"first_gpu_rank"`
	// Node and GPUs say where the pod runs (bit i of GPUs is GPU i of the
	// node).
	Node topology.NodeID `json:"node"`
	GPUs uint64          `json:"gpus"`
}

// NumGPUs returns the number of GPUs the pod holds.
func (p Pod) NumGPUs() int { return bits.PopCount(p.GPUs) }

// Pods returns an iterator over every pod of the allocation: the members
// in order, and each member's pods by rank. It allocates nothing; the
// allocation must not change while the iteration runs.
func (a *Allocation) Pods() iter.Seq[Pod] {
	return func(yield func(Pod) bool) {
		for mi := range a.Members {
			ma := &a.Members[mi]
			gpuRank := 0
			for r, x := range ma.Assignment {
				p := Pod{Member: ma.Name, MemberIndex: mi, Rank: r, FirstGPURank: gpuRank, Node: x.Node, GPUs: x.GPUs}
				if !yield(p) {
					return
				}
				gpuRank += bits.PopCount(x.GPUs)
			}
		}
	}
}

// Pod returns the pod of rank rank in member mi, and false when there is
// no such pod.
func (a *Allocation) Pod(mi, rank int) (Pod, bool) {
	if mi < 0 || mi >= len(a.Members) || rank < 0 || rank >= len(a.Members[mi].Assignment) {
		return Pod{}, false
	}
	ma := &a.Members[mi]
	gpuRank := 0
	for _, x := range ma.Assignment[:rank] {
		gpuRank += bits.PopCount(x.GPUs)
	}
	x := ma.Assignment[rank]
	return Pod{Member: ma.Name, MemberIndex: mi, Rank: rank, FirstGPURank: gpuRank, Node: x.Node, GPUs: x.GPUs}, true
}

// MemberIndex returns the index of the member named name, or -1.
func (a *Allocation) MemberIndex(name string) int {
	for i := range a.Members {
		if a.Members[i].Name == name {
			return i
		}
	}
	return -1
}

// rankOrder puts every member's assignment in rank order: by node, so
// that ranks fill a node, then the next node of the same lowest-level
// domain, then the next domain (node IDs follow topology order).
func rankOrder(out *Allocation) {
	for i := range out.Members {
		slices.SortFunc(out.Members[i].Assignment, byNode)
	}
}

func byNode(x, y topology.NodeAlloc) int { return cmp.Compare(x.Node, y.Node) }
