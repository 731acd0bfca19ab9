package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPath is a citation of one of the project's docs in code or help
// text: "docs/NAME.md" or "docs/reference/NAME.md".
var docPath = regexp.MustCompile(`docs/(?:[a-z]+/)?[A-Za-z_-]+\.md`)

// TestCitesOnlyShippedDocs fails when a Go file (code, comments, help
// texts) cites a document the repository does not ship: nothing cites
// the design notes the project was built from (CONTRACTS.md, ../shared),
// which users do not have, and every docs/....md a non-test file names
// exists.
func TestCitesOnlyShippedDocs(t *testing.T) {
	root, _ := moduleRoot(t)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n != "." && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || p == filepath.Join(root, "internal", "archtest", "cites_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		src := string(b)
		if strings.Contains(src, "CONTRACTS.md") {
			t.Errorf("%s cites CONTRACTS.md, which users do not have: cite the page of docs/ that documents it", rel)
		}
		if strings.HasSuffix(p, "_test.go") { // tests build plugin trees of their own, docs/ folders included
			return nil
		}
		if strings.Contains(src, "../shared/") {
			t.Errorf("%s cites ../shared/, which users do not have: cite the page of docs/ that documents it", rel)
		}
		for _, m := range docPath.FindAllString(src, -1) {
			if _, err := os.Stat(filepath.Join(root, m)); err != nil {
				t.Errorf("%s cites %s, which does not exist", rel, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
