package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestParse: an argument among the flags is an error naming it, not the
// end of the flags (a bool flag given "false" as a separate word dropped
// every flag after it).
func TestParse(t *testing.T) {
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
			err := Parse(fs, tt.args)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Parse = %v, want %q", err, tt.err)
			}
			if *n != tt.n {
				t.Fatalf("-n %d, want %d", *n, tt.n)
			}
		})
	}
}
