package toolset

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/relist"
)

// logRecord is one JSON slog record, as the gateway writes its log.
type logRecord struct {
	Level  string `json:"level"`
	Msg    string `json:"msg"`
	Server string `json:"server"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	Retry  string `json:"retry"`
	Try    int    `json:"try"`
	Tries  int    `json:"tries"`
	After  string `json:"after"`
}

// records parses the JSON records logged into b so far.
func records(t *testing.T, b *safeBuf) []logRecord {
	t.Helper()
	var out []logRecord
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var r logRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("a log line is not a JSON record: %v: %q", err, line)
		}
		out = append(out, r)
	}
	return out
}

// served names the servers ts serves (Upstreams), in order.
func served(t *testing.T, ts *Toolset) string {
	t.Helper()
	ups, err := ts.Upstreams(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range ups {
		names = append(names, u.Name())
	}
	return strings.Join(names, ",")
}

// matching returns the records of server with message msg.
func matching(rs []logRecord, server, msg string) []logRecord {
	var out []logRecord
	for _, r := range rs {
		if r.Server == server && r.Msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestSkippedServerLogs: a toolset over three real servers (the fixture
// over stdio, up; a go-sdk server over streamable HTTP on 127.0.0.1 that
// is down at the first load and comes up later; a host the egress guard's
// list refuses) logs, for the late one, exactly one Warn that it will be
// retried (its reason and the schedule), one Debug record a failed try
// and nothing else above Debug while it is down, then exactly one Info
// when it joined (its tries, the time since the load), after which its
// tools are listed and it is skipped no more; the refused one logs exactly
// one Warn that it is not retried and why, and is never tried; the one up
// logs no skip. Upstreams has the late one once it joined.
func TestSkippedServerLogs(t *testing.T) {
	addr := freeAddr(t)
	logs := &safeBuf{}
	ts := open(t, []Server{
		stdio("up", "-tools", "echo"),
		remote("late", "http://"+addr+"/mcp", plugin.TransportStreamableHTTP),
		remote("elsewhere", "http://elsewhere.test/mcp", plugin.TransportStreamableHTTP),
	}, &Options{AllowedHosts: []string{"127.0.0.1"}, ConnectTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})

	m := tools(t, ts)
	if _, ok := m["up__echo"]; !ok || len(m) != 1 {
		t.Fatalf("tools at the first load: %v", m)
	}
	if n, m := ruleCount(ts.Diagnostics(), diag.ConnectionFailure, `"late"`), ruleCount(ts.Diagnostics(), diag.HostNotAllowed, `"elsewhere"`); n != 1 || m != 1 {
		t.Fatalf("diagnostics at the first load: %v", ts.Diagnostics())
	}
	if s := served(t, ts); s != "up" {
		t.Fatalf("served at the first load: %s", s)
	}

	// A failed try while it is down (at Debug: the log stays quiet).
	waitFor(t, "a failed try of the late server", func() bool {
		return len(matching(records(t, logs), "late", relist.MsgTryFailed)) > 0
	})
	fx := testserver.New(testserver.Config{Tools: []string{"echo"}})
	serveAt(t, addr, fx)
	waitFor(t, "the joined record", func() bool { return len(matching(records(t, logs), "late", relist.MsgJoined)) > 0 })
	if _, ok := tools(t, ts)["late__echo"]; !ok {
		t.Fatalf("the late server joined, but its tools are not listed: %v", tools(t, ts))
	}
	if got := call(t, ts, "late__echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Fatalf("call of the joined server: %q", got)
	}
	if s := served(t, ts); s != "up,late" {
		t.Fatalf("served after the join: %s", s)
	}

	rs := records(t, logs)
	will := matching(rs, "late", relist.MsgWillRetry)
	if len(will) != 1 || will[0].Level != "WARN" || will[0].Rule != string(diag.ConnectionFailure) ||
		!strings.Contains(will[0].Reason, `server "late" is skipped`) || !strings.Contains(will[0].Retry, "up to every 1m0s") {
		t.Errorf("will-retry records of the late server: %+v", will)
	}
	fails := matching(rs, "late", relist.MsgTryFailed)
	for i, r := range fails {
		if r.Level != "DEBUG" || r.Try != i+1 || r.Reason == "" {
			t.Errorf("failed try %d: %+v", i+1, r)
		}
	}
	joined := matching(rs, "late", relist.MsgJoined)
	if len(joined) != 1 || joined[0].Level != "INFO" || joined[0].Tries != len(fails)+1 || joined[0].After == "" {
		t.Errorf("joined records of the late server (after %d failed tries): %+v", len(fails), joined)
	} else if d, err := time.ParseDuration(joined[0].After); err != nil || d < time.Second {
		t.Errorf("joined after %q: the first try is about a second after the load", joined[0].After)
	}
	refused := matching(rs, "elsewhere", relist.MsgNotRetried)
	if len(refused) != 1 || refused[0].Level != "WARN" || refused[0].Rule != string(diag.HostNotAllowed) ||
		!strings.HasPrefix(refused[0].Retry, "never: ") || refused[0].Reason == "" {
		t.Errorf("not-retried records of the refused server: %+v", refused)
	}
	for _, r := range rs {
		switch {
		case r.Server == "up" && r.Level != "DEBUG":
			t.Errorf("the server that was up logged %+v", r)
		case r.Server == "elsewhere" && r.Msg != relist.MsgNotRetried:
			t.Errorf("the refused server was tried: %+v", r)
		case r.Server == "late" && r.Level == "WARN" && r.Msg != relist.MsgWillRetry:
			t.Errorf("another warning of the late server: %+v", r)
		}
	}
}

// TestSkippedNotDrifted: a server whose tools drifted is served, not
// skipped: a tool changed since its trust is quarantined (a tool-drift
// diagnostic), the server is among the Upstreams, and no skip is logged
// for it.
func TestSkippedNotDrifted(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/tools.json"
	st := sqliteAt(t, dir+"/g.db")
	srv := []Server{stdio("bank", "-tools-file", file)}
	writeTools(t, file, bankV1()...)
	first := open(t, srv, &Options{Store: st})
	if m := tools(t, first); m["bank__transfer"].State != Active {
		t.Fatalf("first sight: %v", m)
	}
	_ = first.Close()

	writeTools(t, file, bankV2()...)
	logs := &safeBuf{}
	ts := open(t, srv, &Options{Store: st, Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if m := tools(t, ts); m["bank__transfer"].State != Quarantined {
		t.Fatalf("the changed tool is not quarantined: %v", m)
	}
	if n := ruleCount(ts.Diagnostics(), diag.ToolDrift, "transfer"); n == 0 {
		t.Fatalf("no drift diagnostic: %v", ts.Diagnostics())
	}
	if s := served(t, ts); s != "bank" {
		t.Fatalf("a drifted server is not served: %q", s)
	}
	for _, r := range records(t, logs) {
		if strings.Contains(r.Msg, "skipped") {
			t.Errorf("a skip logged for a drifted server: %+v", r)
		}
	}
}
