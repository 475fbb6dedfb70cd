package topology

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
)

// Label keys of the Kueue-like fixtures (testdata/kube/blockrack.json and
// others): block, then rack, then the node.
const (
	kubeTestBlock = "cloud.provider.com/topology-block"
	kubeTestRack  = "cloud.provider.com/topology-rack"
)

func kubeBlockRack() KubeOptions {
	return KubeOptions{Levels: []string{kubeTestBlock, kubeTestRack, KubeLabelHostname}, LevelNames: []string{"block", "rack", ""}}
}

func readKubeFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "kube", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// domainPaths lists every domain of level l as its path from the top,
// joined with '/', in domain order.
func domainPaths(c *Cluster, l int) []string {
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

func TestKubePresets(t *testing.T) {
	sel := kubeBlockRack()
	sel.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
	skip := kubeBlockRack()
	skip.SkipNodesWithoutGPUs = true
	amd := KubeOptions{GPUResource: "amd.com/gpu"}

	tests := []struct {
		name    string
		file    string
		opts    KubeOptions
		levels  []string
		nodes   []string // in topology order
		gpus    int
		domains [][]string // domain paths per level
		down    []string
		drained []string
		skipped []string
	}{
		{
			name: "gke", file: "gke.json", opts: KubePresetGKE(),
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
			name: "aws", file: "aws.json", opts: KubePresetAWS(),
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
			name: "nvlink-clique", file: "clique.json", opts: KubePresetNVLinkClique(),
			levels: []string{"clique"},
			nodes:  []string{"gb200-r1-t1", "gb200-r1-t2", "gb200-r1-t3", "gb200-r2-t1", "gb200-r2-t2"},
			gpus:   20,
			domains: [][]string{
				{"6f2a1c3e-6d1e-4c64-9a77-0d2c0f6b9c11.1", "6f2a1c3e-6d1e-4c64-9a77-0d2c0f6b9c11.2"},
			},
		},
		{
			name: "zone", file: "zone.json", opts: KubePresetZone(),
			levels:  []string{"zone"},
			nodes:   []string{"gpu-a1", "gpu-a2", "gpu-b1"},
			gpus:    20,
			domains: [][]string{{"europe-west4-a", "europe-west4-b"}},
		},
		{
			name: "flat-bare-array", file: "flat.json", opts: KubeOptions{},
			levels:  []string{},
			nodes:   []string{"gpu-1", "gpu-2", "gpu-3"},
			gpus:    18,
			drained: []string{"gpu-3"},
		},
		{
			name: "hostname-only-is-flat", file: "flat.json", opts: KubeOptions{Levels: []string{KubeLabelHostname}},
			levels:  []string{},
			nodes:   []string{"gpu-1", "gpu-2", "gpu-3"},
			gpus:    18,
			drained: []string{"gpu-3"},
		},
		{
			name: "derived-level-names", file: "blockrack.json",
			opts:   KubeOptions{Levels: []string{kubeTestBlock, kubeTestRack, KubeLabelHostname}},
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
			name: "single-node-object", file: "single.json", opts: kubeBlockRack(),
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
			spec, st, err := ParseKubeNodes(bytes.NewReader(readKubeFixture(t, tt.file)), tt.opts)
			if err != nil {
				t.Fatalf("ParseKubeNodes: %v", err)
			}
			if !spec.LocalDomainNames {
				t.Errorf("LocalDomainNames is false")
			}
			c, err := Build(spec)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if got := c.Levels(); !slices.Equal(got, tt.levels) {
				t.Errorf("levels %q, want %q", got, tt.levels)
			}
			if got := c.NodeNames(0, c.NumNodes()); !slices.Equal(got, tt.nodes) {
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

			// LoadKubeNodes builds the same cluster.
			c2, err := LoadKubeNodes(bytes.NewReader(readKubeFixture(t, tt.file)), tt.opts)
			if err != nil {
				t.Fatalf("LoadKubeNodes: %v", err)
			}
			if c2.NumNodes() != c.NumNodes() || !slices.Equal(c2.NodeNames(0, c2.NumNodes()), tt.nodes) {
				t.Errorf("LoadKubeNodes built %q", c2.NodeNames(0, c2.NumNodes()))
			}
		})
	}
}

// TestKubeBlockRack reads a two-level cluster labelled as in Kueue's
// topology-aware scheduling tests (b1/r1 1 node, b1/r2 3 nodes, b2/r1 1
// node, b2/r2 2 nodes, listed interleaved) and checks its domains: rack r1
// of b1 and rack r1 of b2 are different domains.
func TestKubeBlockRack(t *testing.T) {
	opts := kubeBlockRack()
	opts.Source = "blockrack.json"
	spec, st, err := ParseKubeNodes(bytes.NewReader(readKubeFixture(t, "blockrack.json")), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Nodes[3].Source; got != "blockrack.json: item 3" {
		t.Errorf("node %q source %q", spec.Nodes[3].Name, got)
	}
	c, err := Build(spec)
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
	r1a, r1b := c.NodeDomain(mustNode(t, c, "n1"), 1), c.NodeDomain(mustNode(t, c, "n5"), 1)
	if r1a == r1b || c.DomainName(1, r1a) != "r1" || c.DomainName(1, r1b) != "r1" {
		t.Errorf("n1 and n5 racks: %d %q and %d %q, want two domains named r1", r1a, c.DomainName(1, r1a), r1b, c.DomainName(1, r1b))
	}
	// n6 is NotReady, n7 Unknown and cordoned (Down wins), n3 cordoned.
	if !slices.Equal(st.Down, []string{"n6", "n7"}) || !slices.Equal(st.Drained, []string{"n3"}) || st.Skipped != nil {
		t.Errorf("status %+v", st)
	}
}

func mustNode(t *testing.T, c *Cluster, name string) int {
	t.Helper()
	i, ok := c.NodeIndex(name)
	if !ok {
		t.Fatalf("no node %q", name)
	}
	return i
}

func TestKubeErrors(t *testing.T) {
	br := kubeBlockRack()
	skip := kubeBlockRack()
	skip.SkipNodesWithoutGPUs = true
	none := kubeBlockRack()
	none.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-B200"}

	tests := []struct {
		name string
		file string
		opts KubeOptions
		err  error
		want []string // substrings of the message
	}{
		{"malformed-json", "err-malformed.json", br, ErrSyntax,
			[]string{"err-malformed.json: line 57, column 22 (byte ", "invalid character '{' after object key"}},
		{"truncated-json", "err-truncated.json", br, ErrSyntax, []string{"unexpected end of JSON input", "(byte "}},
		{"empty-input", "err-empty.json", br, ErrSyntax, []string{"empty input"}},
		{"json-scalar", "err-scalar.json", br, ErrSyntax, []string{"want a JSON object or array"}},
		{"wrong-list-kind", "err-kind.json", br, ErrSyntax, []string{`kind "PodList", want List, NodeList or Node`}},
		{"wrong-item-kind", "err-item-kind.json", br, ErrSyntax, []string{`item 0 (node "p1")`, `kind "Pod", want Node`}},
		{"items-not-array", "err-items-type.json", br, ErrSyntax, []string{"line 3, column 14", "field items is JSON number, want an array"}},
		{"item-not-object", "err-item-scalar.json", KubeOptions{}, ErrSyntax, []string{"item 1:", "JSON string, want a Node object"}},
		{"label-not-string", "err-label-type.json", br, ErrSyntax,
			[]string{`item 0 (node "n1")`, `label "nvidia.com/gpu.count" is JSON number, want a string`}},
		{"no-name", "err-no-name.json", br, ErrInvalidSpec, []string{"item 0: no metadata.name"}},
		{"missing-level-label", "err-missing-label.json", br, ErrInvalidSpec,
			[]string{`item 1 (node "n2")`, `no label "cloud.provider.com/topology-rack" for level "rack"`}},
		{"empty-level-label", "err-empty-label.json", br, ErrInvalidSpec,
			[]string{`node "n1"`, `label "cloud.provider.com/topology-rack" for level "rack" is empty`}},
		{"duplicate-node", "err-duplicate.json", br, ErrDuplicate, []string{`node "n1" is item 0 and item 2`}},
		{"gpu-unit", "err-gpu-unit.json", br, ErrGPUCount,
			[]string{`node "n1"`, `allocatable "nvidia.com/gpu" is "8Gi", want a whole number of GPUs`}},
		{"gpu-fraction", "err-gpu-fraction.json", br, ErrGPUCount, []string{`is "500m", want a whole number`}},
		{"gpu-negative", "err-gpu-negative.json", br, ErrGPUCount, []string{`is "-8", want a whole number`}},
		{"gpu-not-quantity", "err-gpu-bool.json", br, ErrGPUCount, []string{`allocatable "nvidia.com/gpu" is JSON boolean`}},
		{"gpu-above-64", "err-gpu-range.json", br, ErrGPUCount, []string{`item 1 (node "n2")`, "is 65 GPUs, want 1 to 64"}},
		{"gpu-zero", "err-gpu-zero.json", br, ErrGPUCount,
			[]string{`2 node(s) without "nvidia.com/gpu": cpu-1, cpu-2`, "SkipNodesWithoutGPUs"}},
		{"no-nodes", "err-no-nodes.json", br, ErrInvalidSpec, []string{"err-no-nodes.json: no nodes"}},
		{"all-skipped", "mixed.json", none, ErrInvalidSpec, []string{"no nodes (6 skipped: cp-1, gpu-1"}},
		{"bad-options", "blockrack.json", KubeOptions{Levels: []string{KubeLabelHostname, kubeTestRack}}, ErrInvalidSpec,
			[]string{`"kubernetes.io/hostname" must be the last level`}},
		{"skip-still-checks-labels", "err-missing-label.json", skip, ErrInvalidSpec, []string{`node "n2"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Source = tt.file
			spec, st, err := ParseKubeNodes(bytes.NewReader(readKubeFixture(t, tt.file)), tt.opts)
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
			if c, err2 := LoadKubeNodes(bytes.NewReader(readKubeFixture(t, tt.file)), tt.opts); c != nil || err2 == nil || err2.Error() != err.Error() {
				t.Errorf("LoadKubeNodes: %v, %v; want nil, %v", c, err2, err)
			}
		})
	}
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestKubeReadError(t *testing.T) {
	_, _, err := ParseKubeNodes(failReader{}, KubeOptions{Source: "nodes.json"})
	if err == nil || err.Error() != "nodes.json: disk on fire" {
		t.Errorf("error %v", err)
	}
}

func TestKubeOptionsValidate(t *testing.T) {
	nine := make([]string, MaxLevels+1)
	for i := range nine {
		nine[i] = "example.com/level-" + string(rune('a'+i))
	}
	tests := []struct {
		name string
		opts KubeOptions
		err  error // nil: valid
		want string
	}{
		{"zero-value", KubeOptions{}, nil, ""},
		{"presets", KubePresetGKE(), nil, ""},
		{"hostname-last", KubeOptions{Levels: []string{kubeTestRack, KubeLabelHostname}}, nil, ""},
		{"max-levels-plus-hostname", KubeOptions{Levels: append(slices.Clone(nine[:MaxLevels]), KubeLabelHostname)}, nil, ""},
		{"empty-key", KubeOptions{Levels: []string{kubeTestBlock, ""}}, ErrInvalidSpec, "kube level 1 has no label key"},
		{"duplicate-key", KubeOptions{Levels: []string{kubeTestBlock, kubeTestBlock}}, ErrDuplicate, `"cloud.provider.com/topology-block" listed twice`},
		{"hostname-not-last", KubeOptions{Levels: []string{KubeLabelHostname, kubeTestRack}}, ErrInvalidSpec, "must be the last level"},
		{"too-many-levels", KubeOptions{Levels: nine}, ErrInvalidSpec, "9 kube levels, at most 8"},
		{"names-length", KubeOptions{Levels: []string{kubeTestBlock, kubeTestRack}, LevelNames: []string{"block"}}, ErrInvalidSpec, "1 kube level names for 2 levels"},
		{"empty-name", KubeOptions{Levels: []string{kubeTestBlock, kubeTestRack}, LevelNames: []string{"block", ""}}, ErrInvalidSpec, "has an empty name"},
		{"duplicate-name", KubeOptions{Levels: []string{kubeTestBlock, kubeTestRack}, LevelNames: []string{"x", "x"}}, ErrDuplicate, `name "x" given twice`},
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

func TestKubeLevelNames(t *testing.T) {
	tests := []struct {
		levels []string
		want   []string
	}{
		{[]string{kubeTestBlock, kubeTestRack, KubeLabelHostname}, []string{"topology-block", "topology-rack"}},
		{[]string{KubeLabelNVLinkClique}, []string{"clique"}},
		{[]string{KubeLabelZone, "rack"}, []string{"zone", "rack"}},
		{[]string{"example.com/"}, []string{"example.com/"}},
		// "rack" twice: every level keeps its full key.
		{[]string{"a.example.com/rack", "b.example.com/rack"}, []string{"a.example.com/rack", "b.example.com/rack"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.levels, ","), func(t *testing.T) {
			lv, err := KubeOptions{Levels: tt.levels}.resolve()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(lv.names, tt.want) {
				t.Errorf("names %q, want %q", lv.names, tt.want)
			}
		})
	}
}

// kubeFuzzOptions are the option sets FuzzKubeNodes picks from.
func kubeFuzzOptions() []KubeOptions {
	skip := kubeBlockRack()
	skip.SkipNodesWithoutGPUs = true
	sel := skip
	sel.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
	flatSkip := KubeOptions{SkipNodesWithoutGPUs: true}
	return []KubeOptions{
		kubeBlockRack(), KubePresetGKE(), KubePresetAWS(), KubePresetNVLinkClique(), KubePresetZone(),
		{}, flatSkip, skip, sel, {GPUResource: "amd.com/gpu"},
	}
}

// FuzzKubeNodes feeds arbitrary input to ParseKubeNodes and Build under
// one of several option sets: no panic, errors wrap a sentinel, and a
// successful parse builds a cluster with one node per accepted item.
func FuzzKubeNodes(f *testing.F) {
	seeds := map[string]uint8{
		"blockrack.json": 0, "gke.json": 1, "aws.json": 2, "clique.json": 3, "zone.json": 4,
		"flat.json": 5, "amd.json": 9, "mixed.json": 7, "single.json": 0,
	}
	files, err := filepath.Glob(filepath.Join("testdata", "kube", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, seeds[filepath.Base(file)])
	}
	f.Add([]byte(`[{"metadata":{"name":"a"},"status":{"allocatable":{"nvidia.com/gpu":8}}}]`), uint8(5))
	f.Add([]byte(`{"items":[{"metadata":{"name":"a","labels":{"cloud.provider.com/topology-block":"b","cloud.provider.com/topology-rack":"r"}},"status":{"allocatable":{"nvidia.com/gpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}}]}`), uint8(0))
	optsets := kubeFuzzOptions()
	sentinels := []error{ErrSyntax, ErrInvalidSpec, ErrDuplicate, ErrGPUCount}

	f.Fuzz(func(t *testing.T, data []byte, pick uint8) {
		if len(data) > 1<<16 {
			return
		}
		opts := optsets[int(pick)%len(optsets)]
		spec, st, err := ParseKubeNodes(bytes.NewReader(data), opts)
		if err != nil {
			if !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		c, err := Build(spec)
		if err != nil {
			t.Fatalf("ParseKubeNodes succeeded but Build failed: %v", err)
		}
		// Count the input's items independently of the parser's
		// bookkeeping: every item is either a node or skipped.
		items := kubeFuzzCountItems(t, data)
		if c.NumNodes() != len(spec.Nodes) || c.NumNodes()+len(st.Skipped) != items {
			t.Fatalf("%d nodes built, %d in spec, %d skipped, %d items", c.NumNodes(), len(spec.Nodes), len(st.Skipped), items)
		}
		for _, name := range st.Skipped {
			if _, ok := c.NodeIndex(name); ok {
				t.Fatalf("skipped node %q is in the cluster", name)
			}
		}
		for _, name := range slices.Concat(st.Down, st.Drained) {
			if _, ok := c.NodeIndex(name); !ok {
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

func kubeFuzzCountItems(t *testing.T, data []byte) int {
	var arr []json.RawMessage
	if err := json.Unmarshal(data, &arr); err == nil {
		return len(arr)
	}
	var doc struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("parser accepted input that is neither an array nor a list: %v", err)
	}
	if doc.Kind == "Node" {
		return 1
	}
	return len(doc.Items)
}

func ExampleParseKubeNodes() {
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
	opts := KubeOptions{
		Levels:               []string{"example.com/block", "example.com/rack", KubeLabelHostname},
		SkipNodesWithoutGPUs: true,
		Source:               "nodes.json",
	}
	spec, status, err := ParseKubeNodes(strings.NewReader(nodes), opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := Build(spec)
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
