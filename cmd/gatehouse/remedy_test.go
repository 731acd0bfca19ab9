package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// lockedBuf is a bytes.Buffer a logger may write from several goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// trustCommand finds every `gatehouse trust SERVER` in a text, and the
// --listing after it (in a synopsis, "[--listing FINGERPRINT]").
var trustCommand = regexp.MustCompile(`gatehouse trust (\S+)( \[?--listing \S+)?`)

// onlySafeTrust fails when text names `gatehouse trust SERVER` without
// --listing: the command that trusts whatever the server publishes now.
func onlySafeTrust(t *testing.T, what, text string) {
	t.Helper()
	for _, m := range trustCommand.FindAllStringSubmatch(text, -1) {
		if m[2] == "" {
			t.Errorf("%s: %q without --listing in:\n%s", what, m[0], text)
		}
	}
}

// TestOneTrustInstruction: a real MCP server (the fixture, over stdio)
// drifts after first sight, and every surface that tells the operator what
// to do about it gives the same instruction, pin.TrustRemedy: review with
// `gatehouse drift show`, accept exactly the reviewed listing with
// `gatehouse trust SERVER --listing FINGERPRINT`, the fingerprint written
// where the surface knows it. The surfaces: the quarantined tool's
// description (what a model reads), the refusal of a call to it, the
// toolset's drift log line and its tool-drift diagnostic (in process and
// through `gatehouse tools`), `drift list`'s hint, `drift show`, and the
// help of tools, drift list, drift show and trust. None of them names a
// `gatehouse trust` without --listing.
func TestOneTrustInstruction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the fixture server; skipped with -short")
	}
	dir := t.TempDir()
	bin, err := testserver.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	toolsFile := filepath.Join(dir, "tools.json")
	dsn := "sqlite:" + filepath.Join(dir, "g.db")
	cfg := filepath.Join(dir, "gatehouse.yaml")
	yaml := "store: " + dsn + "\nservers:\n  bank:\n    type: stdio\n    command: ./" + filepath.Base(bin) +
		"\n    args: [\"-tools-file\", \"" + toolsFile + "\"]\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEHOUSE_STORE", "")
	if err := testserver.WriteToolsFile(toolsFile, []*mcp.Tool{fixtureTool("transfer", "Moves money.", "from")}); err != nil {
		t.Fatal(err)
	}
	if s := states(runTools(t, "--config", cfg)); s["bank__transfer"] != "active" {
		t.Fatalf("first sight: %v", s)
	}
	if err := testserver.WriteToolsFile(toolsFile, []*mcp.Tool{fixtureTool("transfer", "Moves money. POISON", "from", "memo")}); err != nil {
		t.Fatal(err)
	}

	// The toolset in process: its log line, diagnostic, tool map and
	// refusal.
	logs := &lockedBuf{}
	st := openDSN(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts, err := toolset.Open(ctx, []toolset.Server{{Config: plugin.ServerConfig{Name: "bank", Type: plugin.TransportStdio,
		Command: bin, Args: []string{"-tools-file", toolsFile}}}}, &toolset.Options{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	list, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var desc string
	for _, ti := range list {
		if ti.Name == "bank__transfer" && ti.State == toolset.Quarantined {
			desc = ti.Description
		}
	}
	_, callErr := ts.Call(ctx, "bank__transfer", map[string]any{"from": "a"}, toolset.CallInfo{})
	if callErr == nil {
		t.Fatal("the quarantined tool's call was not refused")
	}
	var diags []string
	for _, d := range ts.Diagnostics() {
		diags = append(diags, d.Message)
	}
	var logLine string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "toolset: tool drift") {
			logLine = l
		}
	}
	ts.Close()

	// The CLI.
	fp := ""
	if got := driftList(t, "--config", cfg); len(got) == 1 {
		fp = got[0].Listing
	}
	if len(fp) != 64 {
		t.Fatalf("no drift listed")
	}
	_, listOut, _ := run(t, "drift", "list", "--config", cfg)
	_, showOut, _ := run(t, "drift", "show", "bank", "--config", cfg)
	toolsRep := runTools(t, "--config", cfg)
	var toolsDiag string
	for _, d := range toolsRep.Diagnostics {
		toolsDiag += d.Message + "\n"
	}
	help := map[string]string{}
	for _, c := range [][]string{{"tools"}, {"drift", "list"}, {"drift", "show"}, {"trust"}} {
		_, out, _ := run(t, append(c, "--help")...)
		help[strings.Join(c, " ")] = out
	}

	unknown, known := pin.TrustRemedy("bank", ""), pin.TrustRemedy("config:bank", fp)
	surfaces := []struct{ what, text, want string }{
		{"the quarantined tool's description", desc, unknown},
		{"the call's refusal", callErr.Error(), unknown},
		{"the drift log line", logLine, unknown},
		{"the tool-drift diagnostic", strings.Join(diags, "\n"), unknown},
		{"gatehouse tools' diagnostic", toolsDiag, unknown},
		{"drift list's hint", listOut, "Next for config:bank: " + known + ".\n"},
		{"drift show", showOut, "Next: " + known + ".\n"},
	}
	for c, out := range help {
		surfaces = append(surfaces, struct{ what, text, want string }{c + " --help", out, pin.TrustRemedy("SERVER", "")})
	}
	for _, s := range surfaces {
		if !strings.Contains(s.text, s.want) || !strings.Contains(s.want, " --listing ") {
			t.Errorf("%s lacks %q:\n%s", s.what, s.want, s.text)
		}
		onlySafeTrust(t, s.what, s.text)
		if strings.Contains(s.text, "POISON") && s.what != "drift show" {
			t.Errorf("%s carries the drifted text:\n%s", s.what, s.text)
		}
	}
	if desc != pin.QuarantineDescription("bank", "transfer") {
		t.Errorf("description %q", desc)
	}
}
