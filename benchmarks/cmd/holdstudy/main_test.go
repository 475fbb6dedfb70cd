package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestParseArgs: an argument among the flags is an error naming it, not
// the end of the flags (a bool flag given "false" as a separate word
// dropped every flag after it).
func TestParseArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		n    int
		err  string
	}{
		{"flags only", []string{"-b", "-n", "3"}, 3, ""},
		{"bool with =", []string{"-b=false", "-n", "3"}, 3, ""},
		{"bool then a word", []string{"-b", "false", "-n", "3"}, 0, `unexpected argument "false"`},
		{"trailing argument", []string{"-n", "3", "extra"}, 3, `unexpected argument "extra"`},
		{"bad flag", []string{"-nope"}, 0, "flag provided but not defined: -nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fs.Bool("b", false, "")
			n := fs.Int("n", 0, "")
			err := parseArgs(fs, tt.args)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("parseArgs = %v, want %q", err, tt.err)
			}
			if *n != tt.n {
				t.Fatalf("-n %d, want %d", *n, tt.n)
			}
		})
	}
}

// TestStreamSeeds: -seeds below 1 is an error naming it, not an empty
// table.
func TestStreamSeeds(t *testing.T) {
	for _, seeds := range []int{0, -3} {
		t.Run(fmt.Sprint(seeds), func(t *testing.T) {
			var b strings.Builder
			err := stream(&b, seeds)
			if want := fmt.Sprintf("-seeds %d: want at least 1", seeds); err == nil || err.Error() != want {
				t.Fatalf("stream = %v, want %q; output %q", err, want, b.String())
			}
		})
	}
}
