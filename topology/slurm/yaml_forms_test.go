package slurm

import (
	"strings"
	"testing"
)

// TestYAMLSlurmForms loads each form that Slurm 25.05's topology.yaml
// parser accepts beyond its man page example, and checks that it gives the
// same cluster as the documented form.
func TestYAMLSlurmForms(t *testing.T) {
	documented := map[string]string{
		"tree": "- topology: t\n  cluster_default: true\n  tree:\n    switches:\n    - switch: s1\n      nodes: node[01-04]\n",
		"block": "- topology: t\n  cluster_default: true\n  block:\n    block_sizes:\n      - 4\n    blocks:\n    - block: b1\n      nodes: node[01-04]\n" +
			"    - block: b2\n      nodes: node[05-08]\n",
	}
	tests := []struct{ name, base, yaml string }{
		{"a single topology, not a list", "tree", "topology: t\ntree:\n  switches:\n  - switch: s1\n    nodes: node[01-04]\n"},
		{"a single switch, not a list", "tree", "- topology: t\n  tree:\n    switches:\n      switch: s1\n      nodes: node[01-04]\n"},
		{"a single block size", "block", "- topology: t\n  block:\n    block_sizes: 4\n    blocks:\n    - block: b1\n      nodes: node[01-04]\n    - block: b2\n      nodes: node[05-08]\n"},
		{"booleans as Slurm reads them", "tree", "- topology: u\n  cluster_default: no\n  flat: On\n  block: {}\n- topology: t\n  cluster_default: Yes\n  flat: 'f'\n  tree:\n    switches:\n    - switch: s1\n      nodes: node[01-04]\n"},
		{"null for an absent value", "tree", "- topology: t\n  cluster_default: true\n  tree:\n    switches:\n    - switch: s1\n      nodes: node[01-04]\n      children: ~\n"},
		{"a null tree or block is absent", "block", "- topology: t\n  tree: ~\n  block:\n    block_sizes: [4]\n    blocks:\n    - {block: b1, nodes: 'node[01-04]'}\n    - {block: b2, nodes: 'node[05-08]'}\n- topology: u\n  block: null\n  flat: true\n"},
		{"an empty tree selects nothing", "block", "- topology: t\n  tree: {}\n  block:\n    block_sizes: [4]\n    blocks:\n    - {block: b1, nodes: 'node[01-04]'}\n    - {block: b2, nodes: 'node[05-08]'}\n"},
		{"flow style", "tree", "[{topology: t, tree: {switches: [{switch: s1, nodes: 'node[01-04]'}]}}]\n"},
		{"block scalars and folded quotes", "tree", "- topology: t\n  tree:\n    switches:\n    - switch: |-\n        s1\n      nodes: \"node[01-\\\n        04]\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := mustCluster(t, parseYAML(t, documented[tt.base], Options{}), "").Describe()
			got := mustCluster(t, parseYAML(t, tt.yaml, Options{}), "t").Describe()
			if got != want {
				t.Errorf("cluster\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestYAMLTwoDefaults: Slurm takes the first topology marked
// cluster_default; a second one is a warning, not an error.
func TestYAMLTwoDefaults(t *testing.T) {
	text := "- topology: a\n  flat: true\n- topology: b\n  cluster_default: true\n  flat: true\n- topology: c\n  cluster_default: true\n  flat: true\n"
	st, err := ParseYAML(memFS("topology.yaml", text), "topology.yaml", Options{Nodes: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Default != "b" {
		t.Errorf("default %q, want b", st.Default)
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0].Error(), `topology.yaml:7: topology: invalid cluster: topologies "b" and "c" are both cluster_default; the first (topology.yaml:4) is the default`) {
		t.Errorf("warnings %v", st.Warnings)
	}
}

func TestLoadDir(t *testing.T) {
	conf := "SwitchName=s0 Nodes=n[1-2]\n"
	yaml := "- topology: t\n  tree:\n    switches:\n    - switch: y0\n      nodes: n[1-3]\n"
	c, _, err := LoadDir(memFS("topology.conf", conf, "topology.yaml", yaml), Options{})
	if err != nil || c.NumNodes() != 3 || c.DomainName(0, 0) != "y0" {
		t.Errorf("with topology.yaml: %v", err)
	}
	c, _, err = LoadDir(memFS("topology.conf", conf), Options{})
	if err != nil || c.NumNodes() != 2 || c.DomainName(0, 0) != "s0" {
		t.Errorf("with topology.conf only: %v", err)
	}
}
