package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/bench/internal/echo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// stdioEnv makes the test binary serve the echo server over stdio instead of
// running tests, so -cmd has a real subprocess to start.
const stdioEnv = "MCPLOAD_TEST_ECHO_STDIO"

func TestMain(m *testing.M) {
	if os.Getenv(stdioEnv) == "1" {
		if err := echo.NewServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// counts is what the echo server behind a test saw on the wire.
type counts struct {
	calls, deletes, inits, gets, noAuth, requests atomic.Int64

	mu      sync.Mutex
	keyArgs map[string][]string // _meta.idempotencyKey -> the arguments of each call with it
	unkeyed int                 // tools/call without a key
}

// noteCall records the key and arguments of a tools/call body.
func (c *counts) noteCall(body []byte) {
	var req struct {
		Params struct {
			Meta      map[string]any  `json:"_meta"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &req)
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := req.Params.Meta["idempotencyKey"].(string)
	if !ok {
		c.unkeyed++
		return
	}
	if c.keyArgs == nil {
		c.keyArgs = map[string][]string{}
	}
	c.keyArgs[k] = append(c.keyArgs[k], string(req.Params.Arguments))
}

// keys returns the keys seen, each with the arguments of its calls, and the
// count of calls without a key.
func (c *counts) keys() (map[string][]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.keyArgs), c.unkeyed
}

// startEcho serves the echo server on 127.0.0.1 and counts requests by kind.
func startEcho(t *testing.T, wantAuth string) (string, *counts) {
	t.Helper()
	return startServer(t, echo.NewHandler(nil), wantAuth)
}

// startServer serves h on 127.0.0.1 and counts requests by kind.
func startServer(t *testing.T, h http.Handler, wantAuth string) (string, *counts) {
	t.Helper()
	c := &counts{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		if wantAuth != "" && r.Header.Get("Authorization") != wantAuth {
			c.noAuth.Add(1)
		}
		switch r.Method {
		case http.MethodDelete:
			c.deletes.Add(1)
		case http.MethodGet:
			c.gets.Add(1)
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
				c.calls.Add(1)
				c.noteCall(body)
			}
			if bytes.Contains(body, []byte(`"method":"initialize"`)) {
				c.inits.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/mcp", c
}

// runJSON runs mcpload with -json and decodes its one result object.
func runJSON(t *testing.T, ctx context.Context, wantCode int, args ...string) *result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(ctx, append(args, "-json"), &out, &errb)
	if code != wantCode {
		t.Fatalf("mcpload %q: exit %d, want %d; stderr:\n%s", args, code, wantCode, errb.String())
	}
	if wantCode == 1 || wantCode == 2 {
		return nil
	}
	dec := json.NewDecoder(&out)
	var r result
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if dec.More() {
		t.Fatalf("more than one JSON value in output: %s", out.String())
	}
	return &r
}

func checkLatencies(t *testing.T, r *result) {
	t.Helper()
	if !(r.MinMs > 0 && r.MinMs <= r.P50Ms && r.P50Ms <= r.P90Ms && r.P90Ms <= r.P99Ms && r.P99Ms <= r.MaxMs) {
		t.Errorf("latencies out of order: min %v p50 %v p90 %v p99 %v max %v", r.MinMs, r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs)
	}
}

// TestLoadHTTP is the end to end run: mcpload against the echo server over
// real HTTP on 127.0.0.1, 2 sessions for 1 s, every answer verified.
func TestLoadHTTP(t *testing.T) {
	url, c := startEcho(t, "Bearer sekrit")
	r := runJSON(t, t.Context(), 0, "-url", url, "-sessions", "2", "-duration", "1s", "-warmup", "200ms",
		"-payload", "64", "-verify", "-header", "Authorization: Bearer sekrit",
		"-rss-pid", fmt.Sprint(os.Getpid()), "-label", "direct")
	if r.Calls <= 0 || r.Errors != 0 || r.CallsPerSec <= 0 {
		t.Fatalf("calls %d errors %d calls/s %v: %v", r.Calls, r.Errors, r.CallsPerSec, r.ErrorSamples)
	}
	if r.Sessions != 2 || r.Connections != 2 || r.Label != "direct" || r.PayloadBytes != 64 || r.Protocol != "2025-11-25" {
		t.Errorf("result header: %+v", r)
	}
	if r.DurationS < 0.99 || r.DurationS > 1.01 {
		t.Errorf("window %vs, want 1s", r.DurationS)
	}
	checkLatencies(t, r)
	if r.TargetRSSMaxKB <= 0 || r.CPUMs <= 0 {
		t.Errorf("rss max %d KiB, cpu %v ms", r.TargetRSSMaxKB, r.CPUMs)
	}
	// The server saw at least every measured call (plus warmup), the header on
	// every request, and a DELETE from each session on close.
	if got := c.calls.Load(); got < r.Calls {
		t.Errorf("server saw %d tools/call, mcpload measured %d", got, r.Calls)
	}
	if got := c.noAuth.Load(); got != 0 {
		t.Errorf("%d of %d requests without the -header", got, c.requests.Load())
	}
	if got := c.deletes.Load(); got != 2 {
		t.Errorf("server saw %d DELETEs, want 2 (every session closed)", got)
	}
}

// TestCallCount: -calls N makes exactly N measured calls, through the human
// table output this time.
func TestCallCount(t *testing.T) {
	url, c := startEcho(t, "")
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"-url", url, "-sessions", "3", "-calls", "150", "-warmup", "0s",
		"-duration", "20s", "-payload", "16384", "-verify", "-no-sse"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "150 (0 errors, 0 sessions lost)") {
		t.Errorf("table:\n%s", out.String())
	}
	if got := c.calls.Load(); got != 150 {
		t.Errorf("server saw %d calls, want exactly 150", got)
	}
	if got := c.gets.Load(); got != 0 {
		t.Errorf("-no-sse: server saw %d GETs", got)
	}
}

func TestLoadStdio(t *testing.T) {
	t.Setenv(stdioEnv, "1") // inherited by the subprocesses
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := runJSON(t, t.Context(), 0, "-cmd", exe, "-sessions", "2", "-calls", "100", "-warmup", "0s", "-payload", "64", "-verify")
	if r.Calls != 100 || r.Errors != 0 || r.Connections != 2 || r.Transport != "stdio" {
		t.Errorf("per-session: %+v", r)
	}
	checkLatencies(t, r)
	r = runJSON(t, t.Context(), 0, "-cmd", exe, "-sessions", "4", "-shared", "-calls", "100", "-warmup", "0s", "-payload", "64", "-verify")
	if r.Calls != 100 || r.Errors != 0 || r.Connections != 1 || !r.Shared {
		t.Errorf("shared: %+v", r)
	}
}

func TestIdle(t *testing.T) {
	url, c := startEcho(t, "")
	r := runJSON(t, t.Context(), 0, "-url", url, "-idle", "20", "-hold", "300ms", "-payload", "8", "-verify",
		"-protocol", "2025-11-25", "-rss-pid", fmt.Sprint(os.Getpid()))
	if r.Mode != "idle" || r.Connections != 20 || r.OpenErrors != 0 || r.Errors != 0 {
		t.Fatalf("idle: %+v", r)
	}
	if r.TargetRSSMaxKB <= 0 || r.TargetRSSEndKB <= 0 || r.DurationS < 0.3 {
		t.Errorf("idle rss %d/%d, held %vs", r.TargetRSSMaxKB, r.TargetRSSEndKB, r.DurationS)
	}
	if c.inits.Load() != 20 || c.calls.Load() != 20 || c.deletes.Load() != 20 {
		t.Errorf("server saw %d initialize, %d calls, %d deletes; want 20 each", c.inits.Load(), c.calls.Load(), c.deletes.Load())
	}
}

// TestErrorsCounted: a tool error on every call is counted, reported and
// exits 3; the calls still count.
func TestErrorsCounted(t *testing.T) {
	url, _ := startEcho(t, "")
	// An argument the echo tool's input schema does not allow: every call
	// is rejected with a tool error.
	r := runJSON(t, t.Context(), 3, "-url", url, "-calls", "10", "-warmup", "0s", "-args", `{"other":1}`)
	if r.Calls != 10 || r.Errors != 10 || r.CallsPerSec != 0 || len(r.ErrorSamples) != 1 {
		t.Fatalf("errors: %+v", r)
	}
	if !strings.Contains(r.ErrorSamples[0], "tool error") {
		t.Errorf("error sample %q", r.ErrorSamples[0])
	}
	// -verify catches a server that answers with something else.
	liar := mcp.NewServer(&mcp.Implementation{Name: "liar", Version: "1"}, nil)
	mcp.AddTool(liar, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, echo.Input) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not what you sent"}}}, nil, nil
	})
	url, _ = startServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return liar }, nil), "")
	r = runJSON(t, t.Context(), 3, "-url", url, "-calls", "5", "-warmup", "0s", "-payload", "16", "-verify")
	if r.Calls != 5 || r.Errors != 5 || len(r.ErrorSamples) == 0 || !strings.Contains(r.ErrorSamples[0], "verify") {
		t.Errorf("verify: %+v", r)
	}
	// Without -verify the same answers pass.
	r = runJSON(t, t.Context(), 0, "-url", url, "-calls", "5", "-warmup", "0s", "-payload", "16")
	if r.Calls != 5 || r.Errors != 0 {
		t.Errorf("no verify: %+v", r)
	}
}

// TestRedirectNotFollowed: a target that redirects elsewhere does not get
// mcpload to talk to the other address.
func TestRedirectNotFollowed(t *testing.T) {
	other, c := startEcho(t, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redir := &http.Server{Handler: http.RedirectHandler(other, http.StatusTemporaryRedirect)}
	go func() { _ = redir.Serve(ln) }()
	defer redir.Close()
	runJSON(t, t.Context(), 1, "-url", "http://"+ln.Addr().String()+"/mcp", "-calls", "1", "-timeout", "3s")
	if got := c.requests.Load(); got != 0 {
		t.Errorf("the redirect target got %d requests", got)
	}
}

// TestInterrupt: cancelling the run ends it promptly, closing its sessions.
func TestInterrupt(t *testing.T) {
	url, c := startEcho(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	runJSON(t, ctx, 1, "-url", url, "-sessions", "2", "-duration", "30s", "-warmup", "0s", "-payload", "8")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to stop", d)
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("run returned before the interrupt")
	}
	if got := c.deletes.Load(); got != 2 {
		t.Errorf("server saw %d DELETEs after the interrupt, want 2", got)
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	lines := []string{
		`{"label":"direct","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":2000,"p50_ms":0.4,"p99_ms":1}`,
		`{"label":"gateway","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":1500,"p50_ms":0.6,"p99_ms":1.5}`,
		`{"label":"direct","mode":"load","sessions":8,"payload_bytes":16384,"calls_per_sec":1000,"p50_ms":2}`,
		``,
		`{"label":"gateway","mode":"idle","sessions":10000,"connections":10000,"target_rss_start_kb":10240,"target_rss_max_kb":112640}`,
	}
	f := dir + "/r.jsonl"
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"-report", f}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"### direct", "### gateway vs direct",
		"| 1 | 64 B | 2000 | 1500 | 75% | 0.400 | 0.600 | +0.200 | +0.500 |",
		"| 8 | 16 KiB | 1000 |",
		"| gateway | 10000 | 10000 | 0 | 0.0s | 10.0 MiB | 110.0 MiB | 10.2 KiB |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if err := os.WriteFile(f, []byte("{not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := run(t.Context(), []string{"-report", f}, &out, &errb); code != 1 {
		t.Errorf("bad report file: exit %d, want 1", code)
	}
}

// TestKeysOnTheWire: -keys unique sends a fresh _meta.idempotencyKey on every
// call; -keys pool:N sends N keys per loop in turn, each always with the same
// arguments (a journaling gateway would answer a key with other arguments
// key_reused), and the arguments of two keys differ, so that -verify checks a
// replay against its own call. Counted at the server.
func TestKeysOnTheWire(t *testing.T) {
	url, c := startEcho(t, "")
	r := runJSON(t, t.Context(), 0, "-url", url, "-sessions", "2", "-calls", "50", "-warmup", "0s",
		"-payload", "64", "-verify", "-keys", "unique")
	keys, unkeyed := c.keys()
	if r.Calls != 50 || r.Errors != 0 || r.Keys != "unique" || r.Repeats != 0 {
		t.Fatalf("unique: %+v", r)
	}
	if len(keys) != 50 || unkeyed != 0 {
		t.Errorf("unique: the server saw %d distinct keys and %d unkeyed calls for 50 calls", len(keys), unkeyed)
	}
	for k, args := range keys {
		if len(args) != 1 || !strings.HasPrefix(k, "mcpload-") {
			t.Errorf("unique: key %q sent %d times", k, len(args))
		}
	}

	url, c = startEcho(t, "")
	r = runJSON(t, t.Context(), 0, "-url", url, "-sessions", "2", "-calls", "30", "-warmup", "0s",
		"-payload", "64", "-verify", "-keys", "pool:3")
	if r.Calls != 30 || r.Errors != 0 || r.Keys != "pool:3" {
		t.Fatalf("pool: %+v", r)
	}
	keys, unkeyed = c.keys()
	// How the 30 calls fall on the two loops is the scheduler's choice: a
	// loop of fewer than 3 calls uses fewer keys.
	if len(keys) < 3 || len(keys) > 6 || unkeyed != 0 {
		t.Fatalf("pool:3 on 2 loops: the server saw %d distinct keys (want 3 to 6) and %d unkeyed calls", len(keys), unkeyed)
	}
	if r.Repeats != int64(30-len(keys)) {
		t.Errorf("repeats %d, want %d (every call after a key's first)", r.Repeats, 30-len(keys))
	}
	distinct := map[string]bool{}
	total := 0
	for k, args := range keys {
		total += len(args)
		for _, a := range args[1:] {
			if a != args[0] {
				t.Errorf("key %q sent with arguments %s and then %s", k, args[0], a)
			}
		}
		distinct[args[0]] = true
	}
	if total != 30 {
		t.Errorf("%d keyed calls at the server, want 30", total)
	}
	if len(distinct) != 3 {
		t.Errorf("%d distinct arguments over the pool of 3 (shared by the loops), want 3", len(distinct))
	}
	// Another run never reuses this one's keys.
	runJSON(t, t.Context(), 0, "-url", url, "-calls", "3", "-warmup", "0s", "-payload", "64", "-keys", "pool:3")
	if keys2, _ := c.keys(); len(keys2) != len(keys)+3 {
		t.Errorf("a second run shared keys with the first: %d distinct keys, want %d", len(keys2), len(keys)+3)
	}
}

// TestTokenFile: -token-file sends the file's token as a bearer token on
// every request, and the token is read, not taken from the command line.
func TestTokenFile(t *testing.T) {
	url, c := startEcho(t, "Bearer sekrit.tok-en_1~+/==")
	f := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(f, []byte("sekrit.tok-en_1~+/==\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runJSON(t, t.Context(), 0, "-url", url, "-sessions", "2", "-calls", "20", "-warmup", "0s", "-payload", "8", "-verify", "-token-file", f)
	if r.Errors != 0 || r.Calls != 20 {
		t.Fatalf("token file: %+v", r)
	}
	if n, all := c.noAuth.Load(), c.requests.Load(); n != 0 || all == 0 {
		t.Errorf("%d of %d requests without the file's token", n, all)
	}
}
