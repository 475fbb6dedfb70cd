package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

func parseSlurmYAML(t *testing.T, text string, opts SlurmOptions) *SlurmTopologies {
	t.Helper()
	st, err := ParseSlurmTopologyYAML(strings.NewReader(text), opts)
	if err != nil {
		t.Fatalf("ParseSlurmTopologyYAML: %v\n%s", err, text)
	}
	return st
}

func mustSlurmCluster(t *testing.T, st *SlurmTopologies, name string) *Cluster {
	t.Helper()
	c, err := st.Cluster(name)
	if err != nil {
		t.Fatalf("Cluster(%q): %v", name, err)
	}
	return c
}

func TestSlurmYAMLExample(t *testing.T) {
	st := parseSlurmYAML(t, slurmYAMLExample, SlurmOptions{})
	if !slices.Equal(st.Names, []string{"topo1", "topo2", "topo3"}) || st.Default != "topo1" {
		t.Fatalf("names %q, default %q", st.Names, st.Default)
	}
	for name, kind := range map[string]string{"topo1": "tree", "topo2": "block", "topo3": "flat"} {
		if st.Kinds[name] != kind {
			t.Errorf("kind of %s %q, want %q", name, st.Kinds[name], kind)
		}
	}

	tree := mustSlurmCluster(t, st, "")
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
	block := mustSlurmCluster(t, st, "topo2")
	if got := block.Levels(); !slices.Equal(got, []string{"block16", "block"}) {
		t.Errorf("block levels %q", got)
	}
	if got := slurmDomainCounts(block); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("block domains %v", got)
	}
	if got := slurmPath(t, block, "node07"); got != "b[1-2]/b2" {
		t.Errorf("node07 path %q", got)
	}

	// Flat: the union of the other topologies' nodes, in file order.
	flat := mustSlurmCluster(t, st, "topo3")
	if flat.Depth() != 0 {
		t.Errorf("flat depth %d", flat.Depth())
	}
	want := []string{"node01", "node02", "node03", "node04", "node05", "node06", "node07", "node08"}
	if got := flat.NodeNames(0, flat.NumNodes()); !slices.Equal(got, want) {
		t.Errorf("flat nodes %q", got)
	}

	if _, err := st.Cluster("nope"); !errors.Is(err, ErrUnknownTopology) {
		t.Errorf("Cluster(nope): %v", err)
	}
}

func TestSlurmYAMLForms(t *testing.T) {
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
	st := parseSlurmYAML(t, manPage, SlurmOptions{})
	if st.Default != "topo1" {
		t.Errorf("default %q, want the first topology", st.Default)
	}
	if c := mustSlurmCluster(t, st, "topo2"); !slices.Equal(slurmDomainCounts(c), []int{1, 4}) {
		t.Errorf("topo2 domains %v", slurmDomainCounts(c))
	}
	if c := mustSlurmCluster(t, st, "topo3"); c.NumNodes() != 16 {
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
	st = parseSlurmYAML(t, styled, SlurmOptions{Nodes: []string{"[1-2]", "n[3-5]"}, NodeGPUs: map[string]int{"n5": 2}})
	if st.Default != "all" || !slices.Equal(st.Names, []string{"fast", "all"}) {
		t.Fatalf("names %q default %q", st.Names, st.Default)
	}
	c := mustSlurmCluster(t, st, "fast")
	if got := slurmPath(t, c, "2"); got != "b'1,b2/b'1" {
		t.Errorf("node 2 path %q", got)
	}
	all := mustSlurmCluster(t, st, "")
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
	st = parseSlurmYAML(t, unbalanced, SlurmOptions{})
	c = mustSlurmCluster(t, st, "t")
	if got := slurmPath(t, c, "x1"); got != "top/leafX/leafX" {
		t.Errorf("x1 path %q", got)
	}
	if spec := st.Specs["t"]; spec.Nodes[0].Source != "topology.yaml:9" {
		t.Errorf("node source %q", spec.Nodes[0].Source)
	}
}

// TestSlurmYAMLMatchesConf loads the topograph files through both formats.
func TestSlurmYAMLMatchesConf(t *testing.T) {
	for _, name := range []string{"nvidia_topograph_tree.conf", "nvidia_topograph_block.conf"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			text := slurmConfToYAML(t, string(data))
			st := parseSlurmYAML(t, text, SlurmOptions{})
			fromYAML := mustSlurmCluster(t, st, "")
			fromConf := loadSlurmConfFile(t, name)
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

func TestParseYAMLSubset(t *testing.T) {
	// render prints a node compactly for comparison.
	var render func(n *yamlNode) string
	render = func(n *yamlNode) string {
		switch n.kind {
		case yamlScalar:
			if n.quoted {
				return fmt.Sprintf("%q", n.value)
			}
			return n.value
		case yamlSeq:
			var s []string
			for _, it := range n.items {
				s = append(s, render(it))
			}
			return "[" + strings.Join(s, " ") + "]"
		case yamlMap:
			var s []string
			for _, e := range n.keys {
				s = append(s, e.key+"="+render(e.value))
			}
			return "{" + strings.Join(s, " ") + "}"
		}
		return "~"
	}
	tests := []struct{ name, in, want string }{
		{"scalar map", "a: 1\nb: x y\n", "{a=1 b=x y}"},
		{"nested", "a:\n  b: 1\n  c:\n    d: 2\ne: 3\n", "{a={b=1 c={d=2}} e=3}"},
		{"list", "- 1\n- 2\n", "[1 2]"},
		{"list of maps", "- a: 1\n  b: 2\n- a: 3\n", "[{a=1 b=2} {a=3}]"},
		{"compact list", "a:\n- 1\n- 2\nb: 3\n", "{a=[1 2] b=3}"},
		{"list of lists", "- - 1\n  - 2\n- - 3\n", "[[1 2] [3]]"},
		{"dash then block", "-\n  a: 1\n", "[{a=1}]"},
		{"nulls", "a:\nb: ~\nc: null\n", "{a=~ b=~ c=~}"},
		{"empty item", "-\n- 1\n", "[~ 1]"},
		{"quotes", "a: 'it''s'\nb: \"x\\\"y\\n\"\n'c d': 1\n", "{a=\"it's\" b=\"x\\\"y\\n\" c d=1}"},
		{"comments", "# c\na: 1 # c\nb: x#y\n  # indented comment\nc: '#'\n", "{a=1 b=x#y c=\"#\"}"},
		{"flow", "a: [1, 'b', \"c\"]\nb: []\nc: [ x ,y ] # c\n", "{a=[1 \"b\" \"c\"] b=[] c=[x y]}"},
		{"indented document", "  a: 1\n  b: 2\n", "{a=1 b=2}"},
		{"colon inside value", "a: http://x\nb: a:b\n", "{a=http://x b=a:b}"},
		{"document start", "--- # c\na: 1\n", "{a=1}"},
		{"bom and crlf", "\ufeffa: 1\r\nb: 2\r\n", "{a=1 b=2}"},
		{"dash in key", "-a: 1\n", "{-a=1}"},
		{"tab after value", "a: 1\t\n", "{a=1}"},
		{"value below its key", "a:\n  text\nb:\n  - 1\n", "{a=text b=[1]}"},
		{"top-level scalar", "x\n", "x"},
		{"top-level flow list", "[1, 2]\n", "[1 2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseYAMLSubset(tt.in, "f.yaml")
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := render(n); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if n, err := parseYAMLSubset("# only a comment\n\n", "f.yaml"); n != nil || err != nil {
		t.Errorf("empty document: %v, %v", n, err)
	}
}

func TestParseYAMLSubsetErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"tab indentation", "a:\n\tb: 1\n", "f.yaml:2:"},
		{"bad indentation", "a:\n    b: 1\n  c: 2\n", "f.yaml:3:"},
		{"deeper after scalar", "a: 1\n  b: 2\n", "f.yaml:2:"},
		{"deeper after list scalar", "- 1\n  - 2\n", "f.yaml:2:"},
		{"less indented than the document", "  a: 1\nb: 2\n", "f.yaml:2:"},
		{"not a key", "a: 1\nb\n", "f.yaml:2:"},
		{"list item among keys", "a: 1\n- 2\n", "f.yaml:2:"},
		{"duplicate key", "a: 1\nb: 2\na: 3\n", "f.yaml:3:"},
		{"anchor", "a: &x 1\n", "f.yaml:1:"},
		{"alias", "a: *x\n", "f.yaml:1:"},
		{"tag", "a: !!str 1\n", "f.yaml:1:"},
		{"block scalar", "a: |\n  text\n", "f.yaml:1:"},
		{"folded scalar", "a: >\n  text\n", "f.yaml:1:"},
		{"flow mapping", "a: {b: 1}\n", "f.yaml:1:"},
		{"nested flow", "a: [[1]]\n", "f.yaml:1:"},
		{"unterminated flow", "a: [1, 2\n  , 3]\n", "f.yaml:1:"},
		{"empty flow item", "a: [1,,2]\n", "f.yaml:1:"},
		{"trailing flow comma", "a: [1,]\n", "f.yaml:1:"},
		{"text after flow", "a: [1] x\n", "f.yaml:1:"},
		{"unterminated quote", "a: 'x\n", "f.yaml:1:"},
		{"text after quote", "a: 'x' y\n", "f.yaml:1:"},
		{"bad escape", "a: \"\\q\"\n", "f.yaml:1:"},
		{"colon in value", "a: b: c\n", "f.yaml:1:"},
		{"list on key line", "a: - 1\n", "f.yaml:1:"},
		{"second document", "a: 1\n---\nb: 2\n", "f.yaml:2:"},
		{"document end", "a: 1\n...\n", "f.yaml:2:"},
		{"complex key", "? a\n", "f.yaml:1:"},
		{"control character", "a: \x01\n", "f.yaml:1:"},
		{"multi-line plain scalar", "a:\n  text\n  more\n", "f.yaml:3:"},
		{"two top-level values", "x\ny\n", "f.yaml:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseYAMLSubset(tt.in, "f.yaml")
			if err == nil {
				t.Fatalf("no error; parsed %+v", n)
			}
			if !errors.Is(err, ErrSyntax) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q: want ErrSyntax at %s", err, tt.want)
			}
		})
	}
}

func TestSlurmYAMLErrors(t *testing.T) {
	tree := func(body string) string {
		return "- topology: t\n  tree:\n    switches:\n" + body
	}
	tests := []struct {
		name string
		yaml string
		opts SlurmOptions
		err  error
		want []string
	}{
		{"empty file", "# nothing\n", SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:", "no topology"}},
		{"empty list", "[]\n", SlurmOptions{}, ErrInvalidSpec, []string{"no topology"}},
		{"not a list", "topology: t\nflat: true\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:1:", "list of topologies"}},
		{"item not a mapping", "- t\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:1:", "mapping"}},
		{"topology not first", "- flat: true\n  topology: t\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:1:", "first key"}},
		{"empty name", "- topology: ''\n  flat: true\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:1:", "empty topology name"}},
		{"name not a string", "- topology: [a]\n  flat: true\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:1:", "topology:"}},
		{"unknown key", "- topology: t\n  flat: true\n  plugin: x\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:3:", "plugin:"}},
		{"duplicate topology", "- topology: t\n  flat: true\n- topology: t\n  flat: true\n", SlurmOptions{Nodes: []string{"n1"}}, ErrDuplicate,
			[]string{"topology.yaml:3:", `"t" defined twice`, "topology.yaml:1"}},
		{"two defaults", "- topology: a\n  cluster_default: true\n  flat: true\n- topology: b\n  cluster_default: true\n  flat: true\n",
			SlurmOptions{Nodes: []string{"n1"}}, ErrInvalidSpec, []string{"topology.yaml:5:", `"a" and "b"`, "topology.yaml:2"}},
		{"bad boolean", "- topology: t\n  cluster_default: yes\n  flat: true\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:2:", "cluster_default"}},
		{"quoted boolean", "- topology: t\n  flat: 'true'\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:2:", "flat"}},
		{"no kind", "- topology: t\n  flat: false\n", SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:1:", "exactly one"}},
		{"two kinds", "- topology: t\n  flat: true\n" + "  tree:\n    switches:\n      - switch: s\n        nodes: n1\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.yaml:1:", "exactly one"}},
		{"flat without nodes", "- topology: t\n  flat: true\n", SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:1:", "SlurmOptions.Nodes"}},
		{"bad flat nodes", "- topology: t\n  flat: true\n", SlurmOptions{Nodes: []string{"n[2-1]"}}, ErrSyntax, []string{"SlurmOptions.Nodes", "descending"}},
		{"duplicate flat nodes", "- topology: t\n  flat: true\n", SlurmOptions{Nodes: []string{"n[1-2]", "n2"}}, ErrDuplicate, []string{"SlurmOptions.Nodes", `"n2"`}},
		{"tree not a mapping", "- topology: t\n  tree: x\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:2:", "tree"}},
		{"tree unknown key", "- topology: t\n  tree:\n    nodes: x\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:3:", "nodes:"}},
		{"tree without switches", "- topology: t\n  tree:\n    switches: []\n", SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:2:", "without switches"}},
		{"switches not a list", "- topology: t\n  tree:\n    switches: s0\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:3:", "switches"}},
		{"switch unknown key", tree("      - switch: s\n        nodes: n1\n        link_speed: 5\n"), SlurmOptions{}, ErrSyntax,
			[]string{"topology.yaml:6:", "link_speed:"}},
		{"switch without name", tree("      - nodes: n1\n"), SlurmOptions{}, ErrSyntax, []string{"topology.yaml:4:", "switch:"}},
		{"nodes as a list", tree("      - switch: s\n        nodes: [1-3]\n"), SlurmOptions{}, ErrSyntax, []string{"topology.yaml:5:", "nodes"}},
		{"empty nodes", tree("      - switch: s\n        nodes: ''\n"), SlurmOptions{}, ErrSyntax, []string{"topology.yaml:5:", "empty"}},
		{"bad hostlist", tree("      - switch: s\n        nodes: n[3-1]\n"), SlurmOptions{}, ErrSyntax, []string{"topology.yaml:5:", `"n[3-1]"`}},
		{"node under two switches", tree("      - switch: a\n        nodes: n[1-2]\n      - switch: b\n        nodes: n2\n"), SlurmOptions{}, ErrNotTree,
			[]string{"topology.yaml:7:", `node "n2"`, `switch "a" (topology.yaml:5)`, `switch "b" (topology.yaml:7)`}},
		{"switch under two parents", tree("      - switch: a\n        children: l\n      - switch: b\n        children: l\n      - switch: l\n        nodes: n1\n"),
			SlurmOptions{}, ErrNotTree, []string{"topology.yaml:7:", `switch "l"`, `"a" (topology.yaml:5)`}},
		{"undefined switch", tree("      - switch: a\n        children: x\n"), SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:5:", `"x"`}},
		{"cycle", tree("      - switch: a\n        children: b\n      - switch: b\n        children: a\n"), SlurmOptions{}, ErrNotTree,
			[]string{"topology.yaml:5:", "a -> b -> a"}},
		{"switch defined twice", tree("      - switch: a\n        nodes: n1\n      - switch: a\n        nodes: n2\n"), SlurmOptions{}, ErrDuplicate,
			[]string{"topology.yaml:6:", `switch "a" defined twice`}},
		{"switch with both", tree("      - switch: a\n        nodes: n1\n        children: b\n      - switch: b\n        nodes: n2\n"), SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.yaml:4:", "both"}},
		{"switch with neither", tree("      - switch: a\n"), SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:4:", "neither"}},
		{"block unknown key", "- topology: t\n  block:\n    sizes: [1]\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:3:", "sizes:"}},
		{"no blocks", "- topology: t\n  block:\n    block_sizes: [4]\n", SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:3:", "no blocks"}},
		{"block size not a number", "- topology: t\n  block:\n    block_sizes: [4, x]\n    blocks:\n      - block: b\n        nodes: n[1-4]\n",
			SlurmOptions{}, ErrSyntax, []string{"topology.yaml:3:", `"x"`}},
		{"block size not a power of two", "- topology: t\n  block:\n    block_sizes: [4, 12]\n    blocks:\n      - block: b\n        nodes: n[1-4]\n",
			SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:3:", "block size 12"}},
		{"block too small", "- topology: t\n  block:\n    block_sizes: [4]\n    blocks:\n      - block: b\n        nodes: n[1-3]\n",
			SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:5:", `block "b" has 3 nodes`}},
		{"node in two blocks", "- topology: t\n  block:\n    blocks:\n      - block: a\n        nodes: n[1-2]\n      - block: b\n        nodes: n[2-3]\n",
			SlurmOptions{}, ErrNotTree, []string{"topology.yaml:7:", `node "n2"`}},
		{"block without name", "- topology: t\n  block:\n    blocks:\n      - nodes: n1\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:4:", "block:"}},
		{"GPU override unknown", "- topology: t\n  flat: true\n", SlurmOptions{Nodes: []string{"n1"}, NodeGPUs: map[string]int{"n9": 4}}, ErrUnknownNode,
			[]string{"topology.yaml:", "n9"}},
		{"GPU override out of range", "- topology: t\n  flat: true\n", SlurmOptions{Nodes: []string{"n1"}, NodeGPUs: map[string]int{"n1": 65}}, ErrGPUCount,
			[]string{"topology.yaml:", `NodeGPUs["n1"] is 65`}},
		{"tree too deep", tree(deepYAMLTree(9)), SlurmOptions{}, ErrInvalidSpec, []string{"topology.yaml:4:", "9 levels"}},
		{"syntax error", "- topology: t\n  flat: [\n", SlurmOptions{}, ErrSyntax, []string{"topology.yaml:2:"}},
		{"source name", "- topology: t\n  bogus: 1\n", SlurmOptions{Source: "etc/topology.yaml"}, ErrSyntax, []string{"etc/topology.yaml:2:", "bogus:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := ParseSlurmTopologyYAML(strings.NewReader(tt.yaml), tt.opts)
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

func TestSlurmYAMLReadError(t *testing.T) {
	if _, err := ParseSlurmTopologyYAML(slurmFailReader{}, SlurmOptions{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("error %v", err)
	}
}

func FuzzSlurmTopologyYAML(f *testing.F) {
	f.Add(slurmYAMLExample)
	for _, s := range []string{
		"- topology: t\n  flat: true\n",
		"- topology: t\n  tree:\n    switches:\n    - switch: a\n      children: b\n    - switch: b\n      nodes: n[1-2]\n",
		"- topology: t\n  block:\n    block_sizes: [2, 4]\n    blocks:\n      - block: b1\n        nodes: n[1-2]\n      - block: b2\n        nodes: n[3-4]\n",
		"- topology: \"q\"\n  cluster_default: True\n  block:\n    blocks:\n    - block: 'x'\n      nodes: \"[1-3]\" # c\n",
		"a:\n- 1\n- - 2\n  - 3\nb: [x, 'y']\n",
		"- topology: t\n  tree:\n    switches:\n      - switch: a\n        children: a\n",
		"---\n- topology: t\n  flat: false\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		size := 0
		for _, f := range strings.Fields(text) {
			size += hostlistSizeForFuzz(strings.Trim(f, `"'`))
		}
		if size > slurmFuzzMaxNodes {
			t.Skip("too many nodes for fuzzing")
		}
		st, err := ParseSlurmTopologyYAML(strings.NewReader(text), SlurmOptions{})
		if err != nil {
			if st != nil {
				t.Fatalf("result with error %v", err)
			}
			return
		}
		if len(st.Names) == 0 || st.Specs[st.Default].Nodes == nil {
			t.Fatalf("no default topology: %+v", st)
		}
		for _, name := range st.Names {
			c, err := st.Cluster(name)
			if err != nil {
				t.Fatalf("topology %q passed parsing but does not build: %v", name, err)
			}
			if c.NumNodes() != len(st.Specs[name].Nodes) {
				t.Fatalf("topology %q: %d nodes, spec has %d", name, c.NumNodes(), len(st.Specs[name].Nodes))
			}
		}
	})
}
