package plugin

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// FuzzManifest feeds arbitrary bytes to the plugin.json parser. Properties:
// it never panics; every diagnostic has a known rule; a manifest it accepts
// re-marshals to JSON that it accepts again, unchanged.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(goodManifest))
	f.Add([]byte(`{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "a.b-c", "version": "x", "author": {"name": "n", "email": "e", "url": "u"}, "keywords": ["k"], "extensions": {"com.x": {"a": [1, {"b": null}]}}, "other": 1}`))
	f.Add([]byte(`{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "a", "extensions": [1]}`))
	f.Add([]byte(`{"name": "a", "name": "b"}`))
	f.Add([]byte(`{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "a", "extensions": {"com.other.client": 5, "b": null, "c": "s", "d": [true]}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, version, ds, ok := parseManifest(data, defaultVersions())
		for _, d := range ds {
			if !d.Rule.Known() || d.Message == "" {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
		if !ok {
			if m.Name != "" || version != "" {
				t.Fatalf("rejected manifest returned values: %+v", m)
			}
			return
		}
		if version != "1.0.0" || pluginNameProblem(m.Name) != "" {
			t.Fatalf("accepted manifest with version %q name %q", version, m.Name)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, _, ds2, ok2 := parseManifest(out, defaultVersions())
		if !ok2 || len(ds2) != 0 {
			t.Fatalf("re-marshaled manifest %s rejected: %v", out, ds2)
		}
		out2, _ := json.Marshal(m2)
		if !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the manifest:\n%s\n%s", out, out2)
		}
	})
}

// entryJSON marshals a ServerConfig back to its mcp.json entry form.
func entryJSON(sc ServerConfig) json.RawMessage {
	m := map[string]any{"type": sc.Type}
	if sc.Type == TransportStdio {
		m["command"] = sc.Command
		if sc.Args != nil {
			m["args"] = sc.Args
		}
		if sc.Env != nil {
			m["env"] = sc.Env
		}
		if sc.Cwd != "" {
			m["cwd"] = sc.Cwd
		}
	} else {
		m["url"] = sc.URL
		if sc.Headers != nil {
			m["headers"] = sc.Headers
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// FuzzMCPConfig feeds arbitrary bytes to the mcp.json parser against a real
// (empty) plugin root. Properties: it never panics; diagnostics have known
// rules; MCP disabled means no servers; every accepted server is valid on
// its own and round-trips through ParseServer unchanged; servers are sorted
// and plain-http URLs are loopback only.
func FuzzMCPConfig(f *testing.F) {
	f.Add([]byte(`{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"a": {"type": "stdio", "command": "./bin/a", "args": ["${PLUGIN_ROOT}"], "env": {"K": "v"}, "cwd": "${PLUGIN_DATA}/x"}, "b": {"type": "streamable-http", "url": "https://x.example.com/mcp", "headers": {"X-A": "b"}}, "c": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}}`))
	f.Add([]byte(`{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"a": {"type": "stdio", "command": "./../x", "cwd": "./.."}, "a": {}}}`))
	f.Add([]byte(`{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"h": {"type": "sse", "url": "https://u:p@h/#f", "headers": {"A": "b\r\n", "a": "c"}}}}`))
	f.Add([]byte(`{"mcpServers": {}}`))
	root := f.TempDir()
	vars := Vars{Root: root, Data: DataDir(root, "fuzz")}
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, ds, enabled := parseMCP(data, "1.0.0", defaultVersions(), vars)
		for _, d := range ds {
			if !d.Rule.Known() || d.Message == "" {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
		if !enabled && len(servers) != 0 {
			t.Fatal("MCP disabled but servers returned")
		}
		for i, sc := range servers {
			if i > 0 && servers[i-1].Name >= sc.Name {
				t.Fatalf("servers not sorted/unique: %q then %q", servers[i-1].Name, sc.Name)
			}
			if sc.Type != TransportStdio && strings.HasPrefix(strings.ToLower(sc.URL), "http:") {
				if why := urlProblem(sc.URL); why != "" {
					t.Fatalf("accepted bad url %q: %s", sc.URL, why)
				}
			}
			again, ds2, ok := ParseServer(sc.Name, entryJSON(sc), vars)
			if !ok {
				t.Fatalf("accepted server %q rejected on re-parse: %v", sc.Name, ds2)
			}
			for _, d := range ds2 {
				if d.Rule != diag.SecretInConfig {
					t.Fatalf("re-parse of %q gave %v", sc.Name, d)
				}
			}
			if !reflect.DeepEqual(again, sc) {
				t.Fatalf("round trip changed %q:\n%+v\n%+v", sc.Name, sc, again)
			}
		}
	})
}

// refExpand is an independent reference for Expand: strings.Replacer does a
// single leftmost-first pass and never rescans replacement text.
func refExpand(s string, v Vars) string {
	return strings.NewReplacer(placeholderRoot, v.Root, placeholderData, v.Data).Replace(s)
}

// FuzzExpand checks Expand against the reference, including values that
// themselves contain placeholders (single pass: they must stay literal).
func FuzzExpand(f *testing.F) {
	f.Add("${PLUGIN_ROOT}/bin", "/r", "/d")
	f.Add("${PLUGIN_DATA}${PLUGIN_ROOT}", "${PLUGIN_DATA}", "${PLUGIN_ROOT}")
	f.Add("${PLUGIN_${PLUGIN_ROOT}ROOT}", "x", "y")
	f.Add("$PLUGIN_ROOT ${HOME} ${plugin_root} ${PLUGIN_ROOT", "/r", "/d")
	f.Fuzz(func(t *testing.T, s, root, data string) {
		for _, v := range []Vars{{root, data}, {placeholderData, placeholderRoot}, {root + placeholderRoot, placeholderData + data}} {
			got, want := Expand(s, v), refExpand(s, v)
			if got != want {
				t.Fatalf("Expand(%q, %+v) = %q, want %q", s, v, got, want)
			}
		}
		// Placeholder-free text is returned unchanged.
		if !strings.Contains(s, placeholderRoot) && !strings.Contains(s, placeholderData) {
			if got := Expand(s, Vars{root, data}); got != s {
				t.Fatalf("Expand changed placeholder-free %q to %q", s, got)
			}
		}
	})
}
