// Command apilist prints the exported API of the library packages of the
// module checked out at a directory, one name per line: what
// api/<release>.txt records for each release.
//
//	go run ./internal/apicheck/cmd/apilist [DIR] > api/v0.2.0.txt
package main

import (
	"fmt"
	"os"

	"github.com/phalanx-sched/phalanx/internal/apicheck"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	names, err := apicheck.Names(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apilist:", err)
		os.Exit(1)
	}
	for _, n := range names {
		fmt.Println(n)
	}
}
