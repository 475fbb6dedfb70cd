package hostlist_test

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/topology/hostlist"
)

func ExampleExpand() {
	names, err := hostlist.Expand("gpu[01-03],rack[0-1]_n[1-2]")
	fmt.Println(names, err)
	fmt.Println(hostlist.Compress(names))
	// Output:
	// [gpu01 gpu02 gpu03 rack0_n1 rack0_n2 rack1_n1 rack1_n2] <nil>
	// gpu[01-03],rack0_n[1-2],rack1_n[1-2]
}
