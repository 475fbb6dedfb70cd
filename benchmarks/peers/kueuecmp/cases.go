package kueuecmp

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/placement"
)

// Constraint is the topology constraint of a case.
type Constraint int

const (
	// RequiredLeaf: every pod inside one leaf (Kueue: required rack).
	RequiredLeaf Constraint = iota
	// PreferredSpine: preferably inside one spine (Kueue: preferred
	// block). Phalanx searches the same way with or without it.
	PreferredSpine
	// Unconstrained: no topology constraint (Kueue: unconstrained: true).
	Unconstrained
)

func (c Constraint) String() string {
	switch c {
	case RequiredLeaf:
		return "required leaf"
	case PreferredSpine:
		return "preferred spine"
	case Unconstrained:
		return "unconstrained"
	}
	return fmt.Sprintf("Constraint(%d)", int(c))
}

// Case is one request: Pods pods of PodGPUs GPUs each, with a constraint.
type Case struct {
	PodGPUs    int
	Pods       int
	Constraint Constraint
}

// GPUs returns the GPUs the case asks for.
func (k Case) GPUs() int { return k.Pods * k.PodGPUs }

func (k Case) String() string {
	pods, gpus := "pods", "GPUs"
	if k.Pods == 1 {
		pods = "pod"
	}
	if k.PodGPUs == 1 {
		gpus = "GPU"
	}
	return fmt.Sprintf("%d %s x %d %s, %s", k.Pods, pods, k.PodGPUs, gpus, k.Constraint)
}

// DefaultTotals are the request sizes in GPUs.
var DefaultTotals = []int{8, 64, 512, 1200}

// DefaultPodGPUs are the pod shapes: whole 8-GPU nodes, and single GPUs.
// Pods of 2 or 4 GPUs are left out: Kueue may put several of them on one
// node, which no Phalanx request expresses exactly (Nodes x GPUsPerNode
// puts one per node; GPUs may split a pod over nodes).
var DefaultPodGPUs = []int{8, 1}

// Cases returns every combination of pod shape, total and constraint.
func Cases(podGPUs, totals []int) []Case {
	var out []Case
	for _, g := range podGPUs {
		for _, t := range totals {
			if t%g != 0 {
				continue
			}
			for _, c := range []Constraint{RequiredLeaf, PreferredSpine, Unconstrained} {
				out = append(out, Case{PodGPUs: g, Pods: t / g, Constraint: c})
			}
		}
	}
	return out
}

// PhalanxRequest returns the Phalanx request equivalent to k, for a cluster
// with levels core > spine > leaf and 8-GPU nodes: whole nodes as Nodes x 8
// GPUs, single GPUs as a GPU count (any split over nodes is valid for
// 1-GPU pods).
func (k Case) PhalanxRequest() placement.Request {
	var r placement.Request
	if k.PodGPUs == 1 {
		r.GPUs = k.Pods
	} else {
		r.Nodes, r.GPUsPerNode = k.Pods, k.PodGPUs
	}
	switch k.Constraint {
	case RequiredLeaf:
		r.Required = "leaf"
	case PreferredSpine:
		r.Preferred = "spine"
	}
	return r
}
