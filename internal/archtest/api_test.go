package archtest

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateAPI = flag.Bool("update-api", false, "rewrite testdata/api.golden from the source")

// TestPublicAPI compares the core module's public API with
// testdata/api.golden: every exported name outside internal/, cmd/,
// bench/ and examples/ (types, functions, methods of exported types,
// constants, variables), one a line with its package and its signature, so
// that what a change adds to or removes from the API shows in review as a
// change of that file. Run `go test ./internal/archtest -run TestPublicAPI
// -update-api` to record a deliberate change. It prints the count.
func TestPublicAPI(t *testing.T) {
	root, modPath := moduleRoot(t)
	lines, err := publicAPI(root, modPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d exported names in the core module's public packages", len(lines))
	got := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join(root, "internal", "archtest", "testdata", "api.golden")
	if *updateAPI {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (record it with -update-api)", err)
	}
	if string(want) == got {
		return
	}
	wl := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	var added, removed []string
	for _, l := range lines {
		if !slices.Contains(wl, l) {
			added = append(added, "+ "+l)
		}
	}
	for _, l := range wl {
		if !slices.Contains(lines, l) {
			removed = append(removed, "- "+l)
		}
	}
	t.Errorf("the public API changed (%d names now, %d recorded); if it is meant, record it with\n"+
		"  go test ./internal/archtest -run TestPublicAPI -update-api\nand say why in the commit:\n%s",
		len(lines), len(wl), strings.Join(append(added, removed...), "\n"))
}

// publicAPI lists the exported names of the module's public packages,
// sorted: "pkg: decl".
func publicAPI(root, modPath string) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			n := d.Name()
			if p != root && (n == "internal" || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") ||
				rel == "cmd" || rel == "bench" || rel == "examples") {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module (the adapters)
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		for _, decl := range f.Decls {
			for _, s := range declLines(fset, decl) {
				out = append(out, pkg+": "+s)
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// declLines are the exported names one declaration adds to the API.
func declLines(fset *token.FileSet, decl ast.Decl) []string {
	var out []string
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil
		}
		recv := ""
		if d.Recv != nil && len(d.Recv.List) > 0 {
			t := d.Recv.List[0].Type
			base := t
			if s, ok := base.(*ast.StarExpr); ok {
				base = s.X
			}
			if ix, ok := base.(*ast.IndexExpr); ok {
				base = ix.X
			}
			if ix, ok := base.(*ast.IndexListExpr); ok {
				base = ix.X
			}
			if id, ok := base.(*ast.Ident); ok && !id.IsExported() {
				return nil
			}
			recv = "(" + node(fset, t) + ") "
		}
		sig := strings.TrimPrefix(node(fset, d.Type), "func")
		out = append(out, "func "+recv+d.Name.Name+sig)
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if !s.Name.IsExported() {
					continue
				}
				kind := "type " + s.Name.Name
				if s.Assign.IsValid() {
					kind += " = " + node(fset, s.Type)
				} else {
					switch s.Type.(type) {
					case *ast.StructType:
						kind += " struct"
					case *ast.InterfaceType:
						kind += " interface"
					default:
						kind += " " + node(fset, s.Type)
					}
				}
				out = append(out, kind)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						out = append(out, d.Tok.String()+" "+n.Name)
					}
				}
			}
		}
	}
	return out
}

// node prints n on one line.
func node(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, n); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
