package slurm

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestConfSlurmSyntax loads the forms of Slurm's configuration syntax that
// topology.conf files use, each against the cluster the plain form gives.
func TestConfSlurmSyntax(t *testing.T) {
	plain := "SwitchName=s0 Nodes=q[1-2]\nSwitchName=s1 Nodes=q[3-4]\nSwitchName=top Switches=s[0-1]\n"
	want := loadConf(t, plain, Options{}).Describe()
	tests := []struct{ name, conf string }{
		{"quoted values", "SwitchName=\"s0\" Nodes=\"q[1-2]\"\nSwitchName=s1 Nodes=\"q3,q4\"\nSwitchName=top Switches=\"s[0-1]\"\n"},
		{"blanks around =", "SwitchName = s0 Nodes= q[1-2]\nSwitchName =s1  Nodes =q[3-4]\nSwitchName=top Switches=s[0-1]\n"},
		{"continuation", "SwitchName=s0 \\\n  Nodes=q[1-2]\nSwitchName=s1 Nodes=q[3-4] \\  \n\nSwitchName=top Switches=s[0-1]\n"},
		{"crlf and tabs", "SwitchName=s0\tNodes=q[1-2]\r\nSwitchName=s1 Nodes=q[3-4]\r\nSwitchName=top\tSwitches=s[0-1]\r\n"},
		{"escapes", "SwitchName=s\\0 Nodes=q[1-2] # c\nSwitchName=s1 Nodes=q\\[3-4]\nSwitchName=top Switches=s[0-1]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loadConf(t, tt.conf, Options{}).Describe(); got != want {
				t.Errorf("cluster\n%s\nwant\n%s", got, want)
			}
		})
	}
	// An escaped '#' is part of the value, not a comment.
	c := loadConf(t, "SwitchName=s0 Nodes=n\\#1,n2 # comment\n", Options{})
	if got := c.NodeNames(0, topology.NodeID(c.NumNodes())); !slices.Equal(got, []string{"n#1", "n2"}) {
		t.Errorf("escaped #: nodes %q", got)
	}
	// Line numbers of a continued line are those of its first line.
	spec, _, err := ParseConf(confFS("\n\nSwitchName=s0 \\\nNodes=n1\n"), "topology.conf", Options{})
	if err != nil || spec.Nodes[0].Source != "topology.conf:3" {
		t.Errorf("continued line: source %v, %v", spec.Nodes, err)
	}
}

func TestConfInclude(t *testing.T) {
	fsys := memFS(
		"etc/topology.conf", "SwitchName=top Switches=leaf[1-3]\nInclude leaves/a.conf # the first two\ninclude /etc/c.conf\n",
		"etc/leaves/a.conf", "SwitchName=leaf1 Nodes=n[1-2]\nINCLUDE leaves/b.conf\n", // from etc/, as Slurm reads it
		"etc/leaves/b.conf", "SwitchName=leaf2 Nodes=n[3-4]\n",
		"etc/c.conf", "SwitchName=leaf3 Nodes=n[5-6]\n",
	)
	spec, warnings, err := ParseConf(fsys, "etc/topology.conf", Options{})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("ParseConf: %v %v", err, warnings)
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := slurmPath(t, c, "n4"); got != "top/leaf2" {
		t.Errorf("n4 path %q", got)
	}
	sources := map[string]string{}
	for _, n := range spec.Nodes {
		sources[n.Name] = n.Source
	}
	if sources["n1"] != "etc/leaves/a.conf:1" || sources["n3"] != "etc/leaves/b.conf:1" || sources["n6"] != "etc/c.conf:1" {
		t.Errorf("sources %v", sources)
	}
}

func TestConfIncludeErrors(t *testing.T) {
	leaf := "SwitchName=s0 Nodes=n1\n"
	tests := []struct {
		name  string
		fsys  fstest.MapFS
		err   error
		wants []string
	}{
		{"missing", memFS("topology.conf", leaf+"Include nope.conf\n"), ErrInclude, []string{"topology.conf:2:", "cannot read nope.conf"}},
		{"cycle", memFS("topology.conf", leaf+"Include a.conf\n", "a.conf", "Include topology.conf\n"), ErrInclude,
			[]string{"a.conf:1:", "include cycle: topology.conf -> a.conf -> topology.conf"}},
		{"self", memFS("topology.conf", leaf+"Include topology.conf\n"), ErrInclude, []string{"topology.conf:2:", "include cycle"}},
		{"glob", memFS("topology.conf", leaf+"Include *.conf\n"), ErrInclude, []string{"topology.conf:2:", "globs are not supported"}},
		{"cluster name", memFS("topology.conf", leaf+"Include topo-%c.conf\n"), ErrInclude, []string{"%c are not supported"}},
		{"outside", memFS("topology.conf", leaf+"Include ../x.conf\n"), ErrInclude, []string{"leaves the file system"}},
		{"no file", memFS("topology.conf", leaf+"Include \n"), topology.ErrSyntax, []string{"topology.conf:2:", "include line without a file"}},
		{"two files", memFS("topology.conf", leaf+"Include a b\n"), topology.ErrSyntax, []string{`text "b" after the Include file a`}},
		{"too deep", deepIncludes(MaxIncludeDepth + 2), ErrInclude, []string{"nested deeper than 16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseConf(tt.fsys, "topology.conf", Options{})
			checkDefects(t, err, 1, tt.err, tt.wants...)
		})
	}
	// The main file itself missing: the file system's error.
	_, _, err := ParseConf(memFS(), "topology.conf", Options{})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "topology.conf: ") {
		t.Errorf("missing main file: %v", err)
	}
}

// deepIncludes returns files where topology.conf includes i1.conf, which
// includes i2.conf, and so on n times.
func deepIncludes(n int) fstest.MapFS {
	fsys := memFS("topology.conf", "SwitchName=s0 Nodes=n1\nInclude i1.conf\n")
	for i := 1; i <= n; i++ {
		fsys["i"+strconv.Itoa(i)+".conf"] = &fstest.MapFile{Data: []byte("Include i" + strconv.Itoa(i+1) + ".conf\n")}
	}
	return fsys
}

func TestConfWarnings(t *testing.T) {
	conf := "SwitchName=top Switches=leaf0,leaf1,agg\nSwitchName=leaf0 Nodes=gpu[1-2]\nSwitchName=leaf1\nSwitchName=agg Switches=leaf2\nSwitchName=leaf2\n"
	c, warnings, err := LoadConf(confFS(conf), "topology.conf", Options{Nodes: []string{"gpu[1-4]", "login1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Levels(); !slices.Equal(got, []string{"spine", "leaf"}) || c.NumNodes() != 2 {
		t.Errorf("levels %q, %d nodes", got, c.NumNodes())
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.Error())
	}
	want := []string{
		"topology.conf: topology: unknown node: 3 node(s) of slurm.conf (Options.Nodes) are under no switch or block and are left out: gpu[3-4],login1",
		`topology.conf:3: topology: domain without nodes: switch "leaf1" has neither nodes nor child switches; it is left out`,
		`topology.conf:4: topology: domain without nodes: switch "agg" has no node under its child switches; it is left out`,
		`topology.conf:5: topology: domain without nodes: switch "leaf2" has neither nodes nor child switches; it is left out`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestReadSlurmConfNodes(t *testing.T) {
	fsys := memFS(
		"slurm.conf", "ClusterName=c1\nNodeName=DEFAULT Gres=gpu:h100:8 CPUs=64\nNodeName=gpu[001-004] State=UNKNOWN\n"+
			"nodename=big1 Gres=gpu:a100:4,gpu:h100:4(S:0-1),shard:8\nNodeName=login1 Gres=shard:2\n"+
			"PartitionName=all Nodes=ALL\ninclude nodes.conf\n",
		"nodes.conf", "NodeName=\"cpu[1-2]\" Gres=gpu:0\n",
	)
	got, err := ReadSlurmConfNodes(fsys, "slurm.conf")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gpu[001-004]", "big1", "login1", "cpu[1-2]"}; !slices.Equal(got.Nodes, want) {
		t.Errorf("nodes %q, want %q", got.Nodes, want)
	}
	// login1 names a Gres without GPUs: it has none, whatever the default.
	if got.GPUs["gpu003"] != 8 || got.GPUs["big1"] != 8 || len(got.GPUs) != 5 {
		t.Errorf("GPUs %v", got.GPUs)
	}
	_, err = ReadSlurmConfNodes(memFS("slurm.conf", "NodeName=n[2-1]\nNodeName=x Gres=gpu:4x\n"), "slurm.conf")
	checkDefects(t, err, 2, topology.ErrGPUCount, "slurm.conf:1:", "slurm.conf:2:", `GPU count "4x"`)
}

// TestConfLinkSpeed checks that LinkSpeed= takes what Slurm's uint32
// parser takes (strtoul with base 0, a K suffix, UNLIMITED, INFINITE), and
// that anything else is a defect naming the line.
func TestConfLinkSpeed(t *testing.T) {
	for _, v := range []string{
		"900", "0", "4294967295", "0x10", "0X1f", "017", "+5", "10K", "10k", "0x10K",
		"4194303K", "K", "UNLIMITED", "unlimited", "INFINITE", "Infinite",
	} {
		t.Run(v, func(t *testing.T) {
			loadConf(t, "SwitchName=s0 Nodes=n1 LinkSpeed="+v+"\n", Options{})
		})
	}
	for _, v := range []string{
		"fast", "4294967296", "4194304K", "-1", "-0", "08", "0x", "0xg", "10KB", "10M", "1.5", "99999999999999999999", "UNLIMITEDK",
	} {
		t.Run("bad "+v, func(t *testing.T) {
			_, _, err := ParseConf(confFS("SwitchName=s0 Nodes=n1\nSwitchName=s1 Nodes=n2 LinkSpeed="+v+"\n"), "topology.conf", Options{})
			checkDefects(t, err, 1, topology.ErrSyntax, "topology.conf:2:", "LinkSpeed="+v)
		})
	}
}

// writeFiles writes files given as path, content pairs under dir.
func writeFiles(t *testing.T, dir string, files ...string) {
	t.Helper()
	for i := 0; i+1 < len(files); i += 2 {
		p := filepath.Join(dir, filepath.FromSlash(files[i]))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConfIncludeTopLevelDir checks that every relative Include path, in
// the top-level file or in a file it includes at any depth, resolves
// against the directory of the top-level file, as Slurm resolves them
// against slurm.conf's directory.
func TestConfIncludeTopLevelDir(t *testing.T) {
	tests := []struct {
		name  string
		main  string // the top-level file, relative to the file system
		files []string
		want  map[string]string // node -> source
	}{
		{"nested include names its path from the top",
			"topology.conf", []string{
				"topology.conf", "SwitchName=top Switches=a,b\nInclude topo.d/a.conf\n",
				"topo.d/a.conf", "SwitchName=a Nodes=n1\nInclude topo.d/b.conf\n",
				"topo.d/b.conf", "SwitchName=b Nodes=n2\n",
			},
			map[string]string{"n1": "topo.d/a.conf:1", "n2": "topo.d/b.conf:1"}},
		{"a bare name in a nested include is the top-level directory's file",
			"topology.conf", []string{
				"topology.conf", "SwitchName=top Switches=a,b\nInclude topo.d/a.conf\n",
				"topo.d/a.conf", "SwitchName=a Nodes=n1\nInclude b.conf\n",
				"b.conf", "SwitchName=b Nodes=n2\n",
				"topo.d/b.conf", "SwitchName=b Nodes=wrong\n",
			},
			map[string]string{"n1": "topo.d/a.conf:1", "n2": "b.conf:1"}},
		{"top-level file in a subdirectory",
			"etc/slurm/topology.conf", []string{
				"etc/slurm/topology.conf", "SwitchName=top Switches=a,b,c\nInclude d/a.conf\n",
				"etc/slurm/d/a.conf", "SwitchName=a Nodes=n1\nInclude d/e/b.conf\n",
				"etc/slurm/d/e/b.conf", "SwitchName=b Nodes=n2\nInclude /etc/c.conf\n",
				"etc/c.conf", "SwitchName=c Nodes=n3\n",
			},
			map[string]string{"n1": "etc/slurm/d/a.conf:1", "n2": "etc/slurm/d/e/b.conf:1", "n3": "etc/c.conf:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files...)
			spec, warnings, err := ParseConf(os.DirFS(dir), tt.main, Options{})
			if err != nil || len(warnings) > 0 {
				t.Fatalf("ParseConf: %v %v", err, warnings)
			}
			got := map[string]string{}
			for _, n := range spec.Nodes {
				got[n.Name] = n.Source
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("node sources %v, want %v", got, tt.want)
			}
		})
	}
	// A nested include of a file that is only beside the including file
	// is not found: the error names the path tried and the Include line.
	dir := t.TempDir()
	writeFiles(t, dir,
		"topology.conf", "SwitchName=top Switches=a\nInclude topo.d/a.conf\n",
		"topo.d/a.conf", "SwitchName=a Nodes=n1\nInclude b.conf\n",
		"topo.d/b.conf", "SwitchName=b Nodes=n2\n",
	)
	_, _, err := ParseConf(os.DirFS(dir), "topology.conf", Options{})
	checkDefects(t, err, 1, ErrInclude, "topo.d/a.conf:2:", "cannot read b.conf")
	// ReadSlurmConfNodes resolves against slurm.conf's directory too.
	writeFiles(t, dir,
		"slurm.conf", "Include nodes.d/gpu.conf\n",
		"nodes.d/gpu.conf", "NodeName=g[1-2] Gres=gpu:4\nInclude nodes.d/cpu.conf\n",
		"nodes.d/cpu.conf", "NodeName=c1\n",
	)
	nodes, err := ReadSlurmConfNodes(os.DirFS(dir), "slurm.conf")
	if err != nil || !slices.Equal(nodes.Nodes, []string{"g[1-2]", "c1"}) {
		t.Errorf("ReadSlurmConfNodes: %v, %v", nodes, err)
	}
}
