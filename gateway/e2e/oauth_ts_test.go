package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// tsRequest is one HTTP request the TypeScript SDK made, as
// testdata/tsclient/oauth-client.mjs recorded it.
type tsRequest struct {
	Method          string `json:"method"`
	URL             string `json:"url"`
	Status          int    `json:"status"`
	Bearer          bool   `json:"bearer"`
	WWWAuthenticate string `json:"wwwAuthenticate"`
}

// tsRun is what oauth-client.mjs printed.
type tsRun struct {
	Requests []tsRequest `json:"requests"`
	Tools    []string    `json:"tools"`
	Result   struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error string `json:"error"`
}

// interopSkip skips the test with why, or fails it when
// GATEHOUSE_INTEROP_REQUIRED=1 (CI, where Node.js and the npm registry are
// there).
func interopSkip(t *testing.T, why string, args ...any) {
	t.Helper()
	if os.Getenv("GATEHOUSE_INTEROP_REQUIRED") == "1" {
		t.Fatalf(why, args...)
	}
	t.Skipf(why, args...)
}

// tsClientDir installs testdata/tsclient (the official TypeScript SDK at
// the version its package-lock.json pins) into a temporary directory and
// returns it.
func tsClientDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			interopSkip(t, "%s is not installed: install Node.js to run the TypeScript SDK interop test", tool)
		}
	}
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "testdata", "tsclient")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "oauth-client.mjs", "skills-client.mjs", "replicas-client.mjs"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--silent")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		interopSkip(t, "npm ci of the TypeScript SDK failed (offline?): %v\n%s", err, out)
	}
	return dir
}

// runTSClient runs oauth-client.mjs against url.
func runTSClient(t *testing.T, dir, url, clientID, secret, scope, tool string) tsRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "oauth-client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+url, "CLIENT_ID="+clientID, "CLIENT_SECRET="+secret,
		"SCOPE="+scope, "TOOL="+tool, "ARGS={}")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var run tsRun
	if jerr := json.Unmarshal(out, &run); jerr != nil {
		t.Fatalf("oauth-client.mjs printed no result (%v, %v):\nstdout: %s\nstderr: %s", err, jerr, out, stderr.String())
	}
	if (err != nil) != (run.Error != "") {
		t.Fatalf("oauth-client.mjs exit %v with error %q:\n%s", err, run.Error, stderr.String())
	}
	return run
}

// freeLoopbackPort returns a TCP port nothing listens on at 127.0.0.1: the
// gateway's auth.resource names its own URL, so the port is chosen first.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// TestTypeScriptClientOAuth: the official TypeScript SDK client
// (@modelcontextprotocol/sdk, ClientCredentialsProvider) starts with no
// token against `gatehouse serve` with auth.oauth. From the 401 alone it
// finds the Protected Resource Metadata, the authorization server (a real
// one: internal/fixture/authserver), obtains a token by the
// client_credentials grant for the gateway's resource, and calls a tool:
// the effect is counted at the upstream, and the token's tool scope hides
// the other tools. A client whose token lacks the required scope meets 403
// insufficient_scope and causes no effect. No token reaches the logs.
func TestTypeScriptClientOAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	js := tsClientDir(t)
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "ts-agent", Secret: "ts-s3cret-0b1d", Subject: "ts-agent-7"},
	}})
	port := freeLoopbackPort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	resource := "http://" + addr + "/mcp"
	effects := filepath.Join(dir, "effects")
	writeConfig(t, dir, fmt.Sprintf(`servers:
%sauth:
  resource: %s
  oauth: {issuer: %q, requiredScopes: [mcp]}
`, fixtureServer("fx", "-tools", "echo,count", "-effects", effects), resource, as.Issuer()))
	g := startGateway(t, dir, "--listen", addr)
	if g.url != resource {
		t.Fatalf("the gateway serves %s, not its resource %s", g.url, resource)
	}

	run := runTSClient(t, js, g.url, "ts-agent", "ts-s3cret-0b1d", "mcp tool:fx__count", "fx__count")
	if run.Error != "" {
		t.Fatalf("the TypeScript client failed: %s\nrequests: %+v\ngateway:\n%s", run.Error, run.Requests, g.logText())
	}
	prm := "http://" + addr + "/.well-known/oauth-protected-resource/mcp"
	if len(run.Requests) == 0 || run.Requests[0].Status != 401 || run.Requests[0].Bearer ||
		!strings.Contains(run.Requests[0].WWWAuthenticate, `resource_metadata="`+prm+`"`) {
		t.Fatalf("the client's first request was not met by the 401 challenge: %+v", run.Requests)
	}
	saw := func(method, url string, status int) bool {
		for _, r := range run.Requests {
			if r.Method == method && r.URL == url && r.Status == status {
				return true
			}
		}
		return false
	}
	if !saw("GET", prm, 200) {
		t.Errorf("the client did not read the Protected Resource Metadata at %s: %+v", prm, run.Requests)
	}
	if !saw("POST", as.TokenURL(), 200) {
		t.Errorf("the client did not obtain a token at %s: %+v", as.TokenURL(), run.Requests)
	}
	last := run.Requests[len(run.Requests)-1]
	if !last.Bearer || last.URL != g.url {
		t.Errorf("the client's last request did not carry its token to the gateway: %+v", last)
	}
	if as.TokensIssued() != 1 {
		t.Errorf("the authorization server issued %d tokens, want 1", as.TokensIssued())
	}
	if strings.Join(run.Tools, ",") != "fx__count" {
		t.Errorf("tools/list with the scope tool:fx__count = %v, want only fx__count", run.Tools)
	}
	if len(run.Result.Content) != 1 || run.Result.Content[0].Text != "1" || run.Result.IsError {
		t.Errorf("fx__count answered %+v", run.Result)
	}
	if n := len(lines(t, effects)); n != 1 {
		t.Errorf("the upstream counted %d effects, want 1", n)
	}

	// A token without the required scope "mcp": 403 insufficient_scope,
	// naming the scope, and nothing reaches the upstream.
	denied := runTSClient(t, js, g.url, "ts-agent", "ts-s3cret-0b1d", "tool:*", "fx__count")
	if denied.Error == "" {
		t.Fatalf("a client without the scope mcp got through: %+v", denied)
	}
	found := false
	for _, r := range denied.Requests {
		if r.URL == g.url && r.Bearer && r.Status == 403 &&
			strings.Contains(r.WWWAuthenticate, `error="insufficient_scope"`) && strings.Contains(r.WWWAuthenticate, `scope="mcp"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no 403 insufficient_scope challenge naming mcp: %+v", denied.Requests)
	}
	if n := len(lines(t, effects)); n != 1 {
		t.Errorf("the upstream counted %d effects after the refused client, want 1", n)
	}
	if logs := g.logText(); strings.Contains(logs, "eyJ") {
		t.Errorf("a JWT reached the gateway's logs:\n%s", logs)
	}
}
