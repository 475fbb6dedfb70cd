package slurm

import (
	"slices"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

func TestLoadConfTestdata(t *testing.T) {
	t.Run("alibaba", func(t *testing.T) {
		c := loadTestdata(t, "alibaba_lingjun_crux_3tier.topology.conf")
		checkShape(t, c, []string{"core", "spine", "leaf"}, []int{1, 3, 119}, map[string]string{"lj0117": "G6/P8/P8-S1"})
		if c.NumNodes() != 847 || c.TotalGPUs() != 847*8 {
			t.Errorf("%d nodes, %d GPUs; want 847 nodes, %d GPUs", c.NumNodes(), c.TotalGPUs(), 847*8)
		}
		if got := c.DomainName(0, 0); got != "G6" {
			t.Errorf("core %q, want G6", got)
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
		c := loadTestdata(t, "nvidia_topograph_block.conf")
		checkShape(t, c, []string{"block32", "block16", "block"}, []int{3, 6, 12}, map[string]string{
			"srv2203": "rack[11-12,21-22]/rack[21-22]/rack22",
			"srv6208": "rack[51-52,61-62]/rack[61-62]/rack62",
		})
		if c.NumNodes() != 96 {
			t.Errorf("%d nodes, want 96", c.NumNodes())
		}
		for d := 0; d < 12; d++ {
			if first, end := c.DomainRange(2, d); end-first != 8 {
				t.Errorf("block %s has %d nodes, want 8", c.DomainName(2, d), end-first)
			}
		}
	})
	t.Run("topograph tree", func(t *testing.T) {
		c := loadTestdata(t, "nvidia_topograph_tree.conf")
		checkShape(t, c, []string{"core", "spine", "leaf"}, []int{1, 6, 12},
			map[string]string{"srv3205": "switch.3.1/switch.2.3/switch.1.6"})
		if c.NumNodes() != 96 {
			t.Errorf("%d nodes, want 96", c.NumNodes())
		}
	})
}

func TestConfTree(t *testing.T) {
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
			c := loadConf(t, tt.conf, Options{})
			checkShape(t, c, tt.levels, tt.counts, tt.paths)
			if tt.order != nil {
				if got := c.NodeNames(0, topology.NodeID(c.NumNodes())); !slices.Equal(got, tt.order) {
					t.Errorf("node order %q, want %q", got, tt.order)
				}
			}
		})
	}
}

func TestConfBlocks(t *testing.T) {
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
			c := loadConf(t, tt.conf, Options{})
			checkShape(t, c, tt.levels, tt.counts, tt.paths)
		})
	}
}

func TestConfGPUs(t *testing.T) {
	conf := "SwitchName=s0 Nodes=n[1-3]\n"
	c := loadConf(t, conf, Options{DefaultGPUs: 4, NodeGPUs: map[string]int{"n2": 64}})
	if got := []int{c.Node(0).GPUs, c.Node(1).GPUs, c.Node(2).GPUs}; !slices.Equal(got, []int{4, 64, 4}) {
		t.Errorf("GPUs %v, want [4 64 4]", got)
	}
	c = loadConf(t, conf, Options{})
	if c.TotalGPUs() != 24 {
		t.Errorf("default GPUs: total %d, want 24", c.TotalGPUs())
	}
	spec, _, err := ParseConf(memFS("topo.conf", conf), "topo.conf", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Nodes[0].Source; got != "topo.conf:1" {
		t.Errorf("node source %q, want topo.conf:1", got)
	}
}
