package apicheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the module's root, two levels up.
const root = "../.."

// previousRelease names the file recording the API of the last release.
const previousRelease = "../../api/v0.1.0.txt"

func readLines(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// TestAPIChangesInChangelog: every exported name added or removed since
// the previous release (api/<release>.txt) is named in the changelog's
// Unreleased section, in backquotes; a method or field of a new type is
// covered by the type's line.
func TestAPIChangesInChangelog(t *testing.T) {
	now, err := Names(root)
	if err != nil {
		t.Fatal(err)
	}
	before := readLines(t, previousRelease)
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := Unreleased(string(changelog))
	added, removed := Diff(before, now)
	var missing []string
	for _, n := range added {
		if !Mentioned(text, n) || !newType(added, n) && !strings.Contains(text, "`"+n+"`") {
			missing = append(missing, "added "+n)
		}
	}
	for _, n := range removed {
		if !Mentioned(text, n) {
			missing = append(missing, "removed "+n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d API changes have no line in CHANGELOG.md's Unreleased section (name them in backquotes):\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}
	t.Logf("%d names now, %d added and %d removed since the previous release", len(now), len(added), len(removed))
}

// newType reports whether a method or field name belongs to a type that
// is itself new (so the type's changelog line covers it).
func newType(added []string, name string) bool {
	if strings.Count(name, ".") < 2 {
		return false
	}
	_, found := slices.BinarySearch(added, name[:strings.LastIndex(name, ".")])
	return found
}

// TestExportedNamesUsed is acceptance point 1 of issue 12: no exported
// name of a library package is there only for tests. A package-level name
// counts as used when code outside its package that is not a test uses it
// (another package, a benchmark, an example program), when a runnable
// Example uses it, or when its own package's code (not its tests, not
// comments) refers to it besides declaring it, as an exported signature,
// field or returned error does. A method or field counts as used when
// such code selects it (".Name") or sets it in a literal ("Name:").
func TestExportedNamesUsed(t *testing.T) {
	now, err := Names(root)
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := LibraryDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	all := allGo(t)
	others := map[string]string{} // per library package: code that may import it
	own := map[string]string{}    // per library package: its own code, comments stripped
	for _, dir := range dirs {
		var b, o strings.Builder
		for path, text := range all {
			// the benchmarks are importers, in _test.go files or not
			test := strings.HasSuffix(path, "_test.go") && !strings.HasPrefix(path, "benchmarks/")
			example := strings.HasSuffix(path, "example_test.go")
			switch mine := filepath.ToSlash(filepath.Dir(path)) == dir; {
			case mine && !test:
				o.WriteString(stripComments(text))
			case example, !mine && !test:
				b.WriteString(text)
			}
		}
		others[dir], own[dir] = b.String(), o.String()
	}
	var unused []string
	for _, n := range now {
		dir, name, _ := strings.Cut(n, ".")
		typ, member, isMember := strings.Cut(name, ".")
		if isMember {
			if implicit[member] {
				continue // called through an interface: fmt, encoding, errors
			}
			sel := regexp.MustCompile(`\.` + member + `\b|\b` + member + `:`)
			if sel.MatchString(others[dir]) || sel.MatchString(own[dir]) {
				continue
			}
			typ = member // a constant of the type, listed under it
		}
		ref := regexp.MustCompile(`\b` + regexp.QuoteMeta(filepath.Base(dir)+"."+typ) + `\b`)
		if ref.MatchString(others[dir]) {
			continue
		}
		if len(regexp.MustCompile(`\b`+typ+`\b`).FindAllStringIndex(own[dir], 2)) < 2 {
			unused = append(unused, n)
		}
	}
	if len(unused) > 0 {
		t.Errorf("%d exported names are used only by tests (unexport them, or move them to internal/):\n  %s",
			len(unused), strings.Join(unused, "\n  "))
	}
}

// implicit are the methods other packages call through interfaces.
var implicit = map[string]bool{
	"String": true, "Error": true, "Unwrap": true, "Format": true,
	"MarshalText": true, "UnmarshalText": true, "MarshalJSON": true, "UnmarshalJSON": true,
}

// stripComments removes // comments from Go source (a rough cut: enough
// for counting identifiers, since a "//" inside a string only hides the
// rest of that line).
func stripComments(src string) string {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "//"); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}

// allGo returns every .go file of the module (relative slash path to its
// text), outside testdata.
func allGo(t *testing.T) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			out[filepath.ToSlash(rel)] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDocComments is the stale doc-comment check of issue 12: in every
// library package, exported declarations' doc comments begin with the
// declared name, and comments mention only fields, methods and constants
// that exist (see StaleDocs).
func TestDocComments(t *testing.T) {
	dirs, err := LibraryDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			problems, err := StaleDocs(filepath.Join(root, dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("%s/%s", dir, p)
			}
		})
	}
}
