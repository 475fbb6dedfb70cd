package slurm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/phalanx-sched/phalanx/topology"
)

// memFS returns a file system holding files given as name, content pairs.
func memFS(files ...string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i := 0; i+1 < len(files); i += 2 {
		fsys[files[i]] = &fstest.MapFile{Data: []byte(files[i+1])}
	}
	return fsys
}

// confFS holds text as topology.conf.
func confFS(text string) fstest.MapFS { return memFS("topology.conf", text) }

// slurmPath returns the domain names of the named node, top to bottom.
func slurmPath(t *testing.T, c *topology.Cluster, node string) string {
	t.Helper()
	i, ok := c.LookupNode(node)
	if !ok {
		t.Fatalf("node %q not in the cluster", node)
	}
	var path []string
	for l := 0; l < c.Depth(); l++ {
		path = append(path, c.DomainName(l, c.NodeDomain(i, l)))
	}
	return strings.Join(path, "/")
}

// domainCounts returns the number of domains per level.
func domainCounts(c *topology.Cluster) []int {
	var n []int
	for l := 0; l < c.Depth(); l++ {
		n = append(n, c.NumDomains(l))
	}
	return n
}

// checkShape reports where c's levels, domains per level or the named
// nodes' paths (top to bottom, as slurmPath gives them) differ from the
// wanted ones.
func checkShape(t *testing.T, c *topology.Cluster, levels []string, counts []int, paths map[string]string) {
	t.Helper()
	if got := c.Levels(); !slices.Equal(got, levels) {
		t.Errorf("levels %q, want %q", got, levels)
	}
	if got := domainCounts(c); !slices.Equal(got, counts) {
		t.Errorf("domains per level %v, want %v", got, counts)
	}
	for node, want := range paths {
		if got := slurmPath(t, c, node); got != want {
			t.Errorf("node %s path %q, want %q", node, got, want)
		}
	}
}

func loadTestdata(t *testing.T, name string) *topology.Cluster {
	t.Helper()
	c, warnings, err := LoadConf(os.DirFS("testdata"), name, Options{})
	if err != nil {
		t.Fatalf("LoadConf(%s): %v", name, err)
	}
	if len(warnings) > 0 {
		t.Fatalf("LoadConf(%s): warnings %v", name, warnings)
	}
	return c
}

func loadConf(t *testing.T, text string, opts Options) *topology.Cluster {
	t.Helper()
	c, warnings, err := LoadConf(confFS(text), "topology.conf", opts)
	if err != nil {
		t.Fatalf("LoadConf: %v\n%s", err, text)
	}
	if len(warnings) > 0 {
		t.Fatalf("LoadConf: warnings %v\n%s", warnings, text)
	}
	return c
}

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
