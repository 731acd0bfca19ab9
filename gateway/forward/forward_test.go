package forward

//lint:file-ignore SA1019 the callers here advertise sampling and set log levels (deprecated by SEP-2577, still in 2025-11-25) to exercise forwarding.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// upstream is a real go-sdk server (one tool, one resource, subscribable)
// over stateful streamable HTTP on 127.0.0.1.
func upstream(t *testing.T) (*mcp.Server, string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	mcp.AddTool(s, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "up://r", Name: "r"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "r"}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { hs.CloseClientConnections() })
	return s, hs.URL
}

// gateway serves a Forwarder over streamable HTTP (stateless or not) in
// front of the upstream at upURL.
func gateway(t *testing.T, upURL string, stateless bool) (*Forwarder, string) {
	t.Helper()
	ctx := context.Background()
	ts, err := toolset.Open(ctx, []toolset.Server{{Config: plugin.ServerConfig{Name: "up", Type: plugin.TransportStreamableHTTP, URL: upURL}}},
		&toolset.Options{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	if _, err := ts.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	f := New(Options{Toolset: ts, Stateless: stateless})
	s := mcp.NewServer(&mcp.Implementation{Name: "gw", Version: "1"}, f.ServerOptions(&mcp.ServerOptions{}))
	f.Setup(s, false)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(hs.Close)
	return f, hs.URL
}

func count(up *mcp.Server) int {
	n := 0
	for range up.Sessions() {
		n++
	}
	return n
}

func (f *Forwarder) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// connect connects a caller that advertises sampling (and so would get an
// upstream session of its own on a stateful revision).
func connect(t *testing.T, url, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestStatelessCallersKeepNothing: a stateless gateway's callers, on
// either revision, share the upstream session (none is made per request),
// and their per-request state is released.
func TestStatelessCallersKeepNothing(t *testing.T) {
	up, upURL := upstream(t)
	f, url := gateway(t, upURL, true)
	ctx := context.Background()
	for _, version := range []string{"", "2025-11-25"} {
		cs := connect(t, url, version)
		for range 5 {
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://r"})
			if err != nil || rr.Contents[0].Text != "r" {
				t.Fatalf("read (%q): %v, %v", version, rr, err)
			}
		}
		_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}) // refused or kept nowhere
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://r"}); err != nil {
			t.Fatal(err)
		}
		if n := count(up); n != 1 {
			t.Fatalf("upstream sessions = %d with a stateless caller (%q), want 1 (the shared one)", n, version)
		}
		_ = cs.Close()
	}
	eventually(t, "every per-request session to be released", func() bool { return f.live() == 0 })
}

// TestStatefulCallerReleased: a stateful caller that can be asked
// (sampling) gets an upstream session of its own, closed when its session
// ends.
func TestStatefulCallerReleased(t *testing.T) {
	up, upURL := upstream(t)
	f, url := gateway(t, upURL, false)
	ctx := context.Background()
	cs := connect(t, url, "2025-11-25")
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://r"}); err != nil {
		t.Fatal(err)
	}
	if n := count(up); n != 2 {
		t.Fatalf("upstream sessions = %d, want 2 (shared and the caller's)", n)
	}
	other := connect(t, url, "2025-11-25")
	if _, err := other.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://r"}); err != nil {
		t.Fatal(err)
	}
	if n := count(up); n != 3 {
		t.Fatalf("upstream sessions = %d, want 3", n)
	}
	_ = cs.Close()
	eventually(t, "the caller's upstream session to close", func() bool { return count(up) == 2 })
	_ = other.Close()
	eventually(t, "every session to be released", func() bool { return f.live() == 0 && count(up) == 1 })
}
