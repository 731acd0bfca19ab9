package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// The defaults of Options.
const (
	DefaultMaxFileBytes = 1 << 20
	DefaultMaxFiles     = 256
	DefaultIndexBudget  = 4096
)

// The sentinel errors of a Catalog's reads, wrapped with %w: callers branch
// with errors.Is.
var (
	// ErrNotFound: no such skill in the catalog, or no such listed file.
	ErrNotFound = errors.New("skills: not found")
	// ErrTooLarge: the body or file is larger than Options.MaxFileBytes.
	ErrTooLarge = errors.New("skills: too large")
	// ErrEscapes: the path no longer resolves inside its skill directory
	// (or, for SKILL.md, inside its plugin), or is not a regular file.
	ErrEscapes = errors.New("skills: path escapes the skill directory")
	// ErrChanged: the content on disk is not what the catalog listed and
	// hashed when it was built; build a new catalog (and judge its
	// contracts) to serve the new content.
	ErrChanged = errors.New("skills: changed on disk since the catalog was built")
)

// Options configures New. A nil *Options, or a zero field, means the default.
type Options struct {
	// MaxFileBytes is the largest SKILL.md or file served, in bytes; larger
	// ones are listed (with their size) but refused with ErrTooLarge, and
	// never read into memory. Default 1 MiB.
	MaxFileBytes int64
	// MaxFiles is how many files are listed per skill; the rest are left
	// out with a diagnostic. Default 256.
	MaxFiles int
	// IndexBudget is the size in bytes Index stays within. Default 4096.
	IndexBudget int
}

func (o *Options) resolved() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxFileBytes <= 0 {
		r.MaxFileBytes = DefaultMaxFileBytes
	}
	if r.MaxFiles <= 0 {
		r.MaxFiles = DefaultMaxFiles
	}
	if r.IndexBudget <= 0 {
		r.IndexBudget = DefaultIndexBudget
	}
	return r
}

// Skill is one skill of a catalog, as a model or a client may see it.
type Skill struct {
	// Plugin is the name of the plugin that holds the skill.
	Plugin string
	// Name is the skill's name, unique within its plugin: (Plugin, Name) is
	// the skill's identity.
	Name string
	// Description is the skill's description, sanitized like a tool
	// description (see internal/projection.Sanitize) and trimmed.
	Description string
	// Files are the files under the skill directory other than SKILL.md,
	// sorted by Path.
	Files []File
}

// ID returns "PLUGIN/NAME", the skill's name for a model (the argument of
// the skills__read tool).
func (s Skill) ID() string { return s.Plugin + "/" + s.Name }

// The kinds of File.Kind, from the first element of the file's path.
const (
	KindReference = "reference" // under references/
	KindAsset     = "asset"     // under assets/
	KindScript    = "script"    // under scripts/: listed and readable, never run
	KindOther     = "other"     // anywhere else
)

// File is one file of a skill.
type File struct {
	// Path is slash-separated and relative to the skill directory, e.g.
	// "references/api.md".
	Path string
	// Size is the file's size in bytes when the catalog was built.
	Size int64
	// Kind is KindReference, KindAsset, KindScript or KindOther.
	Kind string
	// SHA256 is the lower-case hex SHA-256 of the content when the catalog
	// was built; "" for a file larger than Options.MaxFileBytes, which is
	// never read.
	SHA256 string
}

// entry is a skill and what a read needs.
type entry struct {
	Skill
	root     string // the plugin's resolved root
	dir      string // the skill's resolved directory
	mdRel    string // SKILL.md relative to root, slash-separated
	skillSHA string // SHA-256 of SKILL.md
	files    map[string]File
}

// Catalog is the skills of a set of loaded plugins, as a model or a client
// may see them. It is immutable and safe for concurrent use; its reads go to
// the filesystem and re-check what New checked.
type Catalog struct {
	opts    Options
	entries []*entry // sorted by (Plugin, Name)
	plugins []string // every plugin New was given, sorted, once each
}

// New builds the catalog of the skills of plugins (plugin.Plugin.Skills).
// For each skill it hashes SKILL.md and lists the files under its directory
// (references/, assets/, scripts/ and any other, recursively): regular files
// only, each resolved and contained in the skill directory. Left out, each
// with a diagnostic: a symlink that resolves outside the skill directory or
// to a directory, anything that is not a regular file, a name that is not
// valid UTF-8 or that Sanitize would change (hidden or control characters), a
// TAB or LF in a name, files beyond Options.MaxFiles. Names starting with "." are
// left out silently (".git" and editor files are not part of a skill). A
// skill whose SKILL.md cannot be read, or is larger than MaxFileBytes, is
// left out with a diagnostic, and so is a second plugin of the same name.
// Nil plugins are skipped. New never fails: problems are diagnostics.
func New(plugins []*plugin.Plugin, opts *Options) (*Catalog, []diag.Diagnostic) {
	c := &Catalog{opts: opts.resolved()}
	var ds []diag.Diagnostic
	seen := map[string]bool{}
	for _, p := range plugins {
		if p == nil {
			continue
		}
		name := p.Manifest.Name
		if seen[name] {
			if len(p.Skills) > 0 {
				ds = append(ds, diag.New(diag.InvalidSkill, "", name,
					"a second plugin named %q (at %s) is loaded; its skills are left out", name, p.Root))
			}
			continue
		}
		seen[name] = true
		c.plugins = append(c.plugins, name)
		for _, s := range p.Skills {
			e, sds := c.build(p, s)
			ds = append(ds, sds...)
			if e != nil {
				c.entries = append(c.entries, e)
			}
		}
	}
	sort.Strings(c.plugins)
	sort.Slice(c.entries, func(i, j int) bool {
		a, b := c.entries[i], c.entries[j]
		if a.Plugin != b.Plugin {
			return a.Plugin < b.Plugin
		}
		return a.Name < b.Name
	})
	return c, ds
}

// build makes the entry of one skill, or returns nil with the reason.
func (c *Catalog) build(p *plugin.Plugin, s plugin.Skill) (*entry, []diag.Diagnostic) {
	origin := "skills/" + s.Name
	var ds []diag.Diagnostic
	report := func(rule diag.Rule, section, at, format string, args ...any) {
		ds = append(ds, diag.New(rule, section, at, "plugin %q: "+format, append([]any{p.Manifest.Name}, args...)...))
	}
	root, err := filepath.EvalSymlinks(p.Root)
	if err != nil {
		report(diag.InvalidSkill, "7.1", origin+"/SKILL.md", "the plugin root cannot be resolved: %v; the skill is left out", err)
		return nil, ds
	}
	dir, err := filepath.EvalSymlinks(s.Dir)
	if err != nil || !within(root, dir) {
		report(diag.PathEscapesPluginRoot, "4.1", origin+"/SKILL.md", "the skill directory no longer resolves inside the plugin root; the skill is left out")
		return nil, ds
	}
	mdResolved, err := filepath.EvalSymlinks(s.Path)
	if err != nil || !within(root, mdResolved) {
		report(diag.PathEscapesPluginRoot, "4.1", origin+"/SKILL.md", "SKILL.md no longer resolves inside the plugin root; the skill is left out")
		return nil, ds
	}
	mdRel, err := filepath.Rel(root, mdResolved)
	if err != nil {
		report(diag.InvalidSkill, "7.1", origin+"/SKILL.md", "SKILL.md cannot be placed under the plugin root: %v; the skill is left out", err)
		return nil, ds
	}
	e := &entry{
		Skill: Skill{
			Plugin:      p.Manifest.Name,
			Name:        s.Name,
			Description: strings.TrimSpace(projection.Sanitize(s.Description)),
		},
		root:  root,
		dir:   dir,
		mdRel: filepath.ToSlash(mdRel),
		files: map[string]File{},
	}
	data, err := readContained(root, e.mdRel, c.opts.MaxFileBytes)
	switch {
	case errors.Is(err, ErrTooLarge):
		report(diag.InvalidSkill, "7.1", origin+"/SKILL.md", "SKILL.md is larger than the %d bytes a catalog serves; the skill is left out", c.opts.MaxFileBytes)
		return nil, ds
	case err != nil:
		report(diag.InvalidSkill, "7.1", origin+"/SKILL.md", "SKILL.md cannot be read: %v; the skill is left out", err)
		return nil, ds
	}
	if _, ok := splitBody(data); !ok {
		// plugin.Load parsed it; it changed since.
		report(diag.InvalidSkill, "7.1", origin+"/SKILL.md", "SKILL.md no longer opens with a front matter closed by a \"---\" line; the skill is left out")
		return nil, ds
	}
	e.skillSHA = sha256Hex(data)
	ds = append(ds, c.listFiles(e, report)...)
	for _, f := range e.files {
		e.Files = append(e.Files, f)
	}
	sort.Slice(e.Files, func(i, j int) bool { return e.Files[i].Path < e.Files[j].Path })
	return e, ds
}

// listFiles walks the skill directory into e.files.
func (c *Catalog) listFiles(e *entry, report func(rule diag.Rule, section, at, format string, args ...any)) []diag.Diagnostic {
	origin := "skills/" + e.Name + "/"
	mdInDir := ""
	if rel, err := filepath.Rel(e.dir, filepath.Join(e.root, filepath.FromSlash(e.mdRel))); err == nil {
		mdInDir = filepath.ToSlash(rel)
	}
	dropped := 0
	_ = filepath.WalkDir(e.dir, func(p string, d fs.DirEntry, err error) error {
		if p == e.dir {
			return err // an unreadable skill directory: nothing listed
		}
		rel, rerr := filepath.Rel(e.dir, p)
		if rerr != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !utf8.ValidString(rel) {
			report(diag.InvalidSkill, "7.1", strings.ToValidUTF8(origin+rel, "\uFFFD"), "the name is not valid UTF-8; the file is left out")
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if projection.Sanitize(rel) != rel || strings.ContainsAny(rel, "\t\n") {
			report(diag.InvalidSkill, "7.1", projection.Sanitize(origin+rel), "the name has hidden, control or line-breaking characters; it is left out (a model would read the name)")
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if err != nil {
			report(diag.InvalidSkill, "7.1", origin+rel, "cannot be read: %v; it is left out", err)
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if rel == "SKILL.md" || rel == mdInDir {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			resolved, rerr := filepath.EvalSymlinks(p)
			switch {
			case rerr != nil:
				report(diag.InvalidSkill, "7.1", origin+rel, "is a symlink that does not resolve (%v); it is left out", rerr)
				return nil
			case !within(e.dir, resolved):
				report(diag.PathEscapesPluginRoot, "4.1", origin+rel, "is a symlink to %s, outside the skill directory; it is left out", resolved)
				return nil
			}
			if st, serr := os.Stat(resolved); serr != nil || !st.Mode().IsRegular() {
				report(diag.InvalidSkill, "7.1", origin+rel, "is a symlink to something other than a regular file; it is left out (symlinked directories are not followed)")
				return nil
			}
		} else if !d.Type().IsRegular() {
			report(diag.InvalidSkill, "7.1", origin+rel, "is not a regular file; it is left out")
			return nil
		}
		if len(e.files) >= c.opts.MaxFiles {
			dropped++
			return nil
		}
		size, sha, herr := hashContained(e.dir, rel, c.opts.MaxFileBytes)
		if herr != nil && !errors.Is(herr, ErrTooLarge) {
			report(diag.InvalidSkill, "7.1", origin+rel, "cannot be read: %v; it is left out", herr)
			return nil
		}
		e.files[rel] = File{Path: rel, Size: size, Kind: kindOf(rel), SHA256: sha}
		return nil
	})
	if dropped > 0 {
		report(diag.InvalidSkill, "7.1", strings.TrimSuffix(origin, "/"), "has more than %d files; %d are left out", c.opts.MaxFiles, dropped)
	}
	return nil
}

// kindOf names a file's kind from the first element of its path.
func kindOf(rel string) string {
	first, _, found := strings.Cut(rel, "/")
	if !found {
		return KindOther
	}
	switch first {
	case "references":
		return KindReference
	case "assets":
		return KindAsset
	case "scripts":
		return KindScript
	}
	return KindOther
}

// within reports whether the clean absolute path p is base or inside it.
func within(base, p string) bool {
	if base == "" || p == "" {
		return false
	}
	if p == base {
		return true
	}
	prefix := base
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}

// openContained opens rel (slash-separated) under the directory dir for
// reading, refusing anything that resolves outside dir, at the time of the
// open: the lexical resolution is checked first for a clear ErrEscapes, then
// the file is opened through an os.Root, which refuses to leave dir even if
// a path component is swapped for a symlink between the check and the open.
// It never blocks on a FIFO and refuses anything but a regular file. The
// caller closes the file.
func openContained(dir, rel string) (*os.File, fs.FileInfo, error) {
	if !fs.ValidPath(rel) || path.Clean(rel) != rel {
		return nil, nil, fmt.Errorf("%w: %q is not a clean relative path", ErrEscapes, rel)
	}
	full := filepath.Join(dir, filepath.FromSlash(rel))
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrNotFound, rel, err)
		}
		return nil, nil, fmt.Errorf("skills: resolving %s: %w", rel, err)
	}
	if !within(dir, resolved) {
		return nil, nil, fmt.Errorf("%w: %s now resolves to %s", ErrEscapes, rel, resolved)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("skills: opening %s: %w", dir, err)
	}
	defer r.Close()
	f, err := r.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrNotFound, rel, err)
		}
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrEscapes, rel, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("skills: %s: %w", rel, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s is not a regular file", ErrEscapes, rel)
	}
	return f, st, nil
}

// readContained reads rel under dir (see openContained), at most max bytes:
// a larger file is refused with ErrTooLarge before anything is read, and a
// file that grows while being read is cut at max+1 bytes and refused.
func readContained(dir, rel string, max int64) ([]byte, error) {
	f, st, err := openContained(dir, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrTooLarge, rel, st.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("skills: reading %s: %w", rel, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, rel, max)
	}
	return data, nil
}

// hashContained returns the size and SHA-256 of rel under dir. A file over
// max is not read: its size is returned with ErrTooLarge and no hash.
func hashContained(dir, rel string, max int64) (int64, string, error) {
	f, st, err := openContained(dir, rel)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	if st.Size() > max {
		return st.Size(), "", fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrTooLarge, rel, st.Size(), max)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, max+1))
	if err != nil {
		return 0, "", fmt.Errorf("skills: reading %s: %w", rel, err)
	}
	if n > max {
		return n, "", fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, rel, max)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Skills returns the catalog's skills sorted by (Plugin, Name). The slice
// and the Files in it are copies.
func (c *Catalog) Skills() []Skill {
	if c == nil {
		return nil
	}
	out := make([]Skill, len(c.entries))
	for i, e := range c.entries {
		out[i] = e.copySkill()
	}
	return out
}

func (e *entry) copySkill() Skill {
	s := e.Skill
	s.Files = append([]File(nil), e.Files...)
	return s
}

// lookup finds an entry.
func (c *Catalog) lookup(pluginName, name string) *entry {
	if c == nil {
		return nil
	}
	i := sort.Search(len(c.entries), func(i int) bool {
		e := c.entries[i]
		return e.Plugin > pluginName || e.Plugin == pluginName && e.Name >= name
	})
	if i < len(c.entries) && c.entries[i].Plugin == pluginName && c.entries[i].Name == name {
		return c.entries[i]
	}
	return nil
}

// Lookup returns the skill (plugin, name), and whether the catalog has it.
func (c *Catalog) Lookup(plugin, name string) (Skill, bool) {
	e := c.lookup(plugin, name)
	if e == nil {
		return Skill{}, false
	}
	return e.copySkill(), true
}

// Len returns the number of skills in the catalog.
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	return len(c.entries)
}

// Plugins returns the names of the plugins the catalog was built from,
// sorted, each once: every non-nil plugin New was given, including those
// with no skills or whose skills were all left out. Without keeps them.
// Trust uses it to tell a plugin that has no skills from one not loaded.
func (c *Catalog) Plugins() []string {
	if c == nil {
		return nil
	}
	return append([]string(nil), c.plugins...)
}

// Without returns a catalog without the skills for which withheld returns
// true (trust uses it: a drifted skill is withheld until it is trusted).
// The receiver is unchanged; a nil withheld keeps every skill. The
// result's Plugins are the receiver's.
func (c *Catalog) Without(withheld func(plugin, name string) bool) *Catalog {
	if c == nil {
		return nil
	}
	out := &Catalog{opts: c.opts, plugins: c.plugins}
	for _, e := range c.entries {
		if withheld == nil || !withheld(e.Plugin, e.Name) {
			out.entries = append(out.entries, e)
		}
	}
	return out
}
