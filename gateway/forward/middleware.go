package forward

//lint:file-ignore SA1019 forwarding sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this file's job.

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// middleware answers the forwarded methods and passes the rest on.
func (f *Forwarder) middleware(local bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" || method == "notifications/initialized" {
				// The session's capabilities are known once it is initialized.
			} else if sess := f.sessionOf(req, local); sess != nil {
				sess.lastSeen.Store(time.Now().UnixNano())
				sess.mu.Lock()
				sess.local = local
				if method == "tools/list" || method == "tools/call" {
					sess.toolsSeen = true
				}
				sess.mu.Unlock()
			}
			ts := f.o.Toolset
			switch method {
			case "initialize", "server/discover":
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				return f.advertise(ctx, res), nil
			case "resources/list":
				sess, allow := f.callerOf(ctx, req, local)
				rs, err := onePage(req, func() ([]*mcp.Resource, error) { return ts.ListResources(ctx, sess.caller, allow) })
				if err != nil {
					return nil, err
				}
				return &mcp.ListResourcesResult{Resources: rs}, nil
			case "resources/templates/list":
				sess, allow := f.callerOf(ctx, req, local)
				rs, err := onePage(req, func() ([]*mcp.ResourceTemplate, error) {
					return ts.ListResourceTemplates(ctx, sess.caller, allow)
				})
				if err != nil {
					return nil, err
				}
				return &mcp.ListResourceTemplatesResult{ResourceTemplates: rs}, nil
			case "resources/read":
				sess, allow := f.callerOf(ctx, req, local)
				p, _ := req.GetParams().(*mcp.ReadResourceParams)
				if p == nil {
					break
				}
				if err := f.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				_, done := f.Begin(ctx, req)
				defer done()
				return ts.ReadResource(ctx, sess.caller, p, allow)
			case "prompts/list":
				sess, allow := f.callerOf(ctx, req, local)
				ps, err := onePage(req, func() ([]*mcp.Prompt, error) { return ts.ListPrompts(ctx, sess.caller, allow) })
				if err != nil {
					return nil, err
				}
				return &mcp.ListPromptsResult{Prompts: ps}, nil
			case "prompts/get":
				sess, allow := f.callerOf(ctx, req, local)
				p, _ := req.GetParams().(*mcp.GetPromptParams)
				if p == nil {
					break
				}
				if err := f.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				_, done := f.Begin(ctx, req)
				defer done()
				return ts.GetPrompt(ctx, sess.caller, p, allow)
			case "logging/setLevel":
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				sess, allow := f.callerOf(ctx, req, local)
				// A session that lasts one request keeps no level upstream.
				if p, _ := req.GetParams().(*mcp.SetLoggingLevelParams); p != nil && sess.caller != nil && !sess.stateless {
					if err := ts.SetLoggingLevel(ctx, sess.caller, p.Level, allow); err != nil {
						f.log.Debug("forward: setting the log level upstream", "err", err)
					}
				}
				return res, nil
			}
			return next(ctx, method, req)
		}
	}
}

// onePage answers a list request in one page: a cursor is invalid, and
// no items is an empty list (never null on the wire).
func onePage[T any](req mcp.Request, list func() ([]T, error)) ([]T, error) {
	var cursor string // a request without params has none
	switch p := req.GetParams().(type) {
	case *mcp.ListResourcesParams:
		if p != nil {
			cursor = p.Cursor
		}
	case *mcp.ListResourceTemplatesParams:
		if p != nil {
			cursor = p.Cursor
		}
	case *mcp.ListPromptsParams:
		if p != nil {
			cursor = p.Cursor
		}
	}
	if cursor != "" {
		return nil, errInvalidCursor
	}
	items, err := list()
	if items == nil && err == nil {
		items = []T{}
	}
	return items, err
}

// errInvalidCursor answers a list request with a cursor: the gateway
// answers every list in one page and hands out no cursors, so any cursor
// is invalid (JSON-RPC invalid params, as the go-sdk answers for its own
// lists).
var errInvalidCursor = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor: the gateway answers lists in one page"}

// advertise adds the upstreams' resources, prompts, completions and
// logging capabilities to an initialize or discover result.
func (f *Forwarder) advertise(ctx context.Context, res mcp.Result) mcp.Result {
	up, err := f.o.Toolset.Capabilities(ctx)
	if err != nil {
		return res
	}
	merge := func(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
		var out mcp.ServerCapabilities
		if c != nil {
			out = *c
		}
		if up.Resources != nil {
			r := *up.Resources
			out.Resources = &r
		} else {
			out.Resources = nil
		}
		if up.Prompts != nil {
			out.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		} else {
			out.Prompts = nil
		}
		if up.Completions != nil {
			out.Completions = &mcp.CompletionCapabilities{}
		} else {
			out.Completions = nil
		}
		return &out
	}
	switch r := res.(type) {
	case *mcp.InitializeResult:
		cp := *r
		cp.Capabilities = merge(r.Capabilities)
		return &cp
	case *mcp.DiscoverResult:
		cp := *r
		cp.Capabilities = merge(r.Capabilities)
		return &cp
	}
	return res
}
