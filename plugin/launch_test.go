package plugin

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// TestParseServerTable drives ParseServer through each way an entry can be
// wrong (§7.2.1, §9.2), one entry at a time, against a real plugin root.
func TestParseServerTable(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"bin/server": "#!/bin/sh\n"})
	v := Vars{Root: root, Data: DataDir(root, "demo")}
	cases := []struct {
		name, entry string
		ok          bool
		rules       []diag.Rule
	}{
		{"stdio minimal", `{"type": "stdio", "command": "node"}`, true, nil},
		{"stdio full", `{"type": "stdio", "command": "./bin/server", "args": [], "env": {}, "cwd": "./"}`, true, nil},
		{"http minimal", `{"type": "streamable-http", "url": "https://h.example/mcp"}`, true, nil},
		{"sse with headers", `{"type": "sse", "url": "https://h.example/sse", "headers": {"X-A": ""}}`, true, nil},
		{"not json", `{"type":`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"array", `[]`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"type null", `{"type": null, "command": "x"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"type case", `{"type": "STDIO", "command": "x"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"type http", `{"type": "http", "url": "https://h.example"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"duplicate field", `{"type": "stdio", "command": "a", "command": "b"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"two unknown fields", `{"type": "stdio", "command": "a", "x": 1, "y": 2}`, false, []diag.Rule{diag.InvalidServerEntry, diag.InvalidServerEntry}},
		{"headers on stdio", `{"type": "stdio", "command": "a", "headers": {}}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"command on http", `{"type": "streamable-http", "url": "https://h.example", "command": "a"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"command tab", `{"type": "stdio", "command": "a\tb"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"command trailing space", `{"type": "stdio", "command": "a "}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"command backslash", `{"type": "stdio", "command": "bin\\server"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"command dot slash only", `{"type": "stdio", "command": "./"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"command dot dot slash", `{"type": "stdio", "command": "./../../etc/passwd"}`, false, []diag.Rule{diag.PathEscapesPluginRoot}},
		{"command data placeholder", `{"type": "stdio", "command": "${PLUGIN_DATA}/x"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"command bare with dots", `{"type": "stdio", "command": "python3.12"}`, true, nil},
		{"command nul", `{"type": "stdio", "command": "a\u0000b"}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"cwd empty", `{"type": "stdio", "command": "a", "cwd": ""}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"cwd dot", `{"type": "stdio", "command": "a", "cwd": "."}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"cwd data exact", `{"type": "stdio", "command": "a", "cwd": "${PLUGIN_DATA}"}`, true, nil},
		{"cwd data escape deep", `{"type": "stdio", "command": "a", "cwd": "${PLUGIN_DATA}/a/../../.."}`, false, []diag.Rule{diag.PathEscapesPluginRoot}},
		{"cwd root in data", `{"type": "stdio", "command": "a", "cwd": "${PLUGIN_DATA}/${PLUGIN_ROOT}"}`, true, nil},
		{"env reserved and bad", `{"type": "stdio", "command": "a", "env": {"PLUGIN_ROOT": "x", "A=B": "y"}}`, false, []diag.Rule{diag.InvalidServerEntry, diag.ReservedEnvName}},
		{"env empty name", `{"type": "stdio", "command": "a", "env": {"": "y"}}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"env lowercase plugin_root", `{"type": "stdio", "command": "a", "env": {"plugin_root": "y"}}`, runtime.GOOS != "windows", nil},
		{"env duplicate", `{"type": "stdio", "command": "a", "env": {"A": "1", "A": "2"}}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"env value nul", `{"type": "stdio", "command": "a", "env": {"A": "x\u0000"}}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"url with space", `{"type": "sse", "url": "https://h.example/a b"}`, false, []diag.Rule{diag.InvalidURL}},
		{"url empty fragment", `{"type": "sse", "url": "https://h.example/#"}`, false, []diag.Rule{diag.InvalidURL}},
		{"url opaque", `{"type": "sse", "url": "https:h.example"}`, false, []diag.Rule{diag.InvalidURL}},
		{"url user only", `{"type": "sse", "url": "https://user@h.example"}`, false, []diag.Rule{diag.InvalidURL}},
		{"url http 127.255.255.254", `{"type": "sse", "url": "http://127.255.255.254/"}`, true, nil},
		{"url http 128.0.0.1", `{"type": "sse", "url": "http://128.0.0.1/"}`, false, []diag.Rule{diag.InvalidURL}},
		{"url http ::2", `{"type": "sse", "url": "http://[::2]/"}`, false, []diag.Rule{diag.InvalidURL}},
		{"url http LOCALHOST", `{"type": "sse", "url": "http://LOCALHOST:1/"}`, true, nil},
		{"url http sub.localhost", `{"type": "sse", "url": "http://a.localhost/"}`, false, []diag.Rule{diag.InvalidURL}},
		{"url http 0.0.0.0", `{"type": "sse", "url": "http://0.0.0.0/"}`, false, []diag.Rule{diag.InvalidURL}},
		{"url bad port", `{"type": "sse", "url": "https://h.example:x/"}`, false, []diag.Rule{diag.InvalidURL}},
		{"url placeholder literal", `{"type": "sse", "url": "https://${PLUGIN_ROOT}/"}`, false, []diag.Rule{diag.InvalidURL}},
		{"header value with tab inside", `{"type": "sse", "url": "https://h.example", "headers": {"A": "a\tb"}}`, true, nil},
		{"header value nul", `{"type": "sse", "url": "https://h.example", "headers": {"A": "a\u0000"}}`, false, []diag.Rule{diag.InvalidHeader}},
		{"header value lf", `{"type": "sse", "url": "https://h.example", "headers": {"A": "a\nb"}}`, false, []diag.Rule{diag.InvalidHeader}},
		{"header value del", `{"type": "sse", "url": "https://h.example", "headers": {"A": "a\u007f"}}`, false, []diag.Rule{diag.InvalidHeader}},
		{"header value trailing space", `{"type": "sse", "url": "https://h.example", "headers": {"A": "a "}}`, false, []diag.Rule{diag.InvalidHeader}},
		{"header value obs-text", `{"type": "sse", "url": "https://h.example", "headers": {"A": "café"}}`, true, nil},
		{"header name colon", `{"type": "sse", "url": "https://h.example", "headers": {"A:B": "c"}}`, false, []diag.Rule{diag.InvalidHeader}},
		{"header name empty", `{"type": "sse", "url": "https://h.example", "headers": {"": "c"}}`, false, []diag.Rule{diag.InvalidHeader}},
		{"header exact duplicate", `{"type": "sse", "url": "https://h.example", "headers": {"A": "1", "A": "2"}}`, false, []diag.Rule{diag.InvalidHeader}},
		{"headers not object", `{"type": "sse", "url": "https://h.example", "headers": ["A: b"]}`, false, []diag.Rule{diag.InvalidServerEntry}},
		{"secret cookie", `{"type": "sse", "url": "https://h.example", "headers": {"Cookie": "s=1"}}`, true, []diag.Rule{diag.SecretInConfig}},
		{"secret api key header", `{"type": "sse", "url": "https://h.example", "headers": {"X-Api-Key": "abc"}}`, true, []diag.Rule{diag.SecretInConfig}},
		{"secret query", `{"type": "sse", "url": "https://h.example/?api_key=abc"}`, true, []diag.Rule{diag.SecretInConfig}},
		{"secret arg", `{"type": "stdio", "command": "a", "args": ["--token=xoxb-1234567890-abcdef"]}`, true, []diag.Rule{diag.SecretInConfig}},
		{"secret aws in env", `{"type": "stdio", "command": "a", "env": {"ID": "AKIAIOSFODNN7EXAMPLE"}}`, true, []diag.Rule{diag.SecretInConfig}},
		{"secret password env", `{"type": "stdio", "command": "a", "env": {"DB_PASSWORD": "hunter2"}}`, true, []diag.Rule{diag.SecretInConfig}},
		{"not secret: key path", `{"type": "stdio", "command": "a", "env": {"SSH_KEY": "${PLUGIN_ROOT}/k"}}`, true, nil},
		{"not secret: empty token", `{"type": "stdio", "command": "a", "env": {"TOKEN": ""}}`, true, nil},
		{"not secret: short sk-", `{"type": "stdio", "command": "a", "args": ["sk-x"]}`, true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, ds, ok := ParseServer("srv", json.RawMessage(c.entry), v)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v: %v", ok, c.ok, ds)
			}
			var got []diag.Rule
			for _, d := range ds {
				got = append(got, d.Rule)
				if d.Origin != "srv" || !strings.Contains(d.Message, `server "srv"`) {
					t.Errorf("diagnostic does not name the server: %+v", d)
				}
			}
			if !reflect.DeepEqual(got, c.rules) {
				t.Errorf("rules %v, want %v: %v", got, c.rules, ds)
			}
			if ok && (sc.Name != "srv" || sc.PluginRoot != root || sc.PluginData != v.Data) {
				t.Errorf("config %+v", sc)
			}
		})
	}
}

// TestSecretNotEchoed makes sure a warning never repeats the secret value.
func TestSecretNotEchoed(t *testing.T) {
	const tok = "ghp_SuperSecretValue0123456789"
	_, ds, ok := ParseServer("s", json.RawMessage(`{"type": "streamable-http", "url": "https://h.example", "headers": {"Authorization": "token `+tok+`", "X-T": "`+tok+`"}}`), Vars{})
	if !ok || len(ds) != 2 {
		t.Fatalf("ok=%v %v", ok, ds)
	}
	for _, d := range ds {
		if strings.Contains(d.Message, "SuperSecret") {
			t.Errorf("message echoes the secret: %s", d.Message)
		}
	}
	_, ds, _ = ParseServer("s", json.RawMessage(`{"type": "sse", "url": "https://me:hunter2@h.example"}`), Vars{})
	if len(ds) != 1 || strings.Contains(ds[0].Message, "hunter2") {
		t.Errorf("userinfo password echoed: %v", ds)
	}
}

// TestParseServerNoRoot covers inline servers with no plugin root.
func TestParseServerNoRoot(t *testing.T) {
	for entry, ok := range map[string]bool{
		`{"type": "stdio", "command": "node", "args": ["${PLUGIN_ROOT}"]}`: true,
		`{"type": "stdio", "command": "./bin/x"}`:                          false,
		`{"type": "stdio", "command": "node", "cwd": "./x"}`:               false,
		`{"type": "stdio", "command": "node", "cwd": "${PLUGIN_ROOT}/x"}`:  false,
		`{"type": "stdio", "command": "node", "cwd": "${PLUGIN_DATA}/x"}`:  true,
		`{"type": "stdio", "command": "node", "cwd": "${PLUGIN_DATA}/.."}`: false,
	} {
		if _, ds, got := ParseServer("s", json.RawMessage(entry), Vars{}); got != ok {
			t.Errorf("%s: ok = %v, want %v (%v)", entry, got, ok, ds)
		}
	}
}

func TestExpand(t *testing.T) {
	v := Vars{Root: "/p/demo", Data: "/p/data/demo"}
	cases := map[string]string{
		"":                                 "",
		"${PLUGIN_ROOT}":                   "/p/demo",
		"${PLUGIN_ROOT}/config/db.json":    "/p/demo/config/db.json",
		"--data=${PLUGIN_DATA}/x":          "--data=/p/data/demo/x",
		"${PLUGIN_DATA}${PLUGIN_ROOT}":     "/p/data/demo/p/demo",
		"$PLUGIN_ROOT":                     "$PLUGIN_ROOT",
		"${HOME}/x":                        "${HOME}/x",
		"${plugin_root}":                   "${plugin_root}",
		"${PLUGIN_ROOT":                    "${PLUGIN_ROOT",
		"$${PLUGIN_ROOT}}":                 "$/p/demo}",
		"${PLUGIN_${PLUGIN_ROOT}ROOT}":     "${PLUGIN_/p/demoROOT}",
		"%PLUGIN_ROOT% $(PLUGIN_ROOT) ~/x": "%PLUGIN_ROOT% $(PLUGIN_ROOT) ~/x",
	}
	for in, want := range cases {
		if got := Expand(in, v); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
	// Single pass: replacement text containing placeholders stays literal.
	tricky := Vars{Root: "${PLUGIN_DATA}", Data: "${PLUGIN_ROOT}"}
	if got := Expand("${PLUGIN_ROOT}|${PLUGIN_DATA}", tricky); got != "${PLUGIN_DATA}|${PLUGIN_ROOT}" {
		t.Errorf("recursive expansion: %q", got)
	}
}

func TestExpanded(t *testing.T) {
	sc := ServerConfig{Name: "s", Type: TransportStdio, Command: "./${PLUGIN_ROOT}",
		Args: []string{"${PLUGIN_ROOT}/a", "b"}, Env: map[string]string{"${PLUGIN_ROOT}": "${PLUGIN_DATA}/x"}, Cwd: "${PLUGIN_DATA}"}
	ex := sc.Expanded(Vars{Root: "/r", Data: "/d"})
	if ex.Command != "./${PLUGIN_ROOT}" || !reflect.DeepEqual(ex.Args, []string{"/r/a", "b"}) ||
		!reflect.DeepEqual(ex.Env, map[string]string{"${PLUGIN_ROOT}": "/d/x"}) || ex.Cwd != "/d" {
		t.Errorf("Expanded = %+v", ex)
	}
	if sc.Args[0] != "${PLUGIN_ROOT}/a" || sc.Env["${PLUGIN_ROOT}"] != "${PLUGIN_DATA}/x" {
		t.Error("Expanded mutated its receiver")
	}
}

// launchPlugin builds and loads a plugin whose mcp.json holds servers.
func launchPlugin(t *testing.T, files map[string]string, servers string) (*Plugin, string) {
	t.Helper()
	tmp := t.TempDir()
	root := filepath.Join(tmp, "plugins", "demo")
	files["plugin.json"] = goodManifest
	files["mcp.json"] = `{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {` + servers + `}}`
	writeTree(t, root, files)
	res := Load(root)
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	return res.Plugin, tmp
}

func server(t *testing.T, p *Plugin, name string) ServerConfig {
	t.Helper()
	for _, s := range p.Servers {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no server %q (have %+v)", name, p.Servers)
	return ServerConfig{}
}

// TestLaunchSpec resolves servers for launch and attacks the re-checks the
// way a plugin that changes after Load would.
func TestLaunchSpec(t *testing.T) {
	p, tmp := launchPlugin(t, map[string]string{"bin/server": "#!/bin/sh\n", "work/.keep": ""}, `
		"local": {"type": "stdio", "command": "./bin/server", "args": ["--root=${PLUGIN_ROOT}", "${PLUGIN_DATA}/db"], "env": {"CFG": "${PLUGIN_ROOT}/c.json", "PATH": "/nowhere"}},
		"bare": {"type": "stdio", "command": "node", "cwd": "./work"},
		"data": {"type": "stdio", "command": "node", "cwd": "${PLUGIN_DATA}/state"},
		"missing": {"type": "stdio", "command": "./bin/not-built"},
		"nocwd": {"type": "stdio", "command": "node", "cwd": "${PLUGIN_ROOT}/gone"},
		"remote": {"type": "streamable-http", "url": "https://h.example"}`)
	root := p.Root
	data, err := EnsureDataDir(root, "demo")
	if err != nil {
		t.Fatal(err)
	}

	spec, err := server(t, p, "local").LaunchSpec(Vars{})
	if err != nil {
		t.Fatal(err)
	}
	want := LaunchSpec{Path: filepath.Join(root, "bin", "server"), Args: []string{"--root=" + root, data + "/db"},
		Env: map[string]string{"CFG": root + "/c.json", "PATH": "/nowhere"}, Dir: root, Root: root, Data: data}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("LaunchSpec =\n%+v\nwant\n%+v", spec, want)
	}
	env := spec.Environ([]string{"HOME=/h", "PLUGIN_ROOT=/evil", "CFG=old", "PATH=/usr/bin"})
	wantEnv := []string{"HOME=/h", "PLUGIN_ROOT=" + root, "CFG=" + root + "/c.json", "PATH=/nowhere", "PLUGIN_DATA=" + data}
	if !reflect.DeepEqual(env, wantEnv) {
		t.Errorf("Environ = %v, want %v", env, wantEnv)
	}

	if spec, err := server(t, p, "bare").LaunchSpec(Vars{}); err != nil || !spec.Bare || spec.Path != "node" || spec.Dir != filepath.Join(root, "work") {
		t.Errorf("bare: %+v %v", spec, err)
	}
	// The data cwd must exist at launch; the launcher creates subdirs it wants.
	if _, err := server(t, p, "data").LaunchSpec(Vars{}); !isRule(err, diag.ConnectionFailure) {
		t.Errorf("data cwd missing: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(data, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	if spec, err := server(t, p, "data").LaunchSpec(Vars{}); err != nil || spec.Dir != filepath.Join(data, "state") {
		t.Errorf("data cwd: %+v %v", spec, err)
	}
	for _, name := range []string{"missing", "nocwd"} {
		if _, err := server(t, p, name).LaunchSpec(Vars{}); !isRule(err, diag.ConnectionFailure) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := server(t, p, "remote").LaunchSpec(Vars{}); !isRule(err, diag.InvalidServerEntry) {
		t.Errorf("remote: %v", err)
	}

	// Attack 1: after Load, bin/ is swapped for a link to a directory
	// outside the plugin holding a "server".
	outside := filepath.Join(tmp, "outside")
	writeTree(t, outside, map[string]string{"server": "#!/bin/sh\necho pwned\n"})
	if err := os.RemoveAll(filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(root, "bin"))
	if _, err := server(t, p, "local").LaunchSpec(Vars{}); !isRule(err, diag.PathEscapesPluginRoot) {
		t.Errorf("swapped command dir: %v", err)
	}
	// Attack 2: the cwd is swapped for a link outside.
	if err := os.RemoveAll(filepath.Join(root, "work")); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(root, "work"))
	if _, err := server(t, p, "bare").LaunchSpec(Vars{}); !isRule(err, diag.PathEscapesPluginRoot) {
		t.Errorf("swapped cwd: %v", err)
	}
	// Attack 3: the data cwd is swapped for a link into the plugin root
	// (outside the data directory).
	if err := os.RemoveAll(filepath.Join(data, "state")); err != nil {
		t.Fatal(err)
	}
	symlink(t, root, filepath.Join(data, "state"))
	if _, err := server(t, p, "data").LaunchSpec(Vars{}); !isRule(err, diag.PathEscapesPluginRoot) {
		t.Errorf("swapped data cwd: %v", err)
	}
	// A hand-built config with a reserved env name or a bad form is refused.
	bad := ServerConfig{Name: "x", Type: TransportStdio, Command: "node", Env: map[string]string{"PLUGIN_DATA": "/x"}, PluginRoot: root}
	if _, err := bad.LaunchSpec(Vars{}); !isRule(err, diag.ReservedEnvName) {
		t.Errorf("reserved env: %v", err)
	}
	bad = ServerConfig{Name: "x", Type: TransportStdio, Command: "node", Cwd: "/tmp", PluginRoot: root}
	if _, err := bad.LaunchSpec(Vars{}); !isRule(err, diag.InvalidServerEntry) {
		t.Errorf("bad cwd form: %v", err)
	}
	bad = ServerConfig{Name: "x", Type: TransportStdio, Command: "sh -c evil", PluginRoot: root}
	if _, err := bad.LaunchSpec(Vars{}); !isRule(err, diag.InvalidServerEntry) {
		t.Errorf("bad command: %v", err)
	}
}

func isRule(err error, rule diag.Rule) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Rule == rule && pe.Diagnostic().Rule == rule && pe.Error() != ""
}

func TestDataDir(t *testing.T) {
	if got := DataDir("/home/alex/.agents/plugins/devtools", "devtools"); got != "/home/alex/.agents/plugins/data/devtools" {
		t.Errorf("DataDir = %s", got)
	}
	tmp := t.TempDir()
	root := filepath.Join(tmp, "plugins", "demo")
	writeTree(t, root, map[string]string{"plugin.json": goodManifest})
	dir, err := EnsureDataDir(root, "demo")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 || dir != filepath.Join(tmp, "plugins", "data", "demo") {
		t.Fatalf("data dir %s: %v %v", dir, st, err)
	}
	// Contents survive a second call (and an "update" of the plugin).
	writeTree(t, dir, map[string]string{"state.db": "keep"})
	if _, err := EnsureDataDir(root, "demo"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "state.db")); err != nil || string(b) != "keep" {
		t.Errorf("contents lost: %q %v", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("write check left files behind: %v", entries)
	}
	// A file where the directory should be.
	other := filepath.Join(tmp, "plugins", "data", "other")
	writeTree(t, filepath.Dir(other), map[string]string{"other": "x"})
	if _, err := EnsureDataDir(root, "other"); !isRule(err, diag.ConnectionFailure) {
		t.Errorf("file in the way: %v", err)
	}
	if _, err := EnsureDataDir(root, "../escape"); !isRule(err, diag.InvalidName) {
		t.Errorf("bad name: %v", err)
	}
}
