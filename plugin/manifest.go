package plugin

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/diag"
)

const manifestOrigin = "plugin.json"

// versions maps the canonical schema identifiers this build recognizes to
// the Agent Plugins version each selects (§5.2, §7.2.1, §10.1). Load uses
// defaultVersions; tests pass other tables to reach the mismatch path.
type versions struct {
	manifest map[string]string
	mcp      map[string]string
}

func defaultVersions() versions {
	return versions{
		manifest: map[string]string{manifestSchemaV1: "1.0.0"},
		mcp:      map[string]string{mcpSchemaV1: "1.0.0"},
	}
}

// parseManifest validates plugin.json bytes against the closed 1.0.0 schema.
// ok is false when the plugin must be rejected; the diagnostics say why. The
// returned version is the Agent Plugins version $schema selected.
func parseManifest(data []byte, vs versions) (m Manifest, version string, ds []diag.Diagnostic, ok bool) {
	bad := func(rule diag.Rule, section, format string, args ...any) {
		ds = append(ds, diag.New(rule, section, manifestOrigin, format, args...))
	}
	if err := checkDocument(data); err != nil {
		bad(diag.ManifestInvalid, "5.2", "plugin.json is not valid JSON: %v", err)
		return Manifest{}, "", ds, false
	}
	ms, err := members(data)
	if err != nil {
		bad(diag.ManifestInvalid, "5.2", "plugin.json must contain a JSON object at the top level, but it %v", err)
		return Manifest{}, "", ds, false
	}
	if dups := duplicates(ms); len(dups) > 0 {
		for _, d := range dups {
			bad(diag.ManifestInvalid, "5.2", "plugin.json has the field %q more than once; its meaning is ambiguous, keep exactly one", d)
		}
		return Manifest{}, "", ds, false
	}
	byName := make(map[string]json.RawMessage, len(ms))
	for _, mb := range ms {
		byName[mb.Name] = mb.Value
	}

	// $schema selects the rules; without a recognized one nothing else can
	// be judged.
	rawSchema, present := byName["$schema"]
	if !present {
		bad(diag.ManifestInvalid, "5.3", "plugin.json is missing the required \"$schema\" field; set it to %q", manifestSchemaV1)
		return Manifest{}, "", ds, false
	}
	schema, isStr := asString(rawSchema)
	if !isStr {
		bad(diag.ManifestInvalid, "5.3", "\"$schema\" must be a string, not %s; set it to %q", kindOf(rawSchema), manifestSchemaV1)
		return Manifest{}, "", ds, false
	}
	version, known := vs.manifest[schema]
	if !known {
		bad(diag.UnsupportedSchemaVersion, "5.2", "\"$schema\" is %q, which is not an Agent Plugins version this client supports (it supports %q)", schema, manifestSchemaV1)
		return Manifest{}, "", ds, false
	}
	m.Schema = schema
	fatal := false
	invalid := func(section, format string, args ...any) {
		fatal = true
		bad(diag.ManifestInvalid, section, format, args...)
	}

	for _, mb := range ms {
		raw := mb.Value
		switch mb.Name {
		case "$schema":
		case "name":
			s, isStr := asString(raw)
			switch {
			case !isStr:
				invalid("5.3", "\"name\" must be a string, not %s", kindOf(raw))
			case s == "":
				invalid("5.3", "\"name\" must not be empty")
			default:
				if why := pluginNameProblem(s); why != "" {
					fatal = true
					bad(diag.InvalidName, "5.5", "plugin name %q is invalid: %s", s, why)
				}
				m.Name = s
			}
		case "version", "description", "homepage", "repository", "license":
			s, isStr := asString(raw)
			if !isStr {
				invalid("5.4", "%q must be a string, not %s", mb.Name, kindOf(raw))
				continue
			}
			switch mb.Name {
			case "version":
				m.Version = s
			case "description":
				m.Description = s
			case "homepage":
				m.Homepage = s
			case "repository":
				m.Repository = s
			case "license":
				m.License = s
			}
		case "author":
			a, why := parseAuthor(raw)
			if why != "" {
				invalid("5.4", "\"author\" %s", why)
				continue
			}
			m.Author = a
		case "keywords":
			kw, err := asStringArray(raw)
			if err != nil {
				invalid("5.4", "\"keywords\" %v", err)
				continue
			}
			m.Keywords = kw
		case "extensions":
			ems, err := members(raw)
			if err != nil {
				bad(diag.ExtensionsNotAnObject, "8.1", "\"extensions\" %v; it is ignored (put client data under reverse-domain keys of an object)", err)
				continue
			}
			// This client implements no namespace, and §8.1 has a client
			// ignore the entries of namespaces it does not implement
			// without validating their values: a value is kept as it was
			// written, whatever its JSON type ({"com.other.client": 5}
			// loads, with no diagnostic). A namespace twice is a duplicate
			// member of plugin.json, as anywhere in it.
			ext := make(map[string]json.RawMessage, len(ems))
			for _, em := range ems {
				if _, dup := ext[em.Name]; dup {
					invalid("8.1", "extension namespace %q appears more than once; keep exactly one", em.Name)
					continue
				}
				ext[em.Name] = em.Value
			}
			m.Extensions = ext
		default:
			bad(diag.UnknownField, "5.2", "unknown field %q in plugin.json is ignored; only %s are allowed, and client data belongs under \"extensions\"", mb.Name, permittedList())
		}
	}
	if _, present := byName["name"]; !present {
		invalid("5.3", "plugin.json is missing the required \"name\" field")
	}
	if fatal {
		return Manifest{}, "", ds, false
	}
	return m, version, ds, true
}

func permittedList() string {
	return "$schema, name, version, description, author, homepage, repository, license, keywords and extensions"
}

// parseAuthor validates the author object (§5.4): only name, email and url,
// each a string.
func parseAuthor(raw json.RawMessage) (*Author, string) {
	ms, err := members(raw)
	if err != nil {
		return nil, err.Error()
	}
	if dups := duplicates(ms); len(dups) > 0 {
		return nil, fmt.Sprintf("has the field %q more than once", dups[0])
	}
	a := &Author{}
	for _, mb := range ms {
		s, isStr := asString(mb.Value)
		switch mb.Name {
		case "name", "email", "url":
			if !isStr {
				return nil, fmt.Sprintf("field %q must be a string, not %s", mb.Name, kindOf(mb.Value))
			}
		default:
			return nil, fmt.Sprintf("may contain only name, email and url, but has %q", mb.Name)
		}
		switch mb.Name {
		case "name":
			a.Name = s
		case "email":
			a.Email = s
		case "url":
			a.URL = s
		}
	}
	return a, ""
}

// pluginNameProblem returns why s violates §5.5, or "" when it is valid.
func pluginNameProblem(s string) string { return nameProblem(s, true) }

// nameProblem checks the shape plugin names (§5.5) and skill names (Agent
// Skills) share: 1–64 of a-z, 0-9 and "-" (and "." for plugins), starting
// and ending alphanumeric, with no doubled punctuation. It returns why s
// fails, or "".
func nameProblem(s string, periods bool) string {
	if n := len(s); n < 1 || n > 64 {
		return fmt.Sprintf("it must be 1 to 64 characters long, not %d", n)
	}
	punct, charset := "-", "use only lowercase letters a-z, digits and hyphens"
	if periods {
		punct, charset = "-.", "use only lowercase letters a-z, digits, hyphens and periods"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && strings.IndexByte(punct, c) < 0 {
			return charset
		}
	}
	if !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return "it must start and end with a lowercase letter or digit"
	}
	if strings.Contains(s, "--") || strings.Contains(s, "..") {
		return "consecutive hyphens or periods are not allowed"
	}
	return ""
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
