package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
)

// bins are the binaries TestMain builds.
var bins struct {
	dir       string // on PATH of every gateway started here
	gatehouse string
	fixture   string
	slow      string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gatehouse-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The gateways keep their instance locks under the user's cache
	// directory when their store is PostgreSQL: keep the tests' out of the
	// real one. The go command's build cache lives there too by default:
	// name it first, or every build below starts from an empty cache
	// (minutes instead of seconds).
	if os.Getenv("GOCACHE") == "" {
		out, err := exec.Command("go", "env", "GOCACHE").Output()
		if c := strings.TrimSpace(string(out)); err == nil && c != "" {
			if err := os.Setenv("GOCACHE", c); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	if err := os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bins.dir = dir
	bins.gatehouse = filepath.Join(dir, "gatehouse")
	bins.slow = filepath.Join(dir, "slowmcp")
	for _, b := range [][2]string{{bins.gatehouse, "./cmd/gatehouse"}, {bins.slow, "./internal/fixture/slowmcp"}} {
		cmd := exec.Command("go", "build", "-o", b[0], b[1])
		cmd.Dir = root
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: building %s: %v\n", b[1], err)
			return 1
		}
	}
	if bins.fixture, err = testserver.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// env is the environment of every process started here: the binaries on
// PATH, and no store override from the caller's shell.
func env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GATEHOUSE_STORE=") || strings.HasPrefix(kv, "PATH=") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "PATH="+bins.dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return append(out, extra...)
}

// gw is one running `gatehouse serve`.
type gw struct {
	t    *testing.T
	dir  string
	cmd  *exec.Cmd
	addr string
	url  string
	done chan struct{}
	err  error

	mu   sync.Mutex
	logs []string
}

// writeConfig writes gatehouse.yaml into dir and returns its path.
func writeConfig(t *testing.T, dir, yaml string) string {
	t.Helper()
	p := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startGateway starts `gatehouse serve --config DIR/gatehouse.yaml` on a
// free loopback port and waits until it serves.
func startGateway(t *testing.T, dir string, args ...string) *gw {
	t.Helper()
	return startGatewayEnv(t, dir, env(), args...)
}

// startGatewayEnv is startGateway with the environment environ.
func startGatewayEnv(t *testing.T, dir string, environ []string, args ...string) *gw {
	t.Helper()
	g := &gw{t: t, dir: dir, done: make(chan struct{})}
	argv := append([]string{"serve", "--config", filepath.Join(dir, "gatehouse.yaml"), "--log-format", "json", "--listen", "127.0.0.1:0"}, args...)
	g.cmd = exec.Command(bins.gatehouse, argv...)
	g.cmd.Dir = dir
	g.cmd.Env = environ
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			g.logs = append(g.logs, line)
			g.mu.Unlock()
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "gatehouse: serving" {
				ready <- m["addr"].(string)
			}
		}
		g.err = g.cmd.Wait()
		close(g.done)
	}()
	t.Cleanup(func() { g.stop(syscall.SIGTERM) })
	select {
	case g.addr = <-ready:
	case <-g.done:
		t.Fatalf("gatehouse serve exited before serving (%v):\n%s", g.err, g.logText())
	case <-time.After(60 * time.Second):
		t.Fatalf("gatehouse serve did not start in time:\n%s", g.logText())
	}
	g.url = "http://" + g.addr + "/mcp"
	return g
}

// stop signals the gateway and waits for it to exit.
func (g *gw) stop(sig syscall.Signal) error {
	select {
	case <-g.done:
		return g.err
	default:
	}
	_ = g.cmd.Process.Signal(sig)
	select {
	case <-g.done:
	case <-time.After(30 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
		g.t.Errorf("gatehouse serve did not stop after %v:\n%s", sig, g.logText())
	}
	return g.err
}

func (g *gw) logText() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.logs, "\n")
}

// callLogs returns the "call" log lines.
func (g *gw) callLogs() []map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []map[string]any
	for _, l := range g.logs {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "call" {
			out = append(out, m)
		}
	}
	return out
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens an MCP session to the gateway with token ("" for none).
func connect(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = &bearer{token: token, base: http.DefaultTransport}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool with args and _meta.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, meta map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if meta != nil {
		p.Meta = mcp.Meta(meta)
	}
	return cs.CallTool(ctx, p)
}

// mustCall calls a tool and fails the test on a protocol error.
func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args, meta map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := call(t, cs, name, args, meta)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func key(k string) map[string]any { return map[string]any{"idempotencyKey": k} }

// text returns the first text content of res.
func text(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// refusal returns the structured content of a gateway refusal, or nil.
func refusal(res *mcp.CallToolResult) map[string]any {
	if res == nil || !res.IsError {
		return nil
	}
	m, _ := res.StructuredContent.(map[string]any)
	return m
}

// wantRefusal checks that res is a refusal with code.
func wantRefusal(t *testing.T, res *mcp.CallToolResult, code string) map[string]any {
	t.Helper()
	m := refusal(res)
	if m == nil || m["code"] != code {
		t.Fatalf("want refusal %q, got isError=%v text=%q structured=%v", code, res.IsError, text(res), res.StructuredContent)
	}
	if !strings.HasPrefix(text(res), "["+code+"]") {
		t.Fatalf("refusal text %q does not begin with [%s]", text(res), code)
	}
	return m
}

// lines returns the non-empty lines of a file ("" when missing).
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}

// cli runs a gatehouse admin command and returns stdout, stderr, exit code.
func cli(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.gatehouse, args...)
	cmd.Dir = dir
	cmd.Env = env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func sha(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// fixtureServer is an inline stdio server entry for the fixture.
func fixtureServer(name string, args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("  %s:\n    type: stdio\n    command: fixture\n    args: [%s]\n", name, strings.Join(q, ", "))
}

// slowServer is an inline stdio server entry for slowmcp.
func slowServer(name, effects, marker string) string {
	return fmt.Sprintf("  %s:\n    type: stdio\n    command: slowmcp\n    args: [\"-effects\", %q, \"-marker\", %q]\n", name, effects, marker)
}
