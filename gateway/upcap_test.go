package gateway

//lint:file-ignore SA1019 callers here advertise sampling (deprecated by SEP-2577, still in 2025-11-25) to get upstream sessions of their own.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
)

// TestUpstreamSessionsBounded: one token holder opening many sessions,
// each setting a logging level or advertising sampling (each of which
// gets a stdio process of its own), starts at most
// sessions.upstreamPerSubject processes, and all of them together at most
// sessions.upstreamPerServer; the callers over a cap still have their
// calls answered (through the server's shared process), their setLevel
// refused with relay.CodeUpstreamCap, and are counted; another subject
// gets its own up to the server's cap; a caller's ending frees its slot,
// for a capped caller's next call and for a new caller.
func TestUpstreamSessionsBounded(t *testing.T) {
	dir := t.TempDir()
	if _, err := testserver.Build(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "starts")
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
auth:
  tokens:
    - {sha256: %s, subject: alice}
    - {sha256: %s, subject: bob}
sessions: {upstreamPerServer: 3, upstreamPerSubject: 2}
servers:
  s:
    type: stdio
    command: ./fixture
    args: ["-tools", "echo", "-starts", %q]
`, filepath.Join(dir, "g.db"), hashOf("alice-token"), hashOf("bob-token"), file)
	g, url := serveGateway(t, yml, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	started := func() []string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}
	// The gateway's listing of the server for a client without
	// capabilities (relay.Classify) starts one more process at the start.
	const probes = 1
	wantStarted := func(n int, why string) {
		t.Helper()
		if got := len(started()) - probes; got != n {
			t.Fatalf("%d processes started, want %d (%s)", got, n, why)
		}
	}
	wantStarted(1, "the shared one")
	echo := func(who string, cs *mcp.ClientSession) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": who}})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != who {
			t.Fatalf("%s's call: %v %+v", who, err, res)
		}
	}
	capErr := func(err error) bool {
		var je *jsonrpc.Error
		return errors.As(err, &je) && je.Code == relay.CodeUpstreamCap && strings.Contains(je.Message, "s")
	}
	// caller opens a session of token's; with a level set (or sampling
	// advertised) it calls echo and returns its setLevel's error.
	var all []*mcp.ClientSession
	caller := func(token string, sampling bool) (*mcp.ClientSession, error) {
		t.Helper()
		var o *mcp.ClientOptions
		if sampling {
			o = &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{}, nil
			}}
		}
		cs := sessionWith(t, url, token, o)
		all = append(all, cs)
		var err error
		if !sampling {
			err = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
		}
		echo(token, cs)
		return cs, err
	}

	a1, err := caller("alice-token", false)
	if err != nil {
		t.Fatalf("alice's first level: %v", err)
	}
	if _, err := caller("alice-token", true); err != nil {
		t.Fatal(err)
	}
	wantStarted(3, "alice's 2")
	for i := range 3 {
		if _, err := caller("alice-token", false); !capErr(err) {
			t.Fatalf("alice's level #%d over her cap: %v, want code %d", i+3, err, relay.CodeUpstreamCap)
		}
		_, _ = caller("alice-token", true)
	}
	wantStarted(3, "alice's 6 more callers share")
	if _, err := caller("bob-token", false); err != nil {
		t.Fatalf("bob's first level: %v", err)
	}
	wantStarted(4, "bob's first")
	b2, err := caller("bob-token", false)
	if !capErr(err) {
		t.Fatalf("bob's level over the server's cap: %v, want code %d", err, relay.CodeUpstreamCap)
	}
	wantStarted(4, "the server's 3 are taken")
	capped := func(why string) float64 {
		return g.tel.Value("gatehouse_upstream_sessions_capped_total", "server", "s", "cap", why)
	}
	if s, v := capped(telemetry.CappedSubject), capped(telemetry.CappedServer); s != 6 || v != 1 {
		t.Fatalf("capped: %v by subject, %v by server; want 6 and 1", s, v)
	}

	// alice's first caller ends: its process goes, and bob's capped
	// caller's next call takes the slot (a process of its own).
	_ = a1.Close()
	isoWait(t, "bob's capped caller to get the freed slot", func() bool {
		echo("bob-token", b2)
		return len(started())-probes == 5
	})
	// bob's second caller ends too; a new caller of bob's gets its own.
	_ = b2.Close()
	b3 := sessionWith(t, url, "bob-token", nil)
	isoWait(t, "a new caller to get the freed slot", func() bool {
		return b3.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}) == nil
	})
	echo("bob-token", b3)
	wantStarted(6, "the new caller's own")

	// Every caller ends: every process of a caller's own exits (reaped),
	// the shared one lives on.
	for _, cs := range append(all, b3) {
		_ = cs.Close()
	}
	pids := started()
	isoWait(t, "the callers' processes to exit", func() bool {
		for _, p := range pids[1+probes:] {
			if pid, _ := strconv.Atoi(p); syscall.Kill(pid, 0) == nil {
				return false
			}
		}
		return true
	})
	if pid, _ := strconv.Atoi(pids[0]); syscall.Kill(pid, 0) != nil {
		t.Error("the shared process is gone")
	}
}

// TestUpstreamSessionsWithoutAuth: without auth every loopback caller is
// the one subject "local", so sessions.upstreamPerSubject has no default
// there (the per-server cap holds); set, it bounds them together.
func TestUpstreamSessionsWithoutAuth(t *testing.T) {
	dir := t.TempDir()
	if _, err := testserver.Build(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		sessions string
		own      int // callers of the 6 that get a process of their own
	}{{"", 6}, {"sessions: {upstreamPerServer: 5}\n", 5}, {"sessions: {upstreamPerSubject: 2}\n", 2}} {
		file := filepath.Join(t.TempDir(), "starts")
		_, url := serveGateway(t, fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\n%sservers:\n  s:\n    type: stdio\n    command: ./fixture\n    args: [\"-tools\", \"echo\", \"-starts\", %q]\n",
			filepath.Join(t.TempDir(), "g.db"), tc.sessions, file), dir)
		refused := 0
		for range 6 {
			cs := sessionWith(t, url, "", nil)
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != relay.CodeUpstreamCap {
					t.Fatalf("%q: setLevel: %v", tc.sessions, err)
				}
				refused++
			}
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
				t.Fatalf("%q: call: %v %+v", tc.sessions, err, res)
			}
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// One more: the gateway's listing of the server for a client
		// without capabilities (relay.Classify).
		if n := len(strings.Fields(string(b))) - 1; n != 1+tc.own || refused != 6-tc.own {
			t.Errorf("%q: %d processes, %d levels refused; want %d and %d", tc.sessions, n, refused, 1+tc.own, 6-tc.own)
		}
	}
}
