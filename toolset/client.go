package toolset

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset/internal/transport"
)

// newSharedClient returns the client of the shared upstream sessions. It
// announces no capabilities, so servers make no requests of it on anyone's
// behalf (SessionHooks.Middleware may still answer the requests of a call
// that carries its caller in its context).
func (t *Toolset) newSharedClient() *mcp.Client {
	h := t.hooks()
	o := &mcp.ClientOptions{
		Logger:       t.log,
		Capabilities: &mcp.ClientCapabilities{},
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
