package slurm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// slurmYAMLExample is the example of the brief, in Slurm's own layout.
const slurmYAMLExample = `# three topologies
- topology: topo1
  cluster_default: true
  tree:
    switches:
      - switch: sw_root
        children: s[1-2]
      - switch: s1
        nodes: node[01-02]
      - switch: s2
        nodes: node[03-04]
- topology: topo2
  cluster_default: false
  block:
    block_sizes:
      - 4
      - 16
    blocks:
      - block: b1
        nodes: node[01-04]
      - block: b2
        nodes: node[05-08]
- topology: topo3
  cluster_default: false
  flat: true
`

func parseYAML(t *testing.T, text string, opts Options) *Topologies {
	t.Helper()
	st, err := ParseYAML(memFS("topology.yaml", text), "topology.yaml", opts)
	if err != nil {
		t.Fatalf("ParseYAML: %v\n%s", err, text)
	}
	if len(st.Warnings) > 0 {
		t.Fatalf("ParseYAML: warnings %v\n%s", st.Warnings, text)
	}
	return st
}

func mustCluster(t *testing.T, st *Topologies, name string) *topology.Cluster {
	t.Helper()
	c, err := st.Cluster(name)
	if err != nil {
		t.Fatalf("Cluster(%q): %v", name, err)
	}
	return c
}

func TestYAMLExample(t *testing.T) {
	st := parseYAML(t, slurmYAMLExample, Options{})
	if !slices.Equal(st.Names, []string{"topo1", "topo2", "topo3"}) || st.Default != "topo1" {
		t.Fatalf("names %q, default %q", st.Names, st.Default)
	}
	for name, kind := range map[string]string{"topo1": "tree", "topo2": "block", "topo3": "flat"} {
		if st.Kinds[name] != kind {
			t.Errorf("kind of %s %q, want %q", name, st.Kinds[name], kind)
		}
	}

	tree := mustCluster(t, st, "")
	if got := tree.Levels(); !slices.Equal(got, []string{"spine", "leaf"}) {
		t.Errorf("tree levels %q", got)
	}
	if got := slurmPath(t, tree, "node03"); got != "sw_root/s2" {
		t.Errorf("node03 path %q", got)
	}
	if tree.NumNodes() != 4 {
		t.Errorf("tree has %d nodes", tree.NumNodes())
	}

	// Two blocks of 4: the 16-node level spans both, one aggregate.
	block := mustCluster(t, st, "topo2")
	if got := block.Levels(); !slices.Equal(got, []string{"block16", "block"}) {
		t.Errorf("block levels %q", got)
	}
	if got := domainCounts(block); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("block domains %v", got)
	}
	if got := slurmPath(t, block, "node07"); got != "b[1-2]/b2" {
		t.Errorf("node07 path %q", got)
	}

	// Flat: the union of the other topologies' nodes, in file order.
	flat := mustCluster(t, st, "topo3")
	if flat.Depth() != 0 {
		t.Errorf("flat depth %d", flat.Depth())
	}
	want := []string{"node01", "node02", "node03", "node04", "node05", "node06", "node07", "node08"}
	if got := flat.NodeNames(0, topology.NodeID(flat.NumNodes())); !slices.Equal(got, want) {
		t.Errorf("flat nodes %q", got)
	}

	if _, err := st.Cluster("nope"); !errors.Is(err, ErrUnknownTopology) {
		t.Errorf("Cluster(nope): %v", err)
	}
}

func TestYAMLForms(t *testing.T) {
	// Slurm's man page layout: lists at their key's indentation, title-case
	// booleans, no default marked (the first topology is the default).
	manPage := `- topology: topo1
  cluster_default: False
  tree:
    switches:
    - switch: sw_root
      nodes: node[01-04]
- topology: topo2
  cluster_default: False
  block:
    block_sizes:
      - 4
      - 16
    blocks:
    - block: b1
      nodes: node[01-04]
    - block: b2
      nodes: node[05-08]
    - block: b3
      nodes: node[09-12]
    - block: b4
      nodes: node[13-16]
- topology: topo3
  flat: True
`
	st := parseYAML(t, manPage, Options{})
	if st.Default != "topo1" {
		t.Errorf("default %q, want the first topology", st.Default)
	}
	if c := mustCluster(t, st, "topo2"); !slices.Equal(domainCounts(c), []int{1, 4}) {
		t.Errorf("topo2 domains %v", domainCounts(c))
	}
	if c := mustCluster(t, st, "topo3"); c.NumNodes() != 16 {
		t.Errorf("flat nodes %d, want 16", c.NumNodes())
	}

	// Flow lists, quotes, comments, a document marker, CRLF, compact
	// mappings, explicit flat nodes and GPU overrides.
	styled := "---\r\n" + `# header
- topology: "fast"   # quoted name
  block: # comment after a key
    block_sizes: [2, 4]
    blocks:
      -   block: 'b''1'
          nodes: "[1-2]"
      -
        block: b2
        nodes: n[3-4] # comment
- topology: all
  cluster_default: TRUE
  flat: true
`
	st, err := ParseYAML(memFS("topology.yaml", styled), "topology.yaml", Options{Nodes: []string{"[1-2]", "n[3-5]"}, NodeGPUs: map[string]int{"n5": 2}})
	if err != nil {
		t.Fatal(err)
	}
	// n5 is a node of slurm.conf that topology "fast" leaves out.
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0].Error(), `topology.yaml:3: topology: unknown node: topology "fast": 1 node(s) of slurm.conf`) {
		t.Errorf("warnings %v", st.Warnings)
	}
	if st.Default != "all" || !slices.Equal(st.Names, []string{"fast", "all"}) {
		t.Fatalf("names %q default %q", st.Names, st.Default)
	}
	c := mustCluster(t, st, "fast")
	if got := slurmPath(t, c, "2"); got != "b'1,b2/b'1" {
		t.Errorf("node 2 path %q", got)
	}
	all := mustCluster(t, st, "")
	if all.NumNodes() != 5 || all.TotalGPUs() != 4*8+2 {
		t.Errorf("flat: %d nodes, %d GPUs", all.NumNodes(), all.TotalGPUs())
	}

	// An unbalanced tree, as in topology.conf.
	unbalanced := `- topology: t
  tree:
    switches:
      - switch: top
        children: agg,leafX
      - switch: agg
        children: leafA
      - switch: leafA
        nodes: a[1-2]
      - switch: leafX
        nodes: x[1-2]
`
	st = parseYAML(t, unbalanced, Options{})
	c = mustCluster(t, st, "t")
	if got := slurmPath(t, c, "x1"); got != "top/leafX/leafX" {
		t.Errorf("x1 path %q", got)
	}
	if spec := st.Specs["t"]; spec.Nodes[0].Source != "topology.yaml:9" {
		t.Errorf("node source %q", spec.Nodes[0].Source)
	}
}

// TestSlurmYAMLMatchesConf loads the topograph files through both formats.
func TestYAMLMatchesConf(t *testing.T) {
	for _, name := range []string{"nvidia_topograph_tree.conf", "nvidia_topograph_block.conf"} {
		t.Run(name, func(t *testing.T) {
			text := slurmConfToYAML(t, readTestdata(t, name))
			st := parseYAML(t, text, Options{})
			fromYAML := mustCluster(t, st, "")
			fromConf := loadTestdata(t, name)
			if a, b := fromYAML.Describe(), fromConf.Describe(); a != b {
				t.Errorf("YAML and conf differ:\n%s\n%s\nYAML:\n%s", a, b, text)
			}
		})
	}
}

// slurmConfToYAML rewrites a simple topology.conf as topology.yaml.
func slurmConfToYAML(t *testing.T, conf string) string {
	var sw, bl []string
	sizes := ""
	for _, line := range strings.Split(conf, "\n") {
		if k := strings.IndexByte(line, '#'); k >= 0 {
			line = line[:k]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		kv := map[string]string{}
		for _, x := range f {
			k, v, _ := strings.Cut(x, "=")
			kv[k] = v
		}
		switch {
		case kv["SwitchName"] != "":
			s := fmt.Sprintf("      - switch: %s\n", kv["SwitchName"])
			if v, ok := kv["Switches"]; ok {
				s += fmt.Sprintf("        children: %s\n", v)
			}
			if v, ok := kv["Nodes"]; ok {
				s += fmt.Sprintf("        nodes: %s\n", v)
			}
			sw = append(sw, s)
		case kv["BlockName"] != "":
			bl = append(bl, fmt.Sprintf("      - block: %s\n        nodes: %s\n", kv["BlockName"], kv["Nodes"]))
		case kv["BlockSizes"] != "":
			sizes = kv["BlockSizes"]
		default:
			t.Fatalf("cannot convert %q", line)
		}
	}
	if len(sw) > 0 {
		return "- topology: t\n  tree:\n    switches:\n" + strings.Join(sw, "")
	}
	return fmt.Sprintf("- topology: t\n  block:\n    block_sizes: [%s]\n    blocks:\n%s", sizes, strings.Join(bl, ""))
}

func TestYAMLErrors(t *testing.T) {
	tree := func(body string) string {
		return "- topology: t\n  tree:\n    switches:\n" + body
	}
	tests := []struct {
		name string
		yaml string
		opts Options
		err  error
		want []string
	}{
		{"empty file", "# nothing\n", Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:", "no topology"}},
		{"empty list", "[]\n", Options{}, topology.ErrInvalidSpec, []string{"no topology"}},
		{"not a list", "[[1]]\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:1:", "a topology must be a mapping, not a list"}},
		{"a single topology without nodes", "topology: t\nflat: true\n", Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:1:", `flat topology "t" has no nodes`}},
		{"item not a mapping", "- t\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:1:", "mapping"}},
		{"topology not first", "- flat: true\n  topology: t\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:1:", "first key"}},
		{"empty name", "- topology: ''\n  flat: true\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:1:", "empty topology name"}},
		{"name not a string", "- topology: [a]\n  flat: true\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:1:", "topology:"}},
		{"unknown key", "- topology: t\n  flat: true\n  plugin: x\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:3:", "plugin:"}},
		{"duplicate topology", "- topology: t\n  flat: true\n- topology: t\n  flat: true\n", Options{Nodes: []string{"n1"}}, topology.ErrDuplicate,
			[]string{"topology.yaml:3:", `"t" defined twice`, "topology.yaml:1"}},
		{"bad boolean", "- topology: t\n  cluster_default: maybe\n  flat: true\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:2:", "cluster_default"}},
		{"boolean list", "- topology: t\n  flat: [true]\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:2:", "flat: wants true or false, not a list"}},
		{"no kind", "- topology: t\n  flat: false\n", Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:1:", "exactly one"}},
		{"null flat is absent", "- topology: t\n  flat: ~\n", Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:1:", "exactly one"}},
		{"a key twice in a flow mapping", "- {topology: t, tree: {switches: [{switch: s1, nodes: \"n[1-4]\", nodes: }]}}\n", Options{}, topology.ErrSyntax,
			[]string{"topology.yaml:1:", `key "nodes" given twice`}},
		{"two kinds", "- topology: t\n  flat: true\n" + "  tree:\n    switches:\n      - switch: s\n        nodes: n1\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.yaml:1:", "exactly one"}},
		{"flat without nodes", "- topology: t\n  flat: true\n", Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:1:", "Options.Nodes"}},
		{"bad flat nodes", "- topology: t\n  flat: true\n", Options{Nodes: []string{"n[2-1]"}}, topology.ErrSyntax, []string{"Options.Nodes", "descending"}},
		{"duplicate flat nodes", "- topology: t\n  flat: true\n", Options{Nodes: []string{"n[1-2]", "n2"}}, topology.ErrDuplicate, []string{"Options.Nodes", "listed twice: n2"}},
		{"tree not a mapping", "- topology: t\n  tree: x\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:2:", "tree"}},
		{"tree unknown key", "- topology: t\n  tree:\n    nodes: x\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:3:", "nodes:"}},
		{"tree without switches", "- topology: t\n  tree:\n    switches: []\n", Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:2:", "without switches"}},
		{"switches not a list", "- topology: t\n  tree:\n    switches: s0\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:3:", "switches"}},
		{"switch unknown key", tree("      - switch: s\n        nodes: n1\n        link_speed: 5\n"), Options{}, topology.ErrSyntax,
			[]string{"topology.yaml:6:", "link_speed:"}},
		{"switch without name", tree("      - nodes: n1\n"), Options{}, topology.ErrSyntax, []string{"topology.yaml:4:", "switch:"}},
		{"nodes as a list", tree("      - switch: s\n        nodes: [1-3]\n"), Options{}, topology.ErrSyntax, []string{"topology.yaml:5:", "nodes"}},
		{"empty nodes", tree("      - switch: s\n        nodes: ''\n"), Options{}, topology.ErrSyntax, []string{"topology.yaml:5:", "empty"}},
		{"bad hostlist", tree("      - switch: s\n        nodes: n[3-1]\n"), Options{}, topology.ErrSyntax, []string{"topology.yaml:5:", `"n[3-1]"`}},
		{"node under two switches", tree("      - switch: a\n        nodes: n[1-2]\n      - switch: b\n        nodes: n2\n"), Options{}, topology.ErrNotTree,
			[]string{"topology.yaml:7:", `node(s) n2 under switch "a" (topology.yaml:5) and switch "b" (topology.yaml:7)`}},
		{"switch under two parents", tree("      - switch: a\n        children: l\n      - switch: b\n        children: l\n      - switch: l\n        nodes: n1\n"),
			Options{}, topology.ErrNotTree, []string{"topology.yaml:7:", `switch "l"`, `"a" (topology.yaml:5)`}},
		{"undefined switch", tree("      - switch: a\n        children: x\n"), Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:5:", "switch(es) x, which are not defined"}},
		{"cycle", tree("      - switch: a\n        children: b\n      - switch: b\n        children: a\n"), Options{}, topology.ErrNotTree,
			[]string{"topology.yaml:5:", "a -> b -> a"}},
		{"switch defined twice", tree("      - switch: a\n        nodes: n1\n      - switch: a\n        nodes: n2\n"), Options{}, topology.ErrDuplicate,
			[]string{"topology.yaml:6:", `switch "a" defined twice`}},
		{"switch with both", tree("      - switch: a\n        nodes: n1\n        children: b\n      - switch: b\n        nodes: n2\n"), Options{}, topology.ErrInvalidSpec,
			[]string{"topology.yaml:4:", "both"}},
		{"switch with neither", tree("      - switch: a\n"), Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:1:", `topology "t": no switch or block holds a node`}},
		{"block unknown key", "- topology: t\n  block:\n    sizes: [1]\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:3:", "sizes:"}},
		{"no blocks", "- topology: t\n  block:\n    block_sizes: [4]\n", Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:3:", "no blocks"}},
		{"block size not a number", "- topology: t\n  block:\n    block_sizes: [4, x]\n    blocks:\n      - block: b\n        nodes: n[1-4]\n",
			Options{}, topology.ErrSyntax, []string{"topology.yaml:3:", `"x"`}},
		{"block size not a power of two", "- topology: t\n  block:\n    block_sizes: [4, 12]\n    blocks:\n      - block: b\n        nodes: n[1-4]\n",
			Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:3:", "block size 12"}},
		{"block too small", "- topology: t\n  block:\n    block_sizes: [4]\n    blocks:\n      - block: b\n        nodes: n[1-3]\n",
			Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:5:", `block "b" has 3 nodes`}},
		{"node in two blocks", "- topology: t\n  block:\n    blocks:\n      - block: a\n        nodes: n[1-2]\n      - block: b\n        nodes: n[2-3]\n",
			Options{}, topology.ErrNotTree, []string{"topology.yaml:7:", `node(s) n2 under block "a" (topology.yaml:5) and block "b" (topology.yaml:7)`}},
		{"block without name", "- topology: t\n  block:\n    blocks:\n      - nodes: n1\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:4:", "block:"}},
		{"GPU override unknown", "- topology: t\n  flat: true\n", Options{Nodes: []string{"n1"}, NodeGPUs: map[string]int{"n9": 4}}, topology.ErrUnknownNode,
			[]string{"topology.yaml:", "n9"}},
		{"GPU override out of range", "- topology: t\n  flat: true\n", Options{Nodes: []string{"n1"}, NodeGPUs: map[string]int{"n1": 65}}, topology.ErrGPUCount,
			[]string{"topology.yaml:", `NodeGPUs["n1"] is 65`}},
		{"tree too deep", tree(deepYAMLTree(9)), Options{}, topology.ErrInvalidSpec, []string{"topology.yaml:4:", "9 levels"}},
		{"syntax error", "- topology: t\n  flat: [\n", Options{}, topology.ErrSyntax, []string{"topology.yaml:2:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := ParseYAML(memFS("topology.yaml", tt.yaml), "topology.yaml", tt.opts)
			if err == nil {
				t.Fatalf("no error; got %+v", st)
			}
			if st != nil {
				t.Errorf("result with the error")
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("error %q does not wrap %q", err, tt.err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// deepYAMLTree returns switch entries forming a chain of n levels.
func deepYAMLTree(n int) string {
	var b strings.Builder
	for i := 0; i < n-1; i++ {
		fmt.Fprintf(&b, "      - switch: s%d\n        children: s%d\n", i, i+1)
	}
	fmt.Fprintf(&b, "      - switch: s%d\n        nodes: n1\n", n-1)
	return b.String()
}

// TestYAMLNullBoolean: a null cluster_default or flat is an absent one,
// as the package doc says of every null value (it was refused: "wants
// true or false, not null").
func TestYAMLNullBoolean(t *testing.T) {
	st := parseYAML(t, "- topology: t\n  cluster_default:\n  flat: true\n- topology: u\n  cluster_default: ~\n  flat: true\n", Options{Nodes: []string{"n1"}})
	if st.Default != "t" {
		t.Errorf("default %q, want the first topology (neither is marked)", st.Default)
	}
	if c := mustCluster(t, st, "u"); c.NumNodes() != 1 {
		t.Errorf("flat topology u has %d nodes, want 1", c.NumNodes())
	}
}
