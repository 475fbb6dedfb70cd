// Package kube loads Kubernetes node lists into topology clusters, the way
// Kueue's topology-aware scheduling sees a cluster: an ordered list of
// node label keys, top to bottom, where a domain is identified by the path
// of label values from the top. It reads the output of
// `kubectl get nodes -o json` and `-o yaml` (or a single Node), with
// encoding/json and the YAML subset of internal/yaml; the module does not
// depend on Kubernetes.
//
// # Usage
//
//	opts := kube.PresetGKE()             // or Options{Levels: []string{...}}
//	opts.Source = "nodes.yaml"
//	c, status, err := kube.Load(f, opts) // f: kubectl get nodes -o yaml
//	var ds *topology.Defects
//	if errors.As(err, &ds) {
//		for _, d := range ds.List { fmt.Println(d) } // nodes.yaml:57: item 3 (node "gpu-4"): ...
//	}
//	s := topology.NewState(c)
//	for _, n := range status.Down { i, _ := c.LookupNode(n); s.SetStatus(i, topology.Down) }
//	for _, n := range status.Drained { i, _ := c.LookupNode(n); s.SetStatus(i, topology.Drained) }
//	for _, w := range status.Warnings { log.Print(w) }
//
// # Caller duties
//
// The package does no I/O beyond reading the io.Reader it is given. Apply
// Status.Down and Status.Drained to the free state: the cluster itself has
// every node up. A host that drives a backfill engine does not touch a
// State: it calls the engine's NodeDown and Drain methods for those nodes
// before the first cycle (the engine owns its free state). Choose Levels to match the cluster's labels (presets:
// PresetGKE, PresetAWS, PresetAWSFourLayers, PresetNVLinkClique,
// PresetZone); nodes without GPUs are a defect unless
// SkipNodesWithoutGPUs or NodeSelector leaves them out. A load reports every defect (up to Options.MaxDefects) in one
// *topology.Defects error and never returns a partial cluster; warnings
// (no node has a Ready condition, every node is down) come in
// Status.Warnings.
//
// # Concurrency
//
// Every function is safe for concurrent use; results are not shared.
package kube
