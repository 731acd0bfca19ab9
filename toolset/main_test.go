package toolset

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// fixtureBin is the fixture MCP server binary, built once in TestMain.
var fixtureBin string

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m, "toolset-fixture-", func(bin string) { fixtureBin = bin }))
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

// startHTTP starts the fixture binary over HTTP on addr ("127.0.0.1:0" for
// any port); see testserver.StartHTTP.
func startHTTP(t testing.TB, addr string, args ...string) *testserver.Process {
	t.Helper()
	return testserver.StartHTTP(t, fixtureBin, addr, args...)
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
