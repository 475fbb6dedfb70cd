package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

// Label keys of the Kueue-like fixtures (testdata/kube/blockrack.json and
// others): block, then rack, then the node.
const (
	testBlock = "cloud.provider.com/topology-block"
	testRack  = "cloud.provider.com/topology-rack"
)

func blockRack() Options {
	return Options{Levels: []string{testBlock, testRack, LabelHostname}, LevelNames: []string{"block", "rack", ""}}
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// domainPaths lists every domain of level l as its path from the top,
// joined with '/', in domain order.
func domainPaths(c *topology.Cluster, l int) []string {
	var out []string
	for d := range c.NumDomains(l) {
		var parts []string
		for ll, dd := l, d; ll >= 0; ll, dd = ll-1, c.DomainParent(ll, dd) {
			parts = append(parts, c.DomainName(ll, dd))
		}
		slices.Reverse(parts)
		out = append(out, strings.Join(parts, "/"))
	}
	return out
}

func TestPresets(t *testing.T) {
	sel := blockRack()
	sel.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
	skip := blockRack()
	skip.SkipNodesWithoutGPUs = true
	amd := Options{GPUResource: "amd.com/gpu"}

	tests := []struct {
		name    string
		file    string
		opts    Options
		levels  []string
		nodes   []string // in topology order
		gpus    int
		domains [][]string // domain paths per level
		down    []string
		drained []string
		skipped []string
	}{
		{
			name: "gke", file: "gke.json", opts: PresetGKE(),
			levels: []string{"block", "subblock", "host"},
			nodes:  []string{"gke-a3-pool-1a2b", "gke-a3-pool-3c4d", "gke-a3-pool-5e6f", "gke-a3-pool-7a8b"},
			gpus:   32,
			domains: [][]string{
				{"blk-0c4e", "blk-9f21"},
				{"blk-0c4e/sbk-11", "blk-0c4e/sbk-12", "blk-9f21/sbk-11"},
				{"blk-0c4e/sbk-11/h-a1", "blk-0c4e/sbk-11/h-a2", "blk-0c4e/sbk-12/h-b1", "blk-9f21/sbk-11/h-c1"},
			},
		},
		{
			name: "aws", file: "aws.json", opts: PresetAWS(),
			levels: []string{"layer1", "layer2", "layer3"},
			nodes: []string{"ip-10-0-1-10.ec2.internal", "ip-10-0-1-11.ec2.internal", "ip-10-0-1-12.ec2.internal",
				"ip-10-0-1-13.ec2.internal", "ip-10-0-1-14.ec2.internal"},
			gpus: 40,
			domains: [][]string{
				{"nn-111", "nn-112"},
				{"nn-111/nn-221", "nn-111/nn-222", "nn-112/nn-223"},
				{"nn-111/nn-221/nn-331", "nn-111/nn-221/nn-332", "nn-111/nn-222/nn-333", "nn-112/nn-223/nn-334"},
			},
		},
		{
			name: "nvlink-clique", file: "clique.json", opts: PresetNVLinkClique(),
			levels: []string{"clique"},
			nodes:  []string{"gb200-r1-t1", "gb200-r1-t2", "gb200-r1-t3", "gb200-r2-t1", "gb200-r2-t2"},
			gpus:   20,
			domains: [][]string{
				{"6f2a1c3e-6d1e-4c64-9a77-0d2c0f6b9c11.1", "6f2a1c3e-6d1e-4c64-9a77-0d2c0f6b9c11.2"},
			},
		},
		{
			name: "zone", file: "zone.json", opts: PresetZone(),
			levels:  []string{"zone"},
			nodes:   []string{"gpu-a1", "gpu-a2", "gpu-b1"},
			gpus:    20,
			domains: [][]string{{"europe-west4-a", "europe-west4-b"}},
		},
		{
			name: "flat-bare-array", file: "flat.json", opts: Options{},
			levels:  []string{},
			nodes:   []string{"gpu-1", "gpu-2", "gpu-3"},
			gpus:    18,
			drained: []string{"gpu-3"},
		},
		{
			name: "hostname-only-is-flat", file: "flat.json", opts: Options{Levels: []string{LabelHostname}},
			levels:  []string{},
			nodes:   []string{"gpu-1", "gpu-2", "gpu-3"},
			gpus:    18,
			drained: []string{"gpu-3"},
		},
		{
			name: "derived-level-names", file: "blockrack.json",
			opts:   Options{Levels: []string{testBlock, testRack, LabelHostname}},
			levels: []string{"topology-block", "topology-rack"},
			nodes:  []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7"},
			gpus:   56,
			domains: [][]string{
				{"b1", "b2"},
				{"b1/r1", "b1/r2", "b2/r1", "b2/r2"},
			},
			down:    []string{"n6", "n7"},
			drained: []string{"n3"},
		},
		{
			name: "single-node-object", file: "single.json", opts: blockRack(),
			levels:  []string{"block", "rack"},
			nodes:   []string{"gpu-1"},
			gpus:    8,
			domains: [][]string{{"b1"}, {"b1/r1"}},
		},
		{
			name: "amd-gpu-resource", file: "amd.json", opts: amd,
			levels: []string{},
			nodes:  []string{"mi300-1", "mi300-2"},
			gpus:   16,
		},
		{
			name: "skip-nodes-without-gpus", file: "mixed.json", opts: skip,
			levels: []string{"block", "rack"},
			nodes:  []string{"gpu-1", "gpu-2", "gpu-3", "gpu-4"},
			gpus:   32,
			domains: [][]string{
				{"b1", "b2"},
				{"b1/r1", "b1/r2", "b2/r1"},
			},
			// gpu-2 allocates 0 of its 8 GPUs; gpu-4 reports no conditions.
			down:    []string{"gpu-2", "gpu-4"},
			skipped: []string{"cp-1", "cpu-1"},
		},
		{
			name: "node-selector", file: "mixed.json", opts: sel,
			levels: []string{"block", "rack"},
			nodes:  []string{"gpu-1", "gpu-2", "gpu-4"},
			gpus:   24,
			domains: [][]string{
				{"b1", "b2"},
				{"b1/r1", "b2/r1"},
			},
			down:    []string{"gpu-2", "gpu-4"},
			skipped: []string{"cp-1", "gpu-3", "cpu-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			tt.opts.Source = tt.file
			spec, st, err := Parse(bytes.NewReader(readFixture(t, tt.file)), tt.opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !spec.LocalDomainNames {
				t.Errorf("LocalDomainNames is false")
			}
			c, err := topology.Build(spec)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if got := c.Levels(); !slices.Equal(got, tt.levels) {
				t.Errorf("levels %q, want %q", got, tt.levels)
			}
			if got := c.NodeNames(0, topology.NodeID(c.NumNodes())); !slices.Equal(got, tt.nodes) {
				t.Errorf("nodes %q, want %q", got, tt.nodes)
			}
			if c.TotalGPUs() != tt.gpus {
				t.Errorf("%d GPUs, want %d", c.TotalGPUs(), tt.gpus)
			}
			for l := range c.Depth() {
				if got := domainPaths(c, l); !slices.Equal(got, tt.domains[l]) {
					t.Errorf("level %s domains %q, want %q", c.LevelName(l), got, tt.domains[l])
				}
			}
			if !slices.Equal(st.Down, tt.down) || !slices.Equal(st.Drained, tt.drained) || !slices.Equal(st.Skipped, tt.skipped) {
				t.Errorf("status down %q drained %q skipped %q, want %q %q %q",
					st.Down, st.Drained, st.Skipped, tt.down, tt.drained, tt.skipped)
			}

			// Load builds the same cluster.
			c2, _, err := Load(bytes.NewReader(readFixture(t, tt.file)), tt.opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c2.NumNodes() != c.NumNodes() || !slices.Equal(c2.NodeNames(0, topology.NodeID(c2.NumNodes())), tt.nodes) {
				t.Errorf("Load built %q", c2.NodeNames(0, topology.NodeID(c2.NumNodes())))
			}
		})
	}
}

// TestKubeBlockRack reads a two-level cluster labelled as in Kueue's
// topology-aware scheduling tests (b1/r1 1 node, b1/r2 3 nodes, b2/r1 1
// node, b2/r2 2 nodes, listed interleaved) and checks its domains: rack r1
// of b1 and rack r1 of b2 are different domains.
func TestBlockRack(t *testing.T) {
	opts := blockRack()
	opts.Source = "blockrack.json"
	spec, st, err := Parse(bytes.NewReader(readFixture(t, "blockrack.json")), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Nodes[3].Source; got != "blockrack.json:124" {
		t.Errorf("node %q source %q", spec.Nodes[3].Name, got)
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if c.Depth() != 2 || c.LevelName(0) != "block" || c.LevelName(1) != "rack" {
		t.Fatalf("levels %q", c.Levels())
	}
	type dom struct {
		path   string
		parent int
		nodes  []string
	}
	want := [][]dom{
		{{"b1", -1, []string{"n1", "n2", "n3", "n4"}}, {"b2", -1, []string{"n5", "n6", "n7"}}},
		{
			{"b1/r1", 0, []string{"n1"}},
			{"b1/r2", 0, []string{"n2", "n3", "n4"}},
			{"b2/r1", 1, []string{"n5"}},
			{"b2/r2", 1, []string{"n6", "n7"}},
		},
	}
	for l, doms := range want {
		if c.NumDomains(l) != len(doms) {
			t.Fatalf("level %d: %d domains %q, want %d", l, c.NumDomains(l), domainPaths(c, l), len(doms))
		}
		paths := domainPaths(c, l)
		for d, w := range doms {
			got := c.Domain(l, d)
			first, end := c.DomainRange(l, d)
			if paths[d] != w.path || got.Parent != w.parent || !slices.Equal(c.NodeNames(first, end), w.nodes) || got.GPUs != 8*len(w.nodes) {
				t.Errorf("level %d domain %d: %s parent %d nodes %q GPUs %d, want %s parent %d nodes %q",
					l, d, paths[d], got.Parent, c.NodeNames(first, end), got.GPUs, w.path, w.parent, w.nodes)
			}
		}
	}
	// Same name, two domains.
	r1a, r1b := c.NodeDomain(topology.NodeID(mustNode(t, c, "n1")), 1), c.NodeDomain(topology.NodeID(mustNode(t, c, "n5")), 1)
	if r1a == r1b || c.DomainName(1, r1a) != "r1" || c.DomainName(1, r1b) != "r1" {
		t.Errorf("n1 and n5 racks: %d %q and %d %q, want two domains named r1", r1a, c.DomainName(1, r1a), r1b, c.DomainName(1, r1b))
	}
	// n6 is NotReady, n7 Unknown and cordoned (Down wins), n3 cordoned.
	if !slices.Equal(st.Down, []string{"n6", "n7"}) || !slices.Equal(st.Drained, []string{"n3"}) || st.Skipped != nil {
		t.Errorf("status %+v", st)
	}
}

func mustNode(t *testing.T, c *topology.Cluster, name string) int {
	t.Helper()
	i, ok := c.LookupNode(name)
	if !ok {
		t.Fatalf("no node %q", name)
	}
	return int(i)
}

func TestErrors(t *testing.T) {
	br := blockRack()
	skip := blockRack()
	skip.SkipNodesWithoutGPUs = true
	none := blockRack()
	none.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-B200"}

	tests := []struct {
		name string
		file string
		opts Options
		err  error
		want []string // substrings of the message
	}{
		{"malformed-json", "err-malformed.json", br, topology.ErrSyntax,
			[]string{"err-malformed.json:57: ", "JSON: line 57, column 22 (byte ", "invalid character '{' after object key"}},
		{"truncated-json", "err-truncated.json", br, topology.ErrSyntax, []string{"err-truncated.json:44: ", "unexpected end of input after line 44", "(byte "}},
		{"empty-input", "err-empty.json", br, topology.ErrSyntax, []string{"empty input"}},
		{"json-scalar", "err-scalar.json", br, topology.ErrSyntax, []string{"err-scalar.json:1: ", `found a string "nodes"; want the output of kubectl get nodes -o json or -o yaml`}},
		{"wrong-list-kind", "err-kind.json", br, topology.ErrSyntax, []string{`found an object of kind "PodList" (apiVersion v1); want the output of kubectl get nodes`}},
		{"wrong-item-kind", "err-item-kind.json", br, topology.ErrSyntax, []string{`item 0 (node "p1")`, `kind "Pod", want Node`}},
		{"items-not-array", "err-items-type.json", br, topology.ErrSyntax, []string{"err-items-type.json:3: ", "field items is a number, want a list of Nodes"}},
		{"item-not-object", "err-item-scalar.json", Options{}, topology.ErrSyntax, []string{"err-item-scalar.json:40: ", `item 1 is a string "n2", want a Node object`}},
		{"label-not-string", "err-label-type.json", br, topology.ErrSyntax,
			[]string{`item 0 (node "n1")`, `label "nvidia.com/gpu.count" is a number, want a string`}},
		{"no-name", "err-no-name.json", br, topology.ErrInvalidSpec, []string{"item 0: no metadata.name"}},
		{"missing-level-label", "err-missing-label.json", br, topology.ErrInvalidSpec,
			[]string{`item 1 (node "n2")`, `no label "cloud.provider.com/topology-rack" for level "rack"`}},
		{"empty-level-label", "err-empty-label.json", br, topology.ErrInvalidSpec,
			[]string{`node "n1"`, `label "cloud.provider.com/topology-rack" for level "rack" is empty`}},
		{"duplicate-node", "err-duplicate.json", br, topology.ErrDuplicate, []string{"err-duplicate.json:84: ", `item 2: node "n1" is also item 0`}},
		{"gpu-unit", "err-gpu-unit.json", br, topology.ErrGPUCount,
			[]string{`node "n1"`, `allocatable "nvidia.com/gpu" is "8Gi", want a whole number of GPUs`}},
		{"gpu-fraction", "err-gpu-fraction.json", br, topology.ErrGPUCount, []string{`is "500m", want a whole number`}},
		{"gpu-negative", "err-gpu-negative.json", br, topology.ErrGPUCount, []string{`is "-8", want a whole number`}},
		{"gpu-not-quantity", "err-gpu-bool.json", br, topology.ErrGPUCount, []string{`allocatable "nvidia.com/gpu" is a boolean`}},
		{"gpu-above-64", "err-gpu-range.json", br, topology.ErrGPUCount, []string{`item 1 (node "n2")`, "is 65 GPUs, want 1 to 64"}},
		{"gpu-zero", "err-gpu-zero.json", br, topology.ErrGPUCount,
			[]string{`2 node(s) without "nvidia.com/gpu": cpu-1, cpu-2`, "SkipNodesWithoutGPUs"}},
		{"no-nodes", "err-no-nodes.json", br, topology.ErrInvalidSpec, []string{"err-no-nodes.json: topology: invalid cluster: no nodes"}},
		{"all-skipped", "mixed.json", none, topology.ErrInvalidSpec, []string{"no nodes (6 skipped: cp-1, gpu-1"}},
		{"bad-options", "blockrack.json", Options{Levels: []string{LabelHostname, testRack}}, topology.ErrInvalidSpec,
			[]string{`"kubernetes.io/hostname" must be the last level`}},
		{"skip-still-checks-labels", "err-missing-label.json", skip, topology.ErrInvalidSpec, []string{`node "n2"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Source = tt.file
			spec, st, err := Parse(bytes.NewReader(readFixture(t, tt.file)), tt.opts)
			if err == nil {
				t.Fatalf("no error; spec %+v status %+v", spec, st)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("error %q does not wrap %q", err, tt.err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if spec.Nodes != nil || st.Down != nil || st.Skipped != nil {
				t.Errorf("partial result on error: %+v %+v", spec, st)
			}
			if c, _, err2 := Load(bytes.NewReader(readFixture(t, tt.file)), tt.opts); c != nil || err2 == nil || err2.Error() != err.Error() {
				t.Errorf("Load: %v, %v; want nil, %v", c, err2, err)
			}
		})
	}
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReadError(t *testing.T) {
	_, _, err := Parse(failReader{}, Options{Source: "nodes.json"})
	if err == nil || err.Error() != "nodes.json: disk on fire" {
		t.Errorf("error %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	nine := make([]string, topology.MaxLevels+1)
	for i := range nine {
		nine[i] = "example.com/level-" + string(rune('a'+i))
	}
	tests := []struct {
		name string
		opts Options
		err  error // nil: valid
		want string
	}{
		{"zero-value", Options{}, nil, ""},
		{"presets", PresetGKE(), nil, ""},
		{"hostname-last", Options{Levels: []string{testRack, LabelHostname}}, nil, ""},
		{"max-levels-plus-hostname", Options{Levels: append(slices.Clone(nine[:topology.MaxLevels]), LabelHostname)}, nil, ""},
		{"empty-key", Options{Levels: []string{testBlock, ""}}, topology.ErrInvalidSpec, "kube level 1 has no label key"},
		{"duplicate-key", Options{Levels: []string{testBlock, testBlock}}, topology.ErrDuplicate, `"cloud.provider.com/topology-block" listed twice`},
		{"hostname-not-last", Options{Levels: []string{LabelHostname, testRack}}, topology.ErrInvalidSpec, "must be the last level"},
		{"too-many-levels", Options{Levels: nine}, topology.ErrInvalidSpec, "9 kube levels, at most 8"},
		{"names-length", Options{Levels: []string{testBlock, testRack}, LevelNames: []string{"block"}}, topology.ErrInvalidSpec, "1 kube level names for 2 levels"},
		{"empty-name", Options{Levels: []string{testBlock, testRack}, LevelNames: []string{"block", ""}}, topology.ErrInvalidSpec, "has an empty name"},
		{"duplicate-name", Options{Levels: []string{testBlock, testRack}, LevelNames: []string{"x", "x"}}, topology.ErrDuplicate, `name "x" given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.err == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate: %v; want %v saying %q", err, tt.err, tt.want)
			}
		})
	}
}

func TestLevelNames(t *testing.T) {
	tests := []struct {
		levels []string
		want   []string
	}{
		{[]string{testBlock, testRack, LabelHostname}, []string{"topology-block", "topology-rack"}},
		{[]string{LabelNVLinkClique}, []string{"clique"}},
		{[]string{LabelZone, "rack"}, []string{"zone", "rack"}},
		{[]string{"example.com/"}, []string{"example.com/"}},
		// "rack" twice: every level keeps its full key.
		{[]string{"a.example.com/rack", "b.example.com/rack"}, []string{"a.example.com/rack", "b.example.com/rack"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.levels, ","), func(t *testing.T) {
			lv, err := Options{Levels: tt.levels}.resolve()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(lv.names, tt.want) {
				t.Errorf("names %q, want %q", lv.names, tt.want)
			}
		})
	}
}

// fuzzOptions are the option sets FuzzKubeNodes picks from.
func fuzzOptions() []Options {
	skip := blockRack()
	skip.SkipNodesWithoutGPUs = true
	sel := skip
	sel.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
	flatSkip := Options{SkipNodesWithoutGPUs: true}
	return []Options{
		blockRack(), PresetGKE(), PresetAWS(), PresetNVLinkClique(), PresetZone(),
		{}, flatSkip, skip, sel, {GPUResource: "amd.com/gpu"},
	}
}

// FuzzKubeNodes feeds arbitrary input to Parse and Build under
// one of several option sets: no panic, errors wrap a sentinel, and a
// successful parse builds a cluster with one node per accepted item.
func FuzzParse(f *testing.F) {
	seeds := map[string]uint8{
		"blockrack.json": 0, "gke.json": 1, "aws.json": 2, "clique.json": 3, "zone.json": 4,
		"flat.json": 5, "amd.json": 9, "mixed.json": 7, "single.json": 0,
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	fixtures, err := filepath.Glob(filepath.Join("testdata", "defects", "*.*"))
	if err != nil {
		f.Fatal(err)
	}
	files = append(files, slices.DeleteFunc(fixtures, func(p string) bool { return strings.HasSuffix(p, ".want") })...)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, seeds[filepath.Base(file)])
	}
	f.Add([]byte(`[{"metadata":{"name":"a"},"status":{"allocatable":{"nvidia.com/gpu":8}}}]`), uint8(5))
	f.Add([]byte(`{"items":[{"metadata":{"name":"a","labels":{"cloud.provider.com/topology-block":"b","cloud.provider.com/topology-rack":"r"}},"status":{"allocatable":{"nvidia.com/gpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}}]}`), uint8(0))
	f.Add([]byte("kind: List\nitems:\n- metadata:\n    name: a\n  status:\n    allocatable:\n      nvidia.com/gpu: \"8\"\n"), uint8(5))
	f.Add(readFixture(f, "blockrack.yaml"), uint8(0))
	optsets := fuzzOptions()
	sentinels := []error{topology.ErrSyntax, topology.ErrInvalidSpec, topology.ErrDuplicate, topology.ErrGPUCount}

	f.Fuzz(func(t *testing.T, data []byte, pick uint8) {
		if len(data) > 1<<16 {
			return
		}
		opts := optsets[int(pick)%len(optsets)]
		opts.MaxDefects = 5
		spec, st, err := Parse(bytes.NewReader(data), opts)
		if err != nil {
			var ds *topology.Defects
			if !errors.As(err, &ds) || len(ds.List) == 0 {
				t.Fatalf("error %v is not a non-empty *topology.Defects", err)
			}
			for _, d := range ds.List {
				if !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(d, s) }) {
					t.Fatalf("defect wraps no sentinel: %v", d)
				}
			}
			return
		}
		c, err := topology.Build(spec)
		if err != nil {
			t.Fatalf("Parse succeeded but Build failed: %v", err)
		}
		// Count the input's items independently of the parser (JSON
		// only): every item is either a node or skipped.
		if items := fuzzCountItems(data); items >= 0 && c.NumNodes()+len(st.Skipped) != items {
			t.Fatalf("%d nodes built, %d skipped, %d items", c.NumNodes(), len(st.Skipped), items)
		}
		if c.NumNodes() != len(spec.Nodes) {
			t.Fatalf("%d nodes built, %d in spec", c.NumNodes(), len(spec.Nodes))
		}
		for _, name := range st.Skipped {
			if _, ok := c.LookupNode(name); ok {
				t.Fatalf("skipped node %q is in the cluster", name)
			}
		}
		for _, name := range slices.Concat(st.Down, st.Drained) {
			if _, ok := c.LookupNode(name); !ok {
				t.Fatalf("down or drained node %q is not in the cluster", name)
			}
		}
		for _, name := range st.Down {
			if slices.Contains(st.Drained, name) {
				t.Fatalf("node %q is both down and drained", name)
			}
		}
	})
}

// fuzzCountItems counts the node objects of a JSON input with
// encoding/json, or returns -1 for input that is not JSON.
func fuzzCountItems(data []byte) int {
	var arr []json.RawMessage
	if err := json.Unmarshal(data, &arr); err == nil {
		return len(arr)
	}
	var doc struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return -1
	}
	if doc.Kind == "Node" {
		return 1
	}
	return len(doc.Items)
}

func ExampleParse() {
	// Trimmed output of `kubectl get nodes -o json`.
	const nodes = `{"kind": "List", "items": [
	  {"metadata": {"name": "gpu-1", "labels": {"example.com/block": "b1", "example.com/rack": "r1"}},
	   "status": {"allocatable": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]}},
	  {"metadata": {"name": "gpu-2", "labels": {"example.com/block": "b2", "example.com/rack": "r1"}},
	   "spec": {"unschedulable": true},
	   "status": {"allocatable": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]}},
	  {"metadata": {"name": "cpu-1", "labels": {}},
	   "status": {"allocatable": {"cpu": "32"}, "conditions": [{"type": "Ready", "status": "True"}]}}
	]}`
	opts := Options{
		Levels:               []string{"example.com/block", "example.com/rack", LabelHostname},
		SkipNodesWithoutGPUs: true,
		Source:               "nodes.json",
	}
	spec, status, err := Parse(strings.NewReader(nodes), opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := topology.Build(spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("levels:", c.Levels())
	for d := range c.NumDomains(1) {
		parent := c.DomainParent(1, d)
		fmt.Printf("rack %d: %s/%s\n", d, c.DomainName(0, parent), c.DomainName(1, d))
	}
	fmt.Println("drained:", status.Drained, "skipped:", status.Skipped)
	// Output:
	// levels: [block rack]
	// rack 0: b1/r1
	// rack 1: b2/r1
	// drained: [gpu-2] skipped: [cpu-1]
}
