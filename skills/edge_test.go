package skills_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/skills"
)

// diagFor returns the diagnostics whose origin contains s.
func diagFor(ds []diag.Diagnostic, s string) []diag.Diagnostic {
	var out []diag.Diagnostic
	for _, d := range ds {
		if strings.Contains(d.Origin, s) {
			out = append(out, d)
		}
	}
	return out
}

// TestListingLeavesOut: each kind of entry New leaves out of a skill's
// files, and the diagnostic it says so with; a symlink inside the skill
// directory to a file inside it is listed under the link's path.
func TestListingLeavesOut(t *testing.T) {
	p := newPlugin(t, "acme", map[string]string{
		"skills/greet/SKILL.md":              skillMD("greet", "Greets.", "Body.\n"),
		"skills/greet/references/real.md":    "real\n",
		"skills/greet/references/r\u200b.md": "zero-width name\n",
		"skills/greet/references/tab\t.md":   "tab name\n",
		"skills/greet/.hidden":               "dot file\n",
		"skills/greet/.cache/x.md":           "dot dir\n",
		"skills/other/SKILL.md":              skillMD("other", "Other.", "Body.\n"),
		"skills/other/references/dir/x.md":   "x\n",
	})
	dir := filepath.Join(p.Root, "skills", "greet")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("real.md", filepath.Join(dir, "references", "alias.md")))                         // inside: listed
	must(os.Symlink("../../other/references/dir", filepath.Join(dir, "references", "linkdir")))       // a directory out
	must(os.Symlink("sub", filepath.Join(dir, "references", "loop")))                                 // dangling
	must(os.Mkdir(filepath.Join(dir, "references", "sub"), 0o755))                                    // an empty directory
	must(os.Symlink(filepath.Join(dir, "references"), filepath.Join(dir, "references", "sub", "up"))) // a directory inside
	must(syscall.Mkfifo(filepath.Join(dir, "references", "pipe.md"), 0o644))
	bad := filepath.Join(dir, "references", "bad\xff.md")
	must(os.WriteFile(bad, []byte("x"), 0o644))

	cat, ds := skills.New([]*plugin.Plugin{p}, nil)
	s, _ := cat.Lookup("acme", "greet")
	var paths []string
	for _, f := range s.Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, ",") != "references/alias.md,references/real.md" {
		t.Fatalf("files: %v\ndiagnostics: %v", paths, ds)
	}
	for origin, rule := range map[string]diag.Rule{
		"references/linkdir":      diag.PathEscapesPluginRoot,
		"references/loop":         diag.InvalidSkill,
		"references/sub/up":       diag.InvalidSkill,
		"references/pipe.md":      diag.InvalidSkill,
		"references/bad\uFFFD.md": diag.InvalidSkill,
		"references/r.md":         diag.InvalidSkill, // the origin is sanitized
		"references/tab\t.md":     diag.InvalidSkill,
	} {
		got := diagFor(ds, "skills/greet/"+origin)
		if len(got) != 1 || got[0].Rule != rule || !strings.Contains(got[0].Message, `plugin "acme"`) {
			t.Errorf("%s: diagnostics %v, want one %s", origin, got, rule)
		}
	}
	if len(diagFor(ds, ".hidden"))+len(diagFor(ds, ".cache")) != 0 {
		t.Errorf("dot entries reported: %v", ds)
	}
	alias, err := cat.ReadFile(context.Background(), "acme", "greet", "references/alias.md")
	if err != nil || alias.Text != "real\n" {
		t.Fatalf("alias: %+v, %v", alias, err)
	}
}

// TestMaxFiles: files past Options.MaxFiles are left out, counted in one
// diagnostic.
func TestMaxFiles(t *testing.T) {
	files := map[string]string{"skills/greet/SKILL.md": skillMD("greet", "Greets.", "Body.\n")}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		files["skills/greet/references/"+n+".md"] = n
	}
	cat, ds := skills.New([]*plugin.Plugin{newPlugin(t, "acme", files)}, &skills.Options{MaxFiles: 3})
	s, _ := cat.Lookup("acme", "greet")
	if len(s.Files) != 3 || s.Files[2].Path != "references/c.md" || len(ds) != 1 || !strings.Contains(ds[0].Message, "more than 3 files; 2 are left out") {
		t.Fatalf("files %+v diagnostics %v", s.Files, ds)
	}
}

// TestSkillMDLimits: a SKILL.md over MaxFileBytes leaves its skill out; a
// SKILL.md swapped for a symlink out of the plugin after New is refused.
func TestSkillMDLimits(t *testing.T) {
	p := newPlugin(t, "acme", map[string]string{
		"skills/greet/SKILL.md": skillMD("greet", "Greets.", strings.Repeat("long ", 100)),
		"skills/tiny/SKILL.md":  skillMD("tiny", "Tiny.", "Hi.\n"),
	})
	cat, ds := skills.New([]*plugin.Plugin{p}, &skills.Options{MaxFileBytes: 200})
	if _, ok := cat.Lookup("acme", "greet"); ok || len(ds) != 1 || !strings.Contains(ds[0].Message, "larger than the 200 bytes a catalog serves") {
		t.Fatalf("skills %v diagnostics %v", cat.Skills(), ds)
	}
	outside := filepath.Join(t.TempDir(), "SKILL.md")
	if err := os.WriteFile(outside, []byte(skillMD("tiny", "Tiny.", "Hi.\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(p.Root, "skills", "tiny", "SKILL.md")
	if err := os.Remove(md); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, md); err != nil {
		t.Fatal(err)
	}
	// Same bytes, so only containment can refuse it.
	if _, err := cat.Body(context.Background(), "acme", "tiny"); !errors.Is(err, skills.ErrEscapes) {
		t.Fatalf("Body through a symlink out: %v, want ErrEscapes", err)
	}
	if err := os.Remove(md); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Body(context.Background(), "acme", "tiny"); !errors.Is(err, skills.ErrNotFound) {
		t.Fatalf("Body of a removed SKILL.md: %v, want ErrNotFound", err)
	}
}

// TestSameBytesOutsideRefused: a listed file swapped for a symlink to a
// file outside with the very same bytes is refused too: containment does
// not lean on the hash.
func TestSameBytesOutsideRefused(t *testing.T) {
	p := newPlugin(t, "acme", map[string]string{
		"skills/greet/SKILL.md":          skillMD("greet", "Greets.", "Body.\n"),
		"skills/greet/references/ref.md": "same\n",
	})
	cat, _ := skills.New([]*plugin.Plugin{p}, nil)
	outside := filepath.Join(t.TempDir(), "ref.md")
	if err := os.WriteFile(outside, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(p.Root, "skills", "greet", "references", "ref.md")
	if err := os.Remove(ref); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.ReadFile(context.Background(), "acme", "greet", "references/ref.md"); !errors.Is(err, skills.ErrEscapes) {
		t.Fatalf("ReadFile = %v, want ErrEscapes", err)
	}
	// A directory on the way swapped for a symlink out is refused the same.
	refs := filepath.Join(p.Root, "skills", "greet", "references")
	if err := os.Remove(ref); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(refs); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), refs); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.ReadFile(context.Background(), "acme", "greet", "references/ref.md"); !errors.Is(err, skills.ErrEscapes) {
		t.Fatalf("ReadFile through a swapped directory = %v, want ErrEscapes", err)
	}
}

func TestContractAndLookupMisses(t *testing.T) {
	p := newPlugin(t, "acme", map[string]string{"skills/greet/SKILL.md": skillMD("greet", "Greets.", "Body.\n")})
	cat, _ := skills.New([]*plugin.Plugin{p}, nil)
	if _, ok := skills.ContractOf(cat, "acme", "nope"); ok {
		t.Fatal("contract of a missing skill")
	}
	if _, ok := cat.Lookup("nope", "greet"); ok {
		t.Fatal("lookup of a missing plugin")
	}
	k, ok := skills.ContractOf(cat, "acme", "greet")
	again, _ := skills.New([]*plugin.Plugin{p}, nil)
	k2, _ := skills.ContractOf(again, "acme", "greet")
	if !ok || k.Fingerprint() != k2.Fingerprint() || len(k.Fingerprint()) != 64 {
		t.Fatal("the fingerprint of an unchanged skill changed")
	}
	bad := k
	bad.Description = "x\xff"
	if len(bad.Fingerprint()) != 64 {
		t.Fatal("a contract with invalid UTF-8 has no fingerprint")
	}
	var nilCat *skills.Catalog
	if nilCat.Len() != 0 || nilCat.Skills() != nil || nilCat.Without(nil) != nil {
		t.Fatal("a nil catalog is not empty")
	}
	if _, err := nilCat.Body(context.Background(), "acme", "greet"); !errors.Is(err, skills.ErrNotFound) {
		t.Fatalf("nil catalog Body: %v", err)
	}
}

// TestPlugins: every plugin New was given, skills or not, sorted, once;
// Without keeps them.
func TestPlugins(t *testing.T) {
	a := newPlugin(t, "zeta", map[string]string{"skills/greet/SKILL.md": skillMD("greet", "Greets.", "Body.\n")})
	b := newPlugin(t, "alpha", nil)
	c := newPlugin(t, "mid", map[string]string{"skills/big/SKILL.md": skillMD("big", "Big.", strings.Repeat("x", 300))})
	d := newPlugin(t, "zeta", nil)
	cat, _ := skills.New([]*plugin.Plugin{a, nil, b, c, d}, &skills.Options{MaxFileBytes: 200})
	if got := strings.Join(cat.Plugins(), ","); got != "alpha,mid,zeta" || cat.Len() != 1 {
		t.Fatalf("Plugins = %s, %d skills", got, cat.Len())
	}
	w := cat.Without(func(string, string) bool { return true })
	if got := strings.Join(w.Plugins(), ","); got != "alpha,mid,zeta" || w.Len() != 0 {
		t.Fatalf("Without: Plugins = %s, %d skills", got, w.Len())
	}
	cat.Plugins()[0] = "changed"
	if cat.Plugins()[0] != "alpha" {
		t.Fatal("Plugins returns the catalog's own slice")
	}
	if (*skills.Catalog)(nil).Plugins() != nil {
		t.Fatal("a nil catalog has plugins")
	}
}

// TestSkillMDChangedBeforeNew: a SKILL.md that lost its front matter
// between plugin.Load and New leaves its skill out.
func TestSkillMDChangedBeforeNew(t *testing.T) {
	p := newPlugin(t, "acme", map[string]string{"skills/greet/SKILL.md": skillMD("greet", "Greets.", "Body.\n")})
	writeFiles(t, p.Root, map[string]string{"skills/greet/SKILL.md": "No front matter.\n"})
	cat, ds := skills.New([]*plugin.Plugin{p}, nil)
	if cat.Len() != 0 || len(ds) != 1 || !strings.Contains(ds[0].Message, "no longer opens with a front matter") {
		t.Fatalf("skills %v diagnostics %v", cat.Skills(), ds)
	}
}
