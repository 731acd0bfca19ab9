package toolset

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// fixtureBin is the fixture MCP server binary, built once in TestMain.
var fixtureBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolset-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureBin, err = testserver.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// stdio returns a code-configured stdio server running the fixture.
func stdio(name string, args ...string) Server {
	return Server{Config: plugin.ServerConfig{Name: name, Type: plugin.TransportStdio, Command: fixtureBin, Args: args}}
}

// open opens a toolset and closes it at the end of the test.
func open(t *testing.T, servers []Server, opts *Options) *Toolset {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 500 * time.Millisecond
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 20 * time.Second
	}
	ts, err := Open(context.Background(), servers, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ts
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func tools(t *testing.T, ts *Toolset) map[string]ToolInfo {
	t.Helper()
	list, err := ts.Tools(ctxT(t))
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	m := map[string]ToolInfo{}
	for _, ti := range list {
		m[ti.Name] = ti
	}
	return m
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("empty result %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	return tc.Text
}

func call(t *testing.T, ts *Toolset, name string, args any) string {
	t.Helper()
	res, err := ts.Call(ctxT(t), name, args, CallInfo{})
	if err != nil {
		t.Fatalf("Call %s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("Call %s: tool error %s", name, resultText(t, res))
	}
	return resultText(t, res)
}

// httpFixture is the fixture binary serving HTTP on 127.0.0.1.
type httpFixture struct {
	t      testing.TB
	addr   string // host:port
	record string
	args   []string
	cmd    *exec.Cmd
}

// startHTTP starts the fixture over HTTP (streamable, or SSE with "-sse" in
// args) on addr ("127.0.0.1:0" for any port), recording requests.
func startHTTP(t testing.TB, addr string, args ...string) *httpFixture {
	t.Helper()
	f := &httpFixture{t: t, record: filepath.Join(t.TempDir(), "requests.jsonl"), args: args}
	f.start(addr)
	t.Cleanup(f.stop)
	return f
}

func (f *httpFixture) start(addr string) {
	f.t.Helper()
	args := append([]string{"-http", addr, "-record", f.record}, f.args...)
	cmd := exec.Command(fixtureBin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.t.Fatalf("fixture did not start: %v", err)
	}
	f.addr = strings.TrimPrefix(strings.TrimSpace(line), "listening http://")
	f.cmd = cmd
}

func (f *httpFixture) stop() {
	if f.cmd == nil {
		return
	}
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = f.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = f.cmd.Process.Kill()
		<-done
	}
	f.cmd = nil
}

// restart stops the server and starts a new one on the same port.
func (f *httpFixture) restart() {
	f.t.Helper()
	addr := f.addr
	f.stop()
	var err error
	for i := 0; i < 50; i++ {
		if err = tryListen(addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.start(addr)
}

func tryListen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

func (f *httpFixture) url(host string) string {
	_, port, _ := strings.Cut(f.addr, ":")
	if host == "" {
		return "http://" + f.addr + "/mcp"
	}
	return "http://" + host + ":" + port + "/mcp"
}

func (f *httpFixture) requests() []testserver.Request {
	f.t.Helper()
	b, err := os.ReadFile(f.record)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	var out []testserver.Request
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r testserver.Request
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func remote(name, url string, typ plugin.Transport) Server {
	return Server{Config: plugin.ServerConfig{Name: name, Type: typ, URL: url}}
}

// descendants lists the processes below this one.
func descendants(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		parent[pid] = ppid
	}
	me := os.Getpid()
	var out []int
	for pid := range parent {
		for p := parent[pid]; p != 0; p = parent[p] {
			if p == me {
				out = append(out, pid)
				break
			}
			if _, ok := parent[p]; !ok {
				break
			}
		}
	}
	return out
}

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
