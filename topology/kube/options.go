package kube

import (
	"fmt"
	"strings"

	"github.com/phalanx-sched/phalanx/topology"
)

// Well-known Kubernetes node label keys, for Options.Levels and
// Options.NodeSelector.
const (
	// LabelHostname is the node's own host name. As the last entry
	// of Options.Levels it stands for the node itself and adds no
	// level.
	LabelHostname = "kubernetes.io/hostname"
	// LabelZone is the cloud availability zone of a node.
	LabelZone = "topology.kubernetes.io/zone"
	// LabelGKEBlock is the GKE (Compute Engine) topology block: the
	// largest group of hosts with a low-latency network between them.
	LabelGKEBlock = "cloud.google.com/gce-topology-block"
	// LabelGKESubblock is the GKE topology sub-block: a group of
	// hosts inside one block, closer to each other (about a rack).
	LabelGKESubblock = "cloud.google.com/gce-topology-subblock"
	// LabelGKEHost is the GKE physical host a VM runs on.
	LabelGKEHost = "cloud.google.com/gce-topology-host"
	// LabelAWSLayer1 is the top (farthest from the instance) EC2
	// network node of an EKS node, from EC2 instance topology.
	LabelAWSLayer1 = "topology.k8s.aws/network-node-layer-1"
	// LabelAWSLayer2 is the middle EC2 network node of an EKS node.
	LabelAWSLayer2 = "topology.k8s.aws/network-node-layer-2"
	// LabelAWSLayer3 is the third EC2 network node of an EKS node: the
	// one it connects to directly (the lowest layer) on instance types
	// whose topology has three layers, most of them; on four-layer
	// types (p6-b200, p6-b300) LabelAWSLayer4 is below it.
	LabelAWSLayer3 = "topology.k8s.aws/network-node-layer-3"
	// LabelAWSLayer4 is the EC2 network node an EKS node connects to
	// directly on instance types whose topology has four layers
	// (p6-b200, p6-b300); nodes of other types do not carry it.
	LabelAWSLayer4 = "topology.k8s.aws/network-node-layer-4"
	// LabelNVLinkClique is set by NVIDIA GPU Feature Discovery on
	// nodes of a multi-node NVLink system (such as GB200 NVL72): nodes
	// with equal values share one NVLink fabric. The value is
	// "<cluster UUID>.<clique ID>".
	LabelNVLinkClique = "nvidia.com/gpu.clique"
)

// DefaultGPUResource is the extended resource counted as GPUs when
// Options.GPUResource is empty.
const DefaultGPUResource = "nvidia.com/gpu"

// Options says how Parse turns Kubernetes nodes into a ClusterSpec.
// The zero value reads a flat cluster of every node with NVIDIA GPUs.
type Options struct {
	// Levels lists node label keys, top to bottom, like the levels of a
	// Kueue Topology: for example {"cloud.provider.com/topology-block",
	// "cloud.provider.com/topology-rack", "kubernetes.io/hostname"}. Each
	// key becomes one level of the ClusterSpec and a node's label values become
	// its Path. A domain is identified by its path of values (Kueue's
	// rule): rack "r1" under block "b1" and rack "r1" under block "b2"
	// are two domains. LabelHostname may only be the last key; it
	// names the node itself and adds no level. Empty Levels is a flat
	// cluster. At most topology.MaxLevels levels.
	Levels []string
	// LevelNames optionally names the ClusterSpec's levels, one entry per entry
	// of Levels (the entry for a trailing LabelHostname is ignored).
	// When LevelNames is empty, a level is named after its key: the part
	// after the last '/', then after the last '.' ("rack" for
	// "example.com/rack", "clique" for "nvidia.com/gpu.clique"); if two
	// levels would get the same name, every level is named by its full
	// key instead.
	LevelNames []string
	// GPUResource is the extended resource whose count is a node's GPU
	// count; DefaultGPUResource when empty.
	GPUResource string
	// NodeSelector, when not empty, keeps only the nodes that carry all
	// of its labels with exactly these values (like the node labels of a
	// Kueue ResourceFlavor); other nodes are skipped. Selected nodes must
	// have every level label.
	NodeSelector map[string]string
	// SkipNodesWithoutGPUs skips nodes that have no GPUs (CPU-only
	// nodes, control-plane nodes). Without it such a node is an
	// ErrGPUCount error. Skipped nodes need no level labels.
	SkipNodesWithoutGPUs bool
	// Source names the input in defects and in topology.NodeSpec.Source, for
	// example the file name "nodes.json"; "kube nodes" when empty.
	Source string
	// MaxDefects bounds the defects listed in an error (the rest are
	// counted); 0 means 100.
	MaxDefects int
}

// PresetGKE returns options for GKE clusters with compact placement
// or reservations: levels block, subblock and host from the
// cloud.google.com/gce-topology-* labels. A host is one physical machine;
// with one GPU VM per machine each host domain holds one node.
func PresetGKE() Options {
	return Options{
		Levels:     []string{LabelGKEBlock, LabelGKESubblock, LabelGKEHost},
		LevelNames: []string{"block", "subblock", "host"},
	}
}

// PresetAWS returns options for EKS clusters of instance types whose EC2
// instance topology has three layers (most of them, p5 among them):
// levels layer1, layer2 and layer3 from the
// topology.k8s.aws/network-node-layer-* labels, top to bottom; layer3 is
// the network node the instances attach to. For four-layer types
// (p6-b200, p6-b300) use PresetAWSFourLayers: this preset ignores their
// bottom layer, so nodes on different layer-4 network nodes would share
// one lowest domain as if they were as close as nodes on one.
func PresetAWS() Options {
	return Options{
		Levels:     []string{LabelAWSLayer1, LabelAWSLayer2, LabelAWSLayer3},
		LevelNames: []string{"layer1", "layer2", "layer3"},
	}
}

// PresetAWSFourLayers returns options for EKS clusters of instance types
// whose EC2 instance topology has four layers (p6-b200, p6-b300): levels
// layer1 to layer4 from the topology.k8s.aws/network-node-layer-*
// labels, top to bottom; layer4 is the network node the instances attach
// to. Every selected node must carry all four labels; in a cluster that
// also has three-layer types, load each kind apart with a NodeSelector on
// node.kubernetes.io/instance-type, or use PresetAWS for all.
func PresetAWSFourLayers() Options {
	return Options{
		Levels:     []string{LabelAWSLayer1, LabelAWSLayer2, LabelAWSLayer3, LabelAWSLayer4},
		LevelNames: []string{"layer1", "layer2", "layer3", "layer4"},
	}
}

// PresetNVLinkClique returns options with one level, clique, from the
// nvidia.com/gpu.clique label that NVIDIA GPU Feature Discovery sets: each
// domain is one multi-node NVLink domain (for GB200 NVL72, 18 nodes of 4
// GPUs). Every selected node must carry the label; use NodeSelector or
// SkipNodesWithoutGPUs to leave other nodes out.
func PresetNVLinkClique() Options {
	return Options{
		Levels:     []string{LabelNVLinkClique},
		LevelNames: []string{"clique"},
	}
}

// PresetZone returns options with one level, zone, from the
// topology.kubernetes.io/zone label: a coarse topology for clusters whose
// nodes carry no network topology labels.
func PresetZone() Options {
	return Options{
		Levels:     []string{LabelZone},
		LevelNames: []string{"zone"},
	}
}

// Status reports what Parse learned besides the ClusterSpec: which
// nodes cannot take work now and which nodes were left out. Names are in
// input order; each node is in at most one list.
type Status struct {
	// Down lists nodes of the ClusterSpec that cannot run work: their Ready
	// condition is not "True" (False, Unknown or missing), or they report
	// no allocatable GPUs although their capacity has some (the device
	// plugin is not serving them). A scheduler marks them down.
	Down []string
	// Drained lists nodes of the ClusterSpec that are cordoned
	// (spec.unschedulable) and not Down: running work may finish, nothing
	// new starts. A scheduler marks them drained.
	Drained []string
	// Skipped lists nodes left out of the ClusterSpec: those NodeSelector does
	// not match and, with SkipNodesWithoutGPUs, those without GPUs.
	Skipped []string
	// Warnings lists what loaded but deserves a look: no node has a
	// Ready condition (the input is probably not kubectl output, and
	// every node is reported Down), or every node is down.
	Warnings []topology.Defect
}

// Validate checks the options: level keys non-empty and distinct,
// LabelHostname only as the last key, at most topology.MaxLevels levels, and
// LevelNames, when given, one non-empty distinct name per entry of Levels
// (the name of a trailing hostname key may be empty). Errors
// wrap topology.ErrInvalidSpec or topology.ErrDuplicate.
func (o *Options) Validate() error {
	_, err := o.resolve()
	return err
}

// levels is Options.Levels resolved: the label key and Spec level
// name of each level, without a trailing hostname key.
type levels struct {
	keys  []string
	names []string
}

func (o Options) resolve() (levels, error) {
	keys := o.Levels
	for i, k := range keys {
		if k == "" {
			return levels{}, fmt.Errorf("%w: kube level %d has no label key", topology.ErrInvalidSpec, i)
		}
		for _, prev := range keys[:i] {
			if prev == k {
				return levels{}, fmt.Errorf("%w: kube level label %q listed twice", topology.ErrDuplicate, k)
			}
		}
		if k == LabelHostname && i != len(keys)-1 {
			return levels{}, fmt.Errorf("%w: kube level label %q must be the last level (it names the node itself)", topology.ErrInvalidSpec, k)
		}
	}
	if len(o.LevelNames) != 0 && len(o.LevelNames) != len(keys) {
		return levels{}, fmt.Errorf("%w: %d kube level names for %d levels", topology.ErrInvalidSpec, len(o.LevelNames), len(keys))
	}
	if n := len(keys); n > 0 && keys[n-1] == LabelHostname {
		keys = keys[:n-1]
	}
	if len(keys) > topology.MaxLevels {
		return levels{}, fmt.Errorf("%w: %d kube levels, at most %d", topology.ErrInvalidSpec, len(keys), topology.MaxLevels)
	}
	names := make([]string, len(keys))
	if len(o.LevelNames) != 0 {
		copy(names, o.LevelNames)
		for i, n := range names {
			if n == "" {
				return levels{}, fmt.Errorf("%w: kube level %q has an empty name", topology.ErrInvalidSpec, keys[i])
			}
			for _, prev := range names[:i] {
				if prev == n {
					return levels{}, fmt.Errorf("%w: kube level name %q given twice", topology.ErrDuplicate, n)
				}
			}
		}
	} else {
		clash := false
		for i, k := range keys {
			names[i] = shortName(k)
			for _, prev := range names[:i] {
				clash = clash || prev == names[i]
			}
		}
		if clash {
			copy(names, keys)
		}
	}
	return levels{keys: keys, names: names}, nil
}

// shortName derives a level name from a label key: the part after
// the last '/', then after the last '.'; the whole key if that is empty.
func shortName(key string) string {
	name := key[strings.LastIndexByte(key, '/')+1:]
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	if name == "" {
		return key
	}
	return name
}
