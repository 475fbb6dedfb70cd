package plugin

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name string, labels, annotations map[string]string, gpus int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels, Annotations: annotations},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}}}}
}

func TestPodRank(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want int
	}{
		{"name suffix", pod("train-17", nil, nil, 8), 17},
		{"annotation wins", pod("train-17", nil, map[string]string{AnnotationRank: "3"}, 8), 3},
		{"statefulset index", pod("web-x", map[string]string{labelPodIndex: "5"}, nil, 8), 5},
		{"indexed job", pod("job-abcde", nil, map[string]string{annotationCompletionIndex: "9"}, 8), 9},
		{"no rank", pod("launcher", nil, nil, 8), -1},
		{"bad annotation falls back", pod("w-2", nil, map[string]string{AnnotationRank: "x"}, 8), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podRank(tc.pod); got != tc.want {
				t.Fatalf("podRank = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestAssignSlots(t *testing.T) {
	pods := []*podState{{uid: "c", name: "w-10", rank: 10}, {uid: "x", name: "extra", rank: -1},
		{uid: "a", name: "w-2", rank: 2}, {uid: "b", name: "w-3", rank: 3}}
	got := assignSlots(pods, []string{"n5", "n1", "n9", "n7"})
	want := map[string]string{"a": "n5", "b": "n1", "c": "n9", "x": "n7"}
	for uid, node := range want {
		if got[uid] != node {
			t.Fatalf("slots %v, want %v (rank order, unranked last)", got, want)
		}
	}
}

func TestGroupKeyAndShape(t *testing.T) {
	a := pod("w-0", map[string]string{LabelPodGroup: "g"}, nil, 8)
	b := pod("w-1", map[string]string{LabelPodGroup: "g"}, map[string]string{"x": "y"}, 8)
	b.Spec.Containers[0].Env = []v1.EnvVar{{Name: "RANK", Value: "1"}}
	c := pod("w-2", map[string]string{LabelPodGroup: "g"}, nil, 8)
	c.Spec.NodeSelector = map[string]string{"pool": "a"}
	cpu := pod("sidecar", nil, nil, 0)
	if k := groupKey(a, defaultGPUResource); k != "ns/g" {
		t.Fatalf("groupKey = %q", k)
	}
	if k := groupKey(pod("solo", nil, nil, 2), defaultGPUResource); k != "ns/pod:solo" {
		t.Fatalf("a GPU pod without a group is its own group, got %q", k)
	}
	if k := groupKey(cpu, defaultGPUResource); k != "" {
		t.Fatalf("a CPU pod without a group is not Phalanx's, got %q", k)
	}
	if shapeKey(a, defaultGPUResource) != shapeKey(b, defaultGPUResource) {
		t.Fatal("pods differing only in env and annotations must share a shape")
	}
	if shapeKey(a, defaultGPUResource) == shapeKey(c, defaultGPUResource) {
		t.Fatal("a node selector must make another shape")
	}
}

func TestArgsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args Args
		ok   bool
	}{
		{"defaults", Args{}, true},
		{"labels with levels", Args{Topology: "labels", Levels: []string{"example.com/rack"}}, true},
		{"labels without levels", Args{Topology: "labels"}, false},
		{"unknown preset", Args{Topology: "torus"}, false},
		{"negative timeout", Args{PermitTimeoutSeconds: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.args.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
			if err == nil && (tc.args.GPUResource != defaultGPUResource || tc.args.MaxBindAttempts != 3) {
				t.Fatalf("defaults not filled: %+v", tc.args)
			}
		})
	}
}
