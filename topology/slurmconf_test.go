package topology

import (
	"errors"
	"github.com/phalanx-sched/phalanx/topology/hostlist"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// slurmPath returns the domain names of the named node, top to bottom.
func slurmPath(t *testing.T, c *Cluster, node string) string {
	t.Helper()
	i, ok := c.NodeIndex(node)
	if !ok {
		t.Fatalf("node %q not in the cluster", node)
	}
	var path []string
	for l := 0; l < c.Depth(); l++ {
		path = append(path, c.DomainName(l, c.NodeDomain(i, l)))
	}
	return strings.Join(path, "/")
}

// slurmDomainCounts returns the number of domains per level.
func slurmDomainCounts(c *Cluster) []int {
	var n []int
	for l := 0; l < c.Depth(); l++ {
		n = append(n, c.NumDomains(l))
	}
	return n
}

func loadSlurmConfFile(t *testing.T, name string) *Cluster {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := LoadSlurmTopologyConf(f, SlurmOptions{Source: name})
	if err != nil {
		t.Fatalf("LoadSlurmTopologyConf(%s): %v", name, err)
	}
	return c
}

func TestLoadSlurmTopologyConfTestdata(t *testing.T) {
	t.Run("alibaba", func(t *testing.T) {
		c := loadSlurmConfFile(t, "alibaba_lingjun_crux_3tier.topology.conf")
		if got := c.Levels(); !slices.Equal(got, []string{"core", "spine", "leaf"}) {
			t.Errorf("levels %q", got)
		}
		if got := slurmDomainCounts(c); !slices.Equal(got, []int{1, 3, 119}) {
			t.Errorf("domains per level %v, want [1 3 119]", got)
		}
		if c.NumNodes() != 847 || c.TotalGPUs() != 847*8 {
			t.Errorf("%d nodes, %d GPUs; want 847 nodes, %d GPUs", c.NumNodes(), c.TotalGPUs(), 847*8)
		}
		if got := c.DomainName(0, 0); got != "G6" {
			t.Errorf("core %q, want G6", got)
		}
		if got := slurmPath(t, c, "lj0117"); got != "G6/P8/P8-S1" {
			t.Errorf("lj0117 path %q", got)
		}
		// Depth-first order from the root: P8's leaves come first.
		if got := c.NodeName(0); got != "lj0117" {
			t.Errorf("first node %q, want lj0117", got)
		}
		for l := 0; l < c.Depth(); l++ {
			for d := 0; d < c.NumDomains(l); d++ {
				if first, end := c.DomainRange(l, d); end-first < 1 {
					t.Errorf("level %d domain %d is empty", l, d)
				}
			}
		}
	})
	t.Run("topograph block", func(t *testing.T) {
		c := loadSlurmConfFile(t, "nvidia_topograph_block.conf")
		if got := c.Levels(); !slices.Equal(got, []string{"block32", "block16", "block"}) {
			t.Errorf("levels %q", got)
		}
		if got := slurmDomainCounts(c); !slices.Equal(got, []int{3, 6, 12}) {
			t.Errorf("domains per level %v, want [3 6 12]", got)
		}
		if c.NumNodes() != 96 {
			t.Errorf("%d nodes, want 96", c.NumNodes())
		}
		for d := 0; d < 12; d++ {
			if first, end := c.DomainRange(2, d); end-first != 8 {
				t.Errorf("block %s has %d nodes, want 8", c.DomainName(2, d), end-first)
			}
		}
		if got := slurmPath(t, c, "srv2203"); got != "rack[11-12,21-22]/rack[21-22]/rack22" {
			t.Errorf("srv2203 path %q", got)
		}
		if got := slurmPath(t, c, "srv6208"); got != "rack[51-52,61-62]/rack[61-62]/rack62" {
			t.Errorf("srv6208 path %q", got)
		}
	})
	t.Run("topograph tree", func(t *testing.T) {
		c := loadSlurmConfFile(t, "nvidia_topograph_tree.conf")
		if got := c.Levels(); !slices.Equal(got, []string{"core", "spine", "leaf"}) {
			t.Errorf("levels %q", got)
		}
		if got := slurmDomainCounts(c); !slices.Equal(got, []int{1, 6, 12}) {
			t.Errorf("domains per level %v, want [1 6 12]", got)
		}
		if c.NumNodes() != 96 {
			t.Errorf("%d nodes, want 96", c.NumNodes())
		}
		if got := slurmPath(t, c, "srv3205"); got != "switch.3.1/switch.2.3/switch.1.6" {
			t.Errorf("srv3205 path %q", got)
		}
	})
}

func parseSlurmConf(t *testing.T, text string, opts SlurmOptions) *Cluster {
	t.Helper()
	c, err := LoadSlurmTopologyConf(strings.NewReader(text), opts)
	if err != nil {
		t.Fatalf("LoadSlurmTopologyConf: %v\n%s", err, text)
	}
	return c
}

func TestSlurmConfTree(t *testing.T) {
	tests := []struct {
		name   string
		conf   string
		levels []string
		counts []int
		paths  map[string]string
		order  []string // expected node order, when given
	}{
		{
			name:   "one leaf",
			conf:   "SwitchName=s0 Nodes=tux[0-3]\n",
			levels: []string{"leaf"}, counts: []int{1},
			paths: map[string]string{"tux2": "s0"},
		},
		{
			name: "two levels, keys in any case, comments, link speed",
			conf: `# a comment line
  switchname=s0 NODES=tux[0-1] linkspeed=900   # trailing comment

SWITCHNAME=s1 Nodes=tux[2-3] LinkSpeed=900
SwitchName=s4 Switches=s[0-1]
`,
			levels: []string{"spine", "leaf"}, counts: []int{1, 2},
			paths: map[string]string{"tux0": "s4/s0", "tux3": "s4/s1"},
			order: []string{"tux0", "tux1", "tux2", "tux3"},
		},
		{
			name: "parent defined first, depth-first order",
			conf: `SwitchName=top Switches=b,a
SwitchName=a Nodes=n[1-2]
SwitchName=b Nodes=n[3-4]
`,
			levels: []string{"spine", "leaf"}, counts: []int{1, 2},
			order: []string{"n3", "n4", "n1", "n2"},
		},
		{
			name: "several roots",
			conf: `SwitchName=s0 Nodes=a[1-2]
SwitchName=s1 Nodes=b[1-2]
SwitchName=r0 Switches=s0
SwitchName=r1 Switches=s1
`,
			levels: []string{"spine", "leaf"}, counts: []int{2, 2},
			paths: map[string]string{"a1": "r0/s0", "b2": "r1/s1"},
		},
		{
			name: "unbalanced: a leaf under a higher switch",
			conf: `SwitchName=top Switches=agg,leafX
SwitchName=agg Switches=leafA
SwitchName=leafA Nodes=a[1-2]
SwitchName=leafX Nodes=x[1-2]
`,
			levels: []string{"core", "spine", "leaf"}, counts: []int{1, 2, 2},
			paths: map[string]string{"a1": "top/agg/leafA", "x2": "top/leafX/leafX"},
		},
		{
			name: "unbalanced: roots of different heights",
			conf: `SwitchName=core Switches=spine
SwitchName=spine Switches=leaf0
SwitchName=leaf0 Nodes=n[1-2]
SwitchName=lone Nodes=m1
SwitchName=mid Switches=leaf1
SwitchName=leaf1 Nodes=k1
`,
			levels: []string{"core", "spine", "leaf"}, counts: []int{3, 3, 3},
			paths: map[string]string{"n1": "core/spine/leaf0", "m1": "lone/lone/lone", "k1": "mid/mid/leaf1"},
		},
		{
			name: "unbalanced: gap in the middle of a deep tree",
			conf: `SwitchName=t Switches=u,w
SwitchName=u Switches=v
SwitchName=v Switches=l0
SwitchName=l0 Nodes=a1
SwitchName=w Switches=l1
SwitchName=l1 Nodes=b1
`,
			levels: []string{"core", "spine1", "spine2", "leaf"}, counts: []int{1, 2, 2, 2},
			paths: map[string]string{"a1": "t/u/v/l0", "b1": "t/w/w/l1"},
		},
		{
			name: "five levels",
			conf: `SwitchName=a Switches=b
SwitchName=b Switches=c
SwitchName=c Switches=d
SwitchName=d Switches=e
SwitchName=e Nodes=n1
`,
			levels: []string{"core", "spine1", "spine2", "spine3", "leaf"}, counts: []int{1, 1, 1, 1, 1},
			paths: map[string]string{"n1": "a/b/c/d/e"},
		},
		{
			name:   "unlisted switch names in any order",
			conf:   "SwitchName=s9 Nodes=n[1-2],m[5,3]\n",
			levels: []string{"leaf"}, counts: []int{1},
			order: []string{"n1", "n2", "m5", "m3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseSlurmConf(t, tt.conf, SlurmOptions{})
			if got := c.Levels(); !slices.Equal(got, tt.levels) {
				t.Errorf("levels %q, want %q", got, tt.levels)
			}
			if got := slurmDomainCounts(c); !slices.Equal(got, tt.counts) {
				t.Errorf("domains per level %v, want %v", got, tt.counts)
			}
			for node, want := range tt.paths {
				if got := slurmPath(t, c, node); got != want {
					t.Errorf("node %s path %q, want %q", node, got, want)
				}
			}
			if tt.order != nil {
				if got := c.NodeNames(0, c.NumNodes()); !slices.Equal(got, tt.order) {
					t.Errorf("node order %q, want %q", got, tt.order)
				}
			}
		})
	}
}

func TestSlurmConfBlocks(t *testing.T) {
	tests := []struct {
		name   string
		conf   string
		levels []string
		counts []int
		paths  map[string]string
	}{
		{
			name:   "no BlockSizes: base level only",
			conf:   "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-9]\n",
			levels: []string{"block"}, counts: []int{2},
			paths: map[string]string{"n9": "b2"},
		},
		{
			name: "Slurm's example: blocks larger than the base size",
			conf: `BlockName=block1 Nodes=node[1-32]
BlockName=block2 Nodes=node[33-64]
BlockName=block3 Nodes=node[65-96]
BlockName=block4 Nodes=node[97-128]
BlockSizes=30,120
`,
			levels: []string{"block120", "block"}, counts: []int{1, 4},
			paths: map[string]string{"node100": "block[1-4]/block4"},
		},
		{
			name: "BlockSizes first, trailing run smaller",
			conf: `blocksizes=2,4,8
BlockName=b1 Nodes=n[1-2]
BlockName=b2 Nodes=n[3-4]
BlockName=b3 Nodes=n[5-6]
BlockName=b4 Nodes=n[7-8]
BlockName=b5 Nodes=n[9-10]
`,
			levels: []string{"block8", "block4", "block"}, counts: []int{2, 3, 5},
			paths: map[string]string{"n1": "b[1-4]/b[1-2]/b1", "n7": "b[1-4]/b[3-4]/b4", "n10": "b5/b5/b5"},
		},
		{
			name: "sizes past the first spanning level dropped",
			conf: `BlockName=x Nodes=n[1-2]
BlockName=y Nodes=n[3-4]
BlockName=z Nodes=n[5-6]
BlockSizes=2,4,8,16,32
`,
			levels: []string{"block8", "block4", "block"}, counts: []int{1, 2, 3},
			paths: map[string]string{"n5": "x,y,z/z/z"},
		},
		{
			name:   "a single block has no aggregates",
			conf:   "BlockName=x Nodes=n[1-2]\nBlockSizes=2,4\n",
			levels: []string{"block"}, counts: []int{1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseSlurmConf(t, tt.conf, SlurmOptions{})
			if got := c.Levels(); !slices.Equal(got, tt.levels) {
				t.Errorf("levels %q, want %q", got, tt.levels)
			}
			if got := slurmDomainCounts(c); !slices.Equal(got, tt.counts) {
				t.Errorf("domains per level %v, want %v", got, tt.counts)
			}
			for node, want := range tt.paths {
				if got := slurmPath(t, c, node); got != want {
					t.Errorf("node %s path %q, want %q", node, got, want)
				}
			}
		})
	}
}

func TestSlurmConfGPUs(t *testing.T) {
	conf := "SwitchName=s0 Nodes=n[1-3]\n"
	c := parseSlurmConf(t, conf, SlurmOptions{DefaultGPUs: 4, NodeGPUs: map[string]int{"n2": 64}})
	if got := []int{c.Node(0).GPUs, c.Node(1).GPUs, c.Node(2).GPUs}; !slices.Equal(got, []int{4, 64, 4}) {
		t.Errorf("GPUs %v, want [4 64 4]", got)
	}
	c = parseSlurmConf(t, conf, SlurmOptions{})
	if c.TotalGPUs() != 24 {
		t.Errorf("default GPUs: total %d, want 24", c.TotalGPUs())
	}
	spec, err := ParseSlurmTopologyConf(strings.NewReader(conf), SlurmOptions{Source: "topo.conf"})
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Nodes[0].Source; got != "topo.conf:1" {
		t.Errorf("node source %q, want topo.conf:1", got)
	}
}

func TestSlurmConfErrors(t *testing.T) {
	tests := []struct {
		name string
		conf string
		opts SlurmOptions
		err  error
		want []string // fragments of the message
	}{
		{"unknown key", "SwitchName=s0 Nodes=n1 Speed=3\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", "Speed="}},
		{"unknown first key", "\n# x\nNodes=n1\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:3:", "Nodes="}},
		{"ring plugin", "RingName=r0 Nodes=n[1-8]\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", "RingName="}},
		{"not key=value", "SwitchName=s0 Nodes n1\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", `"Nodes"`}},
		{"empty value", "SwitchName=s0 Nodes=\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", "Nodes= has no value"}},
		{"key twice", "SwitchName=s0 Nodes=n1 nodes=n2\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", "nodes= given twice"}},
		{"bad link speed", "SwitchName=s0 Nodes=n1 LinkSpeed=fast\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", "LinkSpeed=fast"}},
		{"source name used", "SwitchName=s0 Nodes=n[1-\n", SlurmOptions{Source: "site/topo.conf"}, ErrSyntax,
			[]string{"site/topo.conf:1:", `"n[1-"`}},
		{"bad hostlist", "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[5-3]\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:2:", `switch "s1" nodes`, `descending range "5-3"`}},
		{"bad switch hostlist", "SwitchName=s0 Nodes=n1\nSwitchName=s1 Switches=s[0\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:2:", `"s[0"`}},
		{"node under two switches", "SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=n[4-6]\n", SlurmOptions{}, ErrNotTree,
			[]string{"topology.conf:2:", `node "n4"`, `switch "s0" (topology.conf:1)`, `switch "s1" (topology.conf:2)`}},
		{"node twice under one switch", "SwitchName=s0 Nodes=n[1-4],n2\n", SlurmOptions{}, ErrDuplicate,
			[]string{"topology.conf:1:", `node "n2"`}},
		{"switch under two parents", "SwitchName=a Switches=l\nSwitchName=b Switches=l\nSwitchName=l Nodes=n1\n", SlurmOptions{}, ErrNotTree,
			[]string{"topology.conf:2:", `switch "l"`, `switch "a" (topology.conf:1)`, `switch "b" (topology.conf:2)`}},
		{"switch twice under one parent", "SwitchName=a Switches=l,l\nSwitchName=l Nodes=n1\n", SlurmOptions{}, ErrDuplicate,
			[]string{"topology.conf:1:", `switch "l" twice`}},
		{"undefined switch", "SwitchName=a Switches=s[0-1]\nSwitchName=s0 Nodes=n1\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:1:", `"s1"`, "not defined"}},
		{"cycle", "SwitchName=l Nodes=n1\nSwitchName=a Switches=b\nSwitchName=b Switches=c\nSwitchName=c Switches=a\n", SlurmOptions{}, ErrNotTree,
			[]string{"topology.conf:2:", "cycle a -> b -> c -> a"}},
		{"self cycle", "SwitchName=a Switches=a\n", SlurmOptions{}, ErrNotTree,
			[]string{"topology.conf:1:", "cycle a -> a"}},
		{"switch defined twice", "SwitchName=s0 Nodes=n1\nSwitchName=s0 Nodes=n2\n", SlurmOptions{}, ErrDuplicate,
			[]string{"topology.conf:2:", `switch "s0" defined twice`, "topology.conf:1"}},
		{"switch with both", "SwitchName=s0 Nodes=n1 Switches=s1\nSwitchName=s1 Nodes=n2\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:1:", `switch "s0" has both`}},
		{"switch with neither", "SwitchName=s0 Nodes=n1\nSwitchName=s1 LinkSpeed=5\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:2:", `switch "s1" has neither`}},
		{"bad switch name", "SwitchName=s[0-1] Nodes=n1\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", `"s[0-1]"`}},
		{"tree too deep", "SwitchName=a Switches=b\nSwitchName=b Switches=c\nSwitchName=c Switches=d\nSwitchName=d Switches=e\n" +
			"SwitchName=e Switches=f\nSwitchName=f Switches=g\nSwitchName=g Switches=h\nSwitchName=h Switches=i\nSwitchName=i Nodes=n1\n",
			SlurmOptions{}, ErrInvalidSpec, []string{"topology.conf:1:", `switch "a" heads a tree of 9 levels`}},
		{"empty file", "# nothing\n\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:", "no SwitchName="}},
		{"GPU override too large", "SwitchName=s0 Nodes=n1\n", SlurmOptions{NodeGPUs: map[string]int{"n1": 65}}, ErrGPUCount,
			[]string{"topology.conf:", `NodeGPUs["n1"] is 65`}},
		{"GPU override zero", "SwitchName=s0 Nodes=n1\n", SlurmOptions{NodeGPUs: map[string]int{"n1": 0}}, ErrGPUCount,
			[]string{`NodeGPUs["n1"] is 0`}},
		{"default GPUs out of range", "SwitchName=s0 Nodes=n1\n", SlurmOptions{DefaultGPUs: -1}, ErrGPUCount,
			[]string{"DefaultGPUs is -1"}},
		{"GPU override for an unknown node", "SwitchName=s0 Nodes=n1\n", SlurmOptions{NodeGPUs: map[string]int{"n2": 4, "n3": 4, "n1": 2}}, ErrUnknownNode,
			[]string{"topology.conf:", "n[2-3]"}},
		{"mixed tree then block", "SwitchName=s0 Nodes=n1\nBlockName=b1 Nodes=n2\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:2:", "BlockName=", "topology.conf:1"}},
		{"mixed block then tree", "BlockSizes=1\nSwitchName=s0 Nodes=n1\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:2:", "SwitchName=", "topology.conf:1"}},
		{"block defined twice", "BlockName=b1 Nodes=n1\nBlockName=b1 Nodes=n2\n", SlurmOptions{}, ErrDuplicate,
			[]string{"topology.conf:2:", `block "b1" defined twice`}},
		{"node in two blocks", "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[2-3]\n", SlurmOptions{}, ErrNotTree,
			[]string{"topology.conf:2:", `node "n2"`, `block "b1" (topology.conf:1)`, `block "b2" (topology.conf:2)`}},
		{"block without nodes", "BlockName=b1\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:1:", `block "b1" has no nodes`}},
		{"block unknown key", "BlockName=b1 Nodes=n1 Switches=x\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", "Switches="}},
		{"BlockSizes only", "BlockSizes=4,8\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:1:", "no blocks"}},
		{"BlockSizes twice", "BlockName=b1 Nodes=n1\nBlockSizes=1\nBlockSizes=1,2\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:3:", "BlockSizes= given twice", "topology.conf:2"}},
		{"BlockSizes not a number", "BlockName=b1 Nodes=n1\nBlockSizes=8,x\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:2:", `"x"`}},
		{"BlockSizes zero", "BlockName=b1 Nodes=n1\nBlockSizes=0\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:2:", `"0"`}},
		{"BlockSizes not a power of two", "BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,24\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:2:", "block size 24"}},
		{"BlockSizes not a multiple", "BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,12\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:2:", "block size 12"}},
		{"BlockSizes not increasing", "BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,32,16\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:2:", "block size 16"}},
		{"BlockSizes repeated", "BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,8\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:2:", "block size 8"}},
		{"BlockSizes extra key", "BlockSizes=8 Nodes=n1\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", "Nodes="}},
		{"block smaller than base", "BlockName=b1 Nodes=n[1-8]\nBlockName=b2 Nodes=n[9-12]\nBlockSizes=8,16\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:2:", `block "b2" has 4 nodes`, "base block size 8"}},
		{"block smaller than the first", "BlockName=b1 Nodes=n[1-8]\nBlockName=b2 Nodes=n[9-12]\n", SlurmOptions{}, ErrInvalidSpec,
			[]string{"topology.conf:2:", `block "b2" has 4 nodes`}},
		{"bad block hostlist", "BlockName=b1 Nodes=n[]\n", SlurmOptions{}, ErrSyntax,
			[]string{"topology.conf:1:", `block "b1" nodes`, `"n[]"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := ParseSlurmTopologyConf(strings.NewReader(tt.conf), tt.opts)
			if err == nil {
				t.Fatalf("no error; spec %+v", spec)
			}
			if spec.Levels != nil || spec.Nodes != nil {
				t.Errorf("non-empty spec with the error")
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("error %q does not wrap %q", err, tt.err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			c, err2 := LoadSlurmTopologyConf(strings.NewReader(tt.conf), tt.opts)
			if c != nil || err2 == nil || err2.Error() != err.Error() {
				t.Errorf("LoadSlurmTopologyConf = %v, %v; want nil and the same error", c, err2)
			}
		})
	}
}

type slurmFailReader struct{}

func (slurmFailReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestSlurmConfReadError(t *testing.T) {
	_, err := ParseSlurmTopologyConf(slurmFailReader{}, SlurmOptions{})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("error %v", err)
	}
}

// hostlistSizeForFuzz returns the number of names expr expands to without
// expanding it (0 for a bad expression), so fuzz targets can skip inputs
// that would build huge clusters and stall the fuzzer.
func hostlistSizeForFuzz(expr string) int {
	n, _ := hostlist.Count(expr)
	return n
}

// slurmFuzzMaxNodes caps the nodes of a fuzz input; larger inputs are
// skipped (the loaders handle them, only slowly).
const slurmFuzzMaxNodes = 1 << 12

// slurmConfListedNodes counts the distinct nodes named in Nodes= values,
// independently of the loader.
func slurmConfListedNodes(t *testing.T, text string) int {
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
				t.Fatalf("loader accepted bad hostlist %q", v)
			}
			for _, n := range names {
				seen[n] = true
			}
		}
	}
	return len(seen)
}

func FuzzSlurmTopologyConf(f *testing.F) {
	for _, name := range []string{
		"alibaba_lingjun_crux_3tier.topology.conf", "nvidia_topograph_block.conf", "nvidia_topograph_tree.conf",
	} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	for _, s := range []string{
		"SwitchName=s0 Nodes=tux[0-3]\nSwitchName=s4 Switches=s[0-3]\n",
		"SwitchName=top Switches=agg,leafX\nSwitchName=agg Switches=leafA\nSwitchName=leafA Nodes=a[1-2]\nSwitchName=leafX Nodes=x[1-2]\n",
		"SwitchName=a Switches=b\nSwitchName=b Switches=a\n",
		"SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n2\n",
		"BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockName=b3 Nodes=n[5-6]\nBlockSizes=2,4,8\n",
		"BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,24\n",
		"BlockSizes=1\nSwitchName=s0 Nodes=n1\n",
		"switchname=X nodes=[1-3] # c\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		size := 0
		for _, f := range strings.Fields(text) {
			if _, v, ok := strings.Cut(f, "="); ok {
				size += hostlistSizeForFuzz(v)
			}
		}
		if size > slurmFuzzMaxNodes {
			t.Skip("too many nodes for fuzzing")
		}
		c, err := LoadSlurmTopologyConf(strings.NewReader(text), SlurmOptions{})
		if err != nil {
			if c != nil {
				t.Fatalf("cluster with error %v", err)
			}
			return
		}
		if want := slurmConfListedNodes(t, text); c.NumNodes() != want {
			t.Fatalf("cluster has %d nodes, file lists %d", c.NumNodes(), want)
		}
	})
}
