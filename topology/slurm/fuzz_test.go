package slurm

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

var blankAroundEquals = regexp.MustCompile(`\s=|=\s`)

// fuzzMaxNodes caps the nodes of a fuzz input; larger inputs are skipped
// (the loaders handle them, only slowly).
const fuzzMaxNodes = 1 << 12

// fuzzSize returns how many names the words of text expand to, as far as
// hostlist.Count can tell, so that huge clusters are skipped.
func fuzzSize(text string) int {
	size := 0
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\n' || r == '=' || r == '"' || r == '\'' || r == ':' }) {
		n, _ := hostlist.Count(f)
		size += n
	}
	return size
}

var sentinels = []error{
	topology.ErrSyntax, topology.ErrDuplicate, topology.ErrNotTree, topology.ErrInvalidSpec,
	topology.ErrGPUCount, topology.ErrUnknownNode, topology.ErrEmptyDomain, ErrInclude,
}

// checkFuzzDefects checks the shape of a loader's error: a *Defects of at
// least one defect, each naming a file, wrapping a sentinel and ordered.
func checkFuzzDefects(t *testing.T, err error, files ...string) {
	var ds *topology.Defects
	if !errors.As(err, &ds) || len(ds.List) == 0 {
		t.Fatalf("error %v (%T) is not a non-empty *topology.Defects", err, err)
	}
	for i, d := range ds.List {
		if d.File == "" || d.Line < 0 || d.Msg == "" {
			t.Fatalf("defect %+v lacks a file or message", d)
		}
		if !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(d, s) }) {
			t.Fatalf("defect %v wraps no sentinel", d)
		}
		if i > 0 && d.File == ds.List[i-1].File && d.Line < ds.List[i-1].Line {
			t.Fatalf("defects out of order: %v", err)
		}
	}
}

// listedNodes counts the distinct nodes named in Nodes= values of a
// topology.conf written without quotes, escapes, includes or blanks
// around "=", independently of the loader; ok is false for other files.
func listedNodes(text string) (n int, ok bool) {
	if strings.ContainsAny(text, "\"\\") || strings.Contains(strings.ToLower(text), "include") || blankAroundEquals.MatchString(text) {
		return 0, false
	}
	seen := make(map[string]bool)
	for _, line := range strings.Split(text, "\n") {
		if k := strings.IndexByte(line, '#'); k >= 0 {
			line = line[:k]
		}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			if !strings.EqualFold(k, "nodes") {
				continue
			}
			names, err := hostlist.Expand(v)
			if err != nil {
				return 0, false
			}
			for _, n := range names {
				seen[n] = true
			}
		}
	}
	return len(seen), true
}

// addDefectFixtures seeds f with every testdata/defects/*/name file.
func addDefectFixtures(f *testing.F, name string) {
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "defects", "*", name))
	for _, file := range fixtures {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
}

func FuzzParseConf(f *testing.F) {
	for _, name := range []string{"alibaba_lingjun_crux_3tier.topology.conf", "nvidia_topograph_block.conf", "nvidia_topograph_tree.conf"} {
		f.Add(readTestdata(f, name))
	}
	addDefectFixtures(f, "topology.conf")
	for _, s := range []string{
		"SwitchName=s0 Nodes=tux[0-3]\nSwitchName=s4 Switches=s[0-3]\n",
		"SwitchName=top Switches=agg,leafX\nSwitchName=agg Switches=leafA\nSwitchName=leafA Nodes=a[1-2]\nSwitchName=leafX Nodes=x[1-2]\n",
		"SwitchName=a Switches=b\nSwitchName=b Switches=a\n",
		"BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockName=b3 Nodes=n[5-6]\nBlockSizes=2,4,8\n",
		"SwitchName = \"s0\" Nodes=\"n[1-2]\" \\\n LinkSpeed=1\nInclude inc.conf\n",
		"switchname=X nodes=[1-3] # c\nSwitchName=e\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if fuzzSize(text) > fuzzMaxNodes {
			t.Skip("too many nodes for fuzzing")
		}
		fsys := memFS("topology.conf", text, "inc.conf", "SwitchName=inc Nodes=i[1-2]\n")
		spec, warnings, err := ParseConf(fsys, "topology.conf", Options{MaxDefects: 5})
		if err != nil {
			checkFuzzDefects(t, err)
			if spec.Nodes != nil || warnings != nil {
				t.Fatalf("spec or warnings with error %v", err)
			}
			return
		}
		c, err := topology.Build(spec)
		if err != nil {
			t.Fatalf("ParseConf succeeded but Build failed: %v", err)
		}
		empty := slices.ContainsFunc(warnings, func(d topology.Defect) bool { return errors.Is(d, topology.ErrEmptyDomain) })
		if want, ok := listedNodes(text); ok && !empty && c.NumNodes() != want {
			t.Fatalf("cluster has %d nodes, file lists %d", c.NumNodes(), want)
		}
	})
}

func FuzzParseYAML(f *testing.F) {
	f.Add(slurmYAMLExample)
	addDefectFixtures(f, "topology.yaml")
	for _, s := range []string{
		"- topology: t\n  flat: true\n",
		"- topology: t\n  tree:\n    switches:\n    - switch: a\n      children: b\n    - switch: b\n      nodes: n[1-2]\n",
		"- topology: t\n  block:\n    block_sizes: [2, 4]\n    blocks:\n      - block: b1\n        nodes: n[1-2]\n      - block: b2\n        nodes: n[3-4]\n",
		"- topology: \"q\"\n  cluster_default: True\n  block:\n    blocks:\n    - block: 'x'\n      nodes: \"[1-3]\" # c\n",
		"topology: t\ntree:\n  switches: {switch: s, nodes: 'n[1-2]'}\n",
		"- topology: t\n  tree:\n    switches:\n      - switch: a\n        children: a\n",
		"---\n- topology: t\n  flat: false\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if fuzzSize(text) > fuzzMaxNodes {
			t.Skip("too many nodes for fuzzing")
		}
		st, err := ParseYAML(memFS("topology.yaml", text), "topology.yaml", Options{MaxDefects: 5})
		if err != nil {
			checkFuzzDefects(t, err)
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

func FuzzReadSlurmConfNodes(f *testing.F) {
	for _, s := range []string{
		"NodeName=DEFAULT Gres=gpu:h100:8\nNodeName=gpu[001-004] State=UNKNOWN\n",
		"nodename=big1 Gres=gpu:a100:4,gpu:h100:4(S:0-1),shard:8\nNodeName=\"cpu[1-2]\" Gres=gpu:0\n",
		"NodeName=n[2-1]\nNodeName=x Gres=gpu:many\nInclude inc.conf\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if fuzzSize(text) > fuzzMaxNodes {
			t.Skip("too many nodes for fuzzing")
		}
		fsys := memFS("slurm.conf", text, "inc.conf", "NodeName=i[1-2] Gres=gpu:2\n")
		got, err := ReadSlurmConfNodes(fsys, "slurm.conf")
		if err != nil {
			checkFuzzDefects(t, err)
			return
		}
		// The node list must be usable as Options.Nodes.
		for _, expr := range got.Nodes {
			if _, err := hostlist.Expand(expr); err != nil {
				t.Fatalf("node expression %q does not expand: %v", expr, err)
			}
		}
		for n, g := range got.GPUs {
			if g <= 0 {
				t.Fatalf("node %s has %d GPUs", n, g)
			}
		}
	})
}
