// Package apicheck lists the exported API of the module's library
// packages (everything outside internal/, examples/ and benchmarks/), so
// that tests can hold it against the API of the previous release, the
// changelog and the module's own use of it. It is a test helper: it reads
// source files and is not for importers.
package apicheck

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Module is the module path of the library.
const Module = "github.com/phalanx-sched/phalanx"

// LibraryDirs returns the library package directories under root, as
// slash paths relative to it ("backfill", "topology/slurm"), sorted.
func LibraryDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "internal" ||
				rel == "examples" || rel == "benchmarks" || rel == "docs" || rel == "api") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dir := filepath.ToSlash(filepath.Dir(rel))
			if dir != "." && !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	slices.Sort(dirs)
	return dirs, err
}

// Names returns the exported API of the library packages under root, one
// line per name, sorted: "pkg.Name" for package-level names, "pkg.Type.M"
// for methods, exported struct fields and the constants and variables of
// the type, where pkg is the directory relative to root.
func Names(root string) ([]string, error) {
	dirs, err := LibraryDirs(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, dir := range dirs {
		p, err := load(filepath.Join(root, dir))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		out = append(out, names(dir, p)...)
	}
	slices.Sort(out)
	return out, nil
}

// parseDir parses the non-test files of one package directory, with
// their comments.
func parseDir(dir string) (*token.FileSet, []*ast.File, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	return fset, files, nil
}

// load parses the non-test files of one package directory.
func load(dir string) (*doc.Package, error) {
	fset, files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	return doc.NewFromFiles(fset, files, Module+"/"+filepath.ToSlash(dir))
}

func names(dir string, p *doc.Package) []string {
	var out []string
	add := func(parts ...string) { out = append(out, dir+"."+strings.Join(parts, ".")) }
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if ast.IsExported(n) {
					add(n)
				}
			}
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		add(f.Name)
	}
	for _, t := range p.Types {
		add(t.Name)
		// Constants and variables of the type are listed under it (a
		// changelog line for the type covers them).
		for _, vs := range [][]*doc.Value{t.Consts, t.Vars} {
			for _, v := range vs {
				for _, n := range v.Names {
					if ast.IsExported(n) {
						add(t.Name, n)
					}
				}
			}
		}
		for _, f := range t.Funcs {
			add(f.Name)
		}
		for _, m := range t.Methods {
			add(t.Name, m.Name)
		}
		for _, f := range fields(t) {
			add(t.Name, f)
		}
	}
	return out
}

// fields returns the exported field names of a struct type.
func fields(t *doc.Type) []string {
	var out []string
	for _, spec := range t.Decl.Specs {
		ts, ok := spec.(*ast.TypeSpec)
		if !ok {
			continue
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, f := range st.Fields.List {
			for _, n := range f.Names {
				if n.IsExported() {
					out = append(out, n.Name)
				}
			}
		}
	}
	return out
}

// Diff returns the names in now that are not in before (added) and those
// in before that are not in now (removed); both lists are sorted.
func Diff(before, now []string) (added, removed []string) {
	for _, n := range now {
		if _, found := slices.BinarySearch(before, n); !found {
			added = append(added, n)
		}
	}
	for _, n := range before {
		if _, found := slices.BinarySearch(now, n); !found {
			removed = append(removed, n)
		}
	}
	return added, removed
}

// Unreleased returns the text of the changelog's "## Unreleased" section.
func Unreleased(changelog string) string {
	_, rest, ok := strings.Cut(changelog, "\n## Unreleased")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// Mentioned reports whether the changelog text mentions name as
// `name` (in backquotes), or mentions its type (`pkg.Type`) for a method
// or field.
func Mentioned(text, name string) bool {
	if strings.Contains(text, "`"+name+"`") {
		return true
	}
	if i := strings.LastIndex(name, "."); strings.Count(name, ".") >= 2 {
		return strings.Contains(text, "`"+name[:i]+"`")
	}
	return false
}
