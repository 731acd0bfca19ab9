package relay

//lint:file-ignore SA1019 the callers here advertise sampling (deprecated by SEP-2577, still in 2025-11-25) to get upstream sessions of their own.

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// These tests were gateway/forward's (Forwarder is now Relay).

// upstream is a real go-sdk server (one tool, one resource, subscribable;
// logging, as go-sdk servers have) over stateful streamable HTTP on
// 127.0.0.1. opened counts the sessions ever initialized.
func upstream(t *testing.T) (_ *mcp.Server, url string, opened *atomic.Int64) {
	t.Helper()
	opened = new(atomic.Int64)
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { opened.Add(1) },
	})
	mcp.AddTool(s, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "up://r", Name: "r"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "r"}}}, nil
	})
	return s, serveHTTP(t, s), opened
}

// gateway serves a relay over streamable HTTP (stateless or not) in front
// of the upstream at upURL, spoken to at 2025-11-25.
func gateway(t *testing.T, upURL string, stateless bool) (*Relay, string) {
	t.Helper()
	r := openRelay(t, []toolset.Server{remote("up", upURL)}, &toolset.Options{ProtocolVersion: "2025-11-25"}, &Options{Stateless: stateless})
	if _, err := r.Toolset().Tools(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	_, url := front(t, r, stateless)
	return r, url
}

// sampler is the options of a caller that advertises sampling (and so
// would get an upstream session of its own on a stateful revision).
func sampler() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{}, nil
		},
	}
}

// TestStatelessCallersKeepNothing: a stateless gateway's callers, on
// either revision, share the upstream session (none is made per request,
// not even for a logging level), and their per-request state is released.
func TestStatelessCallersKeepNothing(t *testing.T) {
	up, upURL, opened := upstream(t)
	r, url := gateway(t, upURL, true)
	ctx := ctxT(t)
	for _, version := range []string{"", "2025-11-25"} {
		cs := dial(t, url, version, sampler())
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
		if n, ever := sessions(up), opened.Load(); n != 1 || ever != 1 {
			t.Fatalf("upstream sessions = %d (%d opened) with a stateless caller (%q), want 1 (the shared one)", n, ever, version)
		}
		_ = cs.Close()
	}
	waitFor(t, "every per-request session to be released", func() bool { return r.liveSessions() == 0 && r.leftovers() == 0 })
}

// TestStatefulCallerReleased: a stateful caller that can be asked
// (sampling) gets an upstream session of its own, closed when its session
// ends.
func TestStatefulCallerReleased(t *testing.T) {
	up, upURL, _ := upstream(t)
	r, url := gateway(t, upURL, false)
	ctx := ctxT(t)
	cs := dial(t, url, "2025-11-25", sampler())
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://r"}); err != nil {
		t.Fatal(err)
	}
	if n := sessions(up); n != 2 {
		t.Fatalf("upstream sessions = %d, want 2 (shared and the caller's)", n)
	}
	other := dial(t, url, "2025-11-25", sampler())
	if _, err := other.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://r"}); err != nil {
		t.Fatal(err)
	}
	if n := sessions(up); n != 3 {
		t.Fatalf("upstream sessions = %d, want 3", n)
	}
	_ = cs.Close()
	waitFor(t, "the caller's upstream session to close", func() bool { return sessions(up) == 2 })
	_ = other.Close()
	waitFor(t, "every session to be released", func() bool { return r.liveSessions() == 0 && r.leftovers() == 0 && sessions(up) == 1 })
}
