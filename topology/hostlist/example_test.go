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

// Count sizes a hostlist without building it, so a caller can refuse one
// that is too large (Expand refuses more than MaxNames).
func ExampleCount() {
	n, err := hostlist.Count("gpu[0000-9999],login[1-2]")
	fmt.Println(n, err)
	_, err = hostlist.Count("gpu[9-1]")
	fmt.Println(err)
	// Output:
	// 10002 <nil>
	// hostlist: syntax error: "gpu[9-1]" at offset 4: descending range "9-1"
}
