package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations the plugin reads.
const (
	// LabelPodGroup is the scheduler-plugins coscheduling label: pods
	// with the same value in one namespace form one PodGroup.
	LabelPodGroup = "scheduling.x-k8s.io/pod-group"
	// AnnotationMinMember gives a group's minimum member count on a pod
	// when no PodGroup object exists (the PodGroup's spec.minMember wins).
	AnnotationMinMember = "scheduling.x-k8s.io/min-member"
	// AnnotationRank gives a pod's rank in its group explicitly.
	AnnotationRank = "phalanx.dev/rank"
	// labelPodIndex and annotationCompletionIndex are set by StatefulSets
	// and Indexed Jobs; either gives the rank.
	labelPodIndex             = "apps.kubernetes.io/pod-index"
	annotationCompletionIndex = "batch.kubernetes.io/job-completion-index"
)

func metaList() metav1.TypeMeta { return metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"} }

// groupKey returns the pod's group ("namespace/name"), its own single-pod
// group ("namespace/pod:name") for a GPU pod without the label, or "" for a
// pod the plugin leaves to the other plugins (no group, no GPUs).
func groupKey(p *v1.Pod, gpuResource string) string {
	if g := p.Labels[LabelPodGroup]; g != "" {
		return p.Namespace + "/" + g
	}
	if podGPUs(p, gpuResource) > 0 {
		return p.Namespace + "/pod:" + p.Name
	}
	return ""
}

// podGPUs returns the GPUs a pod asks for: the extended resource's limit (or
// request) summed over containers, or the largest init container's.
func podGPUs(p *v1.Pod, resource string) int {
	name := v1.ResourceName(resource)
	get := func(c *v1.Container) int {
		if q, ok := c.Resources.Limits[name]; ok {
			return int(q.Value())
		}
		if q, ok := c.Resources.Requests[name]; ok {
			return int(q.Value())
		}
		return 0
	}
	sum := 0
	for i := range p.Spec.Containers {
		sum += get(&p.Spec.Containers[i])
	}
	for i := range p.Spec.InitContainers {
		if g := get(&p.Spec.InitContainers[i]); g > sum {
			sum = g
		}
	}
	return sum
}

// podRank returns the pod's rank in its group: the phalanx.dev/rank
// annotation, the StatefulSet pod-index label, the Indexed Job completion
// index, or a number ending the pod's name ("train-17" is 17), else -1.
func podRank(p *v1.Pod) int {
	for _, s := range []string{p.Annotations[AnnotationRank], p.Labels[labelPodIndex], p.Annotations[annotationCompletionIndex]} {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			return n
		}
	}
	if i := strings.LastIndexByte(p.Name, '-'); i >= 0 {
		if n, err := strconv.Atoi(p.Name[i+1:]); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}

// orderPods sorts pods by rank, then name (pods without a rank after those
// with one). This order, with the member's assignment order, decides which
// pod goes to which node: see assignSlots.
func orderPods(pods []*podState) {
	sort.Slice(pods, func(i, j int) bool {
		ri, rj := pods[i].rank, pods[j].rank
		if (ri < 0) != (rj < 0) {
			return ri >= 0
		}
		if ri != rj {
			return ri < rj
		}
		return pods[i].name < pods[j].name
	})
}

// assignSlots maps the pods of one member to the nodes the engine assigned
// it: the i-th pod in rank order (orderPods) gets the i-th node of the
// member's assignment, which is the pod of rank i in the core's own order
// (gang.Pod.Rank: by node, a leaf's nodes together). This is the one place
// that matches Kubernetes pods to the core's ranks.
func assignSlots(pods []*podState, nodes []string) map[string]string {
	orderPods(pods)
	out := make(map[string]string, len(pods))
	for i, p := range pods {
		if i < len(nodes) {
			out[p.uid] = nodes[i]
		}
	}
	return out
}

// shapeKey identifies the pods that the profile's Filter plugins see alike:
// resources, node selection, tolerations, spread, volumes, ports and
// priority. Pods of one shape are one member of the gang and share one
// allowed node set. Per-pod fields (name, host name, env, command) are left
// out.
func shapeKey(p *v1.Pod, gpuResource string) string {
	type container struct {
		Resources v1.ResourceRequirements `json:"r"`
		Ports     []v1.ContainerPort      `json:"p,omitempty"`
	}
	s := struct {
		GPUs        int                           `json:"g"`
		Containers  []container                   `json:"c"`
		Init        []container                   `json:"i,omitempty"`
		Overhead    v1.ResourceList               `json:"o,omitempty"`
		Selector    map[string]string             `json:"s,omitempty"`
		Affinity    *v1.Affinity                  `json:"a,omitempty"`
		Tolerations []v1.Toleration               `json:"t,omitempty"`
		Spread      []v1.TopologySpreadConstraint `json:"sp,omitempty"`
		Volumes     []v1.Volume                   `json:"v,omitempty"`
		Priority    string                        `json:"pr,omitempty"`
		Runtime     *string                       `json:"rt,omitempty"`
	}{GPUs: podGPUs(p, gpuResource), Overhead: p.Spec.Overhead, Selector: p.Spec.NodeSelector,
		Affinity: p.Spec.Affinity, Tolerations: p.Spec.Tolerations, Spread: p.Spec.TopologySpreadConstraints,
		Volumes: p.Spec.Volumes, Priority: p.Spec.PriorityClassName, Runtime: p.Spec.RuntimeClassName}
	for _, c := range p.Spec.Containers {
		s.Containers = append(s.Containers, container{c.Resources, c.Ports})
	}
	for _, c := range p.Spec.InitContainers {
		s.Init = append(s.Init, container{c.Resources, c.Ports})
	}
	data, err := json.Marshal(&s)
	if err != nil {
		panic(fmt.Sprintf("phalanx: marshalling a pod shape: %v", err)) // plain API types always marshal
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("gpu%d-%s", s.GPUs, hex.EncodeToString(sum[:4]))
}

// terminal reports whether a pod no longer holds its node's resources.
func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// nodeReady reports whether a node's Ready condition is True.
func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
