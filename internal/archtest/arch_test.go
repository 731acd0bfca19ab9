package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// row is one package of the table.
type row struct {
	layer   string   // "0".."9", or "T"
	imports []string // module packages, relative to the module path
	modules []string // other modules
}

// goPackage is what go list says of one package.
type goPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

func moduleRoot(t *testing.T) (dir, path string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Path}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	dir, path, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
	return dir, path
}

// goList returns the module's packages and the paths of the modules in its
// build list.
func goList(t *testing.T, root string) ([]goPackage, []string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	cmd = exec.Command("go", "list", "-m", "-f", "{{.Path}}", "all")
	cmd.Dir = root
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	return pkgs, strings.Fields(string(out))
}

// table reads the package table of docs/ARCHITECTURE.md.
func table(t *testing.T, root string) map[string]row {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte("<!-- packages:begin -->"))
	body, _, ok2 := bytes.Cut(rest, []byte("<!-- packages:end -->"))
	if !ok || !ok2 {
		t.Fatal("docs/ARCHITECTURE.md has no <!-- packages:begin/end --> markers")
	}
	rows := map[string]row{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("a row of %d cells, want 5: %s", len(cells), line)
		}
		pkgs := ticked(cells[0])
		if len(pkgs) != 1 {
			t.Fatalf("a row names %d packages, want one: %s", len(pkgs), line)
		}
		if _, dup := rows[pkgs[0]]; dup {
			t.Fatalf("package %s has two rows", pkgs[0])
		}
		rows[pkgs[0]] = row{layer: strings.TrimSpace(cells[1]), imports: ticked(cells[3]), modules: ticked(cells[4])}
	}
	if len(rows) == 0 {
		t.Fatal("the package table is empty")
	}
	return rows
}

// ticked returns the `quoted` names of a cell, sorted.
func ticked(cell string) []string {
	var out []string
	for {
		_, after, ok := strings.Cut(cell, "`")
		if !ok {
			break
		}
		name, rest, ok := strings.Cut(after, "`")
		if !ok {
			break
		}
		out = append(out, name)
		cell = rest
	}
	sort.Strings(out)
	return out
}

// moduleOf returns the module (of mods) an import path belongs to: the
// longest module path it is in.
func moduleOf(path string, mods []string) string {
	best := ""
	for _, m := range mods {
		if (path == m || strings.HasPrefix(path, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// TestArchitectureTable compares the package table with the code.
func TestArchitectureTable(t *testing.T) {
	root, modPath := moduleRoot(t)
	pkgs, mods := goList(t, root)
	rows := table(t, root)
	seen := map[string]bool{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, modPath), "/")
		seen[rel] = true
		r, ok := rows[rel]
		if !ok {
			t.Errorf("package %s is not in the table of docs/ARCHITECTURE.md", rel)
			continue
		}
		var own, other []string
		for _, imp := range p.Imports {
			switch {
			case imp == modPath || strings.HasPrefix(imp, modPath+"/"):
				own = append(own, strings.TrimPrefix(imp, modPath+"/"))
			case !strings.Contains(strings.Split(imp, "/")[0], "."):
				// the standard library
			default:
				if m := moduleOf(imp, mods); m != "" && !slices.Contains(other, m) {
					other = append(other, m)
				}
			}
		}
		sort.Strings(own)
		sort.Strings(other)
		if !slices.Equal(own, r.imports) {
			t.Errorf("%s imports %v; the table says %v", rel, own, r.imports)
		}
		if !slices.Equal(other, r.modules) {
			t.Errorf("%s uses the modules %v; the table says %v", rel, other, r.modules)
		}
		for _, imp := range own {
			ir, ok := rows[imp]
			if !ok {
				continue // reported as a missing row
			}
			if err := layered(rel, r.layer, imp, ir.layer); err != nil {
				t.Error(err)
			}
		}
	}
	for name := range rows {
		if !seen[name] {
			t.Errorf("the table lists %s, which is no package of the module", name)
		}
	}
}

// layered checks one import against the layers: a layered package imports
// its own layer or a lower one, and never a package of tests and tools.
func layered(pkg, layer, imp, impLayer string) error {
	valid := func(l string) bool { return l == "T" || len(l) == 1 && l[0] >= '0' && l[0] <= '9' }
	if !valid(layer) || !valid(impLayer) {
		return fmt.Errorf("layers %q (%s) or %q (%s) are not a digit or T", layer, pkg, impLayer, imp)
	}
	switch {
	case layer == "T":
		return nil
	case impLayer == "T":
		return fmt.Errorf("%s (layer %s) imports %s, a package of tests and tools", pkg, layer, imp)
	case impLayer > layer:
		return fmt.Errorf("%s (layer %s) imports %s of a higher layer (%s)", pkg, layer, imp, impLayer)
	}
	return nil
}

// The check itself can fail: a package of a lower layer importing a
// higher one, a layered package importing a fixture, a bad layer name.
func TestLayered(t *testing.T) {
	for _, c := range []struct {
		layer, impLayer string
		ok              bool
	}{
		{"2", "1", true}, {"2", "2", true}, {"1", "2", false}, {"3", "T", false}, {"T", "5", true},
		{"x", "1", false}, {"1", "", false},
	} {
		if err := layered("p", c.layer, "q", c.impLayer); (err == nil) != c.ok {
			t.Errorf("layer %q importing %q: %v", c.layer, c.impLayer, err)
		}
	}
	if got := ticked("`a`, `c/d` and `b`"); !slices.Equal(got, []string{"a", "b", "c/d"}) {
		t.Errorf("ticked: %v", got)
	}
	if m := moduleOf("github.com/jackc/pgx/v5/pgxpool", []string{"github.com/jackc/pgx", "github.com/jackc/pgx/v5"}); m != "github.com/jackc/pgx/v5" {
		t.Errorf("moduleOf: %s", m)
	}
}

// Limits of the tree's shape (docs/ARCHITECTURE.md, "Rules we keep").
const (
	maxPackageLines = 3000
	maxFileLines    = 700
)

// TestSizes prints a warning for a package above maxPackageLines lines of
// non-test Go and a file above maxFileLines. The figures are a prompt to
// look, not a rule: a package is split along a concept, never to get
// under a number (cutting packages at a line cap scattered one concept
// over several). The seams are what TestArchitectureTable holds.
func TestSizes(t *testing.T) {
	root, modPath := moduleRoot(t)
	pkgs, _ := goList(t, root)
	for _, p := range pkgs {
		total := 0
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			n := bytes.Count(b, []byte("\n"))
			total += n
			if n > maxFileLines {
				t.Logf("warning: %s/%s has %d lines, more than %d", strings.TrimPrefix(p.ImportPath, modPath+"/"), f, n, maxFileLines)
			}
		}
		if total > maxPackageLines {
			t.Logf("warning: package %s has %d lines of non-test Go, more than %d", strings.TrimPrefix(p.ImportPath, modPath+"/"), total, maxPackageLines)
		}
	}
}
