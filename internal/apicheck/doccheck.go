package apicheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// StaleDocs returns the doc-comment problems of the package in dir (all
// of its non-test files, exported or not), one line each as
// "file:line: problem":
//
//   - the doc comment of an exported declaration does not begin with the
//     declared name (optionally after "A", "An" or "The"): usually a
//     comment left behind by a rename;
//   - a comment mentions Type.Member where Type is a type of the package
//     and Member is neither its field nor its method nor a constant of it:
//     a reference to something renamed or removed;
//   - a comment mentions Name.Member where Name looks like a type (an
//     upper-case identifier followed by an upper-case member) that the
//     package does not declare, imports or embed from elsewhere.
func StaleDocs(dir string) ([]string, error) {
	fset, files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	members := map[string]map[string]bool{} // type -> fields, methods, typed constants
	names := map[string]bool{}              // every package-level name
	addMember := func(typ, m string) {
		if members[typ] == nil {
			members[typ] = map[string]bool{}
		}
		members[typ][m] = true
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
					continue
				}
				addMember(recvType(d.Recv.List[0].Type), d.Name.Name)
			case *ast.GenDecl:
				var lastType string
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
						if members[s.Name.Name] == nil {
							members[s.Name.Name] = map[string]bool{}
						}
						collectFields(s.Type, func(m string) { addMember(s.Name.Name, m) })
					case *ast.ValueSpec:
						if id, ok := s.Type.(*ast.Ident); ok {
							lastType = id.Name
						} else if s.Type != nil || len(s.Values) > 0 && !isIota(s.Values[0]) {
							lastType = ""
						}
						for _, n := range s.Names {
							names[n.Name] = true
							if lastType != "" {
								addMember(lastType, n.Name)
							}
						}
					}
				}
			}
		}
	}
	var out []string
	report := func(pos token.Pos, format string, args ...any) {
		p := fset.Position(pos)
		out = append(out, fmt.Sprintf("%s:%d: %s", filepath.Base(p.Filename), p.Line, fmt.Sprintf(format, args...)))
	}
	checkStart := func(doc *ast.CommentGroup, name string) {
		if doc == nil || !ast.IsExported(name) {
			return
		}
		text := doc.Text()
		for _, art := range []string{"A ", "An ", "The "} {
			text = strings.TrimPrefix(text, art)
		}
		if !strings.HasPrefix(text, name) || len(text) > len(name) && isIdentByte(text[len(name)]) {
			first, _, _ := strings.Cut(doc.Text(), "\n")
			report(doc.Pos(), "doc comment of %s begins %q", name, first)
		}
	}
	for _, f := range files {
		imported := map[string]bool{}
		for _, im := range f.Imports {
			path := strings.Trim(im.Path.Value, `"`)
			imported[path[strings.LastIndex(path, "/")+1:]] = true
			if im.Name != nil {
				imported[im.Name.Name] = true
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				checkStart(d.Doc, d.Name.Name)
			case *ast.GenDecl:
				if len(d.Specs) == 1 && d.Doc != nil {
					switch s := d.Specs[0].(type) {
					case *ast.TypeSpec:
						checkStart(d.Doc, s.Name.Name)
					case *ast.ValueSpec:
						if len(s.Names) == 1 {
							checkStart(d.Doc, s.Names[0].Name)
						}
					}
				}
			}
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				for _, m := range selectorRef.FindAllStringSubmatchIndex(c.Text, -1) {
					typ, member := c.Text[m[2]:m[3]], c.Text[m[4]:m[5]]
					switch {
					case members[typ] != nil:
						if !members[typ][member] && !embedsUnknown(files, typ) {
							report(c.Pos(), "comment mentions %s.%s; %s has no %s", typ, member, typ, member)
						}
					case names[typ] || imported[typ] || knownOutside[typ] || isField(members, typ):
					default:
						report(c.Pos(), "comment mentions %s.%s; the package has no %s", typ, member, typ)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// selectorRef matches Type.Member in comments: two capitalised Go
// identifiers joined by a dot, not inside a longer dotted name.
var selectorRef = regexp.MustCompile(`(?:^|[^\w.])([A-Z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]*)\b`)

// knownOutside are capitalised names comments use with a dot that are not
// Go types of the package: other projects' and standard types.
var knownOutside = map[string]bool{"Slurm": true, "Kubernetes": true, "Kueue": true, "Volcano": true, "KAI": true}

// isField reports whether name is a field or method of some type of the
// package (so that Name.Member may select through it).
func isField(members map[string]map[string]bool, name string) bool {
	for _, m := range members {
		if m[name] {
			return true
		}
	}
	return false
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

func collectFields(e ast.Expr, add func(string)) {
	st, ok := e.(*ast.StructType)
	if !ok {
		return
	}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			add(n.Name)
		}
		if len(f.Names) == 0 { // embedded: its name is a member
			add(recvType(f.Type))
			if sel, ok := f.Type.(*ast.SelectorExpr); ok {
				add(sel.Sel.Name)
			}
		}
	}
}

// embedsUnknown reports whether type typ embeds a type of another package
// (whose members this check cannot see).
func embedsUnknown(files []*ast.File, typ string) bool {
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok || ts.Name.Name != typ {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return false
				}
				for _, fl := range st.Fields.List {
					if _, sel := fl.Type.(*ast.SelectorExpr); len(fl.Names) == 0 && sel {
						return true
					}
				}
			}
		}
	}
	return false
}

func isIota(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == "iota" {
			found = true
		}
		return true
	})
	return found
}

func isIdentByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
