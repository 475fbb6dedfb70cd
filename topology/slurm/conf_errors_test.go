package slurm

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// checkDefects checks that err is a *topology.Defects of n defects, that
// it wraps sentinel and that its message holds every fragment.
func checkDefects(t *testing.T, err error, n int, sentinel error, fragments ...string) {
	t.Helper()
	var ds *topology.Defects
	if !errors.As(err, &ds) {
		t.Fatalf("error %v (%T) is not a *topology.Defects", err, err)
	}
	if len(ds.List) != n {
		t.Errorf("%d defects, want %d:\n%v", len(ds.List), n, err)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("error %q does not wrap %q", err, sentinel)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

func TestConfErrors(t *testing.T) {
	tests := []struct {
		name string
		conf string
		opts Options
		err  error
		want []string // fragments of the message
	}{
		{"unknown key", "SwitchName=s0 Nodes=n1 Speed=3\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "Speed="}},
		{"unknown first key", "\n# x\nNodes=n1\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:3:", "Nodes="}},
		{"ring plugin", "RingName=r0 Nodes=n[1-8]\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "RingName="}},
		{"not key=value", "SwitchName=s0 Nodes n1\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", `"Nodes"`, "not Key=Value"}},
		{"empty value", "SwitchName=s0 Nodes=\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "Nodes= has no value"}},
		{"empty quoted value", "SwitchName=s0 Nodes=\"\"\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "Nodes= has no value"}},
		{"unterminated quote", "SwitchName=s0 Nodes=\"n[1-2]\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "unterminated quoted value"}},
		{"text after a quote", "SwitchName=s0 Nodes=\"n1\"x\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", `text "x" right after the quoted value`}},
		{"operator", "SwitchName=s0 Nodes+=n1\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "Nodes+= is not supported"}},
		{"key twice", "SwitchName=s0 Nodes=n1 nodes=n2\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "nodes= given twice"}},
		{"bad link speed", "SwitchName=s0 Nodes=n1 LinkSpeed=fast\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "LinkSpeed=fast"}},
		{"bad hostlist", "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[5-3]\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:2:", `switch "s1" nodes`, `descending range "5-3"`}},
		{"bad switch hostlist", "SwitchName=s0 Nodes=n1\nSwitchName=s1 Switches=s[0\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:2:", `"s[0"`}},
		{"node under two switches", "SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=n[4-6]\n", Options{}, topology.ErrNotTree,
			[]string{"topology.conf:2:", `node(s) n4 under switch "s0" (topology.conf:1) and switch "s1" (topology.conf:2)`}},
		{"node twice under one switch", "SwitchName=s0 Nodes=n[1-4],n2\n", Options{}, topology.ErrDuplicate,
			[]string{"topology.conf:1:", `switch "s0" lists node(s) n2 twice`}},
		{"switch under two parents", "SwitchName=a Switches=l\nSwitchName=b Switches=l\nSwitchName=l Nodes=n1\n", Options{}, topology.ErrNotTree,
			[]string{"topology.conf:2:", `switch "l"`, `switch "a" (topology.conf:1)`, `switch "b" (topology.conf:2)`}},
		{"switch twice under one parent", "SwitchName=a Switches=l,l\nSwitchName=l Nodes=n1\n", Options{}, topology.ErrDuplicate,
			[]string{"topology.conf:1:", `switch(es) l twice`}},
		{"undefined switch", "SwitchName=a Switches=s[0-1]\nSwitchName=s0 Nodes=n1\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:1:", "switch(es) s1, which are not defined"}},
		{"cycle", "SwitchName=l Nodes=n1\nSwitchName=a Switches=b\nSwitchName=b Switches=c\nSwitchName=c Switches=a\n", Options{}, topology.ErrNotTree,
			[]string{"topology.conf:2:", "cycle a -> b -> c -> a"}},
		{"self cycle", "SwitchName=a Switches=a\nSwitchName=l Nodes=n1\n", Options{}, topology.ErrNotTree,
			[]string{"topology.conf:1:", "cycle a -> a"}},
		{"switch defined twice", "SwitchName=s0 Nodes=n1\nSwitchName=s0 Nodes=n2\n", Options{}, topology.ErrDuplicate,
			[]string{"topology.conf:2:", `switch "s0" defined twice`, "topology.conf:1"}},
		{"switch with both", "SwitchName=s0 Nodes=n1 Switches=s1\nSwitchName=s1 Nodes=n2\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:1:", `switch "s0" has both`}},
		{"bad switch name", "SwitchName=s[0-1] Nodes=n1\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", `"s[0-1]"`}},
		{"tree too deep", "SwitchName=a Switches=b\nSwitchName=b Switches=c\nSwitchName=c Switches=d\nSwitchName=d Switches=e\n" +
			"SwitchName=e Switches=f\nSwitchName=f Switches=g\nSwitchName=g Switches=h\nSwitchName=h Switches=i\nSwitchName=i Nodes=n1\n",
			Options{}, topology.ErrInvalidSpec, []string{"topology.conf:1:", `switch "a" heads a tree of 9 levels`}},
		{"empty file", "# nothing\n\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:", "no SwitchName="}},
		{"GPU override too large", "SwitchName=s0 Nodes=n1\n", Options{NodeGPUs: map[string]int{"n1": 65}}, topology.ErrGPUCount,
			[]string{"topology.conf:", `NodeGPUs["n1"] is 65`}},
		{"GPU override zero", "SwitchName=s0 Nodes=n1\n", Options{NodeGPUs: map[string]int{"n1": 0}}, topology.ErrGPUCount,
			[]string{`NodeGPUs["n1"] is 0`}},
		{"default GPUs out of range", "SwitchName=s0 Nodes=n1\n", Options{DefaultGPUs: -1}, topology.ErrGPUCount,
			[]string{"DefaultGPUs is -1"}},
		{"GPU override for an unknown node", "SwitchName=s0 Nodes=n1\n", Options{NodeGPUs: map[string]int{"n2": 4, "n3": 4, "n1": 2}}, topology.ErrUnknownNode,
			[]string{"topology.conf:", "n[2-3]"}},
		{"mixed tree then block", "SwitchName=s0 Nodes=n1\nBlockName=b1 Nodes=n2\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:2:", "BlockName=", "topology.conf:1"}},
		{"mixed block then tree", "BlockSizes=1\nBlockName=b1 Nodes=n2\nSwitchName=s0 Nodes=n1\nSwitchName=s1 Nodes=n3\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:3:", "SwitchName=", "topology.conf:1"}},
		{"block defined twice", "BlockName=b1 Nodes=n1\nBlockName=b1 Nodes=n2\n", Options{}, topology.ErrDuplicate,
			[]string{"topology.conf:2:", `block "b1" defined twice`}},
		{"node in two blocks", "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockName=b3 Nodes=n[2-3]\n", Options{}, topology.ErrNotTree,
			[]string{"topology.conf:3:", `node(s) n2 under block "b1" (topology.conf:1) and block "b3" (topology.conf:3)`, `node(s) n3 under block "b2"`}},
		{"block without nodes", "BlockName=b1\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:1:", `block "b1" has no nodes`}},
		{"block unknown key", "BlockName=b1 Nodes=n1 Switches=x\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "Switches="}},
		{"BlockSizes only", "BlockSizes=4,8\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:1:", "no blocks"}},
		{"BlockSizes twice", "BlockName=b1 Nodes=n1\nBlockSizes=1\nBlockSizes=1,2\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:3:", "BlockSizes= given twice", "topology.conf:2"}},
		{"BlockSizes not a number", "BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,x\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:2:", `"x"`}},
		{"BlockSizes zero", "BlockName=b1 Nodes=n1\nBlockSizes=0\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:2:", `"0"`}},
		{"BlockSizes not a power of two", "BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,24\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:2:", "block size 24"}},
		{"BlockSizes not a multiple", "BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,12\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:2:", "block size 12"}},
		{"BlockSizes not increasing", "BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,32,16\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:2:", "block size 16"}},
		{"BlockSizes repeated", "BlockName=b1 Nodes=n[1-8]\nBlockSizes=8,8\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:2:", "block size 8"}},
		{"BlockSizes extra key", "BlockSizes=8 Nodes=n1\nBlockName=b1 Nodes=n[1-8]\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", "Nodes="}},
		{"block smaller than base", "BlockName=b1 Nodes=n[1-8]\nBlockName=b2 Nodes=n[9-12]\nBlockSizes=8,16\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:2:", `block "b2" has 4 nodes`, "base block size 8"}},
		{"block smaller than the first", "BlockName=b1 Nodes=n[1-8]\nBlockName=b2 Nodes=n[9-12]\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf:2:", `block "b2" has 4 nodes`}},
		{"bad block hostlist", "BlockName=b1 Nodes=n[]\n", Options{}, topology.ErrSyntax,
			[]string{"topology.conf:1:", `block "b1" nodes`, `"n[]"`}},
		{"node not in slurm.conf", "SwitchName=s0 Nodes=gpu[1-2],[3-4]\n", Options{Nodes: []string{"gpu[1-4]"}}, topology.ErrUnknownNode,
			[]string{"topology.conf:1:", `switch "s0" lists 2 node(s) that slurm.conf (Options.Nodes) does not define: [3-4]`}},
		{"bad slurm.conf node list", "SwitchName=s0 Nodes=n1\n", Options{Nodes: []string{"n[2-1]"}}, topology.ErrSyntax,
			[]string{"Options.Nodes: ", "descending"}},
		{"duplicate slurm.conf nodes", "SwitchName=s0 Nodes=n1\n", Options{Nodes: []string{"n[1-2]", "n2"}}, topology.ErrDuplicate,
			[]string{"Options.Nodes: ", "listed twice: n2"}},
		{"only empty switches", "SwitchName=s0\nSwitchName=s1 Switches=s0\n", Options{}, topology.ErrInvalidSpec,
			[]string{"topology.conf: ", "no switch holds a node", "topology.conf:1:", `switch "s0" has neither`, "topology.conf:2:", `switch "s1"`}},
		// As in Slurm, "Nodes=n1" is the switch's name: the error names
		// the line and the switch left out (found by a helper's probe).
		{"a switch name left empty", "SwitchName= Nodes=n1\n", Options{}, topology.ErrInvalidSpec,
			[]string{"no switch holds a node", "topology.conf:1:", `switch "Nodes=n1" has neither nodes nor child switches`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, warnings, err := ParseConf(confFS(tt.conf), "topology.conf", tt.opts)
			if err == nil {
				t.Fatalf("no error; spec %+v", spec)
			}
			if spec.Levels != nil || spec.Nodes != nil || warnings != nil {
				t.Errorf("a spec or warnings with the error")
			}
			want := map[string]int{"node in two blocks": 2, "only empty switches": 3, "a switch name left empty": 2}[tt.name]
			want = max(want, 1)
			checkDefects(t, err, want, tt.err, tt.want...)
			c, _, err2 := LoadConf(confFS(tt.conf), "topology.conf", tt.opts)
			if c != nil || err2 == nil || err2.Error() != err.Error() {
				t.Errorf("LoadConf = %v, %v; want nil and the same error", c, err2)
			}
		})
	}
}

// TestConfDefectBound: past Options.MaxDefects defects are counted, not
// listed, and the message says how many more there are.
func TestConfDefectBound(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "SwitchName=s%d Nodes=n[%d-1]\n", i, i+2) // 30 descending ranges
	}
	_, _, err := ParseConf(confFS(b.String()), "topology.conf", Options{MaxDefects: 10})
	var ds *topology.Defects
	if !errors.As(err, &ds) || len(ds.List) != 10 || ds.More != 20 {
		t.Fatalf("error %v", err)
	}
	if !strings.HasPrefix(err.Error(), "30 defects:\ntopology.conf:1: ") || !strings.HasSuffix(err.Error(), "(and 20 more, not listed)") {
		t.Errorf("message %q", err)
	}
}
