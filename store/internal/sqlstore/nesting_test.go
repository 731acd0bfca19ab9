package sqlstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoNestedStatements holds the package to the rule of rows.go: a
// store method holds one of the pool's resources at a time. It reads the
// package's source and fails on
//   - a Query outside each (rows read any other way may stay open while
//     something else runs);
//   - inside a function given to each, collect or InTx: a use of the
//     pool (the receiver's db field), or a call of a Store method that
//     uses it, directly or through other methods.
//
// The storetest suite's run with a pool of one connection catches what
// the suite exercises; this catches it where no test goes.
func TestNoNestedStatements(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, af)
	}
	if len(parsed) < 5 {
		t.Fatalf("read %d files: not the package's source", len(parsed))
	}

	// The Store's methods, and which of them use the pool.
	methods := map[string]*ast.FuncDecl{}
	for _, f := range parsed {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && storeRecv(fd) != "" {
				methods[fd.Name.Name] = fd
			}
		}
	}
	usesPool := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for name, fd := range methods {
			if usesPool[name] {
				continue
			}
			recv := storeRecv(fd)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && isIdent(sel.X, recv) && (sel.Sel.Name == "db" || usesPool[sel.Sel.Name]) {
					usesPool[name], changed = true, true
				}
				return true
			})
		}
	}
	if !usesPool["ListServers"] || !usesPool["BaselineVersion"] {
		t.Fatalf("the analysis found no pool use in ListServers or BaselineVersion: it is broken (%v)", usesPool)
	}

	checked := 0
	for _, f := range parsed {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			recv := storeRecv(fd)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				name := callName(call)
				if name == "Query" && fd.Name.Name != "each" {
					t.Errorf("%s: %s runs Query outside each: read rows with each or collect (rows.go)", fset.Position(call.Pos()), fd.Name.Name)
				}
				if name != "InTx" && name != "each" && name != "collect" {
					return true
				}
				for _, arg := range call.Args {
					lit, ok := arg.(*ast.FuncLit)
					if !ok {
						continue
					}
					checked++
					ast.Inspect(lit.Body, func(n ast.Node) bool {
						sel, ok := n.(*ast.SelectorExpr)
						if !ok || recv == "" || !isIdent(sel.X, recv) {
							return true
						}
						if sel.Sel.Name == "db" || usesPool[sel.Sel.Name] {
							t.Errorf("%s: inside the function given to %s, %s.%s uses the pool while a statement holds a connection (rows.go)",
								fset.Position(sel.Pos()), name, recv, sel.Sel.Name)
						}
						return true
					})
				}
				return true
			})
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d functions given to each, collect or InTx: the analysis found too few", checked)
	}
}

// storeRecv returns the receiver's name of a method of *Store, or "".
func storeRecv(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) != 1 || len(fd.Recv.List[0].Names) != 1 {
		return ""
	}
	if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok && isIdent(star.X, "Store") {
		return fd.Recv.List[0].Names[0].Name
	}
	return ""
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// callName is the called function's or method's name.
func callName(call *ast.CallExpr) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	case *ast.IndexExpr: // collect[T](...)
		if id, ok := f.X.(*ast.Ident); ok {
			return id.Name
		}
	}
	return ""
}
