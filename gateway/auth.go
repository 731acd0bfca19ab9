package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/server"
)

// identify maps the verified bearer token to its subject. Without auth every
// caller is localSubject (the gateway then listens on loopback only).
func (g *Gateway) identify(_ context.Context, info server.RequestInfo) (server.Subject, error) {
	if g.cfg.Auth == nil {
		return localSubject, nil
	}
	if info.TokenInfo == nil || info.TokenInfo.UserID == "" {
		return "", errors.New("gateway: no verified token")
	}
	return server.Subject(info.TokenInfo.UserID), nil
}

// relaySubject identifies the caller of a request the relay forwards the
// way tools/call does: from what the transport authenticated, never from
// ctx.
func (g *Gateway) relaySubject(ctx context.Context, req mcp.Request, local bool) (string, bool) {
	info := server.InfoOf(req, local)
	if info.Local {
		return localSubject, true
	}
	s, err := g.identify(ctx, info)
	return string(s), err == nil
}

// relayLimit spends one call of the subject's rateLimit quota on a request
// the relay forwards to an upstream (tool calls and these share it). A
// refusal is a JSON-RPC error carrying the refusal's fields as data: these
// methods have no tool result to carry it.
//
// New binds it late (see New): the relay is built before the server (the
// server's go-sdk options and Setup are the relay's), and the quota is the
// server's, so the relay reaches it through g.srv. No request reaches the
// relay before server.New has returned; one that did would be refused,
// never let through unlimited.
func (g *Gateway) relayLimit(ctx context.Context, subject, method string) error {
	if g.srv == nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway is not serving yet; the request was not forwarded"}
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
	return &jsonrpc.Error{Code: codeRateLimitedRPC, Data: data,
		Message: fmt.Sprintf("[%s] too many requests; retry in %v", refusal.RateLimited, wait.Round(time.Millisecond))}
}

// codeRateLimitedRPC is the JSON-RPC error code of a forwarded request
// (not a tools/call) refused by the rate limit, in the range JSON-RPC
// leaves to servers: the hardened server's code for an initialize it
// refuses so, declared once there.
const codeRateLimitedRPC = server.CodeRateLimited
