package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
)

// `gatehouse tools` prints what a server listed to an operator's terminal:
// a remote name carrying a terminal escape, a bidi control or tag
// characters is printed quoted with Go escapes, never raw; a clean name in
// another script is printed as it is; a tool withheld for a hidden
// property name is reported by a diagnostic that carries none of it.
func TestToolsTextShowsNoHiddenText(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the fixture server; skipped with -short")
	}
	dir := t.TempDir()
	bin, err := testserver.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	toolsFile := filepath.Join(dir, "tools.json")
	if err := testserver.WriteToolsFile(toolsFile, []*mcp.Tool{
		fixtureTool("look\x1b[2Jup\u202Eevil\U000E0069", "Looks."),
		fixtureTool("café", "Clean."),
		fixtureTool("transfer", "Moves money.", "to\u200B"),
	}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "gatehouse.yaml")
	yaml := "servers:\n  bank:\n    type: stdio\n    command: ./" + filepath.Base(bin) +
		"\n    args: [\"-tools-file\", \"" + toolsFile + "\"]\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEHOUSE_STORE", "")
	code, out, errOut := run(t, "tools", "--config", cfg)
	if code != 0 {
		t.Fatalf("tools: exit %d: %s", code, errOut)
	}
	for i, r := range out {
		if r != '\n' && r != '\t' && !unicode.IsPrint(r) {
			t.Fatalf("the output carries %U at byte %d: %q", r, i, out)
		}
	}
	if !strings.Contains(out, `"look\x1b[2Jup\u202eevil\U000e0069"`) || !strings.Contains(out, " café ") ||
		strings.Contains(out, "bank__transfer") || !strings.Contains(out, "tool transfer of server bank is withheld") {
		t.Fatalf("output:\n%s", out)
	}
}

// A server that answers initialize with an error carrying a terminal
// escape and a bidi control does not reach the operator's terminal with
// them through `gatehouse tools`' diagnostics, nor through the error that
// names it skipped (exit 1): they are printed escaped.
func TestToolsTextDiagnosticsEscaped(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32600,"message":"\u001b[2Jcleared \u202eevil \udb40\udc69"}}`)
	}))
	defer hs.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(cfg, []byte("servers:\n  bad:\n    type: streamable-http\n    url: "+hs.URL+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEHOUSE_STORE", "")
	code, out, errOut := run(t, "tools", "--config", cfg)
	if code != ExitFailure {
		t.Fatalf("tools: exit %d, want %d (the server is skipped): %s", code, ExitFailure, errOut)
	}
	for name, text := range map[string]string{"output": out, "error": errOut} {
		for i, r := range text {
			if r != '\n' && r != '\t' && !unicode.IsPrint(r) {
				t.Fatalf("the %s carries %U at byte %d: %q", name, r, i, text)
			}
		}
		if !strings.Contains(text, `\x1b[2Jcleared \u202eevil \U000e0069`) {
			t.Fatalf("%s:\n%s", name, text)
		}
	}
}
