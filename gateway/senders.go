package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// A sender carries one tools/call to its upstream and its answer back. The
// pipeline decides everything else; a sender only sends (call in
// pipeline.go is the only caller of send).
type sender interface {
	send(ctx context.Context, tg toolset.Target, c relay.Call) (reply, error)
}

// reply is an upstream's answer to a tools/call: its result object as
// bytes (the byte sender) or as a value (the go-sdk's client).
type reply struct {
	raw    json.RawMessage
	result *mcp.CallToolResult
	via    string // the sender that carried the call: "sdk" or "bytes"
}

// decoded returns the answer as a value, decoding bytes as the go-sdk's
// client would.
func (r reply) decoded() (*mcp.CallToolResult, error) {
	if r.result != nil || r.raw == nil {
		return r.result, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(r.raw, &res); err != nil {
		return nil, &toolset.Error{Code: toolset.CodeCallFailed, Err: fmt.Errorf("the server's result does not decode: %w", err)}
	}
	return &res, nil
}

// sdkSender sends through the go-sdk's client (relay.CallTool): any
// transport, any caller.
type sdkSender struct{ r *relay.Relay }

func (s sdkSender) send(ctx context.Context, tg toolset.Target, c relay.Call) (reply, error) {
	res, err := s.r.CallTool(ctx, tg, c)
	if err != nil {
		err = sdkFailure(err, tg)
	}
	return reply{result: res, via: "sdk"}, err
}

// sdkFailure tells apart, in the go-sdk client's error for a call, what
// the byte sender tells apart from what it reads: a bad answer (the
// toolset's HTTP client put an error in its place: the call failed, the
// connection is sound) and a request that never reached the server (the
// go-sdk wraps the HTTP client's *url.Error as "rejected by transport",
// which says nothing of the connection: it is one that failed).
func sdkFailure(err error, tg toolset.Target) error {
	if known := (*toolset.Error)(nil); errors.As(err, &known) && known.Code != toolset.CodeCallFailed {
		return err // refusals, reconnection failures: already told
	}
	if te, ok := toolset.AsBadAnswer(err); ok {
		te.Server, te.Tool = tg.Upstream.Name(), tg.Tool
		return te
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return &toolset.Error{Code: toolset.CodeConnectionFailed, Server: tg.Upstream.Name(), Tool: tg.Tool, Err: ue}
	}
	return err
}

// byteSender sends the arguments and returns the result as bytes
// (relay.CallBytes). When the upstream's session went between the choice
// and the call (relay.ErrNoBytePath: nothing was sent), the go-sdk's
// client takes it.
type byteSender struct{ r *relay.Relay }

func (s byteSender) send(ctx context.Context, tg toolset.Target, c relay.Call) (reply, error) {
	raw, err := s.r.CallBytes(ctx, tg, c)
	if err == relay.ErrNoBytePath {
		return sdkSender(s).send(ctx, tg, c)
	}
	return reply{raw: raw, via: "bytes"}, err
}

// senderFor chooses the sender of one call, the only place that does: a
// server with auth: user or exchange gets the subject's own upstream
// session (subjectSender, upauth.go); otherwise bytes when http.bytePath
// allows them and the relay can carry this call that way now (a shared
// streamable HTTP session, nothing to route back to the caller), else the
// go-sdk's client.
func (p *pipeline) senderFor(tg toolset.Target, c *relay.Call, subject server.Subject, info server.RequestInfo) sender {
	if p.upauth.PerSubject(tg.Upstream.Name()) {
		return subjectSender{m: p.upauth, r: p.relay, subject: string(subject), token: callerToken(info.TokenInfo)}
	}
	if p.bytes && p.relay.BytesReady(tg, c) {
		return byteSender{p.relay}
	}
	return sdkSender{p.relay}
}
