package main

//lint:file-ignore SA1019 sampling, roots and logging are deprecated as of 2026-07-28 and still served to callers of the revisions that have them

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cliChildEnv, set in a stdio server entry's env, makes the test binary
// (TestCLIChild) a stdio MCP server that tells its environment through the
// names of the tools it publishes, and forges a log line on its stderr.
const cliChildEnv = "GH_CLI_TEST_STDIO_CHILD"

// TestCLIChild is the child of TestToolsChildEnvironment; without
// cliChildEnv it has nothing to do.
func TestCLIChild(t *testing.T) {
	if os.Getenv(cliChildEnv) != "1" {
		return
	}
	fmt.Fprintln(os.Stderr, "\x1b[2K\rtime=2026-01-01T00:00:00Z level=INFO msg=\"trusted\" server=bank")
	s := mcp.NewServer(&mcp.Implementation{Name: "envchild", Version: "1"}, nil)
	schema := map[string]any{"type": "object"}
	add := func(name string) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	add("alive")
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "GATEHOUSE_"):
			add("leaked_" + strings.ToLower(name))
		case name == "GH_CLI_TEST_PARENT_SECRET":
			add("leaked_parent_secret")
		case name == "GH_CLI_TEST_INHERITED":
			add("inherited")
		case name == "PATH":
			add("has_path")
		}
	}
	// Listed only to a client that announces sampling (as server-everything
	// lists its sampling tool): the gateway's sessions do.
	add("for_sampling")
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && method == "tools/list" {
				if ip := req.GetSession().(*mcp.ServerSession).InitializeParams(); ip == nil || ip.Capabilities == nil || ip.Capabilities.Sampling == nil {
					cp := *lr
					cp.Tools = nil
					for _, tl := range lr.Tools {
						if tl.Name != "for_sampling" {
							cp.Tools = append(cp.Tools, tl)
						}
					}
					return &cp, err
				}
			}
			return res, err
		}
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// TestToolsChildEnvironment: the stdio servers `gatehouse tools` and
// `gatehouse trust` start get what `gatehouse serve` gives them (the
// client capabilities its sessions announce too, so they list what it
// pins): PATH and
// what inheritEnv names, never GATEHOUSE_STORE (it may hold the store's
// password) nor any other variable of the operator's shell; a line the
// child forges on its stderr is quoted data in a log record, not raw bytes.
func TestToolsChildEnvironment(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A command is bare or inside the config's directory: this binary,
	// linked (or copied) there.
	child := filepath.Join(dir, "envchild")
	if err := os.Link(self, child); err != nil {
		b, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(child, b, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "gatehouse.yaml")
	yaml := "inheritEnv: [GH_CLI_TEST_INHERITED]\nservers:\n  bank:\n    type: stdio\n    command: ./envchild" +
		"\n    args: [\"-test.run=^TestCLIChild$\"]\n    env: {" + cliChildEnv + ": \"1\"}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEHOUSE_STORE", "sqlite:"+filepath.Join(dir, "secret.db"))
	t.Setenv("GATEHOUSE_TOKEN_SECRET", "hunter2")
	t.Setenv("GH_CLI_TEST_PARENT_SECRET", "s3cret")
	t.Setenv("GH_CLI_TEST_INHERITED", "yes")

	code, out, errOut := run(t, "tools", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("tools: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"bank__alive", "bank__has_path", "bank__inherited", "bank__for_sampling"} {
		if !strings.Contains(out, `"`+want+`"`) {
			t.Errorf("the child does not publish %s: it lacks what it needs (for_sampling: the client capabilities the gateway's sessions announce)\n%s", want, out)
		}
	}
	if strings.Contains(out, "leaked_") {
		t.Errorf("the child saw the operator's environment:\n%s", out)
	}
	if strings.Contains(errOut, "\x1b") {
		t.Errorf("the child's ANSI escape reached the terminal raw: %q", errOut)
	}
	if !strings.Contains(errOut, `msg="upstream stderr"`) || !strings.Contains(errOut, `line="\x1b[2K\rtime=`) {
		t.Errorf("the child's stderr line is not one quoted field of a record: %q", errOut)
	}

	if code, _, errOut := run(t, "store", "init", "--store", "sqlite:"+filepath.Join(dir, "trust.db")); code != 0 {
		t.Fatalf("store init: exit %d: %s", code, errOut)
	}
	code, _, errOut = run(t, "trust", "--config", cfg, "--store", "sqlite:"+filepath.Join(dir, "trust.db"), "bank")
	if code != 0 {
		t.Fatalf("trust: exit %d: %s", code, errOut)
	}
	if strings.Contains(errOut, "\x1b") {
		t.Errorf("trust: the child's ANSI escape reached the terminal raw: %q", errOut)
	}
}
