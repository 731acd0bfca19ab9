package plugin

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
)

const goodManifest = `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "demo"}`

func goodSkill(name string) string {
	return "---\nname: " + name + "\ndescription: A test skill.\n---\n# " + name + "\nBody of " + name + ".\n"
}

// writeTree creates files (relative path -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// symlink creates link -> target (target used verbatim, may be relative).
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func rulesOf(ds []diag.Diagnostic) []ruleAt {
	out := []ruleAt{}
	for _, d := range ds {
		out = append(out, ruleAt{d.Rule, d.Origin})
	}
	sortRules(out)
	return out
}

func wantRules(rs ...ruleAt) []ruleAt {
	if rs == nil {
		rs = []ruleAt{}
	}
	sortRules(rs)
	return rs
}

// TestContainment builds real trees with symlinks inside and outside the
// plugin root and checks the narrowest failure boundary of §4.1 for each.
func TestContainment(t *testing.T) {
	mcpJSON := func(servers string) string {
		return `{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {` + servers + `}}`
	}
	type tc struct {
		name    string
		setup   func(t *testing.T, root, outside string)
		ok      bool
		skills  []string
		servers []string
		diags   []ruleAt
	}
	base := func(t *testing.T, root string) {
		writeTree(t, root, map[string]string{"plugin.json": goodManifest})
	}
	cases := []tc{
		{name: "manifest symlink inside", ok: true, setup: func(t *testing.T, root, out string) {
			writeTree(t, root, map[string]string{"meta/real.json": goodManifest})
			symlink(t, "meta/real.json", filepath.Join(root, "plugin.json"))
		}},
		{name: "manifest symlink outside", setup: func(t *testing.T, root, out string) {
			writeTree(t, out, map[string]string{"plugin.json": goodManifest})
			symlink(t, filepath.Join(out, "plugin.json"), filepath.Join(root, "plugin.json"))
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "plugin.json"}}},
		{name: "manifest symlink escaping with dotdot", setup: func(t *testing.T, root, out string) {
			writeTree(t, filepath.Dir(root), map[string]string{"sneaky.json": goodManifest})
			symlink(t, "../sneaky.json", filepath.Join(root, "plugin.json"))
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "plugin.json"}}},
		{name: "manifest dangling symlink", setup: func(t *testing.T, root, out string) {
			symlink(t, "nowhere.json", filepath.Join(root, "plugin.json"))
		}, diags: []ruleAt{{diag.ManifestMissing, "plugin.json"}}},
		{name: "manifest symlink loop", setup: func(t *testing.T, root, out string) {
			symlink(t, "plugin.json", filepath.Join(root, "plugin.json"))
		}, diags: []ruleAt{{diag.ManifestMissing, "plugin.json"}}},
		{name: "manifest is a directory", setup: func(t *testing.T, root, out string) {
			writeTree(t, root, map[string]string{"plugin.json/x": goodManifest})
		}, diags: []ruleAt{{diag.ManifestMissing, "plugin.json"}}},
		{name: "manifest is a fifo (no hang)", setup: func(t *testing.T, root, out string) {
			mkfifo(t, filepath.Join(root, "plugin.json"))
		}, diags: []ruleAt{{diag.ManifestMissing, "plugin.json"}}},
		{name: "skills symlink inside", ok: true, skills: []string{"greet"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"lib/skills/greet/SKILL.md": goodSkill("greet")})
			symlink(t, "lib/skills", filepath.Join(root, "skills"))
		}},
		{name: "skills symlink outside, mcp still loads", ok: true, servers: []string{"s"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, out, map[string]string{"skills/greet/SKILL.md": goodSkill("greet")})
			symlink(t, filepath.Join(out, "skills"), filepath.Join(root, "skills"))
			writeTree(t, root, map[string]string{"mcp.json": mcpJSON(`"s": {"type": "stdio", "command": "s"}`)})
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "skills"}}},
		{name: "skills dangling symlink", ok: true, setup: func(t *testing.T, root, out string) {
			base(t, root)
			symlink(t, "gone", filepath.Join(root, "skills"))
		}, diags: []ruleAt{{diag.ComponentWrongKind, "skills"}}},
		{name: "skills symlink to a file", ok: true, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"notes.txt": "x"})
			symlink(t, "notes.txt", filepath.Join(root, "skills"))
		}, diags: []ruleAt{{diag.ComponentWrongKind, "skills"}}},
		{name: "skill dir symlink inside", ok: true, skills: []string{"greet", "hello"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"shared/hello/SKILL.md": goodSkill("hello"), "skills/greet/SKILL.md": goodSkill("greet")})
			symlink(t, "../shared/hello", filepath.Join(root, "skills", "hello"))
		}},
		{name: "skill dir symlink outside", ok: true, skills: []string{"greet"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, out, map[string]string{"evil/SKILL.md": goodSkill("evil")})
			writeTree(t, root, map[string]string{"skills/greet/SKILL.md": goodSkill("greet")})
			symlink(t, filepath.Join(out, "evil"), filepath.Join(root, "skills", "evil"))
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "skills/evil/SKILL.md"}}},
		{name: "SKILL.md symlink inside", ok: true, skills: []string{"greet"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"docs/greet.md": goodSkill("greet")})
			symlink(t, "../../docs/greet.md", filepath.Join(root, "skills", "greet", "SKILL.md"))
		}},
		{name: "SKILL.md symlink outside", ok: true, skills: []string{"ok"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, out, map[string]string{"greet.md": goodSkill("greet")})
			writeTree(t, root, map[string]string{"skills/ok/SKILL.md": goodSkill("ok")})
			symlink(t, filepath.Join(out, "greet.md"), filepath.Join(root, "skills", "greet", "SKILL.md"))
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "skills/greet/SKILL.md"}}},
		{name: "SKILL.md dangling", ok: true, setup: func(t *testing.T, root, out string) {
			base(t, root)
			symlink(t, "missing.md", filepath.Join(root, "skills", "greet", "SKILL.md"))
		}, diags: []ruleAt{{diag.InvalidSkill, "skills/greet/SKILL.md"}}},
		{name: "SKILL.md is a fifo (no hang)", ok: true, setup: func(t *testing.T, root, out string) {
			base(t, root)
			if err := os.MkdirAll(filepath.Join(root, "skills", "greet"), 0o755); err != nil {
				t.Fatal(err)
			}
			mkfifo(t, filepath.Join(root, "skills", "greet", "SKILL.md"))
		}, diags: []ruleAt{{diag.InvalidSkill, "skills/greet/SKILL.md"}}},
		{name: "mcp.json symlink inside", ok: true, servers: []string{"s"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"conf/mcp.json": mcpJSON(`"s": {"type": "stdio", "command": "s"}`)})
			symlink(t, "conf/mcp.json", filepath.Join(root, "mcp.json"))
		}},
		{name: "mcp.json symlink outside, skills still load", ok: true, skills: []string{"greet"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, out, map[string]string{"mcp.json": mcpJSON(`"s": {"type": "stdio", "command": "s"}`)})
			writeTree(t, root, map[string]string{"skills/greet/SKILL.md": goodSkill("greet")})
			symlink(t, filepath.Join(out, "mcp.json"), filepath.Join(root, "mcp.json"))
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "mcp.json"}}},
		{name: "mcp.json dangling", ok: true, setup: func(t *testing.T, root, out string) {
			base(t, root)
			symlink(t, "nope.json", filepath.Join(root, "mcp.json"))
		}, diags: []ruleAt{{diag.ComponentWrongKind, "mcp.json"}}},
		{name: "mcp.json symlink to directory", ok: true, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"conf/x": "x"})
			symlink(t, "conf", filepath.Join(root, "mcp.json"))
		}, diags: []ruleAt{{diag.ComponentWrongKind, "mcp.json"}}},
		{name: "command through symlinked dir inside", ok: true, servers: []string{"s"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"real/server": "#!/bin/sh\n", "mcp.json": mcpJSON(`"s": {"type": "stdio", "command": "./bin/server"}`)})
			symlink(t, "real", filepath.Join(root, "bin"))
		}},
		{name: "command through symlinked dir outside", ok: true, servers: []string{"ok"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, out, map[string]string{"bin/server": "#!/bin/sh\n"})
			writeTree(t, root, map[string]string{"mcp.json": mcpJSON(`"evil": {"type": "stdio", "command": "./bin/server"}, "ok": {"type": "stdio", "command": "ok"}`)})
			symlink(t, filepath.Join(out, "bin"), filepath.Join(root, "bin"))
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "evil"}}},
		{name: "command symlink file outside", ok: true, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"mcp.json": mcpJSON(`"evil": {"type": "stdio", "command": "./run"}`)})
			symlink(t, "/bin/sh", filepath.Join(root, "run"))
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "evil"}}},
		{name: "command dangling symlink to outside", ok: true, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"mcp.json": mcpJSON(`"evil": {"type": "stdio", "command": "./bin/run"}`)})
			symlink(t, filepath.Join(out, "not-yet"), filepath.Join(root, "bin"))
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "evil"}}},
		{name: "cwd through symlink outside", ok: true, servers: []string{"inside"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			writeTree(t, root, map[string]string{"work/x": "", "mcp.json": mcpJSON(`"evil": {"type": "stdio", "command": "s", "cwd": "./w"}, "evil2": {"type": "stdio", "command": "s", "cwd": "${PLUGIN_ROOT}/w/sub"}, "inside": {"type": "stdio", "command": "s", "cwd": "./in"}`)})
			symlink(t, out, filepath.Join(root, "w"))
			symlink(t, "work", filepath.Join(root, "in"))
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "evil"}, {diag.PathEscapesPluginRoot, "evil2"}}},
		{name: "data cwd through symlink outside the data dir", ok: true, servers: []string{"fine"}, setup: func(t *testing.T, root, out string) {
			base(t, root)
			data := DataDir(root, "demo")
			symlink(t, out, filepath.Join(data, "cache"))
			writeTree(t, root, map[string]string{"mcp.json": mcpJSON(`"evil": {"type": "stdio", "command": "s", "cwd": "${PLUGIN_DATA}/cache"}, "fine": {"type": "stdio", "command": "s", "cwd": "${PLUGIN_DATA}/state"}`)})
		}, diags: []ruleAt{{diag.PathEscapesPluginRoot, "evil"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			root := filepath.Join(tmp, "plugins", "demo")
			outside := filepath.Join(tmp, "outside")
			for _, d := range []string{root, outside} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			c.setup(t, root, outside)
			res := Load(root)
			if res.OK() != c.ok {
				t.Fatalf("OK() = %v, want %v; diags %v", res.OK(), c.ok, res.Diagnostics)
			}
			if got, want := rulesOf(res.Diagnostics), wantRules(c.diags...); !reflect.DeepEqual(got, want) {
				t.Errorf("diagnostics %v, want %v\n%v", got, want, res.Diagnostics)
			}
			checkDiagnostics(t, res.Diagnostics)
			if res.Plugin == nil {
				return
			}
			var skills, servers []string
			for _, s := range res.Plugin.Skills {
				skills = append(skills, s.Name)
				if !within(res.Plugin.Root, s.Path) || !within(res.Plugin.Root, s.Dir) {
					t.Errorf("skill %s path %s / dir %s outside root", s.Name, s.Path, s.Dir)
				}
			}
			for _, s := range res.Plugin.Servers {
				servers = append(servers, s.Name)
			}
			if !reflect.DeepEqual(skills, c.skills) || !reflect.DeepEqual(servers, c.servers) {
				t.Errorf("skills %v servers %v, want %v %v", skills, servers, c.skills, c.servers)
			}
		})
	}
}

// TestSymlinkedRoot loads a plugin through a symlink to its directory: the
// root is reported resolved, and PLUGIN_DATA follows the resolved root.
func TestSymlinkedRoot(t *testing.T) {
	tmp := t.TempDir()
	real := filepath.Join(tmp, "store", "demo-1.0.0")
	writeTree(t, real, map[string]string{
		"plugin.json":           goodManifest,
		"skills/greet/SKILL.md": goodSkill("greet"),
		"mcp.json":              `{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"s": {"type": "stdio", "command": "./bin/s", "cwd": "./"}}}`,
		"bin/s":                 "#!/bin/sh\n",
	})
	link := filepath.Join(tmp, "plugins", "demo")
	symlink(t, real, link)
	res := Load(link)
	if !res.OK() || len(res.Diagnostics) != 0 {
		t.Fatalf("load through symlinked root: %v", res.Diagnostics)
	}
	wantRoot, _ := filepath.EvalSymlinks(real)
	if res.Plugin.Root != wantRoot {
		t.Errorf("Root = %s, want %s", res.Plugin.Root, wantRoot)
	}
	s := res.Plugin.Servers[0]
	if s.PluginRoot != wantRoot || s.PluginName != "demo" || s.PluginData != filepath.Join(filepath.Dir(wantRoot), "data", "demo") {
		t.Errorf("server plugin fields: %+v", s)
	}
	if res.Plugin.Skills[0].Path != filepath.Join(wantRoot, "skills", "greet", "SKILL.md") {
		t.Errorf("skill path %s", res.Plugin.Skills[0].Path)
	}
}

// TestRootProblems covers a missing directory and a file given as root.
func TestRootProblems(t *testing.T) {
	tmp := t.TempDir()
	writeTree(t, tmp, map[string]string{"file": "x"})
	for _, dir := range []string{filepath.Join(tmp, "absent"), filepath.Join(tmp, "file")} {
		res := Load(dir)
		if res.OK() || !reflect.DeepEqual(rulesOf(res.Diagnostics), wantRules(ruleAt{diag.ManifestMissing, "plugin.json"})) {
			t.Errorf("Load(%s) = %v", dir, res.Diagnostics)
		}
	}
}

// TestManifestTable exercises each way plugin.json can be wrong, beyond the
// corpus: encodings, nesting, null and boundary names.
func TestManifestTable(t *testing.T) {
	const S = `"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"`
	cases := []struct {
		name, json string
		ok         bool
		rules      []diag.Rule
	}{
		{"empty file", ``, false, []diag.Rule{diag.ManifestInvalid}},
		{"whitespace only", "  \n", false, []diag.Rule{diag.ManifestInvalid}},
		{"bom", "\ufeff{" + S + `, "name": "a"}`, false, []diag.Rule{diag.ManifestInvalid}},
		{"invalid utf-8", "{" + S + `, "name": "a", "description": "` + "\xff" + `"}`, false, []diag.Rule{diag.ManifestInvalid}},
		{"string top level", `"plugin"`, false, []diag.Rule{diag.ManifestInvalid}},
		{"null top level", `null`, false, []diag.Rule{diag.ManifestInvalid}},
		{"two objects", `{` + S + `, "name": "a"} {}`, false, []diag.Rule{diag.ManifestInvalid}},
		{"schema with trailing space", `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json ", "name": "a"}`, false, []diag.Rule{diag.UnsupportedSchemaVersion}},
		{"schema http", `{"$schema": "http://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "a"}`, false, []diag.Rule{diag.UnsupportedSchemaVersion}},
		{"name single char", `{` + S + `, "name": "a"}`, true, nil},
		{"name digits", `{` + S + `, "name": "lint3r"}`, true, nil},
		{"name 64", `{` + S + `, "name": "` + strings.Repeat("a", 64) + `"}`, true, nil},
		{"name trailing period", `{` + S + `, "name": "a."}`, false, []diag.Rule{diag.InvalidName}},
		{"name underscore", `{` + S + `, "name": "a_b"}`, false, []diag.Rule{diag.InvalidName}},
		{"name unicode", `{` + S + `, "name": "café"}`, false, []diag.Rule{diag.InvalidName}},
		{"name slash", `{` + S + `, "name": "../etc"}`, false, []diag.Rule{diag.InvalidName}},
		{"name null", `{` + S + `, "name": null}`, false, []diag.Rule{diag.ManifestInvalid}},
		{"keywords null", `{` + S + `, "name": "a", "keywords": null}`, false, []diag.Rule{diag.ManifestInvalid}},
		{"keywords object", `{` + S + `, "name": "a", "keywords": {"a": "b"}}`, false, []diag.Rule{diag.ManifestInvalid}},
		{"author empty object", `{` + S + `, "name": "a", "author": {}}`, true, nil},
		{"author duplicate key", `{` + S + `, "name": "a", "author": {"name": "x", "name": "y"}}`, false, []diag.Rule{diag.ManifestInvalid}},
		{"extensions null", `{` + S + `, "name": "a", "extensions": null}`, true, []diag.Rule{diag.ExtensionsNotAnObject}},
		{"extensions string", `{` + S + `, "name": "a", "extensions": "x"}`, true, []diag.Rule{diag.ExtensionsNotAnObject}},
		{"extensions empty", `{` + S + `, "name": "a", "extensions": {}}`, true, nil},
		// §8.1: a namespace this client does not implement is ignored
		// without validating its value, whatever its JSON type.
		{"extension null member", `{` + S + `, "name": "a", "extensions": {"com.x": null}}`, true, nil},
		{"extension number member", `{` + S + `, "name": "a", "extensions": {"com.other.client": 5}}`, true, nil},
		{"extension members of every type", `{` + S + `, "name": "a", "extensions": {"a": "s", "b": [1], "c": true, "d": {}, "e": -0.5e9}}`, true, nil},
		{"extension namespace twice", `{` + S + `, "name": "a", "extensions": {"com.x": 1, "com.x": {}}}`, false, []diag.Rule{diag.ManifestInvalid}},
		{"extension contents with duplicates untouched", `{` + S + `, "name": "a", "extensions": {"com.x": {"k": 1, "k": [2]}}}`, true, nil},
		{"unknown fields each reported", `{` + S + `, "name": "a", "Name": "b", "x": 1, "y": null}`, true, []diag.Rule{diag.UnknownField, diag.UnknownField, diag.UnknownField}},
		{"duplicate schema", `{` + S + `, ` + S + `, "name": "a"}`, false, []diag.Rule{diag.ManifestInvalid}},
		{"deep nesting in extension", `{` + S + `, "name": "a", "extensions": {"com.x": ` + strings.Repeat(`{"a":`, 500) + `1` + strings.Repeat(`}`, 500) + `}}`, true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"plugin.json": c.json})
			res := Load(dir)
			if res.OK() != c.ok {
				t.Fatalf("OK() = %v, want %v: %v", res.OK(), c.ok, res.Diagnostics)
			}
			var got []diag.Rule
			for _, d := range res.Diagnostics {
				got = append(got, d.Rule)
				if d.Origin != "plugin.json" {
					t.Errorf("origin %q", d.Origin)
				}
			}
			if !reflect.DeepEqual(got, c.rules) {
				t.Errorf("rules %v, want %v: %v", got, c.rules, res.Diagnostics)
			}
		})
	}
}

// TestManifestValues checks that a full manifest is read into every field.
func TestManifestValues(t *testing.T) {
	res := Load(filepath.Join("testdata", "conformance", "02-full-manifest", "plugin"))
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	m := res.Plugin.Manifest
	want := Manifest{
		Schema: manifestSchemaV1, Name: "plugin-name", Version: "1.2.0", Description: "Brief plugin description",
		Author:   &Author{Name: "Author Name", Email: "author@example.com", URL: "https://example.com"},
		Homepage: "https://docs.example.com/plugin", Repository: "https://github.com/example/plugin", License: "MIT",
		Keywords: []string{"keyword1", "keyword2"},
	}
	ext := m.Extensions
	m.Extensions = nil
	if !reflect.DeepEqual(m, want) {
		t.Errorf("manifest %+v\nwant %+v", m, want)
	}
	var setting map[string]bool
	if err := json.Unmarshal(ext["com.example.client"], &setting); err != nil || !setting["setting"] || len(ext) != 1 {
		t.Errorf("extensions %s (%v)", ext, err)
	}
}

// TestSchemaVersionMismatch uses a client that recognizes a second
// (hypothetical) Agent Plugins version for mcp.json, so that a recognized
// but different version reaches the mismatch rule of §10.1.
func TestSchemaVersionMismatch(t *testing.T) {
	const future = "https://agent-plugins.org/schemas/1.1.0/mcp.schema.json"
	vs := defaultVersions()
	vs.mcp[future] = "1.1.0"
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"plugin.json":           goodManifest,
		"skills/greet/SKILL.md": goodSkill("greet"),
		"mcp.json":              `{"$schema": "` + future + `", "mcpServers": {"s": {"type": "stdio", "command": "s"}}}`,
	})
	res := load(dir, vs)
	if !res.OK() || len(res.Plugin.Servers) != 0 || len(res.Plugin.Skills) != 1 {
		t.Fatalf("want plugin with skill and MCP disabled: %+v %v", res.Plugin, res.Diagnostics)
	}
	if got := rulesOf(res.Diagnostics); !reflect.DeepEqual(got, wantRules(ruleAt{diag.SchemaVersionMismatch, "mcp.json"})) {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
	// The same table with a matching manifest version loads the server.
	vs.manifest["https://agent-plugins.org/schemas/1.1.0/plugin.schema.json"] = "1.1.0"
	writeTree(t, dir, map[string]string{"plugin.json": `{"$schema": "https://agent-plugins.org/schemas/1.1.0/plugin.schema.json", "name": "demo"}`})
	res = load(dir, vs)
	if !res.OK() || len(res.Plugin.Servers) != 1 || len(res.Diagnostics) != 0 {
		t.Errorf("matching versions: %+v %v", res.Plugin, res.Diagnostics)
	}
	// The default client does not recognize 1.1.0 at all.
	if res := Load(dir); res.OK() || !diag.Has(res.Diagnostics, diag.UnsupportedSchemaVersion) {
		t.Errorf("default client: %v", res.Diagnostics)
	}
}

// TestSkillFields checks the values read from a valid SKILL.md and the
// front matter edge cases of the Agent Skills rules.
func TestSkillFields(t *testing.T) {
	res := Load(filepath.Join("testdata", "conformance", "41-skill-optional-fields", "plugin"))
	if !res.OK() || len(res.Plugin.Skills) != 1 {
		t.Fatal(res.Diagnostics)
	}
	s := res.Plugin.Skills[0]
	if s.Name != "greet" || s.License != "Apache-2.0" || s.Compatibility != "Requires git" ||
		!reflect.DeepEqual(s.Metadata, map[string]string{"author": "acme", "version": "1.0"}) || s.AllowedTools != "Bash(git:*) Read" {
		t.Errorf("skill %+v", s)
	}

	cases := []struct {
		name, md string
		ok       bool
	}{
		{"crlf line endings", "---\r\nname: x\r\ndescription: d\r\n---\r\nbody", true},
		{"no body, no final newline", "---\nname: x\ndescription: d\n---", true},
		{"quoted numeric name", "---\nname: \"x\"\ndescription: \"1\"\n---\n", true},
		{"description unquoted number", "---\nname: x\ndescription: 42\n---\n", false},
		{"description blank", "---\nname: x\ndescription: \"   \"\n---\n", false},
		{"description null", "---\nname: x\ndescription:\n---\n", false},
		{"description multibyte 1024", "---\nname: x\ndescription: " + strings.Repeat("é", 1024) + "\n---\n", true},
		{"name list", "---\nname: [x]\ndescription: d\n---\n", false},
		{"duplicate key", "---\nname: x\nname: x\ndescription: d\n---\n", false},
		{"front matter not mapping", "---\n- name\n---\n", false},
		{"empty front matter", "---\n---\nbody", false},
		{"leading blank line", "\n---\nname: x\ndescription: d\n---\n", false},
		{"indented opener", " ---\nname: x\ndescription: d\n---\n", false},
		{"metadata nested", "---\nname: x\ndescription: d\nmetadata:\n  a:\n    b: c\n---\n", false},
		{"alias value", "---\nname: &n x\ndescription: *n\n---\n", false},
		{"license number", "---\nname: x\ndescription: d\nlicense: 2\n---\n", false},
		{"allowed-tools list", "---\nname: x\ndescription: d\nallowed-tools: [Read]\n---\n", false},
		{"compatibility empty", "---\nname: x\ndescription: d\ncompatibility: \"\"\n---\n", false},
		{"invalid utf-8", "---\nname: x\ndescription: \xff\n---\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"plugin.json": goodManifest, "skills/x/SKILL.md": c.md})
			res := Load(dir)
			got := len(res.Plugin.Skills) == 1
			if got != c.ok {
				t.Fatalf("loaded = %v, want %v: %v", got, c.ok, res.Diagnostics)
			}
			if !c.ok && !reflect.DeepEqual(rulesOf(res.Diagnostics), wantRules(ruleAt{diag.InvalidSkill, "skills/x/SKILL.md"})) {
				t.Errorf("diagnostics %v", res.Diagnostics)
			}
		})
	}
}

// TestSkillBody reads the body lazily and refuses once SKILL.md has been
// swapped for a symlink that leaves the plugin.
func TestSkillBody(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "demo")
	writeTree(t, root, map[string]string{"plugin.json": goodManifest, "skills/greet/SKILL.md": goodSkill("greet")})
	writeTree(t, tmp, map[string]string{"secret.md": "---\nname: greet\ndescription: d\n---\nTOP SECRET\n"})
	res := Load(root)
	if !res.OK() || len(res.Plugin.Skills) != 1 {
		t.Fatal(res.Diagnostics)
	}
	s := res.Plugin.Skills[0]
	body, err := s.Body()
	if err != nil || body != "# greet\nBody of greet.\n" {
		t.Fatalf("Body() = %q, %v", body, err)
	}
	// An attacker with write access swaps SKILL.md for a link outside.
	md := filepath.Join(root, "skills", "greet", "SKILL.md")
	if err := os.Remove(md); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(tmp, "secret.md"), md)
	body, err = s.Body()
	var pe *Error
	if !errors.As(err, &pe) || pe.Rule != diag.PathEscapesPluginRoot || strings.Contains(body, "SECRET") {
		t.Fatalf("Body() after swap = %q, %v", body, err)
	}
	if d := pe.Diagnostic(); d.Rule != diag.PathEscapesPluginRoot || d.Origin != "skills/greet/SKILL.md" {
		t.Errorf("diagnostic %+v", d)
	}
	if _, err := (Skill{Name: "x"}).Body(); err == nil {
		t.Error("Body of a zero Skill succeeded")
	}
}
