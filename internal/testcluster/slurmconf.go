package testcluster

import (
	"fmt"
	"strings"

	"github.com/phalanx-sched/phalanx/topology"
)

// FatTreeConf writes the fat tree f as a Slurm topology.conf with the
// names topology.FatTree uses (core, spine000..., leaf0000...,
// node00000...), so that loading it gives the same cluster: one line per
// leaf with its nodes as a range, one per spine with its leaves as a
// range, one for the core. A million-node tree is about 2 MB of text.
func FatTreeConf(f topology.FatTreeConfig) string {
	var b strings.Builder
	b.Grow(48 * f.Spines * (f.LeavesPerSpine + 1))
	fmt.Fprintf(&b, "SwitchName=core Switches=spine[000-%03d]\n", f.Spines-1)
	node := 0
	for sp := range f.Spines {
		first := sp * f.LeavesPerSpine
		fmt.Fprintf(&b, "SwitchName=spine%03d Switches=leaf[%04d-%04d]\n", sp, first, first+f.LeavesPerSpine-1)
		for lf := first; lf < first+f.LeavesPerSpine; lf++ {
			fmt.Fprintf(&b, "SwitchName=leaf%04d Nodes=node[%05d-%05d]\n", lf, node, node+f.NodesPerLeaf-1)
			node += f.NodesPerLeaf
		}
	}
	return b.String()
}
