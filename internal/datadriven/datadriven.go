// Package datadriven runs scenario files: scripts of commands, each
// followed by the output it must produce. It is a small harness in the
// style of the scenario tests of etcd-io/raft (our own code, not theirs).
//
// A file is a sequence of cases:
//
//	# comments and blank lines between cases are ignored
//	command arg1 key=value
//	input lines (optional)
//	----
//	expected output lines
//	<blank line>
//
// Run calls the test's function for every case and compares its output
// with the expected text. With the -rewrite flag, the files are rewritten
// with the actual outputs instead (review the diff before committing).
package datadriven

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite scenario files with the actual output")

// Case is one command of a scenario file.
type Case struct {
	// Pos is "file:line" of the command.
	Pos string
	// Cmd is the command word.
	Cmd string
	// Args are the command's arguments in order; Key is the part before
	// '=' (the whole argument when there is none).
	Args []Arg
	// Input is the text between the command line and "----".
	Input string
	// Expected is the text after "----".
	Expected string
}

// Arg is one command argument.
type Arg struct {
	Key, Val string
}

// Has reports whether the case has an argument with key k.
func (c *Case) Has(k string) bool {
	_, ok := c.Get(k)
	return ok
}

// Get returns the value of argument k.
func (c *Case) Get(k string) (string, bool) {
	for _, a := range c.Args {
		if a.Key == k {
			return a.Val, true
		}
	}
	return "", false
}

// Fatalf reports an error in the scenario file itself.
func (c *Case) Fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s: %s: %s", c.Pos, c.Cmd, fmt.Sprintf(format, args...))
}

// Parse reads the cases of a scenario file's text.
func Parse(name, text string) ([]Case, error) {
	lines := strings.Split(text, "\n")
	var cases []Case
	for i := 0; i < len(lines); {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		c := Case{Pos: fmt.Sprintf("%s:%d", filepath.Base(name), i+1)}
		fields := strings.Fields(line)
		c.Cmd = fields[0]
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			c.Args = append(c.Args, Arg{k, v})
		}
		i++
		var input []string
		for ; i < len(lines) && lines[i] != "----"; i++ {
			input = append(input, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s: command %q has no ---- line", c.Pos, c.Cmd)
		}
		i++
		var out []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		c.Input = strings.Join(input, "\n")
		c.Expected = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

// Run runs every case of the file at path through f and compares outputs.
// Trailing blank lines of an output are ignored; an output may not contain
// blank lines (they end a case), so f should not produce them.
func Run(t *testing.T, path string, f func(t *testing.T, c *Case) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := Parse(path, string(data))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range cases {
		c := &cases[i]
		got := strings.TrimRight(f(t, c), "\n")
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s: output contains a blank line:\n%s", c.Pos, got)
		}
		if *rewrite {
			c.Expected = got
		} else if got != c.Expected {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", c.Pos, c.Cmd, got, c.Expected)
		}
	}
	if !*rewrite {
		return
	}
	// Rewrite: keep comments and command lines, replace outputs.
	lines := strings.Split(string(data), "\n")
	k := 0
	for i := 0; i < len(lines); {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			b.WriteString(lines[i])
			b.WriteByte('\n')
			i++
			continue
		}
		for ; lines[i] != "----"; i++ {
			b.WriteString(lines[i])
			b.WriteByte('\n')
		}
		b.WriteString("----\n")
		i++
		for ; i < len(lines) && lines[i] != ""; i++ {
		}
		if cases[k].Expected != "" {
			b.WriteString(cases[k].Expected)
			b.WriteByte('\n')
		}
		k++
	}
	out := strings.TrimRight(b.String(), "\n") + "\n"
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Glob runs every file matching pattern as a subtest named after the file.
func Glob(t *testing.T, pattern string, f func(t *testing.T, c *Case) string) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no scenario files match %s", pattern)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), func(t *testing.T) {
			Run(t, file, f)
		})
	}
}

// Only fails the test when the case has an argument whose key is not
// one of keys (a misspelt option never passes silently).
func (c *Case) Only(t testing.TB, keys ...string) {
	t.Helper()
	for _, a := range c.Args {
		found := false
		for _, k := range keys {
			found = found || a.Key == k
		}
		if !found {
			c.Fatalf(t, "unknown argument %q (want one of %v)", a.Key, keys)
		}
	}
}

// Int returns argument k as an integer (def when absent); a value that is
// not an integer fails the test.
func (c *Case) Int(t testing.TB, k string, def int) int {
	t.Helper()
	v, ok := c.Get(k)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		c.Fatalf(t, "argument %s=%q is not an integer", k, v)
	}
	return n
}

// Duration returns argument k as a Go duration (def when absent); a bad
// value fails the test.
func (c *Case) Duration(t testing.TB, k string, def time.Duration) time.Duration {
	t.Helper()
	v, ok := c.Get(k)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		c.Fatalf(t, "argument %s=%q is not a duration", k, v)
	}
	return d
}

// Float returns argument k as a float (def when absent); a bad value
// fails the test.
func (c *Case) Float(t testing.TB, k string, def float64) float64 {
	t.Helper()
	v, ok := c.Get(k)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		c.Fatalf(t, "argument %s=%q is not a number", k, v)
	}
	return f
}
