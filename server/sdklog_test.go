package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is a log destination written by the server's goroutines
// and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestUndeliveredNotificationIsNoWarning: a caller with a session that is
// not listening (it never opened its stream for notifications, as a
// client that went away has none) does not turn each tools/list_changed
// into a warning: the go-sdk's "calling notifications/..." record for it
// is Debug, logged at Debug only; the server's own warnings stay Warn.
func TestUndeliveredNotificationIsNoWarning(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelWarn} {
		t.Run(level.String(), func(t *testing.T) {
			var logs lockedBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))
			var eff effects
			s, _ := newTestServer(t, &eff, nil, func(o *Options) {
				o.ServerOptions = &mcp.ServerOptions{Logger: log}
			})
			url := serveHTTP(t, s, nil)

			// A session that only posts: initialize and initialized, no GET.
			post := func(sid, body string) string {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer tok-alice")
				if sid != "" {
					req.Header.Set("Mcp-Session-Id", sid)
					req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				var b bytes.Buffer
				_, _ = b.ReadFrom(res.Body)
				if res.StatusCode >= 300 {
					t.Fatalf("%s: %d %s", body, res.StatusCode, b.String())
				}
				return res.Header.Get("Mcp-Session-Id")
			}
			sid := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"poster","version":"1"}}}`)
			if sid == "" {
				t.Fatal("no session ID")
			}
			post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

			// A tool added: the go-sdk tells every session its list changed.
			for i := range 3 {
				s.MCPServer().AddTool(&mcp.Tool{Name: "late" + string(rune('a'+i)), InputSchema: map[string]any{"type": "object"}},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return &mcp.CallToolResult{}, nil
					})
			}
			deadline := time.Now().Add(5 * time.Second)
			for level == slog.LevelDebug && !strings.Contains(logs.String(), "calling notifications/tools/list_changed") {
				if time.Now().After(deadline) {
					t.Fatalf("the go-sdk logged no undelivered list_changed (the test no longer sees what it guards); logs:\n%s", logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // at Warn: time for a warning that must not come
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "calling notifications/") && !strings.Contains(line, "level=DEBUG") {
					t.Errorf("an undelivered notification is logged above Debug: %s", line)
				}
			}
		})
	}
}
