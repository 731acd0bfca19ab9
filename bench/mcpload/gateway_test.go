package main

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
)

// These tests run the hardened configurations of bench/hardened.sh for real:
// the gatehouse binary started by bench/gateway.sh with its knobs, in front of
// the echo server, the OAuth token minted by bench/authserver, and mcpload
// sending keyed calls with a token from a file. What is counted is what the
// echo server behind the gateway received.

// repoRoot is the module's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// build compiles the package pkg of the module into dir.
func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// freeURL returns an MCP URL on a loopback port that was free a moment ago.
func freeURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

// stopAtCleanup ends cmd when the test ends: SIGTERM, then SIGKILL after 10s.
func stopAtCleanup(t *testing.T, cmd *exec.Cmd, done <-chan struct{}) {
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

// startGateway runs bench/gateway.sh with env in front of echoURL, listening
// on url (a free port when empty), and waits until the gateway listens. It
// returns the gateway's URL.
func startGateway(t *testing.T, gatehouse, echoURL, url string, env ...string) string {
	t.Helper()
	if url == "" {
		url = freeURL(t)
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "bench", "gateway.sh"))
	cmd.Env = append(os.Environ(), "GATEHOUSE_BIN="+gatehouse, "ECHO_URL="+echoURL, "GATEWAY_URL="+url, "GATEWAY_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopAtCleanup(t, cmd, done)
	hostport := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "gateway.log"))
			t.Fatalf("gateway.sh ended: %s\n%s", stderr.String(), log)
		default:
		}
		if c, err := net.DialTimeout("tcp", hostport, time.Second); err == nil {
			c.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not listen on %s within 60s", url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startAuthServer runs bench/authserver for resource and returns its issuer
// and the file holding its token.
func startAuthServer(t *testing.T, bin, resource string) (issuer, tokenFile string) {
	t.Helper()
	tokenFile = filepath.Join(t.TempDir(), "oauth-token")
	cmd := exec.Command(bin, "-resource", resource, "-token-file", tokenFile, "-scope", "mcp", "-lifetime", "1h")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(done) }()
	stopAtCleanup(t, cmd, done)
	select {
	case l := <-lines:
		issuer, ok := strings.CutPrefix(l, "issuer=")
		if !ok {
			t.Fatalf("authserver printed %q, want issuer=URL", l)
		}
		return issuer, tokenFile
	case <-done:
		t.Fatalf("authserver ended: %s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("authserver printed no issuer within 30s")
	}
	return "", ""
}

// writeToken writes tok to a new file and returns its name.
func writeToken(t *testing.T, tok string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// checkReplays runs keyed calls through the gateway at url and checks, at
// the echo server behind it, that a pooled key reaches the upstream once
// (its repeats are answered from the journal, and verify) and that a unique
// key reaches it every time.
func checkReplays(t *testing.T, url, tokenFile string, c *counts) {
	t.Helper()
	before := c.calls.Load()
	keysBefore, _ := c.keys()
	r := runJSON(t, t.Context(), 0, "-url", url, "-token-file", tokenFile, "-sessions", "2", "-calls", "40",
		"-warmup", "0s", "-payload", "64", "-verify", "-keys", "pool:4")
	// How many calls each loop made is up to the scheduler, so every key of
	// a loop is not necessarily used: first uses = 40 - repeats, at most 8.
	if r.Calls != 40 || r.Errors != 0 || r.Repeats < 32 || r.Repeats >= 40 {
		t.Fatalf("pool:4: %d calls, %d errors, %d repeats; want 40, 0, 32 to 39: %v", r.Calls, r.Errors, r.Repeats, r.ErrorSamples)
	}
	if got, want := c.calls.Load()-before, 40-r.Repeats; got != want {
		t.Errorf("pool:4 on 2 sessions: the upstream got %d calls, want %d (one per key; the %d repeats are replays)", got, want, r.Repeats)
	}
	first := c.calls.Load() - before
	keysAfter, _ := c.keys()
	if int64(len(keysAfter)-len(keysBefore)) != first {
		t.Errorf("the upstream saw %d new keys for %d calls", len(keysAfter)-len(keysBefore), first)
	}
	before = c.calls.Load()
	r = runJSON(t, t.Context(), 0, "-url", url, "-token-file", tokenFile, "-sessions", "2", "-calls", "30",
		"-warmup", "0s", "-payload", "64", "-verify", "-keys", "unique")
	if r.Calls != 30 || r.Errors != 0 || r.Repeats != 0 {
		t.Fatalf("unique: %+v", r)
	}
	if got := c.calls.Load() - before; got != 30 {
		t.Errorf("unique keys: the upstream got %d calls, want 30", got)
	}
	keys, unkeyed := c.keys()
	if unkeyed != 0 || int64(len(keys)) != int64(len(keysBefore))+first+30 {
		t.Errorf("the upstream saw %d distinct keys and %d unkeyed calls, want %d and 0", len(keys), unkeyed, int64(len(keysBefore))+first+30)
	}
}

// TestHardenedConfigs runs each configuration of bench/hardened.sh.
func TestHardenedConfigs(t *testing.T) {
	bins := t.TempDir()
	gatehouse := build(t, bins, "./cmd/gatehouse")
	authBin := build(t, bins, "./bench/authserver")
	const token = "bench-static-token.0123456789"
	tokenFile := writeToken(t, token)
	wrongFile := writeToken(t, "another-token")
	keyed := func(t *testing.T, store string) {
		echoURL, c := startEcho(t, "")
		url := startGateway(t, gatehouse, echoURL, "", "GATEWAY_TOKEN="+token, "GATEWAY_RATELIMIT=1000000/60s", "GATEWAY_STORE="+store)
		checkReplays(t, url, tokenFile, c)
		// No token, or another: not one session opens.
		runJSON(t, t.Context(), 1, "-url", url, "-calls", "1", "-warmup", "0s", "-payload", "8", "-timeout", "10s")
		runJSON(t, t.Context(), 1, "-url", url, "-calls", "1", "-warmup", "0s", "-payload", "8", "-token-file", wrongFile, "-timeout", "10s")
		if keys, _ := c.keys(); c.calls.Load() != int64(len(keys)) {
			t.Errorf("the upstream got %d calls for %d keys: a call without the token got through", c.calls.Load(), len(keys))
		}
	}
	t.Run("StaticTokenSQLite", func(t *testing.T) { keyed(t, "sqlite") })
	t.Run("StaticTokenSQLitePower", func(t *testing.T) { keyed(t, "sqlite-power") })
	t.Run("StaticTokenPostgres", func(t *testing.T) {
		keyed(t, pgtest.Schema(t, "bench", "the PostgreSQL configuration of bench/gateway.sh"))
	})
	// The rate limit is really configured: 5 a minute, the initialize
	// included, lets 4 calls through and refuses the rest.
	t.Run("RateLimitRefuses", func(t *testing.T) {
		echoURL, c := startEcho(t, "")
		url := startGateway(t, gatehouse, echoURL, "", "GATEWAY_TOKEN="+token, "GATEWAY_RATELIMIT=5/1h")
		r := runJSON(t, t.Context(), 3, "-url", url, "-token-file", tokenFile, "-calls", "10", "-warmup", "0s", "-payload", "8", "-verify")
		// mcpload's go-sdk client speaks 2026-07-28, which the gateway
		// serves without a session (http.bothRevisions): no initialize
		// spends one of the window's 5.
		if got := c.calls.Load(); got != 5 || r.Errors != 5 {
			t.Errorf("the upstream got %d calls and mcpload %d errors; want 5 and 5 (5 a window)", got, r.Errors)
		}
		if len(r.ErrorSamples) == 0 || !strings.Contains(r.ErrorSamples[0], "rate_limited") {
			t.Errorf("errors %q, want rate_limited", r.ErrorSamples)
		}
	})
	t.Run("OAuth", func(t *testing.T) {
		echoURL, c := startEcho(t, "")
		// The gateway's URL is its resource: pick it first, mint for it.
		url := freeURL(t)
		issuer, oauthFile := startAuthServer(t, authBin, url)
		startGateway(t, gatehouse, echoURL, url, "GATEWAY_OAUTH_ISSUER="+issuer, "GATEWAY_RATELIMIT=1000000/60s")
		checkReplays(t, url, oauthFile, c)
		// A static token means nothing to it, nor does a token for
		// another resource.
		runJSON(t, t.Context(), 1, "-url", url, "-calls", "1", "-warmup", "0s", "-payload", "8", "-token-file", tokenFile, "-timeout", "10s")
		_, otherFile := startAuthServer(t, authBin, "http://127.0.0.1:1/mcp")
		runJSON(t, t.Context(), 1, "-url", url, "-calls", "1", "-warmup", "0s", "-payload", "8", "-token-file", otherFile, "-timeout", "10s")
		if keys, _ := c.keys(); c.calls.Load() != int64(len(keys)) {
			t.Errorf("the upstream got %d calls for %d keys: a call without the OAuth token got through", c.calls.Load(), len(keys))
		}
	})
}

// TestGatewayScriptErrors: every knob of bench/gateway.sh with a wrong value
// stops it with exit 2 and a message naming the knob, before any gateway
// starts.
func TestGatewayScriptErrors(t *testing.T) {
	for _, env := range [][]string{
		{"GATEWAY_RATELIMIT=100"},
		{"GATEWAY_RATELIMIT=/60s"},
		{"GATEWAY_RATELIMIT=0/60s"},
		{"GATEWAY_RATELIMIT=-5/60s"},
		{"GATEWAY_RATELIMIT=100/60"},
		{"GATEWAY_RATELIMIT=100/0s"},
		{"GATEWAY_RATELIMIT=100/60s\nauth: {}"},
		{"GATEWAY_RATELIMIT=1e6/60s"},
		{"GATEWAY_STORE=mysql://x"},
		{"GATEWAY_STORE=SQLITE"},
		{"GATEWAY_STORE=memory:"},
		{"GATEWAY_OAUTH_ISSUER=https://idp.example.com"},
		{"GATEWAY_OAUTH_ISSUER=http://10.0.0.1:8080"},
		{"GATEWAY_OAUTH_ISSUER=http://127.0.0.1:8080/\nx: y"},
		{"GATEWAY_OAUTH_ISSUER=http://127.0.0.1"},
		{"GATEWAY_TOKEN=t", "GATEWAY_SUBJECT=a b"},
		{"GATEWAY_TOKEN=t", "GATEWAY_SUBJECT=x\ny: z"},
	} {
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "bench", "gateway.sh"))
		cmd.Env = append(os.Environ(), "GATEHOUSE_BIN=/bin/false", "ECHO_URL=http://127.0.0.1:1/mcp",
			"GATEWAY_URL=http://127.0.0.1:2/mcp", "GATEWAY_DIR="+t.TempDir())
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		name, _, _ := strings.Cut(env[len(env)-1], "=")
		var ee *exec.ExitError
		if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), name) {
			t.Errorf("gateway.sh with %q: %v, %q; want exit 2 naming %s", env, err, out, name)
		}
	}
}
