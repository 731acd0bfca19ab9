package relay

//lint:file-ignore SA1019 relaying sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Setup adds the relay's middleware to s (it answers resources, prompts,
// completion and logging requests from the upstreams and tracks calling
// sessions). local marks the stdio server, whose one caller is trusted as a
// whole.
func (r *Relay) Setup(s *mcp.Server, local bool) {
	r.smu.Lock()
	r.servers = append(r.servers, s)
	r.smu.Unlock()
	s.AddReceivingMiddleware(r.middleware(local))
	s.AddSendingMiddleware(r.sendingMiddleware)
}

// updateKey carries, in the context of a notification sent on one session
// (notifyUpdated), the resource update it stands for.
type updateKey struct{}

// notifyUpdated sends a notifications/resources/updated on ss alone. The
// go-sdk's server sends one only to every session subscribed to the URI
// (Server.ResourceUpdated), so it is sent as a progress notification of
// ss, which sendingMiddleware turns into the update before it is written:
// on the session's standalone stream, as the go-sdk sends its own updates.
func notifyUpdated(ss *mcp.ServerSession, p *mcp.ResourceUpdatedNotificationParams) {
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), updateKey{}, p), updateTimeout)
	defer cancel()
	_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{})
}

// updateTimeout bounds the sending of one update (the go-sdk's own).
const updateTimeout = 10 * time.Second

// sendingMiddleware writes notifyUpdated's updates, and keeps the updates
// of a server's shared session (onResourceUpdated tells every session
// subscribed to the URI) from a caller that holds its subscription to that
// URI on a session of its own: it hears that session's.
func (r *Relay) sendingMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		switch method {
		case "notifications/progress":
			if p, ok := ctx.Value(updateKey{}).(*mcp.ResourceUpdatedNotificationParams); ok {
				return next(ctx, "notifications/resources/updated", &mcp.ServerRequest[*mcp.ResourceUpdatedNotificationParams]{Session: ss, Params: p})
			}
		case "notifications/resources/updated":
			if p, ok := req.GetParams().(*mcp.ResourceUpdatedNotificationParams); ok && r.holdsOwn(ss, p.URI) {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}

// holdsOwn reports whether the caller of ss holds its subscription to uri
// on a session of its own.
func (r *Relay) holdsOwn(ss *mcp.ServerSession, uri string) bool {
	r.smu.Lock()
	sess := r.sessions[ss]
	r.smu.Unlock()
	if sess == nil || sess.caller == nil {
		return false
	}
	r.mu.Lock()
	st := r.callers[sess.caller.id]
	r.mu.Unlock()
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.subs[uri]
	return ok
}

// ServerOptions sets, in so, the handlers the go-sdk needs to advertise and
// track subscriptions and completion on a server the relay is set up on, and
// returns so.
func (r *Relay) ServerOptions(so *mcp.ServerOptions) *mcp.ServerOptions {
	// The go-sdk grants subscriptions (resources/subscribe and, on
	// 2026-07-28, subscriptions/listen) and list_changed listening only
	// for capabilities it believes it has; the gateway registers none of
	// the upstreams' resources or prompts, so it declares them here. What
	// callers see is the upstreams' union (advertise).
	caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	if so.Capabilities != nil {
		c := *so.Capabilities
		caps = &c
	}
	if caps.Resources == nil {
		caps.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
	}
	if caps.Prompts == nil {
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	so.Capabilities = caps
	so.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
		sess, allow := r.callerOf(ctx, req, r.isLocal(req))
		if err := r.limit(ctx, req, r.isLocal(req), "resources/subscribe"); err != nil {
			return err
		}
		return r.subscribe(ctx, sess.caller, req.Params.URI, allow)
	}
	so.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
		sess, allow := r.callerOf(ctx, req, r.isLocal(req))
		return r.unsubscribe(ctx, sess.caller, req.Params.URI, allow)
	}
	so.CompletionHandler = func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		sess, allow := r.callerOf(ctx, req, r.isLocal(req))
		if err := r.limit(ctx, req, r.isLocal(req), "completion/complete"); err != nil {
			return nil, err
		}
		return r.complete(ctx, sess.caller, req.Params, allow, asker{req, r.isLocal(req)})
	}
	return so
}

// middleware answers the forwarded methods and passes the rest on.
func (r *Relay) middleware(local bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" || method == "notifications/initialized" {
				// The session's capabilities are known once it is initialized.
			} else if sess := r.sessionOf(req, local); sess != nil {
				if !sess.stateless {
					r.place(ctx, req, local, sess.caller)
				}
				sess.lastSeen.Store(time.Now().UnixNano())
				sess.mu.Lock()
				sess.local = local
				if method == "tools/list" || method == "tools/call" {
					sess.toolsSeen = true
				}
				sess.mu.Unlock()
			}
			switch method {
			case "initialize", "server/discover":
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				return r.advertise(ctx, res), nil
			case "resources/list":
				_, allow := r.callerOf(ctx, req, local)
				if err := r.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				rs, err := onePage(req, func() ([]*mcp.Resource, error) { return r.listResources(ctx, allow) })
				if err != nil {
					return nil, err
				}
				return &mcp.ListResourcesResult{Resources: rs}, nil
			case "resources/templates/list":
				_, allow := r.callerOf(ctx, req, local)
				if err := r.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				rs, err := onePage(req, func() ([]*mcp.ResourceTemplate, error) {
					return r.listResourceTemplates(ctx, allow)
				})
				if err != nil {
					return nil, err
				}
				return &mcp.ListResourceTemplatesResult{ResourceTemplates: rs}, nil
			case "resources/read":
				sess, allow := r.callerOf(ctx, req, local)
				p, _ := req.GetParams().(*mcp.ReadResourceParams)
				if p == nil {
					break
				}
				if err := r.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				_, done := r.Begin(ctx, req)
				defer done()
				return r.readResource(ctx, sess.caller, p, allow, asker{req, local})
			case "prompts/list":
				_, allow := r.callerOf(ctx, req, local)
				if err := r.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				ps, err := onePage(req, func() ([]*mcp.Prompt, error) { return r.listPrompts(ctx, allow) })
				if err != nil {
					return nil, err
				}
				return &mcp.ListPromptsResult{Prompts: ps}, nil
			case "prompts/get":
				sess, allow := r.callerOf(ctx, req, local)
				p, _ := req.GetParams().(*mcp.GetPromptParams)
				if p == nil {
					break
				}
				if err := r.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				_, done := r.Begin(ctx, req)
				defer done()
				return r.getPrompt(ctx, sess.caller, p, allow, asker{req, local})
			case "logging/setLevel":
				// Counted: a level may open an upstream session per server.
				if err := r.limit(ctx, req, local, method); err != nil {
					return nil, err
				}
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				sess, allow := r.callerOf(ctx, req, local)
				// A session that lasts one request keeps no level upstream.
				if p, _ := req.GetParams().(*mcp.SetLoggingLevelParams); p != nil && sess.caller != nil && !sess.stateless {
					if err := r.setLoggingLevel(ctx, sess.caller, p.Level, allow); err != nil {
						var je *jsonrpc.Error
						if errors.As(err, &je) {
							return nil, err // a cap kept it from some servers
						}
						r.log.Debug("relay: setting the log level upstream", "err", err)
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
func (r *Relay) advertise(ctx context.Context, res mcp.Result) mcp.Result {
	up, err := r.capabilities(ctx)
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
