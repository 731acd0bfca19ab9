package toolset

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/relist"
)

// freeAddr returns a 127.0.0.1 address nothing listens on: a port taken
// and given back.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// serveAt serves fx over streamable HTTP on addr (retrying while the
// port is still held), until the end of the test.
func serveAt(t *testing.T, addr string, fx *testserver.Fixture) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 100 {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listening on %s again: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(fx.Handler(false, nil))
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(func() {
		// The toolset may still hold a stream open (it closes later).
		srv.CloseClientConnections()
		srv.Close()
		for ss := range fx.Server().Sessions() { // their DELETE may not have come through
			_ = ss.Close()
		}
	})
}

// TestSkippedServerRetried: a real go-sdk server over streamable HTTP that
// is down when the toolset loads is skipped, then tried again in the
// background: once it listens, its tools join the map (OnChange once),
// Upstreams has it, a call reaches it, and the diagnostic is gone.
func TestSkippedServerRetried(t *testing.T) {
	addr := freeAddr(t)
	var changes atomic.Int64
	ts := open(t, []Server{remote("late", "http://"+addr+"/mcp", plugin.TransportStreamableHTTP)},
		&Options{OnChange: func() { changes.Add(1) }, ConnectTimeout: 5 * time.Second})
	if m := tools(t, ts); len(m) != 0 {
		t.Fatalf("tools of a server that is down: %v", m)
	}
	if n := ruleCount(ts.Diagnostics(), diag.ConnectionFailure, `server "late" is skipped`); n != 1 {
		t.Fatalf("diagnostics %v", ts.Diagnostics())
	}

	fx := testserver.New(testserver.Config{Tools: []string{"echo"}})
	serveAt(t, addr, fx)
	waitFor(t, "the late server's tools", func() bool { _, ok := tools(t, ts)["late__echo"]; return ok })
	waitFor(t, "OnChange", func() bool { return changes.Load() > 0 })
	if got := call(t, ts, "late__echo", map[string]any{"text": "hi"}); got != "hi" || fx.Calls() != 1 {
		t.Fatalf("call: %q, %d calls at the server", got, fx.Calls())
	}
	ups, err := ts.Upstreams(ctxT(t))
	if err != nil || len(ups) != 1 || ups[0].Name() != "late" {
		t.Fatalf("Upstreams %v %v", ups, err)
	}
	if ds := ts.Diagnostics(); len(ds) != 0 {
		t.Fatalf("diagnostics after it came up: %v", ds)
	}
	if n := changes.Load(); n != 1 {
		t.Fatalf("OnChange called %d times for one server coming up", n)
	}
}

// TestRetriedServerJudged: a server trusted once, whose tools changed
// while it was down, comes back through the drift checks: the changed
// tool is quarantined (its poisoned text never listed, its calls refused
// before reaching the server), the new one withheld.
func TestRetriedServerJudged(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tools.json")
	st := sqliteAt(t, filepath.Join(dir, "g.db"))
	addr := freeAddr(t)
	srv := []Server{remote("bank", "http://"+addr+"/mcp", plugin.TransportStreamableHTTP)}

	// First sight, while it is up: the baseline.
	writeTools(t, file, bankV1()...)
	fx1 := testserver.New(testserver.Config{ToolsFile: file})
	first := httptest.NewUnstartedServer(fx1.Handler(false, nil))
	_ = first.Listener.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	first.Listener = ln
	first.Start()
	ts := open(t, srv, &Options{Store: st})
	if m := tools(t, ts); m["bank__transfer"].State != Active {
		t.Fatalf("first sight: %v", m)
	}
	_ = ts.Close()
	first.Close()
	for ss := range fx1.Server().Sessions() {
		_ = ss.Close()
	}

	// Down at the next load; it comes back with other tools.
	ts = open(t, srv, &Options{Store: st, ConnectTimeout: 5 * time.Second})
	if m := tools(t, ts); len(m) != 0 {
		t.Fatalf("tools while down: %v", m)
	}
	writeTools(t, file, bankV2()...)
	fx := testserver.New(testserver.Config{ToolsFile: file})
	serveAt(t, addr, fx)
	waitFor(t, "the server to be listed again", func() bool { _, ok := tools(t, ts)["bank__balance"]; return ok })
	m := tools(t, ts)
	if q := m["bank__transfer"]; q.State != Quarantined || q.Description != pin.QuarantineDescription("bank", "transfer") {
		t.Fatalf("changed tool %+v", q)
	}
	if _, ok := m["bank__added"]; ok {
		t.Fatal("a tool new after trust is listed")
	}
	for _, ti := range m {
		if strings.Contains(ti.Description, "POISON") {
			t.Fatalf("poisoned text listed: %+v", ti)
		}
	}
	if _, err := ts.Call(ctxT(t), "bank__transfer", map[string]any{"from": "a", "to": "b"}, CallInfo{}); !errors.Is(err, ErrQuarantined) {
		t.Fatalf("call of the quarantined tool: %v", err)
	}
	if got := call(t, ts, "bank__balance", map[string]any{"text": "1"}); got != "1" || fx.Calls() != 1 {
		t.Fatalf("balance %q, %d calls at the server (the quarantined one must not reach it)", got, fx.Calls())
	}
	if n := ruleCount(ts.Diagnostics(), diag.ToolDrift, "transfer"); n == 0 {
		t.Fatalf("no drift diagnostic: %v", ts.Diagnostics())
	}
}

// TestRefusedServerNotRetried: a server the configuration refuses (an
// egress refusal at dial time: its name resolves to a loopback address
// it was not allowed; a stdio server where subprocesses are disallowed)
// is never tried again, with one Warn that says so, while a server that
// was only unreachable is, with one Warn that says it will be retried and
// then one Debug line a try.
func TestRefusedServerNotRetried(t *testing.T) {
	// down accepts connections and closes them: each try is a dial.
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	go func() {
		for {
			c, err := down.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	var lookups atomic.Int64
	logs := &safeBuf{}
	ts := open(t, []Server{
		remote("flaky", "http://"+down.Addr().String()+"/mcp", plugin.TransportStreamableHTTP),
		remote("rebound", "http://rebound.test:1/mcp", plugin.TransportStreamableHTTP),
		stdio("child"),
	}, &Options{DisallowStdio: true, ConnectTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		LookupIP: func(context.Context, string) ([]netip.Addr, error) {
			lookups.Add(1)
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}})
	if err := ts.Connect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if n := ruleCount(ts.Diagnostics(), diag.UnsafeAddress, "rebound"); n != 1 {
		t.Fatalf("diagnostics %v", ts.Diagnostics())
	}
	first := lookups.Load() // the first connection's dials
	count := func(server, level, msg string) int {
		n := 0
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "level="+level) && strings.Contains(l, `msg="`+msg+`"`) && strings.Contains(l, "server="+server+" ") {
				n++
			}
		}
		return n
	}
	// Two retries of the unreachable server: the refused one would have
	// been tried as often.
	waitFor(t, "two retries of the unreachable server", func() bool { return count("flaky", "DEBUG", relist.MsgTryFailed) >= 2 })
	if n := lookups.Load(); n != first {
		t.Errorf("the refused server's name was resolved %d times after the first connection (%d before)", n-first, first)
	}
	for _, s := range []string{"rebound", "child"} {
		if w, r, d := count(s, "WARN", relist.MsgNotRetried), count(s, "WARN", relist.MsgWillRetry), count(s, "DEBUG", relist.MsgTryFailed); w != 1 || r != 0 || d != 0 {
			t.Errorf("refused server %s: %d not-retried warnings (want 1), %d will-retry, %d tries", s, w, r, d)
		}
	}
	if w, n := count("flaky", "WARN", relist.MsgWillRetry), strings.Count(logs.String(), "level=WARN"); w != 1 || n != 3 {
		t.Errorf("unreachable server: %d will-retry warnings (want 1), %d warnings in all (want 3: one a server)\n%s", w, n, logs.String())
	}
}
