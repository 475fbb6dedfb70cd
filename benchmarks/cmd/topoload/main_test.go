package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestConfig: -nodes gives a valid fat tree or an error naming it, never a
// panic (a negative count divided by zero spines, or made a slice of
// negative capacity).
func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		name   string
		nodes  int
		spines int
		err    string
	}{
		{"one leaf", 25, 1, ""},
		{"a thousand leaves", 25_000, 1, ""},
		{"two spines", 50_000, 2, ""},
		{"zero", 0, 0, "-nodes 0 is not a positive multiple of 25"},
		{"not a multiple", 30, 0, "-nodes 30 is not a positive multiple of 25"},
		{"minus one leaf", -25, 0, "-nodes -25 is not a positive multiple of 25"},
		{"minus a thousand leaves", -25_000, 0, "-nodes -25000 is not a positive multiple of 25"},
		{"minus two thousand leaves", -50_000, 0, "-nodes -50000 is not a positive multiple of 25"},
		{"unequal spines", 25 * 1001, 0, "does not split into equal spines"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config(tt.nodes)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("config(%d) = %+v, %v; want an error with %q", tt.nodes, f, err, tt.err)
				}
				return
			}
			if err != nil || f.Spines != tt.spines || f.Spines*f.LeavesPerSpine*f.NodesPerLeaf != tt.nodes || f.Validate() != nil {
				t.Fatalf("config(%d) = %+v, %v; want %d spines", tt.nodes, f, err, tt.spines)
			}
		})
	}
}

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
