package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/forward"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// newForwarder makes the forwarder of resources, prompts, completion,
// logging, progress and server-to-client requests (package forward).
func (g *Gateway) newForwarder(ts *toolset.Toolset) *forward.Forwarder {
	return forward.New(forward.Options{
		Toolset: ts,
		Subject: g.forwardSubject,
		Visible: g.serverVisible,
		Logger:  g.log,
		// Stateless HTTP sessions last one request: no upstream session
		// of their own.
		Stateless: g.cfg.HTTP.Stateless,
		Limit:     g.forwardLimit,
	})
}

// forwardLimit spends one call of the subject's rateLimit quota on a
// forwarded request (tool calls and these share it). A refusal is a
// JSON-RPC error carrying the refusal's fields as data: these methods have
// no tool result to carry it.
func (g *Gateway) forwardLimit(ctx context.Context, subject, method string) error {
	if g.srv == nil {
		return nil
	}
	ok, wait, err := g.srv.RateLimit(ctx, server.Subject(subject), method)
	if err != nil {
		g.log.Error("gateway: rate limit unavailable; request refused", "method", method, "err", err)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the rate limit could not be checked; the request was not forwarded"}
	}
	if ok {
		return nil
	}
	wait = max(wait, time.Millisecond)
	data, _ := json.Marshal(map[string]any{"code": refusal.RateLimited, "retryable": true, "retryAfterMs": wait.Milliseconds()})
	return &jsonrpc.Error{Code: CodeRateLimitedRPC, Data: data,
		Message: fmt.Sprintf("[%s] too many requests; retry in %v", refusal.RateLimited, wait.Round(time.Millisecond))}
}

// CodeRateLimitedRPC is the JSON-RPC error code of a forwarded request
// (not a tools/call) refused by the rate limit, in the range JSON-RPC
// leaves to servers.
const CodeRateLimitedRPC = -32029

// forwardSubject identifies the caller of a forwarded request the way
// tools/call does: from what the transport authenticated, never from ctx.
func (g *Gateway) forwardSubject(ctx context.Context, req mcp.Request, local bool) (string, bool) {
	if local {
		return LocalSubject, true
	}
	var info server.RequestInfo
	if ex := req.GetExtra(); ex != nil {
		info.TokenInfo = ex.TokenInfo
	}
	s, err := g.identify(ctx, info)
	return string(s), err == nil
}

// serverVisible reports whether subject may see the resources and prompts
// of a server: when it may see at least one of the server's tools.
func (g *Gateway) serverVisible(srv, subject string) bool {
	g.mu.RLock()
	var names []string
	for name, t := range g.tools {
		if t.Server == srv {
			names = append(names, name)
		}
	}
	g.mu.RUnlock()
	for _, name := range names {
		if g.visible(name, server.Subject(subject)) {
			return true
		}
	}
	return false
}

// forwardListChanged and forwardResourceUpdated reach the forwarder once it
// exists (the toolset is opened before it).
func (g *Gateway) forwardListChanged(srv string, what toolset.ListChange) {
	if f := g.forwarder(); f != nil {
		f.OnListChanged(srv, what)
	}
}

func (g *Gateway) forwardResourceUpdated(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) {
	if f := g.forwarder(); f != nil {
		f.OnResourceUpdated(ctx, p)
	}
}

func (g *Gateway) forwarder() *forward.Forwarder {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.fwd
}

// forwardCall returns what a tools/call forwards for its session: the
// caller and its progress token, and the function that ends the call's
// registration.
func (g *Gateway) forwardCall(ctx context.Context, req *mcp.CallToolRequest) (*toolset.Caller, any, func()) {
	f := g.forwarder()
	if f == nil {
		return nil, nil, func() {}
	}
	caller, done := f.Begin(ctx, req)
	return caller, req.Params.GetProgressToken(), done
}
