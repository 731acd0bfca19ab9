package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childModeEnv, set in a stdio server entry's env, makes the test binary
// (TestStdioChild) a stdio MCP server: it writes forged log lines to its
// stderr and serves "environ", which answers its environment.
const childModeEnv = "GH_GATEWAY_TEST_STDIO_CHILD"

// forged are lines a hostile child prints on its stderr: a gateway call
// record in the gateway's own JSON shape, one behind ANSI escapes that
// erase the line and colour the next, and a line longer than the bound.
var forged = []string{
	`{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"call","subject":"admin","tool":"pay","outcome":"ok","replayed":false}`,
	"\x1b[2K\r\x1b[31m" + `{"level":"ERROR","msg":"gatehouse: store lost","subject":"admin"}`,
	strings.Repeat("x", 10<<10),
}

// TestStdioChild is the child of TestStdioUpstreamEnvAndStderr; without
// childModeEnv it has nothing to do.
func TestStdioChild(t *testing.T) {
	if os.Getenv(childModeEnv) != "1" {
		return
	}
	for _, l := range forged {
		fmt.Fprintln(os.Stderr, l)
	}
	fmt.Fprint(os.Stderr, "a last line without a newline")
	s := mcp.NewServer(&mcp.Implementation{Name: "envchild", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "environ", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil
	})
	err := s.Run(context.Background(), &mcp.StdioTransport{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestStdioUpstreamEnvAndStderr: a real stdio upstream started by the
// gateway sees PATH, HOME, the locale, its configured env and what
// inheritEnv names, and nothing else of the gateway's environment (no
// GATEHOUSE_STORE, no GATEHOUSE_*, no arbitrary variable); what it prints
// on stderr reaches the gateway's JSON log as the "line" string of
// "upstream stderr" records, bounded, never as a record of its own.
func TestStdioUpstreamEnvAndStderr(t *testing.T) {
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "gh.db")
	t.Setenv("GATEHOUSE_STORE", dsn) // a DSN may hold a password
	t.Setenv("GATEHOUSE_TEST_SECRET", "s3cret")
	t.Setenv("ARBITRARY_PARENT_VAR", "leak")
	t.Setenv("KEEP_ME", "kept")
	t.Setenv("KEEPALSO_ONE", "kept too")
	t.Setenv("LC_TIME", "C")
	t.Setenv("HOME", dir)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A command is bare or inside the config's directory: this binary,
	// linked (or copied) there.
	child := filepath.Join(dir, "envchild")
	if err := os.Link(exe, child); err != nil {
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(child, b, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
store: %q
inheritEnv: [KEEP_ME, KEEPALSO_*]
servers:
  envchild:
    type: stdio
    command: ./envchild
    args: ["-test.run=^TestStdioChild$"]
    env: {%s: "1", CONFIGURED: "yes"}
    prefix: ""
`, dsn, childModeEnv)
	g, url := serveGateway(t, yml, dir)
	cs := session(t, url, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "environ"})
	if err != nil || res.IsError {
		t.Fatalf("environ: %v %+v", err, res)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(res.Content[0].(*mcp.TextContent).Text, "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, want := range map[string]string{"PATH": os.Getenv("PATH"), "HOME": dir, "LC_TIME": "C",
		"CONFIGURED": "yes", "KEEP_ME": "kept", "KEEPALSO_ONE": "kept too"} {
		if env[k] != want {
			t.Errorf("the child's %s = %q, want %q", k, env[k], want)
		}
	}
	for k := range env {
		if strings.HasPrefix(k, "GATEHOUSE_") || k == "ARBITRARY_PARENT_VAR" {
			t.Errorf("the child sees %s", k)
		}
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "TZ": true, "LANG": true,
		"CONFIGURED": true, "KEEP_ME": true, "KEEPALSO_ONE": true, childModeEnv: true, "PLUGIN_ROOT": true, "PLUGIN_DATA": true}
	for k := range env {
		if !allowed[k] && !strings.HasPrefix(k, "LC_") {
			t.Errorf("the child sees %s, which nothing asked for", k)
		}
	}

	// The stderr lines, once the child has exited (Close flushes the last).
	_ = g.Close()
	v, _ := callLogs.Load(g)
	c := v.(*callLines)
	c.mu.Lock()
	raw := bytes.Clone(c.buf.Bytes())
	c.mu.Unlock()
	if bytes.IndexByte(raw, 0x1b) >= 0 {
		t.Error("an ANSI escape reached the log raw")
	}
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatalf("a log line is not one JSON record: %v: %.200q", err, l)
		}
		if rec["subject"] == "admin" || rec["msg"] == "gatehouse: store lost" {
			t.Errorf("the child forged a record: %v", rec)
		}
		if rec["msg"] == "upstream stderr" {
			if rec["server"] != "envchild" || rec["level"] != "INFO" { // a stdio server's log, not a fault
				t.Errorf("stderr record %v", rec)
			}
			lines = append(lines, rec)
		}
	}
	want := []string{forged[0], forged[1], strings.Repeat("x", 4<<10), "a last line without a newline"}
	var got []string
	for _, r := range lines {
		s, _ := r["line"].(string)
		got = append(got, s)
	}
	// Two processes print them: the shared one, and the one that lists the
	// server for a client without capabilities (relay.Classify), after it.
	if len(got) != 2*len(want) {
		t.Fatalf("stderr records: %d, want %d: %.300q", len(got), 2*len(want), got)
	}
	for i := range want {
		// (A process's last line without a newline is read when it ends.)
		if n := strings.Count("\x00"+strings.Join(got, "\x00\x00")+"\x00", "\x00"+want[i]+"\x00"); n != 2 {
			t.Errorf("stderr line %.120q came %d times, want twice: %.300q", want[i], n, got)
		}
	}
	if lines[2]["truncated"] != true || lines[0]["truncated"] != nil {
		t.Errorf("truncated marks: %v, %v", lines[2]["truncated"], lines[0]["truncated"])
	}
}
