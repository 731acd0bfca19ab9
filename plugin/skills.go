package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// maxSkillFile bounds how much of a SKILL.md is read, front matter and body.
const maxSkillFile = 8 << 20

// skillFields are the front matter fields of the Agent Skills specification.
var skillFields = map[string]bool{
	"name": true, "description": true, "license": true,
	"compatibility": true, "metadata": true, "allowed-tools": true,
}

// discoverSkills scans the immediate children of skills/ (§7.1). It never
// fails the plugin: problems are diagnostics and the skill, or the whole
// component type, is skipped.
func discoverSkills(root string) ([]Skill, []diag.Diagnostic) {
	var ds []diag.Diagnostic
	loc := under(root, "skills")
	if _, err := os.Lstat(loc); errors.Is(err, fs.ErrNotExist) {
		return nil, nil // §6.2: absent is not an error
	}
	dir, err := filepath.EvalSymlinks(loc)
	if err != nil {
		ds = append(ds, diag.New(diag.ComponentWrongKind, "6.2", "skills",
			"skills is present but does not resolve to a directory: %s; skills are disabled", describeResolveError("skills", err)))
		return nil, ds
	}
	if !within(root, dir) {
		ds = append(ds, diag.New(diag.PathEscapesPluginRoot, "4.1", "skills",
			"skills resolves to %s, outside the plugin root; skills are disabled", dir))
		return nil, ds
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		what := "unreadable"
		if err == nil {
			what = kindName(st.Mode())
		}
		ds = append(ds, diag.New(diag.ComponentWrongKind, "6.2", "skills",
			"skills must be a directory but is %s; skills are disabled", what))
		return nil, ds
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		ds = append(ds, diag.New(diag.ComponentWrongKind, "6.2", "skills",
			"the skills directory cannot be read: %v; skills are disabled", err))
		return nil, ds
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var skills []Skill
	for _, e := range entries {
		s, d, found := loadSkill(root, dir, e.Name())
		if !found {
			continue
		}
		if d != nil {
			ds = append(ds, *d)
			continue
		}
		skills = append(skills, s)
	}
	return skills, ds
}

// loadSkill examines one child of skills/. found is false when the child is
// not a skill at all (no SKILL.md in it): that is silent. Otherwise either d
// says why the skill is skipped, or s is the valid skill.
func loadSkill(root, skillsDir, name string) (s Skill, d *diag.Diagnostic, found bool) {
	origin := "skills/" + name + "/SKILL.md"
	child := under(skillsDir, name)
	md := under(child, "SKILL.md")
	if _, err := os.Lstat(md); err != nil {
		// No SKILL.md, or the child is not a directory: not a skill.
		return Skill{}, nil, false
	}
	fail := func(rule diag.Rule, section, format string, args ...any) (Skill, *diag.Diagnostic, bool) {
		dg := diag.New(rule, section, origin, format, args...)
		return Skill{}, &dg, true
	}
	resolvedDir, err := filepath.EvalSymlinks(child)
	if err != nil {
		return fail(diag.InvalidSkill, "7.1", "the skill directory cannot be resolved: %s", describeResolveError("skills/"+name, err))
	}
	if !within(root, resolvedDir) {
		return fail(diag.PathEscapesPluginRoot, "4.1", "the skill directory resolves to %s, outside the plugin root; the skill is skipped", resolvedDir)
	}
	resolved, err := filepath.EvalSymlinks(md)
	if err != nil {
		return fail(diag.InvalidSkill, "7.1", "SKILL.md does not resolve to a regular file: %s", describeResolveError(origin, err))
	}
	if !within(root, resolved) {
		return fail(diag.PathEscapesPluginRoot, "4.1", "SKILL.md resolves to %s, outside the plugin root; the skill is skipped", resolved)
	}
	data, err := readRegular(resolved, maxSkillFile)
	if err != nil {
		return fail(diag.InvalidSkill, "7.1", "SKILL.md cannot be read: %s", readProblem(resolved, err, maxSkillFile))
	}
	front, _, why := splitFrontMatter(data)
	if why != "" {
		return fail(diag.InvalidSkill, "7.1", "%s", why)
	}
	s, why = parseSkillFrontMatter(front, name)
	if why != "" {
		return fail(diag.InvalidSkill, "7.1", "%s", why)
	}
	s.Dir = resolvedDir
	s.Path = resolved
	s.PluginRoot = root
	return s, nil, true
}

// readProblem describes a readRegular error.
func readProblem(path string, err error, limit int64) string {
	switch {
	case errors.Is(err, errNotRegular):
		if st, serr := os.Stat(path); serr == nil {
			return "it is " + kindName(st.Mode()) + ", not a regular file"
		}
		return "it is not a regular file"
	case errors.Is(err, errTooLarge):
		return fmt.Sprintf("it is larger than %d bytes", limit)
	default:
		return err.Error()
	}
}

// splitFrontMatter splits a SKILL.md into its YAML front matter and its
// markdown body. The file must start with a line "---" and the front matter
// ends at the next line "---" (a trailing CR on either line is accepted).
func splitFrontMatter(data []byte) (front, body []byte, why string) {
	if !utf8.Valid(data) {
		return nil, nil, "SKILL.md is not valid UTF-8"
	}
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if strings.TrimSuffix(string(line), "\r") != "---" {
		return nil, nil, "SKILL.md must start with a \"---\" line opening the YAML front matter"
	}
	if !ok {
		return nil, nil, "SKILL.md front matter is not closed by a \"---\" line"
	}
	off := 0
	for off <= len(rest) {
		l, _, more := bytes.Cut(rest[off:], []byte("\n"))
		if strings.TrimSuffix(string(l), "\r") == "---" {
			front = rest[:off]
			bodyStart := off + len(l)
			if more {
				bodyStart++
			}
			return front, rest[bodyStart:], ""
		}
		if !more {
			break
		}
		off += len(l) + 1
	}
	return nil, nil, "SKILL.md front matter is not closed by a \"---\" line"
}

// parseSkillFrontMatter validates the front matter against the Agent Skills
// specification. dirName is the skill's directory name.
func parseSkillFrontMatter(front []byte, dirName string) (s Skill, why string) {
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		return Skill{}, fmt.Sprintf("SKILL.md front matter is not valid YAML: %v", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return Skill{}, "SKILL.md front matter must be a YAML mapping with at least name and description"
	}
	mapping := doc.Content[0]
	seen := map[string]bool{}
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		k, v := mapping.Content[i], mapping.Content[i+1]
		key, ok := yamlString(k)
		if !ok {
			return Skill{}, fmt.Sprintf("front matter key on line %d must be a string", k.Line)
		}
		if seen[key] {
			return Skill{}, fmt.Sprintf("front matter field %q appears more than once", key)
		}
		seen[key] = true
		if !skillFields[key] {
			return Skill{}, fmt.Sprintf("unknown front matter field %q; the Agent Skills specification allows name, description, license, compatibility, metadata and allowed-tools (put other data under metadata)", key)
		}
		if key == "metadata" {
			md, why := yamlStringMap(v)
			if why != "" {
				return Skill{}, "\"metadata\" " + why
			}
			s.Metadata = md
			continue
		}
		val, ok := yamlString(v)
		if !ok {
			return Skill{}, fmt.Sprintf("%q must be a string (quote it if YAML reads it as another type)", key)
		}
		switch key {
		case "name":
			s.Name = val
		case "description":
			s.Description = val
		case "license":
			s.License = val
		case "compatibility":
			s.Compatibility = val
		case "allowed-tools":
			s.AllowedTools = val
		}
	}
	if !seen["name"] {
		return Skill{}, "the required front matter field \"name\" is missing"
	}
	if why := skillNameProblem(s.Name); why != "" {
		return Skill{}, fmt.Sprintf("skill name %q is invalid: %s", s.Name, why)
	}
	if s.Name != dirName {
		return Skill{}, fmt.Sprintf("skill name %q must equal its directory name %q", s.Name, dirName)
	}
	if !seen["description"] {
		return Skill{}, "the required front matter field \"description\" is missing"
	}
	if n := utf8.RuneCountInString(s.Description); strings.TrimSpace(s.Description) == "" || n > 1024 {
		return Skill{}, fmt.Sprintf("\"description\" must be 1 to 1024 characters and not blank (it has %d)", n)
	}
	if seen["compatibility"] {
		if n := utf8.RuneCountInString(s.Compatibility); strings.TrimSpace(s.Compatibility) == "" || n > 500 {
			return Skill{}, fmt.Sprintf("\"compatibility\" must be 1 to 500 characters and not blank (it has %d)", n)
		}
	}
	return s, ""
}

// yamlString returns the value of a YAML string scalar. Numbers, booleans,
// nulls, aliases and collections are not strings.
func yamlString(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", false
	}
	return n.Value, true
}

// yamlStringMap decodes a mapping of string keys to string values.
func yamlStringMap(n *yaml.Node) (map[string]string, string) {
	if n.Kind != yaml.MappingNode {
		return nil, "must be a mapping of strings to strings"
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, ok := yamlString(n.Content[i])
		if !ok {
			return nil, fmt.Sprintf("keys must be strings (line %d)", n.Content[i].Line)
		}
		v, ok := yamlString(n.Content[i+1])
		if !ok {
			return nil, fmt.Sprintf("value of %q must be a string (quote it if YAML reads it as another type)", k)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Sprintf("has the key %q more than once", k)
		}
		out[k] = v
	}
	return out, ""
}

// skillNameProblem returns why s is not a valid Agent Skills name, or "".
func skillNameProblem(s string) string { return nameProblem(s, false) }

// Body reads the skill's SKILL.md again and returns the markdown after the
// front matter. It re-checks that SKILL.md still resolves to a regular file
// inside the plugin root, so a symlink swapped in after Load cannot make it
// read outside the plugin.
func (s Skill) Body() (string, error) {
	if s.PluginRoot == "" || s.Path == "" {
		return "", errors.New("plugin: skill has no plugin root or path (was it returned by Load?)")
	}
	root, err := filepath.EvalSymlinks(s.PluginRoot)
	if err != nil {
		return "", fmt.Errorf("plugin: skill %q: resolving the plugin root: %w", s.Name, err)
	}
	resolved, err := filepath.EvalSymlinks(s.Path)
	if err != nil {
		return "", fmt.Errorf("plugin: skill %q: %w", s.Name, err)
	}
	if !within(root, resolved) {
		return "", &Error{Rule: diag.PathEscapesPluginRoot, Section: "4.1", Origin: "skills/" + s.Name + "/SKILL.md",
			Msg: fmt.Sprintf("SKILL.md now resolves to %s, outside the plugin root", resolved)}
	}
	data, err := readRegular(resolved, maxSkillFile)
	if err != nil {
		return "", fmt.Errorf("plugin: skill %q: SKILL.md: %w", s.Name, err)
	}
	_, body, why := splitFrontMatter(data)
	if why != "" {
		return "", fmt.Errorf("plugin: skill %q: %s", s.Name, why)
	}
	return string(body), nil
}
