package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/wire"
	"github.com/gatehouse-dev/gatehouse/server"
)

// The go-sdk front: every served tool is registered on the go-sdk's
// servers with a handler that hands the call to the pipeline (sdkCall),
// and a middleware hands the pipeline the calls the go-sdk would answer
// without a handler (a name it has not registered), so that those too are
// admitted, rate limited, logged and counted in the same order.

type frontKey struct{}

// sdkFront is the receiving middleware of the go-sdk front.
func (g *Gateway) sdkFront(local bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			creq, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok {
				return next(ctx, method, req)
			}
			ran := new(bool)
			res, err := next(context.WithValue(ctx, frontKey{}, ran), method, req)
			if *ran {
				return res, err
			}
			// The go-sdk answered without a handler: the name is not
			// registered. The pipeline answers it (unknown tool, after
			// the rate limit, as for a hidden one).
			return g.sdkCall(ctx, creq, local)
		}
	}
}

// sdkHandler is the go-sdk handler of every served tool.
func (g *Gateway) sdkHandler(local bool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if ran, ok := ctx.Value(frontKey{}).(*bool); ok {
			*ran = true
		}
		return g.sdkCall(ctx, req, local)
	}
}

// sdkCall reads a call from the go-sdk's request, has the pipeline decide
// it and returns its answer.
func (g *Gateway) sdkCall(ctx context.Context, req *mcp.CallToolRequest, local bool) (*mcp.CallToolResult, error) {
	p := req.Params
	r := &callRequest{tool: p.Name, info: server.InfoOf(req, local), progress: p.GetProgressToken(), front: "sdk"}
	r.args, r.badArgs = objectArgs(p.Arguments)
	r.meta = forwardMeta(p.Meta)
	if v, present := p.Meta[wire.MetaIdempotencyKey]; present {
		r.key, _ = v.(string)
		r.badKey = r.key == ""
	}
	if v, present := p.Meta[wire.MetaRunID]; present {
		r.runID, _ = v.(string)
		r.badRunID = !validRunID(r.runID)
	}
	if req.Session != nil {
		r.session = req.Session.ID()
	}
	if req.Extra != nil {
		r.hdr = req.Extra.Header
	}
	caller, done := g.relay.Begin(ctx, req)
	defer done()
	r.caller = caller
	if caller.TakesInput() {
		// A multi round-trip retry (SEP-2322): the pipeline opens its state.
		r.retry = relay.Retry{Responses: p.InputResponses, State: p.RequestState}
	}
	r.endStream = !g.cfg.HTTP.JSONResponse && req.Extra != nil && req.Extra.CloseSSEStream != nil

	out := g.pipe.call(ctx, r)
	switch {
	case out.noAnswer:
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{})
		return nil, errNoAnswer
	case out.err != nil:
		return nil, out.err
	case out.raw != nil:
		return reply{raw: out.raw}.decoded()
	}
	return out.result, nil
}

// errNoAnswer is the go-sdk front's error for a call whose upstream ended
// its response stream without answering: the caller's stream has been
// ended the same way, and this answer goes nowhere.
var errNoAnswer = errors.New("gateway: the upstream ended the stream without answering")

// objectArgs returns a call's arguments as a JSON object's bytes (nil for
// none or null), or bad=true when they are something else.
func objectArgs(b json.RawMessage) (args json.RawMessage, bad bool) {
	t := strings.TrimSpace(string(b))
	switch {
	case t == "" || t == "null":
		return nil, false
	case t[0] != '{':
		return nil, true
	}
	return b, false
}

// forwardMeta returns the caller's _meta without reserved keys and without
// the keys the gateway consumes, as a fresh map.
func forwardMeta(m mcp.Meta) map[string]any {
	var out map[string]any
	for k, v := range m {
		if strings.HasPrefix(k, wire.ReservedMetaPrefix) || k == wire.MetaIdempotencyKey || k == wire.MetaRunID || k == wire.MetaProgressToken {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(m))
		}
		out[k] = v
	}
	return out
}
