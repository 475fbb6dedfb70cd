package kube

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

var update = flag.Bool("update", false, "rewrite testdata/defects/*.want from the current output")

// TestYAMLMatchesJSON reads the kubectl -o yaml rendering of
// blockrack.json (wrapped plain and quoted strings, a block scalar,
// flow-style empty maps) and checks the same cluster and status.
func TestYAMLMatchesJSON(t *testing.T) {
	opts := blockRack()
	fromJSON, stJSON, err := Load(bytes.NewReader(readFixture(t, "blockrack.json")), opts)
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, stYAML, err := Load(bytes.NewReader(readFixture(t, "blockrack.yaml")), opts)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fromYAML.Describe(), fromJSON.Describe(); a != b {
		t.Errorf("YAML cluster\n%s\nJSON cluster\n%s", a, b)
	}
	if fmt.Sprint(stYAML) != fmt.Sprint(stJSON) {
		t.Errorf("YAML status %+v, JSON status %+v", stYAML, stJSON)
	}
}

func TestSingleNodeYAML(t *testing.T) {
	node := "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n  labels:\n    cloud.provider.com/topology-block: b1\n" +
		"    cloud.provider.com/topology-rack: r1\nstatus:\n  allocatable:\n    nvidia.com/gpu: 4\n  conditions:\n  - type: Ready\n    status: \"True\"\n"
	c, st, err := Load(strings.NewReader(node), blockRack())
	if err != nil {
		t.Fatal(err)
	}
	if c.NumNodes() != 1 || c.TotalGPUs() != 4 || st.Down != nil || st.Warnings != nil {
		t.Errorf("%d nodes, %d GPUs, status %+v", c.NumNodes(), c.TotalGPUs(), st)
	}
}

func TestWarnings(t *testing.T) {
	node := func(name, cond string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"status":{"allocatable":{"nvidia.com/gpu":"8"}%s}}`, name, cond)
	}
	notReady := `,"conditions":[{"type":"Ready","status":"False"}]`
	ready := `,"conditions":[{"type":"Ready","status":"True"}]`
	tests := []struct {
		name  string
		input string
		want  error
	}{
		{"no Ready condition", "[" + node("a", "") + "," + node("b", "") + "]", ErrNoReadyCondition},
		{"every node down", "[" + node("a", notReady) + "," + node("b", "") + "]", ErrAllDown},
		{"one up", "[" + node("a", notReady) + "," + node("b", ready) + "]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, st, err := Parse(strings.NewReader(tt.input), Options{Source: "n.json"})
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if st.Warnings != nil {
					t.Errorf("warnings %v", st.Warnings)
				}
				return
			}
			if len(st.Warnings) != 1 || !errors.Is(st.Warnings[0], tt.want) || !strings.HasPrefix(st.Warnings[0].Error(), "n.json: ") {
				t.Errorf("warnings %v, want one %v", st.Warnings, tt.want)
			}
		})
	}
}

// TestGoldenDescribe builds each fixture with the options its golden file
// was captured with (testdata/golden, written by the old topology loaders
// at commit 7b63de8) and compares the Describe output.
func TestGoldenDescribe(t *testing.T) {
	skip := blockRack()
	skip.SkipNodesWithoutGPUs = true
	for name, opts := range map[string]Options{
		"gke.json": PresetGKE(), "aws.json": PresetAWS(), "clique.json": PresetNVLinkClique(),
		"zone.json": PresetZone(), "flat.json": {}, "blockrack.json": blockRack(), "single.json": blockRack(),
		"amd.json": {GPUResource: "amd.com/gpu"}, "mixed.json": skip,
	} {
		t.Run(name, func(t *testing.T) {
			c, _, err := Load(bytes.NewReader(readFixture(t, name)), opts)
			if err != nil {
				t.Fatal(err)
			}
			want := string(readFixture(t, filepath.Join("golden", name+".describe")))
			if got := c.Describe(); got != want {
				t.Errorf("Describe changed:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestDefectFixtures parses each input of testdata/defects with the
// block/rack options and compares the complete outcome (every defect, or
// the cluster, its status and warnings) with the .want file beside it.
func TestDefectFixtures(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "defects", "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	inputs = slices.DeleteFunc(inputs, func(p string) bool { return strings.HasSuffix(p, ".want") })
	if len(inputs) == 0 {
		t.Fatal("no fixtures")
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			opts := blockRack()
			opts.Source = filepath.Base(in)
			got := render(Load(bytes.NewReader(data), opts))
			wantFile := strings.TrimSuffix(in, filepath.Ext(in)) + ".want"
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

// render prints the outcome of a Load.
func render(c *topology.Cluster, st Status, err error) string {
	if err != nil {
		return "error:\n" + err.Error() + "\n"
	}
	var b strings.Builder
	b.WriteString(c.Describe())
	fmt.Fprintf(&b, "down %q drained %q skipped %q\n", st.Down, st.Drained, st.Skipped)
	for _, w := range st.Warnings {
		b.WriteString("warning: " + w.Error() + "\n")
	}
	return b.String()
}

// TestByteOrderMark loads JSON and YAML inputs that start with a UTF-8
// byte order mark, as some Windows tools write them: each gives the same
// cluster and status as without it, and defects keep their line numbers.
func TestByteOrderMark(t *testing.T) {
	const bom = "\ufeff"
	for _, name := range []string{"blockrack.json", "blockrack.yaml", "single.json"} {
		t.Run(name, func(t *testing.T) {
			data := readFixture(t, name)
			want, wantSt, err := Load(bytes.NewReader(data), blockRack())
			if err != nil {
				t.Fatal(err)
			}
			got, gotSt, err := Load(strings.NewReader(bom+string(data)), blockRack())
			if err != nil {
				t.Fatalf("with a BOM: %v", err)
			}
			if a, b := got.Describe(), want.Describe(); a != b {
				t.Errorf("cluster with a BOM\n%s\nwithout\n%s", a, b)
			}
			if fmt.Sprint(gotSt) != fmt.Sprint(wantSt) {
				t.Errorf("status with a BOM %+v, without %+v", gotSt, wantSt)
			}
		})
	}
	for _, tt := range []struct{ name, input, at string }{
		{"json defect", bom + "{\"kind\": \"NodeList\",\n \"items\": [\n  {\"metadata\": {\"name\": \"a\"}, \"status\": {\"allocatable\": {\"nvidia.com/gpu\": \"x\"}}}]}\n", "n:3: "},
		{"yaml defect", bom + "kind: NodeList\nitems:\n- metadata: {name: a}\n  status: {allocatable: {nvidia.com/gpu: x}}\n", "n:4: "},
		{"json syntax", bom + "{\"kind\": \"NodeList\",\n \"items\": [}\n", "n:2: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Load(strings.NewReader(tt.input), Options{Levels: []string{LabelHostname}, Source: "n"})
			if err == nil || !strings.Contains(err.Error(), tt.at) {
				t.Errorf("error %v, want one at %s", err, tt.at)
			}
		})
	}
}
