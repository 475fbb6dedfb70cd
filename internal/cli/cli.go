// Package cli holds what the repository's commands (examples and
// benchmark tools) share to read their command lines: Parse refuses an
// argument left among the flags, which the flag package would take as
// the end of them.
//
// It does no I/O and is safe for concurrent use on distinct flag sets.
package cli

import (
	"flag"
	"fmt"
)

// Parse parses args into fs and refuses an argument left after the
// flags: flag parsing stops at the first one, so that in
// "tool -per-seed false -seeds 1" every flag after "false" was silently
// dropped (a bool flag takes -flag=false).
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	return NoArgs(fs)
}

// NoArgs reports an error naming the first argument fs left after its
// flags, if any.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: flags must come first (a bool flag takes -flag=false)", fs.Arg(0))
	}
	return nil
}
