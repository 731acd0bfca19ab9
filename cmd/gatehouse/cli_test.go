package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// run invokes the CLI in process and returns exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const goodManifest = `{"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json","name":"acme","surprise":1}`

const goodMCP = `{"$schema":"https://agent-plugins.org/schemas/1.0.0/mcp.schema.json","mcpServers":{
  "zeta":{"type":"streamable-http","url":"https://api.example.com/mcp"},
  "bank":{"type":"stdio","command":"bank-server"},
  "broken":{"type":"stdio"}}}`

const goodSkill = "---\nname: greet\ndescription: Greets people.\n---\nSay hello.\n"

func TestPluginCheckJSON(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"plugin.json":           goodManifest,
		"mcp.json":              goodMCP,
		"skills/greet/SKILL.md": goodSkill,
	})
	code, out, errOut := run(t, "plugin", "check", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, errOut, out)
	}
	var rep struct {
		OK          bool     `json:"ok"`
		Name        string   `json:"name"`
		Skills      []string `json:"skills"`
		MCPServers  []string `json:"mcpServers"`
		Diagnostics []struct {
			Section, Rule, Origin, Message string
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if !rep.OK || rep.Name != "acme" {
		t.Errorf("ok=%v name=%q", rep.OK, rep.Name)
	}
	if strings.Join(rep.Skills, ",") != "greet" {
		t.Errorf("skills = %v", rep.Skills)
	}
	// Sorted, and the broken entry is skipped, not fatal.
	if strings.Join(rep.MCPServers, ",") != "bank,zeta" {
		t.Errorf("mcpServers = %v", rep.MCPServers)
	}
	rules := map[string]string{}
	for _, d := range rep.Diagnostics {
		rules[d.Rule] = d.Origin
		if d.Message == "" {
			t.Errorf("diagnostic %s without message", d.Rule)
		}
	}
	if rules["unknown-field"] != "plugin.json" {
		t.Errorf("want unknown-field on plugin.json, got %v", rep.Diagnostics)
	}
	if _, ok := rules["invalid-server-entry"]; !ok {
		t.Errorf("want invalid-server-entry, got %v", rep.Diagnostics)
	}
}

func TestPluginCheckRejected(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"plugin.json":           `{"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json","name":"Bad--Name"}`,
		"skills/greet/SKILL.md": goodSkill,
	})
	code, out, _ := run(t, "plugin", "check", "--json", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout %s", code, out)
	}
	// The exact contract shape: ok false, empty lists (not null), reason among diagnostics.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"ok": "false", "skills": "[]", "mcpServers": "[]"} {
		if string(raw[k]) != want {
			t.Errorf("%s = %s, want %s", k, raw[k], want)
		}
	}
	var ds []struct{ Rule string }
	if err := json.Unmarshal(raw["diagnostics"], &ds); err != nil || len(ds) == 0 || ds[0].Rule != "invalid-name" {
		t.Errorf("diagnostics = %s", raw["diagnostics"])
	}

	// Missing manifest: rejected with manifest-missing, in text form too.
	empty := t.TempDir()
	code, out, _ = run(t, "plugin", "check", empty)
	if code != 1 || !strings.Contains(out, "rejected") || !strings.Contains(out, "manifest-missing") {
		t.Fatalf("exit %d, out %q", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"plugin", "check"},
		{"plugin", "check", "a", "b"},
		{"plugin", "check", "--no-such-flag", "x"},
		{"no-such-command"},
		{"plugin"},
	} {
		code, _, errOut := run(t, args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
		if !strings.Contains(errOut, "gatehouse:") {
			t.Errorf("%q: stderr %q does not say what is wrong", args, errOut)
		}
	}
}

// TestGroupCommands: each command that only holds subcommands, run bare or
// with a word that is not one of them, prints its help and exits 2 with a
// message naming its subcommands in order; each named one exists.
func TestGroupCommands(t *testing.T) {
	groups := map[string][]string{
		"runs":        {"list", "purge"},
		"approvals":   {"list", "approve", "deny"},
		"audit":       {"verify", "head", "export", "keygen"},
		"connections": {"list", "revoke", "rekey"},
		"drift":       {"list", "show"},
		"plugin":      {"check"},
		"store":       {"init"},
	}
	for group, subs := range groups {
		code, out, errOut := run(t, group)
		want := "gatehouse: " + group + " needs a subcommand (" + strings.Join(subs, ", ") + ")\n"
		if code != 2 || !strings.HasPrefix(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", group, code, errOut, want)
		}
		if !strings.Contains(out, "Usage:") {
			t.Errorf("%s: no help on stdout: %q", group, out)
		}
		for _, sub := range subs {
			if code, out, _ := run(t, group, sub, "--help"); code != 0 || !strings.Contains(out, "gatehouse "+group+" "+sub) {
				t.Errorf("%s %s --help: exit %d, out %q", group, sub, code, out)
			}
		}
		if code, _, errOut := run(t, group, "bogus"); code != 2 || !strings.Contains(errOut, `unknown command "bogus" for "gatehouse `+group+`"`) {
			t.Errorf("%s bogus: exit %d, stderr %q", group, code, errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "gatehouse ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("exit %d, out %q", code, out)
	}
	// --version prints the same line, and nothing else.
	if code, flag, _ := run(t, "--version"); code != 0 || flag != out {
		t.Fatalf("--version: exit %d, out %q; want %q", code, flag, out)
	}
}

// TestUsageNamesTheCommand: a usage error points at the help of the
// command that was run, not at the root's.
func TestUsageNamesTheCommand(t *testing.T) {
	for args, want := range map[string]string{
		"trust":                     "Run 'gatehouse trust --help' for usage.",
		"trust --bogus x":           "Run 'gatehouse trust --help' for usage.",
		"approvals approve":         "Run 'gatehouse approvals approve --help' for usage.",
		"drift list --no-such-flag": "Run 'gatehouse drift list --help' for usage.",
		"no-such-command":           "Run 'gatehouse --help' for usage.",
	} {
		code, _, errOut := run(t, strings.Fields(args)...)
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", args, code, errOut, want)
		}
	}
}

// TestFlagValueNames: flags show what their value is, once: --listing
// takes a FINGERPRINT (not the words of its help text), --by a NAME with
// one default.
func TestFlagValueNames(t *testing.T) {
	_, out, _ := run(t, "trust", "--help")
	if !strings.Contains(out, "--listing FINGERPRINT ") {
		t.Errorf("trust --help does not name --listing's value FINGERPRINT:\n%s", out)
	}
	_, out, _ = run(t, "approvals", "approve", "--help")
	line := ""
	for l := range strings.Lines(out) {
		if strings.Contains(l, "--by") {
			line = l
		}
	}
	if !strings.Contains(line, "--by NAME ") || strings.Count(line, "default") != 1 {
		t.Errorf("approvals approve --help: --by line %q: want its value named NAME and one default", line)
	}
}

// TestBinaryExampleplugin builds the real binary and checks the example
// plugin the README's first command points at.
func TestBinaryExamplePlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "gatehouse")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/gatehouse")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "plugin", "check", "--json", "../../examples/plugins/hello")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("plugin check: %v\n%s", err, out)
	}
	var rep checkReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Name != "hello" || len(rep.Skills) == 0 || len(rep.MCPServers) == 0 {
		t.Fatalf("example plugin: %+v", rep)
	}
	for _, d := range rep.Diagnostics {
		t.Errorf("example plugin has a diagnostic: %s", d)
	}
}

// TestToolsExamplePlugin runs `gatehouse tools` on the example plugin: it
// launches the real example server (go run) and prints the projected map.
func TestToolsExamplePlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("launches the example server with go run; skipped with -short")
	}
	code, out, errOut := run(t, "tools", "--json", "--plugin", examplePlugin(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Tools []struct {
			Name, Server, RemoteName, Description, Disclosure, State string
			InputSchema                                              map[string]any
		} `json:"tools"`
		Diagnostics []any `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, tool := range rep.Tools {
		names = append(names, tool.Name)
		if tool.Server != "greeter" || tool.Disclosure != "inline" || tool.State != "active" || tool.InputSchema["type"] != "object" {
			t.Errorf("tool %+v", tool)
		}
	}
	if strings.Join(names, ",") != "greeter__add,greeter__greet" || len(rep.Diagnostics) != 0 {
		t.Fatalf("tools %v diagnostics %v", names, rep.Diagnostics)
	}
	if code, _, _ := run(t, "tools"); code != 2 {
		t.Errorf("tools without plugins: exit %d, want 2", code)
	}
}

// examplePlugin returns the absolute path of examples/plugins/hello. Its
// PLUGIN_DATA (examples/plugins/data/hello) is git-ignored.
func examplePlugin(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs("../../examples/plugins/hello")
	if err != nil {
		t.Fatal(err)
	}
	return src
}
