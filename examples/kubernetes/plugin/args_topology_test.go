package plugin

import (
	"testing"

	"github.com/phalanx-sched/phalanx/topology/kube"
)

// TestTopologyPresets: each Topology arg selects its topology/kube preset
// (aws4 the four-layer EC2 one, whose lowest level is layer 4), and an
// unknown one or "labels" without levels is refused.
func TestTopologyPresets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   Args
		levels []string
		bad    bool
	}{
		{name: "gke", args: Args{Topology: "gke"}, levels: kube.PresetGKE().Levels},
		{name: "aws", args: Args{Topology: "aws"}, levels: kube.PresetAWS().Levels},
		{name: "aws4", args: Args{Topology: "aws4"}, levels: []string{kube.LabelAWSLayer1, kube.LabelAWSLayer2, kube.LabelAWSLayer3, kube.LabelAWSLayer4}},
		{name: "labels", args: Args{Topology: "labels", Levels: []string{"a", "b"}}, levels: []string{"a", "b"}},
		{name: "labels without levels", args: Args{Topology: "labels"}, bad: true},
		{name: "unknown", args: Args{Topology: "aws5"}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := topologyOptions(&tc.args)
			if tc.bad {
				if err == nil {
					t.Fatalf("topology %q accepted", tc.args.Topology)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Levels) != len(tc.levels) {
				t.Fatalf("levels %v, want %v", o.Levels, tc.levels)
			}
			for i := range o.Levels {
				if o.Levels[i] != tc.levels[i] {
					t.Fatalf("levels %v, want %v", o.Levels, tc.levels)
				}
			}
		})
	}
}
