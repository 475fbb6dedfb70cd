// Package slurm loads Slurm topology files into topology clusters:
// topology.conf for the topology/tree and topology/block plugins (with
// Include lines, quoted values and continuation lines, as Slurm reads
// them), topology.yaml (Slurm 25.05 and later, several named topologies),
// and the node list of slurm.conf to check them against.
//
// # Usage
//
//	fsys := os.DirFS("/etc/slurm")
//	nodes, err := slurm.ReadSlurmConfNodes(fsys, "slurm.conf")
//	...
//	opts := slurm.Options{Nodes: nodes.Nodes, NodeGPUs: nodes.GPUs}
//	c, warnings, err := slurm.LoadConf(fsys, "topology.conf", opts)
//	var ds *topology.Defects
//	if errors.As(err, &ds) {
//		for _, d := range ds.List { fmt.Println(d) } // file:line: what, every one
//	}
//	for _, w := range warnings { log.Print(w) }   // loaded, but look at these
//
// LoadDir picks topology.yaml or topology.conf as Slurm does; ParseYAML
// returns every topology of a topology.yaml.
//
// # Caller duties
//
// The package does no I/O of its own: it reads files through the fs.FS it
// is given (os.DirFS for a live system, fstest.MapFS in tests), and Include
// paths resolve inside it: relative ones, at any depth of nesting, against
// the directory of the file the load started from, as Slurm resolves them
// against slurm.conf's directory. Slurm files hold no GPU counts: pass
// them in Options (DefaultGPUs, NodeGPUs), for example from
// ReadSlurmConfNodes.
// Pass slurm.conf's nodes in Options.Nodes to have node names checked;
// without it a typo in a hostlist makes a cluster with invented nodes.
// A load reports every defect it finds (up to Options.MaxDefects) in one
// *topology.Defects error and never returns a partial cluster; warnings
// are returned beside a successful result and deserve a look: each says
// what the cluster lacks compared with the file.
//
// # Concurrency
//
// Every function is safe for concurrent use if the fs.FS is. Results are
// not shared between calls.
package slurm
