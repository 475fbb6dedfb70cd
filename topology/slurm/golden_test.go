package slurm

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/defects/*/want.txt from the current output")

// TestGoldenDescribe loads the real topology files of testdata (the Crux
// 847-host production tree, NVIDIA topograph's tree and block fixtures)
// and the man page example, and compares each cluster's Describe output
// with the one captured before the loaders moved to this package
// (testdata/golden, written by the old topology loaders at commit 7b63de8).
func TestGoldenDescribe(t *testing.T) {
	for _, name := range []string{"alibaba_lingjun_crux_3tier.topology.conf", "nvidia_topograph_tree.conf", "nvidia_topograph_block.conf"} {
		t.Run(name, func(t *testing.T) {
			want := readTestdata(t, filepath.Join("golden", name+".describe"))
			if got := loadTestdata(t, name).Describe(); got != want {
				t.Errorf("Describe changed:\n%s\nwant\n%s", got, want)
			}
		})
	}
	st := parseYAML(t, slurmYAMLExample, Options{})
	for _, name := range st.Names {
		t.Run("yaml example "+name, func(t *testing.T) {
			want := readTestdata(t, filepath.Join("golden", "yaml-example-"+name+".describe"))
			if got := mustCluster(t, st, name).Describe(); got != want {
				t.Errorf("Describe changed:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestDefectFixtures loads each directory of testdata/defects as a Slurm
// configuration directory (LoadDir; with slurm.conf's nodes when it has a
// slurm.conf) and compares the complete result, every defect or the
// cluster and every warning, with its want.txt.
func TestDefectFixtures(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "defects", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := loadFixture(t, dir)
			wantFile := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// loadFixture loads a fixture directory and renders the outcome.
func loadFixture(t *testing.T, dir string) string {
	fsys := os.DirFS(dir)
	var opts Options
	if _, err := os.Stat(filepath.Join(dir, "slurm.conf")); err == nil {
		nodes, err := ReadSlurmConfNodes(fsys, "slurm.conf")
		if err != nil {
			t.Fatalf("slurm.conf: %v", err)
		}
		opts.Nodes, opts.NodeGPUs = nodes.Nodes, nodes.GPUs
	}
	var b strings.Builder
	c, warnings, err := LoadDir(fsys, opts)
	if err != nil {
		b.WriteString("error:\n" + err.Error() + "\n")
	} else {
		b.WriteString(c.Describe())
	}
	for _, w := range warnings {
		b.WriteString("warning: " + w.Error() + "\n")
	}
	return b.String()
}
