package kueuecmp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/resources"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// GPUResource is the GPU resource name on nodes and pods.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// Names of the Kueue objects and node labels.
const (
	TopologyName = "phalanx-default"
	FlavorName   = "gpu-tas"
	QueueName    = "gpu-queue"
	PoolLabel    = "example.com/gpu-pool"
	PoolValue    = "h100"
	PodSetName   = "workers"
)

// LevelLabel maps a Phalanx level name to the node label key of the Kueue
// Topology level: core > spine > leaf become the customary
// topology-core > topology-block > topology-rack, then kubernetes.io/hostname.
func LevelLabel(level string) string {
	switch level {
	case "spine":
		return "example.com/topology-block"
	case "leaf":
		return "example.com/topology-rack"
	}
	return "example.com/topology-" + level
}

// KueueEnv is a Kueue scheduler cache holding one inventory and free state:
// a Topology, a TAS ResourceFlavor, one ClusterQueue with quota for every
// GPU, every node Ready, and the used GPUs as running pods.
type KueueEnv struct {
	Cache  *scheduler.Cache
	ctx    context.Context
	levels []string // label keys, top to bottom, hostname last
	c      *topology.Cluster
}

// NewKueueEnv builds the cache for state fs of cluster c.
func NewKueueEnv(c *topology.Cluster, fs *FreeState) (*KueueEnv, error) {
	log := logr.Discard()
	ctx := ctrl.LoggerInto(context.Background(), log)
	k := &KueueEnv{Cache: scheduler.New(utiltesting.NewFakeClient()), ctx: ctx, c: c}
	for l := range c.Depth() {
		k.levels = append(k.levels, LevelLabel(c.LevelName(l)))
	}
	k.levels = append(k.levels, corev1.LabelHostname)

	topo := &kueue.Topology{ObjectMeta: metav1.ObjectMeta{Name: TopologyName}}
	for _, key := range k.levels {
		topo.Spec.Levels = append(topo.Spec.Levels, kueue.TopologyLevel{NodeLabel: key})
	}
	k.Cache.AddOrUpdateTopology(log, topo)

	tn := kueue.TopologyReference(TopologyName)
	flavor := &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: FlavorName},
		Spec: kueue.ResourceFlavorSpec{
			NodeLabels:   map[string]string{PoolLabel: PoolValue},
			TopologyName: &tn,
		},
	}
	k.Cache.AddOrUpdateResourceFlavor(log, flavor)

	for i := range c.NumNodes() {
		k.Cache.TASCache().SyncNode(k.node(i))
	}

	cq := &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: QueueName},
		Spec: kueue.ClusterQueueSpec{
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{GPUResource},
				Flavors: []kueue.FlavorQuotas{{
					Name: FlavorName,
					Resources: []kueue.ResourceQuota{{
						Name:         GPUResource,
						NominalQuota: *resource.NewQuantity(int64(c.TotalGPUs()), resource.DecimalSI),
					}},
				}},
			}},
		},
	}
	if err := k.Cache.AddClusterQueue(ctx, cq); err != nil {
		return nil, fmt.Errorf("kueue: add ClusterQueue: %w", err)
	}

	// The running jobs, as pods bound to their nodes: TAS subtracts their
	// requests from the nodes' allocatable in every snapshot.
	for j, job := range fs.Jobs {
		for _, a := range job {
			k.Cache.TASCache().Update(k.runningPod(j, a), log)
		}
	}

	if err := k.checkSameFreeState(fs.State); err != nil {
		return nil, err
	}
	return k, nil
}

// node returns node i as a Kubernetes Node: level labels, hostname, pool
// label, allocatable GPUs, CPU, memory and pods, and Ready.
func (k *KueueEnv) node(i int) *corev1.Node {
	c := k.c
	name := c.NodeName(topology.NodeID(i))
	labels := map[string]string{
		corev1.LabelHostname: name,
		PoolLabel:            PoolValue,
	}
	for l := range c.Depth() {
		labels[k.levels[l]] = c.DomainName(l, c.NodeDomain(topology.NodeID(i), l))
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				GPUResource:           *resource.NewQuantity(int64(c.NodeGPUs(topology.NodeID(i))), resource.DecimalSI),
				corev1.ResourceCPU:    resource.MustParse("128"),
				corev1.ResourceMemory: resource.MustParse("2Ti"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// runningPod returns the pod of job j on the node of a, requesting its GPUs.
func (k *KueueEnv) runningPod(j int, a topology.NodeAlloc) *corev1.Pod {
	n := int64(popcount(a.GPUs))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "running", Name: fmt.Sprintf("job%05d-%s", j, k.c.NodeName(topology.NodeID(a.Node)))},
		Spec: corev1.PodSpec{
			NodeName: k.c.NodeName(topology.NodeID(a.Node)),
			Containers: []corev1.Container{{
				Name: "main",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{GPUResource: *resource.NewQuantity(n, resource.DecimalSI)},
					Limits:   corev1.ResourceList{GPUResource: *resource.NewQuantity(n, resource.DecimalSI)},
				},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// Snapshot takes Kueue's per-cycle snapshot and returns the TAS snapshot
// of the flavor as seen by the ClusterQueue.
func (k *KueueEnv) Snapshot() (*scheduler.TASFlavorSnapshot, error) {
	snap, err := k.Cache.Snapshot(k.ctx)
	if err != nil {
		return nil, err
	}
	cq := snap.ClusterQueue(QueueName)
	if cq == nil {
		return nil, fmt.Errorf("kueue: ClusterQueue %s not in the snapshot (inactive)", QueueName)
	}
	tas := cq.TASFlavors[FlavorName]
	if tas == nil {
		return nil, fmt.Errorf("kueue: no TAS snapshot for flavor %s", FlavorName)
	}
	return tas, nil
}

// Requests returns the TAS requests of case k: one PodSet of k.Pods pods of
// k.PodGPUs GPUs with the case's topology request.
func (k *KueueEnv) Requests(kc Case) scheduler.FlavorTASRequests {
	tr := &kueue.PodSetTopologyRequest{}
	switch kc.Constraint {
	case RequiredLeaf:
		tr.Required = ptrTo(LevelLabel("leaf"))
	case PreferredSpine:
		tr.Preferred = ptrTo(LevelLabel("spine"))
	case Unconstrained:
		tr.Unconstrained = ptrTo(true)
	}
	g := *resource.NewQuantity(int64(kc.PodGPUs), resource.DecimalSI)
	ps := &kueue.PodSet{
		Name:  PodSetName,
		Count: int32(kc.Pods),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector: map[string]string{PoolLabel: PoolValue},
			Containers: []corev1.Container{{
				Name: "main",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{GPUResource: g},
					Limits:   corev1.ResourceList{GPUResource: g},
				},
			}},
		}},
		TopologyRequest: tr,
	}
	return scheduler.FlavorTASRequests{{
		PodSet:            ps,
		SinglePodRequests: resources.Requests{GPUResource: int64(kc.PodGPUs)},
		Count:             int32(kc.Pods),
		Flavor:            FlavorName,
	}}
}

// KueueAnswer is Kueue's decision: pods per node, or the failure reason.
type KueueAnswer struct {
	Placed bool
	Reason string
	// PodsPerNode maps Phalanx node indexes to pod counts.
	PodsPerNode map[int]int
}

// Decide runs FindTopologyAssignmentsForFlavor and returns the raw result,
// for timing.
func Decide(s *scheduler.TASFlavorSnapshot, reqs scheduler.FlavorTASRequests) scheduler.TASAssignmentsResult {
	return s.FindTopologyAssignmentsForFlavor(reqs)
}

// Answer converts a result into pods per node.
func (k *KueueEnv) Answer(res scheduler.TASAssignmentsResult) (KueueAnswer, error) {
	r, ok := res[PodSetName]
	if !ok {
		return KueueAnswer{}, fmt.Errorf("kueue: no result for PodSet %s", PodSetName)
	}
	if r.FailureReason != "" {
		return KueueAnswer{Reason: r.FailureReason}, nil
	}
	if r.TopologyAssignment == nil {
		return KueueAnswer{}, fmt.Errorf("kueue: no assignment and no failure reason")
	}
	ans := KueueAnswer{Placed: true, PodsPerNode: map[int]int{}}
	for _, d := range r.TopologyAssignment.Domains {
		host := d.Values[len(d.Values)-1]
		n, ok := k.c.LookupNode(host)
		if !ok {
			return KueueAnswer{}, fmt.Errorf("kueue: assignment names unknown node %q", host)
		}
		ans.PodsPerNode[int(n)] += int(d.Count)
	}
	return ans, nil
}

// checkSameFreeState compares the free GPUs Kueue's TAS snapshot sees on
// every node with the Phalanx state.
func (k *KueueEnv) checkSameFreeState(s *topology.State) error {
	tas, err := k.Snapshot()
	if err != nil {
		return err
	}
	js, err := tas.SerializeFreeCapacityPerDomain()
	if err != nil {
		return err
	}
	var per map[string]struct {
		FreeCapacity map[string]string `json:"freeCapacity"`
		TasUsage     map[string]string `json:"tasUsage"`
	}
	if err := json.Unmarshal([]byte(js), &per); err != nil {
		return err
	}
	if len(per) != k.c.NumNodes() {
		return fmt.Errorf("kueue sees %d nodes, Phalanx %d", len(per), k.c.NumNodes())
	}
	for i := range k.c.NumNodes() {
		name := k.c.NodeName(topology.NodeID(i))
		d, ok := per[name]
		if !ok {
			return fmt.Errorf("kueue has no leaf domain for node %s", name)
		}
		free, err := quantity(d.FreeCapacity[string(GPUResource)])
		if err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		used, err := quantity(d.TasUsage[string(GPUResource)])
		if err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		if got, want := free-used, int64(s.FreeCount(topology.NodeID(i))); got != want {
			return fmt.Errorf("node %s: kueue sees %d free GPUs, Phalanx %d", name, got, want)
		}
	}
	return nil
}

func quantity(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	return q.Value(), nil
}

func ptrTo[T any](v T) *T { return &v }
