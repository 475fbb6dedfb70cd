package kube

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// awsNode is one EKS node of the AWS layer tests: its name, instance type
// and network-node labels, top layer first (three or four of them).
type awsNode struct {
	name, instanceType string
	layers             []string
}

// awsNodeList renders nodes as `kubectl get nodes -o json` would: Ready,
// 8 allocatable GPUs, the EKS topology labels layer-1 to layer-N.
func awsNodeList(t *testing.T, nodes []awsNode) string {
	t.Helper()
	var items []map[string]any
	for _, n := range nodes {
		labels := map[string]string{
			"kubernetes.io/hostname":           n.name,
			"node.kubernetes.io/instance-type": n.instanceType,
		}
		for i, v := range n.layers {
			labels["topology.k8s.aws/network-node-layer-"+string(rune('1'+i))] = v
		}
		items = append(items, map[string]any{
			"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": n.name, "labels": labels},
			"status": map[string]any{
				"allocatable": map[string]string{"nvidia.com/gpu": "8"},
				"capacity":    map[string]string{"nvidia.com/gpu": "8"},
				"conditions":  []map[string]string{{"type": "Ready", "status": "True"}},
			},
		})
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestAWSFourLayerTopology: EC2 instance types whose topology has four
// layers (p6-b200, p6-b300) carry topology.k8s.aws/network-node-layer-4,
// the network node they attach to. PresetAWSFourLayers keeps that level,
// so nodes under one layer-3 node but on different layer-4 nodes are in
// different lowest domains; PresetAWS (three layers) stays right for
// three-layer types and refuses nothing it read before.
func TestAWSFourLayerTopology(t *testing.T) {
	p6 := []awsNode{
		{"p6-a", "p6-b200.48xlarge", []string{"nn-1", "nn-2", "nn-3", "nn-4a"}},
		{"p6-b", "p6-b200.48xlarge", []string{"nn-1", "nn-2", "nn-3", "nn-4a"}},
		{"p6-c", "p6-b200.48xlarge", []string{"nn-1", "nn-2", "nn-3", "nn-4b"}},
		{"p6-d", "p6-b200.48xlarge", []string{"nn-1", "nn-2", "nn-3", "nn-4b"}},
	}
	p5 := []awsNode{
		{"p5-a", "p5.48xlarge", []string{"nn-1", "nn-2", "nn-3x"}},
		{"p5-b", "p5.48xlarge", []string{"nn-1", "nn-2", "nn-3x"}},
	}
	p6Only := PresetAWSFourLayers()
	p6Only.NodeSelector = map[string]string{"node.kubernetes.io/instance-type": "p6-b200.48xlarge"}

	tests := []struct {
		name    string
		nodes   []awsNode
		opts    Options
		levels  []string
		leaves  []string // paths of the lowest domains
		skipped []string
		wantErr string // a defect naming the node and the label
	}{
		{
			name: "four-layer type keeps its bottom layer", nodes: p6, opts: PresetAWSFourLayers(),
			levels: []string{"layer1", "layer2", "layer3", "layer4"},
			leaves: []string{"nn-1/nn-2/nn-3/nn-4a", "nn-1/nn-2/nn-3/nn-4b"},
		},
		{
			name: "three-layer type under the three-layer preset", nodes: p5, opts: PresetAWS(),
			levels: []string{"layer1", "layer2", "layer3"},
			leaves: []string{"nn-1/nn-2/nn-3x"},
		},
		{
			name: "mixed cluster, four-layer nodes selected by instance type", nodes: append(slices.Clone(p5), p6...), opts: p6Only,
			levels:  []string{"layer1", "layer2", "layer3", "layer4"},
			leaves:  []string{"nn-1/nn-2/nn-3/nn-4a", "nn-1/nn-2/nn-3/nn-4b"},
			skipped: []string{"p5-a", "p5-b"},
		},
		{
			name: "three-layer node under the four-layer preset", nodes: p5, opts: PresetAWSFourLayers(),
			wantErr: `item 0 (node "p5-a"): no label "topology.k8s.aws/network-node-layer-4" for level "layer4"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			c, st, err := Load(strings.NewReader(awsNodeList(t, tt.nodes)), tt.opts)
			if tt.wantErr != "" {
				if !errors.Is(err, topology.ErrInvalidSpec) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want ErrInvalidSpec with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Levels(); !slices.Equal(got, tt.levels) {
				t.Errorf("levels %v, want %v", got, tt.levels)
			}
			if got := domainPaths(c, len(tt.levels)-1); !slices.Equal(got, tt.leaves) {
				t.Errorf("lowest domains %v, want %v", got, tt.leaves)
			}
			if !slices.Equal(st.Skipped, tt.skipped) {
				t.Errorf("skipped %v, want %v", st.Skipped, tt.skipped)
			}
		})
	}
}
