package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/transport"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// This file is the Toolset's lower half, for code that carries more than
// tool calls to its servers: a relay in front of them (package
// gateway/internal/relay) forwards resources, prompts, completion, logging and
// server-to-client requests, and sends tool calls as bytes. An agent that
// only calls tools needs none of it.

// SessionHooks see what the shared upstream sessions of a Toolset receive
// beyond tools. Every hook is optional; each is called from the goroutine
// that read the message and must not block.
type SessionHooks struct {
	// ListChanged is told that a server announced a changed list
	// (notifications/*/list_changed). A re-listing judged by the drift
	// checks is already queued (Options.OnChange follows it; a burst of
	// announcements costs one or two); resources and prompts are listed
	// live, so a relay only needs telling.
	ListChanged func(server string, what ListChange)
	// ResourceUpdated receives every notifications/resources/updated of a
	// shared session, with the name of the server that sent it.
	ResourceUpdated func(ctx context.Context, server string, params *mcp.ResourceUpdatedNotificationParams)
	// Notification receives every other notification of a shared session
	// (progress, log messages) as it is read from the wire, before the
	// response that follows it is handed to its caller: in wire order.
	Notification func(server, method string, params json.RawMessage)
	// Middleware, when set, is receiving middleware of the shared
	// sessions' client: it sees the requests servers make (roots/list,
	// sampling, elicitation) with the context of the call they belong to,
	// when there is one (multi round-trip requests).
	Middleware mcp.Middleware
	// Reconnected is told that a server's shared session was established
	// again (after a lost session): what was registered on the old one
	// (resource subscriptions) is gone.
	Reconnected func(u *Upstream)
}

// ListChange says which list of a server changed (SessionHooks.ListChanged).
type ListChange string

// List changes an upstream announces.
const (
	ToolsChanged     ListChange = "tools"
	ResourcesChanged ListChange = "resources"
	PromptsChanged   ListChange = "prompts"
)

// Upstream is one configured server of a Toolset, as a relay sees it: its
// shared session, a way to establish that session again through the drift
// checks, new sessions of its own, and the pins of its prompts and resource
// templates. Get them from Upstreams or a Target. An Upstream is valid for
// the Toolset's life; compare them with ==.
type Upstream struct{ c *conn }

// Upstreams returns the servers whose tools are served (connected, or woken
// from the store), in configuration order, connecting the Toolset first if
// needed.
func (t *Toolset) Upstreams(ctx context.Context) ([]*Upstream, error) {
	if _, err := t.ensure(ctx); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Upstream
	for i, c := range t.conns {
		if c.skip || c.asleep || !t.listings[i].ok {
			continue
		}
		out = append(out, c.up)
	}
	return out, nil
}

// Name returns the server's configured name.
func (u *Upstream) Name() string { return u.c.name }

// Type returns the server's transport type: "stdio", "streamable-http",
// "sse", or "internal" for a Server with a Transport function.
func (u *Upstream) Type() string {
	if u.c.srv.Transport != nil {
		return "internal"
	}
	return string(u.c.srv.Config.Type)
}

// ProjectedName is the name a server's item (a prompt) is projected under:
// the rules of tool names (prefix__name).
func (u *Upstream) ProjectedName(remote string) string {
	return projection.Name(u.c.prefix, remote)
}

// Live returns the server's shared session, or nil when it has none now
// (or has one whose listing is not judged yet: Session judges it).
func (u *Upstream) Live() *mcp.ClientSession { return u.c.judgedSession() }

// Session returns the server's shared session. When it has none (a woken
// server's first use, a reconnect that failed) one is connected, and its
// tools (and prompts and templates) are listed and judged against their
// trust baseline before it is returned, as Reconnect's are: a route made
// before may be refused now (Toolset.Recheck, Generation). ctx bounds the
// connection; its values never reach the session.
func (u *Upstream) Session(ctx context.Context) (*mcp.ClientSession, error) {
	return u.c.current(transport.WithoutValues(ctx))
}

// Reconnect replaces the shared session old, which was found lost, with a
// new one, unless another caller already did: the new session's tools (and
// prompts and templates) are listed and judged against their trust
// baseline before it is returned (Options.OnChange and
// SessionHooks.Reconnected follow).
func (u *Upstream) Reconnect(ctx context.Context, old *mcp.ClientSession) (*mcp.ClientSession, error) {
	return u.c.reconnect(transport.WithoutValues(ctx), old)
}

// Authorize refreshes the server's bearer token (Options.Auth) for the
// requests that follow; a no-op for servers without one.
func (u *Upstream) Authorize(ctx context.Context) error {
	if err := u.c.refreshToken(ctx); err != nil {
		return &Error{Code: CodeAuthFailed, Server: u.c.name, Err: err}
	}
	return nil
}

// Connect opens a new session to the server for client, through a new
// transport built as the shared one is (the egress guard, the bearer
// token, a new stdio child), bounded by Options.ConnectTimeout. tap, when
// set, receives each notification the session reads, in wire order (see
// SessionHooks.Notification). The session is the caller's to close.
//
// The new session's listing is judged (Judge) before it is returned: a
// session refused there is closed and the error is Judge's (CodeQuarantined
// when its listing drifted; the drift is recorded and its changed tools
// quarantined for every caller). When the session announces a changed list
// it is judged again (Changed), and closed if refused: its next request
// fails as on a lost session.
func (u *Upstream) Connect(ctx context.Context, client *mcp.Client, tap func(method string, params json.RawMessage)) (*mcp.ClientSession, error) {
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
	var own atomic.Pointer[mcp.ClientSession]
	watch := func(method string, params json.RawMessage) {
		if s := own.Load(); s != nil && listChanged(method) {
			c.sessionChanged(s)
		}
		if tap != nil {
			tap(method, params)
		}
	}
	s, err := client.Connect(cctx, &transport.Tapped{Inner: tr, Tap: watch}, c.ts.sessionOptions())
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	own.Store(s)
	if err := u.Judge(cctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// HTTP returns the endpoint and the HTTP client (the egress guard, the
// configured headers, the bearer token) of a streamable HTTP server, for
// requests made without the go-sdk's client; ok=false for any other
// server, and for one woken from the store and not yet listed again (its
// first call must go through the drift checks: use Session).
func (u *Upstream) HTTP() (endpoint string, client *http.Client, ok bool) {
	c := u.c
	if c.srv.Transport != nil || c.srv.Config.Type != plugin.TransportStreamableHTTP || c.httpClient == nil || c.oauth != nil || c.ts.pending(c) {
		return "", nil, false
	}
	return c.srv.Config.URL, c.httpClient, true
}

// Capabilities returns what the server's shared session announced (empty
// when it has none).
func (u *Upstream) Capabilities() *mcp.ServerCapabilities { return u.c.capabilities() }

func (c *conn) capabilities() *mcp.ServerCapabilities {
	s := c.liveSession()
	if s == nil || s.InitializeResult() == nil || s.InitializeResult().Capabilities == nil {
		return &mcp.ServerCapabilities{}
	}
	return s.InitializeResult().Capabilities
}

// Generation counts the listings of the server judged so far: a route a
// relay made from a listing of generation g may be stale once Generation
// is past g (a prompt trusted then may have drifted since).
func (u *Upstream) Generation() uint64 { return u.c.judged.Load() }

// Admission is how a live listing of prompts or resource templates may be
// served: the items whose fingerprint is trusted, and the ones whose pin
// they no longer match (their requests are refused with QuarantinedPrompt
// or QuarantinedTemplate). Anything else (new after trust, not
// fingerprintable, not pinned yet) is neither: it is absent.
type Admission struct {
	// Trusted and Quarantined are by identity: a prompt's name, a
	// template's URI template.
	Trusted, Quarantined map[string]bool
}

// AdmitPrompts judges a live listing of the server's prompts against their
// pins. A listing that differs from the last judged one has the server
// listed again in the background, so its drift is reported.
func (u *Upstream) AdmitPrompts(live []*mcp.Prompt) Admission {
	return u.admit(trust.Prompt, trust.LivePrompts(u.c.name, live))
}

// AdmitTemplates is AdmitPrompts for resource templates.
func (u *Upstream) AdmitTemplates(live []*mcp.ResourceTemplate) Admission {
	return u.admit(trust.Template, trust.LiveTemplates(u.c.name, live))
}

func (u *Upstream) admit(k trust.Kind, it trust.Items) Admission {
	l := u.c.ts.listingOf(u.c)
	a := l.v.Admit(k, it)
	if a.Unjudged {
		u.c.relistSoon()
	}
	return Admission{Trusted: a.Trusted, Quarantined: a.Quarantined}
}

// QuarantinedPrompt is the refusal of a request for the server's prompt
// remote (its name on the server) whose contract changed after it was
// trusted: an *Error with CodeQuarantined wrapping a JSON-RPC invalid
// params error that says no more than a quarantined tool's refusal.
func (u *Upstream) QuarantinedPrompt(remote string) error {
	return quarantinedItem(u.c, trust.Prompt, remote)
}

// QuarantinedTemplate is QuarantinedPrompt for a resource template (by its
// URI template).
func (u *Upstream) QuarantinedTemplate(uriTemplate string) error {
	return quarantinedItem(u.c, trust.Template, uriTemplate)
}

// MaxAnswer is the largest message a Toolset takes from a streamable HTTP
// server: one SSE event, or one JSON body (the go-sdk's documented
// default, which its client does not apply by itself: a hostile server
// could make it buffer without end).
const MaxAnswer = transport.MaxAnswer

// ErrAnswerTooLarge is the JSON-RPC error a go-sdk client of the toolset
// gets in place of a server's answer larger than MaxAnswer: the answer is
// dropped and the session lives on. The server may have run the call:
// AsBadAnswer turns it into a CodeBadAnswer *Error, which a journal keeps
// in doubt. Whoever reads an upstream's bytes itself (package
// gateway/internal/relay) answers AnswerTooLarge.
var ErrAnswerTooLarge = transport.ErrAnswerTooLarge

// Target is where a call of a projected tool goes now: its server and its
// name there. Get one with Toolset.Target just before sending.
type Target struct {
	// Tool is the projected name.
	Tool string
	// Upstream is the tool's server.
	Upstream *Upstream
	// Remote is the tool's name on its server.
	Remote string
	// Contract is the fingerprint of the tool's trusted contract when it
	// was routed (ToolInfo.Contract).
	Contract string
}

// Target routes a call of the tool registered under name, refusing it as
// Call does: ErrUnknownTool (the toolset's own tools too: the Toolset
// answers them, see Call), ErrQuarantined, ErrToolWithdrawn. A server woken from the
// store and not yet reconciled is listed and judged first. Nothing is sent
// to the tool's server.
func (t *Toolset) Target(ctx context.Context, name string) (Target, error) {
	cat, err := t.ensure(ctx)
	if err != nil {
		var te *Error
		if errors.As(err, &te) {
			return Target{}, err
		}
		return Target{}, &Error{Code: CodeCallFailed, Tool: name, Err: err}
	}
	e, err := t.callable(cat, name)
	if err != nil {
		return Target{}, err
	}
	if e.meta != "" {
		return Target{}, &Error{Code: CodeUnknownTool, Tool: name}
	}
	if t.pending(e.conn) {
		// Woken from the store and not reconciled yet: list the server
		// and judge its contracts before the first call reaches it.
		if err := e.conn.reconcile(ctx, true); err != nil {
			var te *Error
			if errors.As(err, &te) {
				te.Tool = name
			}
			return Target{}, err
		}
		if e, err = t.callable(t.current(), name); err != nil {
			return Target{}, err
		}
	}
	return Target{Tool: name, Upstream: e.conn.up, Remote: e.info.RemoteName, Contract: e.info.Contract}, nil
}

// Recheck reports whether the target still stands after its server's
// session was established again (which lists and judges the server): nil,
// or the refusal (ErrQuarantined, ErrToolWithdrawn) a call now gets.
func (t *Toolset) Recheck(tg Target) error {
	e, err := t.callable(t.current(), tg.Tool)
	if err != nil {
		return err
	}
	if e.conn == nil || e.conn.up != tg.Upstream || e.info.RemoteName != tg.Remote {
		c := tg.Upstream.c
		return &Error{Code: CodeToolWithdrawn, Server: c.name, Tool: tg.Tool,
			Err: fmt.Errorf("MCP tool %s is no longer published by server %s", tg.Tool, pin.SanitizeName(c.name))}
	}
	return nil
}

// SessionLost reports errors after which a new session to the server may
// succeed: the session is missing (an HTTP server restarted), or the
// connection closed (a stdio server died).
func SessionLost(err error) bool { return transport.SessionLost(err) }
