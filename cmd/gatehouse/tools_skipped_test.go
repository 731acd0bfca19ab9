package main

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
)

// TestToolsSkippedServer: `gatehouse tools` over two real servers, the
// fixture over stdio and a streamable HTTP server on 127.0.0.1 that is
// down at first: the output is printed in full (JSON that parses, with
// the reachable server's tools and the skipped one's diagnostic; the text
// table with its diagnostics), then the command fails with exit 1 (not the
// usage error's 2) and an error that names the skipped server and why, one
// line; --search fails the same way after its answer. Once a go-sdk server
// answers on that address, every server is served and the exit is 0.
func TestToolsSkippedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and launches the fixture server; skipped with -short")
	}
	dir := t.TempDir()
	bin, err := testserver.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // down: nothing listens there until the end of the test
	cfg := filepath.Join(dir, "gatehouse.yaml")
	yaml := "servers:\n" +
		"  up:\n    type: stdio\n    command: ./" + filepath.Base(bin) + "\n    args: [\"-tools\", \"echo\"]\n" +
		"  down:\n    type: streamable-http\n    url: http://" + addr + "/mcp\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEHOUSE_STORE", "")

	// The names in the error: the header, then one line a skipped server.
	checkErr := func(t *testing.T, errOut string) {
		t.Helper()
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		var skips []string
		for i, l := range lines {
			if strings.HasPrefix(l, "gatehouse: 1 of 2 servers skipped; their tools are not served:") {
				skips = lines[i+1:]
				break
			}
		}
		if len(skips) != 1 || !strings.HasPrefix(skips[0], `  down: server "down" is skipped: `) ||
			!strings.Contains(skips[0], "connection refused") || !strings.HasSuffix(skips[0], "[connection-failure, §7.2.2]") {
			t.Fatalf("the error does not name the skipped server and why, one line:\n%s", errOut)
		}
		if strings.Contains(errOut, `"up"`) || strings.Contains(errOut, "  up:") {
			t.Fatalf("the error names the server that was served:\n%s", errOut)
		}
	}

	code, out, errOut := run(t, "tools", "--json", "--config", cfg)
	if code != ExitFailure || code == ExitUsage {
		t.Fatalf("tools --json with a server down: exit %d, want %d: %s", code, ExitFailure, errOut)
	}
	var rep toolsJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("the output is not the JSON report: %v\n%s", err, out)
	}
	if s := states(rep); len(s) != 1 || s["up__echo"] != "active" {
		t.Fatalf("tools of the reachable server: %v", s)
	}
	if len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Origin != "down" || rep.Diagnostics[0].Rule != "connection-failure" {
		t.Fatalf("diagnostics: %+v", rep.Diagnostics)
	}
	checkErr(t, errOut)

	code, out, errOut = run(t, "tools", "--config", cfg)
	if code != ExitFailure {
		t.Fatalf("tools (text) with a server down: exit %d, want %d: %s", code, ExitFailure, errOut)
	}
	if !strings.Contains(out, "up__echo") || !strings.Contains(out, "diagnostics:\n  - down: server \"down\" is skipped") {
		t.Fatalf("the text output is not printed in full:\n%s", out)
	}
	checkErr(t, errOut)

	code, out, errOut = run(t, "tools", "--config", cfg, "--search", "echo text", "--json")
	if code != ExitFailure || !strings.Contains(out, `"up__echo"`) || !json.Valid([]byte(out)) {
		t.Fatalf("tools --search with a server down: exit %d:\n%s\n%s", code, out, errOut)
	}
	checkErr(t, errOut)

	// The server comes up: every server is served, exit 0.
	fx := testserver.New(testserver.Config{Tools: []string{"echo"}})
	hs := httptest.NewUnstartedServer(fx.Handler(false, nil))
	_ = hs.Listener.Close()
	if hs.Listener, err = net.Listen("tcp", addr); err != nil {
		t.Fatal(err)
	}
	hs.Start()
	defer func() {
		hs.CloseClientConnections()
		hs.Close()
		for ss := range fx.Server().Sessions() {
			_ = ss.Close()
		}
	}()
	code, out, errOut = run(t, "tools", "--json", "--config", cfg)
	if code != ExitOK || strings.Contains(errOut, "skipped") {
		t.Fatalf("tools --json with every server up: exit %d: %s", code, errOut)
	}
	rep = toolsJSON{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if s := states(rep); len(s) != 2 || s["up__echo"] != "active" || s["down__echo"] != "active" || len(rep.Diagnostics) != 0 {
		t.Fatalf("tools %v, diagnostics %+v", s, rep.Diagnostics)
	}
}
