package toolset

//lint:file-ignore SA1019 sampling, roots and logging are deprecated as of 2026-07-28 and still served to callers of the revisions that have them

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset/internal/transport"
)

// newSharedClient returns the client of the shared upstream sessions. It
// announces Options.ClientCapabilities (none by default), so that servers
// list the tools they offer such clients; it answers no request itself
// (SessionHooks.Middleware may answer the requests of a call that carries
// its caller in its context; the rest are refused). A server's input
// requests (a multi round-trip result, 2026-07-28) are not fulfilled by
// the client: the result reaches whoever sent the request (a relay passes
// it on to a caller that can answer; Call answers an error).
func (t *Toolset) newSharedClient() *mcp.Client {
	h := t.hooks()
	o := &mcp.ClientOptions{
		Logger:         t.log,
		Capabilities:   t.clientCapabilities(),
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler: func(ctx context.Context, r *mcp.ToolListChangedRequest) {
			t.onListChanged(r.Session, ToolsChanged)
		},
		ResourceListChangedHandler: func(ctx context.Context, r *mcp.ResourceListChangedRequest) {
			t.onListChanged(r.Session, ResourcesChanged)
		},
		PromptListChangedHandler: func(ctx context.Context, r *mcp.PromptListChangedRequest) {
			t.onListChanged(r.Session, PromptsChanged)
		},
	}
	if h.ResourceUpdated != nil {
		o.ResourceUpdatedHandler = func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if c := t.connOf(r.Session); c != nil {
				h.ResourceUpdated(ctx, c.name, r.Params)
			}
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "gatehouse", Version: "0.1.0"}, o)
	// (Sampling and elicitation without a handler: the go-sdk refuses them.)
	mws := []mcp.Middleware{transport.Refuse("roots/list", ErrNoRoots)}
	if h.Middleware != nil {
		mws = append([]mcp.Middleware{h.Middleware}, mws...)
	}
	c.AddReceivingMiddleware(mws...)
	return c
}

// ErrNoRoots answers roots/list on a shared upstream session that no
// SessionHooks.Middleware answered: the session serves no one caller
// whose roots it could give.
var ErrNoRoots = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: "roots/list: the gateway forwards server-to-client requests only to a caller with an upstream session of its own (a stateful caller that advertised sampling or elicitation)"}

// hooks returns the session hooks (never nil).
func (t *Toolset) hooks() *SessionHooks {
	if t.opts.SessionHooks == nil {
		return &SessionHooks{}
	}
	return t.opts.SessionHooks
}

// sharedTap is the notification tap of c's shared sessions.
func (t *Toolset) sharedTap(c *conn) func(method string, params json.RawMessage) {
	n := t.hooks().Notification
	if n == nil {
		return nil
	}
	return func(method string, params json.RawMessage) { n(c.name, method, params) }
}

// onListChanged re-lists a server (its tools, prompts and resource
// templates judged by the drift checks, then OnChange) and reports the
// change. Re-listings are coalesced per server (relistSoon): at most one
// runs and one waits, however many announcements arrive. The hook is told
// at once; what a relay then lists is judged as it is listed.
func (t *Toolset) onListChanged(sess *mcp.ClientSession, what ListChange) {
	c := t.connOf(sess)
	if c == nil {
		return
	}
	if t.isClosed() {
		return
	}
	// Tools, prompts and resources alike: one re-listing judges them all,
	// and a burst of announcements is coalesced (relistSoon).
	c.relistSoon()
	if f := t.hooks().ListChanged; f != nil {
		f(c.name, what)
	}
}

// connOf returns the server whose shared session sess is now (nil: none,
// e.g. a session already replaced).
func (t *Toolset) connOf(sess *mcp.ClientSession) *conn {
	for _, c := range t.conns {
		if c.liveSession() == sess {
			return c
		}
	}
	return nil
}

func (c *conn) liveSession() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// clientCapabilities returns a copy of Options.ClientCapabilities (empty
// when unset).
func (t *Toolset) clientCapabilities() *mcp.ClientCapabilities {
	return copyCapabilities(t.opts.ClientCapabilities)
}

// copyCapabilities copies the parts of c a Toolset announces: sampling,
// elicitation and roots.
func copyCapabilities(c *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	out := &mcp.ClientCapabilities{}
	if c == nil {
		return out
	}
	if c.Sampling != nil {
		s := *c.Sampling
		out.Sampling = &s
	}
	if c.Elicitation != nil {
		e := *c.Elicitation
		out.Elicitation = &e
	}
	if c.RootsV2 != nil {
		r := *c.RootsV2
		out.RootsV2 = &r
	} else if c.Roots.ListChanged {
		out.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	return out
}

// ClientCapabilities returns what the server's shared session announces of
// the client (Options.ClientCapabilities): a session a caller opens to the
// server announcing the same is listed as the shared one is.
func (u *Upstream) ClientCapabilities() *mcp.ClientCapabilities {
	return u.c.ts.clientCapabilities()
}

// ToolNamesFor lists the names of the tools the server offers a client
// that announces caps, on a session opened for that alone (through a
// transport built as the shared one is: the egress guard, the bearer
// token, a new stdio child) and closed before it returns, bounded by
// Options.ConnectTimeout. Nothing is judged and nothing else goes through
// it: a relay compares such listings to learn which of the server's tools
// it offers only to clients with a capability (a server may list tools by
// the capabilities of the client: server-everything lists its sampling,
// elicitation and roots tools only to clients that announce them). The
// session answers every request the server makes with an error.
func (u *Upstream) ToolNamesFor(ctx context.Context, caps *mcp.ClientCapabilities) ([]string, error) {
	c := u.c
	ctx = transport.WithoutValues(ctx)
	if err := c.refreshToken(ctx); err != nil {
		return nil, &Error{Code: CodeAuthFailed, Server: c.name, Err: err}
	}
	cctx, cancel := c.connectContext(ctx)
	defer cancel()
	tr, err := c.transport(cctx)
	if err != nil {
		return nil, err
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "gatehouse", Version: "0.1.0"}, &mcp.ClientOptions{
		Logger: c.ts.log, Capabilities: copyCapabilities(caps),
	})
	cl.AddReceivingMiddleware(refuseRequests)
	s, err := cl.Connect(cctx, tr, c.ts.sessionOptions())
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	defer s.Close()
	var names []string
	for tool, err := range s.Tools(cctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		names = append(names, tool.Name)
	}
	return names, nil
}

// refuseRequests answers every request a server makes of a probe session
// (ToolNamesFor) with an error.
func refuseRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "sampling/createMessage", "elicitation/create", "roots/list":
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: method + ": this session only lists the server's tools"}
		}
		return next(ctx, method, req)
	}
}
